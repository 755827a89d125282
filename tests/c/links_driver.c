/* links_driver.c -- a line-oriented command interpreter over the API generated from
 * tests/specs/links_{transient,persistent}.p2 (relationships, `text` and `ref` fields),
 * driven by tests/layers/test_links.py, which checks every answer against a Python model.
 *
 * Build (one binary per spec):
 *   cc -std=c11 -DPREFIX=links_transient -DHEADER='"links_transient.h"' -I<gen> \
 *      links_driver.c <gen>/links_transient.c <gen>/p2_runtime.c
 * Run: links_driver DIR < commands   (DIR: where persistent files live)
 *
 * References are printed in decimal, REF_NONE as "N"; "N" is read as REF_NONE. Every
 * command prints exactly one line, except `dump`, which prints one line per element and
 * then "end". A return code is printed as "rc <n>" (P2_OK = 0, P2_NOTFOUND = 2, ...).
 *
 *   ins comps ID ROOT | ins atoms ID X | ins conns LEN   -> "ok REF" or "rc N"
 *   del C REF                  delete                      -> rc
 *   cdel C REF                 delete through the _all cursor (walk to REF)  -> rc
 *   upd comps REF ID ROOT | upd atoms REF ID X | upd conns REF LEN  -> rc
 *                              (comps: the record carries a bogus doc handle)
 *   cupd comps REF ID ROOT     update through the _all cursor (bogus doc handle) -> rc
 *   setid comps|atoms REF V | setx atoms REF V | setlen conns REF V  -> rc
 *   setroot REF VAL            comps_set_root              -> rc
 *   settext REF LEN SEED       comps_set_doc with text(LEN, SEED)  -> rc
 *   settextnull REF            comps_set_doc(db, ref, NULL, 0)  -> rc
 *   gettext REF                -> "rc N LEN HASH" (HASH: FNV-1a 64, hex; "nonul" if the
 *                                 text is not followed by a NUL)
 *   gettexthex REF             -> "rc N LEN HEX"
 *   add C ROLE OWNER MEMBER | rem C ROLE OWNER MEMBER     (many-roles)  -> rc
 *   set C ROLE REF PARTNER     (one-roles)                 -> rc
 *   one C ROLE REF             (one-roles)                 -> "ref R"
 *   many C ROLE OWNER          (many-roles) -> "rc N n=COUNT [a,b,...]"
 *   walkdel C ROLE OWNER       walk the role, deleting every member as it is handed out
 *                              -> "rc N [members walked]"
 *   count C                    -> "n COUNT"
 *   dump                       every live element of every container, then "end":
 *     comps REF id=I root=R doc=LEN:HASH parts=[..] users=[..] used_by=[..] twin=R
 *     atoms REF id=I x=X part_of=R to=[..] from=[..] twin_of=R kids=[..] parent=R
 *     conns REF len=L from=R to=R
 *   reopen                     close and open again        -> rc
 *   leak                       leak 24 bytes on purpose (proves LeakSanitizer is on) -> "leaked"
 *
 * Text content text(LEN, SEED): byte i is 'a' + (SEED + 7i + i*i) % 26 for even SEED,
 * (SEED * 131 + 17i + (i >> 3)) & 0xff for odd SEED (binary, NULs included).
 */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef PREFIX
#error "compile with -DPREFIX=<spec prefix> -DHEADER='\"<prefix>.h\"'"
#endif
#include HEADER

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define P(name) CAT(PREFIX, _##name)

typedef P(db) db_t;
/* each container's record (a role's _next_rec hands its partner's out) */
typedef P(comp) comps_rec_t;
typedef P(atom) atoms_rec_t;
typedef P(conn) conns_rec_t;
#define REF_NONE UINT64_MAX

static db_t *db;
static const char *dir;
volatile uintptr_t leak_sink;   /* for the `leak` command */

/* ---------------------------------------------------------------- helpers */
static uint64_t parse_ref(const char *s)
{
    if (!s) return REF_NONE - 1;
    if (strcmp(s, "N") == 0) return REF_NONE;
    return strtoull(s, NULL, 10);
}

static int32_t parse_i32(const char *s)
{
    return s ? (int32_t)strtol(s, NULL, 10) : 0;
}

static void put_ref(uint64_t r)
{
    if (r == REF_NONE) fputs("N", stdout);
    else printf("%" PRIu64, r);
}

static uint64_t fnv(const unsigned char *p, uint64_t n)
{
    uint64_t h = 1469598103934665603ull;
    uint64_t i;
    for (i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

static unsigned char *make_text(uint64_t len, uint64_t seed)
{
    unsigned char *b = malloc(len ? len : 1);
    uint64_t i;
    if (!b) abort();
    for (i = 0; i < len; i++)
        b[i] = (seed % 2 == 0) ? (unsigned char)('a' + (seed + 7 * i + i * i) % 26)
                               : (unsigned char)((seed * 131 + 17 * i + (i >> 3)) & 0xff);
    return b;
}

/* A list of references (a role's contents). */
typedef struct {
    uint64_t *v;
    size_t n, cap;
} refs_t;

static void refs_push(refs_t *l, uint64_t r)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 8;
        l->v = realloc(l->v, l->cap * sizeof *l->v);
        if (!l->v) abort();
    }
    l->v[l->n++] = r;
}

static void refs_print(const refs_t *l)
{
    size_t i;
    putchar('[');
    for (i = 0; i < l->n; i++) {
        if (i) putchar(',');
        put_ref(l->v[i]);
    }
    putchar(']');
}

/* ---------------------------------------------------------------- roles */
typedef struct {
    const char *cont, *name;
    int many;
    /* many-roles */
    int (*add)(db_t *, uint64_t, uint64_t);
    int (*remove)(db_t *, uint64_t, uint64_t);
    uint64_t (*count)(db_t *, uint64_t);
    int (*list)(uint64_t, refs_t *);       /* open + next until P2_END; the open's rc */
    int (*walkdel)(uint64_t, refs_t *);    /* the same, deleting each member handed out */
    /* one-roles */
    uint64_t (*get)(db_t *, uint64_t);
    int (*set)(db_t *, uint64_t, uint64_t);
} role_t;

#define MANY(C, R, PC)                                                                \
    static int list_##C##_##R(uint64_t owner, refs_t *out)                            \
    {                                                                                 \
        P(C##_##R##_iter) it;                                                         \
        P(ref) r;                                                                     \
        int rc = P(C##_##R##_open)(db, &it, owner), n;                                \
        if (rc != P2_OK) return rc;                                                   \
        while ((n = P(C##_##R##_next)(&it, &r)) == P2_OK) refs_push(out, r);          \
        if (n != P2_END) return 100 + n;                                              \
        if (P(C##_##R##_next)(&it, &r) != P2_END) return 200;                         \
        /* _next_rec: the same members, each with the record _at gives for it */      \
        if ((rc = P(C##_##R##_open)(db, &it, owner)) != P2_OK) return 500 + rc;       \
        for (size_t i = 0;; i++) {                                                    \
            const PC##_rec_t *x = P(C##_##R##_next_rec)(&it, &r);                      \
            if (!x) { if (i != out->n) return 400; break; }                           \
            if (i >= out->n || r != out->v[i] || x != P(PC##_at)(db, r)) return 401;  \
        }                                                                             \
        if (P(C##_##R##_next_rec)(&it, &r) != NULL) return 402;                       \
        return P2_OK;                                                                 \
    }                                                                                 \
    static int walkdel_##C##_##R(uint64_t owner, refs_t *out)                         \
    {                                                                                 \
        P(C##_##R##_iter) it;                                                         \
        P(ref) r;                                                                     \
        int rc = P(C##_##R##_open)(db, &it, owner), n;                                \
        if (rc != P2_OK) return rc;                                                   \
        while ((n = P(C##_##R##_next)(&it, &r)) == P2_OK) {                           \
            refs_push(out, r);                                                        \
            if ((rc = P(PC##_delete)(db, r)) != P2_OK) return 300 + rc;               \
        }                                                                             \
        return n == P2_END ? P2_OK : 100 + n;                                         \
    }
#define MANY_ROW(C, R) \
    { #C, #R, 1, P(C##_##R##_add), P(C##_##R##_remove), P(C##_##R##_count), list_##C##_##R, \
      walkdel_##C##_##R, NULL, NULL }
#define ONE_ROW(C, R) { #C, #R, 0, NULL, NULL, NULL, NULL, NULL, P(C##_##R), P(C##_set_##R) }

MANY(comps, parts, atoms)
MANY(comps, users, comps)
MANY(comps, used_by, comps)
MANY(atoms, to, conns)
MANY(atoms, from, conns)
MANY(atoms, kids, atoms)

/* in dump order, per container */
static const role_t roles[] = {
    MANY_ROW(comps, parts), MANY_ROW(comps, users), MANY_ROW(comps, used_by),
    ONE_ROW(comps, twin),
    ONE_ROW(atoms, part_of), MANY_ROW(atoms, to), MANY_ROW(atoms, from),
    ONE_ROW(atoms, twin_of), MANY_ROW(atoms, kids), ONE_ROW(atoms, parent),
    ONE_ROW(conns, from), ONE_ROW(conns, to),
};
#define NROLES (sizeof roles / sizeof roles[0])

static const role_t *find_role(const char *cont, const char *name)
{
    size_t i;
    if (!cont || !name) return NULL;
    for (i = 0; i < NROLES; i++)
        if (strcmp(roles[i].cont, cont) == 0 && strcmp(roles[i].name, name) == 0) return &roles[i];
    return NULL;
}

/* " name=[..]" or " name=R"; with the count checked against the walk. */
static void print_roles(const char *cont, uint64_t ref)
{
    size_t i;
    for (i = 0; i < NROLES; i++) {
        const role_t *r = &roles[i];
        if (strcmp(r->cont, cont) != 0) continue;
        printf(" %s=", r->name);
        if (r->many) {
            refs_t l = {0};
            int rc = r->list(ref, &l);
            if (rc != P2_OK) printf("ERR%d", rc);
            refs_print(&l);
            if (r->count(db, ref) != l.n) printf("!count=%" PRIu64, r->count(db, ref));
            free(l.v);
        } else {
            put_ref(r->get(db, ref));
        }
    }
}

static void print_doc(uint64_t ref)
{
    const char *data = NULL;
    uint64_t len = 0;
    int rc = P(comps_get_doc)(db, ref, &data, &len);
    if (rc != P2_OK) {
        printf(" doc=ERR%d", rc);
        return;
    }
    printf(" doc=%" PRIu64 ":%016" PRIx64, len, fnv((const unsigned char *)data, len));
    if (data[len] != 0) fputs("!nonul", stdout);
}

static void dump(void)
{
    uint64_t n;
    {
        P(comps_all_cursor) k;
        n = 0;
        P(comps_all_open)(db, &k);
        while (P(comps_all_next)(&k) == P2_OK) {
            const P(comp) *c = P(comps_all_get)(&k);
            uint64_t ref = P(comps_all_ref)(&k);
            P(comp) copy;
            n++;
            printf("comps %" PRIu64 " id=%" PRId32 " root=", ref, c->id);
            put_ref(c->root);
            print_doc(ref);
            print_roles("comps", ref);
            if (P(comps_get)(db, ref, &copy) != P2_OK || copy.id != c->id || copy.root != c->root)
                fputs(" !get", stdout);
            putchar('\n');
        }
        if (n != P(comps_count)(db)) printf("!count comps %" PRIu64 "\n", P(comps_count)(db));
    }
    {
        P(atoms_all_cursor) k;
        n = 0;
        P(atoms_all_open)(db, &k);
        while (P(atoms_all_next)(&k) == P2_OK) {
            const P(atom) *a = P(atoms_all_get)(&k);
            uint64_t ref = P(atoms_all_ref)(&k);
            n++;
            printf("atoms %" PRIu64 " id=%" PRId32 " x=%" PRId32, ref, a->id, a->x);
            print_roles("atoms", ref);
            putchar('\n');
        }
        if (n != P(atoms_count)(db)) printf("!count atoms %" PRIu64 "\n", P(atoms_count)(db));
    }
    {
        P(conns_all_cursor) k;
        n = 0;
        P(conns_all_open)(db, &k);
        while (P(conns_all_next)(&k) == P2_OK) {
            const P(conn) *c = P(conns_all_get)(&k);
            uint64_t ref = P(conns_all_ref)(&k);
            n++;
            printf("conns %" PRIu64 " len=%" PRId32, ref, c->len);
            print_roles("conns", ref);
            putchar('\n');
        }
        if (n != P(conns_count)(db)) printf("!count conns %" PRIu64 "\n", P(conns_count)(db));
    }
    puts("end");
}

/* A record whose doc handle is garbage: inserts and updates must ignore it. */
static P(comp) comp_rec(const char *id, const char *root)
{
    P(comp) c;
    memset(&c, 0, sizeof c);
    c.id = parse_i32(id);
    c.root = parse_ref(root);
    c.doc.mref = 0xdeadbeef0ull;
    c.doc.len = 12345;
    return c;
}

/* Walk C's _all cursor to `ref`; then delete (or update) it through the cursor. */
#define CURSOR_ON(C, ref, body)                                                       \
    do {                                                                              \
        P(C##_all_cursor) k;                                                          \
        int rc_ = P(C##_all_open)(db, &k), found_ = 0;                                \
        if (rc_ != P2_OK) { printf("rc %d\n", rc_); break; }                          \
        while (P(C##_all_next)(&k) == P2_OK)                                          \
            if (P(C##_all_ref)(&k) == (ref)) { found_ = 1; break; }                   \
        if (!found_) { puts("rc 2"); break; }                                         \
        body;                                                                         \
        P(C##_all_close)(&k);   /* the walk stops here: free what it may remember */  \
    } while (0)

static void do_open(void)
{
    int rc = P(open)(&db, dir);
    if (rc != P2_OK) {
        fprintf(stderr, "open: %s\n", db ? P(errmsg)(db) : "out of memory");
        P(close)(db);
        exit(3);
    }
}

#ifdef P2_WRITE_AUDIT
/* Write audit (p2_runtime.h): before each command, every byte the previous one changed in
 * the file must have been announced. */
static char audit_cmd[4096];
static void audit(void)
{
    if (audit_cmd[0] && p2_write_audit_check(audit_cmd) != 0) {
        fflush(stdout);
        exit(3);
    }
}
#endif

/* ---------------------------------------------------------------- main */
int main(int argc, char **argv)
{
    char line[4096];
    dir = argc > 1 ? argv[1] : ".";
    setvbuf(stdout, NULL, _IOLBF, 0);
    do_open();
    while (fgets(line, sizeof line, stdin)) {
#ifdef P2_WRITE_AUDIT
        audit();
        snprintf(audit_cmd, sizeof audit_cmd, "%s", line);
        audit_cmd[strcspn(audit_cmd, "\n")] = 0;
#endif
        char *t[8] = {0};
        int nt = 0;
        char *save = NULL, *tok;
        for (tok = strtok_r(line, " \t\r\n", &save); tok && nt < 8; tok = strtok_r(NULL, " \t\r\n", &save))
            t[nt++] = tok;
        if (nt == 0) continue;
        const char *cmd = t[0];
        if (strcmp(cmd, "ins") == 0 && nt >= 3) {
            P(ref) r = REF_NONE;
            int rc;
            if (strcmp(t[1], "comps") == 0) {
                P(comp) c = comp_rec(t[2], t[3]);
                rc = P(comps_insert)(db, &c, &r);
            } else if (strcmp(t[1], "atoms") == 0) {
                P(atom) a = {parse_i32(t[2]), parse_i32(t[3])};
                rc = P(atoms_insert)(db, &a, &r);
            } else {
                P(conn) c = {parse_i32(t[2])};
                rc = P(conns_insert)(db, &c, &r);
            }
            if (rc == P2_OK) printf("ok %" PRIu64 "\n", r);
            else printf("rc %d\n", rc);
        } else if (strcmp(cmd, "del") == 0 && nt >= 3) {
            uint64_t r = parse_ref(t[2]);
            int rc = strcmp(t[1], "comps") == 0 ? P(comps_delete)(db, r)
                   : strcmp(t[1], "atoms") == 0 ? P(atoms_delete)(db, r) : P(conns_delete)(db, r);
            printf("rc %d\n", rc);
        } else if (strcmp(cmd, "cdel") == 0 && nt >= 3) {
            uint64_t r = parse_ref(t[2]);
            if (strcmp(t[1], "comps") == 0) CURSOR_ON(comps, r, printf("rc %d\n", P(comps_all_delete)(&k)));
            else if (strcmp(t[1], "atoms") == 0) CURSOR_ON(atoms, r, printf("rc %d\n", P(atoms_all_delete)(&k)));
            else CURSOR_ON(conns, r, printf("rc %d\n", P(conns_all_delete)(&k)));
        } else if (strcmp(cmd, "upd") == 0 && nt >= 4) {
            P(ref) r = parse_ref(t[2]);
            int rc;
            if (strcmp(t[1], "comps") == 0) {
                P(comp) c = comp_rec(t[3], t[4]);
                rc = P(comps_update)(db, &r, &c);
            } else if (strcmp(t[1], "atoms") == 0) {
                P(atom) a = {parse_i32(t[3]), parse_i32(t[4])};
                rc = P(atoms_update)(db, &r, &a);
            } else {
                P(conn) c = {parse_i32(t[3])};
                rc = P(conns_update)(db, &r, &c);
            }
            if (rc == P2_OK && r != parse_ref(t[2])) printf("moved %" PRIu64 "\n", r);
            else printf("rc %d\n", rc);
        } else if (strcmp(cmd, "cupd") == 0 && nt >= 5) {
            P(comp) c = comp_rec(t[3], t[4]);
            CURSOR_ON(comps, parse_ref(t[2]), printf("rc %d\n", P(comps_all_update)(&k, &c)));
        } else if (strcmp(cmd, "setid") == 0 && nt >= 4) {
            int rc = strcmp(t[1], "comps") == 0 ? P(comps_set_id)(db, parse_ref(t[2]), parse_i32(t[3]))
                                                : P(atoms_set_id)(db, parse_ref(t[2]), parse_i32(t[3]));
            printf("rc %d\n", rc);
        } else if (strcmp(cmd, "setx") == 0 && nt >= 4) {
            printf("rc %d\n", P(atoms_set_x)(db, parse_ref(t[2]), parse_i32(t[3])));
        } else if (strcmp(cmd, "setlen") == 0 && nt >= 4) {
            printf("rc %d\n", P(conns_set_len)(db, parse_ref(t[2]), parse_i32(t[3])));
        } else if (strcmp(cmd, "setroot") == 0 && nt >= 3) {
            printf("rc %d\n", P(comps_set_root)(db, parse_ref(t[1]), parse_ref(t[2])));
        } else if (strcmp(cmd, "settext") == 0 && nt >= 4) {
            uint64_t len = strtoull(t[2], NULL, 10);
            unsigned char *b = make_text(len, strtoull(t[3], NULL, 10));
            printf("rc %d\n", P(comps_set_doc)(db, parse_ref(t[1]), b, len));
            free(b);
        } else if (strcmp(cmd, "settextnull") == 0 && nt >= 2) {
            printf("rc %d\n", P(comps_set_doc)(db, parse_ref(t[1]), NULL, 0));
        } else if ((strcmp(cmd, "gettext") == 0 || strcmp(cmd, "gettexthex") == 0) && nt >= 2) {
            const char *data = NULL;
            uint64_t len = 0, i;
            int rc = P(comps_get_doc)(db, parse_ref(t[1]), &data, &len);
            printf("rc %d", rc);
            if (rc == P2_OK) {
                printf(" %" PRIu64 " ", len);
                if (strcmp(cmd, "gettext") == 0)
                    printf("%016" PRIx64, fnv((const unsigned char *)data, len));
                else
                    for (i = 0; i < len; i++) printf("%02x", (unsigned char)data[i]);
                if (data[len] != 0) fputs(" nonul", stdout);
            }
            putchar('\n');
        } else if ((strcmp(cmd, "add") == 0 || strcmp(cmd, "rem") == 0) && nt >= 5) {
            const role_t *r = find_role(t[1], t[2]);
            if (!r || !r->many) { printf("bad role %s.%s\n", t[1], t[2]); continue; }
            printf("rc %d\n", (cmd[0] == 'a' ? r->add : r->remove)(db, parse_ref(t[3]), parse_ref(t[4])));
        } else if (strcmp(cmd, "set") == 0 && nt >= 5) {
            const role_t *r = find_role(t[1], t[2]);
            if (!r || r->many) { printf("bad role %s.%s\n", t[1], t[2]); continue; }
            printf("rc %d\n", r->set(db, parse_ref(t[3]), parse_ref(t[4])));
        } else if (strcmp(cmd, "one") == 0 && nt >= 4) {
            const role_t *r = find_role(t[1], t[2]);
            if (!r || r->many) { printf("bad role %s.%s\n", t[1], t[2]); continue; }
            fputs("ref ", stdout);
            put_ref(r->get(db, parse_ref(t[3])));
            putchar('\n');
        } else if (strcmp(cmd, "many") == 0 && nt >= 4) {
            const role_t *r = find_role(t[1], t[2]);
            refs_t l = {0};
            int rc;
            if (!r || !r->many) { printf("bad role %s.%s\n", t[1], t[2]); continue; }
            rc = r->list(parse_ref(t[3]), &l);
            printf("rc %d n=%" PRIu64 " ", rc, r->count(db, parse_ref(t[3])));
            refs_print(&l);
            putchar('\n');
            free(l.v);
        } else if (strcmp(cmd, "walkdel") == 0 && nt >= 4) {
            const role_t *r = find_role(t[1], t[2]);
            refs_t l = {0};
            int rc;
            if (!r || !r->many) { printf("bad role %s.%s\n", t[1], t[2]); continue; }
            rc = r->walkdel(parse_ref(t[3]), &l);
            printf("rc %d ", rc);
            refs_print(&l);
            putchar('\n');
            free(l.v);
        } else if (strcmp(cmd, "count") == 0 && nt >= 2) {
            uint64_t n = strcmp(t[1], "comps") == 0 ? P(comps_count)(db)
                       : strcmp(t[1], "atoms") == 0 ? P(atoms_count)(db) : P(conns_count)(db);
            printf("n %" PRIu64 "\n", n);
        } else if (strcmp(cmd, "dump") == 0) {
            dump();
        } else if (strcmp(cmd, "reopen") == 0) {
            int rc = P(close)(db);
            db = NULL;
            printf("rc %d\n", rc);
            do_open();
        } else if (strcmp(cmd, "leak") == 0) {
            leak_sink = ~(uintptr_t)malloc(24);   /* hidden from LeakSanitizer's scan */
            puts("leaked");
        } else {
            printf("bad command %s\n", cmd);
        }
    }
#ifdef P2_WRITE_AUDIT
    audit();
#endif
    return P(close)(db) == P2_OK ? 0 : 4;
}
