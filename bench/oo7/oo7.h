// oo7.h -- what every OO7 implementation in the benchmark shares: the parameters of the
// three database sizes, the driver's seeded random stream, the DoNothing sinks, the
// visited set of the traversals, the interface every implementation provides (the
// database build calls and one method per operation), the database generator and the
// operations whose random draws live in the driver (Q1, Q4, T7, SM1, SM2).
//
// The workload is ../../../shared/specs/oo7.md (OO7, Carey/DeWitt/Naughton 1993). Every
// implementation -- the generated data managers (oo7_p2.cc, one object per variant), the
// hand-written pointer version (oo7_hand.cc) and the SQLite mapping (oo7_sqlite.cc) --
// is built by the same generator from the same seed, so every count must agree.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../splitmix64.h"

namespace oo7 {

// ---------------------------------------------------------------------------------------
// parameters (spec section 2)
struct Params {
    int atomic_per_comp = 20;     // NumAtomicPerComp
    int conn_per_atomic = 3;      // NumConnPerAtomic
    int document_size = 2000;     // DocumentSize (bytes, with the NUL)
    int manual_size = 100000;     // ManualSize (bytes, with the NUL)
    int comp_per_module = 500;    // NumCompPerModule
    int assm_per_assm = 3;        // NumAssmPerAssm
    int assm_levels = 7;          // NumAssmLevels
    int comp_per_assm = 3;        // NumCompPerAssm
    int modules = 1;              // NumModules

    static Params small(int fanout);
    static Params medium(int fanout);
    static Params large(int fanout);
    // "small", "medium", "large" (fanout 3/6/9), or "tiny" (a reduced size for tests:
    // 2 levels fewer, 50 composite parts, 10 atomic parts each, 1,000-byte manual)
    static bool by_name(const std::string &size, int fanout, Params &out);

    int total_comp() const { return comp_per_module * modules; }
    int total_atomic() const { return total_comp() * atomic_per_comp; }
    int complex_per_module() const;   // (f^(H-1) - 1) / (f - 1)
    int base_per_module() const;      // f^(H-1)
    int total_complex() const { return complex_per_module() * modules; }
    int total_base() const { return base_per_module() * modules; }
};

// fixed constants (spec section 2)
constexpr int kMinAtomicDate = 1000, kMaxAtomicDate = 1999;
constexpr int kMinAssmDate = 1000, kMaxAssmDate = 1999;
constexpr int kMinOldCompDate = 0, kMaxOldCompDate = 999;
constexpr int kMinYoungCompDate = 2000, kMaxYoungCompDate = 2999;
constexpr int kYoungCompFrac = 10;
constexpr int kMinModuleDate = 1000, kMaxModuleDate = 1999;
constexpr int kTypeSize = 10, kTitleSize = 40, kNumTypes = 10;
constexpr int kXYRange = 100000;
constexpr int kUpdateRepeatCnt = 4;
constexpr int kQuery1RepeatCnt = 10, kQuery4RepeatCnt = 100;
constexpr int kQuery2Percent = 1, kQuery3Percent = 10;
constexpr int kNumNewCompParts = 5, kNumSM1Bases = 10;

// ---------------------------------------------------------------------------------------
// the driver's random stream: splitmix64 (bench/splitmix64.h), seeded; every draw is
// uniform and inclusive
class Rng : private benchmain::SplitMix64 {
public:
    explicit Rng(uint64_t seed = 1) : SplitMix64(seed) {}
    void seed(uint64_t seed) { s = seed; }
    using SplitMix64::next;
    int32_t uniform(int32_t lo, int32_t hi);   // lo..hi inclusive
    void type_string(char out[kTypeSize]);     // "type000".."type009", NUL-padded
};

// ---------------------------------------------------------------------------------------
// DoNothing (spec section 3): opaque to the compiler (defined out of line, noinline,
// writes a volatile sink), so no implementation can optimise a visit away.
void do_nothing_part(int32_t x, int32_t y, const char *type);
void do_nothing_assm(int32_t id, const char *type, int32_t date);
void join_do_nothing(int32_t a, int32_t b);

// The visited set of a T1-style DFS: open addressing over 64-bit keys (pointers, slot
// numbers, rowids), cleared in O(1) by a generation stamp. Every implementation uses this
// one, so traversal times compare the data managers, not their set libraries.
class VisitedSet {
public:
    VisitedSet();
    void clear();
    bool insert(uint64_t key);   // true if newly inserted
private:
    void grow();
    std::vector<uint64_t> keys_;
    std::vector<uint32_t> stamp_;
    uint32_t gen_ = 1;
    size_t n_ = 0;
};

// ---------------------------------------------------------------------------------------
// object counts (spec section 5)
struct Counts {
    uint64_t modules = 0, manuals = 0, complex_assemblies = 0, base_assemblies = 0,
             composite_parts = 0, documents = 0, atomic_parts = 0, connections = 0,
             private_links = 0, shared_links = 0;
    bool operator==(const Counts &o) const;
    std::string str() const;
};

// An opaque handle an implementation hands out while building (a pointer, a reference,
// a rowid); the generator only passes it back.
using Handle = uint64_t;
constexpr Handle kNone = UINT64_MAX;

// ---------------------------------------------------------------------------------------
// One implementation of the OO7 schema. Build calls come in the generator's order
// (build_database below); operations return the counts of spec section 3. Strings passed
// in are NUL-terminated; `text` arguments have `len` characters plus a NUL.
class Db {
public:
    virtual ~Db() = default;
    virtual std::string name() const = 0;

    // -- build --------------------------------------------------------------------------
    virtual void begin_build(const Params &p) { (void)p; }   // size hints, a transaction
    virtual Handle add_module(int32_t id, const char *type, int32_t date) = 0;
    virtual void add_manual(Handle module, int32_t id, const char *title, const char *text,
                            int32_t len) = 0;
    // `super` is kNone for the module's root (which becomes module.designRoot)
    virtual Handle add_complex(Handle module, Handle super, int32_t id, const char *type,
                               int32_t date) = 0;
    virtual Handle add_base(Handle module, Handle super, int32_t id, const char *type,
                            int32_t date) = 0;
    virtual Handle add_composite(int32_t id, const char *type, int32_t date) = 0;
    virtual void add_document(Handle comp, int32_t id, const char *title, const char *text,
                              int32_t len) = 0;
    // the first atomic part added to a composite part is its rootPart
    virtual Handle add_atomic(Handle comp, int32_t id, const char *type, int32_t date,
                              int32_t x, int32_t y, int32_t doc_id) = 0;
    virtual void add_connection(Handle from, Handle to, const char *type, int32_t length) = 0;
    virtual void link_private(Handle base, Handle comp) = 0;   // both directions, a bag
    virtual void link_shared(Handle base, Handle comp) = 0;
    virtual Handle base_by_id(int32_t id) = 0;                // kNone if absent (SM1)
    virtual void end_build() {}                                // commit, sync

    // -- transactions: the driver brackets every timed run ------------------------------
    virtual void begin() {}
    virtual void commit() {}

    // -- operations (spec section 3) -----------------------------------------------------
    virtual uint64_t t1(uint64_t *connections_examined) = 0;
    virtual uint64_t t2(char mode) = 0;          // 'a', 'b', 'c': swap x and y
    virtual uint64_t t3(char mode) = 0;          // 'a', 'b', 'c': toggle indexed buildDate
    virtual uint64_t t4() = 0;                   // 'I's in documents, per visit
    virtual uint64_t t5(bool undo) = 0;          // "I am" <-> "This is" in document texts
    virtual uint64_t t6() = 0;
    virtual uint64_t t7_from_atomic(int32_t atomic_id) = 0;
    virtual uint64_t t8() = 0;
    virtual uint64_t t9() = 0;
    virtual bool q1_lookup(int32_t atomic_id) = 0;                 // DoNothing if found
    virtual uint64_t date_range(int32_t lo, int32_t hi) = 0;       // Q2, Q3: through the index
    virtual uint64_t q4_title(const char *title) = 0;              // |doc.part.usedInPriv|
    virtual uint64_t q5(uint64_t *pairs) = 0;                      // distinct bases (pairs)
    virtual uint64_t q6() = 0;
    virtual uint64_t q7() = 0;
    virtual uint64_t q8() = 0;
    // SM2: delete composite part `id` with its document, atomic parts and connections,
    // and unlink it from every base assembly bag; false if there is no such part
    virtual bool delete_composite(int32_t id) = 0;

    // -- checks ----------------------------------------------------------------------------
    virtual Counts counts() = 0;
    // a deep walk of spec section 5's structure checks: inverses agree with multiplicity,
    // indexes hold every object; "" if all holds, else what is wrong
    virtual std::string verify() = 0;
    // database size: bytes of the file(s) for persistent systems, else heap bytes in use
    virtual uint64_t size_bytes() = 0;

    // -- a server's counters (--server: a variant over pageserver or objserver) ----------
    // the names and values of <prefix>_server_stats since the open or the last reset;
    // false for a system whose memory is not a server
    virtual bool server_stats(std::vector<std::pair<std::string, uint64_t>> *out) { (void)out; return false; }
    virtual void server_stats_reset() {}
};

// ---------------------------------------------------------------------------------------
// the generator (spec section 2): the whole database, from `seed`
void build_database(Db &db, const Params &p, uint64_t seed);
// one composite part with its document, atomic parts and connections (steps 4-7); used by
// build_database and SM1
Handle build_composite(Db &db, const Params &p, int32_t comp_id, int32_t first_atomic_id,
                       Rng &rng);

// document and manual texts and titles (ref patterns)
std::string document_title(int32_t comp_id);
std::string document_text(int32_t comp_id, int document_size);
std::string manual_title(int32_t module_id);
std::string manual_text(int32_t module_id, int manual_size);

// operations whose draws are the driver's: each takes the stream, reseeded per run
uint64_t q1(Db &db, const Params &p, Rng &rng);
uint64_t q2(Db &db);
uint64_t q3(Db &db);
uint64_t q4(Db &db, const Params &p, Rng &rng);
uint64_t t7(Db &db, const Params &p, Rng &rng);
// SM1: kNumNewCompParts new composite parts (ids right after the build's TotalCompParts,
// atomic ids after TotalAtomicParts: SM1 twice without SM2 in between would repeat ids),
// each linked privately from two of kNumSM1Bases drawn base assemblies; returns the parts
// made. `round` k > 0 numbers them after k rounds of such parts (so that the durable
// comparison can run SM1 many times in a row, then SM2 as often).
uint64_t sm1(Db &db, const Params &p, Rng &rng, int round = 0);
// SM2: delete what SM1 of the same round made; returns the parts deleted
uint64_t sm2(Db &db, const Params &p, int round = 0);

// raw object bytes (for "database size vs raw"): per object its declared attributes
// (int32 = 4, char[N] = N), 8 bytes per reference and per member of a set or bag, plus
// text bytes -- what the objects hold, before any index or allocator overhead
uint64_t raw_object_bytes(const Params &p);

// a file's size in bytes (0 if it is not there): what the reference systems' files take
uint64_t file_size(const std::string &path);

// ---------------------------------------------------------------------------------------
// the registry of implementations linked into a binary. Each implementation's source
// registers itself with a static `Register` (oo7_hand.cc: HAND; oo7_sqlite.cc: SQLITE,
// persistent and transient, SQLITE-WAL, SQLITE-WAL100; oo7_lmdb.cc: LMDB, LMDB-SYNC,
// LMDB-SYNC100; oo7_p2.cc: one per generated variant, compiled once per
// variant with -DP2_VARIANT=...). Names may contain '/' (HASH/ILIST); a name and a mem
// together identify a system.
struct System {
    std::string name;          // what tables and plots call it: "HAND", "SQLITE", "HASH/ILIST"
    std::string mem;           // "transient" or "persistent"
    int rank = 100;            // display order
    // Open the database kept in directory `dir`: empty on the first call (the driver then
    // builds into it), the one built before on later calls of persistent systems, which
    // is how cold runs reopen it. A transient system ignores `dir`. Throws
    // std::runtime_error with the reason on failure; the Db's destructor closes it.
    std::function<std::unique_ptr<Db>(const std::string &dir)> open;
    // persistent systems: the files the database occupies inside dir, so that cold runs
    // can drop them from the page cache (posix_fadvise DONTNEED after closing)
    std::vector<std::string> files;
    // measured only in the durable comparison (--oo7_durable=1): a system that groups
    // commits (LMDB-SYNC100, SQLITE-WAL100, a journal with group = 100), whose grouping
    // means something only when the update operations run 100 times in a row
    bool durable_only = false;
};
std::vector<System> &systems();
struct Register {
    explicit Register(System s) { systems().push_back(std::move(s)); }
};

}  // namespace oo7
