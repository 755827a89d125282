// labflow_p2.cc -- LabFlow-1 on one p2gen-generated data manager, through its public API
// alone (<prefix>.h). Compiled once per variant of type_equations/labflow/:
//
//   c++ -DP2_VARIANT=labflow_segmented -DP2_HEADER='"labflow_segmented.h"'
//       -DP2_NAME='"SEGMENTED"' -DP2_PERSISTENT=1
//       -DP2_FILES='"labflow_hot.db","labflow_cold.db"' [-DP2_HIST_ILIST=1]
//       -DLABFLOW_SEGMENTED_INLINE -c labflow_p2.cc
//
// (-D<PREFIX>_INLINE: the API compiled into this file, as the README tells users to.)
//
// Every variant declares the records, containers and cursors of
// type_equations/labflow/segmented.p2; they differ in their equations (memory, files,
// allocator, which index serves a queue or a history). P2_HIST_ILIST=1: the variant keeps
// each material's history as a relationship (`materials.hist`, an intrusive list through
// its involves rows, LabBase's per-material pointer list) instead of the `hist` cursor.
#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "labflow.h"

#ifndef P2_HIST_ILIST
#define P2_HIST_ILIST 0
#endif
#ifndef P2_FILES
#define P2_FILES
#endif

#include "../p2_variant.h"

namespace {   // internal linkage: every variant's object defines its own classes

using Ref = uint64_t;
const std::vector<std::string> kFiles{P2_FILES};

template <size_t N>
void copy_fixed(char (&dst)[N], const std::string &src) {
    if (src.size() > N) throw std::runtime_error("name longer than " + std::to_string(N) + ": " + src);
    std::memset(dst, 0, N);
    std::memcpy(dst, src.data(), src.size());
}

template <size_t N>
std::string from_fixed(const char (&src)[N]) {
    return std::string(src, strnlen(src, N));
}

class P2Store final : public lf::Store {
public:
    explicit P2Store(const std::string &dir) {
        p2_open_or_throw(&db_, P2_PERSISTENT ? dir.c_str() : nullptr);
    }
    ~P2Store() override {
        if (db_) P2(close)(db_);
    }

    const char *name() const override { return P2_NAME; }
    std::vector<std::string> files() const override { return kFiles; }

    void commit() override { ok(P2(sync)(db_), "sync"); }
    void close() override {
        int rc = P2(close)(db_);
        db_ = nullptr;
        if (rc != P2_OK) throw std::runtime_error(std::string(P2_NAME) + " close failed");
    }

    // -- dictionary: appended in order, a retirement is the kind's entry again ----------
    void dict_kind(const lf::KindEntry &k) override {
        P2(dict_kind) r{};
        r.id = k.id;
        r.since = k.since;
        r.retired = k.retired;
        copy_fixed(r.name, k.name);
        ok(P2(dict_kinds_insert)(db_, &r, nullptr), "insert dict_kind");
    }
    void dict_attr(const lf::AttrEntry &a) override {
        P2(dict_attr) r{};
        r.id = a.id;
        r.kind = a.kind;
        r.type = a.type;
        r.max_len = a.max_len;
        r.since = a.since;
        copy_fixed(r.name, a.name);
        ok(P2(dict_attrs_insert)(db_, &r, nullptr), "insert dict_attr");
    }
    void dict_load(std::vector<lf::KindEntry> &kinds, std::vector<lf::AttrEntry> &attrs) override {
        P2(dict_kinds_all_cursor) ck;
        ok(P2(dict_kinds_all_open)(db_, &ck), "dict_kinds cursor");
        while (P2(dict_kinds_all_next)(&ck) == P2_OK) {
            const P2(dict_kind) *r = P2(dict_kinds_all_get)(&ck);
            kinds.push_back({r->id, r->since, r->retired, from_fixed(r->name)});
        }
        P2(dict_attrs_all_cursor) ca;
        ok(P2(dict_attrs_all_open)(db_, &ca), "dict_attrs cursor");
        while (P2(dict_attrs_all_next)(&ca) == P2_OK) {
            const P2(dict_attr) *r = P2(dict_attrs_all_get)(&ca);
            attrs.push_back({r->id, r->kind, r->type, r->max_len, r->since, from_fixed(r->name)});
        }
    }

    // -- materials ------------------------------------------------------------------------
    void mat_insert(const lf::MatRec &m) override {
        P2(material) r{};
        r.oid = m.oid;
        r.kind = m.kind;
        r.state = m.state;
        copy_fixed(r.name, std::string(m.name));
        ok(P2(materials_insert)(db_, &r, nullptr), "insert material");
    }
    void mat_set_state(uint32_t oid, uint8_t state) override {
        Ref ref = 0;
        material(oid, &ref);
        // a key of the queue index: the setter relinks the material into its new queue
        ok(P2(materials_set_state)(db_, ref, state), "set state");
    }
    bool mat_get(uint32_t oid, lf::MatRec &out) override {
        const P2(material) *r = P2(materials_lookup_oid)(db_, oid, nullptr);
        if (!r) return false;
        lf::mat_fields(out, r->oid, *r);
        std::string n = from_fixed(r->name);
        std::memcpy(out.name, n.c_str(), n.size() + 1);
        return true;
    }
    uint32_t mat_by_name(const char *name) override {
        if (std::strlen(name) > lf::kNameMax) return 0;
        const P2(material) *r = P2(materials_lookup_name)(db_, name, nullptr);
        return r ? r->oid : 0;
    }
    uint32_t mat_count() override { return (uint32_t)P2(materials_count)(db_); }

    // -- steps ----------------------------------------------------------------------------
    void step_insert(const lf::StepRec &s) override {
        P2(step) r{};
        r.oid = s.oid;
        r.kind = s.kind;
        r.schema_ver = s.schema_ver;
        r.who = s.who;
        r.nmat = (uint8_t)s.nmat;
        r.when = s.when;
        Ref sref = 0;
        ok(P2(steps_insert)(db_, &r, &sref), "insert step");
        ok(P2(steps_set_payload)(db_, sref, s.payload, s.payload_len), "step payload");
        for (uint32_t i = 0; i < s.nmat; i++) {
            uint32_t m = s.mats[i];
            Ref mref = 0;
            const P2(material) *mat = material(m, &mref);
            uint32_t nsteps = mat->nsteps + 1;
            P2(involves) inv{};
            inv.mat = m;
            inv.step = s.oid;
            inv.when = s.when;
            Ref iref = 0;
            ok(P2(involves_rows_insert)(db_, &inv, &iref), "insert involves");
#if P2_HIST_ILIST
            ok(P2(materials_hist_add)(db_, mref, iref), "materials.hist add");
#endif
            ok(P2(materials_set_nsteps)(db_, mref, nsteps), "set nsteps");
            ok(P2(materials_set_last_when)(db_, mref, s.when), "set last_when");
            upsert_latest(m, s.kind, s.oid);
        }
    }
    bool step_get(uint32_t oid, lf::StepRec &out) override {
        Ref ref = 0;
        const P2(step) *r = P2(steps_lookup_oid)(db_, oid, &ref);
        if (!r) return false;
        lf::step_fields(out, r->oid, *r);
        out.nmat = r->nmat;
        const char *data = nullptr;
        uint64_t len = 0;
        ok(P2(steps_get_payload)(db_, ref, &data, &len), "step payload");
        out.payload = reinterpret_cast<const uint8_t *>(data);
        out.payload_len = (uint32_t)len;
        return true;
    }
    uint32_t step_count() override { return (uint32_t)P2(steps_count)(db_); }

    uint32_t latest(uint32_t mat, uint16_t kind) override {
        const P2(latest) *r = P2(latests_lookup_mat_kind)(db_, mat, kind, nullptr);
        return r ? r->step : 0;
    }

    // -- queries --------------------------------------------------------------------------
    size_t queue(uint8_t state, size_t n, uint32_t *out) override {
        P2(queue_cursor) c;
        ok(P2(queue_open)(db_, &c, state), "queue cursor");
        size_t k = 0;
        while (k < n && P2(queue_next)(&c) == P2_OK) out[k++] = P2(queue_get)(&c)->oid;
        P2(queue_close)(&c);
        return k;
    }
    void hist(uint32_t mat, const std::function<void(uint32_t)> &visit) override {
#if P2_HIST_ILIST
        Ref mref = 0;
        material(mat, &mref);
        P2(materials_hist_iter) it;
        ok(P2(materials_hist_open)(db_, &it, mref), "materials.hist");
        Ref iref = 0;
        while (P2(materials_hist_next)(&it, &iref) == P2_OK)
            visit(P2(involves_rows_at)(db_, iref)->step);
#else
        P2(hist_cursor) c;
        ok(P2(hist_open)(db_, &c, mat), "hist cursor");
        while (P2(hist_next)(&c) == P2_OK) visit(P2(hist_get)(&c)->step);
#endif
    }
    void step_mats(uint32_t step, const std::function<void(uint32_t)> &visit) override {
        P2(step_mats_cursor) c;
        ok(P2(step_mats_open)(db_, &c, step), "step_mats cursor");
        mats_.clear();
        while (P2(step_mats_next)(&c) == P2_OK) mats_.push_back(P2(step_mats_get)(&c)->mat);
        std::sort(mats_.begin(), mats_.end());   // a hash chain holds them in no order
        for (uint32_t m : mats_) visit(m);
    }
    void report1(uint64_t t0, uint64_t t1, uint64_t *counts) override {
        P2(steps_in_cursor) c;
        ok(P2(steps_in_open)(db_, &c, t0, t1), "steps_in cursor");
        while (P2(steps_in_next)(&c) == P2_OK) counts[P2(steps_in_get)(&c)->kind]++;
    }
    void report2(uint64_t count[lf::NSTATES], uint64_t oldest[lf::NSTATES]) override {
        P2(materials_all_cursor) c;
        ok(P2(materials_all_open)(db_, &c), "materials cursor");
        while (P2(materials_all_next)(&c) == P2_OK) {
            const P2(material) *m = P2(materials_all_get)(&c);
            if (m->state >= lf::NSTATES) throw std::runtime_error("material with a bad state");
            count[m->state]++;
            if (m->nsteps && m->last_when < oldest[m->state]) oldest[m->state] = m->last_when;
        }
    }

private:
    void ok(int rc, const char *what) {
        if (rc != P2_OK)
            throw std::runtime_error(std::string(P2_NAME) + " " + what + ": " + P2(errmsg)(db_));
    }
    const P2(material) *material(uint32_t oid, Ref *ref) {
        const P2(material) *r = P2(materials_lookup_oid)(db_, oid, ref);
        if (!r) throw std::runtime_error(std::string(P2_NAME) + ": no material " + std::to_string(oid));
        return r;
    }
    // the newest step of a kind per material: one upsert on the unique key (mat, kind)
    void upsert_latest(uint32_t mat, uint16_t kind, uint32_t step) {
        P2(latest) r{};
        r.mat = mat;
        r.kind = kind;
        r.step = step;
        ok(P2(latests_upsert)(db_, &r, nullptr, nullptr), "upsert latest");
    }

    P2(db) *db_ = nullptr;
    std::vector<uint32_t> mats_;
};

lf::Registration reg(P2_NAME, P2_PERSISTENT != 0, [](const std::string &dir, bool) {
    return std::unique_ptr<lf::Store>(new P2Store(dir));
});

}  // namespace
