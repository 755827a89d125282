"""The exact replay of a trace (`p2gen build --trace`, trace.py): C that reads a trace and
makes the same calls, in the same order, with the same arguments, against a spec built with
some prefix, timing each; and its driver (`p2gen replay`, `measure`).

`replay_source(checked, prefix)` gives one candidate's replay function
(`int <prefix>__replay(...)`): several candidates (the same spec with other equations,
each built with its own --prefix) link into one binary beside one `prelude_source()` and
one `main_source(...)`, which reads the trace once and replays it on each candidate in
turn, in a fresh directory, in a random order per repetition.

A reference in a trace is the original run's: the replay keeps, per container, a map from
those to its own where they differ, filled from the references the original operations
gave back (insert, update, find, a cursor's _ref: the trace's `result` events), and
translates every reference it is given (arguments, reference fields of records); one the
map does not hold is the same number in both. A cursor is known by its
address in the original program: an open at an address replaces the cursor there.

Every event's length is checked against what its operation takes before a byte of it is
read: a damaged trace stops the replay with the byte offset and why. Each event is timed
(CLOCK_MONOTONIC around it, less the clock's own median cost): the replay's bookkeeping
(the maps) is not counted in the operations' time.
"""
from __future__ import annotations

import json
import os
import subprocess
import tempfile
from typing import Optional

from .errors import EnvError
from .trace import OPS, api_digest, cursors, key_order, read_trace, roles



def _q(s: str) -> str:
    return json.dumps(s)


def prelude_source() -> str:
    """What every candidate's replay function uses: the reference maps, the clock, the
    statistics, once per binary."""
    return r"""#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>

#define P2R_NIL UINT64_MAX   /* none: a reference field's, or no result */

/* the original run's references (or cursor addresses) -> the replay's: open addressing */
typedef struct p2r_map { uint64_t *k, *v; size_t cap, n; } p2r_map;

static uint64_t p2r_mix(uint64_t x)
{
    x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27; x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static int p2r_put(p2r_map *m, uint64_t k, uint64_t v)
{
    size_t i;
    if ((m->n + 1) * 2 > m->cap) {
        p2r_map g;
        size_t j;
        g.cap = m->cap ? m->cap * 2 : 64;
        g.n = 0;
        g.k = (uint64_t *)malloc(g.cap * sizeof *g.k);
        g.v = (uint64_t *)malloc(g.cap * sizeof *g.v);
        if (!g.k || !g.v) { free(g.k); free(g.v); return -1; }
        memset(g.k, 0xff, g.cap * sizeof *g.k);
        for (j = 0; j < m->cap; j++)
            if (m->k[j] != UINT64_MAX) p2r_put(&g, m->k[j], m->v[j]);
        free(m->k); free(m->v);
        *m = g;
    }
    for (i = p2r_mix(k) & (m->cap - 1); m->k[i] != UINT64_MAX && m->k[i] != k; i = (i + 1) & (m->cap - 1)) ;
    if (m->k[i] == UINT64_MAX) m->n++;
    m->k[i] = k;
    m->v[i] = v;
    return 0;
}

/* the slot holding k, or SIZE_MAX (the one probe the lookups below share) */
static size_t p2r_slot(const p2r_map *m, uint64_t k)
{
    size_t i;
    if (!m->cap) return SIZE_MAX;
    for (i = p2r_mix(k) & (m->cap - 1); m->k[i] != UINT64_MAX; i = (i + 1) & (m->cap - 1))
        if (m->k[i] == k) return i;
    return SIZE_MAX;
}

/* the replay's value for k, or `none` (a reference the replay never saw: still passed on,
   as invalid, so that the call fails as the original did) */
static uint64_t p2r_get(const p2r_map *m, uint64_t k, uint64_t none)
{
    size_t i = p2r_slot(m, k);
    if (i == SIZE_MAX) return none;
    return m->v[i] == UINT64_MAX ? none : m->v[i];
}

static int p2r_has(const p2r_map *m, uint64_t k)
{
    return p2r_slot(m, k) != SIZE_MAX;
}

/* a reference of the original's as the replay's: the map's, `none` if its element is gone,
   else the same number (a replay that gives the references the original did (the same
   storage) keeps its maps almost empty: less of the cache taken from the operations) */
static uint64_t p2r_ref(const p2r_map *m, uint64_t k, uint64_t none)
{
    size_t i = p2r_slot(m, k);
    if (i == SIZE_MAX) return k;
    return m->v[i] == UINT64_MAX ? none : m->v[i];
}

/* the changes to the maps since the last commit, taken back in reverse at an abort (the
   original's elements come back as they were, and so do the replay's) */
typedef struct p2r_undo { p2r_map *m; uint64_t k, v; } p2r_undo;
typedef struct p2r_log { p2r_undo *e; size_t n, cap; int on; } p2r_log;

/* map k to v (UINT64_MAX: to nothing), logged for an abort */
static int p2r_set(p2r_log *log, p2r_map *m, uint64_t k, uint64_t v)
{
    if (log->on) {
        if (log->n == log->cap) {
            size_t cap = log->cap ? log->cap * 2 : 256;
            p2r_undo *e = (p2r_undo *)realloc(log->e, cap * sizeof *e);
            if (!e) return -1;
            log->e = e;
            log->cap = cap;
        }
        log->e[log->n].m = m;
        log->e[log->n].k = k;
        log->e[log->n].v = p2r_ref(m, k, UINT64_MAX);   /* gone, the same, or its value */
        log->n++;
    }
    return p2r_put(m, k, v);
}

static inline void p2r_rollback(p2r_log *log)
{
    while (log->n) {
        log->n--;
        p2r_put(log->e[log->n].m, log->e[log->n].k, log->e[log->n].v);
    }
}

static inline void p2r_free(p2r_map *m) { free(m->k); free(m->v); memset(m, 0, sizeof *m); }

static inline uint64_t p2r_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* per (unit, op): how many events and their time; units: containers, cursors, database */
#define P2R_OPS 64   /* the ops' codes, then 32 + a key's index: finds by key */
typedef struct p2r_stats { uint64_t *n, *ns; uint64_t total_ns; } p2r_stats;

static uint64_t p2r_u64(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }

static inline int p2r_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

#define P2R_BAD(...) do { snprintf(err, errlen, __VA_ARGS__); goto bad; } while (0)
#define P2R_LEN(want) do { if (n != (uint64_t)(want)) P2R_BAD("event at byte %zu: %u bytes, its operation takes %llu", at, (unsigned)n, (unsigned long long)(want)); } while (0)
"""


def _ctype(t) -> str:
    return t.ctype


def _translate_refs(checked, info, rec: str) -> list:
    """C lines that translate the reference fields of record `rec` into the replay's (one
    the replay never saw into one that names nothing, so that the call is refused as the
    original's was)."""
    out = []
    for f in info.ref_fields:
        ti = checked.containers.index(checked.container(f.type.target))
        nil = "UINT32_MAX" if f.type.narrow else "P2R_NIL"
        cast = f"({f.type.ctype})"
        out.append(f"if ({rec}.{f.name} != {nil}) {rec}.{f.name} = {cast}p2r_ref(&map[{ti}], "
                   f"(uint64_t){rec}.{f.name}, {nil} - 1);")
    return out


def _arg(t, name: str, src: str, checked) -> tuple:
    """One argument of type t read from `src` (a byte pointer, advanced): (its C
    declaration, the C that reads it, its size in the trace). A char[N] is N + 1 bytes and
    NUL-terminated after; a reference is translated into the replay's."""
    if t.kind == "char":
        return (f"char {name}[{t.length + 2}];",
                [f"memset({name}, 0, sizeof {name});",
                 f"memcpy({name}, {src}, {t.length + 1}); {src} += {t.length + 1};"],
                f"{t.length + 1}")
    ct = "uint64_t" if t.target is not None else t.ctype
    reads = [f"memcpy(&{name}, {src}, sizeof {name}); {src} += sizeof {name};"]
    if t.target is not None:
        ti = checked.containers.index(checked.container(t.target))
        reads.append(f"if ({name} != P2R_NIL && {name} != UINT32_MAX) "
                     f"{name} = p2r_ref(&map[{ti}], {name}, P2R_NIL - 1);")
    return f"{ct} {name};", reads, f"sizeof({ct})"


def _args(pairs, prefix: str, checked, head: str = "") -> tuple:
    """Several arguments [(name, type)] in trace order: (declarations, the length check
    (with `head` bytes before them), reads, the C names)."""
    decls, reads, sizes, names_ = [], [], [head] if head else [], []
    for m, (_, t) in enumerate(pairs):
        d, r, size = _arg(t, f"{prefix}{m}", "q", checked)
        decls.append(d)
        reads += r
        sizes.append(size)
        names_.append(f"{prefix}{m}")
    return decls, f"P2R_LEN({' + '.join(sizes) or '0'});", reads, names_


def has_transactions(checked) -> bool:
    """Does the spec have <prefix>_commit and _abort (a file under a transaction layer)?"""
    return any(fi.transactions is not None for fi in checked.files)


def stat_units(checked) -> list:
    """The names of the statistics' units, in their order: containers, cursors, database."""
    return ([c.name for c in checked.containers] + [k.name for _, k in cursors(checked)]
            + ["(database)"] + [f"{r.container.name}.{r.name}" for r in roles(checked)])


def _cp(p: str, info) -> str:
    """A container's public prefix in the candidate built with prefix p."""
    return f"{p}_{info.name}"


def _kp(p: str, info, k) -> str:
    """A cursor's public prefix in the candidate built with prefix p."""
    return f"{p}_{info.name}_all" if k.synthetic == "all" else f"{p}_{k.name}"


def _case_writer(w, unit: int, what: str):
    """A writer of one case of the replay's switch: operation `op` of unit `unit` (a
    container's, a cursor's or a role's index), its body, a comment naming `what`."""
    def case(op: str, body: list) -> None:
        w(f"        case {OPS[op]} << 8 | {unit}: {{   /* {what}: {op} */")
        for line in body:
            w(f"            {line}")
        w("            break;")
        w("        }")
    return case


def replay_source(checked, prefix: Optional[str] = None) -> str:
    """The C of one candidate's replay: `int <prefix>__replay(buf, len, at, dir, stats,
    dump, err, errlen)` replays the events buf[at..len) on a database opened in dir
    (fresh), timing each into stats; with dump, it writes the final contents there
    (`<prefix>__replay_dump`). Returns 0, or -1 with err set.

    `checked` is the spec the trace was written by (its containers', fields', keys' and
    cursors' indices read the events); `prefix` the candidate's, a spec with the same API
    (p2gen.tune.same_api) and perhaps other equations."""
    p = prefix or checked.prefix
    DB = f"{p}_db"
    nc = len(checked.containers)
    curs = cursors(checked)
    L = []
    w = L.append
    w(f'#include "{p}.h"')
    w(dump_source(checked, p))
    w(f"int {p}__replay(const unsigned char *buf, size_t len, size_t at, const char *dir, "
      f"p2r_stats *st, FILE *dump, char *err, size_t errlen)")
    w("{")
    w(f"    {DB} *db = NULL;")
    w(f"    p2r_map map[{nc}];")
    w(f"    p2r_map cur_at[{max(len(curs), 1)}];   /* a cursor's address -> its slot */")
    for j, (info, k) in enumerate(curs):
        w(f"    {_kp(p, info, k)}_cursor *cur{j} = NULL; size_t ncur{j} = 0;")
    rls = roles(checked)
    w(f"    p2r_map it_at[{max(len(rls), 1)}];   /* a role iterator's address -> its slot */")
    for j, role in enumerate(rls):
        if role.many:
            w(f"    {_rp(p, role)}_iter *it{j} = NULL; size_t nit{j} = 0;")
    w(f"    p2r_log log = {{ NULL, 0, 0, {int(has_transactions(checked))} }};")
    w("    uint64_t last = P2R_NIL, n, t0;")
    w("    int sure = 0;   /* last is the element the original's reference names (insert, update) */")
    w("    unsigned op, unit, aux;")
    w("    int rc = -1;")
    w("    const unsigned char *pl, *q;")
    w("    memset(map, 0, sizeof map);")
    w("    memset(cur_at, 0, sizeof cur_at);")
    w("    memset(it_at, 0, sizeof it_at);")
    w(f"    if ({p}_open(&db, dir) != P2_OK) {{ snprintf(err, errlen, \"cannot open the database "
      f"in %s: %s\", dir, {p}_errmsg(db)); {p}_close(db); return -1; }}")
    w("    while (at < len) {")
    w("        if (len - at < 8) P2R_BAD(\"trace truncated: %zu bytes of an event head at byte %zu\", len - at, at);")
    w("        op = buf[at]; unit = buf[at + 1]; aux = (unsigned)buf[at + 2] | (unsigned)buf[at + 3] << 8;")
    w("        { uint32_t n32; memcpy(&n32, buf + at + 4, 4); n = n32; }")
    w("        if (n > len - at - 8) P2R_BAD(\"trace truncated: an event of %llu bytes at byte %zu\", (unsigned long long)n, at);")
    w("        pl = q = buf + at + 8;")
    w("        (void)q; (void)aux;")
    w("        t0 = p2r_now();")
    w("        switch (op << 8 | unit) {")
    for i, info in enumerate(checked.containers):
        R = f"{p}_{info.record.name}"
        cp = _cp(p, info)
        refs = _translate_refs(checked, info, "r")
        texts = [f"memset(&r.{f.name}, 0, sizeof r.{f.name});" for f in info.text_fields]
        rec_read = [f"{R} r;", "P2R_LEN({} + sizeof r);", "memcpy(&r, pl + {}, sizeof r);",
                    *refs, *texts]

        def rec(off: int) -> list:
            return [rec_read[0], rec_read[1].format(off), rec_read[2].format(off), *rec_read[3:]]

        case = _case_writer(w, i, info.name)
        ref0 = f"p2r_ref(&map[{i}], p2r_u64(pl), {p.upper()}_NOREF)"
        case("insert", [*rec(0), f"{p}_ref ref;",
                        f"last = {cp}_insert(db, &r, &ref) == P2_OK ? ref : P2R_NIL;", "sure = 1;"])
        case("insert_many", ["P2R_LEN(8);",
                             f"{cp}_reserve(db, {cp}_count(db) + p2r_u64(pl));"])
        case("get", ["P2R_LEN(8);", f"{R} r;", f"{cp}_get(db, {ref0}, &r);"])
        case("at", ["P2R_LEN(8);", f"(void){cp}_at(db, {ref0});"])
        case("update", [*rec(8), f"{p}_ref ref = {ref0};",
                        f"last = {cp}_update(db, &ref, &r) == P2_OK ? ref : P2R_NIL;", "sure = 1;"])
        case("delete", ["P2R_LEN(8);", f"if ({cp}_delete(db, {ref0}) == P2_OK && "
                        f"p2r_set(&log, &map[{i}], p2r_u64(pl), UINT64_MAX)) P2R_BAD(\"out of memory\");"])
        case("reserve", ["P2R_LEN(8);", f"{cp}_reserve(db, p2r_u64(pl));"])
        # a find's or a cursor's answer is the element only where the replay knows no
        # other (a trace of a database not empty at the open): with keys that are not
        # unique, or walks in another order, another equation may answer another one
        # (a reference that is the same number in both is kept only where the map says
        # otherwise)
        case("result", ["P2R_LEN(8);",
                        f"if (last != P2R_NIL && (sure ? last != p2r_u64(pl) || "
                        f"p2r_has(&map[{i}], p2r_u64(pl)) : last != p2r_u64(pl) && "
                        f"!p2r_has(&map[{i}], p2r_u64(pl))) && "
                        f"p2r_set(&log, &map[{i}], p2r_u64(pl), last)) P2R_BAD(\"out of memory\");"])
        # setters: one per field, by its index
        body = ["switch (aux) {"]
        for j, f in enumerate(info.record.fields):
            if f.type.kind == "text":
                continue
            decls, check, reads, _ = _args([(f.name, f.type)], "v", checked, head="8")
            body += [f"case {j}: {{", *(f"    {x}" for x in [*decls, check, "q += 8;", *reads,
                                                          f"{cp}_set_{f.name}(db, {ref0}, v0);"]),
                     "    break;", "}"]
        body += ["default: P2R_BAD(\"event at byte %zu: no field %u to set\", at, aux);", "}"]
        case("set", body)
        body = ["if (n < 8) P2R_BAD(\"event at byte %zu: a text without its reference\", at);",
                "switch (aux) {"]
        for j, f in enumerate(info.record.fields):
            if f.type.kind == "text":
                body += [f"case {j}: {cp}_set_{f.name}(db, {ref0}, pl + 8, n - 8); break;"]
        body += ["default: P2R_BAD(\"event at byte %zu: no text field %u\", at, aux);", "}"]
        case("set_text", body)
        body = ["switch (aux) {"]
        for j, kobj in enumerate(key_order(info)):
            fields = kobj.fields if kobj.type.kind == "composite" else (info.record.field(kobj.name),)
            decls, check, reads, args = _args([(f.name, f.type) for f in fields], "k", checked)
            body += [f"case {j}: {{", f"    {p}_ref ref;", *(f"    {x}" for x in [*decls, check, *reads]),
                     f"    last = {cp}_find_{kobj.name}(db, {', '.join(args)}, &ref) == P2_OK "
                     f"? ref : P2R_NIL;", "    sure = 0;", "    break;", "}"]
        body += ["default: P2R_BAD(\"event at byte %zu: no key %u to find by\", at, aux);", "}"]
        case("find", body)
    for j, (info, k) in enumerate(curs):
        i = checked.containers.index(info)
        R = f"{p}_{info.record.name}"
        kp = _kp(p, info, k)

        ccase = _case_writer(w, j, f"cursor {k.name}")
        slot = (f"uint64_t s = p2r_get(&cur_at[{j}], p2r_u64(pl), UINT64_MAX);",
                f"if (s == UINT64_MAX) P2R_BAD(\"event at byte %zu: cursor {k.name} was never "
                f"opened at that address\", at);")
        decls, check, reads, args = _args(k.params, "a", checked, head="8")
        ccase("cursor_open", [*decls, check, "q += 8;", *reads,
                              f"uint64_t s = p2r_get(&cur_at[{j}], p2r_u64(pl), UINT64_MAX);",
                              "if (s == UINT64_MAX) {",
                              f"    {kp}_cursor *g = ({kp}_cursor *)realloc(cur{j}, (ncur{j} + 1) * sizeof *g);",
                              "    if (!g) P2R_BAD(\"out of memory\");",
                              f"    cur{j} = g; s = ncur{j}++;",
                              f"    memset(&cur{j}[s], 0, sizeof cur{j}[s]);",
                              f"    if (p2r_put(&cur_at[{j}], p2r_u64(pl), s)) P2R_BAD(\"out of memory\");",
                              f"}} else {kp}_close(&cur{j}[s]);",
                              f"{kp}_open(db, &cur{j}[s]{''.join(', ' + a for a in args)});"])
        ccase("cursor_next", ["P2R_LEN(8);", *slot, f"{kp}_next(&cur{j}[s]);"])
        ccase("cursor_ref", ["P2R_LEN(8);", *slot,
                             f"last = {kp}_ref(&cur{j}[s]);", "sure = 0;",
                             f"if (last == {p.upper()}_NOREF) last = P2R_NIL;"])
        # on the element the original's cursor was on: through the replay's cursor if it
        # is there too (the same order), else by reference (another equation's order)
        elem = [f"uint64_t e = p2r_ref(&map[{i}], p2r_u64(pl + 8), {p.upper()}_NOREF);",
                f"int here = e != {p.upper()}_NOREF && {kp}_ref(&cur{j}[s]) == e;"]
        ccase("cursor_update", [f"{R} r;", "P2R_LEN(16 + sizeof r);", *slot, *elem,
                                "memcpy(&r, pl + 16, sizeof r);",
                                *_translate_refs(checked, info, "r"),
                                f"if (here) {kp}_update(&cur{j}[s], &r);",
                                f"else if ({_cp(p, info)}_update(db, &e, &r) == P2_OK && "
                                f"(e != p2r_u64(pl + 8) || p2r_has(&map[{i}], p2r_u64(pl + 8))) && "
                                f"p2r_set(&log, &map[{i}], p2r_u64(pl + 8), e)) P2R_BAD(\"out of memory\");"])
        ccase("cursor_delete", ["P2R_LEN(16);", *slot, *elem,
                                f"rc = here ? {kp}_delete(&cur{j}[s]) : {_cp(p, info)}_delete(db, e);",
                                f"if (rc == P2_OK && p2r_set(&log, &map[{i}], p2r_u64(pl + 8), "
                                f"UINT64_MAX)) P2R_BAD(\"out of memory\");",
                                "rc = -1;"])
    _role_cases(w, checked, p)
    if has_transactions(checked):
        w(f"        case {OPS['commit']} << 8 | 0: P2R_LEN(0); {p}_commit(db); log.n = 0; break;")
        w(f"        case {OPS['abort']} << 8 | 0: P2R_LEN(0); {p}_abort(db); p2r_rollback(&log); break;")
    w("        default:")
    w("            P2R_BAD(\"event at byte %zu: operation %u of unit %u is not one of this spec's\", at, op, unit);")
    w("        }")
    w("        {")
    w("            uint64_t dt = p2r_now() - t0;")
    w(f"            unsigned slot = op == {OPS['commit']} || op == {OPS['abort']} ? {nc + len(curs)}u"
      f" : op >= {OPS['rel_add']} ? {nc + len(curs) + 1}u + unit"
      f" : op >= {OPS['cursor_open']} ? {nc}u + unit : unit;")
    w(f"            unsigned o = op == {OPS['find']} ? 32u + (aux & 31u) : op;")
    w("            st->n[slot * P2R_OPS + o]++;")
    w("            st->ns[slot * P2R_OPS + o] += dt;")
    w("        }")
    w("        at += 8 + (size_t)n;")
    w("    }")
    w(f"    if (dump) {p}__replay_dump(db, dump);")
    w("    rc = 0;")
    w("bad:")
    for j, (info, k) in enumerate(curs):
        w(f"    {{ size_t s; for (s = 0; s < ncur{j}; s++) {_kp(p, info, k)}_close(&cur{j}[s]); free(cur{j}); }}")
    for j, role in enumerate(rls):
        if role.many:
            w(f"    free(it{j});")
    w(f"    {{ int m; for (m = 0; m < {nc}; m++) p2r_free(&map[m]); "
      f"for (m = 0; m < {max(len(curs), 1)}; m++) p2r_free(&cur_at[m]); "
      f"for (m = 0; m < {max(len(rls), 1)}; m++) p2r_free(&it_at[m]); }}")
    w("    free(log.e);")
    w(f"    if ({p}_close(db) != P2_OK && rc == 0) {{ snprintf(err, errlen, \"close failed\"); rc = -1; }}")
    w("    return rc;")
    w("}")
    return "\n".join(L) + "\n"


def _rp(p: str, role) -> str:
    """A role's public prefix in the candidate built with prefix p."""
    return f"{p}_{role.container.name}_{role.name}"


def _role_cases(w, checked, p: str) -> None:
    """The replay of the relationships' events: each role's changes with the references
    mapped (owner and member, element and partner), its walks through iterators kept by
    the original's address (as the cursors are)."""
    nore = f"{p.upper()}_NOREF"
    for j, role in enumerate(roles(checked)):
        own = checked.containers.index(role.container)
        other = checked.containers.index(role.partner.container)
        rp = _rp(p, role)
        mine = f"p2r_ref(&map[{own}], p2r_u64(pl), {nore})"
        theirs = f"p2r_ref(&map[{other}], p2r_u64(pl + 8), {nore})"
        where = f"{role.container.name}.{role.name}"

        case = _case_writer(w, j, f"role {where}")
        if not role.many:
            case("rel_set", ["P2R_LEN(16);",
                             f"(void){p}_{role.container.name}_set_{role.name}(db, {mine}, "
                             f"p2r_u64(pl + 8) == {nore} ? {nore} : {theirs});"])
            continue
        case("rel_add", ["P2R_LEN(16);", f"(void){rp}_add(db, {mine}, {theirs});"])
        case("rel_remove", ["P2R_LEN(16);", f"(void){rp}_remove(db, {mine}, {theirs});"])
        mine8 = f"p2r_ref(&map[{own}], p2r_u64(pl + 8), {nore})"
        case("rel_open", ["P2R_LEN(16);",
                          f"uint64_t s = p2r_get(&it_at[{j}], p2r_u64(pl), UINT64_MAX);",
                          "if (s == UINT64_MAX) {",
                          f"    {rp}_iter *g = ({rp}_iter *)realloc(it{j}, (nit{j} + 1) * sizeof *g);",
                          "    if (!g) P2R_BAD(\"out of memory\");",
                          f"    it{j} = g; s = nit{j}++;",
                          f"    if (p2r_put(&it_at[{j}], p2r_u64(pl), s)) P2R_BAD(\"out of memory\");",
                          "}",
                          f"(void){rp}_open(db, &it{j}[s], {mine8});"])
        case("rel_next", ["P2R_LEN(8);",
                          f"uint64_t s = p2r_get(&it_at[{j}], p2r_u64(pl), UINT64_MAX);",
                          f"if (s == UINT64_MAX) P2R_BAD(\"event at byte %zu: role {where} was "
                          f"never walked from that address\", at);",
                          f"(void){rp}_next(&it{j}[s], NULL);"])


def dump_source(checked, prefix: Optional[str] = None) -> str:
    """`static void <prefix>__replay_dump(db, f)`: every element of every container, one
    line each (container, then its fields; a reference field by the first field of what it
    points at, since references differ between equations): the lines sorted compare two
    databases."""
    p = prefix or checked.prefix
    L = [f"static void {p}__replay_dump({p}_db *db, FILE *f)", "{"]
    for info in checked.containers:
        allc = next(k for k in info.cursors if k.synthetic == "all")
        R = f"{p}_{info.record.name}"
        ap = _kp(p, info, allc)
        L += ["    {", f"        {ap}_cursor c;", f"        const {R} *r;",
              f"        {ap}_open(db, &c);",
              f"        while ((r = {ap}_next_rec(&c)) != NULL) {{",
              f"            fputs({_q(info.name)}, f);"]
        for fld in info.record.fields:
            t = fld.type
            x = f"r->{fld.name}"
            if t.target is not None:       # by what it points at: its first field
                tinfo = checked.container(t.target)
                first = tinfo.record.fields[0]
                nil = "UINT32_MAX" if t.narrow else f"{p.upper()}_NOREF"
                shown = (f"(long long){_cp(p, tinfo)}_at(db, {x})->{first.name}"
                         if first.type.kind in ("int",) and first.type.target is None else "0LL")
                L.append(f"            if ({x} == {nil}) fputs(\"\\tnone\", f);")
                L.append(f"            else if (!{_cp(p, tinfo)}_at(db, {x})) fputs(\"\\tdangling\", f);")
                L.append(f"            else fprintf(f, \"\\t->%lld\", {shown});")
            elif t.kind == "text":
                L += ["            {", "                const char *d; uint64_t n = 0;",
                      f"                {_cp(p, info)}_get_{fld.name}(db, {ap}_ref(&c), &d, &n);",
                      "                fprintf(f, \"\\t%llu:\", (unsigned long long)n);",
                      "                fwrite(d, 1, (size_t)n, f);", "            }"]
            elif t.kind == "char":
                L.append(f"            fprintf(f, \"\\t%.*s\", {t.length}, {x});")
            elif t.kind == "float":
                L.append(f"            fprintf(f, \"\\t%.17g\", (double){x});")
            elif t.signed:
                L.append(f"            fprintf(f, \"\\t%lld\", (long long){x});")
            else:
                L.append(f"            fprintf(f, \"\\t%llu\", (unsigned long long){x});")
        L += ["            fputc('\\n', f);", "        }", f"        {ap}_close(&c);", "    }"]
    L += _dump_roles(checked, p)
    L.append("}")
    return "\n".join(L) + "\n"


def _shown(checked, p: str, info, ref: str) -> str:
    """An element of `info` as the dump names it: its first field (an integer), else 0."""
    first = info.record.fields[0]
    if first.type.kind == "int" and first.type.target is None:
        return f"(long long){_cp(p, info)}_at(db, {ref})->{first.name}"
    return "0LL"


def _dump_roles(checked, p: str) -> list:
    """One line per (owner, member) of each role that holds many (a bag: one per
    occurrence), each end named by its first field: the lines sorted compare two
    databases whatever order a layer keeps."""
    L = []
    for role in roles(checked):
        if not role.many:
            continue
        info, rp = role.container, _rp(p, role)
        allc = next(k for k in info.cursors if k.synthetic == "all")
        ap = _kp(p, info, allc)
        owner = _shown(checked, p, info, "o")
        member = _shown(checked, p, role.partner.container, "y")
        L += ["    {", f"        {ap}_cursor c;", f"        {rp}_iter it;",
              f"        {p}_ref o, y;", f"        {ap}_open(db, &c);",
              f"        while ({ap}_next_rec(&c) != NULL) {{",
              f"            o = {ap}_ref(&c);",
              f"            if ({rp}_open(db, &it, o) != P2_OK) continue;",
              f"            while ({rp}_next(&it, &y) == P2_OK)",
              f"                fprintf(f, \"{info.name}.{role.name}\\t%lld\\t%lld\\n\", "
              f"{owner}, {member});",
              "        }", f"        {ap}_close(&c);", "    }"]
    return L


def main_source(checked, prefixes: list) -> str:
    """The driver's main: `replay TRACE DIR REPS [DUMP|-] [CANDIDATE...]` reads TRACE once,
    checks its header (magic, format, byte order, the spec's hash, the containers), then per
    repetition replays it on every candidate in a random order (or on the candidates named,
    by prefix, in that order), each in a fresh DIR/<prefix>.<rep>,
    and prints a JSON line per run: prefix, repetition, total ns, and per unit and op the
    count and ns (the clock's own cost taken off). DUMP (not "-"): each candidate's final
    contents after its first run, written to DUMP.<prefix>."""
    from .trace import BYTE_ORDER, FORMAT, HEAD, MAGIC
    units = stat_units(checked)
    ops = sorted(OPS.items(), key=lambda kv: kv[1])
    L = [f"int {p}__replay(const unsigned char *, size_t, size_t, const char *, p2r_stats *, "
         f"FILE *, char *, size_t);" for p in prefixes]
    L.append(f"static const char *const unit_names[] = {{ {', '.join(_q(u) for u in units)} }};")
    names_by_op = ["NULL"] * 32 + [_q(f"find#{k}") for k in range(32)]
    for name, code in ops:
        names_by_op[code] = _q(name)
    L.append(f"static const char *const op_names[P2R_OPS] = {{ {', '.join(names_by_op)} }};")
    L.append("typedef int (*p2r_fn)(const unsigned char *, size_t, size_t, const char *, "
             "p2r_stats *, FILE *, char *, size_t);")
    L.append(f"static const p2r_fn fns[] = {{ {', '.join(p + '__replay' for p in prefixes)} }};")
    L.append(f"static const char *const fn_names[] = {{ {', '.join(_q(p) for p in prefixes)} }};")
    nunits = len(units)
    head = HEAD.size + 12 * len(checked.containers)   # the counts at the open, the records' sizes
    L.append(expand_source(checked))
    L.append(r"""
int main(int argc, char **argv)
{
    FILE *f;
    unsigned char *buf;
    long size;
    uint32_t fmt, order, nc;
    int reps, rep, c, k, order_of[%(ncand)d], ncand = %(ncand)d, named = 0;
    uint64_t clock_ns, t;
    char err[512];
    p2r_stats st;
    if (argc < 4) { fprintf(stderr, "usage: %%s TRACE DIR REPS [DUMP|-] [CANDIDATE...]\n", argv[0]); return 2; }
    reps = atoi(argv[3]);
    if (argc > 5) {   /* the candidates named, by prefix, run in that order */
        if (argc - 5 > %(ncand)d) { fprintf(stderr, "more candidates named than linked\n"); return 2; }
        for (ncand = 0; ncand < argc - 5; ncand++) {
            for (c = 0; c < %(ncand)d && strcmp(fn_names[c], argv[5 + ncand]) != 0; c++) ;
            if (c == %(ncand)d) { fprintf(stderr, "no candidate %%s in this driver\n", argv[5 + ncand]); return 2; }
            order_of[ncand] = c;
        }
        named = 1;
    }
    if (!(f = fopen(argv[1], "rb"))) { fprintf(stderr, "cannot read trace %%s\n", argv[1]); return 1; }
    if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) { fprintf(stderr, "cannot read trace %%s\n", argv[1]); return 1; }
    buf = (unsigned char *)malloc((size_t)size + 1);
    if (!buf || fread(buf, 1, (size_t)size, f) != (size_t)size) { fprintf(stderr, "cannot read trace %%s\n", argv[1]); return 1; }
    fclose(f);
    if ((size_t)size < %(head)du || memcmp(buf, %(magic)s, 8) != 0) { fprintf(stderr, "%%s is not a p2gen trace of this spec's containers\n", argv[1]); return 1; }
    memcpy(&fmt, buf + 8, 4); memcpy(&order, buf + 12, 4); memcpy(&nc, buf + 80, 4);
    if (fmt != %(format)du || order != %(order)du) { fprintf(stderr, "%%s: a trace of another format or byte order\n", argv[1]); return 1; }
    if (memcmp(buf + 16, %(sha)s, 64) != 0) { fprintf(stderr, "%%s was written by a spec of another API\n", argv[1]); return 1; }
    if (nc != %(nc)du) { fprintf(stderr, "%%s is damaged: %%u containers\n", argv[1], (unsigned)nc); return 1; }
    {   /* the compact events expanded once, before any candidate runs */
        size_t n;
        unsigned char *events = p2r_expand(buf, (size_t)size, %(head)du, &n, err, sizeof err);
        if (!events) { fprintf(stderr, "%%s: %%s\n", argv[1], err); return 1; }
        free(buf);
        buf = events;
        size = (long)n;
    }
    {   /* the clock's own cost: the median of 1001 back-to-back readings */
        static uint64_t pairs[1001];
        for (k = 0; k < 1001; k++) { t = p2r_now(); pairs[k] = p2r_now() - t; }
        qsort(pairs, 1001, sizeof pairs[0], p2r_cmp);
        clock_ns = pairs[500];
    }
    st.n = (uint64_t *)calloc(%(nunits)d * P2R_OPS, sizeof *st.n);
    st.ns = (uint64_t *)calloc(%(nunits)d * P2R_OPS, sizeof *st.ns);
    if (!st.n || !st.ns) return 1;
    srand((unsigned)p2r_now());
    if (!named) for (c = 0; c < ncand; c++) order_of[c] = c;
    for (rep = 0; rep < reps; rep++) {
        for (c = named ? 0 : ncand - 1; c > 0; c--) { int j = rand() %% (c + 1), x = order_of[c]; order_of[c] = order_of[j]; order_of[j] = x; }
        for (k = 0; k < ncand; k++) {
            char dir[4096];
            FILE *dump = NULL;
            int first = 1, u, o;
            c = order_of[k];
            snprintf(dir, sizeof dir, "%%s/%%s.%%d", argv[2], fn_names[c], rep);
            if (mkdir(dir, 0777) != 0) { fprintf(stderr, "cannot make %%s\n", dir); return 1; }
            if (argc > 4 && strcmp(argv[4], "-") != 0 && rep == 0) {
                char path[4096];
                snprintf(path, sizeof path, "%%s.%%s", argv[4], fn_names[c]);
                if (!(dump = fopen(path, "w"))) { fprintf(stderr, "cannot write %%s\n", path); return 1; }
            }
            memset(st.n, 0, %(nunits)d * P2R_OPS * sizeof *st.n);
            memset(st.ns, 0, %(nunits)d * P2R_OPS * sizeof *st.ns);
            t = p2r_now();
            if (fns[c](buf, (size_t)size, 0, dir, &st, dump, err, sizeof err) != 0) {
                fprintf(stderr, "replay of %%s: %%s\n", fn_names[c], err);
                return 1;
            }
            st.total_ns = p2r_now() - t;
            if (dump) fclose(dump);
            printf("{\"prefix\": \"%%s\", \"rep\": %%d, \"total_ns\": %%llu, \"clock_ns\": %%llu, \"ops\": [", fn_names[c], rep, (unsigned long long)st.total_ns, (unsigned long long)clock_ns);
            for (u = 0; u < %(nunits)d; u++)
                for (o = 0; o < P2R_OPS; o++) {
                    uint64_t cnt = st.n[u * P2R_OPS + o], ns = st.ns[u * P2R_OPS + o];
                    if (!cnt) continue;
                    ns = ns > cnt * clock_ns ? ns - cnt * clock_ns : 0;
                    printf("%%s[\"%%s\", \"%%s\", %%llu, %%llu]", first ? "" : ", ", unit_names[u], op_names[o], (unsigned long long)cnt, (unsigned long long)ns);
                    first = 0;
                }
            printf("]}\n");
            fflush(stdout);
        }
    }
    free(buf); free(st.n); free(st.ns);
    return 0;
}
""" % {"ncand": len(prefixes), "head": head, "magic": _q(MAGIC.decode()), "format": FORMAT,
       "order": BYTE_ORDER, "sha": _q(api_digest(checked)),
       "nc": len(checked.containers), "nunits": nunits})
    return "\n".join(L) + "\n"


def expand_source(checked) -> str:
    """`p2r_expand`: the trace's compact events (format 4: trace.py) checked and expanded to
    the fixed layout every candidate's replay reads (u8 op, u8 unit, u16 aux, u32 length,
    the payload with the word first as a u64, a record's zeros put back), as
    trace.read_trace expands them; NULL with
    err set (the byte of the file) if one is truncated, damaged or not of this spec. The
    replay's own messages then name the byte of an expanded event."""
    from .render import c_string
    from .trace import (ANSWERED, AUX, CURSOR_OPS, DB_OPS, END, LAYOUT, MAX_RECORD, REL_OPS,
                        REST, WORD, ZEROS)
    size = max(OPS.values()) + 1
    layout, kind = [0] * size, [255] * size      # kind 255: no such operation
    for name, code in OPS.items():
        layout[code] = LAYOUT[name]
        kind[code] = 3 if name in DB_OPS else 1 if name in CURSOR_OPS else \
            2 if name in REL_OPS else 0
    limits = [len(checked.containers), len(cursors(checked)), len(roles(checked)), 1]
    answered = [0] * size
    for name, stands_for in ANSWERED.items():
        answered[OPS[name]] = OPS[stands_for]
    return r"""
static const unsigned char p2r_layout[%(size)d] = { %(layout)s };
static const unsigned char p2r_kind[%(size)d] = { %(kind)s };   /* container, cursor, role, database */
static const unsigned char p2r_answered[%(size)d] = { %(answered)s };   /* trace.ANSWERED: the op it stands for */
static const unsigned p2r_limit[4] = { %(limits)s };

/* the varint at *at (7 bits a byte, the lowest first): 0, or -1 if the trace ends in it or it
   is longer than 64 bits */
static int p2r_varint(const unsigned char *b, size_t len, size_t *at, uint64_t *v)
{
    unsigned shift = 0;
    *v = 0;
    for (;;) {
        if (*at >= len || shift > 63 || (shift == 63 && (b[*at] & 0x7e))) return -1;   /* a 10th byte: bit 63 only */
        *v |= (uint64_t)(b[*at] & 0x7f) << shift;
        shift += 7;
        if (b[(*at)++] < 0x80) return 0;
    }
}

static unsigned char *p2r_expand(const unsigned char *b, size_t len, size_t at, size_t *out_len,
                                 char *err, size_t errlen)
{
    size_t cap = 2 * (len - at) + 64, n = 0;
    unsigned char *out = (unsigned char *)malloc(cap);
    uint64_t last[%(words)d];
    uint32_t record_size[%(nrec)d];   /* the header's, before the events: a record's event holds that many bytes */
    memset(last, 0, sizeof last);
    if (!out) { snprintf(err, errlen, "out of memory"); return NULL; }
    for (n = 0; n < %(nc)du; n++) {
        memcpy(&record_size[n], b + at - 4 * (%(nc)du - n), 4);
        if (record_size[n] > %(max_record)du) { snprintf(err, errlen, "trace damaged: its header gives a record of %%u bytes", (unsigned)record_size[n]); goto bad; }
    }
    n = 0;
    for (;;) {
        size_t start = at;
        unsigned op, unit, layout;
        uint64_t aux = 0, word = 0, rest = 0, zeros = 0, length;
        uint32_t n32;
        if (at >= len) { snprintf(err, errlen, "trace truncated: no end mark after its last event"); goto bad; }
        if (b[at] == 0) {
            if (len - at < %(endlen)d && memcmp(b + at, %(end)s, len - at) == 0) { snprintf(err, errlen, "trace truncated: its end mark is cut"); goto bad; }
            if (len - at != %(endlen)d || memcmp(b + at, %(end)s, %(endlen)d) != 0) { snprintf(err, errlen, "trace damaged: an end mark at byte %%zu is not the file's end", at); goto bad; }
            break;
        }
        if (len - at < 2) { snprintf(err, errlen, "trace truncated: 1 byte of an event head at byte %%zu", at); goto bad; }
        op = b[at]; unit = b[at + 1]; at += 2;
        if (op >= %(size)du || p2r_kind[op] == 255 || unit >= p2r_limit[p2r_kind[op]]) {
            snprintf(err, errlen, "event at byte %%zu: operation %%u of unit %%u is not one of this spec's", start, op, unit);
            goto bad;
        }
        layout = p2r_layout[op];
        if ((layout & %(AUX)d) && (p2r_varint(b, len, &at, &aux) || aux > 0xffff)) { snprintf(err, errlen, "trace truncated or damaged: the event at byte %%zu", start); goto bad; }
        if (layout & %(WORD)d) {
            uint64_t z, *l = &last[%(bases)s];
            if (p2r_varint(b, len, &at, &z)) { snprintf(err, errlen, "trace truncated or damaged: the reference of the event at byte %%zu ends past the file or is longer than 64 bits", start); goto bad; }
            word = *l + ((z >> 1) ^ ((uint64_t)0 - (z & 1)));
            *l = word;
        }
        if ((layout & %(REST)d) && p2r_varint(b, len, &at, &rest)) { snprintf(err, errlen, "trace truncated or damaged: the length of the event at byte %%zu ends past the file or is longer than 64 bits", start); goto bad; }
        if ((layout & %(ZEROS)d) && p2r_varint(b, len, &at, &zeros)) { snprintf(err, errlen, "trace truncated or damaged: the count of zero bytes of the event at byte %%zu ends past the file or is longer than 64 bits", start); goto bad; }
        if ((layout & %(ZEROS)d) && (rest > UINT32_MAX || zeros > UINT32_MAX || rest + zeros != record_size[unit])) { snprintf(err, errlen, "trace damaged: the record of the event at byte %%zu is %%llu bytes and %%llu zeros, not %%u", start, (unsigned long long)rest, (unsigned long long)zeros, (unsigned)record_size[unit]); goto bad; }
        if (rest > len - at) { snprintf(err, errlen, "trace truncated: an event of %%llu bytes at byte %%zu, %%zu left", (unsigned long long)rest, start, len - at); goto bad; }
        length = (layout & %(WORD)d ? 8 : 0) + rest + zeros;
        if (length > UINT32_MAX) { snprintf(err, errlen, "trace damaged: an event of %%llu bytes at byte %%zu", (unsigned long long)length, start); goto bad; }
        while (cap - n < 24 + length) {   /* a find_found: two events */
            unsigned char *g = (unsigned char *)realloc(out, cap *= 2);
            if (!g) { snprintf(err, errlen, "out of memory"); goto bad; }
            out = g;
        }
        if (p2r_answered[op]) {   /* the operation, then its result if it gave one */
            n32 = (uint32_t)(rest + zeros);
            out[n] = p2r_answered[op]; out[n + 1] = (unsigned char)unit;
            out[n + 2] = (unsigned char)(aux & 0xff); out[n + 3] = (unsigned char)(aux >> 8);
            memcpy(out + n + 4, &n32, 4);
            memcpy(out + n + 8, b + at, (size_t)rest);
            memset(out + n + 8 + rest, 0, (size_t)zeros);
            n += 8 + (size_t)(rest + zeros);
            at += (size_t)rest;
            if (word != UINT64_MAX) {
                n32 = 8;
                out[n] = %(result)du; out[n + 1] = (unsigned char)unit; out[n + 2] = out[n + 3] = 0;
                memcpy(out + n + 4, &n32, 4);
                memcpy(out + n + 8, &word, 8);
                n += 16;
            }
            continue;
        }
        n32 = (uint32_t)length;
        out[n] = (unsigned char)op; out[n + 1] = (unsigned char)unit;
        out[n + 2] = (unsigned char)(aux & 0xff); out[n + 3] = (unsigned char)(aux >> 8);
        memcpy(out + n + 4, &n32, 4);
        n += 8;
        if (layout & %(WORD)d) { memcpy(out + n, &word, 8); n += 8; }
        memcpy(out + n, b + at, (size_t)rest);
        memset(out + n + rest, 0, (size_t)zeros);
        n += (size_t)(rest + zeros);
        at += (size_t)rest;
    }
    *out_len = n;
    return out;
bad:
    free(out);
    return NULL;
}
""" % {"size": size, "layout": ", ".join(map(str, layout)), "kind": ", ".join(map(str, kind)),
       "limits": ", ".join(map(str, limits)), "words": max(sum(limits[:3]), 1),
       "bases": f"(p2r_kind[op] == 1 ? {limits[0]}u : p2r_kind[op] == 2 ? {limits[0] + limits[1]}u : 0u) + unit",
       "AUX": AUX, "WORD": WORD, "REST": REST, "ZEROS": ZEROS, "max_record": MAX_RECORD,
       "nc": len(checked.containers), "nrec": max(len(checked.containers), 1),
       "endlen": len(END),
       "end": c_string(END.decode()), "result": OPS["result"],
       "answered": ", ".join(str(answered[i]) for i in range(size))}


def driver_source(checked, prefixes: Optional[list] = None) -> str:
    """A whole driver's C for candidates of `checked`'s spec built with `prefixes` (each
    candidate's header must be on the include path): the prelude, each candidate's replay,
    the main."""
    prefixes = prefixes or [checked.prefix]
    return (prelude_source() + "".join(replay_source(checked, p) for p in prefixes)
            + main_source(checked, prefixes))


def build_driver(spec_path: str, out_dir: str, cc: str = "cc", cflags: Optional[list] = None,
                 candidates: Optional[list] = None) -> tuple:
    """The replay driver of traces of `spec_path`, linked with each candidate (spec path,
    prefix): by default the spec as written. Each candidate is generated into out_dir
    (distinct prefixes), the runtime compiled once: (the trace's checked spec, the
    driver's path)."""
    from .build import generate, load
    from .toolchain import DEFAULT_CFLAGS, cc_command, run_cc, runtime_object
    checked = load(spec_path)
    gens = [generate(path, out_dir, prefix) for path, prefix in candidates or [(spec_path, None)]]
    prefixes = [g.prefix for g in gens]
    if len(set(prefixes)) != len(prefixes):
        raise EnvError(f"error: the replay's candidates need distinct prefixes, not {prefixes}")
    flags = list(cflags) if cflags is not None else list(DEFAULT_CFLAGS)
    src = os.path.join(out_dir, f"{checked.prefix}_replay.c")
    with open(src, "w", encoding="utf-8") as f:
        f.write(driver_source(checked, prefixes))
    exe = os.path.join(out_dir, f"{checked.prefix}_replay")
    cc_cmd = cc_command(cc)
    run_cc(cc_cmd + flags + ["-I", out_dir, src, *(g.source for g in gens),
                             runtime_object(cc_cmd, flags), "-o", exe],
           f"compiling the replay driver of {os.path.basename(spec_path)}")
    return checked, exe


def run_driver(exe: str, trace_path: str, reps: int = 1, dump: Optional[str] = None,
               env: Optional[dict] = None, only: Optional[list] = None,
               timeout: Optional[float] = None) -> Optional[list]:
    """The driver's runs (one dict per candidate and repetition), each in a fresh
    directory under a temporary one; a failed replay raises EnvError with its message.
    `only`: the candidates' prefixes to replay, in that order (else all, shuffled);
    `timeout`: seconds, after which the driver is stopped and None returned."""
    with tempfile.TemporaryDirectory(prefix="p2gen-replay-") as tmp:
        argv = [exe, trace_path, tmp, str(reps)] + ([dump or "-", *only] if only else
                                                    [dump] if dump else [])
        try:
            r = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
    if r.returncode != 0:
        raise EnvError(f"error: {r.stderr.strip() or f'the replay failed (status {r.returncode})'}")
    return [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]


def summarise(runs: list) -> dict:
    """Per prefix: the median total ns over the repetitions, and per (unit, op) the count
    and the median ns per operation."""
    out: dict = {}
    for run in runs:
        d = out.setdefault(run["prefix"], {"totals": [], "ops": {}})
        d["totals"].append(run["total_ns"])
        for unit, op, count, ns in run["ops"]:
            d["ops"].setdefault((unit, op), {"count": count, "ns": []})["ns"].append(ns / count)
    for d in out.values():
        d["total_ns"] = _median(d.pop("totals"))
        for v in d["ops"].values():
            v["ns_per_op"] = _median(v.pop("ns"))
    return out


def _median(xs: list) -> float:
    xs = sorted(xs)
    m = len(xs) // 2
    return float(xs[m]) if len(xs) % 2 else (xs[m - 1] + xs[m]) / 2


def measure_candidates(spec: str, trace: str, candidates: list, reps: int = 3,
                       out_dir: Optional[str] = None, cc: str = "cc") -> dict:
    """Replay `trace` (of `spec`: checked first) on each candidate (spec path, prefix:
    distinct; the same API as `spec`) linked into one driver, `reps` times, each
    repetition a process of its own running the candidates in a random order:
    {prefix: summarise()'s dict}."""
    from .build import load
    read_trace(trace, load(spec))
    with tempfile.TemporaryDirectory(prefix="p2gen-replay-build-") as tmp:
        _, exe = build_driver(spec, out_dir or tmp, cc=cc, candidates=candidates)
        runs = [r for _ in range(reps) for r in run_driver(exe, os.path.abspath(trace), 1)]
    return summarise(runs)


def measure(spec: str, trace: str, reps: int = 3, out_dir: Optional[str] = None,
            cc: str = "cc") -> dict:
    """Replay `trace` on `spec` as written: summarise()'s dict of it."""
    res = measure_candidates(spec, trace, [(spec, None)], reps, out_dir, cc)
    return next(iter(res.values()))
