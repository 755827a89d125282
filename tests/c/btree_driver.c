/* Direct test of the btree layer (tests/layers/test_btree.py): random inserts, deletes, key
   updates and deletes under a cursor on containers of tiny nodes (splits, merges and
   refills at every few operations), checked after every operation against a model kept
   here (a plain array of (key, reference) pairs sorted the tree's way) by walking the
   tree forwards (range_first / range_next) and backwards (range_last / range_prev) from
   random bounds, and by the integrity check. The spec (tb.p2) is rendered with these
   static functions kept; this file includes its source. Prints "ok N" at the end. */
#include "tb.c"

#include <stdio.h>
#include <stdlib.h>

#define MAXN 4000
#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

typedef struct { int64_t key; uint64_t ref; } pair;
static pair model[MAXN];
static size_t nmodel;
static uint64_t rng = 88172645463325252u;

static uint64_t rnd(uint64_t n)
{
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return rng % n;
}

static int pair_cmp(const void *a, const void *b)
{
    const pair *x = (const pair *)a, *y = (const pair *)b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return (x->ref > y->ref) - (x->ref < y->ref);
}

static void model_sort(void) { qsort(model, nmodel, sizeof model[0], pair_cmp); }

static size_t model_find(uint64_t ref)
{
    for (size_t i = 0; i < nmodel; i++) if (model[i].ref == ref) return i;
    FAIL("reference %llu not in the model", (unsigned long long)ref);
}

static void check(tb_db *db, const char *after)
{
    char report[2048];
    uint64_t problems = 0;
    int64_t lo = (int64_t)rnd(60) - 5, hi = (int64_t)rnd(60) - 5;
    int has = (int)rnd(4) != 0, incl = (int)rnd(2);
    size_t i, j;
    uint64_t ref;
    if (tb_verify(db, report, sizeof report, &problems) != P2_OK || problems != 0)
        FAIL("after %s: verify: %s", after, report);
    /* forwards from lo */
    for (i = 0; i < nmodel && has && (model[i].key < lo || (!incl && model[i].key == lo)); i++) ;
    for (ref = tb_c__btree_range_first(db, has, lo, incl), j = i; ref != P2_NIL; ref = tb_c__btree_range_next(db, ref), j++)
        if (j >= nmodel || model[j].ref != ref) FAIL("after %s: forward walk from %lld: position %zu", after, (long long)lo, j);
    if (j != nmodel) FAIL("after %s: forward walk stops at %zu of %zu", after, j, nmodel);
    /* backwards from hi */
    for (i = nmodel; i > 0 && has && (model[i - 1].key > hi || (!incl && model[i - 1].key == hi)); i--) ;
    for (ref = tb_c__btree_range_last(db, has, hi, incl), j = i; ref != P2_NIL; ref = tb_c__btree_range_prev(db, ref), j--)
        if (j == 0 || model[j - 1].ref != ref) FAIL("after %s: backward walk from %lld: position %zu", after, (long long)hi, j);
    if (j != 0) FAIL("after %s: backward walk stops at %zu", after, j);
    /* the second tree (hash over it) agrees too */
    if (tb_c_count(db) != nmodel) FAIL("after %s: count", after);
}

/* The leaves of the tree, by the leaf links from the first (LINK: a stored link as a
   memory reference, given by the test for the memory's link width). */
static uint64_t tb_c__btree_leaves(tb_db *db)
{
    uint64_t m = db->c->btree_root, n = 0;
    for (uint64_t lev = db->c->btree_height; lev > 1; lev--) m = LINK(tb_c__btree_in(db, m)->child[0]);
    for (; m != 0; m = LINK(tb_c__btree_lf(db, m)->next)) n++;
    return n;
}

int main(int argc, char **argv)
{
    tb_db *db;
    long steps = argc > 1 ? atol(argv[1]) : 3000, s;
    tb_item it;
    if (argc > 2) rng += (uint64_t)atol(argv[2]);
    if (tb_open(&db, ".") != P2_OK) FAIL("open");
    /* a sorted run first: ascending keys fill the nodes (the last node of each level
       splits unevenly), then the random mix deletes from them and splits them again */
    for (s = 0; s < 600; s++) {
        uint64_t ref;
        memset(&it, 0, sizeof it);
        it.score = (int64_t)(s / 3);   /* ascending, three of each */
        if (tb_c_insert(db, &it, &ref) != P2_OK) FAIL("insert: %s", tb_errmsg(db));
        model[nmodel].key = it.score;
        model[nmodel++].ref = ref;
        model_sort();
        if (s % 37 == 0) check(db, "ascending insert");
    }
    check(db, "ascending inserts");
    /* nodes left full: about a quarter of the leaves a random load would take */
    if (db->c->btree_height > 0 && tb_c__btree_leaves(db) * 5 > nmodel) FAIL("ascending inserts left %llu leaves for %zu entries", (unsigned long long)tb_c__btree_leaves(db), nmodel);
    for (s = 0; s < steps; s++) {
        uint64_t op = rnd(100), ref;
        size_t target = (nmodel < 30 || rnd(3) == 0) ? 1200 : 400;   /* grow, then churn */
        memset(&it, 0, sizeof it);
        if (op < 50 && nmodel < target) {
            it.id = (uint32_t)s;
            it.score = (int64_t)rnd(50);   /* many duplicates */
            if (tb_c_insert(db, &it, &ref) != P2_OK) FAIL("insert: %s", tb_errmsg(db));
            model[nmodel].key = it.score;
            model[nmodel++].ref = ref;
            model_sort();
            check(db, "insert");
        } else if (op < 75 && nmodel > 0) {
            size_t k = (size_t)rnd(nmodel);
            if (tb_c_delete(db, model[k].ref) != P2_OK) FAIL("delete: %s", tb_errmsg(db));
            model[k] = model[--nmodel];
            model_sort();
            check(db, "delete");
        } else if (op < 92 && nmodel > 0) {
            size_t k = (size_t)rnd(nmodel);
            ref = model[k].ref;
            if (tb_c_get(db, ref, &it) != P2_OK) FAIL("get");
            it.score = (int64_t)rnd(50);
            if (tb_c_update(db, &ref, &it) != P2_OK) FAIL("update: %s", tb_errmsg(db));
            model[k].key = it.score;
            model[k].ref = ref;
            model_sort();
            check(db, "update");
        } else if (nmodel > 0) {
            /* delete every element of a key range through a cursor */
            tb_r_cursor cur;
            int64_t lo = (int64_t)rnd(50);
            int rc;
            if (tb_r_open(db, &cur, lo, lo + 3) != P2_OK) FAIL("cursor open");
            while ((rc = tb_r_next(&cur)) == P2_OK) {
                ref = tb_r_ref(&cur);
                if (tb_r_delete(&cur) != P2_OK) FAIL("cursor delete");
                size_t k = model_find(ref);
                model[k] = model[--nmodel];
            }
            if (rc != P2_END) FAIL("cursor next: %d", rc);
            tb_r_close(&cur);
            model_sort();
            check(db, "cursor delete");
        }
    }
    /* empty it completely: the tree shrinks to nothing */
    while (nmodel > 0) {
        if (tb_c_delete(db, model[nmodel - 1].ref) != P2_OK) FAIL("final delete");
        nmodel--;
        check(db, "final delete");
    }
    if (tb_close(db) != P2_OK) FAIL("close");
    printf("ok %ld\n", steps);
    return 0;
}
