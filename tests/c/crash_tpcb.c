/* crash_tpcb.c -- a small TPC-B through the generated API only, for the crash and
 * corruption tests (tests/runtime/test_crash.py, tests/runtime/test_corrupt.py).
 *
 * Compiled once per spec of tests/specs/tpcb_*.p2:
 *   cc -DP2_PREFIX=<prefix> -DP2_HEADER='"<prefix>.h"' [-DP2_JOURNALLED=1] -I<gen> \
 *      crash_tpcb.c <gen>/<prefix>.c <gen>/p2_runtime.c
 *
 *   crash_tpcb run DIR SEED [MAX]
 *       Open the database in DIR ("start H": H transactions in its history), load it if
 *       it is empty (one transaction: NB branches, NT tellers, NA accounts, all balances
 *       0; "loaded" after its commit returned), then run TPC-B transactions, each
 *       followed by a commit. Before a commit: "P n s"; after it returned: "C n s", where
 *       n is the number of transactions in the history and s the sum of their deltas
 *       (the TPC-B invariant says every balance sum equals s). Every 7th transaction of
 *       a journalled file is aborted after partial changes (account, teller, history
 *       insert; not the branch): "A" after the abort, which must leave no trace (checked
 *       here too). Lines are flushed at once. Forever, or MAX commits then a clean close
 *       ("closed").
 *   crash_tpcb check DIR
 *       Open the database in a fresh process. Refused: "refused CODE message", exit 2.
 *       Opened: "new" if it holds nothing, else
 *         "state NB NT NA NH SB ST SA SH SEQ VERIFY"
 *       (counts; sums of branch, teller, account balances and of history deltas; SEQ 1
 *       if the history's times are 1..NH in order and each history's teller/branch agree;
 *       VERIFY the number of problems the generated verify() reports), exit 0.
 *       Any crash is a bug (the tests run this under ASan/UBSan).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <inttypes.h>

#include P2_HEADER

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define P(name) CAT(P2_PREFIX, CAT(_, name))

#ifndef P2_JOURNALLED
#define P2_JOURNALLED 0
#endif
#if P2_JOURNALLED
#define COMMIT P(commit)   /* make the transaction durable */
#else
#define COMMIT P(sync)     /* a plain file: a commit is a sync */
#endif

enum { NB = 2, NT = 10 * NB, NA = 100 * NB };

static P(db) *db;

static void die(const char *what, int rc)
{
    printf("bug %s: rc %d: %s\n", what, rc, db ? P(errmsg)(db) : "");
    fflush(stdout);
    exit(3);
}

#define OK(call, what) do { int rc_ = (call); if (rc_ != P2_OK) die(what, rc_); } while (0)

static uint64_t rng_state;
static uint64_t rnd(void)   /* splitmix64 */
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#include <stdarg.h>
static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fflush(stdout);
}

static P(ref) find_branch(uint32_t id)
{
    P(ref) r;
    OK(P(branches_find_id)(db, id, &r), "find branch");
    return r;
}
static P(ref) find_teller(uint32_t id)
{
    P(ref) r;
    OK(P(tellers_find_id)(db, id, &r), "find teller");
    return r;
}
static P(ref) find_account(uint32_t id)
{
    P(ref) r;
    OK(P(accounts_find_id)(db, id, &r), "find account");
    return r;
}

static void load(void)
{
    for (uint32_t b = 0; b < NB; b++) {
        P(branch) x;
        memset(&x, 0, sizeof x);
        x.id = b;
        memcpy(x.filler, "branch", 6);
        OK(P(branches_insert)(db, &x, NULL), "insert branch");
    }
    for (uint32_t t = 0; t < NT; t++) {
        P(teller) x;
        memset(&x, 0, sizeof x);
        x.id = t;
        x.branch_id = t / 10;
        memcpy(x.filler, "teller", 6);
        OK(P(tellers_insert)(db, &x, NULL), "insert teller");
    }
    for (uint32_t a = 0; a < NA; a++) {
        P(account) x;
        memset(&x, 0, sizeof x);
        x.id = a;
        x.branch_id = a / (NA / NB);
        memcpy(x.filler, "account", 7);
        OK(P(accounts_insert)(db, &x, NULL), "insert account");
    }
}

static int64_t history_sum(void)
{
    int64_t s = 0;
    P(histories_all_cursor) k;
    OK(P(histories_all_open)(db, &k), "histories_all");
    while (P(histories_all_next)(&k) == P2_OK)
        s += P(histories_all_get)(&k)->delta;
    return s;
}

static int run(const char *dir, uint64_t seed, uint64_t max)
{
    int rc = P(open)(&db, dir);
    if (rc != P2_OK) {
        say("refused %d %s\n", rc, P(errmsg)(db));
        P(close)(db);
        return 2;
    }
    uint64_t n = P(histories_count)(db);
    say("start %" PRIu64 "\n", n);
    if (P(branches_count)(db) == 0) {
        if (n != 0 || P(tellers_count)(db) != 0 || P(accounts_count)(db) != 0)
            die("half-made database", 0);
        load();
        OK(COMMIT(db), "commit load");
        say("loaded\n");
    }
    int64_t sum = history_sum();
    rng_state = seed * 0x2545f4914f6cdd1du + n;
    for (uint64_t i = 0, done = 0; max == 0 || done < max; i++) {
        uint32_t a = (uint32_t)(rnd() % NA), t = (uint32_t)(rnd() % NT), b = t / 10;
        int32_t delta = (int32_t)(rnd() % 199999) - 99999;
        P(ref) ra = find_account(a), rt = find_teller(t), rb = find_branch(b);
        int64_t abal = P(accounts_at)(db, ra)->balance, tbal = P(tellers_at)(db, rt)->balance;
        P(history) h;
        memset(&h, 0, sizeof h);
        h.account_id = a;
        h.teller_id = t;
        h.branch_id = b;
        h.delta = delta;
        h.time = (uint32_t)(n + 1);
        memcpy(h.filler, "history", 7);
#if P2_JOURNALLED
        if (i % 7 == 6) {   /* partial changes, then abort: no trace may remain */
            OK(P(begin)(db), "begin");
            OK(P(accounts_set_balance)(db, ra, abal + delta), "account");
            OK(P(tellers_set_balance)(db, rt, tbal + delta), "teller");
            OK(P(histories_insert)(db, &h, NULL), "history");
            OK(P(abort)(db), "abort");
            ra = find_account(a);
            rt = find_teller(t);
            if (P(accounts_at)(db, ra)->balance != abal || P(tellers_at)(db, rt)->balance != tbal ||
                P(histories_count)(db) != n)
                die("abort left a trace", 0);
            say("A\n");
            continue;
        }
        OK(P(begin)(db), "begin");
#endif
        OK(P(accounts_set_balance)(db, ra, abal + delta), "account");
        OK(P(tellers_set_balance)(db, rt, tbal + delta), "teller");
        OK(P(branches_set_balance)(db, rb, P(branches_at)(db, rb)->balance + delta), "branch");
        OK(P(histories_insert)(db, &h, NULL), "history");
        say("P %" PRIu64 " %" PRId64 "\n", n + 1, sum + delta);
        OK(COMMIT(db), "commit");
        n++;
        sum += delta;
        done++;
        say("C %" PRIu64 " %" PRId64 "\n", n, sum);
    }
    OK(P(close)(db), "close");
    say("closed\n");
    return 0;
}

static int check(const char *dir)
{
    int rc = P(open)(&db, dir);
    if (rc != P2_OK) {
        say("refused %d %s\n", rc, P(errmsg)(db));
        P(close)(db);
        return 2;
    }
    uint64_t nb = P(branches_count)(db), nt = P(tellers_count)(db), na = P(accounts_count)(db),
             nh = P(histories_count)(db);
    char report[4096];
    uint64_t problems = 0;
    int vrc = P(verify)(db, report, sizeof report, &problems);
    if (vrc != P2_OK && problems == 0)
        problems = 1;
    if (problems)
        fprintf(stderr, "verify: %s\n", report);
    if (nb + nt + na + nh == 0) {
        say("new %" PRIu64 "\n", problems);
        P(close)(db);
        return 0;
    }
    int64_t sb = 0, st = 0, sa = 0, sh = 0;
    int seq = 1;
    if (problems == 0) {   /* walk only what verify() found sound */
        P(branches_all_cursor) kb;
        OK(P(branches_all_open)(db, &kb), "branches_all");
        while (P(branches_all_next)(&kb) == P2_OK)
            sb += P(branches_all_get)(&kb)->balance;
        P(tellers_all_cursor) kt;
        OK(P(tellers_all_open)(db, &kt), "tellers_all");
        while (P(tellers_all_next)(&kt) == P2_OK)
            st += P(tellers_all_get)(&kt)->balance;
        P(accounts_all_cursor) ka;
        OK(P(accounts_all_open)(db, &ka), "accounts_all");
        while (P(accounts_all_next)(&ka) == P2_OK)
            sa += P(accounts_all_get)(&ka)->balance;
        P(histories_all_cursor) kh;
        OK(P(histories_all_open)(db, &kh), "histories_all");
        uint64_t i = 0;
        while (P(histories_all_next)(&kh) == P2_OK) {
            const P(history) *h = P(histories_all_get)(&kh);
            sh += h->delta;
            if (h->time != (uint32_t)++i || h->branch_id != h->teller_id / 10 || h->account_id >= NA)
                seq = 0;
        }
        if (i != nh)
            seq = 0;
    }
    say("state %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRId64 " %" PRId64 " %" PRId64
        " %" PRId64 " %d %" PRIu64 "\n", nb, nt, na, nh, sb, st, sa, sh, seq, problems);
    rc = P(close)(db);
    if (rc != P2_OK)
        say("close %d\n", rc);
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc >= 4 && strcmp(argv[1], "run") == 0)
        return run(argv[2], strtoull(argv[3], NULL, 10), argc >= 5 ? strtoull(argv[4], NULL, 10) : 0);
    if (argc == 3 && strcmp(argv[1], "check") == 0)
        return check(argv[2]);
    fprintf(stderr, "usage: %s run DIR SEED [MAX] | check DIR\n", argv[0]);
    return 64;
}
