"""The Python binding against the Python reference model (tests/model.py), for every
storage kind and index of tests/layers/test_differential.py's transient matrix (issue 11).

Random inserts (one by one and insert_many), deletes, updates, cursor queries, walks
that delete and update through the cursor (the batched fetch: pyapi.BATCH rows per call
into C, the C cursor moved back before each change) and to_numpy, through the generated
Python module; after every few operations the container's contents must equal the
model's (as multisets), ordered cursors in their order."""
import random
import shutil
import sys

import pytest

from p2gen.runtime import pyapi
from p2gen.build import generate, load
from p2gen.pybind import build_python

from model import ContainerModel, norm, param_fields
from test_differential import draw, runnable, spec_text

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
OPS = 400
# every storage kind (array, iarray, qsort, malloc), every index (hash, avl, dlist,
# odlist, two at once), qualify, delflag, and the second record's key types; the whole
# matrix is tests/layers/test_differential.py's (in C), this keeps the Python build small
SUBSET = {"c_array_none", "c_array_hash_avl", "c_iarray_odlist", "c_iarray_avl",
          "c_qsort_none", "c_malloc_dlist", "c_malloc_hash", "x_qualify", "x_delflag_iarray",
          "x_delflag_top", "x_hash2", "y_iarray_hash_f", "y_avl_big_odlist_tag", "y_qsort_f",
          "y_avl_s_dlist", "y_hash_identity"}
SEEDS = (1, 2)


@pytest.fixture(scope="module")
def pdiff(tmp_path_factory):
    root = tmp_path_factory.mktemp("p2t_pdiff")
    spec = root / "p2t_pdiff.p2"
    spec.write_text(spec_text([c for c in runnable("transient") if c.name in SUBSET]))
    gen = generate(str(spec), str(root / "out"))
    build_python(gen, extra_cflags=["-O0"])   # a quick build: the test checks behaviour
    sys.path.insert(0, gen.out_dir)
    try:
        import p2t_pdiff
    finally:
        sys.path.remove(gen.out_dir)
    checked = load(str(spec))
    assert {c.name for c in checked.containers} == SUBSET
    return p2t_pdiff, checked


CODES = {pyapi.DuplicateError: "EDUP", pyapi.RangeError: "ERANGE"}


def _code(fn):
    try:
        fn()
    except (pyapi.DuplicateError, pyapi.RangeError) as e:
        return CODES[type(e)], e
    return None, None


def _tuple(cm, rec) -> tuple:
    return cm.make([getattr(rec, n).encode("utf-8", "surrogateescape")
                    if t.kind == "char" else getattr(rec, n)
                    for n, t in zip(cm.fields, cm.types)])


def _values(rng, cm, common=False) -> dict:
    while True:
        v = {n: draw(rng, n, common=common) for n in cm.fields}
        if not any(t.kind == "char" and b"\0" in v[n] for n, t in zip(cm.fields, cm.types)):
            return v


def _check(cm, c, what):
    got = [_tuple(cm, r) for r in c]
    cm.same_multiset(got, cm.recs, f"{cm.name} after {what}")
    assert len(c) == len(cm.recs)


@pytest.mark.parametrize("seed", SEEDS)
def test_python_differential(pdiff, seed, tmp_path):
    mod, checked = pdiff
    with mod.open(tmp_path) as db:
        for info in checked.containers:
            rng = random.Random(f"{seed}/{info.name}")
            cm = ContainerModel(info, checked.plans)
            c = db.container(info.name)
            declared = sorted(n for n, k in cm.cursors.items() if not k.synthetic)
            for step in range(OPS):
                op = rng.choices(["insert", "many", "delete", "update", "query", "walk",
                                  "numpy", "purge"], [40, 6, 12, 12, 14, 6, 3, 2])[0]
                recs = list(c)
                if op == "insert":
                    v = _values(rng, cm)
                    want = cm.insert(cm.make([v[n] for n in cm.fields]))
                    got, _ = _code(lambda: c.insert(**v))
                    assert got == want, (cm.name, op, v)
                elif op == "many":
                    rows = [_values(rng, cm) for _ in range(rng.randint(1, 4))]
                    want, k = None, 0
                    for r in rows:
                        want = cm.insert(cm.make([r[n] for n in cm.fields]))
                        if want:
                            break
                        k += 1
                    got, e = _code(lambda: c.insert_many(rows))
                    assert got == want, (cm.name, op, rows)
                    if e is not None:
                        assert e.index == k
                elif op == "delete" and recs:
                    r = rng.choice(recs)
                    cm.delete(_tuple(cm, r))
                    c.delete(r)
                elif op == "update" and recs:
                    r = rng.choice(recs)
                    new = _values(rng, cm)
                    fields = {n: new[n] for n in rng.sample(cm.fields, rng.randint(1, 2))}
                    old = _tuple(cm, r)
                    nt = old
                    for n, val in fields.items():
                        nt = cm.replace(nt, n, val)
                    want = cm.update(old, nt)
                    got, _ = _code(lambda: c.update(r, **fields))
                    assert got == want, (cm.name, op, fields)
                elif op == "query" and declared:
                    name = rng.choice(declared)
                    k = cm.cursors[name]
                    pf = param_fields(k.where) if k.where is not None else {}
                    params = {}
                    for p, fname in pf.items():
                        params[p] = draw(rng, fname, common=True)
                        while isinstance(params[p], bytes) and b"\0" in params[p]:
                            params[p] = draw(rng, fname, common=True)
                    got = [_tuple(cm, r) for r in db.cursor(name, **params)]
                    want = cm.matches(name, {p: norm(cm.types[cm.index[f]], v)
                                             for (p, f), v in zip(pf.items(), params.values())})
                    cm.same_multiset(got, want, f"cursor {name}({params})")
                    cm.check_order(name, got)
                elif op == "walk":
                    cur = iter(c)
                    for r in cur:
                        x = rng.random()
                        if x < 0.25:
                            cm.delete(_tuple(cm, r))
                            cur.delete()
                        elif x < 0.4:
                            n = rng.choice(cm.fields)
                            val = _values(rng, cm)[n]
                            old = _tuple(cm, r)
                            want = cm.update(old, cm.replace(old, n, val))
                            got, _ = _code(lambda: cur.update(**{n: val}))
                            assert got == want, (cm.name, op, n, val)
                            if got:
                                break
                    cur.close()
                elif op == "numpy":
                    arr = c.to_numpy()
                    assert [tuple(x) for x in arr[list(cm.fields)].tolist()] == \
                        [tuple(getattr(r, n).encode("utf-8", "surrogateescape")
                               if t.kind == "char" else getattr(r, n)
                               for n, t in zip(cm.fields, cm.types)) for r in c]
                elif op == "purge" and hasattr(c, "purge"):
                    assert c.purge() == cm.purge()
                if step % 8 == 7:
                    _check(cm, c, f"step {step} ({op})")
            _check(cm, c, "the end")
        assert db.verify() == []
