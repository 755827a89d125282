"""The relevant equation space of a container from the layer registry (tune_space, issue 38
item 3): "legal if the storage is legal alone and each index is legal over it alone"
against the checker's verdict on random stacks; the space keeps the memory, the top layers
and unique keys as written; its candidates pass same_api where the spec declares its finds."""
from __future__ import annotations

import random
from pathlib import Path

import pytest

from p2gen.layers import LAYERS
from p2gen.tune import ApiMismatch, same_api
from p2gen.tune_space import Space

ROOT = Path(__file__).resolve().parents[2]

TPCB = (ROOT / "type_equations" / "tpcb" / "hash1_persistent.p2").read_text() + \
    "cursor rich on accounts where balance > $min order by balance;\n"
KEYS = """record lot { mat: u32; kind: u16; tag: char[6]; w: f64; home: ref lots; }
container lots of lot = top2ds_qualify[hash(key = (mat, kind), unique = true)[array[journal[persistent(file = "l.db")]]]];
find lots by tag;
find lots by w;
cursor heavy on lots where w > $w order by w;
"""
REL = """record part { id: u32; x: i32; }
record comp { id: u32; }
container parts of part = top2ds_qualify[hash(key = id)[array[transient]]];
container comps of comp = top2ds_qualify[array[transient]];
relationship has one comps.parts to many parts.owner = ilist;
cursor far on parts where x >= $lo and x < $hi;
"""
SPECS = {"tpcb": (TPCB, "accounts"), "keys": (KEYS, "lots"), "rel": (REL, "parts")}


@pytest.mark.parametrize("which", list(SPECS))
def test_prediction_equals_the_checker_on_random_stacks(which):
    text, name = SPECS[which]
    space = Space(text, name, f"{which}.p2")
    rng = random.Random(38)
    seen, agree, legal = set(), 0, 0
    while len(seen) < 40:
        st = space.random_stack(rng)
        if st in seen:
            continue
        seen.add(st)
        verdict = space.checker_accepts(st)
        assert space.predicted_legal(st) == verdict, space.equation(st)
        legal += verdict
    assert 0 < legal < len(seen)      # the sample holds stacks of both verdicts


def test_the_space_keeps_what_must_not_change():
    space = Space(KEYS, "lots", "keys.p2")
    assert space.keys == [("mat", "kind"), ("tag",), ("w",)]
    stacks = space.enumerate()
    assert stacks
    for st in stacks:
        eq = space.equation(st)
        assert eq.startswith("top2ds_qualify[")
        assert "[journal[persistent(file = \"l.db\")]]" in eq
        assert "key = (mat, kind), unique = true" in eq
        assert not any(i.unique and i.key != ("mat", "kind") for i in st.indexes)
        # one index per key
        keys = [i.key for i in st.indexes]
        assert len(keys) == len(set(keys))
    # every storage of the registry appears (a keyed one on a key of interest)
    storages = {st.storage for st in stacks}
    assert {"array", "malloc"} <= storages
    assert storages <= {n for n, l in LAYERS.items() if l.role == "storage"}


def test_tpcb_accounts_space():
    space = Space(TPCB, "accounts", "tpcb.p2")
    stacks = space.enumerate()
    eqs = {space.equation(st) for st in stacks}
    # the paper's five and the B-tree's accounts, over the spec's memory
    mem = '[persistent(file = "tpcb_hash1.db")]'
    for eq in ("top2ds_qualify[hash(key = id)[array" + mem + "]]",
               "top2ds_qualify[qsort(key = id)" + mem + "]",
               "top2ds_qualify[avl(key = id)[array" + mem + "]]",
               "top2ds_qualify[btree(key = id)[array" + mem + "]]"):
        assert eq in eqs, eq
    assert all(not st.indexes or len({i.key for i in st.indexes}) == len(st.indexes) for st in stacks)
    # iarray holds one element per id: a unique key the spec does not declare
    assert not any(st.storage == "iarray" for st in stacks)
    unique = Space(TPCB.replace("hash(key = id, buckets = 65536", "hash(key = id, unique = true, buckets = 65536"),
                   "accounts", "tpcb.p2")
    eqs = {unique.equation(st) for st in unique.enumerate()}
    assert "top2ds_qualify[iarray(key = id)" + mem + "]" in eqs
    assert "top2ds_qualify[hash(key = id, unique = true)[array" + mem + "]]" in eqs
    assert "top2ds_qualify[hash(key = id)[array" + mem + "]]" not in eqs


def test_candidates_pass_same_api_when_the_finds_are_declared(tmp_path):
    spec = """record a { id: u32; owner: char[8]; bal: i64; }
container acc of a = top2ds_qualify[array[transient]];
find acc by id;
find acc by owner;
"""
    space = Space(spec, "acc", "s.p2")
    stacks = space.enumerate()
    base = tmp_path / "s.p2"
    base.write_text(spec)
    rng = random.Random(5)
    for i, st in enumerate(rng.sample(stacks, 4)):
        cand = tmp_path / f"c{i}.p2"
        cand.write_text(space.spec_text(space.equation(st)))
        try:
            same_api(base, cand)
        except ApiMismatch as e:
            # only an iarray storage (one element per id: a unique key) may be refused
            assert st.storage == "iarray" and "unique keys none -> (id)" in str(e), str(e)
