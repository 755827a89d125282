/* lookup.c -- micro-benchmark of keyed lookups in a qsort container: QSORT's share of a
 * TPC-B transaction (the account lookup) alone, without the rest of the transaction.
 *
 * Loads N accounts of the TPC-B spec (type_equations/tpcb/qsort_transient.p2: 100 declared
 * bytes, a 104-byte element, key id, ids 0..N-1), then times rounds of LOOKUPS lookups of
 * random ids (a fixed xorshift stream), each reading the element's balance as a TPC-B
 * transaction does, and prints the median ns per lookup over the rounds. A second figure
 * times random inserts and deletes (each shifts the elements after it), so that what the
 * search layout costs on writes is seen too.
 *
 * Built as the README tells users to build (the API inlined into this file, -O2), once per
 * generated directory, e.g. the output of two p2gen versions of the same spec:
 *
 *   p2gen build type_equations/tpcb/qsort_transient.p2 -o /tmp/new --no-compile
 *   cc -std=c11 -O2 -DQSORT_TRANSIENT_INLINE -I/tmp/new bench/qsort_search/lookup.c \
 *      /tmp/new/p2_runtime.c -o /tmp/lookup_new
 *   /tmp/lookup_new [N [ROUNDS]]        # N = 1200000 (TPC-B SF 12), ROUNDS = 11
 *
 * A plain clock loop, run by hand (not a unit test). bench/RESULTS.md has a run.
 */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "qsort_transient.h"

#define LOOKUPS 1000000
#define SHIFTS 200

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* CPU time of this thread, not wall time: on a shared machine the process is descheduled
   for whole time slices, which wall time would count as lookups. */
static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void die(qsort_transient_db *db, const char *what)
{
    fprintf(stderr, "%s: %s\n", what, db ? qsort_transient_errmsg(db) : "no handle");
    exit(1);
}

int main(int argc, char **argv)
{
    uint32_t n = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 1200000u;
    int rounds = argc > 2 ? atoi(argv[2]) : 11;
    qsort_transient_db *db = NULL;
    qsort_transient_account acc;
    qsort_transient_ref ref;
    uint32_t *ids = malloc(sizeof *ids * LOOKUPS);
    double *t = malloc(sizeof *t * (size_t)rounds), *s = malloc(sizeof *s * (size_t)rounds);
    int64_t sum = 0;
    if (!ids || !t || !s || n == 0 || rounds < 1) return 2;
    if (qsort_transient_open(&db, NULL) != P2_OK) die(db, "open");
    if (qsort_transient_accounts_reserve(db, n) != P2_OK) die(db, "reserve");
    memset(&acc, 0, sizeof acc);
    for (uint32_t i = 0; i < n; i++) {   /* ascending: each insert appends */
        acc.id = i;
        acc.branch_id = i / 100000u;
        acc.balance = (int64_t)(i % 1000u);
        if (qsort_transient_accounts_insert(db, &acc, &ref) != P2_OK) die(db, "load");
    }
    for (int i = 0; i < LOOKUPS; i++) ids[i] = (uint32_t)(rnd() % n);
    for (int r = -1; r < rounds; r++) {   /* round -1 warms the caches, untimed */
        double t0 = now();
        for (int i = 0; i < LOOKUPS; i++) {
            const qsort_transient_account *a = qsort_transient_accounts_lookup_id(db, ids[i], &ref);
            if (!a) die(db, "lookup");
            sum += a->balance;
        }
        double t1 = now();
        /* shifts: a random delete and an insert of the same record (the count stays n) */
        for (int i = 0; i < SHIFTS; i++) {
            uint32_t id = (uint32_t)(rnd() % n);
            const qsort_transient_account *a = qsort_transient_accounts_lookup_id(db, id, &ref);
            if (!a) die(db, "lookup (shift)");
            acc = *a;
            if (qsort_transient_accounts_delete(db, ref) != P2_OK) die(db, "delete");
            if (qsort_transient_accounts_insert(db, &acc, &ref) != P2_OK) die(db, "insert");
        }
        double t2 = now();
        if (r >= 0) {
            t[r] = (t1 - t0) / LOOKUPS;
            s[r] = (t2 - t1) / SHIFTS / 1e3;
        }
    }
    printf("n=%" PRIu32 " rounds=%d lookup_ns_median=%.1f shift_us_median=%.1f (checksum %" PRId64 ")\n",
           n, rounds, median(t, rounds), median(s, rounds), sum);
    qsort_transient_close(db);
    free(ids); free(t); free(s);
    return 0;
}
