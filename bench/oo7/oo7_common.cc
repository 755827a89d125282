// oo7_common.cc -- the parts of oo7.h that every OO7 implementation shares: the size
// parameters, the driver's random stream, the DoNothing sinks, the traversal visited set,
// the object counts, the registry, the database generator (spec section 2) and the
// operations whose random draws belong to the driver (Q1-Q4, T7, SM1, SM2).
//
// Every implementation is fed by build_database from the same seed, so the order of the
// random draws below is part of the benchmark's definition: changing it changes every
// data-dependent count (Q2-Q6, T7) of every system at once, which is fine, but it must
// change for all of them together.
#include "oo7.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace oo7 {

// ---------------------------------------------------------------------------------------
// parameters

Params Params::small(int fanout) {
    Params p;
    p.conn_per_atomic = fanout;
    return p;
}

Params Params::medium(int fanout) {
    Params p;
    p.atomic_per_comp = 200;
    p.conn_per_atomic = fanout;
    p.document_size = 20000;
    p.manual_size = 1000000;
    return p;
}

Params Params::large(int fanout) {
    Params p = medium(fanout);
    p.modules = 10;
    return p;
}

bool Params::by_name(const std::string &size, int fanout, Params &out) {
    if (fanout < 1) return false;
    if (size == "small") {
        out = small(fanout);
    } else if (size == "medium") {
        out = medium(fanout);
    } else if (size == "large") {
        out = large(fanout);
    } else if (size == "tiny") {
        // small's shape with fewer of everything: 40 complex and 81 base assemblies,
        // 50 composite parts of 10 atomic parts, still a 2,000-byte document
        out = small(fanout);
        out.assm_levels = 5;
        out.comp_per_module = 50;
        out.atomic_per_comp = 10;
        out.document_size = 2000;
        out.manual_size = 1000;
        out.modules = 1;
    } else {
        return false;
    }
    return true;
}

static int int_pow(int base, int exp) {
    int r = 1;
    for (int i = 0; i < exp; i++) r *= base;
    return r;
}

// the tree has levels 1..H-1 complex and level H base
int Params::complex_per_module() const {
    int complex = 0;
    for (int level = 1; level < assm_levels; level++) complex += int_pow(assm_per_assm, level - 1);
    return complex;
}

int Params::base_per_module() const { return int_pow(assm_per_assm, assm_levels - 1); }

// ---------------------------------------------------------------------------------------
// random stream

int32_t Rng::uniform(int32_t lo, int32_t hi) {
    // Multiply-shift (Lemire 2019) without the rejection step: the high 64 bits of
    // next() * range. The bias is below range / 2^64 (< 2^-32 for any int32 range), far
    // under anything a count could show, and every draw costs exactly one next(), which
    // keeps the stream's consumption independent of the values drawn.
    uint64_t range = static_cast<uint64_t>(static_cast<int64_t>(hi) - lo) + 1;
    unsigned __int128 wide = static_cast<unsigned __int128>(next()) * range;
    return static_cast<int32_t>(lo + static_cast<int64_t>(wide >> 64));
}

void Rng::type_string(char out[kTypeSize]) {
    std::memset(out, 0, kTypeSize);
    int t = uniform(0, kNumTypes - 1);
    std::snprintf(out, kTypeSize, "type%03d", t);
}

// ---------------------------------------------------------------------------------------
// DoNothing sinks: a volatile store the compiler must perform, behind a call it may not
// inline, so a visit can be neither removed nor hoisted out of a loop

static volatile int64_t g_sink;

__attribute__((noinline)) void do_nothing_part(int32_t x, int32_t y, const char *type) {
    g_sink = static_cast<int64_t>(x) + y + type[0];
}

__attribute__((noinline)) void do_nothing_assm(int32_t id, const char *type, int32_t date) {
    g_sink = static_cast<int64_t>(id) + date + type[0];
}

__attribute__((noinline)) void join_do_nothing(int32_t a, int32_t b) {
    g_sink = static_cast<int64_t>(a) + b;
}

// ---------------------------------------------------------------------------------------
// visited set: a slot is occupied iff its stamp equals the current generation, so clear()
// is one increment however many slots the last traversal touched

static constexpr size_t kVisitedInitialSlots = 64;   // a power of two

static inline size_t visited_hash(uint64_t key) {
    // the finaliser of splitmix64/murmur3: pointers and dense ids both spread evenly
    key ^= key >> 33;
    key *= 0xFF51AFD7ED558CCDULL;
    key ^= key >> 33;
    return static_cast<size_t>(key);
}

VisitedSet::VisitedSet() : keys_(kVisitedInitialSlots), stamp_(kVisitedInitialSlots, 0) {}

void VisitedSet::clear() {
    n_ = 0;
    if (++gen_ == 0) {   // the stamp wrapped: old stamps could look current again
        std::fill(stamp_.begin(), stamp_.end(), 0);
        gen_ = 1;
    }
}

bool VisitedSet::insert(uint64_t key) {
    if (2 * (n_ + 1) > keys_.size()) grow();
    size_t mask = keys_.size() - 1;
    for (size_t i = visited_hash(key) & mask;; i = (i + 1) & mask) {
        if (stamp_[i] != gen_) {
            stamp_[i] = gen_;
            keys_[i] = key;
            n_++;
            return true;
        }
        if (keys_[i] == key) return false;
    }
}

void VisitedSet::grow() {
    std::vector<uint64_t> old_keys = std::move(keys_);
    std::vector<uint32_t> old_stamp = std::move(stamp_);
    uint32_t old_gen = gen_;
    keys_.assign(old_keys.size() * 2, 0);
    stamp_.assign(old_stamp.size() * 2, 0);
    gen_ = 1;
    n_ = 0;
    size_t mask = keys_.size() - 1;
    for (size_t j = 0; j < old_keys.size(); j++) {
        if (old_stamp[j] != old_gen) continue;
        size_t i = visited_hash(old_keys[j]) & mask;
        while (stamp_[i] == gen_) i = (i + 1) & mask;
        stamp_[i] = gen_;
        keys_[i] = old_keys[j];
        n_++;
    }
}

// ---------------------------------------------------------------------------------------
// counts

bool Counts::operator==(const Counts &o) const {
    return modules == o.modules && manuals == o.manuals &&
           complex_assemblies == o.complex_assemblies && base_assemblies == o.base_assemblies &&
           composite_parts == o.composite_parts && documents == o.documents &&
           atomic_parts == o.atomic_parts && connections == o.connections &&
           private_links == o.private_links && shared_links == o.shared_links;
}

std::string Counts::str() const {
    char buf[400];
    std::snprintf(buf, sizeof buf,
                  "modules=%llu manuals=%llu complex=%llu base=%llu composite=%llu "
                  "documents=%llu atomic=%llu connections=%llu private=%llu shared=%llu",
                  (unsigned long long)modules, (unsigned long long)manuals,
                  (unsigned long long)complex_assemblies, (unsigned long long)base_assemblies,
                  (unsigned long long)composite_parts, (unsigned long long)documents,
                  (unsigned long long)atomic_parts, (unsigned long long)connections,
                  (unsigned long long)private_links, (unsigned long long)shared_links);
    return buf;
}

// ---------------------------------------------------------------------------------------
// registry: a function-local static, so registrations from other translation units'
// static initialisers find it constructed whatever the link order

std::vector<System> &systems() {
    static std::vector<System> all;
    return all;
}

// ---------------------------------------------------------------------------------------
// texts (ref patterns)

static std::string repeat_to(const std::string &pattern, int chars) {
    std::string text;
    text.reserve(static_cast<size_t>(chars) + 1);
    while (static_cast<int>(text.size()) < chars) {
        size_t take = std::min(pattern.size(), static_cast<size_t>(chars) - text.size());
        text.append(pattern, 0, take);
    }
    return text;
}

// before, the object's id in (at least) 8 digits, after; at most max characters
static std::string numbered(const char *before, int32_t id, const char *after, size_t max) {
    char digits[16];
    std::snprintf(digits, sizeof digits, "%08d", id);
    return (before + std::string(digits) + after).substr(0, max);
}

std::string document_title(int32_t comp_id) {
    return numbered("Composite Part ", comp_id, "", kTitleSize - 1);
}

std::string document_text(int32_t comp_id, int document_size) {
    return repeat_to(numbered("I am the documentation for composite part #", comp_id, ".\n", 95),
                     document_size - 1);
}

std::string manual_title(int32_t module_id) { return numbered("Manual ", module_id, "", kTitleSize - 1); }

std::string manual_text(int32_t module_id, int manual_size) {
    return repeat_to(numbered("I am the manual for module #", module_id, ".\n", 63), manual_size - 1);
}

// ---------------------------------------------------------------------------------------
// generator

Handle build_composite(Db &db, const Params &p, int32_t comp_id, int32_t first_atomic_id,
                       Rng &rng) {
    char type[kTypeSize];
    rng.type_string(type);
    bool young = comp_id % kYoungCompFrac == 0;
    int32_t date = young ? rng.uniform(kMinYoungCompDate, kMaxYoungCompDate)
                         : rng.uniform(kMinOldCompDate, kMaxOldCompDate);
    Handle comp = db.add_composite(comp_id, type, date);

    std::string title = document_title(comp_id);
    std::string text = document_text(comp_id, p.document_size);
    db.add_document(comp, comp_id, title.c_str(), text.c_str(), static_cast<int32_t>(text.size()));

    int n = p.atomic_per_comp;
    std::vector<Handle> parts(n);
    for (int i = 0; i < n; i++) {
        rng.type_string(type);
        int32_t adate = rng.uniform(kMinAtomicDate, kMaxAtomicDate);
        int32_t x = rng.uniform(0, kXYRange - 1);
        int32_t y = rng.uniform(0, kXYRange - 1);
        int32_t doc_id = rng.uniform(1, p.total_comp());
        parts[i] = db.add_atomic(comp, first_atomic_id + i, type, adate, x, y, doc_id);
    }
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < p.conn_per_atomic; j++) {
            int to = j == 0 ? (i + 1) % n : rng.uniform(0, n - 1);
            rng.type_string(type);
            int32_t length = rng.uniform(0, kXYRange - 1);
            db.add_connection(parts[i], parts[to], type, length);
        }
    }
    return comp;
}

namespace {

// what a base assembly drew in step 3, linked once the composite parts exist
struct BaseDraws {
    Handle base;
    std::vector<int32_t> priv, shar;
};

struct TreeBuilder {
    Db &db;
    const Params &p;
    Rng &rng;
    Handle module;
    int32_t module_id;
    int32_t next_complex_id, next_base_id;   // run on across modules
    std::vector<BaseDraws> &draws;

    // pre-order: an assembly is created (and numbered) before its children
    void assembly(Handle super, int level) {
        char type[kTypeSize];
        rng.type_string(type);
        int32_t date = rng.uniform(kMinAssmDate, kMaxAssmDate);
        if (level < p.assm_levels) {
            Handle self = db.add_complex(module, super, next_complex_id++, type, date);
            for (int k = 0; k < p.assm_per_assm; k++) assembly(self, level + 1);
            return;
        }
        BaseDraws d;
        d.base = db.add_base(module, super, next_base_id++, type, date);
        int32_t lib_lo = (module_id - 1) * p.comp_per_module + 1;
        int32_t lib_hi = module_id * p.comp_per_module;
        for (int k = 0; k < p.comp_per_assm; k++) d.priv.push_back(rng.uniform(lib_lo, lib_hi));
        for (int k = 0; k < p.comp_per_assm; k++) d.shar.push_back(rng.uniform(1, p.total_comp()));
        draws.push_back(std::move(d));
    }
};

}  // namespace

void build_database(Db &db, const Params &p, uint64_t seed) {
    Rng rng(seed);
    db.begin_build(p);

    // steps 1-3: modules with their assembly trees, remembering each base assembly's draws
    std::vector<Handle> modules;
    std::vector<BaseDraws> draws;
    int32_t next_complex_id = 1, next_base_id = 1;
    for (int32_t m = 1; m <= p.modules; m++) {
        char type[kTypeSize];
        rng.type_string(type);
        int32_t date = rng.uniform(kMinModuleDate, kMaxModuleDate);
        Handle module = db.add_module(m, type, date);
        modules.push_back(module);
        TreeBuilder tb{db, p, rng, module, m, next_complex_id, next_base_id, draws};
        tb.assembly(kNone, 1);
        next_complex_id = tb.next_complex_id;
        next_base_id = tb.next_base_id;
    }

    // steps 4-7: composite parts 1..N, atomic ids dense in creation order
    std::vector<Handle> comps(static_cast<size_t>(p.total_comp()) + 1, kNone);
    for (int32_t c = 1; c <= p.total_comp(); c++)
        comps[c] = build_composite(db, p, c, (c - 1) * p.atomic_per_comp + 1, rng);

    // step 3's links, in the order drawn, duplicates kept
    for (const BaseDraws &d : draws) {
        for (int32_t c : d.priv) db.link_private(d.base, comps[c]);
        for (int32_t c : d.shar) db.link_shared(d.base, comps[c]);
    }

    // step 8: manuals
    for (int32_t m = 1; m <= p.modules; m++) {
        std::string title = manual_title(m);
        std::string text = manual_text(m, p.manual_size);
        db.add_manual(modules[m - 1], m, title.c_str(), text.c_str(),
                      static_cast<int32_t>(text.size()));
    }
    db.end_build();   // step 9: the implementation fills its indexes as objects arrive
}

// ---------------------------------------------------------------------------------------
// operations with the driver's draws

uint64_t q1(Db &db, const Params &p, Rng &rng) {
    uint64_t found = 0;
    for (int i = 0; i < kQuery1RepeatCnt; i++)
        if (db.q1_lookup(rng.uniform(1, p.total_atomic()))) found++;
    return found;
}

// the range comes from the parameter bounds, not from the data (integer math, ref)
static uint64_t date_percent(Db &db, int percent) {
    int32_t lo = kMaxAtomicDate - (percent * (kMaxAtomicDate - kMinAtomicDate)) / 100;
    return db.date_range(lo, kMaxAtomicDate);
}

uint64_t q2(Db &db) { return date_percent(db, kQuery2Percent); }
uint64_t q3(Db &db) { return date_percent(db, kQuery3Percent); }

uint64_t q4(Db &db, const Params &p, Rng &rng) {
    uint64_t found = 0;
    for (int i = 0; i < kQuery4RepeatCnt; i++) {
        std::string title = document_title(rng.uniform(1, p.total_comp()));
        found += db.q4_title(title.c_str());
    }
    return found;
}

uint64_t t7(Db &db, const Params &p, Rng &rng) {
    return db.t7_from_atomic(rng.uniform(1, p.total_atomic()));
}

// SM1/SM2 number the new parts after the database as built (the Params totals), so SM2
// finds them without asking the implementation, and SM1 after SM2 reuses the same ids.
uint64_t sm1(Db &db, const Params &p, Rng &rng, int round) {
    std::vector<Handle> made;
    for (int i = 0; i < kNumNewCompParts; i++) {
        int32_t n = round * kNumNewCompParts + i;   // new parts before this one
        int32_t id = p.total_comp() + 1 + n;
        int32_t first_atomic = p.total_atomic() + n * p.atomic_per_comp + 1;
        made.push_back(build_composite(db, p, id, first_atomic, rng));
    }
    static_assert(kNumSM1Bases == 2 * kNumNewCompParts, "two base assemblies per new part");
    for (int k = 0; k < kNumSM1Bases; k++) {
        int32_t base_id = rng.uniform(1, p.total_base());
        Handle base = db.base_by_id(base_id);
        if (base == kNone)
            throw std::runtime_error("SM1: base assembly " + std::to_string(base_id) + " missing");
        db.link_private(base, made[k / 2]);
    }
    return made.size();
}

uint64_t sm2(Db &db, const Params &p, int round) {
    uint64_t deleted = 0;
    for (int i = 0; i < kNumNewCompParts; i++)
        if (db.delete_composite(p.total_comp() + 1 + round * kNumNewCompParts + i)) deleted++;
    return deleted;
}

// ---------------------------------------------------------------------------------------
// raw object bytes: declared attributes (int32 = 4, char[N] = N), 8 bytes per to-one
// reference and per set/bag member on each side of a relationship, plus text bytes
// (DocumentSize / ManualSize, NUL included). Per object:
//   DesignObj part      id + type[10] + buildDate                       = 18
//   AtomicPart          DesignObj + x, y, docId (12) + partOf (8)      = 38, plus 8 per
//                       member of `to` and of `from` (together 2 * fanout on average)
//   Connection          type[10] + length (4) + from, to (16)          = 30
//   CompositePart       DesignObj + documentation, rootPart (16)       = 34, plus 8 per
//                       member of `parts`, `usedInPriv`, `usedInShar`
//   Document            title[40] + id (4) + part (8) + text           = 52 + DocumentSize
//   Manual              title[40] + id, textLen (8) + mod (8) + text   = 56 + ManualSize
//   Assembly part       DesignObj + superAssembly, module (16)         = 34
//   ComplexAssembly     Assembly + 8 per member of subAssemblies
//   BaseAssembly        Assembly + 8 per member of componentsPriv, componentsShar
//   Module              DesignObj + man, designRoot (16)               = 34, plus 8 per
//                       member of `assemblies`
uint64_t file_size(const std::string &path) {
    struct stat st;
    return stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

uint64_t raw_object_bytes(const Params &p) {
    const uint64_t ref = 8, design = 4 + kTypeSize + 4;
    uint64_t atomic = p.total_atomic(), comps = p.total_comp();
    uint64_t conns = atomic * p.conn_per_atomic;
    uint64_t complex = p.total_complex(), base = p.total_base();
    uint64_t links = base * p.comp_per_assm;   // private; as many shared

    uint64_t bytes = 0;
    bytes += atomic * (design + 12 + ref) + 2 * conns * ref;                       // atomic
    bytes += conns * (kTypeSize + 4 + 2 * ref);                                    // connection
    bytes += comps * (design + 2 * ref) + atomic * ref + 2 * links * ref;          // composite
    bytes += comps * (kTitleSize + 4 + ref + static_cast<uint64_t>(p.document_size));  // doc
    bytes += p.modules * (kTitleSize + 8 + ref + static_cast<uint64_t>(p.manual_size));  // manual
    bytes += complex * (design + 2 * ref + p.assm_per_assm * ref);                  // complex
    bytes += base * (design + 2 * ref + 2 * p.comp_per_assm * ref);                 // base
    bytes += p.modules * (design + 2 * ref) + (complex + base) * ref;               // module
    return bytes;
}

}  // namespace oo7
