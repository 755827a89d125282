// crash_oo7.cc -- OO7 updates on a journalled database, for tests/runtime/test_crash.py.
//
// Linked with bench/oo7/oo7_common.cc, bench/oo7/oo7_p2.cc (compiled with -DP2_VARIANT=
// <prefix> -DP2_PERSISTENT=1 -DP2_JOURNAL=1 against a journalled spec, e.g.
// type_equations/oo7/hash_ilist_journal.p2), the generated <prefix>.c and the runtime. This
// file is compiled with the same -DP2_VARIANT / -DP2_HEADER, so that `check` can also read
// the atomic parts through the generated API.
//
//   crash_oo7 run DIR SIZE SEED
//       Open the database in DIR through the oo7::Db interface ("start S": S is 0 if it
//       holds the database as built, 1 if it also holds SM1's parts; "start new" if it is
//       empty, then it is built -- one transaction -- and "built" printed). Then forever:
//       SM1, commit; T2b, commit; SM2, commit. Before each commit "P S T" (S the state the
//       commit makes, T the number of T2b commits made by this process, the one being
//       committed included); after it returned, "C S T". Lines are flushed at once.
//   crash_oo7 check DIR SIZE
//       Open it in a fresh process: "refused message" (exit 2), "new" (empty), or
//       "state S XSUM VERIFY" where S is 0 or 1 as above (-1 if the counts are neither),
//       XSUM the sum of x over the atomic parts built by build_database (T2b swaps x and y:
//       XSUM tells an even number of T2b commits from an odd one) and VERIFY "clean" or
//       what db.verify() reported. Then the counts, one "count NAME N" line each.
//   crash_oo7 ref DIR SIZE SEED
//       Build into DIR, print "ref XSUM0 XSUM1": XSUM after the build and after one T2b.
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

#include "oo7.h"

#include P2_HEADER

#define P2_CAT_(a, b) a##b
#define P2_CAT(a, b) P2_CAT_(a, b)
#define P2(name) P2_CAT(P2_VARIANT, _##name)

namespace {

void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void say(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    std::vprintf(fmt, ap);
    va_end(ap);
    std::fflush(stdout);
}

const oo7::System &system_() {
    if (oo7::systems().size() != 1) throw std::runtime_error("expected one linked OO7 system");
    return oo7::systems()[0];
}

oo7::Params params(const char *size) {
    oo7::Params p;
    if (!oo7::Params::by_name(size, 3, p)) throw std::runtime_error("bad size");
    return p;
}

// 0: as built; 1: with SM1's parts; -1: neither; -2: empty
int state_of(const oo7::Counts &c, const oo7::Params &p) {
    if (c.composite_parts == 0 && c.atomic_parts == 0 && c.modules == 0) return -2;
    if (c.modules != (uint64_t)p.modules || c.complex_assemblies != (uint64_t)p.total_complex() ||
        c.base_assemblies != (uint64_t)p.total_base())
        return -1;
    for (int s = 0; s <= 1; s++) {
        uint64_t comps = (uint64_t)p.total_comp() + (s ? oo7::kNumNewCompParts : 0);
        uint64_t atoms = comps * (uint64_t)p.atomic_per_comp;
        if (c.composite_parts == comps && c.documents == comps && c.atomic_parts == atoms &&
            c.connections == atoms * (uint64_t)p.conn_per_atomic)
            return s;
    }
    return -1;
}

// sum of x over the atomic parts build_database made (ids 1..total_atomic)
int64_t xsum(const std::string &dir, const oo7::Params &p) {
    P2(db) *db = nullptr;
    if (P2(open)(&db, dir.c_str()) != P2_OK) {
        std::string msg = P2(errmsg)(db);
        P2(close)(db);
        throw std::runtime_error("reopen for xsum: " + msg);
    }
    int64_t s = 0;
    P2(atomic_parts_all_cursor) k;
    if (P2(atomic_parts_all_open)(db, &k) != P2_OK) throw std::runtime_error("atomic_parts_all");
    while (P2(atomic_parts_all_next)(&k) == P2_OK) {
        const P2(atomic_part) *a = P2(atomic_parts_all_get)(&k);
        if (a->id >= 1 && a->id <= p.total_atomic()) s += a->x;
    }
    if (P2(close)(db) != P2_OK) throw std::runtime_error("close after xsum");
    return s;
}

int run(const std::string &dir, const char *size, uint64_t seed) {
    oo7::Params p = params(size);
    std::unique_ptr<oo7::Db> db = system_().open(dir);
    int s = state_of(db->counts(), p);
    if (s == -2) {
        say("start new\n");
        oo7::build_database(*db, p, seed);   // one transaction, committed by end_build
        say("built\n");
        s = 0;
    } else {
        say("start %d\n", s);
        if (s < 0) return 3;
    }
    oo7::Rng rng(seed * 31 + 7);
    uint64_t t2s = 0;
    int step = s == 0 ? 0 : 1;   // 0: SM1 next; 1: T2b next; 2: SM2 next
    for (;;) {
        db->begin();
        if (step == 0) {
            if (oo7::sm1(*db, p, rng) != (uint64_t)oo7::kNumNewCompParts) return 4;
            s = 1;
        } else if (step == 1) {
            db->t2('b');
            t2s++;
        } else {
            if (oo7::sm2(*db, p) != (uint64_t)oo7::kNumNewCompParts) return 5;
            s = 0;
        }
        say("P %d %" PRIu64 "\n", s, t2s);
        db->commit();
        say("C %d %" PRIu64 "\n", s, t2s);
        step = (step + 1) % 3;
    }
}

int check(const std::string &dir, const char *size) {
    oo7::Params p = params(size);
    oo7::Counts c;
    std::string v;
    {
        std::unique_ptr<oo7::Db> db;
        try {
            db = system_().open(dir);
        } catch (const std::runtime_error &e) {
            say("refused %s\n", e.what());
            return 2;
        }
        c = db->counts();
        if (state_of(c, p) == -2) {
            say("new\n");
            return 0;
        }
        v = db->verify();
    }
    int s = state_of(c, p);
    int64_t x = v.empty() ? xsum(dir, p) : 0;
    for (char &ch : v)
        if (ch == '\n') ch = ';';
    say("state %d %" PRId64 " %s\n", s, x, v.empty() ? "clean" : v.c_str());
    say("counts %s\n", c.str().c_str());
    return 0;
}

int ref(const std::string &dir, const char *size, uint64_t seed) {
    oo7::Params p = params(size);
    {
        std::unique_ptr<oo7::Db> db = system_().open(dir);
        oo7::build_database(*db, p, seed);
    }
    int64_t x0 = xsum(dir, p);
    {
        std::unique_ptr<oo7::Db> db = system_().open(dir);
        db->begin();
        db->t2('b');
        db->commit();
    }
    int64_t x1 = xsum(dir, p);
    say("ref %" PRId64 " %" PRId64 "\n", x0, x1);
    return 0;
}

}  // namespace

int main(int argc, char **argv) {
    try {
        std::string mode = argc > 1 ? argv[1] : "";
        if (mode == "run" && argc == 5) return run(argv[2], argv[3], std::strtoull(argv[4], nullptr, 10));
        if (mode == "check" && argc == 4) return check(argv[2], argv[3]);
        if (mode == "ref" && argc == 5) return ref(argv[2], argv[3], std::strtoull(argv[4], nullptr, 10));
    } catch (const std::exception &e) {
        say("bug %s\n", e.what());
        return 3;
    }
    std::fprintf(stderr, "usage: %s run DIR SIZE SEED | check DIR SIZE | ref DIR SIZE SEED\n", argv[0]);
    return 64;
}
