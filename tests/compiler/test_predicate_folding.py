"""A field's comparisons against constants are decided together (issue 34, item 6).

gcc refuses, under -Werror, a residual filter whose tests on one field can never hold
together (`d == 1 && d == 2`: "'and' of mutually exclusive equal-tests is always 0") or of
which one always holds (`d != 1 || d != 2`). So the checker decides the constant
comparisons of one integer field that meet in one conjunction (disjunction), read through
`not`s: never holding together (always one holding) is an error at the comparison that
makes it so; a comparison the others imply (cover) is folded away. Whatever it accepts
compiles under -Wall -Wextra -Werror and yields what the where-clause says.

The oracle here is brute force over the field's values that matter (each constant, its
neighbours, the type's ends), not the checker's interval arithmetic. Soak size:
P2GEN_FOLD_EXAMPLES (default 300 random where-clauses), P2GEN_FOLD_CURSORS (default 40
cursors in the one spec compiled) and P2GEN_FOLD_SEED (its where-clauses' seed).
"""
from __future__ import annotations

import itertools
import math
import os
import random
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from p2gen.build import compile_objects, generate
from p2gen.check import check
from p2gen.errors import SpecError, SpecErrors
from p2gen.model import And, Compare, Const, FieldRef, Not, Or, ParamRef, chain_terms, expr_text
from p2gen.parser import parse
from p2gen.plan import explain, plan

EXAMPLES = int(os.environ.get("P2GEN_FOLD_EXAMPLES", "300"))
COMPILED = int(os.environ.get("P2GEN_FOLD_CURSORS", "40"))   # cursors of the compiled spec

# the fields, their types' ranges, the constants drawn for them and their parameter
FIELDS = {
    "d": ("i32", -2**31, 2**31 - 1, [-2**31, -1, 0, 1, 2, 3, 2**31 - 1], "p"),
    "e": ("u8", 0, 255, [0, 1, 2, 3, 254, 255], "q"),
    "g": ("f64", -math.inf, math.inf, [-1.5, -0.0, 0.0, 1, 2.5, 1e308], "r"),
}
RECORD = "record r { id: u32; d: i32; e: u8; g: f64; }\n"
CONTAINERS = ("container c of r = top2ds_qualify[array[transient]];\n"
              "container x of r = top2ds_qualify[avl(key = d)[array[transient]]];\n")
OPS = ["==", "!=", "<", "<=", ">", ">="]
PY_OP = {"==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
         "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}


def samples(name: str) -> list:
    """The values of field `name` on which every comparison of it against a constant
    drawn here changes its outcome: each constant, its neighbours and the type's ends."""
    t, lo, hi, consts, _p = FIELDS[name]
    if t == "f64":   # and NaN, which only != holds for
        return sorted({math.nextafter(v, to) for v in consts + [lo, hi] for to in (lo, v, hi)}
                      ) + [math.nan]
    return sorted({v + k for v in consts + [lo, hi] for k in (-1, 0, 1) if lo <= v + k <= hi})


# parameter values: a few of the samples
PARAMS = {"p": [-1, 1, 2, 2**31 - 1], "q": [0, 1, 3, 255], "r": [-1.5, 0.0, 2.5]}


# ---------------------------------------------------------------------------
# random where-clauses (text), from an rng
# ---------------------------------------------------------------------------
def random_leaf(rng: random.Random, fields: list) -> str:
    f = rng.choice(fields)
    op = rng.choice(OPS)
    if rng.random() < 0.2:
        return f"{f} {op} ${FIELDS[f][4]}"
    v = rng.choice(FIELDS[f][3])
    if rng.random() < 0.15:       # the constant on the left
        return f"{v} {op} {f}"
    return f"{f} {op} {v}"


def random_where(rng: random.Random, depth: int = 3, fields: tuple = ("d", "e")) -> str:
    fields = list(fields)
    r = rng.random()
    if depth == 0 or r < 0.3:
        return random_leaf(rng, fields)
    if r < 0.4:
        return f"not ({random_where(rng, depth - 1, fields)})"
    op = rng.choice(["and", "and", "or"])
    terms = [random_where(rng, depth - 1, fields) for _ in range(rng.randint(2, 4))]
    return "(" + f" {op} ".join(terms) + ")"


def spec_of(wheres: list) -> str:
    lines = [RECORD, CONTAINERS]
    for i, w in enumerate(wheres):
        lines.append(f"cursor k{i} on {'c' if i % 2 == 0 else 'x'} where {w};\n")
    return "".join(lines)


# ---------------------------------------------------------------------------
# the oracle: brute force
# ---------------------------------------------------------------------------
def evaluate(e, env: dict) -> bool:
    if isinstance(e, Not):
        return not evaluate(e.operand, env)
    if isinstance(e, And):
        return all(evaluate(t, env) for t in chain_terms(e, And))
    if isinstance(e, Or):
        return any(evaluate(t, env) for t in chain_terms(e, Or))

    def value(o):
        if isinstance(o, FieldRef):
            return env[o.name]
        if isinstance(o, ParamRef):
            return env["$" + o.name]
        return o.value
    return PY_OP[e.op](value(e.left), value(e.right))


def const_field(c: Compare):
    """The field of `field op constant` (either side), else None."""
    sides = (c.left, c.right)
    if any(isinstance(s, Const) for s in sides):
        return next(s.name for s in sides if isinstance(s, FieldRef))
    return None


def groups(where):
    """[(conjunctive, [(Compare, negated)])]: per chain of `and`s (`or`s) read through
    `not`s (De Morgan), per field, its comparisons against constants."""
    out = []

    def walk(e, neg, members, conj):
        if isinstance(e, Not):
            walk(e.operand, not neg, members, conj)
        elif isinstance(e, Compare):
            members.append((e, neg))
        else:
            own = isinstance(e, And) != neg
            if own is not conj:
                members = []
                out.append((own, members))
            walk(e.left, neg, members, own)
            walk(e.right, neg, members, own)

    top = []
    walk(where, False, top, None)
    if top:
        out.append((True, top))
    result = []
    for conj, members in out:
        by = {}
        for c, neg in members:
            f = const_field(c)
            if f is not None:
                by.setdefault(f, []).append((c, neg))
        result += [(conj, f, g) for f, g in by.items() if len(g) > 1]
    return result


def holds(c: Compare, neg: bool, f: str, v: int) -> bool:
    return evaluate(c, {f: v}) != neg


def implied(c: Compare, neg: bool, others: list, conj: bool, f: str) -> bool:
    """Do `others` imply (conj) or cover (not conj) the comparison?"""
    vals = samples(f)
    if conj:
        return all(holds(c, neg, f, v) for v in vals if all(holds(*m, f, v) for m in others))
    return all(any(holds(*m, f, v) for m in others) for v in vals if holds(c, neg, f, v))


def without(e, c):
    """`e` without comparison `c` (taken out of its chain)."""
    if e is c:
        return None
    if isinstance(e, Not):
        inner = without(e.operand, c)
        return None if inner is None else Not(inner, e.pos)
    if isinstance(e, (And, Or)):
        left, right = without(e.left, c), without(e.right, c)
        if left is None or right is None:
            return right if left is None else left
        return type(e)(left, right, e.pos)
    return e


def verdict(where) -> bool:
    """Does some chain hold comparisons of a field against constants that, each
    undecided by the type alone, never hold together (conjunction) or of which one always
    holds (disjunction)? Also once implied (covered) ones are taken out, one by one: a
    chain left with one term joins the chain around it."""
    while True:
        for conj, f, g in groups(where):
            vals = samples(f)
            if conj:
                live = [m for m in g if any(holds(*m, f, v) for v in vals)]
                if len(live) > 1 and not any(all(holds(*m, f, v) for m in live)
                                             for v in vals):
                    return True
            else:
                live = [m for m in g if not all(holds(*m, f, v) for v in vals)]
                if len(live) > 1 and all(any(holds(*m, f, v) for m in live) for v in vals):
                    return True
        drop = next((c for conj, f, g in groups(where) for i, (c, neg) in enumerate(g)
                     if implied(c, neg, g[:i] + g[i + 1:], conj, f)), None)
        if drop is None:
            return False
        where = without(where, drop)


def fields_of(e) -> list:
    if isinstance(e, Not):
        return fields_of(e.operand)
    if isinstance(e, (And, Or)):
        return sorted(set(fields_of(e.left)) | set(fields_of(e.right)))
    return sorted({o.name for o in (e.left, e.right) if isinstance(o, FieldRef)})


def envs(cur):
    """Every combination of the samples of the fields the where-clause names and of its
    parameters' values."""
    names = [n for n, _t in cur.params]
    fields = fields_of(cur.where)
    for fv in itertools.product(*(samples(f) for f in fields)):
        for pv in itertools.product(*(PARAMS[n] for n in names)):
            env = dict(zip(fields, fv))
            env.update({"$" + n: v for n, v in zip(names, pv)})
            yield env


def check_accepted(cur) -> None:
    """The folded predicate means the where-clause and keeps nothing the others in its
    chain imply (cover)."""
    pred = cur.predicate
    for env in envs(cur):
        assert evaluate(pred, env) == evaluate(cur.where, env), (expr_text(cur.where),
                                                                 expr_text(pred), env)
    for conj, f, g in groups(pred):
        for i, (c, neg) in enumerate(g):
            assert not implied(c, neg, g[:i] + g[i + 1:], conj, f), (
                expr_text(cur.where), expr_text(pred), expr_text(c), "implied/covered")


def check_text(text: str):
    """(checked spec or None, [errors])."""
    try:
        return check(parse(text, "t.p2")), []
    except SpecErrors as errs:
        return None, list(errs.errors)
    except SpecError as err:
        return None, [err]


# ---------------------------------------------------------------------------
# the issue's examples
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("equation", ["top2ds_qualify[array[transient]]",
                                      "qualify[top2ds[array[transient]]]"])
@pytest.mark.parametrize("where", ["d == $p and d == 1 and d == 2",
                                   "d < $p and d == 1 and d == 2"])
def test_the_issues_contradictions_are_errors_at_the_comparison(equation, where):
    text = ("record r { d: i32; }\n"
            f"container c of r = {equation};\n"
            f"cursor q on c where {where};\n")
    _checked, errors = check_text(text)
    assert len(errors) == 1, errors
    err = errors[0]
    assert (err.line, err.col) == (3, text.split("\n")[2].index("d == 2") + 1)
    assert "d == 1 and d == 2 can never hold together" in err.message
    assert "never yields" in err.message
    assert "^^^^^^" in err.render()


@pytest.mark.parametrize("where, fragment", [
    ("d != 1 or d != 2", "d != 1 or d != 2: every i32 value of field 'd' satisfies one"),
    ("not (d == 1 and d == 2)", "not (d == 1) or not (d == 2): every i32"),
    ("d == $p and (e < 4 or (d != 3 or d != 4))", "this part of the where-clause always"),
    ("d >= 1 and d <= 2 and d != 1 and d != 2", "d >= 1 and d <= 2 and d != 1 and d != 2"),
    ("e < 1 and e == 3", "e < 1 and e == 3 can never"),
    ("not (d != 3 or e != 4 or d != 5)", "not (d != 3) and not (d != 5) can never"),
    ("(d == 1 and e == 2 and d == 2) or d == $p", "so this part of the where-clause is "
                                                   "always false"),
    # `d == 1 or d == 1` folds to `d == 1`, which then meets `d == 2`
    ("(d == 1 or d == 1) and d == 2", "d == 1 and d == 2 can never"),
    # floats: NaN satisfies `!=` and the negation of the others, nothing else
    ("g < 1 and g > 2.5", "g < 1 and g > 2.5 can never hold together: no f64 value"),
    ("g != 1 or g != 2.5", "every f64 value of field 'g' satisfies one"),
    ("not (g < 1) and g < 0", "not (g < 1) and g < 0 can never"),
])
def test_other_contradictions_and_tautologies(where, fragment):
    _checked, errors = check_text(RECORD + CONTAINERS + f"cursor q on c where {where};\n")
    assert len(errors) == 1 and fragment in errors[0].message, errors


def test_implied_comparisons_are_folded_and_explained():
    text = RECORD + CONTAINERS + (
        "cursor q on c where d < $p and d <= 1 and d < 2 and e < 1 and e >= 0\n"
        "                    and (e == 1 or e < 4 or d == 7);\n"
        "cursor w on x where d > 1 and d >= 2 and d > 1;\n")
    checked = plan(check(parse(text, "t.p2")))
    q, w = checked.cursors
    assert [(c.op, c.right.value, why) for c, why in q.folded] == [
        ("<", 2, "implied by d <= 1"), (">=", 0, "implied by e < 1"),
        ("==", 1, "covered by e < 4")]
    # the later of two alike goes
    assert [(c.op, c.pos.col, why) for c, why in w.folded] == [
        (">", text.split("\n")[5].rindex("d > 1") + 1, "implied by d > 1"),
        (">=", text.split("\n")[5].index("d >= 2") + 1, "implied by d > 1")]
    said = explain(checked)
    assert "folded: d < 2 (implied by d <= 1)" in said
    assert ("residual filter: d < $p and d <= 1 and e < 1 and (e < 4 or d == 7)"
            in said)
    # the avl serves what is left, the range d > 1
    assert checked.plans[w].path.kind == "range" and checked.plans[w].residual == []


def test_folding_goes_on_until_nothing_changes():
    """`(d == 2 or d == 2) and d == 2`: the disjunction folds to one comparison, which
    joins the conjunction, where it is implied."""
    cur = check(parse(RECORD + CONTAINERS + "cursor q on c where (d == 2 or d == 2) and "
                      "d == 2 and e == $q;\n", "t.p2")).cursors[0]
    assert expr_text(cur.predicate) == "d == 2 and e == $q"
    assert [why for _c, why in cur.folded] == ["covered by d == 2", "implied by d == 2"]


def test_floats_as_c_compares_them():
    """NaN is in no order (`g < 1 or g >= 1` is not always true); both zeros are one
    value; an f32 constant is the float the generated C casts it to."""
    text = (RECORD.replace("g: f64;", "g: f64; h: f32;") + CONTAINERS +
            "cursor a on c where g < 1 or g >= 1;\n"
            "cursor b on c where g == 0.0 and g == -0.0;\n"
            "cursor z on c where h == 0.1 and h == 0.10000000000001 and h <= 0.1;\n"
            "cursor y on c where g < 1 and not (g >= 1);\n")
    a, b, z, y = check(parse(text, "t.p2")).cursors
    assert not a.folded
    assert [why for _c, why in b.folded] == ["implied by g == 0.0"]
    assert [why for _c, why in z.folded] == ["implied by h == 0.1", "implied by h == 0.1"]
    # not (g >= 1) also holds for NaN: it implies nothing here, g < 1 implies it
    assert [expr_text(c) for c, _why in y.folded] == ["g >= 1"]


@pytest.mark.parametrize("where, verdict", [
    (" or ".join(f"d == {i}" for i in range(1500)), None),
    (" and ".join(f"d != {i}" for i in range(1500)), None),
    (" or ".join(["d == 7"] * 1500), "folded"),
    (" and ".join(f"e != {i}" for i in range(256)), "more) ... and e != 254 and e != 255 "
                                                     "can never hold together"),
])
def test_long_chains_are_decided_in_time(where, verdict):
    """Each comparison of a chain costs one combination of value sets, and naming the
    ones behind a verdict stays short."""
    import time
    t0 = time.perf_counter()
    checked, errors = check_text(RECORD + CONTAINERS + f"cursor q on c where {where};\n")
    assert time.perf_counter() - t0 < 20
    if verdict is None:
        assert not errors and not checked.cursors[0].folded
    elif verdict == "folded":
        assert expr_text(checked.cursors[0].predicate) == "d == 7"
        assert {why for _c, why in checked.cursors[0].folded} == {"covered by d == 7"}
    else:
        assert len(errors) == 1 and verdict in errors[0].message, errors
        assert len(errors[0].message) < 300


def test_comparisons_the_type_alone_decides_stay_accepted():
    """`e < 0` (u8) is false by its type: the renderer folds it, as before; with it in a
    conjunction the others are implied, never a contradiction."""
    for where in ("e < 0", "e < 0 and e == 3", "e >= 0 or e == 3", "e >= 0", "d < -2147483648",
                  "d < -2147483648 or d == 3 or d == $p"):
        checked, errors = check_text(RECORD + CONTAINERS + f"cursor q on c where {where};\n")
        assert not errors, (where, errors)


# ---------------------------------------------------------------------------
# random where-clauses: the verdict against brute force
# ---------------------------------------------------------------------------
@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.randoms(use_true_random=False),
       st.sampled_from([("d",), ("d", "e"), ("g",), ("d", "g")]))
def test_verdicts_match_brute_force(rng, fields):
    where = random_where(rng, 3, fields)
    text = RECORD + CONTAINERS + f"cursor q on c where {where};\n"
    parsed = parse(text, "t.p2").cursors[0].where
    checked, errors = check_text(text)
    assert all("never hold together" in e.message or "satisfies one of them" in e.message
               for e in errors), errors
    assert bool(errors) == verdict(parsed), (where, errors)
    if checked is not None:
        check_accepted(checked.cursors[0])


# ---------------------------------------------------------------------------
# what is accepted compiles under -Werror and yields what the where-clause says
# ---------------------------------------------------------------------------
# gcc's own cases (mutually exclusive equal-tests, unmatched not-equal tests, an unsigned
# `e < 1` read as `e == 0`), folded or side by side with a parameter's comparison
FIXED = ["d == $p and d == 1 and d == 1", "d < $p and d == 1 and d <= 1",
         "e < 1 and e == 0", "e != 1 or e != 1", "not (d != 2 or d != 2) and e == $q",
         "d == 1 and (e == 2 or d == $p)", "(d == 1 or e == 4) and (d <= 1 or e == 4)",
         "d >= 1 and d <= 3 and d != 2 and d != 1", "e >= 0 and e != 0 and e < 2",
         "g == 0.0 and g == -0.0", "g < 1 and not (g >= 1)", "g < 1 or g >= 1",
         "not (g != 2.5 and g != 2.5) or d == $p"]
# the rows' g, by turns (d and e: every pair of their samples)
GS = ["-1.5", "-0.0", "0.0", "1.0", "2.5", "INFINITY", "-INFINITY", "NAN"]


def test_accepted_where_clauses_compile_and_yield_what_they_say(cc, tmp_path):
    rng = random.Random(int(os.environ.get("P2GEN_FOLD_SEED", "34")))
    wheres = list(FIXED)
    while len(wheres) < COMPILED:
        w = random_where(rng, 3, ("d", "e", "g"))
        checked, errors = check_text(RECORD + CONTAINERS + f"cursor q on c where {w};\n")
        # those where a field meets constants in one chain: what gcc could refuse
        if not errors and groups(checked.cursors[0].where):
            wheres.append(w)
    spec = tmp_path / "fold.p2"
    spec.write_text(spec_of(wheres))
    gen = generate(str(spec), str(tmp_path / "out"))
    assert any(cur.folded for cur in gen.checked.cursors)
    lib = compile_objects(gen, cc)          # -Wall -Wextra -Werror
    ds, es = samples("d"), samples("e")
    rows = [(i, d, e) for i, (d, e) in enumerate(itertools.product(ds, es))]
    gval = {"INFINITY": math.inf, "-INFINITY": -math.inf, "NAN": math.nan}

    def g_of(i):
        return gval.get(GS[i % len(GS)]) or float(GS[i % len(GS)])
    driver = ["#include <math.h>", "#include <stdio.h>", '#include "fold.h"', "int main(void) {",
              "    fold_db *db; fold_r rec;", "    if (fold_open(&db, NULL)) return 2;"]
    for i, d, e in rows:
        for c in ("c", "x"):
            driver.append(f"    rec.id = {i}u; rec.d = (int32_t){d}LL; rec.e = {e}u; rec.g = {GS[i % len(GS)]}; "
                          f"if (fold_{c}_insert(db, &rec, NULL)) return 3;")
    expected = []
    for n, cur in enumerate(gen.checked.cursors):
        names = [p for p, _t in cur.params]
        for pv in itertools.product(*(PARAMS[p] for p in names)):
            env = {"$" + p: v for p, v in zip(names, pv)}
            hits = sorted(i for i, d, e in rows
                          if evaluate(cur.where, dict(env, d=d, e=e, g=g_of(i))))
            expected.append(f"{cur.name} {list(pv)} {hits}")
            spell = {"p": lambda v: f"(int32_t){v}LL", "q": lambda v: f"{v}u",
                     "r": lambda v: repr(float(v))}
            args = "".join(f", {spell[p](v)}" for p, v in zip(names, pv))
            driver += [
                "    {", f"        fold_{cur.name}_cursor k; const fold_r *r;",
                f"        int ids[{len(rows)}] = {{0}}, n = 0;",
                f"        if (fold_{cur.name}_open(db, &k{args})) return 4;",
                f"        while ((r = fold_{cur.name}_next_rec(&k)) != NULL) ids[r->id]++, n++;",
                f"        fold_{cur.name}_close(&k);",
                f'        printf("{cur.name} [{", ".join(str(v) for v in pv)}] [");',
                f"        for (int i = 0, first = 1; i < {len(rows)}; i++)",
                "            if (ids[i]) { if (ids[i] != 1) return 5; "
                'printf(first ? "%d" : ", %d", i); first = 0; }',
                '        printf("]\\n");', "    }"]
    driver += ["    return fold_close(db);", "}"]
    src = tmp_path / "out" / "driver.c"
    src.write_text("\n".join(driver) + "\n")
    exe = tmp_path / "out" / "driver"
    subprocess.run([cc, "-std=c11", "-O1", "-Wall", "-Wextra", "-Werror", str(src), lib,
                    "-o", str(exe), "-lm"], check=True, capture_output=True, timeout=300)
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out
    assert out.stdout.splitlines() == expected
