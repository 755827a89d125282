// labflow_lmdb.cc -- LMDB: LabFlow-1's fixed top level mapped onto LMDB the way a
// competent user of a key-value store would, the other embedded peer beside SQLite.
//
//   LMDB persistent  <dir>/labflow.lmdb (and its -lock file), MDB_WRITEMAP | MDB_NOSYNC:
//                    no durability, as the generated persistent variants and SQLITE (the
//                    flags of the TPC-B and OO7 LMDB peers)
//
// Schema: one named database (a B+tree) per relation, keys big-endian so that LMDB's
// bytewise order is numeric order and a cursor walks a composite key's prefix in order:
//   material  oid -> MatV (kind, state, nsteps, the `when` of its newest step, name)
//   mat_name  name -> oid                              (LOOK, MAT's uniqueness)
//   queue     (state, oid) -> empty                    (QUEUE: a range on the state prefix)
//   step      oid -> StepV + its materials (oid order) + payload   (STEPMATS reads it)
//   involves  (mat, when, step) -> empty               (HIST: a range on the mat prefix)
//   latest    (mat, kind) -> step oid                  (an upsert: mdb_put overwrites)
//   step_at   when -> (oid, kind)                      (REPORT1's range)
//   dict_kind, dict_attr  sequence number -> entry     (in the order written)
// Materials, steps and step_at are appended in key order (oids and `when` only increase),
// so they are written with MDB_APPEND (full pages; a key out of order is an error).
//
// Transactions: one write transaction is open from the first write or read to
// Store::commit, which commits it; every read goes through it (it sees its own writes).
// The map (the file's size, sparse with MDB_WRITEMAP) is sized from the memory budget
// (size_hint: 16 X + 64 MiB; the database ends near 2X of the generator's byte model and
// LMDB's pages are at most half empty); a reopen takes the size stored in the file.
#include <lmdb.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "../lmdb_util.h"
#include "labflow.h"

namespace lf {
namespace {

const char *const kFile = "labflow.lmdb";
constexpr size_t kDefaultMap = size_t(1) << 30;   // without a size_hint
constexpr size_t kMinMap = size_t(64) << 20;

void check(int rc, const char *what) {
    benchlmdb::check(rc, what, "the map is full (the memory budget in the log's header sizes it: 16 X + 64 MiB)");
}

void be32(uint8_t *p, uint32_t v) {
    p[0] = uint8_t(v >> 24), p[1] = uint8_t(v >> 16), p[2] = uint8_t(v >> 8), p[3] = uint8_t(v);
}
void be16(uint8_t *p, uint16_t v) { p[0] = uint8_t(v >> 8), p[1] = uint8_t(v); }
void be64(uint8_t *p, uint64_t v) {
    be32(p, uint32_t(v >> 32));
    be32(p + 4, uint32_t(v));
}
uint32_t get_be32(const uint8_t *p) { return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3]; }
uint64_t get_be64(const uint8_t *p) { return uint64_t(get_be32(p)) << 32 | get_be32(p + 4); }

// values: trivially copyable, zero-filled; LMDB aligns values to 2 bytes only, so every
// read is a memcpy
struct MatV {
    uint8_t kind, state;
    uint16_t pad;
    uint32_t nsteps;
    uint64_t last_when;
    char name[kNameMax];
};
struct StepV {
    uint64_t when;
    uint16_t kind, schema_ver;
    uint8_t who, pad[3];
    uint32_t nmat;
    uint32_t pad2;
};   // + uint32_t mats[nmat] + payload
struct AtV {
    uint32_t oid;
    uint16_t kind;
};
struct KindV {
    uint16_t id, since, retired;
};   // + name
struct AttrV {
    uint16_t id, kind;
    uint8_t type, max_len;
    uint16_t since;
};   // + name
static_assert(sizeof(MatV) == 40 && sizeof(StepV) == 24, "values are packed by hand");

enum Dbi { kMaterial, kMatName, kQueue, kStep, kInvolves, kLatest, kStepAt, kDictKind, kDictAttr, kNumDbi };
const char *const kDbiName[kNumDbi] = {"material", "mat_name", "queue",     "step",     "involves",
                                       "latest",   "step_at",  "dict_kind", "dict_attr"};

using benchlmdb::Cursor;

class LmdbStore final : public Store {
public:
    LmdbStore(const std::string &dir, bool fresh) {
        path_ = dir + "/" + kFile;
        struct stat sb;
        bool exists = ::stat(path_.c_str(), &sb) == 0;
        if (fresh && exists) throw std::runtime_error(path_ + " exists");
        if (!fresh && !exists) throw std::runtime_error(path_ + ": no database to open");
        check(mdb_env_create(&env_), "mdb_env_create");
        try {
            check(mdb_env_set_maxdbs(env_, kNumDbi), "mdb_env_set_maxdbs");
            // a fresh map is sized at the first write (size_hint, or kDefaultMap): LMDB keeps
            // the largest map size it ever committed in the file, so none is set before
            check(mdb_env_open(env_, path_.c_str(), MDB_NOSUBDIR | MDB_WRITEMAP | MDB_NOSYNC, 0644),
                  "mdb_env_open");
            MDB_txn *t;
            check(mdb_txn_begin(env_, nullptr, 0, &t), "mdb_txn_begin");
            for (int i = 0; i < kNumDbi; i++) {
                int rc = mdb_dbi_open(t, kDbiName[i], fresh ? MDB_CREATE : 0, &dbi_[i]);
                if (rc != 0) {
                    mdb_txn_abort(t);
                    check(rc, "mdb_dbi_open");
                }
            }
            check(mdb_txn_commit(t), "mdb_txn_commit");
            sized_ = !fresh;
            if (!fresh) {
                nkind_entries_ = entries(kDictKind);
                nattr_entries_ = entries(kDictAttr);
                std::vector<KindEntry> ks;
                std::vector<AttrEntry> as;
                dict_load(ks, as);
                for (const KindEntry &k : ks) nkinds_ = std::max<uint32_t>(nkinds_, uint32_t(k.id) + 1);
                end_txn();
            }
        } catch (...) {
            if (txn_) mdb_txn_abort(txn_);
            mdb_env_close(env_);
            throw;
        }
    }
    ~LmdbStore() override { shut(); }

    const char *name() const override { return "LMDB"; }
    std::vector<std::string> files() const override { return {kFile}; }
    void size_hint(uint64_t memory) override {
        end_txn();
        check(mdb_env_set_mapsize(env_, size_t(std::max<uint64_t>(16 * memory + kMinMap, kMinMap))),
              "mdb_env_set_mapsize");
        sized_ = true;
    }

    void commit() override { end_txn(); }
    void close() override { shut(); }

    void dict_kind(const KindEntry &k) override {
        nkinds_ = std::max<uint32_t>(nkinds_, uint32_t(k.id) + 1);
        KindV v{k.id, k.since, k.retired};
        buf_.assign(reinterpret_cast<const char *>(&v), sizeof v);
        buf_ += k.name;
        put_seq(kDictKind, nkind_entries_++);
    }
    void dict_attr(const AttrEntry &a) override {
        AttrV v{a.id, a.kind, a.type, a.max_len, a.since};
        buf_.assign(reinterpret_cast<const char *>(&v), sizeof v);
        buf_ += a.name;
        put_seq(kDictAttr, nattr_entries_++);
    }
    void dict_load(std::vector<KindEntry> &kinds, std::vector<AttrEntry> &attrs) override {
        kinds.clear();
        attrs.clear();
        MDB_val k, v;
        {
            Cursor c(txn(), dbi_[kDictKind]);
            for (bool ok = c.get(&k, &v, MDB_FIRST); ok; ok = c.get(&k, &v, MDB_NEXT)) {
                KindV h;
                if (v.mv_size < sizeof h) throw std::runtime_error("LMDB: a dictionary kind entry cut short");
                std::memcpy(&h, v.mv_data, sizeof h);
                kinds.push_back(KindEntry{h.id, h.since, h.retired,
                                          std::string(static_cast<const char *>(v.mv_data) + sizeof h,
                                                      v.mv_size - sizeof h)});
            }
        }
        Cursor c(txn(), dbi_[kDictAttr]);
        for (bool ok = c.get(&k, &v, MDB_FIRST); ok; ok = c.get(&k, &v, MDB_NEXT)) {
            AttrV h;
            if (v.mv_size < sizeof h) throw std::runtime_error("LMDB: a dictionary attribute entry cut short");
            std::memcpy(&h, v.mv_data, sizeof h);
            attrs.push_back(AttrEntry{h.id, h.kind, h.type, h.max_len, h.since,
                                      std::string(static_cast<const char *>(v.mv_data) + sizeof h,
                                                  v.mv_size - sizeof h)});
        }
    }

    void mat_insert(const MatRec &m) override {
        MatV v{};
        v.kind = m.kind;
        v.state = m.state;
        size_t nl = strnlen(m.name, kNameMax);
        if (nl == 0) throw std::runtime_error("LMDB: a material without a name");
        std::memcpy(v.name, m.name, nl);
        uint8_t key[4];
        be32(key, m.oid);
        put(kMaterial, key, 4, &v, sizeof v, MDB_APPEND, "put material (oid out of order?)");
        uint32_t oid = m.oid;
        int rc = raw_put(kMatName, m.name, nl, &oid, sizeof oid, MDB_NOOVERWRITE);
        if (rc == MDB_KEYEXIST) throw std::runtime_error(std::string("LMDB: material name ") + m.name + " exists");
        check(rc, "put mat_name");
        queue_put(m.state, m.oid);
    }
    void mat_set_state(uint32_t oid, uint8_t state) override {
        MatV v = mat(oid);
        uint8_t key[5];
        queue_key(key, v.state, oid);
        MDB_val k{5, key};
        check(mdb_del(txn(), dbi_[kQueue], &k, nullptr), "del queue");
        queue_put(state, oid);
        v.state = state;
        mat_put(oid, v);
    }
    bool mat_get(uint32_t oid, MatRec &out) override {
        MatV v;
        if (!mat_find(oid, v)) return false;
        mat_fields(out, oid, v);
        std::memset(out.name, 0, sizeof out.name);
        std::memcpy(out.name, v.name, kNameMax);
        return true;
    }
    uint32_t mat_by_name(const char *name) override {
        size_t nl = strnlen(name, kNameMax + 1);
        if (nl == 0 || nl > kNameMax) return 0;
        MDB_val k{nl, const_cast<char *>(name)}, v;
        int rc = mdb_get(txn(), dbi_[kMatName], &k, &v);
        if (rc == MDB_NOTFOUND) return 0;
        check(rc, "get mat_name");
        uint32_t oid;
        if (v.mv_size != sizeof oid) throw std::runtime_error("LMDB: a name entry of the wrong size");
        std::memcpy(&oid, v.mv_data, sizeof oid);
        return oid;
    }
    uint32_t mat_count() override { return uint32_t(entries(kMaterial)); }

    void step_insert(const StepRec &s) override {
        if (s.nmat == 0) throw std::runtime_error("LMDB: a step involving no material");
        StepV h{};
        h.when = s.when;
        h.kind = s.kind;
        h.schema_ver = s.schema_ver;
        h.who = s.who;
        h.nmat = s.nmat;
        mats_.assign(s.mats, s.mats + s.nmat);
        std::sort(mats_.begin(), mats_.end());
        buf_.assign(reinterpret_cast<const char *>(&h), sizeof h);
        buf_.append(reinterpret_cast<const char *>(mats_.data()), mats_.size() * sizeof(uint32_t));
        buf_.append(reinterpret_cast<const char *>(s.payload), s.payload_len);
        uint8_t key[16];
        be32(key, s.oid);
        put(kStep, key, 4, buf_.data(), buf_.size(), MDB_APPEND, "put step (oid out of order?)");
        AtV at{s.oid, s.kind};
        be64(key, s.when);
        put(kStepAt, key, 8, &at, sizeof at, MDB_APPEND, "put step_at (`when` not increasing?)");
        for (uint32_t m : mats_) {
            MatV v = mat(m);
            v.nsteps++;
            v.last_when = s.when;
            mat_put(m, v);
            be32(key, m);
            be64(key + 4, s.when);
            be32(key + 12, s.oid);
            put(kInvolves, key, 16, "", 0, MDB_NOOVERWRITE, "put involves");
            be16(key + 4, s.kind);
            uint32_t oid = s.oid;
            put(kLatest, key, 6, &oid, sizeof oid, 0, "put latest");
        }
    }
    bool step_get(uint32_t oid, StepRec &out) override {
        MDB_val v;
        if (!step_find(oid, v)) return false;
        StepV h;
        std::memcpy(&h, v.mv_data, sizeof h);
        step_fields(out, oid, h);
        const uint8_t *p = static_cast<const uint8_t *>(v.mv_data) + sizeof h + size_t(h.nmat) * 4;
        payload_.assign(p, static_cast<const uint8_t *>(v.mv_data) + v.mv_size);
        out.payload = payload_.data();
        out.payload_len = uint32_t(payload_.size());
        return true;
    }
    uint32_t step_count() override { return uint32_t(entries(kStep)); }
    uint32_t latest(uint32_t mat, uint16_t kind) override {
        uint8_t key[6];
        be32(key, mat);
        be16(key + 4, kind);
        MDB_val k{6, key}, v;
        int rc = mdb_get(txn(), dbi_[kLatest], &k, &v);
        if (rc == MDB_NOTFOUND) return 0;
        check(rc, "get latest");
        uint32_t s;
        if (v.mv_size != sizeof s) throw std::runtime_error("LMDB: a latest entry of the wrong size");
        std::memcpy(&s, v.mv_data, sizeof s);
        return s;
    }

    size_t queue(uint8_t state, size_t n, uint32_t *out) override {
        uint8_t key[5];
        queue_key(key, state, 0);
        MDB_val k{5, key}, v;
        Cursor c(txn(), dbi_[kQueue]);
        size_t i = 0;
        for (bool ok = c.get(&k, &v, MDB_SET_RANGE); ok && i < n; ok = c.get(&k, &v, MDB_NEXT)) {
            const uint8_t *p = static_cast<const uint8_t *>(k.mv_data);
            if (k.mv_size != 5 || p[0] != state) break;
            out[i++] = get_be32(p + 1);
        }
        return i;
    }
    void hist(uint32_t mat, const std::function<void(uint32_t)> &visit) override {
        uint8_t key[16] = {};
        be32(key, mat);
        MDB_val k{16, key}, v;
        Cursor c(txn(), dbi_[kInvolves]);
        for (bool ok = c.get(&k, &v, MDB_SET_RANGE); ok; ok = c.get(&k, &v, MDB_NEXT)) {
            const uint8_t *p = static_cast<const uint8_t *>(k.mv_data);
            if (k.mv_size != 16 || get_be32(p) != mat) break;
            visit(get_be32(p + 12));
        }
    }
    void step_mats(uint32_t step, const std::function<void(uint32_t)> &visit) override {
        MDB_val v;
        if (!step_find(step, v)) throw std::runtime_error("LMDB: no step " + std::to_string(step));
        StepV h;
        std::memcpy(&h, v.mv_data, sizeof h);
        mats_.resize(h.nmat);
        std::memcpy(mats_.data(), static_cast<const char *>(v.mv_data) + sizeof h, size_t(h.nmat) * 4);
        for (uint32_t m : mats_) visit(m);
    }

    void report1(uint64_t t0, uint64_t t1, uint64_t *counts) override {
        uint8_t key[8];
        be64(key, t0);
        MDB_val k{8, key}, v;
        Cursor c(txn(), dbi_[kStepAt]);
        for (bool ok = c.get(&k, &v, MDB_SET_RANGE); ok; ok = c.get(&k, &v, MDB_NEXT)) {
            if (k.mv_size != 8 || v.mv_size != sizeof(AtV)) throw std::runtime_error("LMDB: a bad step_at entry");
            if (get_be64(static_cast<const uint8_t *>(k.mv_data)) > t1) break;
            AtV at;
            std::memcpy(&at, v.mv_data, sizeof at);
            if (at.kind >= nkinds_) throw std::runtime_error("LMDB: a step of no kind");   // a slot per kind
            counts[at.kind]++;
        }
    }
    void report2(uint64_t count[NSTATES], uint64_t oldest[NSTATES]) override {
        for (int s = 0; s < NSTATES; s++) count[s] = 0, oldest[s] = UINT64_MAX;
        MDB_val k, v;
        Cursor c(txn(), dbi_[kMaterial]);
        for (bool ok = c.get(&k, &v, MDB_FIRST); ok; ok = c.get(&k, &v, MDB_NEXT)) {
            MatV m;
            if (v.mv_size != sizeof m) throw std::runtime_error("LMDB: a material of the wrong size");
            std::memcpy(&m, v.mv_data, sizeof m);
            if (m.state >= NSTATES) throw std::runtime_error("LMDB: a material in no state");
            count[m.state]++;
            if (m.nsteps && m.last_when < oldest[m.state]) oldest[m.state] = m.last_when;
        }
    }

private:
    MDB_txn *txn() {
        if (!txn_ && !sized_) {
            check(mdb_env_set_mapsize(env_, kDefaultMap), "mdb_env_set_mapsize");
            sized_ = true;
        }
        if (!txn_) check(mdb_txn_begin(env_, nullptr, 0, &txn_), "mdb_txn_begin");
        return txn_;
    }
    void end_txn() {
        if (!txn_) return;
        MDB_txn *t = txn_;
        txn_ = nullptr;
        check(mdb_txn_commit(t), "mdb_txn_commit");
    }
    void shut() {
        if (!env_) return;
        if (txn_) {   // dropped without close(): keep what was done, as the other systems do
            mdb_txn_commit(txn_);
            txn_ = nullptr;
        }
        mdb_env_close(env_);
        env_ = nullptr;
    }
    uint64_t entries(Dbi d) {
        MDB_stat st;
        check(mdb_stat(txn(), dbi_[d], &st), "mdb_stat");
        return st.ms_entries;
    }
    int raw_put(Dbi d, const void *key, size_t klen, const void *val, size_t vlen, unsigned flags) {
        MDB_val k{klen, const_cast<void *>(key)}, v{vlen, const_cast<void *>(val)};
        return mdb_put(txn(), dbi_[d], &k, &v, flags);
    }
    void put(Dbi d, const void *key, size_t klen, const void *val, size_t vlen, unsigned flags, const char *what) {
        check(raw_put(d, key, klen, val, vlen, flags), what);
    }
    void put_seq(Dbi d, uint64_t seq) {
        uint8_t key[4];
        be32(key, uint32_t(seq));
        put(d, key, 4, buf_.data(), buf_.size(), MDB_APPEND, "put dictionary entry");
    }
    static void queue_key(uint8_t *key, uint8_t state, uint32_t oid) {
        key[0] = state;
        be32(key + 1, oid);
    }
    void queue_put(uint8_t state, uint32_t oid) {
        if (state >= NSTATES) throw std::runtime_error("LMDB: state out of range");
        uint8_t key[5];
        queue_key(key, state, oid);
        put(kQueue, key, 5, "", 0, 0, "put queue");
    }
    bool mat_find(uint32_t oid, MatV &out) {
        uint8_t key[4];
        be32(key, oid);
        MDB_val k{4, key}, v;
        int rc = mdb_get(txn(), dbi_[kMaterial], &k, &v);
        if (rc == MDB_NOTFOUND) return false;
        check(rc, "get material");
        if (v.mv_size != sizeof out) throw std::runtime_error("LMDB: a material of the wrong size");
        std::memcpy(&out, v.mv_data, sizeof out);
        return true;
    }
    MatV mat(uint32_t oid) {
        MatV v;
        if (!mat_find(oid, v)) throw std::runtime_error("LMDB: no material " + std::to_string(oid));
        return v;
    }
    void mat_put(uint32_t oid, const MatV &v) {
        uint8_t key[4];
        be32(key, oid);
        put(kMaterial, key, 4, &v, sizeof v, 0, "put material");
    }
    bool step_find(uint32_t oid, MDB_val &v) {
        uint8_t key[4];
        be32(key, oid);
        MDB_val k{4, key};
        int rc = mdb_get(txn(), dbi_[kStep], &k, &v);
        if (rc == MDB_NOTFOUND) return false;
        check(rc, "get step");
        StepV h;
        if (v.mv_size < sizeof h) throw std::runtime_error("LMDB: a step cut short");
        std::memcpy(&h, v.mv_data, sizeof h);
        if (v.mv_size < sizeof h + size_t(h.nmat) * 4) throw std::runtime_error("LMDB: a step's materials cut short");
        return true;
    }

    std::string path_;
    MDB_env *env_ = nullptr;
    MDB_txn *txn_ = nullptr;
    MDB_dbi dbi_[kNumDbi] = {};
    uint64_t nkind_entries_ = 0, nattr_entries_ = 0;
    bool sized_ = false;
    uint32_t nkinds_ = 0;   // kinds in the dictionary: REPORT1's counts have a slot each
    std::string buf_;
    std::vector<uint8_t> payload_;
    std::vector<uint32_t> mats_;
};

Registration reg("LMDB", true, [](const std::string &dir, bool fresh) {
    return std::unique_ptr<Store>(new LmdbStore(dir, fresh));
});

}  // namespace
}  // namespace lf
