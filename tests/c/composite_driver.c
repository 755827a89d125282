/* Composite keys and upsert through the public API (tests/layers/test_composite_keys.py): reads
   one command a line on stdin, runs it on the spec ck.p2 (containers lats and invs, whose
   equations key elements by composite keys) and prints one line of results per command,
   which the test compares with its Python model. After every command that changes
   something, the integrity check runs (ck_verify) and a problem stops the driver.

     u MAT KIND STEP TAG   upsert into lats           -> "rc inserted"
     i MAT KIND STEP TAG   insert into lats           -> "rc"
     f MAT KIND            find lats by (mat, kind)   -> "rc step tag" or "rc"
     g TAG STEP            lookup lats by (tag, step) -> "mat kind" or "none"
     d MAT KIND            delete lats (mat, kind)    -> "rc"
     k MAT KIND NEWKIND    set_kind (a key change)    -> "rc"
     b TAG LO HI           cursor bytag (tag == t, lo <= step <= hi, by step)
     t TAG                 cursor tagafter (tag > t, in (tag, step) order)
     B STEP TAG            cursor bystep (step == s, tag > t, by tag)
     D LO                  cursor stepdesc (step >= lo, by step desc)
     I MAT WHEN STEP STATE insert into invs           -> "rc"
     H MAT                 cursor hist (mat == m, by when)
     R MAT LO HI           cursor histr (mat == m, lo <= when < hi, by when desc)
     Q STATE               cursor queue (state == s, by step)
     A STATE X             cursor queueafter (state == s, step > x)
     s MAT WHEN NEWSTATE   set_state of invs (mat, when) -> "rc"
     O                     close and open again (a file: reopened from disk)
     X                     stop at once without closing (a crash, for recovery)
   A cursor prints its elements on one line, "a,b,c" per element, space separated. TAG
   "-" stands for the empty string. */
#include "ck.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); exit(1); } while (0)

static ck_db *db;

static const char *tagarg(const char *s) { return strcmp(s, "-") == 0 ? "" : s; }

/* a char[N] field printed as a string (no terminator when full) */
static void put_tag(const char *t, size_t n)
{
    size_t len = 0;
    while (len < n && t[len]) len++;
    if (len == 0) fputs("-", stdout);
    else fwrite(t, 1, len, stdout);
}

static void check(void)
{
    char report[512];
    uint64_t problems = 0;
    if (ck_verify(db, report, sizeof report, &problems) != P2_OK || problems)
        FAIL("verify: %s", report);
}

static void open_db(void)
{
    if (ck_open(&db, ".") != P2_OK) FAIL("open: %s", db ? ck_errmsg(db) : "?");
}

static void fill_lat(ck_lat *r, unsigned mat, unsigned kind, unsigned step, const char *tag)
{
    memset(r, 0, sizeof *r);
    r->mat = mat;
    r->kind = (uint16_t)kind;
    r->step = step;
    strncpy(r->tag, tag, sizeof r->tag);
}

int main(void)
{
    char line[256], a[64];
    open_db();
    while (fgets(line, sizeof line, stdin)) {
        unsigned x, y, z, w;
        unsigned long long q, lo, hi;
        char op = line[0];
        ck_ref ref;
        int rc, ins;
        ck_lat r;
        switch (op) {
        case 'u':
            if (sscanf(line + 1, "%u %u %u %63s", &x, &y, &z, a) != 4) FAIL("bad: %s", line);
            fill_lat(&r, x, y, z, tagarg(a));
            ins = -1;
            rc = ck_lats_upsert(db, &r, &ref, &ins);
            printf("%d %d\n", rc, rc == P2_OK ? ins : -1);
            if (rc == P2_OK && (ck_lats_at(db, ref) == NULL || ck_lats_at(db, ref)->step != z))
                FAIL("upsert: *out is not the element");
            check();
            break;
        case 'i':
            if (sscanf(line + 1, "%u %u %u %63s", &x, &y, &z, a) != 4) FAIL("bad: %s", line);
            fill_lat(&r, x, y, z, tagarg(a));
            printf("%d\n", ck_lats_insert(db, &r, NULL));
            check();
            break;
        case 'f':
            if (sscanf(line + 1, "%u %u", &x, &y) != 2) FAIL("bad: %s", line);
            rc = ck_lats_find_mat_kind(db, x, (uint16_t)y, &ref);
            printf("%d", rc);
            if (rc == P2_OK) {
                const ck_lat *e = ck_lats_at(db, ref);
                printf(" %u ", e->step);
                put_tag(e->tag, sizeof e->tag);
            }
            putchar('\n');
            break;
        case 'g': {
            const ck_lat *e;
            if (sscanf(line + 1, "%63s %u", a, &x) != 2) FAIL("bad: %s", line);
            e = ck_lats_lookup_tag_step(db, tagarg(a), x, NULL);
            if (e) printf("%u %u\n", e->mat, e->kind);
            else printf("none\n");
            break;
        }
        case 'd':
            if (sscanf(line + 1, "%u %u", &x, &y) != 2) FAIL("bad: %s", line);
            rc = ck_lats_find_mat_kind(db, x, (uint16_t)y, &ref);
            if (rc == P2_OK) rc = ck_lats_delete(db, ref);
            printf("%d\n", rc);
            check();
            break;
        case 'k':
            if (sscanf(line + 1, "%u %u %u", &x, &y, &z) != 3) FAIL("bad: %s", line);
            rc = ck_lats_find_mat_kind(db, x, (uint16_t)y, &ref);
            if (rc == P2_OK) rc = ck_lats_set_kind(db, ref, (uint16_t)z);
            printf("%d\n", rc);
            check();
            break;
        case 'b': {
            ck_bytag_cursor c;
            if (sscanf(line + 1, "%63s %u %u", a, &x, &y) != 3) FAIL("bad: %s", line);
            if (ck_bytag_open(db, &c, tagarg(a), x, y) != P2_OK) FAIL("open bytag");
            while (ck_bytag_next(&c) == P2_OK) {
                const ck_lat *e = ck_bytag_get(&c);
                printf("%u,%u,%u ", e->mat, e->kind, e->step);
            }
            putchar('\n');
            break;
        }
        case 't': {
            ck_tagafter_cursor c;
            if (sscanf(line + 1, "%63s", a) != 1) FAIL("bad: %s", line);
            if (ck_tagafter_open(db, &c, tagarg(a)) != P2_OK) FAIL("open tagafter");
            while (ck_tagafter_next(&c) == P2_OK) {
                const ck_lat *e = ck_tagafter_get(&c);
                put_tag(e->tag, sizeof e->tag);
                printf(",%u,%u,%u ", e->step, e->mat, e->kind);
            }
            putchar('\n');
            break;
        }
        case 'B': {
            ck_bystep_cursor c;
            if (sscanf(line + 1, "%u %63s", &x, a) != 2) FAIL("bad: %s", line);
            if (ck_bystep_open(db, &c, x, tagarg(a)) != P2_OK) FAIL("open bystep");
            while (ck_bystep_next(&c) == P2_OK) {
                const ck_lat *e = ck_bystep_get(&c);
                printf("%u,%u,", e->mat, e->kind);
                put_tag(e->tag, sizeof e->tag);
                putchar(' ');
            }
            putchar('\n');
            break;
        }
        case 'D': {
            ck_stepdesc_cursor c;
            if (sscanf(line + 1, "%u", &x) != 1) FAIL("bad: %s", line);
            if (ck_stepdesc_open(db, &c, x) != P2_OK) FAIL("open stepdesc");
            while (ck_stepdesc_next(&c) == P2_OK) {
                const ck_lat *e = ck_stepdesc_get(&c);
                printf("%u,%u,%u ", e->mat, e->kind, e->step);
            }
            putchar('\n');
            break;
        }
        case 'I': {
            ck_inv v;
            if (sscanf(line + 1, "%u %llu %u %u", &x, &q, &z, &w) != 4) FAIL("bad: %s", line);
            memset(&v, 0, sizeof v);
            v.mat = x; v.when = q; v.step = z; v.state = (uint16_t)w;
            printf("%d\n", ck_invs_insert(db, &v, NULL));
            check();
            break;
        }
        case 'H': {
            ck_hist_cursor c;
            if (sscanf(line + 1, "%u", &x) != 1) FAIL("bad: %s", line);
            if (ck_hist_open(db, &c, x) != P2_OK) FAIL("open hist");
            while (ck_hist_next(&c) == P2_OK)
                printf("%llu,%u ", (unsigned long long)ck_hist_get(&c)->when, ck_hist_get(&c)->step);
            putchar('\n');
            break;
        }
        case 'R': {
            ck_histr_cursor c;
            if (sscanf(line + 1, "%u %llu %llu", &x, &lo, &hi) != 3) FAIL("bad: %s", line);
            if (ck_histr_open(db, &c, x, lo, hi) != P2_OK) FAIL("open histr");
            while (ck_histr_next(&c) == P2_OK)
                printf("%llu,%u ", (unsigned long long)ck_histr_get(&c)->when, ck_histr_get(&c)->step);
            putchar('\n');
            break;
        }
        case 'Q': {
            ck_queue_cursor c;
            if (sscanf(line + 1, "%u", &x) != 1) FAIL("bad: %s", line);
            if (ck_queue_open(db, &c, (uint16_t)x) != P2_OK) FAIL("open queue");
            while (ck_queue_next(&c) == P2_OK)
                printf("%u,%u ", ck_queue_get(&c)->step, ck_queue_get(&c)->mat);
            putchar('\n');
            break;
        }
        case 'A': {
            ck_queueafter_cursor c;
            if (sscanf(line + 1, "%u %u", &x, &y) != 2) FAIL("bad: %s", line);
            if (ck_queueafter_open(db, &c, (uint16_t)x, y) != P2_OK) FAIL("open queueafter");
            while (ck_queueafter_next(&c) == P2_OK)
                printf("%u,%u ", ck_queueafter_get(&c)->step, ck_queueafter_get(&c)->mat);
            putchar('\n');
            break;
        }
        case 's':
            if (sscanf(line + 1, "%u %llu %u", &x, &q, &z) != 3) FAIL("bad: %s", line);
            rc = ck_invs_find_mat_when(db, x, q, &ref);
            if (rc == P2_OK) rc = ck_invs_set_state(db, ref, (uint16_t)z);
            printf("%d\n", rc);
            check();
            break;
        case 'O':
            if (ck_close(db) != P2_OK) FAIL("close");
            open_db();
            check();
            printf("reopened\n");
            break;
        case 'X':
            fflush(stdout);
            _Exit(0);   /* no close: the file stays marked open, as after a crash */
        default:
            FAIL("unknown command: %s", line);
        }
        fflush(stdout);
    }
    if (ck_close(db) != P2_OK) FAIL("close");
    return 0;
}
