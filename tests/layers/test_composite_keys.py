"""Composite keys (`key = (a, b)` on hash, avl and odlist) and upsert (`unique = true`).

The generated C runs under ASan/UBSan through tests/c/composite_driver.c, a command
interpreter over the public API, against a Python model of the same containers on random
operations: finds by composite key, cursors over an equality prefix plus a range in
lexicographic order (ascending and descending), upsert inserting or replacing (and the
other index of the container relinking), key changes refused when a unique key is taken;
on transient memory and on a file (closed and opened again in the middle). Then the
checker's refusals, the planner's choices (`p2gen explain`) and single-key specs."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import DEBUG_FLAG, QUICK_PY_CFLAGS, runtime_obj
from p2gen.build import load
from p2gen.errors import SpecError
from p2gen.harness import HARNESS_CFLAGS, SANITIZE_CFLAGS
from p2gen.plan import explain
from p2gen.render import Renderer
from p2gen.runtime.pyapi import DuplicateError

ROOT = Path(__file__).resolve().parents[2]
DRIVER = ROOT / "tests" / "c" / "composite_driver.c"
RUNTIME = ROOT / "runtime"

OK, NOTFOUND, EDUP = 0, 2, 3
TAGLEN = 4

SPEC = """record lat {{ mat: u32; kind: u16; step: u32; tag: char[4]; }}
record inv {{ mat: u32; when: u64; step: u32; state: u16; }}
container lats of lat
    = top2ds_qualify[{uniq}(key = (mat, kind), unique = true{uargs})
                     [{ordered}(key = (tag, step){oargs})[{ordered}(key = (step, tag){oargs})
                     [array(capacity = 4)[{mem}]]]]];
container invs of inv
    = top2ds_qualify[{ordered}(key = (mat, when){oargs})[odlist(key = (state, step))
                     [array(capacity = 4)[{mem}]]]];
cursor bytag on lats where tag == $t and step >= $lo and step <= $hi order by step;
cursor tagafter on lats where tag > $t;
cursor bystep on lats where step == $s and tag > $t order by tag;
cursor stepdesc on lats where step >= $lo order by step desc;
cursor hist on invs where mat == $m order by when;
cursor histr on invs where mat == $m and when >= $lo and when < $hi order by when desc;
cursor queue on invs where state == $s order by step;
cursor queueafter on invs where state == $s and step > $x;
"""
# the variants: (memory, the unique index of lats, the ordered layer of the other keys)
HASH = ("hash", ", buckets = 4")
AVL = ("avl", "")
BTREE = ("btree", ", node = 128")      # a few entries per node: splits and merges
VARIANTS = {
    "transient": ("transient", HASH, AVL),
    "persistent": ('persistent(file = "ck.db")', HASH, AVL),
    "btree": ('persistent(file = "ck.db")', BTREE, BTREE),
    "avl-unique": ("transient", AVL, BTREE),
}


def spec_text(variant: str) -> str:
    mem, (uniq, uargs), (ordered, oargs) = VARIANTS[variant]
    return SPEC.format(mem=mem, uniq=uniq, uargs=uargs, ordered=ordered, oargs=oargs)


_built: dict = {}


def build(tmp: Path, cc: str, mem: str) -> Path:
    """The driver over the spec on memory `mem`, compiled once per memory and run."""
    if mem in _built:
        return _built[mem]
    d = tmp / mem
    d.mkdir()
    spec = d / "ck.p2"
    spec.write_text(spec_text(mem))
    header, source = Renderer(load(str(spec), "ck"), spec.name).render()
    (d / "ck.h").write_text(header)
    (d / "ck.c").write_text(source)
    for f in ("p2_runtime.c", "p2_runtime.h"):
        shutil.copy(RUNTIME / f, d / f)
    exe = d / "driver"
    cmd = [cc, *HARNESS_CFLAGS, *SANITIZE_CFLAGS, DEBUG_FLAG, "-I", str(d), str(DRIVER), str(d / "ck.c"),
           runtime_obj(cc, [*HARNESS_CFLAGS, *SANITIZE_CFLAGS, DEBUG_FLAG]), "-o", str(exe), "-lm"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-4000:]
    _built[mem] = exe
    return exe


@pytest.fixture(scope="module")
def drivers(tmp_path_factory, cc):
    tmp = tmp_path_factory.mktemp("composite")
    return lambda mem: build(tmp, cc, mem)


def tagcode(t: str) -> str:
    return t or "-"


def tagbytes(t: str) -> bytes:
    """How the C side orders a char[4] field: its bytes, unsigned, up to the end."""
    return t.encode()


class Model:
    """The containers as Python data: lats by (mat, kind) -> [step, tag]; invs as rows."""

    def __init__(self):
        self.lats: dict = {}
        self.invs: list = []

    def run(self, cmd: list) -> tuple:
        """(expected line, or a checker function of the line) for command `cmd`."""
        op, a = cmd[0], cmd[1:]
        L = self.lats
        if op == "u":
            mat, kind, step, tag = a
            ins = (mat, kind) not in L
            L[(mat, kind)] = [step, tag]
            return f"{OK} {int(ins)}"
        if op == "i":
            mat, kind, step, tag = a
            if (mat, kind) in L:
                return f"{EDUP}"
            L[(mat, kind)] = [step, tag]
            return f"{OK}"
        if op == "f":
            v = L.get(tuple(a))
            return f"{NOTFOUND}" if v is None else f"{OK} {v[0]} {tagcode(v[1])}"
        if op == "g":
            tag, step = a
            hits = {f"{m} {k}" for (m, k), (s, t) in L.items() if t == tag and s == step}
            return hits or {"none"}
        if op == "d":
            return f"{OK}" if L.pop(tuple(a), None) is not None else f"{NOTFOUND}"
        if op == "k":
            mat, kind, new = a
            if (mat, kind) not in L:
                return f"{NOTFOUND}"
            if new != kind and (mat, new) in L:
                return f"{EDUP}"
            L[(mat, new)] = L.pop((mat, kind))
            return f"{OK}"
        if op == "b":
            tag, lo, hi = a
            rows = sorted((s, m, k) for (m, k), (s, t) in L.items() if t == tag and lo <= s <= hi)
            return ordered([f"{m},{k},{s}" for s, m, k in rows], [s for s, _, _ in rows],
                           lambda item: int(item.split(",")[2]))
        if op == "t":
            tag, = a
            rows = sorted((tagbytes(t), s, m, k, t) for (m, k), (s, t) in L.items()
                          if tagbytes(t) > tagbytes(tag))
            return ordered([f"{tagcode(t)},{s},{m},{k}" for _, s, m, k, t in rows],
                           [(b, s) for b, s, _, _, _ in rows],
                           lambda item: (tagbytes(item.split(",")[0].replace("-", "")),
                                         int(item.split(",")[1])))
        if op == "B":
            step, tag = a
            rows = sorted((tagbytes(t), m, k, t) for (m, k), (s, t) in L.items()
                          if s == step and tagbytes(t) > tagbytes(tag))
            return ordered([f"{m},{k},{tagcode(t)}" for _, m, k, t in rows],
                           [b for b, _, _, _ in rows],
                           lambda item: tagbytes(item.split(",")[2].replace("-", "")))
        if op == "D":
            lo, = a
            rows = sorted(((s, tagbytes(t), m, k) for (m, k), (s, t) in L.items() if s >= lo),
                          reverse=True)
            return ordered([f"{m},{k},{s}" for s, _, m, k in rows], [s for s, _, _, _ in rows],
                           lambda item: int(item.split(",")[2]))
        if op == "I":
            self.invs.append(list(a))
            return f"{OK}"
        if op == "H":
            m, = a
            rows = sorted((w, s) for (mm, w, s, st) in self.invs if mm == m)
            return " ".join(f"{w},{s}" for w, s in rows)
        if op == "R":
            m, lo, hi = a
            rows = sorted(((w, s) for (mm, w, s, st) in self.invs if mm == m and lo <= w < hi),
                          reverse=True)
            return " ".join(f"{w},{s}" for w, s in rows)
        if op == "Q":
            s_, = a
            rows = sorted((s, mm) for (mm, w, s, st) in self.invs if st == s_)
            return " ".join(f"{s},{mm}" for s, mm in rows)
        if op == "A":
            s_, x = a
            rows = sorted((s, mm) for (mm, w, s, st) in self.invs if st == s_ and s > x)
            return " ".join(f"{s},{mm}" for s, mm in rows)
        if op == "s":
            m, w, new = a
            for row in self.invs:
                if row[0] == m and row[1] == w:
                    row[3] = new
                    return f"{OK}"
            return f"{NOTFOUND}"
        if op == "O":
            return "reopened"
        raise AssertionError(op)


def ordered(items: list, keys: list, key_of):
    """A cursor's expected output: these items, in key order; elements with equal keys
    may come in any order among themselves (ties go by reference)."""
    def check(line: str) -> bool:
        got = line.split()
        return sorted(got) == sorted(items) and [key_of(g) for g in got] == keys
    check.expected = " ".join(items)
    return check


def matches(expected, line: str) -> bool:
    if callable(expected):
        return expected(line)
    if isinstance(expected, set):
        return line in expected
    return line == expected


# -- random commands -----------------------------------------------------------------
MATS = st.integers(0, 5)
KINDS = st.integers(0, 3)
STEPS = st.integers(0, 5)
TAGS = st.sampled_from(["", "a", "ab", "b", "ba", "abab", "bbbb", "z"])
STATES = st.integers(0, 2)


def commands(reopen: bool):
    ops = [
        # upserts twice as often: they drive both inserting and replacing
        st.tuples(st.just("u"), MATS, KINDS, STEPS, TAGS),
        st.tuples(st.just("u"), MATS, KINDS, STEPS, TAGS),
        st.tuples(st.just("i"), MATS, KINDS, STEPS, TAGS),
        st.tuples(st.just("f"), MATS, KINDS),
        st.tuples(st.just("g"), TAGS, STEPS),
        st.tuples(st.just("d"), MATS, KINDS),
        st.tuples(st.just("k"), MATS, KINDS, KINDS),
        st.tuples(st.just("b"), TAGS, STEPS, STEPS),
        st.tuples(st.just("t"), TAGS),
        st.tuples(st.just("B"), STEPS, TAGS),
        st.tuples(st.just("D"), STEPS),
        st.tuples(st.just("I"), MATS, st.integers(0, 2), STATES),
        st.tuples(st.just("H"), MATS),
        st.tuples(st.just("R"), MATS, st.integers(0, 16), st.integers(0, 16)),
        st.tuples(st.just("Q"), STATES),
        st.tuples(st.just("A"), STATES, st.integers(0, 6)),
        st.tuples(st.just("s"), MATS, st.integers(0, 16), STATES),
    ]
    if reopen:
        ops.append(st.tuples(st.just("O")))
    return st.lists(st.one_of(ops), min_size=40, max_size=160)


def normalise(cmds: list) -> list:
    """Give every inserted inv a distinct `when` (the clock of the history: no ties in
    (mat, when)) and a distinct step (no ties in (state, step)); `s` then names an inv
    that may or may not exist by (mat, when)."""
    out, clock, step = [], 0, 0
    for c in cmds:
        c = list(c)
        if c[0] == "I":
            clock += 1 + c[2] % 3
            step += 1
            c = ["I", c[1], clock, step, c[3]]
        out.append(c)
    return out


def run_driver(exe: Path, cwd: Path, cmds: list, san_env) -> list:
    text = "".join(" ".join(tagcode(x) if isinstance(x, str) and i else str(x)
                            for i, x in enumerate(c)) + "\n" for c in cmds)
    r = subprocess.run([str(exe)], input=text, cwd=cwd, env=san_env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]
    return r.stdout.split("\n")


@pytest.mark.parametrize("mem", list(VARIANTS))
def test_random_operations_match_the_model(mem, drivers, san_env, tmp_path_factory):
    exe = drivers(mem)

    @settings(max_examples=15, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.function_scoped_fixture,
                                     HealthCheck.too_slow])
    @given(commands(reopen=VARIANTS[mem][0] != "transient"))
    def check(cmds):
        cmds = normalise(cmds)
        cwd = tmp_path_factory.mktemp("run")
        lines = run_driver(exe, cwd, cmds, san_env)
        model = Model()
        for i, c in enumerate(cmds):
            want = model.run(c)
            got = lines[i].rstrip()
            shown = getattr(want, "expected", want)
            assert matches(want, got), f"command {i} {c}: got {got!r}, want {shown!r}"

    check()


def test_upsert_replaces_and_relinks_the_other_index(drivers, san_env, tmp_path):
    """The scenario spelled out: an upsert that changes the avl key (tag, step) of the
    element it replaces moves it in the other index; one that would give (mat, kind) to
    a second element is an insert; a key change onto a taken (mat, kind) is refused."""
    exe = drivers("transient")
    cmds = [["u", 1, 2, 5, "ab"], ["u", 1, 2, 7, "b"], ["g", "ab", 5], ["g", "b", 7],
            ["b", "b", 0, 9], ["u", 1, 3, 7, "b"], ["b", "b", 0, 9], ["k", 1, 3, 2],
            ["i", 1, 2, 0, ""], ["f", 1, 2], ["d", 1, 2], ["u", 1, 2, 1, "abab"],
            ["t", "ab"]]
    lines = run_driver(exe, tmp_path, cmds, san_env)
    assert lines[:13] == ["0 1", "0 0", "none", "1 2", "1,2,7 ", "0 1", "1,2,7 1,3,7 ",
                          f"{EDUP}", f"{EDUP}", "0 7 b", "0", "0 1", "abab,1,1,2 b,7,1,3 "]


def test_bounds_on_a_prefix_take_in_every_value_of_the_fields_after_it(drivers, san_env,
                                                                      tmp_path):
    """step == s and tag > t on the key (step, tag): the walk stops after (s, the largest
    tag: 0xff bytes filling the field), so every tag of step s is in, the full-length one
    too; a descending walk from no upper bound stops below (lo, the smallest tag: "")."""
    exe = drivers("transient")
    cmds = [["u", 1, 1, 3, "a"], ["u", 1, 2, 3, "bbbb"], ["u", 2, 1, 3, ""],
            ["u", 2, 2, 4, "a"], ["u", 3, 1, 2, "zz"],
            ["B", 3, ""], ["B", 3, "a"], ["B", 3, "bbbb"], ["D", 3], ["D", 0]]
    lines = run_driver(exe, tmp_path, cmds, san_env)
    assert lines[5:10] == ["1,1,a 1,2,bbbb ", "1,2,bbbb ", "", "2,2,4 1,2,3 1,1,3 2,1,3 ",
                           "2,2,4 1,2,3 1,1,3 2,1,3 3,1,2 "]


def test_persistent_file_keeps_composite_indexes(drivers, san_env, tmp_path):
    exe = drivers("persistent")
    cmds = [["u", 4, 1, 3, "a"], ["I", 4, 10, 1, 0], ["I", 4, 12, 2, 1], ["I", 5, 11, 3, 0]]
    run_driver(exe, tmp_path, cmds, san_env)
    lines = run_driver(exe, tmp_path, [["f", 4, 1], ["H", 4], ["Q", 0], ["u", 4, 1, 6, "a"]],
                       san_env)
    assert lines[:4] == ["0 3 a", "10,1 12,2 ", "1,4 3,5 ", "0 0"]


@pytest.mark.parametrize("variant", ["persistent", "btree"])
def test_recovery_rebuilds_composite_indexes(variant, drivers, san_env, tmp_path, cc):
    """A process that stops without closing leaves the file marked open; `p2gen recover`'s
    program rebuilds every index from the stored elements (hash chains by the composite
    key, trees and lists in lexicographic order), after which they answer as before."""
    from p2gen.recover import build_recoverer, run_recoverer
    exe = drivers(variant)
    cmds = [["u", m, k, (m * 7 + k) % 6, ["a", "ab", "b", ""][k]] for m in range(6)
            for k in range(4)] + [["I", m % 5, 0, 0, m % 3] for m in range(30)]
    cmds = normalise(cmds)
    run_driver(exe, tmp_path, cmds + [["X"]], san_env)
    spec = exe.parent / "ck.p2"
    r = run_recoverer(build_recoverer(str(spec), cache_dir=str(tmp_path / "rc"), prefix="ck",
                                      cc=cc), str(tmp_path))
    assert r.returncode == 0 and "was not closed cleanly: rebuilding" in r.stdout, \
        r.stdout + r.stderr
    model = Model()
    for c in cmds:
        model.run(c)
    queries = ([["f", m, k] for m in range(7) for k in range(4)] + [["H", m] for m in range(5)]
               + [["B", s, ""] for s in range(6)] + [["Q", s] for s in range(3)]
               + [["t", ""], ["D", 0], ["R", 2, 3, 40]])
    lines = run_driver(exe, tmp_path, queries, san_env)
    for i, q in enumerate(queries):
        want = model.run(q)
        assert matches(want, lines[i].rstrip()), (q, lines[i], getattr(want, "expected", want))


# -- the planner ---------------------------------------------------------------------
def checked(tmp_path, text, prefix="ck"):
    spec = tmp_path / f"{prefix}.p2"
    spec.write_text(text)
    return load(str(spec), prefix)


def test_explain_names_the_composite_access_paths(tmp_path):
    text = explain(checked(tmp_path, spec_text("transient")))
    assert ("find ck_lats_find_mat_kind where mat == $mat and kind == $kind\n"
            "    chosen: hash(buckets=4, fn=default, grow=true, key=(mat, kind), unique=true) "
            "eq: hash: mat == $mat and kind == $kind picks one bucket (key (mat, kind))") in text
    assert ("cursor bytag where tag == $t and step >= $lo and step <= $hi order by step\n"
            "    chosen: avl(key=(tag, step)) range: avl: tag == $t and step >= $lo and "
            "step <= $hi (key (tag, step), in step order)") in text
    assert ("cursor histr where mat == $m and when >= $lo and when < $hi order by when desc\n"
            "    chosen: avl(key=(mat, when)) range, descending: avl: mat == $m and "
            "when >= $lo and when < $hi (key (mat, when), in when order)") in text
    assert ("cursor queue where state == $s order by step\n"
            "    chosen: odlist(key=(state, step)) range: odlist: state == $s (key (state, "
            "step), in step order)") in text
    assert "cursor tagafter where tag > $t\n    chosen: avl(key=(tag, step)) range: avl: tag > $t" \
        in text
    # every conjunct served by the path: nothing left to filter
    for cur in ("bytag", "histr", "queue", "tagafter"):
        block = text.split(f"cursor {cur} ")[1]
        assert block.split("\n")[2] == "    residual filter: (none)", cur


PLAN_REC = "record r { a: u32; b: u16; c: char[5]; d: i64; x: f64; }\n"


def plan_of(tmp_path, equation: str, cursor: str):
    ck = checked(tmp_path, PLAN_REC + f"container t of r = {equation};\n"
                 f"cursor q on t {cursor};\n", "pl")
    cur = next(c for c in ck.cursors if c.name == "q")
    return ck.plans[cur]


def test_planner_uses_a_prefix_and_refuses_what_the_key_cannot_serve(tmp_path):
    avl = "top2ds_qualify[avl(key = (a, b, c))[array[transient]]]"
    p = plan_of(tmp_path, avl, "where a == 1 and b > 2 and d < 0")
    assert p.path.kind == "range" and [c.text for c in p.path.consumed] == ["a == 1", "b > 2"]
    assert p.residual_text == "d < 0"
    # a gap in the prefix: (a, c) without b walks a's stretch, c stays a filter
    p = plan_of(tmp_path, avl, "where a == 1 and c == \"x\"")
    assert [c.text for c in p.path.consumed] == ["a == 1"] and p.residual_text == 'c == "x"'
    # order by the next field after the prefix, or by a field the prefix fixes
    assert plan_of(tmp_path, avl, "where a == 1 and b == 2 order by c").path.layer.name == "avl"
    assert plan_of(tmp_path, avl, "where a == 1 order by a").path.layer.name == "avl"
    with pytest.raises(SpecError, match="order by 'c'"):
        plan_of(tmp_path, avl, "where a == 1 order by c")
    # hash: only an equality on every field
    h = "top2ds_qualify[hash(key = (a, c))[array[transient]]]"
    assert plan_of(tmp_path, h, 'where a == 1 and c == "x"').path.kind == "eq"
    p = plan_of(tmp_path, h, "where a == 1")
    assert p.path.kind == "scan"
    assert "no equality on every field of its key (a, c)" in \
        [c.note for c in p.candidates if c.option is None][0]


# -- the checker ---------------------------------------------------------------------
@pytest.mark.parametrize("key, message, col", [
    ("(a, zz)", "'zz' is not a field of record 'r'", 41),
    ("(a, b, a)", "field 'a' appears twice in the composite key (a, b, a)", 44),
    ("(a, x)", "field 'x' is f64; a composite key is made of integer and char[N] fields", 41),
    ("(a)", "a composite key needs two or more fields; write key = a", 37),
])
def test_checker_refuses_bad_composite_keys(tmp_path, key, message, col):
    text = PLAN_REC + f"container t of r = top2ds[avl(key = {key})[array[transient]]];\n"
    with pytest.raises(SpecError) as e:
        checked(tmp_path, text, "bad")
    assert message in str(e.value)
    assert f"bad.p2:2:{col}:" in str(e.value)


def test_checker_refuses_composite_key_where_the_layer_takes_one_field(tmp_path):
    text = PLAN_REC + "container t of r = top2ds[qsort(key = (a, b))[transient]];\n"
    with pytest.raises(SpecError, match=r"layer 'qsort' takes no composite key \(layers that "
                                        r"do: hash, avl, btree, odlist\)") as e:
        checked(tmp_path, text, "bad")
    assert "bad.p2:2:39:" in str(e.value)


def test_checker_refuses_a_name_clash_and_unique_under_delflag(tmp_path):
    rec = "record r { a: u32; b: u16; a_b: u8; }\n"
    with pytest.raises(SpecError, match="named 'a_b'"):
        checked(tmp_path, rec + "container t of r = top2ds[hash(key = (a, b))[array[transient]]];\n",
                "bad")
    with pytest.raises(SpecError, match="unique = true under 'delflag'"):
        checked(tmp_path, PLAN_REC + "container t of r = delflag[top2ds[hash(key = (a, b), "
                "unique = true)[array[transient]]]];\n", "bad")


def test_checker_refuses_two_composite_keys_of_one_name_and_identity_hash(tmp_path):
    rec = "record r { a: u32; b_c: u16; a_b: u16; c: u8; }\n"
    with pytest.raises(SpecError, match=r"composite keys \(a, b_c\) and \(a_b, c\) of "
                                        r"container 't' are both named 'a_b_c'"):
        checked(tmp_path, rec + "container t of r = top2ds[hash(key = (a, b_c))"
                "[avl(key = (a_b, c))[array[transient]]]];\n", "bad")
    with pytest.raises(SpecError, match=r"'identity' needs an integer key; the key \(a, c\) "
                                        r"is composite"):
        checked(tmp_path, rec + "container t of r = top2ds[hash(key = (a, c), fn = identity)"
                "[array[transient]]];\n", "bad")


def test_single_key_specs_describe_themselves_as_before(tmp_path):
    """`unique` is shown only where it is on: the descriptions (and so the fingerprints)
    of existing equations stay as they were."""
    ck = checked(tmp_path, PLAN_REC + "container t of r = top2ds[hash(key = a)[array[transient]]];\n",
                 "one")
    assert ck.containers[0].equation_text() == \
        "top2ds[hash(buckets=1024, fn=default, grow=true, key=a)[array(capacity=16)[transient]]]"


# -- the Python binding --------------------------------------------------------------
def test_python_binding_finds_by_composite_key_and_upserts(tmp_path_factory):
    import importlib
    import sys

    from p2gen.build import generate
    from p2gen.pybind import build_python
    root = tmp_path_factory.mktemp("pyck")
    spec = root / "p2t_ck.p2"
    spec.write_text(spec_text("persistent"))
    gen = generate(str(spec), str(root / "out"))
    build_python(gen, extra_cflags=QUICK_PY_CFLAGS)
    sys.path.insert(0, gen.out_dir)
    try:
        mod = importlib.import_module("p2t_ck")
    finally:
        sys.path.remove(gen.out_dir)
    data = root / "data"
    data.mkdir()
    db = mod.open(data)
    try:
        lats = db.lats
        assert lats.composite_keys == {"mat_kind": ("mat", "kind"), "tag_step": ("tag", "step"),
                                       "step_tag": ("step", "tag")}
        r, inserted = lats.upsert(mat=1, kind=2, step=5, tag="ab")
        assert inserted and (r.mat, r.kind, r.step, r.tag) == (1, 2, 5, "ab")
        r, inserted = lats.upsert({"mat": 1, "kind": 2, "step": 6, "tag": "b"})
        assert not inserted and len(lats) == 1
        assert lats.find(mat=1, kind=2).step == 6
        assert lats.find(kind=2, mat=1).tag == "b"          # fields by name, any order
        assert lats.find(mat=1, kind=3) is None
        assert lats.find(tag="b", step=6).mat == 1          # the other index relinked
        assert lats.find(tag="ab", step=5) is None
        assert lats.find(tag="toolong", step=6) is None     # longer than the field
        with pytest.raises(DuplicateError, match=r"an element with this \(mat, kind\) exists"):
            lats.insert(mat=1, kind=2, step=0, tag="")      # the unique key is taken
        assert not hasattr(db.invs, "upsert")               # no unique key: no upsert
    finally:
        db.close()
    db = mod.open(data)
    try:
        assert db.lats.find(mat=1, kind=2).step == 6        # from the file
    finally:
        db.close()
