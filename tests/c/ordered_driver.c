/* ordered_driver.c: a command interpreter over an ordered role (users.posts, `order by time`)
 * and its merge, for tests/layers/test_ordered_roles.py. Built with -DPREFIX=<spec prefix>,
 * -DHEADER="<prefix>.h" and -DKT=<the time field's C type>. One command a line, one answer a
 * line:
 *   u UID                  insert user UID                     -> rc
 *   p PID UID TIME         insert post PID (author UID, or -)  -> rc
 *   t PID TIME             set_time                            -> rc
 *   U PID TIME             update (the whole record)           -> rc
 *   a PID UID              set_author (UID - clears)           -> rc
 *   r UID PID              users.posts_remove                  -> rc
 *   d PID                  delete post                         -> rc
 *   D UID                  delete user                         -> rc
 *   w UID REV LO HI        walk (LO, HI: a number or -)        -> post ids
 *   W UID REV LO HI        the same walk through _next_rec     -> post ids
 *   f REV LO HI K UID...   _top, k members of the merge        -> post ids
 *   m REV LO HI UID...     _merge_next to the end              -> post ids
 *   c UID                  users.posts_count                   -> n
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include HEADER

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define F(name) CAT(PREFIX, name)
typedef F(_ref) ref_t;

static ref_t user(F(_db) *db, unsigned id)
{
    ref_t r;
    return F(_users_find_id)(db, id, &r) == P2_OK ? r : (ref_t)-2;   /* no element (not NOREF) */
}

static ref_t post(F(_db) *db, unsigned id)
{
    ref_t r;
    return F(_posts_find_id)(db, id, &r) == P2_OK ? r : (ref_t)-1;
}

/* "-" or a number: a bound */
static const KT *bound(const char *s, KT *v)
{
    if (!s || strcmp(s, "-") == 0) return NULL;
    *v = (KT)strtod(s, NULL);
    return v;
}

static void ids(F(_db) *db, const ref_t *refs, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) printf("%s%u", i ? " " : "", (unsigned)F(_posts_at)(db, refs[i])->id);
    printf("\n");
}

int main(void)
{
    F(_db) *db;
    char line[4096];
    if (F(_open)(&db, ".") != P2_OK) return 2;
    while (fgets(line, sizeof line, stdin)) {
        char *tok[600];
        int nt = 0;
        for (char *s = strtok(line, " \n"); s && nt < 600; s = strtok(NULL, " \n")) tok[nt++] = s;
        if (nt == 0) continue;
        char c = tok[0][0];
        if (c == 'u') {
            F(_user) u = { .id = (uint32_t)atoi(tok[1]) };
            printf("%d\n", F(_users_insert)(db, &u, NULL));
        } else if (c == 'p') {
            F(_post) p = { .id = (uint32_t)atoi(tok[1]), .time = (KT)strtod(tok[3], NULL) };
            ref_t r;
            int rc = F(_posts_insert)(db, &p, &r);
            if (rc == P2_OK && strcmp(tok[2], "-") != 0) rc = F(_posts_set_author)(db, r, user(db, (unsigned)atoi(tok[2])));
            printf("%d\n", rc);
        } else if (c == 't') {
            printf("%d\n", F(_posts_set_time)(db, post(db, (unsigned)atoi(tok[1])), (KT)strtod(tok[2], NULL)));
        } else if (c == 'U') {
            ref_t r = post(db, (unsigned)atoi(tok[1]));
            F(_post) p = *F(_posts_at)(db, r);
            p.time = (KT)strtod(tok[2], NULL);
            p.likes++;
            printf("%d\n", F(_posts_update)(db, &r, &p));
        } else if (c == 'a') {
            ref_t u = strcmp(tok[2], "-") == 0 ? (ref_t)UINT64_MAX : user(db, (unsigned)atoi(tok[2]));
            printf("%d\n", F(_posts_set_author)(db, post(db, (unsigned)atoi(tok[1])), u));
        } else if (c == 'r') {
            printf("%d\n", F(_users_posts_remove)(db, user(db, (unsigned)atoi(tok[1])), post(db, (unsigned)atoi(tok[2]))));
        } else if (c == 'd') {
            printf("%d\n", F(_posts_delete)(db, post(db, (unsigned)atoi(tok[1]))));
        } else if (c == 'D') {
            printf("%d\n", F(_users_delete)(db, user(db, (unsigned)atoi(tok[1]))));
        } else if (c == 'w' || c == 'W') {
            KT lo, hi;
            F(_users_posts_iter) it;
            ref_t refs[512], y;
            uint64_t n = 0;
            int rc = F(_users_posts_open_range)(db, &it, user(db, (unsigned)atoi(tok[1])), atoi(tok[2]),
                                                bound(tok[3], &lo), bound(tok[4], &hi));
            if (rc != P2_OK) { printf("rc %d\n", rc); continue; }
            if (c == 'w') {
                while (n < 512 && F(_users_posts_next)(&it, &y) == P2_OK) refs[n++] = y;
            } else {
                while (n < 512 && F(_users_posts_next_rec)(&it, &y)) refs[n++] = y;
            }
            ids(db, refs, n);
        } else if (c == 'f' || c == 'm') {
            KT lo, hi;
            int base = c == 'f' ? 5 : 4;
            ref_t owners[512], refs[512], y;
            F(_post) recs[512];
            uint64_t n = 0, got = 0;
            for (int i = base; i < nt; i++) owners[n++] = user(db, (unsigned)atoi(tok[i]));
            if (c == 'f') {
                int rc = F(_users_posts_top)(db, owners, n, atoi(tok[1]), bound(tok[2], &lo), bound(tok[3], &hi),
                                             (uint64_t)atoi(tok[4]), refs, recs, &got);
                if (rc != P2_OK) { printf("rc %d\n", rc); continue; }
                for (uint64_t i = 0; i < got; i++)
                    if (recs[i].id != F(_posts_at)(db, refs[i])->id) { printf("record mismatch\n"); return 3; }
            } else {
                F(_users_posts_merge) m;
                int rc = F(_users_posts_merge_open)(db, &m, owners, n, atoi(tok[1]), bound(tok[2], &lo), bound(tok[3], &hi));
                if (rc != P2_OK) { printf("rc %d\n", rc); continue; }
                while (got < 512 && (got % 2 ? F(_users_posts_merge_next_rec)(&m, &y) != NULL
                                              : F(_users_posts_merge_next)(&m, &y) == P2_OK)) refs[got++] = y;
                F(_users_posts_merge_close)(&m);
                F(_users_posts_merge_close)(&m);   /* safe twice */
            }
            ids(db, refs, got);
        } else if (c == 'c') {
            printf("%llu\n", (unsigned long long)F(_users_posts_count)(db, user(db, (unsigned)atoi(tok[1]))));
        }
        fflush(stdout);
    }
    return F(_close)(db) == P2_OK ? 0 : 1;
}
