"""`p2gen tune`, step 3's workload: the C that runs one candidate (by its prefix).

A workload is what tune_measure builds every candidate's driver from: `shared()` (C
compiled once: the data every candidate sees alike) and `candidate(prefix)` (a function
`static int <prefix>_tune_run(const char *dir, p2t_out *o)` that opens the candidate's
database in `dir`, runs the workload through the candidate's API and reports each phase
with p2t_phase(o, op, runs, ns) and its answers with p2t_check(o, value)). `Synthesised`
makes it from a profile; a trace's exact replay plugs in as another class of the same
shape.

Synthesised: load the profile's largest count of rows with keys drawn to match each key's
min, max, distinct count and order; then each operation of the profile, in proportion to
its count (scaled to `budget` operations in all, each phase at least `min_runs` of them
or all the profile counted): finds by each key (of keys present), gets, ats, updates that
keep and that change a key, walks of each cursor (parameters from a row's fields the cursor
compares with), deletes. Each is a phase, timed in chunks (the median chunk: tune_measure);
its ns per operation x the profile's count is the candidate's measured cost of that
operation. Over a
storage whose references move (qsort), an operation on a row finds it by the first key.
Not run yet: upserts, insert_many, updates and deletes through a cursor.
"""
from __future__ import annotations

import math
from typing import Optional

from .layers import LAYERS
from .model import And, Compare, FieldRef, ParamRef, chain_terms

OK_CODES = "rc == P2_OK || rc == P2_NOTFOUND || rc == P2_EDUP || rc == P2_ERANGE"
WALK_ROWS_BUDGET = 4_000_000      # rows a candidate may scan across its walks (worst case)


def _cstr(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


class Synthesised:
    """The workload of container `info`'s profile `cprof` (a dict of the profile's
    containers' entry), `budget` operations beside the load."""

    def __init__(self, info, cprof: dict, cursors: list, budget: int = 1_000_000,
                 min_runs: int = 200_000):
        self.info, self.cprof = info, cprof
        self.n = max(int(cprof.get("count_max", 0)), 1)
        ops = cprof.get("ops", {})
        keys = cprof.get("keys", {})
        self.key_objs = {k.name: k for k in info.keys()}
        # the phases in the order they run: reads first, then what changes the rows
        counts = {}
        for k, ks in keys.items():
            if k in self.key_objs and ks.get("finds"):
                counts[f"find_{k}"] = int(ks["finds"])
        self.cursors = {c.name: c for c in cursors
                        if c.container is info and not c.synthetic}
        for name, cs in cprof.get("cursors", {}).items():
            if name in self.cursors and cs.get("walks"):
                counts[f"walk_{name}"] = int(cs["walks"])
        for op in ("get", "at", "update_other", "update_key", "delete"):
            counts[op] = int(ops.get(op, 0))
        total = sum(counts.values())
        scale = min(1.0, budget / total) if total else 1.0
        # each phase long enough to time (min_runs), else in the profile's proportions
        self.runs = {op: max(min(c, min_runs), round(c * scale)) for op, c in counts.items() if c}
        if "delete" in self.runs:
            self.runs["delete"] = min(self.runs["delete"], self.n // 2 or 1)
        for op in list(self.runs):
            if op.startswith("walk_"):
                self.runs[op] = max(1, min(self.runs[op], WALK_ROWS_BUDGET // self.n))
        # the profile's count of each phase (insert: every insert, timed by the load; a
        # session over rows loaded before it counted none, and its load costs nothing)
        self.counts = dict(counts, insert=int(ops.get("insert", 0)))
        self.fields = list(info.record.fields)
        self.key_fields = self._key_fields()
        # per candidate prefix: whether its storage's references stay put (set by the
        # caller; else the spec's own storage's)
        self.stable_refs: dict = {}
        self.stable = LAYERS[info.storage.layer.name].stable_refs
        self.first_key = next((k for k in info.keys() if not hasattr(k, "names")), None)

    # -- data ------------------------------------------------------------------------------
    def _key_fields(self) -> dict:
        """field name -> its key's stats, for the fields that are a single-field key."""
        out = {}
        for name, ks in self.cprof.get("keys", {}).items():
            k = self.key_objs.get(name)
            if k is not None and not hasattr(k, "names"):
                out[name] = ks
        return out

    def _distinct(self, ks: dict, unique: bool) -> int:
        if unique:
            return self.n
        d = ks.get("distinct") or self.n
        return int(min(max(round(d), 1), self.n))

    def _unique_fields(self) -> set:
        return {li.key_field_obj.name for li in self.info.ds
                if li.key_field_obj is not None and not hasattr(li.key_field_obj, "names")
                and (li.params.get("unique") or li.layer.unique_key)}

    def _value_c(self, f, j: str, ks: Optional[dict]) -> str:
        """C of field f's value for distinct index j (key fields: spread over min..max)."""
        t = f.type
        if t.kind == "int":
            lo = ks.get("min") if ks else None
            hi = ks.get("max") if ks else None
            if not isinstance(lo, int) or not isinstance(hi, int):
                lo, hi = 0, min(t.max_value, 1 << 30)
            return f"({t.ctype})({lo}LL + (int64_t)p2t_spread({j}, {hi - lo}ULL))"
        if t.kind == "float":
            lo = float(ks.get("min", 0.0)) if ks and ks.get("min") is not None else 0.0
            hi = float(ks.get("max", 1e6)) if ks and ks.get("max") is not None else 1e6
            return f"({t.ctype})({lo!r} + (double)({j}) * ({hi - lo!r}) / (double)p2t_n)"
        return ""

    def shared(self) -> str:
        """The rows, the keys' values and the operations' picks: the same for every
        candidate (made once, by p2t_setup)."""
        unique = self._unique_fields()
        out = [f"static const uint64_t p2t_n = {self.n}ULL;",
               "static uint64_t p2t_rng = 0x9E3779B97F4A7C15ULL;",
               "static uint64_t p2t_next(void) { uint64_t x = p2t_rng; x ^= x << 13; "
               "x ^= x >> 7; x ^= x << 17; return p2t_rng = x; }",
               "static uint64_t p2t_spread(uint64_t j, uint64_t span)",
               "{ return p2t_n > 1 ? (uint64_t)((long double)j * (long double)span / "
               "(long double)(p2t_n - 1)) : 0; }",
               "static uint64_t *p2t_perm;       /* row -> distinct index, per key field */"]
        decls, setup = [], []
        for f in self.fields:
            if f.type.kind not in ("int", "float", "char") or f.type.target is not None:
                continue
            ks = self.key_fields.get(f.name)
            if f.type.kind == "char":
                decls.append(f"static char (*p2t_{f.name})[{f.type.length}];")
            else:
                decls.append(f"static {f.type.ctype} *p2t_{f.name};")
            setup.append(f"    p2t_{f.name} = calloc(p2t_n, sizeof *p2t_{f.name});")
            setup.append(f"    if (!p2t_{f.name}) return -1;")
            if ks is not None:
                d = self._distinct(ks, f.name in unique)
                in_order = ks.get("in_order", True)
                setup.append(f"    for (uint64_t i = 0; i < p2t_n; i++) p2t_perm[i] = "
                             f"(uint64_t)((long double)i * {d} / (long double)p2t_n);")
                if not in_order:
                    setup.append("    for (uint64_t i = p2t_n - 1; i > 0; i--) { uint64_t j = "
                                 "p2t_next() % (i + 1), t = p2t_perm[i]; p2t_perm[i] = "
                                 "p2t_perm[j]; p2t_perm[j] = t; }")
                j = f"(p2t_perm[i] * (p2t_n - 1) / {max(d - 1, 1)}ULL)"
            else:
                j = "(p2t_next() % p2t_n)"
            if f.type.kind == "char":
                w = min(f.type.length - 1, 19)
                setup.append(f"    for (uint64_t i = 0; i < p2t_n; i++) snprintf(p2t_{f.name}[i], "
                             f"{f.type.length}, \"%0{w}llu\", (unsigned long long)"
                             f"({j} % {10 ** w}ULL));" if w > 0 else "")
            else:
                setup.append(f"    for (uint64_t i = 0; i < p2t_n; i++) p2t_{f.name}[i] = "
                             f"{self._value_c(f, j, ks)};")
        out += decls
        out += ["static int p2t_setup(void)", "{",
                "    p2t_perm = calloc(p2t_n, sizeof *p2t_perm);", "    if (!p2t_perm) return -1;"]
        out += [s for s in setup if s]
        out += ["    return 0;", "}"]
        return "\n".join(out) + "\n"

    # -- one candidate -----------------------------------------------------------------------
    def _fill(self, p: str, rec: str, row: str) -> list:
        out = [f"    memset(&{rec}, 0, sizeof {rec});"]
        for f in self.fields:
            if f.type.target is not None:
                out.append(f"    {rec}.{f.name} = ({f.type.ctype})-1;")   # no reference
            elif f.type.kind == "char":
                out.append(f"    memcpy({rec}.{f.name}, p2t_{f.name}[{row}], {f.type.length});")
            elif f.type.kind in ("int", "float"):
                out.append(f"    {rec}.{f.name} = p2t_{f.name}[{row}];")
        return out

    def _ref_of(self, p: str, cp: str, row: str) -> list:
        """Set `ref` to row's reference: the stored one, or (moving references) a find."""
        if self.stable_refs.get(p, self.stable) or self.first_key is None:
            return [f"        ref = refs[{row}];"]
        k = self.first_key.name
        return [f"        if ({cp}_find_{k}(db, p2t_{k}[{row}], &ref) != P2_OK) continue;"]

    def candidate(self, prefix: str) -> str:
        p, c = prefix, self.info.name
        cp, rtype = f"{p}_{c}", f"{p}_{self.info.record.name}"
        L = [f"static int {p}_tune_run(const char *dir, p2t_out *o)", "{",
             f"    {p}_db *db; {rtype} rec; {p}_ref ref = 0; int rc = 0; uint64_t t, hits = 0;",
             "    (void)ref;   /* a workload of inserts and walks only takes no reference */",
             f"    {p}_ref *refs = calloc(p2t_n, sizeof *refs);",
             "    if (!refs) return -1;",
             f"    if ((rc = {p}_open(&db, dir)) != P2_OK) {{ fprintf(stderr, \"open: %d\\n\", rc);"
             " free(refs); return -1; }",
             "    p2t_rng = 0x2545F4914F6CDD1DULL;",
             # load: every row inserted, timed as the profile's inserts
             "    for (int ch = 0; ch < P2T_CHUNKS; ch++) {",
             "    uint64_t lo = p2t_n * (uint64_t)ch / P2T_CHUNKS, "
             "hi = p2t_n * (uint64_t)(ch + 1) / P2T_CHUNKS;",
             "    t = p2t_now();",
             "    for (uint64_t i = lo; i < hi; i++) {"]
        L += ["    " + s for s in self._fill(p, "rec", "i")]
        L += [f"        rc = {cp}_insert(db, &rec, &refs[i]);",
              f"        if (!({OK_CODES})) goto fail;",
              "        hits += rc == P2_OK;",
              "    }",
              "    p2t_chunk(ch, hi - lo, p2t_now() - t);",
              "    }",
              "    p2t_phase(o, \"insert\", p2t_n);",
              "    p2t_check(o, hits);"]
        for op, runs in self.runs.items():
            L += self._phase(op, runs, p, cp, rtype)
        L += [f"    rc = {p}_close(db); free(refs);",
              "    return rc == P2_OK ? 0 : -1;",
              "fail:",
              f"    fprintf(stderr, \"{p}: %s\\n\", {p}_errmsg(db));",
              f"    {p}_close(db); free(refs);",
              "    return -1;", "}", ""]
        return "\n".join(L)

    def _phase(self, op: str, runs: int, p: str, cp: str, rtype: str) -> list:
        # (void)row: a walk without parameters takes none
        L = self._chunked(runs) + ["        uint64_t row = p2t_next() % p2t_n; (void)row;"]
        if op.startswith("find_"):
            k = self.key_objs[op[5:]]
            args = ", ".join(f"p2t_{n}[row]" for n in getattr(k, "names", (k.name,)))
            L += [f"        rc = {cp}_find_{k.name}(db, {args}, &ref);",
                  "        hits += rc == P2_OK;"]
        elif op in ("get", "at"):
            L += self._ref_of(p, cp, "row")
            L += ([f"        rc = {cp}_get(db, ref, &rec); hits += rc == P2_OK;"] if op == "get"
                  else [f"        hits += {cp}_at(db, ref) != NULL; rc = P2_OK;"])
        elif op in ("update_other", "update_key"):
            L += self._ref_of(p, cp, "row")
            L += ["    " + s for s in self._fill(p, "rec", "row")]
            L += self._change(op, "rec", "row")
            L += [f"        rc = {cp}_update(db, &ref, &rec);",
                  "        hits += rc == P2_OK;"]
            L += ["        if (rc == P2_OK) refs[row] = ref;"]
        elif op == "delete":
            L = self._chunked(runs) + ["        uint64_t row = p2t_n - 1 - r;"]
            L += self._ref_of(p, cp, "row")
            L += [f"        rc = {cp}_delete(db, ref);", "        hits += rc == P2_OK;"]
        else:                                                  # walk_<cursor>
            cur = self.cursors[op[5:]]
            args = "".join(f", {a}" for a in self._cursor_args(cur))
            L += [f"        {p}_{cur.name}_cursor k;",
                  f"        rc = {p}_{cur.name}_open(db, &k{args});",
                  f"        if (rc == P2_OK) {{ while ({p}_{cur.name}_next(&k) == P2_OK) hits++; "
                  f"{p}_{cur.name}_close(&k); }}"]
        L += [f"        if (!({OK_CODES})) goto fail;", "    }",
              "    p2t_chunk(ch, hi - lo, p2t_now() - t);", "    }",
              f"    p2t_phase(o, \"{op}\", {runs}ULL);",
              "    p2t_check(o, hits);"]
        return L

    @staticmethod
    def _chunked(runs: int) -> list:
        """The head of a phase's loop over r in 0..runs-1, in P2T_CHUNKS timed chunks."""
        return ["    hits = 0;",
                "    for (int ch = 0; ch < P2T_CHUNKS; ch++) {",
                f"    uint64_t lo = {runs}ULL * (uint64_t)ch / P2T_CHUNKS, "
                f"hi = {runs}ULL * (uint64_t)(ch + 1) / P2T_CHUNKS;",
                "    t = p2t_now();",
                "    for (uint64_t r = lo; r < hi; r++) {"]

    def _change(self, op: str, rec: str, row: str) -> list:
        """update_other: a field no key is made of; update_key: the first key field, to
        another row's value (a unique key: past the largest, kept in the rows' data)."""
        keyf = set()
        for k in self.info.keys():
            keyf.update(getattr(k, "names", (k.name,)))
        plain = [f for f in self.fields if f.type.kind in ("int", "float")
                 and f.type.target is None]
        if op == "update_other":
            f = next((f for f in plain if f.name not in keyf), None)
            return [f"        {rec}.{f.name} += 1;"] if f is not None else []
        f = next((f for f in plain if f.name in self.key_fields), None)
        if f is None:
            return []
        if f.name in self._unique_fields():
            hi = self.key_fields[f.name].get("max")
            return [f"        {rec}.{f.name} = p2t_{f.name}[{row}] = ({f.type.ctype})"
                    f"({hi if isinstance(hi, int) else 0}LL + 1 + (int64_t)r);"]
        return [f"        {rec}.{f.name} = p2t_{f.name}[{row}] = p2t_{f.name}[p2t_next() % p2t_n];"]

    def _cursor_args(self, cur) -> list:
        """Each parameter: the value of the field it is compared with, from a row; an upper
        bound of a field that also has a lower bound (`k >= $lo and k < $hi`) that value
        plus the key span of the profile's rows per walk (else every walk is empty)."""
        flip = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}
        by_param = {}          # parameter -> (field, op) as `field op $param`
        where = cur.where
        for t in (chain_terms(where, And) if where is not None else []):
            if isinstance(t, Compare):
                if isinstance(t.left, FieldRef) and isinstance(t.right, ParamRef):
                    by_param.setdefault(t.right.name, (t.left.name, t.op))
                elif isinstance(t.right, FieldRef) and isinstance(t.left, ParamRef):
                    by_param.setdefault(t.left.name, (t.right.name, flip[t.op]))
        lower = {f for f, op in by_param.values() if op in (">", ">=")}
        out = []
        for name, ftype in cur.params:
            f, op = by_param.get(name, (None, None))
            fld = self.info.record.field(f) if f else None
            if fld is not None and fld.type.kind in ("int", "float") and fld.type.target is None:
                span = self._walk_span(cur, f) if op in ("<", "<=") and f in lower else 0
                out.append(f"({ftype.ctype})(p2t_{f}[row] + {span})" if span
                           else f"({ftype.ctype})p2t_{f}[row]")
            elif ftype.kind == "char":
                out.append(f"p2t_{f}[row]" if fld is not None and fld.type.kind == "char" else '""')
            else:
                out.append(f"({ftype.ctype})0")
        return out

    def _walk_span(self, cur, f: str):
        """The span of field f's values that holds the profile's rows per walk of `cur`
        (its values spread over the key's min..max across the rows), at least 1."""
        cs = self.cprof.get("cursors", {}).get(cur.name, {})
        walks, rows = cs.get("walks") or 0, cs.get("rows") or 0
        if not walks or not rows:
            return 0
        ks = self.key_fields.get(f) or {}
        lo, hi = ks.get("min"), ks.get("max")
        if not isinstance(lo, (int, float)) or not isinstance(hi, (int, float)):
            return max(1, round(rows / walks))
        span = (rows / walks) * (hi - lo) / max(self.n - 1, 1)
        return max(1, math.ceil(span)) if isinstance(lo, int) and isinstance(hi, int) else span

    def profile_counts(self) -> dict:
        """The profile's count of each phase the driver runs."""
        return {op: self.counts.get(op, 0) for op in ["insert", *self.runs]}
