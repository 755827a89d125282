/* Driver of tests/runtime/test_alloc_policy.py: random allocations, frees and reallocations of a
 * file's allocator through the public API a spec generates (texts of any length, malloc
 * elements, refarray vectors of a many-to-many relationship). Compiled against the spec
 * named by PFX (its header HEADER) with -Wall -Wextra -Werror and the sanitizers.
 *
 * Commands, one a line on stdin; every one prints "ok" or "err CODE message":
 *   open DIR | close | verify
 *   ins ID K LEN SEED    insert note ID with a body of LEN bytes made from SEED
 *   set ID LEN SEED      replace note ID's body (the text's block is reallocated)
 *   del ID               delete note ID (its body and tag vector are freed)
 *   tag ID N | untag ID N  add (inserting tag N if absent) or remove a tag of note ID
 *   dump                 "note ID K LEN BODY TAGS..." for every note, then "end"
 *   sync | crash         sync the files; exit at once, nothing closed (as kill -9)
 * With TXN defined (a journalled file) open begins a transaction and close commits it.
 * With P2_WRITE_AUDIT (an audit build, p2_runtime.h) every byte a command changed in the
 * file must have been announced: the driver stops with status 3 where one was not. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include HEADER

#define CAT2(a, b) a##_##b
#define CAT(a, b) CAT2(a, b)
#define F(x) CAT(PFX, x)

static F(db) *db;

static void body_of(char *buf, uint64_t len, uint64_t seed)
{
    for (uint64_t i = 0; i < len; i++)
        buf[i] = (char)('a' + (seed * 7 + i * 13 + i / 5) % 26);
}

static int fail(int rc)
{
    printf("err %d %s\n", rc, db ? F(errmsg)(db) : "no handle");
    return rc;
}

static int find(uint32_t id, F(ref) *ref)
{
    int rc = F(notes_find_id)(db, id, ref);
    if (rc != P2_OK)
        fail(rc);
    return rc;
}

static int tag_ref(uint32_t n, F(ref) *ref, int make)
{
    int rc = F(tags_find_n)(db, n, ref);
    if (rc == P2_NOTFOUND && make) {
        F(tag) t;
        memset(&t, 0, sizeof t);
        t.n = n;
        rc = F(tags_insert)(db, &t, ref);
    }
    return rc;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static void dump(void)
{
    F(notes_all_cursor) cur;
    int rc = F(notes_all_open)(db, &cur);
    if (rc != P2_OK) {
        fail(rc);
        return;
    }
    while ((rc = F(notes_all_next)(&cur)) == P2_OK) {
        const F(note) *n = F(notes_all_get)(&cur);
        F(ref) ref = F(notes_all_ref)(&cur);
        const char *data = NULL;
        uint64_t len = 0;
        if ((rc = F(notes_get_body)(db, ref, &data, &len)) != P2_OK)
            break;
        printf("note %" PRIu32 " %" PRId32 " %" PRIu64 " %.*s", n->id, n->k, len, (int)len, len ? data : "");
        F(notes_tags_iter) it;
        uint32_t tags[4096];
        size_t nt = 0;
        F(ref) t;
        if ((rc = F(notes_tags_open)(db, &it, ref)) != P2_OK)
            break;
        while (F(notes_tags_next)(&it, &t) == P2_OK && nt < 4096)
            tags[nt++] = F(tags_at)(db, t)->n;
        qsort(tags, nt, sizeof *tags, cmp_u32);
        for (size_t i = 0; i < nt; i++)
            printf(" %" PRIu32, tags[i]);
        printf("\n");
    }
    F(notes_all_close)(&cur);
    if (rc != P2_END)
        fail(rc);
    else
        printf("end\n");
}

int main(void)
{
    static char line[1 << 16];
    static char buf[1 << 16];
    while (fgets(line, sizeof line, stdin)) {
        char cmd[16], arg[4096];
        unsigned long long a = 0, b = 0, c = 0, d = 0;
        int rc = P2_OK;
        F(ref) ref;
        if (sscanf(line, "%15s", cmd) != 1)
            continue;
        if (!strcmp(cmd, "open") && sscanf(line, "%*s %4095s", arg) == 1) {
            rc = F(open)(&db, arg);
#ifdef TXN
            if (rc == P2_OK)
                rc = F(begin)(db);
#endif
            if (rc != P2_OK) {
                fail(rc);
                F(close)(db);
                db = NULL;
                continue;
            }
        } else if (!strcmp(cmd, "close")) {
#ifdef TXN
            if ((rc = F(commit)(db)) != P2_OK) {
                fail(rc);
                continue;
            }
#endif
            rc = F(close)(db);
            db = NULL;
            if (rc != P2_OK) {
                printf("err %d close\n", rc);
                continue;
            }
        } else if (!strcmp(cmd, "verify")) {
            uint64_t problems = 0;
            rc = F(verify)(db, buf, sizeof buf, &problems);
            if (rc != P2_OK) {
                printf("err %d %" PRIu64 " problems: %s\n", rc, problems, buf);
                continue;
            }
        } else if (!strcmp(cmd, "ins") && sscanf(line, "%*s %llu %llu %llu %llu", &a, &b, &c, &d) == 4) {
            F(note) n;
            memset(&n, 0, sizeof n);
            n.id = (uint32_t)a;
            n.k = (int32_t)b;
            if ((rc = F(notes_insert)(db, &n, &ref)) == P2_OK && c > 0) {
                body_of(buf, c, d);
                rc = F(notes_set_body)(db, ref, buf, c);
            }
        } else if (!strcmp(cmd, "set") && sscanf(line, "%*s %llu %llu %llu", &a, &b, &c) == 3) {
            if (find((uint32_t)a, &ref) != P2_OK)
                continue;
            body_of(buf, b, c);
            rc = F(notes_set_body)(db, ref, buf, b);
        } else if (!strcmp(cmd, "del") && sscanf(line, "%*s %llu", &a) == 1) {
            if (find((uint32_t)a, &ref) != P2_OK)
                continue;
            rc = F(notes_delete)(db, ref);
        } else if ((!strcmp(cmd, "tag") || !strcmp(cmd, "untag"))
                   && sscanf(line, "%*s %llu %llu", &a, &b) == 2) {
            F(ref) t;
            int add = !strcmp(cmd, "tag");
            if (find((uint32_t)a, &ref) != P2_OK)
                continue;
            if ((rc = tag_ref((uint32_t)b, &t, add)) == P2_OK)
                rc = add ? F(notes_tags_add)(db, ref, t) : F(notes_tags_remove)(db, ref, t);
        } else if (!strcmp(cmd, "sync")) {
            rc = F(sync)(db);
        } else if (!strcmp(cmd, "crash")) {
            fflush(stdout);
            _Exit(0);
        } else if (!strcmp(cmd, "dump")) {
            dump();
            continue;
        } else {
            printf("bad command: %s", line);
            return 2;
        }
        if (rc != P2_OK)
            fail(rc);
        else
            printf("ok\n");
#ifdef P2_WRITE_AUDIT
        if (fflush(stdout) != 0 || p2_write_audit_check(line) != 0)
            return 3;
#endif
    }
    if (db != NULL)
        F(close)(db);
    return 0;
}
