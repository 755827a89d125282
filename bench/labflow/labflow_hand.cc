// labflow_hand.cc -- HAND: LabFlow-1's fixed top level written by hand in C++, in the heap,
// the way a programmer without a database would: the -mm baseline (the paper's OStore3-mm,
// server code without a persistent database), transient.
//
//   materials   a vector indexed by oid, each with its history (a vector of step oids,
//               appended in `when` order: the log's clock only increases) and the `when`
//               of its newest step (REPORT2)
//   names       std::unordered_map name -> oid
//   steps       a vector indexed by oid: fixed part, materials (sorted at insert), payload
//   latest      std::unordered_map (mat << 16 | kind) -> step oid, an upsert per involves row
//   queues      one std::set of oids per state (ordered: QUEUE takes the first n)
//   dictionary  the entries as written (dict_load gives them back)
// REPORT1 finds its range by binary search on `when` over the step vector: step_insert
// refuses a `when` that does not increase, so oid order is `when` order.
#include <algorithm>
#include <cstring>
#include <set>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "labflow.h"

namespace lf {
namespace {

struct Mat {
    uint8_t kind, state;
    uint32_t nsteps;
    uint64_t last_when;
    std::string name;
    std::vector<uint32_t> hist;
};

struct Step {
    uint16_t kind, schema_ver;
    uint8_t who;
    uint64_t when;
    std::vector<uint32_t> mats;   // oid order
    std::vector<uint8_t> payload;
};

class HandStore final : public Store {
public:
    const char *name() const override { return "HAND"; }
    std::vector<std::string> files() const override { return {}; }
    void commit() override {}
    void close() override {}

    void dict_kind(const KindEntry &k) override { kinds_.push_back(k); }
    void dict_attr(const AttrEntry &a) override { attrs_.push_back(a); }
    void dict_load(std::vector<KindEntry> &kinds, std::vector<AttrEntry> &attrs) override {
        kinds = kinds_;
        attrs = attrs_;
    }

    void mat_insert(const MatRec &m) override {
        if (m.oid != mats_.size() + 1) throw std::runtime_error("HAND: material oid out of sequence");
        if (m.state >= NSTATES) throw std::runtime_error("HAND: state out of range");
        std::string name(m.name, strnlen(m.name, kNameMax));
        if (!names_.emplace(name, m.oid).second) throw std::runtime_error("HAND: material name " + name + " exists");
        mats_.push_back(Mat{m.kind, m.state, 0, 0, std::move(name), {}});
        queues_[m.state].insert(m.oid);
    }
    void mat_set_state(uint32_t oid, uint8_t state) override {
        Mat &m = mat(oid);
        if (state >= NSTATES) throw std::runtime_error("HAND: state out of range");
        queues_[m.state].erase(oid);
        queues_[state].insert(oid);
        m.state = state;
    }
    bool mat_get(uint32_t oid, MatRec &out) override {
        if (oid == 0 || oid > mats_.size()) return false;
        const Mat &m = mats_[oid - 1];
        mat_fields(out, oid, m);
        std::memset(out.name, 0, sizeof out.name);
        std::memcpy(out.name, m.name.data(), std::min(m.name.size(), kNameMax));
        return true;
    }
    uint32_t mat_by_name(const char *name) override {
        key_.assign(name, strnlen(name, kNameMax + 1));
        auto it = names_.find(key_);
        return it == names_.end() ? 0 : it->second;
    }
    uint32_t mat_count() override { return uint32_t(mats_.size()); }

    void step_insert(const StepRec &s) override {
        if (s.oid != steps_.size() + 1) throw std::runtime_error("HAND: step oid out of sequence");
        if (!steps_.empty() && s.when <= steps_.back().when) throw std::runtime_error("HAND: when does not increase");
        if (s.nmat == 0) throw std::runtime_error("HAND: a step involving no material");
        Step st{s.kind, s.schema_ver, s.who, s.when, std::vector<uint32_t>(s.mats, s.mats + s.nmat),
                std::vector<uint8_t>(s.payload, s.payload + s.payload_len)};
        std::sort(st.mats.begin(), st.mats.end());
        for (uint32_t m : st.mats) mat(m);   // all exist before anything changes
        for (uint32_t oid : st.mats) {
            Mat &m = mats_[oid - 1];
            m.hist.push_back(s.oid);
            m.nsteps++;
            m.last_when = s.when;
            latest_[key(oid, s.kind)] = s.oid;
        }
        steps_.push_back(std::move(st));
    }
    bool step_get(uint32_t oid, StepRec &out) override {
        if (oid == 0 || oid > steps_.size()) return false;
        const Step &s = steps_[oid - 1];
        step_fields(out, oid, s);
        out.payload = s.payload.data();
        out.payload_len = uint32_t(s.payload.size());
        return true;
    }
    uint32_t step_count() override { return uint32_t(steps_.size()); }
    uint32_t latest(uint32_t mat, uint16_t kind) override {
        auto it = latest_.find(key(mat, kind));
        return it == latest_.end() ? 0 : it->second;
    }

    size_t queue(uint8_t state, size_t n, uint32_t *out) override {
        if (state >= NSTATES) return 0;
        size_t i = 0;
        for (auto it = queues_[state].begin(); i < n && it != queues_[state].end(); ++it) out[i++] = *it;
        return i;
    }
    void hist(uint32_t m, const std::function<void(uint32_t)> &visit) override {
        for (uint32_t s : mat(m).hist) visit(s);
    }
    void step_mats(uint32_t step, const std::function<void(uint32_t)> &visit) override {
        if (step == 0 || step > steps_.size()) throw std::runtime_error("HAND: no step " + std::to_string(step));
        for (uint32_t m : steps_[step - 1].mats) visit(m);
    }

    void report1(uint64_t t0, uint64_t t1, uint64_t *counts) override {
        auto lo = std::lower_bound(steps_.begin(), steps_.end(), t0,
                                   [](const Step &s, uint64_t t) { return s.when < t; });
        for (auto it = lo; it != steps_.end() && it->when <= t1; ++it) counts[it->kind]++;
    }
    void report2(uint64_t count[NSTATES], uint64_t oldest[NSTATES]) override {
        for (int s = 0; s < NSTATES; s++) {
            count[s] = queues_[s].size();
            oldest[s] = UINT64_MAX;
            for (uint32_t oid : queues_[s]) {
                const Mat &m = mats_[oid - 1];
                if (m.nsteps) oldest[s] = std::min(oldest[s], m.last_when);
            }
        }
    }

private:
    static uint64_t key(uint32_t mat, uint16_t kind) { return uint64_t(mat) << 16 | kind; }
    Mat &mat(uint32_t oid) {
        if (oid == 0 || oid > mats_.size()) throw std::runtime_error("HAND: no material " + std::to_string(oid));
        return mats_[oid - 1];
    }

    std::vector<KindEntry> kinds_;
    std::vector<AttrEntry> attrs_;
    std::vector<Mat> mats_;
    std::unordered_map<std::string, uint32_t> names_;
    std::vector<Step> steps_;
    std::unordered_map<uint64_t, uint32_t> latest_;
    std::set<uint32_t> queues_[NSTATES];
    std::string key_;
};

Registration reg("HAND", false, [](const std::string &, bool) { return std::unique_ptr<Store>(new HandStore); });

}  // namespace
}  // namespace lf
