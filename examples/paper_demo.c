/* A tour of a generated data manager from C: type_equations/paper.p2, four containers
 * with the four equations of the TPC-B/P2 paper, two of them in one mapped file.
 * Build: p2gen build type_equations/paper.p2 -o generated
 *        cc -std=c11 -Igenerated examples/paper_demo.c generated/libpaper.a -o paper_demo */
#include <stdio.h>
#include <string.h>
#define PAPER_INLINE   /* the API compiled into this file (README: "A spec, built and used") */
#include "paper.h"

#define CHECK(call) do { int rc_ = (call); if (rc_ != P2_OK) { \
    fprintf(stderr, "%s:%d: %s -> %s: %s\n", __FILE__, __LINE__, #call, p2_strerror(rc_), paper_errmsg(db)); \
    return 1; } } while (0)

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : ".";
    paper_db *db;
    if (paper_open(&db, dir) != P2_OK) {
        fprintf(stderr, "open: %s\n", paper_errmsg(db));
        paper_close(db);
        return 1;
    }
    uint64_t before = paper_hash_accounts_count(db);
    for (uint32_t id = 0; id < 1000; id++) {
        paper_account a;
        memset(&a, 0, sizeof a);
        a.id = id;
        a.branch = id % 10;
        a.balance = (int64_t)id * 3;
        snprintf(a.filler, sizeof a.filler, "account %u", id);
        /* persistent containers keep what an earlier run stored; transient ones start empty */
        if (paper_avl_accounts_find_id(db, id, NULL) == P2_NOTFOUND) CHECK(paper_avl_accounts_insert(db, &a, NULL));
        if (paper_qsort_accounts_find_id(db, id, NULL) == P2_NOTFOUND) CHECK(paper_qsort_accounts_insert(db, &a, NULL));
        if (paper_hash_accounts_find_id(db, id, NULL) == P2_NOTFOUND) CHECK(paper_hash_accounts_insert(db, &a, NULL));
        if (paper_iarray_accounts_find_id(db, id, NULL) == P2_NOTFOUND) CHECK(paper_iarray_accounts_insert(db, &a, NULL));
    }
    printf("hash_accounts: %llu elements (had %llu when opened)\n",
           (unsigned long long)paper_hash_accounts_count(db), (unsigned long long)before);

    /* keyed retrieval and in-place update through each equation */
    paper_ref ref;
    CHECK(paper_iarray_accounts_find_id(db, 42, &ref));
    CHECK(paper_iarray_accounts_set_balance(db, ref, paper_iarray_accounts_at(db, ref)->balance + 1));
    printf("iarray_accounts[42].balance = %lld\n", (long long)paper_iarray_accounts_at(db, ref)->balance);
    if (paper_qsort_accounts_find_id(db, 5000, &ref) == P2_NOTFOUND)
        printf("qsort_accounts: %s\n", paper_errmsg(db));

    /* a range cursor in key order through the AVL tree */
    paper_avl_branch_range_cursor r;
    CHECK(paper_avl_branch_range_open(db, &r, 100, 105));
    printf("avl_accounts ids in [100, 105):");
    while (paper_avl_branch_range_next(&r) == P2_OK) printf(" %u", paper_avl_branch_range_get(&r)->id);
    printf("\n");

    /* a qualified cursor through the hash table; deletes while it walks */
    paper_rich_in_branch_cursor k;
    int seen = 0, deleted = 0;
    CHECK(paper_rich_in_branch_open(db, &k, 3, 2900));
    while (paper_rich_in_branch_next(&k) == P2_OK) {
        seen++;
        if (paper_rich_in_branch_get(&k)->id % 2) { CHECK(paper_rich_in_branch_delete(&k)); deleted++; }
    }
    printf("rich_in_branch(b=3, min=2900): %d seen, %d deleted, %llu left\n", seen, deleted,
           (unsigned long long)paper_hash_accounts_count(db));

    /* reading only: _next_rec moves the cursor and hands out the record in one call */
    int again = 0, odd = 0;
    CHECK(paper_rich_in_branch_open(db, &k, 3, 2900));
    for (const paper_account *x; (x = paper_rich_in_branch_next_rec(&k));) {
        again++;
        odd += x->id % 2;
    }
    printf("rich_in_branch(b=3, min=2900) again: %d seen, %d odd\n", again, odd);
    int rc = paper_close(db);
    printf("closed: %s\n", rc == P2_OK ? "ok" : p2_strerror(rc));
    return rc == P2_OK ? 0 : 1;
}
