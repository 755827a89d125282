// oo7_p2.cc -- OO7 on one p2gen-generated data manager, through its public API alone
// (<prefix>.h). Compiled once per variant of type_equations/oo7/:
//
//   c++ -DP2_VARIANT=oo7_hash_ilist_persistent -DP2_HEADER='"oo7_hash_ilist_persistent.h"'
//       -DP2_NAME='"HASH/ILIST"' -DP2_MEM='"persistent"' -DP2_PERSISTENT=1 [-DP2_JOURNAL=1]
//       [-DP2_LOOKUP_ATOM_ID=1] [-DP2_FILES='"oo7.db","oo7.db-journal"']
//       -DOO7_HASH_ILIST_PERSISTENT_INLINE -c oo7_p2.cc
//
// (-D<PREFIX>_INLINE: the API compiled into this file, as the README tells users to.)
//
// Each object registers one oo7::System. The spec must declare the records, containers,
// cursors and relationships of type_equations/oo7/*.p2 (the variants differ only in their
// equations: memory, indexes, how relationships are stored).
#include <malloc.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "oo7.h"

#ifndef P2_RANK
#define P2_RANK 50
#endif
#ifndef P2_DURABLE_ONLY   // 1: registered for the durable comparison only (oo7.h)
#define P2_DURABLE_ONLY 0
#endif
// -DP2_OPEN_ENV='"NAME"' -DP2_OPEN_ENV_VALUE='"V"': every open of this variant runs with
// the environment variable NAME set to V (the relocation rows of `p2gen bench oo7
// --pointers`: a mapped file's forced relocation, P2_MAPPED_RELOCATE=P), which is unset
// again after the open, so that other variants in the process do not see it
#ifndef P2_SERVER
#define P2_SERVER 0
#endif
#ifndef P2_JOURNAL
#define P2_JOURNAL 0
#endif
// 1: the spec keys atomic_parts by id, so Q1 and T7 find a part with one lookup_id call
// (the element or NULL, and its reference) as a user would, not through a cursor
#ifndef P2_LOOKUP_ATOM_ID
#define P2_LOOKUP_ATOM_ID 0
#endif
// The files a persistent variant's database occupies, relative to its directory: the
// spec's files (and their journals), as bench/oo7/run.py reads them from the spec, so that
// cold runs drop exactly them from the page cache and sizes count all of them
#ifndef P2_FILES
#define P2_FILES "oo7.db"
#endif

#include "../p2_variant.h"

namespace {   // internal linkage: every variant's object defines its own classes

using Ref = uint64_t;
constexpr Ref kNoRef = UINT64_MAX;
// A ref field's "no element" in the width the spec stores it (32 bits over 32-bit links:
// <PREFIX>_NOREF32): all ones either way.
template <class T> constexpr T no_ref(const T &) { return std::numeric_limits<T>::max(); }
template <class T> constexpr bool is_no_ref(T v) { return v == std::numeric_limits<T>::max(); }
constexpr Ref kComplexTag = Ref(1) << 63;   // T7: complex and base references in one set
const std::vector<std::string> kFiles{P2_FILES};   // the persistent variants' files

// Walk a many-role: P2ROLE(atomic_parts_to) names <prefix>_atomic_parts_to_{open,next}.
#define FOR_EACH(role, owner, var)                                                        \
    for (P2(role##_iter) it_##var##_ = open_iter<P2(role##_iter), P2(role##_open)>(db_, owner); \
         P2(role##_next)(&it_##var##_, &var) == P2_OK;)

// The open function is a template argument, not a pointer: a direct call, which the
// compiler inlines as it would the user's own `<role>_open(db, &it, owner)`.
template <class It, int (*Open)(P2(db) *, It *, Ref)>
inline It open_iter(P2(db) *db, Ref owner) {
    It it;
    if (Open(db, &it, owner) != P2_OK) std::memset(&it, 0, sizeof it);   // next -> ECLOSED
    return it;
}

class P2Db final : public oo7::Db {
public:
    explicit P2Db(const std::string &dir) : dir_(dir) {
        heap0_ = heap_in_use();
#ifdef P2_OPEN_ENV
        struct OpenEnv {   // set for the open, unset after it (also when it throws)
            OpenEnv() { setenv(P2_OPEN_ENV, P2_OPEN_ENV_VALUE, 1); }
            ~OpenEnv() { unsetenv(P2_OPEN_ENV); }
        } env;
#endif
        p2_open_or_throw(&db_, dir.empty() ? nullptr : dir.c_str());
    }
    ~P2Db() override { P2(close)(db_); }

    std::string name() const override { return P2_NAME; }

    // -- build --------------------------------------------------------------------------
    void begin_build(const oo7::Params &p) override {
        // room for the whole database (and SM1's additions): no regrowth while loading
        uint64_t comps = p.total_comp() + oo7::kNumNewCompParts;
        uint64_t atoms = comps * p.atomic_per_comp;
        ok(P2(modules_reserve)(db_, p.modules), "reserve");
        ok(P2(manuals_reserve)(db_, p.modules), "reserve");
        ok(P2(complex_assemblies_reserve)(db_, p.total_complex()), "reserve");
        ok(P2(base_assemblies_reserve)(db_, p.total_base()), "reserve");
        ok(P2(composite_parts_reserve)(db_, comps), "reserve");
        ok(P2(documents_reserve)(db_, comps), "reserve");
        ok(P2(atomic_parts_reserve)(db_, atoms), "reserve");
        ok(P2(connections_reserve)(db_, atoms * p.conn_per_atomic), "reserve");
    }

    oo7::Handle add_module(int32_t id, const char *type, int32_t date) override {
        P2(module) m = design<P2(module)>(id, type, date);
        m.design_root = no_ref(m.design_root);
        return insert(P2(modules_insert), m, "insert module");
    }

    void add_manual(oo7::Handle module, int32_t id, const char *title, const char *text,
                    int32_t len) override {
        P2(manual) m{};
        m.id = id;
        copy_fixed(m.title, title);
        m.text_len = len;
        const Ref r = insert(P2(manuals_insert), m, "insert manual");
        ok(P2(manuals_set_text)(db_, r, text, (uint64_t)len), "manual text");
        ok(P2(modules_set_man)(db_, module, r), "module.man");
    }

    oo7::Handle add_complex(oo7::Handle module, oo7::Handle super, int32_t id, const char *type,
                            int32_t date) override {
        P2(complex_assembly) a = design<P2(complex_assembly)>(id, type, date);
        const Ref r = insert(P2(complex_assemblies_insert), a, "insert complex assembly");
        ok(P2(complex_assemblies_set_module)(db_, r, module), "complex.module");
        if (super == oo7::kNone)
            ok(P2(modules_set_design_root)(db_, module, r), "module.designRoot");
        else
            ok(P2(complex_assemblies_set_super)(db_, r, super), "complex.super");
        return r;
    }

    oo7::Handle add_base(oo7::Handle module, oo7::Handle super, int32_t id, const char *type,
                         int32_t date) override {
        P2(base_assembly) a = design<P2(base_assembly)>(id, type, date);
        const Ref r = insert(P2(base_assemblies_insert), a, "insert base assembly");
        ok(P2(base_assemblies_set_module)(db_, r, module), "base.module");
        ok(P2(base_assemblies_set_super)(db_, r, super), "base.super");
        return r;
    }

    oo7::Handle add_composite(int32_t id, const char *type, int32_t date) override {
        P2(composite_part) c = design<P2(composite_part)>(id, type, date);
        c.root_part = no_ref(c.root_part);
        const Ref r = insert(P2(composite_parts_insert), c, "insert composite part");
        dirty_ = true;
        return r;
    }

    void add_document(oo7::Handle comp, int32_t id, const char *title, const char *text,
                      int32_t len) override {
        P2(document) d{};
        d.id = id;
        copy_fixed(d.title, title);
        const Ref r = insert(P2(documents_insert), d, "insert document");
        ok(P2(documents_set_text)(db_, r, text, (uint64_t)len), "document text");
        ok(P2(composite_parts_set_documentation)(db_, comp, r), "composite.documentation");
    }

    oo7::Handle add_atomic(oo7::Handle comp, int32_t id, const char *type, int32_t date,
                           int32_t x, int32_t y, int32_t doc_id) override {
        P2(atomic_part) a = design<P2(atomic_part)>(id, type, date);
        a.x = x;
        a.y = y;
        a.doc_id = doc_id;
        const Ref r = insert(P2(atomic_parts_insert), a, "insert atomic part");
        ok(P2(atomic_parts_set_part_of)(db_, r, comp), "atomic.partOf");
        if (is_no_ref(P2(composite_parts_at)(db_, comp)->root_part))
            ok(P2(composite_parts_set_root_part)(db_, comp, r), "composite.rootPart");
        return r;
    }

    void add_connection(oo7::Handle from, oo7::Handle to, const char *type,
                        int32_t length) override {
        P2(connection) c{};
        copy_fixed(c.type, type);
        c.length = length;
        const Ref r = insert(P2(connections_insert), c, "insert connection");
        ok(P2(connections_set_from)(db_, r, from), "connection.from");
        ok(P2(connections_set_to)(db_, r, to), "connection.to");
    }

    void link_private(oo7::Handle base, oo7::Handle comp) override {
        ok(P2(base_assemblies_components_priv_add)(db_, base, comp), "componentsPriv");
    }

    void link_shared(oo7::Handle base, oo7::Handle comp) override {
        ok(P2(base_assemblies_components_shar_add)(db_, base, comp), "componentsShar");
    }

    oo7::Handle base_by_id(int32_t id) override {
        P2(base_by_id_cursor) k;
        ok(P2(base_by_id_open)(db_, &k, id), "base_by_id");
        return P2(base_by_id_next)(&k) == P2_OK ? P2(base_by_id_ref)(&k) : oo7::kNone;
    }

    void end_build() override { commit(); }

    // -- transactions ---------------------------------------------------------------------
    // A journalled variant (-DP2_JOURNAL=1: its file has a journal layer) commits: the
    // transaction is durable when this returns. Without a journal there is no durability
    // to buy (as with SQLite at synchronous=OFF, journal_mode=OFF, the reference here):
    // the mapping is written back by the OS, and close flushes it.
    void begin() override {
#if P2_JOURNAL
        ok(P2(begin)(db_), "begin");
#endif
    }
    void commit() override {
#if P2_JOURNAL
        ok(P2(commit)(db_), "commit");
#endif
        dirty_ = false;
    }

    // -- traversals -----------------------------------------------------------------------
    uint64_t t1(uint64_t *conns) override {
        uint64_t n = 0, c = 0;
        each_private_visit([&](Ref comp, const P2(composite_part) *) { n += dfs(comp, &c, Update::none, 0); });
        if (conns) *conns = c;
        return n;
    }

    uint64_t t2(char mode) override { return update_traversal(Update::swap_xy, mode); }
    uint64_t t3(char mode) override { return update_traversal(Update::toggle_date, mode); }

    uint64_t t4() override {
        uint64_t n = 0;
        each_private_visit([&](Ref comp, const P2(composite_part) *) {
            const char *text = nullptr;
            uint64_t len = 0;
            ok(P2(documents_get_text)(db_, P2(composite_parts_documentation)(db_, comp), &text, &len),
               "document text");
            n += (uint64_t)std::count(text, text + len, 'I');
        });
        return n;
    }

    uint64_t t5(bool undo) override {
        static const std::string from_do = "I am", to_do = "This is";
        const std::string &from = undo ? to_do : from_do, &to = undo ? from_do : to_do;
        uint64_t n = 0;
        std::string buf;
        each_private_visit([&](Ref comp, const P2(composite_part) *) {
            Ref doc = P2(composite_parts_documentation)(db_, comp);
            const char *text = nullptr;
            uint64_t len = 0;
            ok(P2(documents_get_text)(db_, doc, &text, &len), "document text");
            if (len < from.size() || std::memcmp(text, from.data(), from.size()) != 0) return;
            buf.assign(to).append(text + from.size(), len - from.size());
            ok(P2(documents_set_text)(db_, doc, buf.data(), buf.size()), "set document text");
            n++;
        });
        if (n) dirty_ = true;
        return n;
    }

    uint64_t t6() override {
        uint64_t n = 0;
        each_private_visit([&](Ref, const P2(composite_part) *comp) {
            const P2(atomic_part) *a = P2(atomic_parts_at)(db_, comp->root_part);
            oo7::do_nothing_part(a->x, a->y, a->type);
            n++;
        });
        return n;
    }

    uint64_t t7_from_atomic(int32_t atomic_id) override {
        Ref part = kNoRef;
        if (!atom_by_id(atomic_id, &part)) return 0;
        Ref comp = P2(atomic_parts_part_of)(db_, part);
        // the visited set HAND uses (oo7.h), kept across runs; a complex assembly's
        // reference tagged with the top bit (references count slots of their own container)
        visited_.clear();
        uint64_t found = 0;
        Ref base;
        FOR_EACH(composite_parts_used_in_priv, comp, base) {
            if (!visited_.insert(base)) continue;
            const P2(base_assembly) *b = P2(base_assemblies_at)(db_, base);
            oo7::do_nothing_assm(b->id, b->type, b->build_date);
            found++;
            for (Ref a = P2(base_assemblies_super)(db_, base); a != kNoRef;
                 a = P2(complex_assemblies_super)(db_, a)) {
                if (!visited_.insert(a | kComplexTag)) break;   // the rest of the path is counted
                const P2(complex_assembly) *x = P2(complex_assemblies_at)(db_, a);
                oo7::do_nothing_assm(x->id, x->type, x->build_date);
                found++;
            }
        }
        return found;
    }

    uint64_t t8() override {
        const char *text = nullptr;
        uint64_t len = 0;
        manual_text(&text, &len);
        return (uint64_t)std::count(text, text + len, 'I');
    }

    uint64_t t9() override {
        const char *text = nullptr;
        uint64_t len = 0;
        manual_text(&text, &len);
        return len > 0 && text[0] == text[len - 1] ? 1 : 0;
    }

    // -- queries --------------------------------------------------------------------------
    bool q1_lookup(int32_t atomic_id) override {
        const P2(atomic_part) *a = atom_by_id(atomic_id, nullptr);
        if (!a) return false;
        oo7::do_nothing_part(a->x, a->y, a->type);
        return true;
    }

    uint64_t date_range(int32_t lo, int32_t hi) override {
        P2(atoms_by_date_cursor) k;
        ok(P2(atoms_by_date_open)(db_, &k, lo, hi), "atoms_by_date");
        uint64_t n = 0;
        // each element with its record in one step (_next_rec: no _get per element)
        for (const P2(atomic_part) *a; (a = P2(atoms_by_date_next_rec)(&k));) {
            oo7::do_nothing_part(a->x, a->y, a->type);
            n++;
        }
        return n;
    }

    uint64_t q4_title(const char *title) override {
        P2(doc_by_title_cursor) k;
        ok(P2(doc_by_title_open)(db_, &k, title), "doc_by_title");
        if (P2(doc_by_title_next)(&k) != P2_OK) return 0;
        Ref comp = P2(documents_part)(db_, P2(doc_by_title_ref)(&k));
        uint64_t n = 0;
        Ref base;
        FOR_EACH(composite_parts_used_in_priv, comp, base) {
            const P2(base_assembly) *b = P2(base_assemblies_at)(db_, base);
            oo7::do_nothing_assm(b->id, b->type, b->build_date);
            n++;
        }
        return n;
    }

    uint64_t q5(uint64_t *pairs) override {
        uint64_t bases = 0, npairs = 0;
        P2(base_assemblies_all_cursor) k;
        ok(P2(base_assemblies_all_open)(db_, &k), "base_assemblies_all");
        while (P2(base_assemblies_all_next)(&k) == P2_OK) {
            Ref base = P2(base_assemblies_all_ref)(&k);
            const P2(base_assembly) *b = P2(base_assemblies_all_get)(&k);
            bool found = false;
            Ref comp;
            FOR_EACH(base_assemblies_components_priv, base, comp) {
                if (P2(composite_parts_at)(db_, comp)->build_date > b->build_date) {
                    npairs++;
                    found = true;
                }
            }
            if (found) {
                oo7::do_nothing_assm(b->id, b->type, b->build_date);
                bases++;
            }
        }
        if (pairs) *pairs = npairs;
        return bases;
    }

    uint64_t q6() override {
        uint64_t n = 0;
        P2(modules_all_cursor) k;
        ok(P2(modules_all_open)(db_, &k), "modules_all");
        for (const P2(module) *m; (m = P2(modules_all_next_rec)(&k));)
            q6_complex(m->design_root, &n);
        return n;
    }

    uint64_t q7() override {
        uint64_t n = 0;
        P2(atomic_parts_all_cursor) k;
        ok(P2(atomic_parts_all_open)(db_, &k), "atomic_parts_all");
        for (const P2(atomic_part) *a; (a = P2(atomic_parts_all_next_rec)(&k));) {
            oo7::do_nothing_part(a->x, a->y, a->type);
            n++;
        }
        return n;
    }

    uint64_t q8() override {
        uint64_t n = 0;
        P2(atomic_parts_all_cursor) k;
        ok(P2(atomic_parts_all_open)(db_, &k), "atomic_parts_all");
        for (const P2(atomic_part) *a; (a = P2(atomic_parts_all_next_rec)(&k));) {
            P2(doc_by_id_cursor) d;
            ok(P2(doc_by_id_open)(db_, &d, a->doc_id), "doc_by_id");
            if (P2(doc_by_id_next)(&d) == P2_OK) {
                oo7::join_do_nothing(a->id, P2(doc_by_id_get)(&d)->id);
                n++;
            }
        }
        return n;
    }

    // -- structural modification ----------------------------------------------------------
    bool delete_composite(int32_t id) override {
        P2(comp_by_id_cursor) k;
        ok(P2(comp_by_id_open)(db_, &k, id), "comp_by_id");
        if (P2(comp_by_id_next)(&k) != P2_OK) return false;
        Ref comp = P2(comp_by_id_ref)(&k);
        std::vector<Ref> atoms, conns;
        Ref a, c;
        FOR_EACH(composite_parts_parts, comp, a) atoms.push_back(a);
        for (Ref part : atoms) {
            FOR_EACH(atomic_parts_to, part, c) conns.push_back(c);   // every edge is someone's outgoing
        }
        // deleting an element takes it out of every relationship it is in
        for (Ref x : conns) ok(P2(connections_delete)(db_, x), "delete connection");
        for (Ref x : atoms) ok(P2(atomic_parts_delete)(db_, x), "delete atomic part");
        ok(P2(documents_delete)(db_, P2(composite_parts_documentation)(db_, comp)), "delete document");
        ok(P2(composite_parts_delete)(db_, comp), "delete composite part");
        dirty_ = true;
        return true;
    }

    // -- checks ---------------------------------------------------------------------------
    oo7::Counts counts() override {
        oo7::Counts n;
        n.modules = P2(modules_count)(db_);
        n.manuals = P2(manuals_count)(db_);
        n.complex_assemblies = P2(complex_assemblies_count)(db_);
        n.base_assemblies = P2(base_assemblies_count)(db_);
        n.composite_parts = P2(composite_parts_count)(db_);
        n.documents = P2(documents_count)(db_);
        n.atomic_parts = P2(atomic_parts_count)(db_);
        n.connections = P2(connections_count)(db_);
        P2(base_assemblies_all_cursor) k;
        ok(P2(base_assemblies_all_open)(db_, &k), "base_assemblies_all");
        while (P2(base_assemblies_all_next)(&k) == P2_OK) {
            Ref b = P2(base_assemblies_all_ref)(&k);
            n.private_links += P2(base_assemblies_components_priv_count)(db_, b);
            n.shared_links += P2(base_assemblies_components_shar_count)(db_, b);
        }
        return n;
    }

    std::string verify() override;

#if P2_SERVER
    // -DP2_SERVER=1: the spec's memory is a server (pageserver, objserver); the API gives
    // its counters (<prefix>_server_stats) since the open or the last reset
    bool server_stats(std::vector<std::pair<std::string, uint64_t>> *out) override {
        p2_server_stats x;
        if (P2(server_stats)(db_, &x) != P2_OK) return false;
        *out = {{"reads", x.reads}, {"writes", x.writes}, {"flushes", x.flushes},
                {"bytes_read", x.bytes_read}, {"bytes_written", x.bytes_written},
                {"misses", x.misses}, {"hits", x.hits}, {"evictions", x.evictions},
                {"writebacks", x.writebacks}, {"bundled", x.bundled}, {"frames", x.frames},
                {"resident", x.resident}};
        return true;
    }
    void server_stats_reset() override { (void)P2(server_stats_reset)(db_); }
#endif

    uint64_t size_bytes() override {
        if (P2_PERSISTENT) {
            // what the files occupy (du): a file grows by doubling with ftruncate, so the
            // not-yet-used tail is a hole, not bytes on disk
            uint64_t bytes = 0;
            for (const std::string &f : kFiles) {
                struct stat st;
                std::string path = (dir_.empty() ? std::string(".") : dir_) + "/" + f;
                if (stat(path.c_str(), &st) == 0) bytes += (uint64_t)st.st_blocks * 512u;
            }
            return bytes;
        }
        size_t now = heap_in_use();   // heap this database holds (since its open)
        return now > heap0_ ? now - heap0_ : 0;
    }

private:
    enum class Update { none, swap_xy, toggle_date };

    // heap bytes in use: malloc's arenas and the blocks it maps (large ones)
    static size_t heap_in_use() {
        struct mallinfo2 mi = mallinfo2();
        return mi.uordblks + mi.hblkhd;
    }

    void ok(int rc, const char *what) {
        if (rc != P2_OK)
            throw std::runtime_error(std::string(P2_NAME) + " " + what + ": " + P2(errmsg)(db_));
    }

    // rec inserted with the API's insert function fn: its reference
    template <class Insert, class Rec>
    Ref insert(Insert fn, Rec &rec, const char *what) {
        Ref r = kNoRef;
        ok(fn(db_, &rec, &r), what);
        return r;
    }

    // a design object's record (module, assembly, composite or atomic part) with its
    // common attributes set: id, type, build date; the rest zero
    template <class Rec>
    static Rec design(int32_t id, const char *type, int32_t date) {
        Rec r{};
        r.id = id;
        copy_fixed(r.type, type);
        r.build_date = date;
        return r;
    }

    // char[N] fields: NUL-padded, no terminator when full
    template <size_t N>
    static void copy_fixed(char (&dst)[N], const char *src) {
        size_t len = std::min(std::strlen(src), N);
        std::memset(dst, 0, N);
        std::memcpy(dst, src, len);
    }

    // the atomic part with this id (NULL: none) and, in *ref, its reference
    const P2(atomic_part) *atom_by_id(int32_t id, Ref *ref) {
#if P2_LOOKUP_ATOM_ID
        return P2(atomic_parts_lookup_id)(db_, id, ref);
#else
        P2(atom_by_id_cursor) k;
        ok(P2(atom_by_id_open)(db_, &k, id), "atom_by_id");
        if (P2(atom_by_id_next)(&k) != P2_OK) return nullptr;
        if (ref) *ref = P2(atom_by_id_ref)(&k);
        return P2(atom_by_id_get)(&k);
#endif
    }

    Ref module1() {
        P2(module_by_id_cursor) k;
        ok(P2(module_by_id_open)(db_, &k, 1), "module_by_id");
        if (P2(module_by_id_next)(&k) != P2_OK) throw std::runtime_error("no module 1");
        return P2(module_by_id_ref)(&k);
    }

    void manual_text(const char **text, uint64_t *len) {
        ok(P2(manuals_get_text)(db_, P2(modules_man)(db_, module1()), text, len), "manual text");
    }

    // The traversal skeleton: from module 1's design root through the assembly hierarchy
    // in stored order; at each base assembly, every private composite part (duplicates
    // included) is visited, each time from scratch.
    template <class Visit>
    void each_private_visit(Visit &&visit) {
        walk_complex(P2(modules_at)(db_, module1())->design_root, visit);
    }

    template <class Visit>
    void walk_complex(Ref cplx, Visit &visit) {
        Ref sub;
        FOR_EACH(complex_assemblies_sub_complex, cplx, sub) walk_complex(sub, visit);
        FOR_EACH(complex_assemblies_sub_base, cplx, sub) {
            // each member with its record in one step (_next_rec: no _at per visit)
            auto it = open_iter<P2(base_assemblies_components_priv_iter), P2(base_assemblies_components_priv_open)>(db_, sub);
            Ref comp;
            for (const P2(composite_part) *c; (c = P2(base_assemblies_components_priv_next_rec)(&it, &comp));)
                visit(comp, c);
        }
    }

    // DFS from the composite part's root part along outgoing connections: every part
    // reached once per visit (counted, DoNothing'd, and updated `reps` times if asked).
    uint64_t dfs(Ref comp, uint64_t *conns, Update upd, int reps, bool root_only = false) {
        visited_.clear();
        stack_.clear();
        Ref root = P2(composite_parts_at)(db_, comp)->root_part;
        stack_.push_back(root);
        visited_.insert(root);
        uint64_t n = 0, c = 0;
        while (!stack_.empty()) {
            Ref part = stack_.back();
            stack_.pop_back();
            const P2(atomic_part) *a = P2(atomic_parts_at)(db_, part);
            oo7::do_nothing_part(a->x, a->y, a->type);
            n++;
            if (upd != Update::none && (!root_only || part == root)) update_part(part, upd, reps);
            Ref conn;
            FOR_EACH(atomic_parts_to, part, conn) {
                c++;
                Ref next = P2(connections_to)(db_, conn);
                if (visited_.insert(next)) stack_.push_back(next);
            }
        }
        *conns += c;
        return n;
    }

    void update_part(Ref part, Update upd, int reps) {
        for (int i = 0; i < reps; i++) {
            const P2(atomic_part) *a = P2(atomic_parts_at)(db_, part);
            if (upd == Update::swap_xy) {
                int32_t x = a->x, y = a->y;
                ok(P2(atomic_parts_set_x)(db_, part, y), "set x");
                ok(P2(atomic_parts_set_y)(db_, part, x), "set y");
            } else {   // odd -> +1, even -> -1, through the build_date index
                int32_t d = a->build_date;
                ok(P2(atomic_parts_set_build_date)(db_, part, d % 2 ? d + 1 : d - 1), "set buildDate");
            }
        }
    }

    // T2/T3: the T1 traversal, updating the root part only (a: the first part reached, once
    // per visit), every part reached (b), or every part reached 4 times (c); the result is
    // the number of updates
    uint64_t update_traversal(Update upd, char mode) {
        uint64_t n = 0, c = 0;
        int reps = mode == 'c' ? oo7::kUpdateRepeatCnt : 1;
        each_private_visit([&](Ref comp, const P2(composite_part) *) {
            uint64_t parts = dfs(comp, &c, upd, reps, mode == 'a');
            n += mode == 'a' ? 1 : (uint64_t)reps * parts;
        });
        dirty_ = true;
        return n;
    }

    // Q6: the newest private composite part under an assembly; counts every assembly
    // whose newest part is newer than itself.
    int32_t q6_complex(Ref cplx, uint64_t *n) {
        int32_t newest = INT32_MIN;
        Ref sub;
        FOR_EACH(complex_assemblies_sub_complex, cplx, sub) newest = std::max(newest, q6_complex(sub, n));
        FOR_EACH(complex_assemblies_sub_base, cplx, sub) {
            int32_t b = INT32_MIN;
            Ref comp;
            FOR_EACH(base_assemblies_components_priv, sub, comp)
                b = std::max(b, P2(composite_parts_at)(db_, comp)->build_date);
            if (b > P2(base_assemblies_at)(db_, sub)->build_date) ++*n;
            newest = std::max(newest, b);
        }
        if (newest > P2(complex_assemblies_at)(db_, cplx)->build_date) ++*n;
        return newest;
    }

    P2(db) *db_ = nullptr;
    std::string dir_;
    size_t heap0_ = 0;
    bool dirty_ = false;
    oo7::VisitedSet visited_;
    std::vector<Ref> stack_;
};

// Every relationship read from both ends: each member names its owner back, bags hold
// each pair equally often from both sides, and the indexes find every element.
std::string P2Db::verify() {
    std::string bad;
    auto fail = [&](const std::string &what) { if (bad.empty()) bad = what; };
    std::map<std::pair<Ref, Ref>, long> priv, shar;
    uint64_t nparts = 0, nto = 0, nfrom = 0;
    {
        P2(base_assemblies_all_cursor) k;
        ok(P2(base_assemblies_all_open)(db_, &k), "base_assemblies_all");
        while (P2(base_assemblies_all_next)(&k) == P2_OK) {
            Ref b = P2(base_assemblies_all_ref)(&k), c;
            FOR_EACH(base_assemblies_components_priv, b, c) priv[{b, c}]++;
            FOR_EACH(base_assemblies_components_shar, b, c) shar[{b, c}]++;
            Ref sup = P2(base_assemblies_super)(db_, b);
            bool found = false;
            Ref x;
            FOR_EACH(complex_assemblies_sub_base, sup, x) found |= x == b;
            if (!found) fail("base assembly missing from its super's subassemblies");
        }
    }
    {
        P2(composite_parts_all_cursor) k;
        ok(P2(composite_parts_all_open)(db_, &k), "composite_parts_all");
        while (P2(composite_parts_all_next)(&k) == P2_OK) {
            Ref c = P2(composite_parts_all_ref)(&k), b, a;
            FOR_EACH(composite_parts_used_in_priv, c, b) priv[{b, c}]--;
            FOR_EACH(composite_parts_used_in_shar, c, b) shar[{b, c}]--;
            Ref doc = P2(composite_parts_documentation)(db_, c);
            if (doc == kNoRef || P2(documents_part)(db_, doc) != c) fail("documentation/part disagree");
            bool has_root = false;
            Ref root = P2(composite_parts_all_get)(&k)->root_part;
            FOR_EACH(composite_parts_parts, c, a) {
                nparts++;
                has_root |= a == root;
                if (P2(atomic_parts_part_of)(db_, a) != c) fail("parts/partOf disagree");
            }
            if (!has_root) fail("rootPart is not one of the parts");
        }
    }
    for (auto &m : {priv, shar})
        for (auto &e : m)
            if (e.second != 0) fail("componentsPriv/Shar and usedInPriv/Shar multiplicities differ");
    {
        P2(atomic_parts_all_cursor) k;
        ok(P2(atomic_parts_all_open)(db_, &k), "atomic_parts_all");
        while (P2(atomic_parts_all_next)(&k) == P2_OK) {
            Ref a = P2(atomic_parts_all_ref)(&k), c;
            FOR_EACH(atomic_parts_to, a, c) {
                nto++;
                if (P2(connections_from)(db_, c) != a) fail("to/from disagree");
            }
            FOR_EACH(atomic_parts_from, a, c) {
                nfrom++;
                if (P2(connections_to)(db_, c) != a) fail("from/to disagree");
            }
            Ref found = kNoRef;
            if (!atom_by_id(P2(atomic_parts_all_get)(&k)->id, &found) || found != a)
                fail("id index misses an atomic part");
        }
    }
    uint64_t natoms = P2(atomic_parts_count)(db_), nconns = P2(connections_count)(db_);
    if (nparts != natoms) fail("parts of composite parts != atomic parts");
    if (nto != nconns || nfrom != nconns) fail("connections reachable from parts != connections");
    if (date_range(INT32_MIN, INT32_MAX) != natoms) fail("buildDate index size != atomic parts");
    {
        P2(documents_all_cursor) k;
        ok(P2(documents_all_open)(db_, &k), "documents_all");
        while (P2(documents_all_next)(&k) == P2_OK) {
            const P2(document) *d = P2(documents_all_get)(&k);
            char title[oo7::kTitleSize + 1] = {0};
            std::memcpy(title, d->title, oo7::kTitleSize);
            P2(doc_by_title_cursor) t;
            ok(P2(doc_by_title_open)(db_, &t, title), "doc_by_title");
            if (P2(doc_by_title_next)(&t) != P2_OK || P2(doc_by_title_ref)(&t) != P2(documents_all_ref)(&k))
                fail("title index misses a document");
        }
    }
    {
        P2(modules_all_cursor) k;
        ok(P2(modules_all_open)(db_, &k), "modules_all");
        while (P2(modules_all_next)(&k) == P2_OK) {
            Ref m = P2(modules_all_ref)(&k), man = P2(modules_man)(db_, m);
            if (man == kNoRef || P2(manuals_mod)(db_, man) != m) fail("man/mod disagree");
            Ref a;
            FOR_EACH(modules_complex_assemblies, m, a)
                if (P2(complex_assemblies_module)(db_, a) != m) fail("module/assemblies disagree");
            FOR_EACH(modules_base_assemblies, m, a)
                if (P2(base_assemblies_module)(db_, a) != m) fail("module/assemblies disagree");
        }
    }
    return bad;
}

oo7::Register register_variant(oo7::System{
    P2_NAME, P2_MEM, P2_RANK,
    [](const std::string &dir) { return std::unique_ptr<oo7::Db>(new P2Db(dir)); },
    P2_PERSISTENT ? kFiles : std::vector<std::string>{}, P2_DURABLE_ONLY != 0});

}  // namespace
