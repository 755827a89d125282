"""A grammar-based Hypothesis strategy for near-valid p2gen specs (tests/compiler/test_fuzz_frontend.py).

`specs()` draws whole spec texts that follow P2Spec.g4 declaration by declaration:
records with every field type (i8..u64, f32/f64/float/double, char[N], text, ref <container>),
containers with layer stacks built from the layer library, cursors with predicates over
fields, $params and constants of every kind, and relationships. Each spec draws a `chaos`
level (0, 2, 10 or 35 percent): at 0 the spec is meant to check cleanly (most do), above
it every choice may go wrong in a way the checker must report -- a bad char length or type
name, an unknown or misplaced layer, a parameter of the wrong kind or an unknown one, a
name that collides with another declaration, is a C keyword, starts with '_' or is not
declared, a comparison of the wrong kind, a relationship with a non-rel layer.

Only the text is returned: the tests judge the outcome by running the front end.
"""
from __future__ import annotations

from itertools import permutations

from hypothesis import strategies as st

from p2gen.layers import LAYERS

INT_TYPES = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]
FLOAT_TYPES = ["f32", "f64", "float", "double"]
INT_RANGE = {t: ((-(1 << (int(t[1:]) - 1)), (1 << (int(t[1:]) - 1)) - 1) if t[0] == "i"
                 else (0, (1 << int(t[1:])) - 1)) for t in INT_TYPES}
BAD_TYPES = ["u33", "int", "string", "char", "char[0]", "char[-1]", "char[0x0]",
             "char[99999999999999999999]", "char[1.5]", "text[4]", "u32[8]", "ref",
             "ref ref", "i32 x", "f16", "bool", "Text", "REF c0"]
C_KEYWORDS = ["int", "struct", "char", "auto", "NULL", "bool", "while", "_Bool", "double"]
GRAMMAR_KEYWORDS = ["record", "of", "order", "with", "on", "true", "relationship", "not"]
ODD_NAMES = ["ref", "one", "many", "to", "text", "identity", "key", "insert", "count",
             "find_x", "get_id", "set_a", "purge", "all", "_hidden", "x" * 60, "T", "q9"]
# Names a valid spec may choose that meet the names the generator emits, C keywords-ish
# words, macros of the headers the generated code includes, runtime names, and the
# suffixes generated names are made with (drawn with `risky`, even at chaos 0: the checker
# must refuse or the C compile -- tests/compiler/test_fuzz_frontend.py::test_accepted_specs_compile).
RISKY_NAMES = ["db", "ref", "err", "seg", "open", "seg_open", "close", "errmsg", "verify",
               "begin", "commit", "abort", "sync", "cur", "k", "rc", "e", "key", "out",
               "owner", "member", "partner", "it", "n", "path", "file", "names", "sizes",
               "EOF", "errno", "INT64_MIN", "SIZE_MAX", "BUFSIZ", "P2_NIL", "P2_OK", "NULL",
               "linux", "unix", "stdin", "stderr", "offsetof", "va_arg", "assert", "PRIu64",
               "E2BIG", "p2", "p2_seg", "p2h_db", "p2v", "insert", "get", "at", "update",
               "delete", "count", "reserve", "purge", "all", "set_id", "find_id", "elem",
               "root", "ready", "cursor", "iter", "next", "NOREF", "JOURNALLED", "x", "c_x",
               "a", "a_all", "a_set", "c_elem", "main", "memcpy", "exit", "free", "signal"]
SUFFIXES = ["all", "set", "set_id", "find_id", "elem", "root", "ready", "cursor", "open",
            "next", "get", "ref", "insert", "db", "iter", "count", "at", "x"]
# File names and string constants (as spec text, escapes and all) that must come out of the
# generated C as data only.
RISKY_FILES = ["a.db", r"b*/ int x; /*\n.db", "%s%n%s.db", "??/.db", "d//e.db", r"\\q.db"]   # spec text
RISKY_CHARS = ['*/', '/*', '//', '\\n', '\\"', '\\\\', '??/', '%n', '\\t', 'é', 'a']

# The layer library, from its registry (p2gen.layers.LAYERS): a new layer is drawn, with
# its parameters, as soon as it is registered.
def _layers(**attrs) -> list:
    return [n for n, l in LAYERS.items() if all(getattr(l, a) == v for a, v in attrs.items())]


ALL_LAYERS = list(LAYERS)
STORAGES = _layers(realm="ds", role="storage")
INDEXES = _layers(realm="ds", role="index")
# top stacks: a top layer over ds, under any order of distinct top layers over top, with at
# most one that defers deletes (the checker refuses a second)
TOPS = [list(above) + [base]
        for base in _layers(realm="top", below="ds")
        for n in range(len(_layers(realm="top", below="top")) + 1)
        for above in permutations(_layers(realm="top", below="top"), n)
        if sum(LAYERS[a].defers_delete for a in above) + LAYERS[base].defers_delete <= 1]
# memory, as the mem layers say what they are (layers/base.py, MemLayer): the heap (a
# bottom mem layer not in a file), a file (a bottom mem layer whose `file_param` names
# it) and the mem layers stacked over one (whose needs a file's layer meets)
HEAP = [n for n in _layers(realm="mem", below=None) if not LAYERS[n].in_file]
FILE_MEM = [n for n in _layers(realm="mem", below=None) if LAYERS[n].in_file]
OVER_FILE = [n for n in _layers(realm="mem", below="mem")
             if any(all(getattr(LAYERS[f], a) for a in LAYERS[n].requires_below) for f in FILE_MEM)]


def file_mems_under(over) -> list:
    """The file layers a mem layer over a file (or None) may be stacked on."""
    return [f for f in FILE_MEM
            if over is None or all(getattr(LAYERS[f], a) for a in LAYERS[over].requires_below)]
# what a container's memory is drawn as: the heap, or one of the files
ON_HEAP = "heap"
RELS = _layers(realm="rel")
UNKNOWN_LAYERS = ["btree", "hashh", "Hash", "top", "mem", "list"]
FILES = ["a.db", "b.db", "dir/c.db"]
OPS = ["==", "!=", "<", "<=", ">", ">="]
# parameters each layer takes, and the ones it requires
PARAMS = {n: {p.name: p for p in l.params} for n, l in LAYERS.items()}
LAYER_PARAMS = {n: list(ps) for n, ps in PARAMS.items() if ps}
REQUIRED = {n: [p for p, s in ps.items() if s.required] for n, ps in PARAMS.items()}


class _Rec:
    def __init__(self, name):
        self.name = name
        self.fields = []          # (name, kind, type_text); kind int/float/char/text/ref/bad


class _Cont:
    def __init__(self, name, rec, qualifies, mem, stable, ordered):
        self.name, self.rec, self.qualifies, self.mem, self.stable, self.ordered = (
            name, rec, qualifies, mem, stable, ordered)
        self.roles = set()
        self.backwards = []       # the keys of `ordered` whose layer walks backwards


class _Gen:
    def __init__(self, draw, chaos, risky=0):
        self.draw = draw
        self.chaos = chaos
        self.risky = risky        # percent of names and strings drawn from the RISKY lists
        self.files = (FILES if not risky else
                      [self.draw(st.sampled_from(RISKY_FILES)), "b.db", "dir/c.db"])
        self.names = []           # every declared name, for collisions
        self.counter = 0
        self.records: list[_Rec] = []
        self.containers: list[_Cont] = []
        self.c_names: list[str] = []   # container names drawn so far (for ref fields)
        self.journals = {}             # file -> (mem layer over it, params), or None
        self.file_layers = {}          # file -> its bottom mem layer
        # where the containers live: all in one memory (references may link them) or mixed
        self.memory = self.pick([ON_HEAP, self.files[0], "mixed"])

    # -- choices -----------------------------------------------------------------
    def chance(self, pct):
        return pct > 0 and self.draw(st.integers(0, 99)) < pct

    def bad(self):
        return self.chance(self.chaos)

    def pick(self, seq):
        return self.draw(st.sampled_from(list(seq)))

    def fresh(self, stem):
        if self.chance(self.risky):
            if self.names and self.chance(50):
                return f"{self.pick(self.names)}_{self.pick(SUFFIXES)}"
            return self.pick(RISKY_NAMES)
        self.counter += 1
        return f"{stem}{self.counter}"

    def name(self, stem):
        if self.bad():
            n = self.pick(["collide", "ckw", "gkw", "odd"])
            if n == "collide" and self.names:
                return self.pick(self.names)
            if n == "ckw":
                return self.pick(C_KEYWORDS)
            if n == "gkw":
                return self.pick(GRAMMAR_KEYWORDS)
            return self.pick(ODD_NAMES)
        return self.fresh(stem)

    def ws(self):
        return self.pick([" ", " ", " ", "\n    ", "\t", " /* c */ ", "  "]) if self.chaos else " "

    # -- literals ----------------------------------------------------------------
    def int_text(self, lo, hi):
        if self.bad():
            v = self.pick([lo - 1, hi + 1, 1 << 64, -(1 << 63) - 1, 0, -1, 10 ** 30])
        else:
            v = self.draw(st.one_of(st.integers(lo, hi), st.sampled_from([lo, hi])))
        form = self.pick(["dec", "dec", "hex", "under"])
        if form == "hex" and v >= 0:
            return hex(v)
        if form == "under" and abs(v) >= 1000:
            return f"{v:_d}"
        return str(v)

    def float_text(self):
        return self.pick(["0.5", "1.", ".25", "1e6", "-2.5E-3", "3.0", "-0.0", "1e308",
                          "1e999", "0.1"])

    def string_text(self, max_len=8):
        if self.bad():
            return self.pick(['"\\q"', '"a\\"b"', '"tab\\t"', '"nl\\n"', '""', '"\\\\"',
                              '"é"', '"' + "y" * 50 + '"', '"?\\"??="'])
        if self.chance(self.risky):
            s = "".join(self.draw(st.lists(st.sampled_from(RISKY_CHARS), max_size=4)))
            if len(s.encode()) <= max_len:
                return '"' + s + '"'
        s = self.draw(st.text(alphabet="abcXYZ09 _-?", max_size=max_len))
        return '"' + s + '"'

    def any_value(self):
        return self.pick([
            lambda: self.int_text(-5, 5), self.float_text, self.string_text,
            lambda: "true", lambda: "false", lambda: self.pick(["identity", "default", "id", "x"]),
        ])()

    # -- records -------------------------------------------------------------------
    def field_type(self, rec):
        if self.bad():
            return "bad", self.pick(BAD_TYPES)
        kind = self.pick(["int"] * 4 + ["float", "char", "char", "text", "ref"])
        if kind == "int":
            return "int:" + (t := self.pick(INT_TYPES)), t
        if kind == "float":
            t = self.pick(FLOAT_TYPES)
            return "float", t
        if kind == "char":
            n = self.pick([1, 2, 4, 10, 40, 255])
            return f"char:{n}", f"char[{n}]"
        if kind == "text":
            return "text", "text"
        target = (self.pick(self.c_names) if self.c_names and not self.bad()
                  else self.pick(["nowhere", "c1"]))
        return "ref", f"ref {target}"

    def record(self):
        rec = _Rec(self.name("r"))
        n = self.draw(st.integers(0 if self.chaos else 1, 5))
        for i in range(n):
            fname = self.name("f") if (i or self.chaos) else "id"
            if i == 0 and not self.chaos:
                kind, t = "int:" + (t := self.pick(INT_TYPES)), t
            else:
                kind, t = self.field_type(rec)
            rec.fields.append((fname, kind, t))
            self.names.append(fname)
        self.records.append(rec)
        self.names.append(rec.name)
        body = "".join(f"{self.ws()}{f}: {t};" for f, _, t in rec.fields)
        return f"record {rec.name} {{{body} }}"

    # -- containers ----------------------------------------------------------------
    def key_for(self, rec, layer, param):
        kinds = tuple(k + ":" if k in ("int", "char") else k
                      for k in PARAMS[layer][param].field_kinds)
        ok = [f for f in rec.fields if f[1].startswith(kinds)] if rec else []
        if self.bad() or not ok:
            if self.bad() or not rec or not rec.fields:
                return self.pick(["nokey", "identity", "7", '"id"'])
            return self.pick(rec.fields)[0]
        # distinct: a record of a bad spec may declare a name twice
        names = list(dict.fromkeys(f[0] for f in ok if f[1].startswith(("int:", "char:"))))
        if PARAMS[layer][param].composite and len(names) > 1 and self.chance(20):
            # a composite key: two distinct integer or char fields
            first = self.pick(names)
            return f"({first}, {self.pick([n for n in names if n != first])})"
        return self.pick(ok)[0]

    def param_value(self, layer, param, rec):
        if self.bad():
            return self.any_value()
        ps = PARAMS.get(layer, {}).get(param)
        if ps is None:
            return self.any_value()
        if ps.kind == "field":
            return self.key_for(rec, layer, param)
        if ps.kind == "str":
            return '"' + self.pick(self.files) + '"'
        if ps.kind == "bool":
            return self.pick(["true", "false"])
        if ps.kind == "choice":
            return self.pick(ps.choices)
        return self.int_text(*ps.fuzz_range)

    def params_for(self, layer, rec, mem_file):
        names = list(LAYER_PARAMS.get(layer, []))
        chosen = [p for p in names if p in REQUIRED.get(layer, []) and not self.bad()]
        chosen += [p for p in names if p not in chosen and self.chance(30)]
        if self.bad():
            chosen.append(self.pick(["kee", "bucket", "size", "file", "key", "sync"]))
        if self.bad() and chosen:
            chosen.append(self.pick(chosen))            # given twice
        out = []
        for p in chosen:
            if (PARAMS.get(layer, {}).get(p) is not None and PARAMS[layer][p].kind == "str"
                    and mem_file is not None
                    and not self.bad()):
                out.append((p, '"' + mem_file + '"'))
            else:
                out.append((p, self.param_value(layer, p, rec)))
        return out

    def legal_chain(self):
        """(layers outermost first, file or None, (mem layer over the file, its params) or
        None)."""
        chain = list(self.pick(TOPS))
        for _ in range(self.draw(st.integers(0, 3))):
            chain.append(self.pick(INDEXES))
        storage = self.pick(STORAGES)
        if (not LAYERS[storage].stable_refs and any(c in INDEXES for c in chain)
                and not self.bad()):              # no index over references that move
            storage = self.pick([s for s in STORAGES if LAYERS[s].stable_refs])
        chain.append(storage)
        mem = self.memory if self.memory != "mixed" or self.bad() else self.pick(
            [ON_HEAP] + self.files)
        if mem == ON_HEAP:
            return chain + [self.pick(HEAP)], None, None
        if mem not in self.journals or self.bad():     # a file is journalled as a whole
            over = self.pick(OVER_FILE)
            self.journals[mem] = ((over, self.params_for(over, None, None))
                                  if self.chance(40) else None)
        jl = self.journals[mem]
        # a file has one bottom mem layer (the containers sharing it must agree), one
        # that the layer over it, if any, can stand on
        if mem not in self.file_layers or self.bad():
            self.file_layers[mem] = self.pick(file_mems_under(jl[0] if jl is not None else None))
        below = [self.file_layers[mem]]
        return chain + ([jl[0]] + below if jl is not None else below), mem, jl


    def chaos_chain(self):
        n = self.draw(st.integers(0, 7))
        return [self.pick(ALL_LAYERS + UNKNOWN_LAYERS) for _ in range(n)] or ["top2ds"]

    def container(self, name):
        rec = self.pick(self.records) if self.records and not self.bad() else None
        rec_name = rec.name if rec else self.pick(["nosuch", "r1", "int"])
        if self.bad():
            chain, mem_file, jl = self.chaos_chain(), self.pick(self.files), None
        else:
            chain, mem_file, jl = self.legal_chain()
        if self.bad() and len(chain) > 1:               # drop a layer
            del chain[self.draw(st.integers(0, len(chain) - 1))]
        counts = {c: chain.count(c) for c in chain}
        ordered = []                                    # keys some layer keeps in order
        backwards = []                                  # ... and can walk backwards (desc)
        inline, with_args = [], []
        for layer in chain:
            if jl is not None and layer == jl[0]:
                ps = jl[1]
            else:
                ps = self.params_for(layer, rec, mem_file)
            if layer in LAYERS and LAYERS[layer].keeps_order:
                ordered += [v for k, v in ps if k == "key"]
                if LAYERS[layer].reverse_walk:
                    backwards += [v for k, v in ps if k == "key"]
            if ps and counts[layer] == 1 and self.chance(40):
                with_args.append((layer, ps))
                inline.append([])
            else:
                inline.append(ps)
        if self.bad():
            with_args.append((self.pick(ALL_LAYERS + UNKNOWN_LAYERS),
                              [("key", self.any_value())]))
        eq = ""
        for layer, ps in reversed(list(zip(chain, inline))):
            args = f"({', '.join(f'{k} = {v}' for k, v in ps)})" if ps else ""
            if not ps and self.chance(5):
                args = "()"
            eq = f"{layer}{args}" + (f"[{eq}]" if eq else "")
        text = f"container {name} of {rec_name} ={self.ws()}{eq}"
        if with_args:
            text += " with " + ", ".join(
                f"{layer}({', '.join(f'{k} = {v}' for k, v in ps)})" for layer, ps in with_args)
        self.names.append(name)
        if rec is not None:
            known = [LAYERS[c] for c in chain if c in LAYERS]
            qualifies = any(l.qualifies for l in known)
            mem = mem_file if any(c in FILE_MEM for c in chain) else ON_HEAP
            stable = all(l.stable_refs for l in known)
            self.containers.append(_Cont(name, rec, qualifies, mem, stable, ordered))
            self.containers[-1].backwards = backwards
        return text + ";"

    # -- cursors -------------------------------------------------------------------
    def const_for(self, kind):
        if self.bad() or kind in ("bad", "text"):
            return self.any_value()
        if kind.startswith("int:"):
            return self.int_text(*INT_RANGE[kind[4:]])
        if kind == "ref":
            return self.int_text(0, (1 << 64) - 1)
        if kind == "float":
            return self.pick([self.float_text(), self.int_text(-9, 9)])
        if kind.startswith("char:"):
            return self.string_text(int(kind[5:]))
        return self.any_value()

    def comparison(self, rec, params):
        usable = [f for f in rec.fields if f[1] not in ("text", "bad")]
        if not usable or self.bad():
            usable = rec.fields or [("nofield", "bad", "")]
        f = self.pick(usable)
        right = self.pick(["const", "const", "param", "field"])
        if right == "param":
            key = f[1]
            if self.bad() or key not in params.values():
                pname = self.pick(["p", "q", "lo", "hi", "int", "_p"]) if self.bad() else (
                    self.fresh("p"))
            else:
                pname = next(k for k, v in params.items() if v == key)
            params[pname] = key
            other = "$" + pname
        elif right == "field":
            same = [g for g in usable if g[1] == f[1]]
            other = self.pick(same if same and not self.bad() else usable)[0]
        else:
            other = self.const_for(f[1])
        op = self.pick(OPS)
        left = f[0]
        if self.bad():
            left = self.const_for(f[1])                   # no field, or two constants
        return f"{other} {op} {left}" if self.chance(15) else f"{left} {op} {other}"

    def predicate(self, rec, params, depth=0):
        kind = self.pick(["cmp", "cmp", "cmp", "and", "or", "not", "paren"]
                         if depth < 3 else ["cmp"])
        if kind == "cmp":
            return self.comparison(rec, params)
        if kind == "not":
            return "not " + self.predicate(rec, params, depth + 1)
        if kind == "paren":
            return "(" + self.predicate(rec, params, depth + 1) + ")"
        a = self.predicate(rec, params, depth + 1)
        b = self.predicate(rec, params, depth + 1)
        return f"({a} {kind} {b})" if self.chance(50) else f"{a} {kind} {b}"

    def cursor(self):
        name = self.name("k")
        if not self.containers or self.bad():
            cname = self.pick(self.c_names + ["nocont"]) if self.c_names else "nocont"
            cont = next((c for c in self.containers if c.name == cname), None)
        else:
            cont = self.pick(self.containers)
            cname = cont.name
        text = f"cursor {name} on {cname}"
        rec = cont.rec if cont else None
        if rec is not None and rec.fields and (self.chaos or cont.qualifies) and self.chance(80):
            text += " where " + self.predicate(rec, {})
        if rec is not None and rec.fields and self.chance(30):
            if cont.ordered and not self.bad():
                key = self.pick(cont.ordered)
                text += f" order by {key}"
                if key in cont.backwards and self.chance(30):
                    text += " desc"
                elif self.chance(10):
                    text += " asc"
            else:
                text += f" order by {self.pick(rec.fields)[0]}"
                if self.chance(30):   # desc over an order no layer walks backwards
                    text += " desc"
        elif self.bad():
            text += " order by nofield"
        self.names.append(name)
        return text + ";"

    # -- relationships ---------------------------------------------------------------
    def relationship(self):
        name = self.name("rel")
        good = [c for c in self.containers if c.stable]
        if not good or self.bad():
            a = self.pick(self.c_names + ["nocont"])
            b = self.pick(self.c_names + ["nocont"])
            ca = next((c for c in self.containers if c.name == a), None)
            cb = next((c for c in self.containers if c.name == b), None)
        else:
            ca = self.pick(good)
            same = [c for c in good if c.mem == ca.mem]
            cb = self.pick(same)
            a, b = ca.name, cb.name
        m1 = self.pick(["one", "many"])
        m2 = self.pick(["one", "many"])
        if self.bad():
            m1 = self.pick(["some", "ONE", "0", "many"])
        to = "to" if not self.bad() else self.pick(["from", "TO", "->", "and"])

        def role(cont):
            if self.bad():
                r = self.pick(ODD_NAMES + (list(f[0] for f in cont.rec.fields) if cont else []))
            else:
                r = self.fresh("role")
            if cont is not None:
                cont.roles.add(r)
            return r

        r1, r2 = role(ca), role(cb)
        if self.bad():
            r2 = r1
        kind = {("one", "one"): "1:1", ("many", "many"): "M:N"}.get((m1, m2), "1:N")
        if self.bad():
            layer = self.pick(ALL_LAYERS + UNKNOWN_LAYERS)
        else:
            layer = self.pick([r for r in RELS if kind in LAYERS[r].kinds] or RELS)
        ps = []
        for pname in LAYER_PARAMS.get(layer, []):
            if self.chance(30) or self.bad():
                ps.append((pname, self.param_value(layer, pname, None)))
        if self.bad():
            ps.append((self.pick(["capacity", "cap", "key"]), self.any_value()))
        eq = layer + (f"({', '.join(f'{k} = {v}' for k, v in ps)})" if ps else "")
        if self.bad():
            eq += f"[{self.pick(ALL_LAYERS)}]"
        self.names.append(name)
        return f"relationship {name} {m1} {a}.{r1} {to} {m2} {b}.{r2} = {eq};"


@st.composite
def specs(draw, chaos=None, risky=0):
    """A spec text; chaos (percent) is drawn unless given; `risky` (percent): names and
    strings drawn from RISKY_NAMES / RISKY_FILES / RISKY_CHARS."""
    if chaos is None:
        chaos = draw(st.sampled_from([0, 0, 2, 10, 35]))
    g = _Gen(draw, chaos, risky)
    # pre-draw container names so that ref fields can point at them
    decls = []
    g.c_names = [g.name("c") for _ in range(draw(st.integers(0 if chaos else 1, 4)))]
    for _ in range(draw(st.integers(1, 3))):
        decls.append(g.record())
    for name in g.c_names:
        decls.append(g.container(name))
    for _ in range(draw(st.integers(0, 3))):
        decls.append(g.cursor())
    for _ in range(draw(st.integers(0, 3))):
        decls.append(g.relationship())
    if chaos and draw(st.booleans()):
        decls = draw(st.permutations(decls))
    sep = draw(st.sampled_from(["\n", "\n", "\r\n", "\n\n// comment\n", " "])) if chaos else "\n"
    return sep.join(decls) + "\n"
