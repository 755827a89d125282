// oo7_lmdb.cc -- OO7 mapped onto LMDB the way a competent user of a key-value store would:
// the other embedded store a user picks instead of a generated data manager, and the
// durable peer (sync on) of the journalled variants beside SQLite WAL.
//
//   LMDB persistent          <dir>/oo7.lmdb, MDB_WRITEMAP | MDB_NOSYNC: no durability, as
//                            the generated persistent variants and SQLITE (the TPC-B LMDB
//                            reference's flags, bench/tpcb/tpcb_refs.cc)
//   LMDB-SYNC persistent     LMDB's durable default flags: mdb_txn_commit writes the dirty
//                            pages and fsyncs the data file and the meta page; every run of
//                            the driver one write transaction
//   LMDB-SYNC100 persistent  the same flags, one write transaction per 100 runs of the
//                            driver (commit() commits every 100th time it closes a
//                            transaction that wrote); registered for durable runs only
//
// Schema: one named database (a B+tree) per class, keyed by the object's OO7 id as a
// native unsigned int (MDB_INTEGERKEY); the id is also the Handle the generator passes
// back. A value is the object's attributes (a fixed header) followed by its references as
// id arrays: a complex assembly's subassemblies, a base assembly's two bags (private,
// shared: draw order and duplicates kept, which a dup-sorted database cannot keep), a
// composite part's atomic parts and its two inverse bags, an atomic part's outgoing
// connections (owned by their source, as in oo7_hand.cc: target id, type, length) and its
// incoming ones (the source ids). So a traversal step is one B+tree descent per object.
// The secondary indexes are databases of their own: the buildDate index is dup-sorted
// (date -> atomic ids, MDB_DUPSORT | MDB_INTEGERDUP | MDB_DUPFIXED), the title index maps
// a document title to its id. Texts are stored after the header (LMDB puts a large value
// on overflow pages of its own).
//
// Transactions: begin() opens nothing; the first read opens a read-only transaction, the
// first write a write transaction (releasing the read one first: a thread holds one
// transaction at a time), and reads inside a write transaction go through it. commit()
// commits the write transaction (LMDB-SYNC100: every 100th) and ends the read one. A
// write transaction's values are copied out before the next write in it, which may
// move them. Updates are read-modify-write through a cursor (MDB_CURRENT: one descent).
#include <lmdb.h>
#include <sys/stat.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "../lmdb_util.h"
#include "oo7.h"

namespace oo7 {
namespace {

// ---------------------------------------------------------------------------------------
// values: a header (trivially copyable, zero-filled so no padding byte is undefined),
// then its arrays. LMDB aligns values to 2 bytes only: every read is a memcpy.

constexpr int kType = 12;   // type[10] rounded up to a multiple of 4

struct ModuleH {
    int32_t id, date;
    uint32_t design_root, manual;   // 0: none
    char type[kType];
};
struct ManualH {
    int32_t id, text_len;
    uint32_t module;
    char title[kTitleSize];
};   // + text
struct ComplexH {
    int32_t id, date;
    uint32_t super, module;   // super 0: the module's design root
    uint32_t kids_base;       // 1: the subassemblies are base assemblies
    char type[kType];
    uint32_t n[1];            // subassemblies
};
struct BaseH {
    int32_t id, date;
    uint32_t super, module;
    char type[kType];
    uint32_t n[2];            // componentsPriv, componentsShar (bags)
};
struct CompH {
    int32_t id, date;
    uint32_t root, doc;
    char type[kType];
    uint32_t n[3];            // parts, usedInPriv, usedInShar (bags)
};
struct DocH {
    int32_t id, len;
    uint32_t part;
    char title[kTitleSize];
};   // + text
struct Conn {
    uint32_t to;
    int32_t length;
    char type[kType];
};
struct AtomH {
    int32_t id, date, x, y, doc_id;
    uint32_t part_of, nout, nin;
    char type[kType];
};   // + Conn[nout] + uint32_t from[nin]

static_assert(sizeof(ComplexH) % 4 == 0 && sizeof(BaseH) % 4 == 0 && sizeof(CompH) % 4 == 0 &&
                  sizeof(AtomH) % 4 == 0 && sizeof(Conn) == 20,
              "headers are whole words");

template <class H>
H header(const MDB_val &v) {
    if (v.mv_size < sizeof(H)) throw std::runtime_error("LMDB: a value shorter than its header");
    H h;
    std::memcpy(&h, v.mv_data, sizeof h);
    return h;
}

void put_fixed(char *dst, size_t size, const char *src, size_t max) {
    std::memset(dst, 0, size);
    std::memcpy(dst, src, strnlen(src, max));
}

// a design object's header (module, assembly, composite or atomic part) with its common
// attributes set: id, type, build date
template <class H>
void design(H &h, int32_t id, const char *type, int32_t date) {
    h.id = id;
    h.date = date;
    put_fixed(h.type, kType, type, kTypeSize);
}

// A record with id arrays after its header: decoded, edited, encoded again (builds, SM1,
// SM2: the hot operations read headers and arrays in place).
template <class H>
struct Rec {
    static constexpr size_t L = sizeof(H::n) / sizeof(uint32_t);
    H h{};
    std::vector<uint32_t> l[L];

    void decode(const MDB_val &v) {
        h = header<H>(v);
        size_t need = sizeof(H);
        for (size_t i = 0; i < L; i++) need += h.n[i] * sizeof(uint32_t);
        if (v.mv_size != need) throw std::runtime_error("LMDB: a record's arrays disagree with its size");
        const char *p = static_cast<const char *>(v.mv_data) + sizeof(H);
        for (size_t i = 0; i < L; i++) {
            l[i].resize(h.n[i]);
            if (h.n[i]) std::memcpy(l[i].data(), p, h.n[i] * sizeof(uint32_t));
            p += h.n[i] * sizeof(uint32_t);
        }
    }
    void encode(std::string &out) {
        for (size_t i = 0; i < L; i++) h.n[i] = static_cast<uint32_t>(l[i].size());
        out.assign(reinterpret_cast<const char *>(&h), sizeof h);
        for (size_t i = 0; i < L; i++)
            out.append(reinterpret_cast<const char *>(l[i].data()), l[i].size() * sizeof(uint32_t));
    }
};

struct Atom {
    AtomH h{};
    std::vector<Conn> out;
    std::vector<uint32_t> in;

    void decode(const MDB_val &v) {
        h = header<AtomH>(v);
        if (v.mv_size != sizeof(AtomH) + h.nout * sizeof(Conn) + h.nin * sizeof(uint32_t))
            throw std::runtime_error("LMDB: an atomic part's connections disagree with its size");
        const char *p = static_cast<const char *>(v.mv_data) + sizeof(AtomH);
        out.resize(h.nout);
        if (h.nout) std::memcpy(out.data(), p, h.nout * sizeof(Conn));
        in.resize(h.nin);
        if (h.nin) std::memcpy(in.data(), p + h.nout * sizeof(Conn), h.nin * sizeof(uint32_t));
    }
    void encode(std::string &s) {
        h.nout = static_cast<uint32_t>(out.size());
        h.nin = static_cast<uint32_t>(in.size());
        s.assign(reinterpret_cast<const char *>(&h), sizeof h);
        s.append(reinterpret_cast<const char *>(out.data()), out.size() * sizeof(Conn));
        s.append(reinterpret_cast<const char *>(in.data()), in.size() * sizeof(uint32_t));
    }
};

// the i-th word of array `which` of a record read in place
template <class H>
const char *array_at(const MDB_val &v, const H &h, size_t which) {
    size_t off = sizeof(H);
    for (size_t i = 0; i < which; i++) off += h.n[i] * sizeof(uint32_t);
    if (off + h.n[which] * sizeof(uint32_t) > v.mv_size) throw std::runtime_error("LMDB: a record is cut short");
    return static_cast<const char *>(v.mv_data) + off;
}
uint32_t word(const char *p, size_t i) {
    uint32_t w;
    std::memcpy(&w, p + i * sizeof w, sizeof w);
    return w;
}

// the buildDate index key: the sign bit flipped, so unsigned order is signed order
uint32_t date_key(int32_t d) { return static_cast<uint32_t>(d) ^ 0x80000000u; }
int32_t key_date(uint32_t k) { return static_cast<int32_t>(k ^ 0x80000000u); }

uint64_t count_char(const char *s, size_t n, char c) {
    uint64_t k = 0;
    for (size_t i = 0; i < n; i++) k += s[i] == c;
    return k;
}

using benchlmdb::check;
using benchlmdb::Cursor;

// the named databases
enum Dbi { kMeta, kModule, kManual, kComplex, kBase, kComp, kDoc, kTitle, kAtomic, kDate, kNumDbi };
const char *const kDbiName[kNumDbi] = {"meta",      "module",   "manual",    "complex_assembly",
                                       "base_assembly", "composite_part", "document", "document_title",
                                       "atomic_part",   "atomic_build_date"};
const unsigned kDbiFlags[kNumDbi] = {
    0,                  MDB_INTEGERKEY, MDB_INTEGERKEY, MDB_INTEGERKEY, MDB_INTEGERKEY,
    MDB_INTEGERKEY,     MDB_INTEGERKEY, 0,              MDB_INTEGERKEY,
    MDB_INTEGERKEY | MDB_DUPSORT | MDB_INTEGERDUP | MDB_DUPFIXED};

// the parameters verify() checks the shape against, kept in the meta database
const char *const kMetaKeys[] = {"atomic_per_comp", "conn_per_atomic", "assm_per_assm", "assm_levels",
                                 "comp_per_assm"};

class LmdbDb final : public Db {
public:
    // group: 0 = no durability (MDB_WRITEMAP | MDB_NOSYNC), a commit per transaction;
    // G > 0 = LMDB's durable default flags, a commit every G transactions that wrote
    LmdbDb(const std::string &dir, int group) : group_(group) {
        mkdir(dir.c_str(), 0777);   // the driver normally made it; harmless if it exists
        path_ = dir + "/oo7.lmdb";
        check(mdb_env_create(&env_), "mdb_env_create");
        try {
            check(mdb_env_set_maxdbs(env_, kNumDbi), "mdb_env_set_maxdbs");
            // the map: LMDB's default for a new file until begin_build sizes it from the
            // parameters; a reopen takes the size stored in the file
            unsigned flags = MDB_NOSUBDIR | (group_ ? 0u : unsigned(MDB_WRITEMAP | MDB_NOSYNC));
            check(mdb_env_open(env_, path_.c_str(), flags, 0644), "mdb_env_open " + path_);
            MDB_txn *t;
            check(mdb_txn_begin(env_, nullptr, 0, &t), "mdb_txn_begin");
            for (int i = 0; i < kNumDbi; i++) {
                int rc = mdb_dbi_open(t, kDbiName[i], kDbiFlags[i] | MDB_CREATE, &dbi_[i]);
                if (rc != 0) {
                    mdb_txn_abort(t);
                    check(rc, "mdb_dbi_open");
                }
            }
            check(mdb_txn_commit(t), "mdb_txn_commit");
        } catch (...) {
            mdb_env_close(env_);
            throw;
        }
    }

    ~LmdbDb() override {
        // closed without an explicit commit (a failed run, or the tail of a group): keep
        // what was done, as the other systems do
        if (rtxn_) mdb_txn_abort(rtxn_);
        if (wtxn_) mdb_txn_commit(wtxn_);
        mdb_env_close(env_);
    }

    std::string name() const override {
        return group_ == 0 ? "LMDB" : group_ == 1 ? "LMDB-SYNC" : "LMDB-SYNC" + std::to_string(group_);
    }

    // -- build --------------------------------------------------------------------------
    void begin_build(const Params &p) override {
        end_read();
        if (wtxn_) commit_now();
        // eight times what the objects hold, and room: B+tree pages are half to full, and
        // a durable run's hundred SM1s add as many composite parts again as the build
        // (MDB_WRITEMAP grows the file to the whole map, sparse)
        size_t map = static_cast<size_t>(raw_object_bytes(p)) * 8 + kMinMap;
        check(mdb_env_set_mapsize(env_, map), "mdb_env_set_mapsize");
        building_ = true;
        const int values[] = {p.atomic_per_comp, p.conn_per_atomic, p.assm_per_assm, p.assm_levels,
                              p.comp_per_assm};
        for (size_t i = 0; i < sizeof values / sizeof *values; i++) {
            MDB_val k{strlen(kMetaKeys[i]), const_cast<char *>(kMetaKeys[i])};
            MDB_val v{sizeof values[i], const_cast<int *>(&values[i])};
            check(mdb_put(w(), dbi_[kMeta], &k, &v, 0), "mdb_put meta");
        }
    }
    void end_build() override {
        building_ = false;
        commit_now();
    }

    Handle add_module(int32_t id, const char *type, int32_t date) override {
        ModuleH h{};
        design(h, id, type, date);
        put_raw(kModule, static_cast<uint32_t>(id), &h, sizeof h, MDB_NOOVERWRITE);
        return static_cast<Handle>(id);
    }
    void add_manual(Handle module, int32_t id, const char *title, const char *text, int32_t len) override {
        ManualH h{};
        h.text_len = len;
        h.module = static_cast<uint32_t>(module);
        put_texted(kManual, id, h, title, text, len);
        ModuleH m = get_header<ModuleH>(kModule, static_cast<uint32_t>(module), "manual's module");
        m.manual = static_cast<uint32_t>(id);
        put_raw(kModule, static_cast<uint32_t>(module), &m, sizeof m, 0);
    }
    Handle add_complex(Handle module, Handle super, int32_t id, const char *type, int32_t date) override {
        Rec<ComplexH> r;
        design(r.h, id, type, date);
        r.h.super = super == kNone ? 0 : static_cast<uint32_t>(super);
        r.h.module = static_cast<uint32_t>(module);
        put_rec(kComplex, static_cast<uint32_t>(id), r, MDB_NOOVERWRITE);
        if (super == kNone) {
            ModuleH m = get_header<ModuleH>(kModule, static_cast<uint32_t>(module), "complex assembly's module");
            m.design_root = static_cast<uint32_t>(id);
            put_raw(kModule, static_cast<uint32_t>(module), &m, sizeof m, 0);
        } else {
            add_kid(static_cast<uint32_t>(super), static_cast<uint32_t>(id), false);
        }
        return static_cast<Handle>(id);
    }
    Handle add_base(Handle module, Handle super, int32_t id, const char *type, int32_t date) override {
        Rec<BaseH> r;
        design(r.h, id, type, date);
        r.h.super = static_cast<uint32_t>(super);
        r.h.module = static_cast<uint32_t>(module);
        put_rec(kBase, static_cast<uint32_t>(id), r, MDB_NOOVERWRITE);
        add_kid(static_cast<uint32_t>(super), static_cast<uint32_t>(id), true);
        return static_cast<Handle>(id);
    }
    Handle add_composite(int32_t id, const char *type, int32_t date) override {
        // a build commits every so many composite parts: the write transaction's dirty
        // pages stay bounded (what a user loading a large database does)
        if (building_ && ++built_ % kBuildBatch == 0) commit_now();
        Rec<CompH> r;
        design(r.h, id, type, date);
        put_rec(kComp, static_cast<uint32_t>(id), r, MDB_NOOVERWRITE);
        return static_cast<Handle>(id);
    }
    void add_document(Handle comp, int32_t id, const char *title, const char *text, int32_t len) override {
        DocH h{};
        h.len = len;
        h.part = static_cast<uint32_t>(comp);
        put_texted(kDoc, id, h, title, text, len);
        uint32_t doc = static_cast<uint32_t>(id);
        MDB_val k{strnlen(h.title, kTitleSize), h.title}, dv{sizeof doc, &doc};
        check(mdb_put(w(), dbi_[kTitle], &k, &dv, MDB_NOOVERWRITE), "mdb_put document title (a duplicate?)");
        Rec<CompH> c;
        get_rec(kComp, static_cast<uint32_t>(comp), c, "document's composite part");
        c.h.doc = doc;
        put_rec(kComp, static_cast<uint32_t>(comp), c, 0);
    }
    Handle add_atomic(Handle comp, int32_t id, const char *type, int32_t date, int32_t x, int32_t y,
                      int32_t doc_id) override {
        Atom a;
        design(a.h, id, type, date);
        a.h.x = x;
        a.h.y = y;
        a.h.doc_id = doc_id;
        a.h.part_of = static_cast<uint32_t>(comp);
        a.encode(buf_);
        put_raw(kAtomic, static_cast<uint32_t>(id), buf_.data(), buf_.size(), MDB_NOOVERWRITE);
        date_add(date, static_cast<uint32_t>(id));
        Rec<CompH> c;
        get_rec(kComp, static_cast<uint32_t>(comp), c, "atomic part's composite part");
        if (c.h.root == 0) c.h.root = static_cast<uint32_t>(id);   // the first part is rootPart
        c.l[0].push_back(static_cast<uint32_t>(id));
        put_rec(kComp, static_cast<uint32_t>(comp), c, 0);
        return static_cast<Handle>(id);
    }
    void add_connection(Handle from, Handle to, const char *type, int32_t length) override {
        Atom a;
        get_atom(static_cast<uint32_t>(from), a);
        Conn k{};
        k.to = static_cast<uint32_t>(to);
        k.length = length;
        put_fixed(k.type, kType, type, kTypeSize);
        a.out.push_back(k);
        put_atom(a);
        get_atom(static_cast<uint32_t>(to), a);   // `to` may be `from`: read it again
        a.in.push_back(static_cast<uint32_t>(from));
        put_atom(a);
    }
    void link_private(Handle base, Handle comp) override { link(base, comp, 0, 1); }
    void link_shared(Handle base, Handle comp) override { link(base, comp, 1, 2); }
    Handle base_by_id(int32_t id) override {
        MDB_val v;
        return get(kBase, static_cast<uint32_t>(id), &v) ? static_cast<Handle>(id) : kNone;
    }

    // -- transactions -------------------------------------------------------------------
    void begin() override {}   // opened by the first read or write
    void commit() override {
        end_read();
        if (!wtxn_) return;
        if (group_ > 1 && ++pending_ < group_) return;   // LMDB-SYNC100: the group goes on
        commit_now();
    }

    // -- traversals ---------------------------------------------------------------------
    uint64_t t1(uint64_t *connections_examined) override {
        uint64_t parts = 0, examined = 0;
        Cursor atoms(r(), dbi_[kAtomic]);
        each_private_visit([&](uint32_t comp) {
            dfs(atoms, comp, &examined, [&](uint32_t, const MDB_val &, const AtomH &, bool) { parts++; });
        });
        if (connections_examined) *connections_examined = examined;
        return parts;
    }

    uint64_t t2(char mode) override {
        return update_traversal(mode, [](AtomH &h) { std::swap(h.x, h.y); }, false);
    }
    uint64_t t3(char mode) override {
        return update_traversal(mode, [](AtomH &h) { h.date = h.date % 2 != 0 ? h.date + 1 : h.date - 1; }, true);
    }

    uint64_t t4() override {
        uint64_t n = 0;
        each_private_visit([&](uint32_t comp) {
            MDB_val v;
            uint32_t doc = comp_header(comp).doc;
            if (!get(kDoc, doc, &v)) throw std::runtime_error("LMDB T4: composite part without its document");
            DocH h = header<DocH>(v);
            n += count_char(static_cast<const char *>(v.mv_data) + sizeof h, static_cast<size_t>(h.len), 'I');
        });
        return n;
    }

    uint64_t t5(bool undo) override {
        static const std::string kPlain = "I am", kEdited = "This is";
        const std::string &from = undo ? kEdited : kPlain, &to = undo ? kPlain : kEdited;
        uint64_t n = 0;
        std::vector<uint32_t> docs;
        each_private_visit([&](uint32_t comp) { docs.push_back(comp_header(comp).doc); });
        for (uint32_t doc : docs) {   // the walk first: a write may move what it reads
            MDB_val v;
            if (!get(kDoc, doc, &v)) throw std::runtime_error("LMDB T5: composite part without its document");
            DocH h = header<DocH>(v);
            const char *text = static_cast<const char *>(v.mv_data) + sizeof h;
            if (static_cast<size_t>(h.len) < from.size() || std::memcmp(text, from.data(), from.size()) != 0)
                continue;
            std::string nv(static_cast<const char *>(v.mv_data), sizeof h);
            nv += to;
            nv.append(text + from.size(), static_cast<size_t>(h.len) - from.size());
            h.len = static_cast<int32_t>(nv.size() - sizeof h);
            std::memcpy(&nv[0], &h, sizeof h);
            put_raw(kDoc, doc, nv.data(), nv.size(), 0);
            n++;
        }
        return n;
    }

    uint64_t t6() override {
        uint64_t n = 0;
        Cursor atoms(r(), dbi_[kAtomic]);
        each_private_visit([&](uint32_t comp) {
            MDB_val v;
            if (!atoms.find(comp_header(comp).root, &v)) throw std::runtime_error("LMDB T6: missing root part");
            AtomH h = header<AtomH>(v);
            do_nothing_part(h.x, h.y, h.type);
            n++;
        });
        return n;
    }

    uint64_t t7_from_atomic(int32_t atomic_id) override {
        MDB_val v;
        if (!get(kAtomic, static_cast<uint32_t>(atomic_id), &v)) return 0;
        uint32_t comp = header<AtomH>(v).part_of;
        if (!get(kComp, comp, &v)) throw std::runtime_error("LMDB T7: atomic part of a missing composite part");
        CompH ch = header<CompH>(v);
        const char *users = array_at(v, ch, 1);
        std::vector<uint32_t> bases(ch.n[1]);
        for (uint32_t i = 0; i < ch.n[1]; i++) bases[i] = word(users, i);
        uint64_t n = 0;
        visited_.clear();
        for (uint32_t b : bases) {
            // base ids and complex ids share the set: tag the complex ones
            if (!visited_.insert(b)) continue;
            if (!get(kBase, b, &v)) throw std::runtime_error("LMDB T7: missing base assembly");
            BaseH bh = header<BaseH>(v);
            do_nothing_assm(bh.id, bh.type, bh.date);
            n++;
            for (uint32_t up = bh.super; up != 0 && visited_.insert(kComplexTag | up);) {
                if (!get(kComplex, up, &v)) throw std::runtime_error("LMDB T7: missing complex assembly");
                ComplexH xh = header<ComplexH>(v);
                do_nothing_assm(xh.id, xh.type, xh.date);
                n++;
                up = xh.super;
            }
        }
        return n;
    }

    uint64_t t8() override {
        MDB_val v = manual1();
        ManualH h = header<ManualH>(v);
        return count_char(static_cast<const char *>(v.mv_data) + sizeof h, static_cast<size_t>(h.text_len), 'I');
    }

    uint64_t t9() override {
        MDB_val v = manual1();
        ManualH h = header<ManualH>(v);
        const char *s = static_cast<const char *>(v.mv_data) + sizeof h;
        return h.text_len > 0 && s[0] == s[h.text_len - 1] ? 1 : 0;
    }

    // -- queries ------------------------------------------------------------------------
    bool q1_lookup(int32_t atomic_id) override {
        MDB_val v;
        if (atomic_id <= 0 || !get(kAtomic, static_cast<uint32_t>(atomic_id), &v)) return false;
        AtomH h = header<AtomH>(v);
        do_nothing_part(h.x, h.y, h.type);
        return true;
    }

    uint64_t date_range(int32_t lo, int32_t hi) override {
        if (lo > hi) return 0;
        Cursor dates(r(), dbi_[kDate]);
        Cursor atoms(r(), dbi_[kAtomic]);
        uint32_t lk = date_key(lo);
        MDB_val k{sizeof lk, &lk}, v;
        uint64_t n = 0;
        for (bool more = dates.get(&k, &v, MDB_SET_RANGE); more; more = dates.get(&k, &v, MDB_NEXT)) {
            uint32_t kk, id;
            std::memcpy(&kk, k.mv_data, sizeof kk);
            if (key_date(kk) > hi) break;
            std::memcpy(&id, v.mv_data, sizeof id);
            MDB_val a;
            if (!atoms.find(id, &a)) throw std::runtime_error("LMDB: the buildDate index names a missing atomic part");
            AtomH h = header<AtomH>(a);
            do_nothing_part(h.x, h.y, h.type);
            n++;
        }
        return n;
    }

    uint64_t q4_title(const char *title) override {
        MDB_val k{strnlen(title, kTitleSize), const_cast<char *>(title)}, v;
        int rc = mdb_get(r(), dbi_[kTitle], &k, &v);
        if (rc == MDB_NOTFOUND) return 0;
        check(rc, "mdb_get document title");
        uint32_t doc;
        std::memcpy(&doc, v.mv_data, sizeof doc);
        if (!get(kDoc, doc, &v)) throw std::runtime_error("LMDB Q4: the title index names a missing document");
        if (!get(kComp, header<DocH>(v).part, &v)) throw std::runtime_error("LMDB Q4: document of a missing part");
        CompH ch = header<CompH>(v);
        const char *users = array_at(v, ch, 1);
        std::vector<uint32_t> bases(ch.n[1]);
        for (uint32_t i = 0; i < ch.n[1]; i++) bases[i] = word(users, i);
        uint64_t n = 0;
        for (uint32_t b : bases) {
            if (!get(kBase, b, &v)) throw std::runtime_error("LMDB Q4: missing base assembly");
            BaseH bh = header<BaseH>(v);
            do_nothing_assm(bh.id, bh.type, bh.date);
            n++;
        }
        return n;
    }

    uint64_t q5(uint64_t *pairs) override {
        Cursor bases(r(), dbi_[kBase]);
        Cursor comps(r(), dbi_[kComp]);
        MDB_val k, v;
        uint64_t n = 0, p = 0;
        for (bool more = bases.get(&k, &v, MDB_FIRST); more; more = bases.get(&k, &v, MDB_NEXT)) {
            BaseH bh = header<BaseH>(v);
            const char *priv = array_at(v, bh, 0);
            bool qualifies = false;
            for (uint32_t i = 0; i < bh.n[0]; i++) {
                MDB_val c;
                if (!comps.find(word(priv, i), &c)) throw std::runtime_error("LMDB Q5: missing composite part");
                if (header<CompH>(c).date > bh.date) {
                    p++;
                    qualifies = true;
                }
            }
            if (qualifies) {
                do_nothing_assm(bh.id, bh.type, bh.date);
                n++;
            }
        }
        if (pairs) *pairs = p;
        return n;
    }

    uint64_t q6() override {
        std::vector<uint32_t> roots;
        {
            Cursor modules(r(), dbi_[kModule]);
            MDB_val k, v;
            for (bool more = modules.get(&k, &v, MDB_FIRST); more; more = modules.get(&k, &v, MDB_NEXT)) {
                uint32_t root = header<ModuleH>(v).design_root;
                if (root) roots.push_back(root);
            }
        }
        uint64_t n = 0;
        for (uint32_t root : roots) newest_below(root, false, &n);
        return n;
    }

    uint64_t q7() override {
        Cursor atoms(r(), dbi_[kAtomic]);
        MDB_val k, v;
        uint64_t n = 0;
        for (bool more = atoms.get(&k, &v, MDB_FIRST); more; more = atoms.get(&k, &v, MDB_NEXT)) {
            AtomH h = header<AtomH>(v);
            do_nothing_part(h.x, h.y, h.type);
            n++;
        }
        return n;
    }

    uint64_t q8() override {
        Cursor atoms(r(), dbi_[kAtomic]);
        Cursor docs(r(), dbi_[kDoc]);
        MDB_val k, v, d;
        uint64_t n = 0;
        for (bool more = atoms.get(&k, &v, MDB_FIRST); more; more = atoms.get(&k, &v, MDB_NEXT)) {
            AtomH h = header<AtomH>(v);
            if (h.doc_id <= 0 || !docs.find(static_cast<uint32_t>(h.doc_id), &d)) continue;
            join_do_nothing(h.id, header<DocH>(d).id);
            n++;
        }
        return n;
    }

    bool delete_composite(int32_t id) override;

    // -- checks -------------------------------------------------------------------------
    Counts counts() override {
        Counts c;
        c.modules = entries(kModule);
        c.manuals = entries(kManual);
        c.complex_assemblies = entries(kComplex);
        c.base_assemblies = entries(kBase);
        c.composite_parts = entries(kComp);
        c.documents = entries(kDoc);
        c.atomic_parts = entries(kAtomic);
        MDB_val k, v;
        {
            Cursor atoms(r(), dbi_[kAtomic]);
            for (bool more = atoms.get(&k, &v, MDB_FIRST); more; more = atoms.get(&k, &v, MDB_NEXT))
                c.connections += header<AtomH>(v).nout;
        }
        Cursor bases(r(), dbi_[kBase]);
        for (bool more = bases.get(&k, &v, MDB_FIRST); more; more = bases.get(&k, &v, MDB_NEXT)) {
            BaseH h = header<BaseH>(v);
            c.private_links += h.n[0];
            c.shared_links += h.n[1];
        }
        return c;
    }

    std::string verify() override;

    uint64_t size_bytes() override {
        MDB_envinfo info;
        MDB_stat st;
        check(mdb_env_info(env_, &info), "mdb_env_info");
        check(mdb_env_stat(env_, &st), "mdb_env_stat");
        uint64_t used = (static_cast<uint64_t>(info.me_last_pgno) + 1) * st.ms_psize;
        // MDB_WRITEMAP grows the file to the whole map: count the pages in use then
        return group_ == 0 ? used : std::max(used, file_size(path_));
    }

private:
    static constexpr size_t kMinMap = size_t{16} << 20;
    static constexpr uint64_t kBuildBatch = 64;
    static constexpr uint64_t kComplexTag = uint64_t{1} << 32;

    // -- transactions -------------------------------------------------------------------
    MDB_txn *r() {
        if (wtxn_) return wtxn_;
        if (!rtxn_) {
            check(mdb_txn_begin(env_, nullptr, MDB_RDONLY, &rtxn_), "mdb_txn_begin (read)");
        } else if (!reading_) {
            check(mdb_txn_renew(rtxn_), "mdb_txn_renew");
        }
        reading_ = true;
        return rtxn_;
    }
    MDB_txn *w() {
        if (wtxn_) return wtxn_;
        end_read();
        check(mdb_txn_begin(env_, nullptr, 0, &wtxn_), "mdb_txn_begin");
        return wtxn_;
    }
    void end_read() {
        if (rtxn_ && reading_) mdb_txn_reset(rtxn_);
        reading_ = false;
    }
    void commit_now() {
        pending_ = 0;
        if (!wtxn_) return;
        MDB_txn *t = wtxn_;
        wtxn_ = nullptr;
        check(mdb_txn_commit(t), "mdb_txn_commit");
    }

    // -- access ---------------------------------------------------------------------------
    bool get(Dbi d, uint32_t key, MDB_val *v) {
        MDB_val k{sizeof key, &key};
        int rc = mdb_get(r(), dbi_[d], &k, v);
        if (rc == MDB_NOTFOUND) return false;
        check(rc, "mdb_get");
        return true;
    }
    template <class H>
    H get_header(Dbi d, uint32_t key, const char *what) {
        MDB_val v;
        if (!get(d, key, &v)) throw std::runtime_error(std::string("LMDB: missing ") + what);
        return header<H>(v);
    }
    template <class H>
    void get_rec(Dbi d, uint32_t key, Rec<H> &rec, const char *what) {
        MDB_val v;
        if (!get(d, key, &v)) throw std::runtime_error(std::string("LMDB: missing ") + what);
        rec.decode(v);
    }
    void get_atom(uint32_t id, Atom &a) {
        MDB_val v;
        if (!get(kAtomic, id, &v)) throw std::runtime_error("LMDB: connection to a missing atomic part");
        a.decode(v);
    }
    // a new manual's or document's record: its header (id and title set here), then the text
    template <class H>
    void put_texted(Dbi d, int32_t id, H &h, const char *title, const char *text, int32_t len) {
        h.id = id;
        put_fixed(h.title, kTitleSize, title, kTitleSize - 1);
        std::string v(reinterpret_cast<const char *>(&h), sizeof h);
        v.append(text, static_cast<size_t>(len));
        put_raw(d, static_cast<uint32_t>(id), v.data(), v.size(), MDB_NOOVERWRITE);
    }
    void put_raw(Dbi d, uint32_t key, const void *data, size_t size, unsigned flags) {
        MDB_val k{sizeof key, &key}, v{size, const_cast<void *>(data)};
        int rc = mdb_put(w(), dbi_[d], &k, &v, flags);
        if (rc == MDB_KEYEXIST)
            throw std::runtime_error(std::string("LMDB: duplicate id ") + std::to_string(key) + " in " + kDbiName[d]);
        check(rc, "mdb_put");
    }
    template <class H>
    void put_rec(Dbi d, uint32_t key, Rec<H> &rec, unsigned flags) {
        rec.encode(buf_);
        put_raw(d, key, buf_.data(), buf_.size(), flags);
    }
    void put_atom(Atom &a) {
        a.encode(buf_);
        put_raw(kAtomic, static_cast<uint32_t>(a.h.id), buf_.data(), buf_.size(), 0);
    }
    void date_add(int32_t date, uint32_t id) {
        uint32_t k = date_key(date);
        MDB_val kv{sizeof k, &k}, v{sizeof id, &id};
        check(mdb_put(w(), dbi_[kDate], &kv, &v, MDB_NODUPDATA), "mdb_put buildDate index");
    }
    void date_del(int32_t date, uint32_t id) {
        uint32_t k = date_key(date);
        MDB_val kv{sizeof k, &k}, v{sizeof id, &id};
        int rc = mdb_del(w(), dbi_[kDate], &kv, &v);
        if (rc == MDB_NOTFOUND) throw std::runtime_error("LMDB: the buildDate index lacks an atomic part");
        check(rc, "mdb_del buildDate index");
    }
    uint64_t entries(Dbi d) {
        MDB_stat st;
        check(mdb_stat(r(), dbi_[d], &st), "mdb_stat");
        return st.ms_entries;
    }
    CompH comp_header(uint32_t comp) { return get_header<CompH>(kComp, comp, "composite part"); }

    void add_kid(uint32_t super, uint32_t kid, bool is_base) {
        Rec<ComplexH> s;
        get_rec(kComplex, super, s, "super assembly");
        if (!s.l[0].empty() && (s.h.kids_base != 0) != is_base)
            throw std::runtime_error("LMDB: an assembly with complex and base subassemblies");
        s.h.kids_base = is_base ? 1 : 0;
        s.l[0].push_back(kid);
        put_rec(kComplex, super, s, 0);
    }
    // base.<list bl> gets comp, comp.<list cl> gets base: both directions of a bag
    void link(Handle base, Handle comp, size_t bl, size_t cl) {
        Rec<BaseH> b;
        get_rec(kBase, static_cast<uint32_t>(base), b, "base assembly");
        b.l[bl].push_back(static_cast<uint32_t>(comp));
        put_rec(kBase, static_cast<uint32_t>(base), b, 0);
        Rec<CompH> c;
        get_rec(kComp, static_cast<uint32_t>(comp), c, "composite part");
        c.l[cl].push_back(static_cast<uint32_t>(base));
        put_rec(kComp, static_cast<uint32_t>(comp), c, 0);
    }

    MDB_val manual1() {
        uint32_t man = get_header<ModuleH>(kModule, 1, "module 1").manual;
        MDB_val v;
        if (!man || !get(kManual, man, &v)) throw std::runtime_error("LMDB: module 1 has no manual");
        return v;
    }

    // The traversal skeleton (T1-T6): module 1's design root, subassemblies in stored
    // order, every element of each base assembly's private bag, duplicates included. Each
    // level's ids are copied out before descending (a visit may write).
    template <class F>
    void each_private_visit(F &&visit) {
        uint32_t root = get_header<ModuleH>(kModule, 1, "module 1").design_root;
        if (root) walk(root, false, visit);
    }
    template <class F>
    void walk(uint32_t node, bool is_base, F &visit) {
        MDB_val v;
        std::vector<uint32_t> ids;
        bool kids_base = false;
        if (is_base) {
            if (!get(kBase, node, &v)) throw std::runtime_error("LMDB: missing base assembly");
            BaseH h = header<BaseH>(v);
            const char *a = array_at(v, h, 0);
            for (uint32_t i = 0; i < h.n[0]; i++) ids.push_back(word(a, i));
            for (uint32_t c : ids) visit(c);
            return;
        }
        if (!get(kComplex, node, &v)) throw std::runtime_error("LMDB: missing complex assembly");
        ComplexH h = header<ComplexH>(v);
        const char *a = array_at(v, h, 0);
        for (uint32_t i = 0; i < h.n[0]; i++) ids.push_back(word(a, i));
        kids_base = h.kids_base != 0;
        for (uint32_t k : ids) walk(k, kids_base, visit);
    }

    // T1's DFS inside one composite part, from rootPart along outgoing connections, each
    // part once (marked when first seen, as oo7_hand.cc does). on_part(id, value, header,
    // is_root) runs for each part reached, root first, after its targets were pushed: it
    // may write the part through `atoms` (the value is not read after).
    template <class F>
    void dfs(Cursor &atoms, uint32_t comp, uint64_t *examined, F &&on_part) {
        visited_.clear();
        stack_.clear();
        uint32_t root = comp_header(comp).root;
        visited_.insert(root);
        stack_.push_back(root);
        bool first = true;
        while (!stack_.empty()) {
            uint32_t p = stack_.back();
            stack_.pop_back();
            MDB_val v;
            if (!atoms.find(p, &v)) throw std::runtime_error("LMDB: connection to a missing atomic part");
            AtomH h = header<AtomH>(v);
            do_nothing_part(h.x, h.y, h.type);
            if (v.mv_size < sizeof h + h.nout * sizeof(Conn)) throw std::runtime_error("LMDB: an atomic part is cut short");
            const char *out = static_cast<const char *>(v.mv_data) + sizeof h;
            for (uint32_t i = 0; i < h.nout; i++) {
                (*examined)++;
                uint32_t to = word(out, i * (sizeof(Conn) / sizeof(uint32_t)));   // Conn::to is first
                if (visited_.insert(to)) stack_.push_back(to);
            }
            on_part(p, v, h, first);
            first = false;
        }
    }

    // T2 and T3: `change` applied to the visited parts' headers (T2a/T3a: the root part
    // of each visit; c: four times), each change written back at once; T3 moves the
    // part's entry in the buildDate index too
    template <class Change>
    uint64_t update_traversal(char mode, Change &&change, bool dated) {
        if (mode != 'a' && mode != 'b' && mode != 'c') throw std::runtime_error("LMDB: bad update mode");
        int repeat = mode == 'c' ? kUpdateRepeatCnt : 1;
        uint64_t updates = 0, examined = 0;
        w();
        Cursor atoms(wtxn_, dbi_[kAtomic]);
        each_private_visit([&](uint32_t comp) {
            dfs(atoms, comp, &examined, [&](uint32_t id, const MDB_val &v, AtomH h, bool is_root) {
                if (mode == 'a' && !is_root) return;
                upd_.assign(static_cast<const char *>(v.mv_data), v.mv_size);
                for (int k = 0; k < repeat; k++) {
                    int32_t old = h.date;
                    change(h);
                    std::memcpy(&upd_[0], &h, sizeof h);
                    atoms.replace(id, upd_);
                    if (dated) {
                        date_del(old, id);
                        date_add(h.date, id);
                    }
                    updates++;
                }
            });
        });
        return updates;
    }

    // Q6: the newest private composite part under assembly `node`; counts `node` (in *n)
    // when that is newer than its own date
    int32_t newest_below(uint32_t node, bool is_base, uint64_t *n) {
        MDB_val v;
        int32_t newest = INT32_MIN, date, id;
        char type[kType];
        std::vector<uint32_t> ids;
        bool kids_base = false;
        if (is_base) {
            if (!get(kBase, node, &v)) throw std::runtime_error("LMDB Q6: missing base assembly");
            BaseH h = header<BaseH>(v);
            const char *a = array_at(v, h, 0);
            for (uint32_t i = 0; i < h.n[0]; i++) ids.push_back(word(a, i));
            date = h.date;
            id = h.id;
            std::memcpy(type, h.type, kType);
            for (uint32_t c : ids) newest = std::max(newest, comp_header(c).date);
        } else {
            if (!get(kComplex, node, &v)) throw std::runtime_error("LMDB Q6: missing complex assembly");
            ComplexH h = header<ComplexH>(v);
            const char *a = array_at(v, h, 0);
            for (uint32_t i = 0; i < h.n[0]; i++) ids.push_back(word(a, i));
            date = h.date;
            id = h.id;
            std::memcpy(type, h.type, kType);
            kids_base = h.kids_base != 0;
            for (uint32_t k : ids) newest = std::max(newest, newest_below(k, kids_base, n));
        }
        if (newest > date) {
            do_nothing_assm(id, type, date);
            (*n)++;
        }
        return newest;
    }

    int group_;
    std::string path_;
    MDB_env *env_ = nullptr;
    MDB_dbi dbi_[kNumDbi] = {};
    MDB_txn *wtxn_ = nullptr, *rtxn_ = nullptr;
    bool reading_ = false;   // rtxn_ is live (not reset)
    int pending_ = 0;        // transactions in the open group (LMDB-SYNC100)
    bool building_ = false;
    uint64_t built_ = 0;
    std::string buf_, upd_;
    VisitedSet visited_;
    std::vector<uint32_t> stack_;
};

// SM2: the part, its document (and title entry), its atomic parts with their buildDate
// entries and every connection touching them (a connection from or to a part of another
// composite part is unlinked on that side too), and the part's ids in every base
// assembly's bags.
bool LmdbDb::delete_composite(int32_t id) {
    const uint32_t cid = static_cast<uint32_t>(id);
    MDB_val v;
    if (id <= 0 || !get(kComp, cid, &v)) return false;
    Rec<CompH> c;
    c.decode(v);
    for (size_t bag = 0; bag < 2; bag++) {
        std::set<uint32_t> users(c.l[1 + bag].begin(), c.l[1 + bag].end());
        for (uint32_t b : users) {
            Rec<BaseH> br;
            get_rec(kBase, b, br, "base assembly of a bag");
            auto &l = br.l[bag];
            l.erase(std::remove(l.begin(), l.end(), cid), l.end());
            put_rec(kBase, b, br, 0);
        }
    }
    const std::set<uint32_t> mine(c.l[0].begin(), c.l[0].end());
    Atom a, o;
    for (uint32_t p : c.l[0]) {
        get_atom(p, a);
        for (uint32_t f : a.in) {   // a connection from another composite part's part
            if (mine.count(f)) continue;
            get_atom(f, o);
            auto it = std::find_if(o.out.begin(), o.out.end(), [&](const Conn &k) { return k.to == p; });
            if (it != o.out.end()) o.out.erase(it);
            put_atom(o);
        }
        for (const Conn &k : a.out) {   // ... and to one
            if (mine.count(k.to)) continue;
            get_atom(k.to, o);
            auto it = std::find(o.in.begin(), o.in.end(), p);
            if (it != o.in.end()) o.in.erase(it);
            put_atom(o);
        }
        date_del(a.h.date, p);
        MDB_val k{sizeof p, &p};
        check(mdb_del(w(), dbi_[kAtomic], &k, nullptr), "mdb_del atomic part");
    }
    if (c.h.doc && get(kDoc, c.h.doc, &v)) {
        DocH d = header<DocH>(v);
        MDB_val tk{strnlen(d.title, kTitleSize), d.title};
        int rc = mdb_del(w(), dbi_[kTitle], &tk, nullptr);
        if (rc != MDB_NOTFOUND) check(rc, "mdb_del document title");
        uint32_t doc = c.h.doc;
        MDB_val k{sizeof doc, &doc};
        check(mdb_del(w(), dbi_[kDoc], &k, nullptr), "mdb_del document");
    }
    MDB_val k{sizeof cid, const_cast<uint32_t *>(&cid)};
    check(mdb_del(w(), dbi_[kComp], &k, nullptr), "mdb_del composite part");
    return true;
}

// verify(): spec section 5's structure over the whole database. Every object is read
// once into memory (ids -> decoded records), then every reference is checked to name an
// existing object whose inverse holds it back as often (bags are multisets), the 1:1
// pairs to be 1:1, the indexes (buildDate, title) to hold exactly the objects, and the
// shapes (fanout, parts per composite part, the ring edge, the assembly tree) against the
// parameters kept in the meta database.
std::string LmdbDb::verify() {
    std::string bad;
    int shown = 0;
    auto fail = [&](const std::string &what) {
        if (shown++ < 8) bad += what + "\n";
    };
    auto load = [&](Dbi d, auto &into) {
        Cursor cur(r(), dbi_[d]);
        MDB_val k, v;
        for (bool more = cur.get(&k, &v, MDB_FIRST); more; more = cur.get(&k, &v, MDB_NEXT)) {
            uint32_t key;
            std::memcpy(&key, k.mv_data, sizeof key);
            into[key].decode(v);
        }
    };
    std::map<uint32_t, Rec<ComplexH>> cx;
    std::map<uint32_t, Rec<BaseH>> bs;
    std::map<uint32_t, Rec<CompH>> cs;
    std::map<uint32_t, Atom> as;
    load(kComplex, cx);
    load(kBase, bs);
    load(kComp, cs);
    load(kAtomic, as);
    std::map<std::string, int> meta;
    {
        Cursor cur(r(), dbi_[kMeta]);
        MDB_val k, v;
        for (bool more = cur.get(&k, &v, MDB_FIRST); more; more = cur.get(&k, &v, MDB_NEXT)) {
            int x;
            std::memcpy(&x, v.mv_data, sizeof x);
            meta[std::string(static_cast<const char *>(k.mv_data), k.mv_size)] = x;
        }
    }
    auto param = [&](const char *key) { auto it = meta.find(key); return it == meta.end() ? -1 : it->second; };
    const int per_comp = param("atomic_per_comp"), fanout = param("conn_per_atomic"),
              per_assm = param("assm_per_assm"), levels = param("assm_levels"), comp_per_assm = param("comp_per_assm");
    for (const char *key : kMetaKeys)
        if (param(key) < 0) fail(std::string("meta: no ") + key);

    // atomic parts and connections
    std::map<std::pair<uint32_t, uint32_t>, int64_t> edges;   // (from, to): out minus in
    for (auto &[id, a] : as) {
        if (a.h.id != static_cast<int32_t>(id)) fail("atomic part " + std::to_string(id) + " stored under another id");
        auto c = cs.find(a.h.part_of);
        if (c == cs.end() || std::count(c->second.l[0].begin(), c->second.l[0].end(), id) != 1)
            fail("atomic part " + std::to_string(id) + " not in its composite part's parts once");
        MDB_val v;
        if (a.h.doc_id <= 0 || !get(kDoc, static_cast<uint32_t>(a.h.doc_id), &v))
            fail("atomic part " + std::to_string(id) + ": docId names no document");
        if (a.h.x < 0 || a.h.x >= kXYRange || a.h.y < 0 || a.h.y >= kXYRange)
            fail("atomic part " + std::to_string(id) + ": x or y out of range");
        if (fanout >= 0 && a.out.size() != static_cast<size_t>(fanout))
            fail("atomic part " + std::to_string(id) + " without NumConnPerAtomic outgoing connections");
        for (const Conn &k : a.out) {
            if (!as.count(k.to)) fail("connection to a missing atomic part " + std::to_string(k.to));
            else if (as.at(k.to).h.part_of != a.h.part_of) fail("a connection between composite parts");
            if (k.length < 0 || k.length >= kXYRange) fail("connection length out of range");
            edges[{id, k.to}]++;
        }
        for (uint32_t f : a.in) {
            if (!as.count(f)) fail("connection from a missing atomic part " + std::to_string(f));
            edges[{f, id}]--;
        }
        // the buildDate index holds the part under its date
        uint32_t dk = date_key(a.h.date);
        MDB_val kv{sizeof dk, &dk}, dv{sizeof id, const_cast<uint32_t *>(&id)};
        Cursor dc(r(), dbi_[kDate]);
        if (!dc.get(&kv, &dv, MDB_GET_BOTH)) fail("atomic part " + std::to_string(id) + " missing from the buildDate index");
    }
    for (auto &[e, d] : edges)
        if (d != 0) fail("connection " + std::to_string(e.first) + "->" + std::to_string(e.second) +
                         ": outgoing and incoming disagree");
    if (entries(kDate) != as.size())
        fail("the buildDate index holds " + std::to_string(entries(kDate)) + " entries for " +
             std::to_string(as.size()) + " atomic parts");

    // composite parts, documents, the title index
    std::map<std::pair<uint32_t, uint32_t>, int64_t> priv, shar;   // (base, comp): base side minus comp side
    for (auto &[id, c] : cs) {
        if (per_comp >= 0 && c.l[0].size() != static_cast<size_t>(per_comp))
            fail("composite part " + std::to_string(id) + " without NumAtomicPerComp parts");
        uint32_t lowest = c.l[0].empty() ? 0 : *std::min_element(c.l[0].begin(), c.l[0].end());
        if (c.h.root == 0 || c.h.root != lowest) fail("composite part " + std::to_string(id) + ": rootPart is not its first part");
        for (uint32_t p : c.l[0])
            if (!as.count(p) || as.at(p).h.part_of != id) fail("composite part " + std::to_string(id) + " lists a part not its own");
        if (!c.l[0].empty() && as.count(c.h.root) && !as.at(c.h.root).out.empty()) {
            // part i's first connection goes to part (i + 1) mod N (ids consecutive per part)
            for (uint32_t p : c.l[0]) {
                uint32_t ring = lowest + (p - lowest + 1) % static_cast<uint32_t>(c.l[0].size());
                if (as.count(p) && (as.at(p).out.empty() || as.at(p).out[0].to != ring))
                    fail("atomic part " + std::to_string(p) + ": first connection is not the ring edge");
            }
        }
        MDB_val v;
        if (!c.h.doc || !get(kDoc, c.h.doc, &v)) {
            fail("composite part " + std::to_string(id) + " without its document");
        } else {
            DocH d = header<DocH>(v);
            if (d.part != id || d.id != c.h.id || std::string(d.title, strnlen(d.title, kTitleSize)) != document_title(c.h.id))
                fail("document " + std::to_string(c.h.doc) + " does not match composite part " + std::to_string(id));
            MDB_val tk{strnlen(d.title, kTitleSize), d.title}, tv;
            uint32_t named = 0;
            if (mdb_get(r(), dbi_[kTitle], &tk, &tv) == 0) std::memcpy(&named, tv.mv_data, sizeof named);
            if (named != c.h.doc) fail("the title index does not name document " + std::to_string(c.h.doc));
        }
        for (uint32_t b : c.l[1]) priv[{b, id}]--;
        for (uint32_t b : c.l[2]) shar[{b, id}]--;
    }
    if (entries(kDoc) != cs.size()) fail("documents and composite parts differ in number");
    if (entries(kTitle) != entries(kDoc)) fail("the title index and the documents differ in number");

    // assemblies: the tree, the bags from the base side
    std::map<uint32_t, int> depth;   // complex assemblies reached from a design root
    std::vector<std::pair<uint32_t, int>> todo;
    {
        Cursor cur(r(), dbi_[kModule]);
        MDB_val k, v;
        for (bool more = cur.get(&k, &v, MDB_FIRST); more; more = cur.get(&k, &v, MDB_NEXT)) {
            ModuleH m = header<ModuleH>(v);
            auto root = cx.find(m.design_root);
            if (root == cx.end() || root->second.h.super != 0 || root->second.h.module != static_cast<uint32_t>(m.id))
                fail("module " + std::to_string(m.id) + ": designRoot is not a root of its own");
            else todo.push_back({m.design_root, 1});
            MDB_val mv;
            if (!m.manual || !get(kManual, m.manual, &mv)) {
                fail("module " + std::to_string(m.id) + " without its manual");
            } else {
                ManualH h = header<ManualH>(mv);
                if (h.module != static_cast<uint32_t>(m.id) || mv.mv_size != sizeof h + static_cast<size_t>(h.text_len))
                    fail("manual of module " + std::to_string(m.id) + ": module or textLen wrong");
            }
        }
    }
    if (entries(kManual) != entries(kModule)) fail("manuals and modules differ in number");
    size_t bases_reached = 0;
    while (!todo.empty()) {
        auto [node, lvl] = todo.back();
        todo.pop_back();
        if (!depth.emplace(node, lvl).second || lvl > 64) {
            fail("complex assembly " + std::to_string(node) + " reached twice");
            continue;
        }
        const Rec<ComplexH> &x = cx.at(node);
        if (per_assm >= 0 && x.l[0].size() != static_cast<size_t>(per_assm))
            fail("complex assembly " + std::to_string(node) + " without NumAssmPerAssm subassemblies");
        for (uint32_t k : x.l[0]) {
            if (x.h.kids_base) {
                auto b = bs.find(k);
                if (b == bs.end() || b->second.h.super != node || b->second.h.module != x.h.module) {
                    fail("base assembly " + std::to_string(k) + " not under complex assembly " + std::to_string(node));
                    continue;
                }
                bases_reached++;
                if (levels >= 0 && lvl + 1 != levels) fail("base assembly " + std::to_string(k) + " not at level NumAssmLevels");
            } else {
                auto c = cx.find(k);
                if (c == cx.end() || c->second.h.super != node || c->second.h.module != x.h.module)
                    fail("complex assembly " + std::to_string(k) + " not under complex assembly " + std::to_string(node));
                else todo.push_back({k, lvl + 1});
            }
        }
    }
    if (depth.size() != cx.size()) fail("complex assemblies not reached from a design root");
    if (bases_reached != bs.size()) fail("base assemblies not reached from a design root");
    for (auto &[id, b] : bs) {
        if (comp_per_assm >= 0 && b.l[1].size() != static_cast<size_t>(comp_per_assm))
            fail("base assembly " + std::to_string(id) + " without NumCompPerAssm shared parts");
        for (uint32_t c : b.l[0]) {
            if (!cs.count(c)) fail("base assembly " + std::to_string(id) + ": private part " + std::to_string(c) + " missing");
            priv[{id, c}]++;
        }
        for (uint32_t c : b.l[1]) {
            if (!cs.count(c)) fail("base assembly " + std::to_string(id) + ": shared part " + std::to_string(c) + " missing");
            shar[{id, c}]++;
        }
    }
    for (auto &[e, d] : priv)
        if (d != 0) fail("private bag of base " + std::to_string(e.first) + " and usedInPriv of part " +
                         std::to_string(e.second) + " disagree");
    for (auto &[e, d] : shar)
        if (d != 0) fail("shared bag of base " + std::to_string(e.first) + " and usedInShar of part " +
                         std::to_string(e.second) + " disagree");
    if (shown > 8) bad += "... " + std::to_string(shown - 8) + " more\n";
    return bad;
}

// LMDB and LMDB-SYNC run with every system; LMDB-SYNC100 only in the durable comparison
// (its grouping means something only when the update operations run 100 times in a row).
const Register kNoSync(System{"LMDB", "persistent", 93,
                              [](const std::string &dir) -> std::unique_ptr<Db> {
                                  return std::make_unique<LmdbDb>(dir, 0);
                              },
                              {"oo7.lmdb"}, false});
const Register kSync(System{"LMDB-SYNC", "persistent", 94,
                            [](const std::string &dir) -> std::unique_ptr<Db> {
                                return std::make_unique<LmdbDb>(dir, 1);
                            },
                            {"oo7.lmdb"}, false});
const Register kSync100(System{"LMDB-SYNC100", "persistent", 96,
                               [](const std::string &dir) -> std::unique_ptr<Db> {
                                   return std::make_unique<LmdbDb>(dir, 100);
                               },
                               {"oo7.lmdb"}, true});
}  // namespace
}  // namespace oo7
