// oo7_conform.cc -- the conformance checker of every OO7 implementation linked in: builds
// one system's database with the shared generator and asserts every check of spec
// section 5 that the Db interface can observe.
//
//   oo7_conform --size tiny|small|medium|large --fanout 3 --system NAME
//               [--mem persistent|transient] [--dir DIR] [--seed N] [--reopen-only]
//
// A system is selected by its name and, where several share the name (SQLITE persistent
// and transient, a generated variant in both memories), by --mem; an ambiguous name
// without --mem is refused with the candidates listed.
//
// Expected values come from three independent places, never from the system under test:
//  - the parameters (exact counts: T1, T6, T2/T3, Q1, Q7, Q8, object counts);
//  - a Recorder, a Db that only writes down what the generator tells it (dates, links,
//    the assembly tree) and answers the data-dependent operations (Q2-Q6, T4, T5, T7,
//    the dates after a T3) by brute force over those records;
//  - a second, HAND-built database from the same seed: for another system, every
//    read-only result must match it; for HAND itself this is the determinism check.
// Persistent systems are closed and reopened in the same process at the end;
// --reopen-only opens an existing DIR without building (a fresh process) and checks that
// the database came back whole.
//
// Output: one line per check, "ok <name> <value>" or "FAIL <name>: got X expected Y", then
// "N passed, M failed"; exit status 1 on any failure.
#include "oo7.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <iostream>
#include <map>
#include <set>
#include <stdexcept>
#include <unordered_map>

namespace {

using namespace oo7;

// ---------------------------------------------------------------------------------------
// Recorder: the generator's calls written down, and brute-force answers over them. Its
// operations throw: it is the yardstick, not a system, so nothing may ever time or ask it.

class Recorder final : public Db {
public:
    struct Assembly {
        int32_t id, date, module;
        bool is_base;
        int64_t super;                 // index into assemblies, -1 at a root
        std::vector<int32_t> priv;     // composite ids, a bag
    };
    struct Composite {
        int32_t date;
        int32_t root_atomic = 0;       // id of its first atomic part
        uint64_t doc_capital_i = 0;    // 'I's in its document text
        std::vector<size_t> users;     // base assemblies (indices) holding it privately
    };
    struct Atomic {
        int32_t id, date, comp;
    };

    std::vector<Assembly> assemblies;
    std::map<int32_t, Composite> comps;
    std::vector<Atomic> atomics;
    std::unordered_map<int32_t, size_t> atomic_index, base_index;
    uint64_t connections = 0, shared_links = 0, modules = 0, manuals = 0;

    std::string name() const override { return "RECORDER"; }
    Handle add_module(int32_t, const char *, int32_t) override { return ++modules; }
    void add_manual(Handle, int32_t, const char *, const char *, int32_t) override { manuals++; }
    Handle add_complex(Handle module, Handle super, int32_t id, const char *, int32_t date) override {
        return add_assembly(module, super, id, date, false);
    }
    Handle add_base(Handle module, Handle super, int32_t id, const char *, int32_t date) override {
        Handle h = add_assembly(module, super, id, date, true);
        base_index[id] = h;
        return h;
    }
    Handle add_composite(int32_t id, const char *, int32_t date) override {
        comps[id].date = date;
        return static_cast<Handle>(id);
    }
    void add_document(Handle comp, int32_t, const char *, const char *text, int32_t len) override {
        comps[static_cast<int32_t>(comp)].doc_capital_i =
            static_cast<uint64_t>(std::count(text, text + len, 'I'));
    }
    Handle add_atomic(Handle comp, int32_t id, const char *, int32_t date, int32_t, int32_t,
                      int32_t) override {
        Composite &c = comps[static_cast<int32_t>(comp)];
        if (c.root_atomic == 0) c.root_atomic = id;
        atomic_index[id] = atomics.size();
        atomics.push_back({id, date, static_cast<int32_t>(comp)});
        return atomics.size() - 1;
    }
    void add_connection(Handle, Handle, const char *, int32_t) override { connections++; }
    void link_private(Handle base, Handle comp) override {
        assemblies[base].priv.push_back(static_cast<int32_t>(comp));
        comps[static_cast<int32_t>(comp)].users.push_back(base);
    }
    void link_shared(Handle, Handle) override { shared_links++; }
    Handle base_by_id(int32_t id) override {
        auto it = base_index.find(id);
        return it == base_index.end() ? kNone : it->second;
    }

    // -- brute force -----------------------------------------------------------------------
    // module 1's private links in any order: what the traversal skeleton visits
    std::vector<int32_t> module1_visits() const {
        std::vector<int32_t> visits;
        for (const Assembly &a : assemblies)
            if (a.is_base && a.module == 1) visits.insert(visits.end(), a.priv.begin(), a.priv.end());
        return visits;
    }
    uint64_t module1_distinct() const {
        std::vector<int32_t> v = module1_visits();
        return std::set<int32_t>(v.begin(), v.end()).size();
    }
    uint64_t brute_t4() const {
        uint64_t n = 0;
        for (int32_t c : module1_visits()) n += comps.at(c).doc_capital_i;
        return n;
    }
    // every atomic date after one T3 of `mode` on the recorded (untouched) dates
    std::vector<int32_t> dates_after_t3(char mode) const {
        std::map<int32_t, uint64_t> visits;
        for (int32_t c : module1_visits()) visits[c]++;
        std::vector<int32_t> dates;
        for (const Atomic &a : atomics) {
            auto v = visits.find(a.comp);
            uint64_t k = v == visits.end() ? 0 : v->second;
            if (mode == 'a' && comps.at(a.comp).root_atomic != a.id) k = 0;
            if (mode == 'c') k *= kUpdateRepeatCnt;
            int32_t d = a.date;
            if (k % 2) d = d % 2 != 0 ? d + 1 : d - 1;
            dates.push_back(d);
        }
        return dates;
    }
    std::vector<int32_t> dates() const {
        std::vector<int32_t> d;
        for (const Atomic &a : atomics) d.push_back(a.date);
        return d;
    }
    static uint64_t in_range(const std::vector<int32_t> &dates, int32_t lo, int32_t hi) {
        return static_cast<uint64_t>(
            std::count_if(dates.begin(), dates.end(), [&](int32_t d) { return lo <= d && d <= hi; }));
    }
    uint64_t used_in_priv(int32_t comp) const {
        auto it = comps.find(comp);
        return it == comps.end() ? 0 : it->second.users.size();
    }
    uint64_t brute_q5(uint64_t *pairs) const {
        uint64_t bases = 0;
        *pairs = 0;
        for (const Assembly &a : assemblies) {
            if (!a.is_base) continue;
            uint64_t newer = 0;
            for (int32_t c : a.priv) newer += comps.at(c).date > a.date;
            *pairs += newer;
            bases += newer > 0;
        }
        return bases;
    }
    uint64_t brute_q6() const {
        // pre-order creation: every child comes after its parent, so a reverse sweep
        // finishes each assembly before its parent reads it
        std::vector<int32_t> newest(assemblies.size(), INT32_MIN);
        uint64_t found = 0;
        for (size_t i = assemblies.size(); i-- > 0;) {
            const Assembly &a = assemblies[i];
            for (int32_t c : a.priv) newest[i] = std::max(newest[i], comps.at(c).date);
            if (newest[i] > a.date) found++;
            if (a.super >= 0) newest[a.super] = std::max(newest[a.super], newest[i]);
        }
        return found;
    }
    uint64_t brute_t7(int32_t atomic_id) const {
        auto it = atomic_index.find(atomic_id);
        if (it == atomic_index.end()) return 0;
        std::set<int64_t> counted;
        for (size_t b : comps.at(atomics[it->second].comp).users)
            for (int64_t a = static_cast<int64_t>(b); a >= 0; a = assemblies[a].super) counted.insert(a);
        return counted.size();
    }

    // -- not an implementation ---------------------------------------------------------------
    [[noreturn]] static void refuse() { throw std::logic_error("the recorder answers no operations"); }
    uint64_t t1(uint64_t *) override { refuse(); }
    uint64_t t2(char) override { refuse(); }
    uint64_t t3(char) override { refuse(); }
    uint64_t t4() override { refuse(); }
    uint64_t t5(bool) override { refuse(); }
    uint64_t t6() override { refuse(); }
    uint64_t t7_from_atomic(int32_t) override { refuse(); }
    uint64_t t8() override { refuse(); }
    uint64_t t9() override { refuse(); }
    bool q1_lookup(int32_t) override { refuse(); }
    uint64_t date_range(int32_t, int32_t) override { refuse(); }
    uint64_t q4_title(const char *) override { refuse(); }
    uint64_t q5(uint64_t *) override { refuse(); }
    uint64_t q6() override { refuse(); }
    uint64_t q7() override { refuse(); }
    uint64_t q8() override { refuse(); }
    bool delete_composite(int32_t) override { refuse(); }
    Counts counts() override { refuse(); }
    std::string verify() override { refuse(); }
    uint64_t size_bytes() override { refuse(); }

private:
    Handle add_assembly(Handle module, Handle super, int32_t id, int32_t date, bool is_base) {
        int64_t up = super == kNone ? -1 : static_cast<int64_t>(super);
        assemblies.push_back({id, date, static_cast<int32_t>(module), is_base, up, {}});
        return assemblies.size() - 1;
    }
};

// ---------------------------------------------------------------------------------------
// reporting

std::ostream &operator<<(std::ostream &os, const Counts &c) { return os << c.str(); }

class Checks {
public:
    template <class T, class U>
    bool eq(const std::string &name, const T &got, const U &expected) {
        if (got == expected) {
            std::cout << "ok " << name << " " << got << "\n";
            passed_++;
            return true;
        }
        std::cout << "FAIL " << name << ": got " << got << " expected " << expected << "\n";
        failed_++;
        return false;
    }
    bool verified(const std::string &name, const std::string &problems) {
        if (problems.empty()) {
            std::cout << "ok " << name << " clean\n";
            passed_++;
            return true;
        }
        std::cout << "FAIL " << name << ": got \"" << problems << "\" expected \"\"\n";
        failed_++;
        return false;
    }
    void failure(const std::string &name, const std::string &why) {
        std::cout << "FAIL " << name << ": " << why << "\n";
        failed_++;
    }
    int finish() const {
        std::cout << passed_ << " passed, " << failed_ << " failed\n";
        return failed_ ? 1 : 0;
    }
    bool clean() const { return failed_ == 0; }

private:
    int passed_ = 0, failed_ = 0;
};

// every operation runs in its own transaction, as the driver times them
template <class F>
auto txn(Db &db, F &&f) {
    db.begin();
    auto result = f();
    db.commit();
    return result;
}

// a read-only operation runs twice (cold, then hot) and must give the same count
template <class F>
uint64_t twice(Checks &ck, Db &db, const std::string &name, F &&f, uint64_t expected) {
    uint64_t cold = txn(db, f), hot = txn(db, f);
    ck.eq(name, cold, expected);
    ck.eq(name + ".hot", hot, cold);
    return cold;
}

Counts expected_counts(const Params &p) {
    Counts n;
    n.modules = n.manuals = static_cast<uint64_t>(p.modules);
    n.complex_assemblies = static_cast<uint64_t>(p.total_complex());
    n.base_assemblies = static_cast<uint64_t>(p.total_base());
    n.composite_parts = n.documents = static_cast<uint64_t>(p.total_comp());
    n.atomic_parts = static_cast<uint64_t>(p.total_atomic());
    n.connections = n.atomic_parts * static_cast<uint64_t>(p.conn_per_atomic);
    n.private_links = n.shared_links = n.base_assemblies * static_cast<uint64_t>(p.comp_per_assm);
    return n;
}

struct Expect {
    Params p;
    uint64_t seed;
    Recorder rec;            // the database as built
    uint64_t t1_parts, t6_roots, t8, t9;
};

Expect expectations(const Params &p, uint64_t seed) {
    Expect e{p, seed, Recorder(), 0, 0, 0, 0};
    build_database(e.rec, p, seed);
    uint64_t visits = static_cast<uint64_t>(p.base_per_module()) * static_cast<uint64_t>(p.comp_per_assm);
    e.t6_roots = visits;
    e.t1_parts = visits * static_cast<uint64_t>(p.atomic_per_comp);
    std::string manual = manual_text(1, p.manual_size);
    e.t8 = static_cast<uint64_t>(std::count(manual.begin(), manual.end(), 'I'));
    e.t9 = !manual.empty() && manual.front() == manual.back();
    return e;
}

// ---------------------------------------------------------------------------------------
// the checks

// what must hold of any database as built (also after a reopen)
void check_as_built(Checks &ck, Db &db, const Expect &e, const std::string &at) {
    const Params &p = e.p;
    uint64_t atomic = static_cast<uint64_t>(p.total_atomic());
    ck.eq(at + "counts", txn(db, [&] { return db.counts(); }), expected_counts(p));
    ck.verified(at + "verify", txn(db, [&] { return db.verify(); }));
    uint64_t conns = 0;
    twice(ck, db, at + "t1", [&] { return db.t1(&conns); }, e.t1_parts);
    ck.eq(at + "t1.connections", conns, e.t1_parts * static_cast<uint64_t>(p.conn_per_atomic));
    twice(ck, db, at + "t6", [&] { return db.t6(); }, e.t6_roots);
    twice(ck, db, at + "q7", [&] { return db.q7(); }, atomic);
    std::vector<int32_t> dates = e.rec.dates();
    twice(ck, db, at + "q2", [&] { return q2(db); }, Recorder::in_range(dates, 1990, kMaxAtomicDate));
    twice(ck, db, at + "q3", [&] { return q3(db); }, Recorder::in_range(dates, 1900, kMaxAtomicDate));
}

// the read-only results that another system (or a second HAND build) must reproduce
std::vector<std::pair<std::string, uint64_t>> fingerprint(Db &db, const Params &p, uint64_t seed) {
    std::vector<std::pair<std::string, uint64_t>> f;
    auto put = [&](const std::string &name, uint64_t v) { f.emplace_back(name, v); };
    uint64_t conns = 0, pairs = 0;
    Rng rng;
    txn(db, [&] {
        put("t1", db.t1(&conns));
        put("t1.connections", conns);
        put("t4", db.t4());
        put("t6", db.t6());
        put("t8", db.t8());
        put("t9", db.t9());
        rng.seed(seed);
        put("q1", q1(db, p, rng));
        put("q2", q2(db));
        put("q3", q3(db));
        rng.seed(seed);
        put("q4", q4(db, p, rng));
        put("q5", db.q5(&pairs));
        put("q5.pairs", pairs);
        put("q6", db.q6());
        put("q7", db.q7());
        put("q8", db.q8());
        for (uint64_t s = 0; s < 10; s++) {
            rng.seed(seed + s);
            put("t7.seed" + std::to_string(seed + s), t7(db, p, rng));
        }
        return 0;
    });
    return f;
}

void check_operations(Checks &ck, Db &db, const Expect &e) {
    const Params &p = e.p;
    const Recorder &rec = e.rec;
    uint64_t atomic = static_cast<uint64_t>(p.total_atomic());
    Rng rng;

    // exact and read-only
    twice(ck, db, "t8", [&] { return db.t8(); }, e.t8);
    twice(ck, db, "t9", [&] { return db.t9(); }, e.t9);
    twice(ck, db, "q1", [&] { rng.seed(e.seed); return q1(db, p, rng); },
          static_cast<uint64_t>(kQuery1RepeatCnt));
    ck.eq("q1.absent", txn(db, [&] { return db.q1_lookup(0) || db.q1_lookup(p.total_atomic() + 1); }), false);
    twice(ck, db, "q8", [&] { return db.q8(); }, atomic);
    ck.eq("date_range.all", txn(db, [&] { return db.date_range(kMinAtomicDate, kMaxAtomicDate); }), atomic);
    ck.eq("date_range.empty", txn(db, [&] { return db.date_range(kMaxAtomicDate + 2, INT32_MAX); }), uint64_t{0});

    // data-dependent, against the recorder's brute force
    Rng replay(e.seed);
    uint64_t q4_expected = 0;
    for (int i = 0; i < kQuery4RepeatCnt; i++) q4_expected += rec.used_in_priv(replay.uniform(1, p.total_comp()));
    twice(ck, db, "q4", [&] { rng.seed(e.seed); return q4(db, p, rng); }, q4_expected);
    uint64_t q4_wrong = 0;
    txn(db, [&] {
        for (int32_t c = 1; c <= p.total_comp(); c++)
            q4_wrong += db.q4_title(document_title(c).c_str()) != rec.used_in_priv(c);
        return 0;
    });
    ck.eq("q4.every_title_mismatches", q4_wrong, uint64_t{0});
    ck.eq("q4.absent", txn(db, [&] { return db.q4_title("Composite Part nowhere"); }), uint64_t{0});
    uint64_t pairs = 0, pairs_hot = 0, pairs_expected = 0;
    uint64_t bases_expected = rec.brute_q5(&pairs_expected);
    ck.eq("q5", txn(db, [&] { return db.q5(&pairs); }), bases_expected);
    ck.eq("q5.pairs", pairs, pairs_expected);
    ck.eq("q5.hot", txn(db, [&] { return db.q5(&pairs_hot); }), bases_expected);
    ck.eq("q5.pairs.hot", pairs_hot, pairs);
    twice(ck, db, "q6", [&] { return db.q6(); }, rec.brute_q6());
    uint64_t t4_expected = rec.brute_t4();
    twice(ck, db, "t4", [&] { return db.t4(); }, t4_expected);
    replay.seed(e.seed);
    twice(ck, db, "t7", [&] { rng.seed(e.seed); return t7(db, p, rng); },
          rec.brute_t7(replay.uniform(1, p.total_atomic())));
    // T7 from every atomic part (a stride of them on the big sizes)
    int32_t stride = std::max(1, p.total_atomic() / 2000);
    uint64_t t7_wrong = 0, t7_tried = 0;
    txn(db, [&] {
        for (int32_t id = 1; id <= p.total_atomic(); id += stride, t7_tried++)
            t7_wrong += db.t7_from_atomic(id) != rec.brute_t7(id);
        return 0;
    });
    ck.eq("t7.mismatches_of_" + std::to_string(t7_tried), t7_wrong, uint64_t{0});
    ck.eq("t7.absent", txn(db, [&] { return db.t7_from_atomic(p.total_atomic() + 1); }), uint64_t{0});

    // T2: counts; a, b twice and c (4 swaps) leave x/y as they were (verify checks ranges)
    uint64_t visits = e.t6_roots, parts = e.t1_parts;
    ck.eq("t2a", txn(db, [&] { return db.t2('a'); }), visits);
    ck.eq("t2a.again", txn(db, [&] { return db.t2('a'); }), visits);
    ck.eq("t2b", txn(db, [&] { return db.t2('b'); }), parts);
    ck.eq("t2b.again", txn(db, [&] { return db.t2('b'); }), parts);
    ck.eq("t2c", txn(db, [&] { return db.t2('c'); }), parts * kUpdateRepeatCnt);
    ck.verified("t2.verify", txn(db, [&] { return db.verify(); }));

    // T3: the buildDate index must follow every toggle
    auto dates_check = [&](const std::string &at, const std::vector<int32_t> &dates) {
        ck.eq(at + ".q2", txn(db, [&] { return q2(db); }), Recorder::in_range(dates, 1990, kMaxAtomicDate));
        ck.eq(at + ".q3", txn(db, [&] { return q3(db); }), Recorder::in_range(dates, 1900, kMaxAtomicDate));
        ck.eq(at + ".low_edge", txn(db, [&] { return db.date_range(kMinAtomicDate - 1, kMinAtomicDate); }),
              Recorder::in_range(dates, kMinAtomicDate - 1, kMinAtomicDate));
        ck.eq(at + ".high_edge", txn(db, [&] { return db.date_range(kMaxAtomicDate, kMaxAtomicDate + 1); }),
              Recorder::in_range(dates, kMaxAtomicDate, kMaxAtomicDate + 1));
        ck.eq(at + ".widened", txn(db, [&] { return db.date_range(kMinAtomicDate - 1, kMaxAtomicDate + 1); }),
              atomic);
    };
    std::vector<int32_t> original = rec.dates();
    ck.eq("t3a", txn(db, [&] { return db.t3('a'); }), visits);
    dates_check("t3a", rec.dates_after_t3('a'));
    ck.eq("t3a.again", txn(db, [&] { return db.t3('a'); }), visits);
    dates_check("t3a.restored", original);
    ck.eq("t3b", txn(db, [&] { return db.t3('b'); }), parts);
    dates_check("t3b", rec.dates_after_t3('b'));
    ck.verified("t3b.verify", txn(db, [&] { return db.verify(); }));
    ck.eq("t3b.again", txn(db, [&] { return db.t3('b'); }), parts);
    dates_check("t3b.restored", original);
    ck.eq("t3c", txn(db, [&] { return db.t3('c'); }), parts * kUpdateRepeatCnt);
    dates_check("t3c.unchanged", original);
    ck.verified("t3.verify", txn(db, [&] { return db.verify(); }));

    // T5: do, do again (nothing left), undo, undo again; T4 sees the edit and its reversal
    uint64_t distinct = rec.module1_distinct();
    ck.eq("t5do", txn(db, [&] { return db.t5(false); }), distinct);
    ck.eq("t5do.t4", txn(db, [&] { return db.t4(); }), t4_expected - visits);   // "This is": no 'I'
    ck.eq("t5do.again", txn(db, [&] { return db.t5(false); }), uint64_t{0});
    ck.eq("t5undo", txn(db, [&] { return db.t5(true); }), distinct);
    ck.eq("t5undo.again", txn(db, [&] { return db.t5(true); }), uint64_t{0});
    ck.eq("t5undo.t4", txn(db, [&] { return db.t4(); }), t4_expected);

    // SM1 then SM2, against a recorder that saw the same SM1
    Counts before = txn(db, [&] { return db.counts(); });
    Recorder grown = rec;
    Rng sm_rng(e.seed + 1);
    sm1(grown, p, sm_rng);
    sm_rng.seed(e.seed + 1);
    ck.eq("sm1", txn(db, [&] { return sm1(db, p, sm_rng); }), static_cast<uint64_t>(kNumNewCompParts));
    Counts after = before;
    uint64_t new_atomic = static_cast<uint64_t>(kNumNewCompParts) * static_cast<uint64_t>(p.atomic_per_comp);
    after.composite_parts += kNumNewCompParts;
    after.documents += kNumNewCompParts;
    after.atomic_parts += new_atomic;
    after.connections += new_atomic * static_cast<uint64_t>(p.conn_per_atomic);
    after.private_links += kNumSM1Bases;
    ck.eq("sm1.counts", txn(db, [&] { return db.counts(); }), after);
    ck.verified("sm1.verify", txn(db, [&] { return db.verify(); }));
    uint64_t grown_visits = grown.module1_visits().size();
    uint64_t conns = 0;
    ck.eq("sm1.t1", txn(db, [&] { return db.t1(&conns); }), grown_visits * static_cast<uint64_t>(p.atomic_per_comp));
    ck.eq("sm1.t6", txn(db, [&] { return db.t6(); }), grown_visits);
    ck.eq("sm1.q7", txn(db, [&] { return db.q7(); }), atomic + new_atomic);
    ck.eq("sm1.q8", txn(db, [&] { return db.q8(); }), atomic + new_atomic);
    ck.eq("sm1.q2", txn(db, [&] { return q2(db); }), Recorder::in_range(grown.dates(), 1990, kMaxAtomicDate));
    uint64_t grown_pairs = 0, got_pairs = 0;
    uint64_t grown_bases = grown.brute_q5(&grown_pairs);
    ck.eq("sm1.q5", txn(db, [&] { return db.q5(&got_pairs); }), grown_bases);
    ck.eq("sm1.q5.pairs", got_pairs, grown_pairs);
    ck.eq("sm1.q6", txn(db, [&] { return db.q6(); }), grown.brute_q6());
    ck.eq("sm1.q4.new_title",
          txn(db, [&] { return db.q4_title(document_title(p.total_comp() + 1).c_str()); }),
          grown.used_in_priv(p.total_comp() + 1));
    ck.eq("sm1.t7.new_part", txn(db, [&] { return db.t7_from_atomic(p.total_atomic() + 1); }),
          grown.brute_t7(p.total_atomic() + 1));

    ck.eq("sm2", txn(db, [&] { return sm2(db, p); }), static_cast<uint64_t>(kNumNewCompParts));
    ck.eq("sm2.counts", txn(db, [&] { return db.counts(); }), before);
    ck.verified("sm2.verify", txn(db, [&] { return db.verify(); }));
    ck.eq("sm2.again", txn(db, [&] { return sm2(db, p); }), uint64_t{0});
    ck.eq("sm2.t1", txn(db, [&] { return db.t1(&conns); }), parts);
    ck.eq("sm2.t6", txn(db, [&] { return db.t6(); }), visits);
    ck.eq("sm2.q7", txn(db, [&] { return db.q7(); }), atomic);
    ck.eq("sm2.q8", txn(db, [&] { return db.q8(); }), atomic);
    ck.eq("sm2.q2", txn(db, [&] { return q2(db); }), Recorder::in_range(original, 1990, kMaxAtomicDate));
    ck.eq("sm2.q4.gone", txn(db, [&] { return db.q4_title(document_title(p.total_comp() + 1).c_str()); }),
          uint64_t{0});
    ck.eq("sm2.q1.gone", txn(db, [&] { return db.q1_lookup(p.total_atomic() + 1); }), false);
}

// results of `db` against a HAND database built from the same seed
void check_against_hand(Checks &ck, Db &db, const Expect &e, const std::string &label) {
    const System *hand = nullptr;
    for (const System &s : systems())
        if (s.name == "HAND") hand = &s;
    if (!hand) {
        ck.failure(label, "no HAND system linked in");
        return;
    }
    std::unique_ptr<Db> ref = hand->open("");
    build_database(*ref, e.p, e.seed);
    auto mine = fingerprint(db, e.p, e.seed), theirs = fingerprint(*ref, e.p, e.seed);
    for (size_t i = 0; i < mine.size(); i++) ck.eq(label + "." + mine[i].first, mine[i].second, theirs[i].second);
}

// ---------------------------------------------------------------------------------------

struct Options {
    std::string size = "small", system, mem, dir;
    int fanout = 3;
    uint64_t seed = 1;
    bool reopen_only = false;
};

[[noreturn]] void usage(const char *why) {
    std::cerr << "oo7_conform: " << why << "\n"
              << "usage: oo7_conform --size tiny|small|medium|large --fanout N --system NAME "
                 "[--mem persistent|transient] [--dir DIR] [--seed N] [--reopen-only]\nsystems:";
    for (const System &s : systems()) std::cerr << " " << s.name << " (" << s.mem << ")";
    std::cerr << "\n";
    std::exit(2);
}

Options parse(int argc, char **argv) {
    Options o;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) usage(("missing value after " + a).c_str());
            return argv[++i];
        };
        try {
            if (a == "--size") o.size = value();
            else if (a == "--fanout") o.fanout = std::stoi(value());
            else if (a == "--system") o.system = value();
            else if (a == "--mem") o.mem = value();
            else if (a == "--dir") o.dir = value();
            else if (a == "--seed") o.seed = std::stoull(value());
            else if (a == "--reopen-only") o.reopen_only = true;
            else usage(("unknown argument " + a).c_str());
        } catch (const std::logic_error &) {
            usage(("bad number after " + a).c_str());
        }
    }
    if (o.system.empty()) usage("--system is required");
    if (!o.mem.empty() && o.mem != "persistent" && o.mem != "transient")
        usage(("--mem must be persistent or transient, not " + o.mem).c_str());
    return o;
}

// the one system called o.system (in memory o.mem, if given); anything else is a usage error
const System &select_system(const Options &o) {
    std::vector<const System *> named, chosen;
    for (const System &s : systems())
        if (s.name == o.system) {
            named.push_back(&s);
            if (o.mem.empty() || s.mem == o.mem) chosen.push_back(&s);
        }
    auto list = [](const std::vector<const System *> &v) {
        std::string out;
        for (const System *s : v) out += (out.empty() ? "" : ", ") + s->name + " --mem " + s->mem;
        return out;
    };
    if (named.empty()) usage(("no system named " + o.system).c_str());
    if (chosen.empty())
        usage(("no system named " + o.system + " with --mem " + o.mem + "; candidates: " + list(named)).c_str());
    if (chosen.size() > 1 && !o.mem.empty())
        usage(("system " + o.system + " --mem " + o.mem + " is registered more than once").c_str());
    if (chosen.size() > 1)
        usage(("system name " + o.system + " is ambiguous; pass --mem persistent|transient to pick one of: " +
               list(chosen)).c_str());
    return *chosen.front();
}

}  // namespace

int main(int argc, char **argv) {
    Options o = parse(argc, argv);
    Params p;
    if (!Params::by_name(o.size, o.fanout, p)) usage("unknown --size or bad --fanout");
    const System *sys = &select_system(o);
    bool persistent = sys->mem == "persistent";
    if (persistent && o.dir.empty()) usage("a persistent system needs --dir");

    Checks ck;
    try {
        Expect e = expectations(p, o.seed);
        if (o.reopen_only) {
            std::unique_ptr<Db> db = sys->open(o.dir);
            check_as_built(ck, *db, e, "reopened.");
            return ck.finish();
        }
        auto t0 = std::chrono::steady_clock::now();
        std::unique_ptr<Db> db = sys->open(o.dir);
        build_database(*db, p, o.seed);
        double build_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::cout << "# " << sys->name << " " << o.size << " fanout " << o.fanout << " seed " << o.seed
                  << ": built in " << build_s << " s, size_bytes " << db->size_bytes()
                  << ", raw object bytes " << raw_object_bytes(p) << "\n";

        check_as_built(ck, *db, e, "");
        check_operations(ck, *db, e);
        check_against_hand(ck, *db, e, sys->name == "HAND" ? "determinism" : "same_as_hand");
        if (persistent) {
            db.reset();   // closes
            db = sys->open(o.dir);
            check_as_built(ck, *db, e, "reopened.");
        }
    } catch (const std::exception &ex) {
        ck.failure("exception", ex.what());
    }
    return ck.finish();
}
