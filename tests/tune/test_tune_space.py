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
OO7 = (ROOT / "type_equations" / "oo7" / "hash_ilist_persistent.p2").read_text()
SPECS = {"tpcb": (TPCB, "accounts"), "keys": (KEYS, "lots"), "rel": (REL, "parts"),
         "oo7": (OO7, "atomic_parts")}


@pytest.mark.parametrize("which", list(SPECS))
def test_prediction_equals_the_checker_on_random_stacks(which):
    text, name = SPECS[which]
    space = Space(text, name, f"{which}.p2")
    rng = random.Random(38)
    seen, agree, legal = set(), 0, 0
    while len(seen) < (40 if which != "oo7" else 24):
        st = space.random_stack(rng)
        if st in seen:
            continue
        seen.add(st)
        verdict = space.checker_accepts(st)
        assert space.predicted_legal(st) == verdict, space.equation(st)
        legal += verdict
    assert 0 < legal < len(seen)      # the sample holds stacks of both verdicts
    # ... and the axes beyond the declaration, where the spec has them
    if space.file_axes:
        assert any(st.file_opts for st in seen)
    if space.rel_axes:
        assert any(st.rels for st in seen)


def test_file_options_and_relationships_are_axes_where_legal_and_relevant():
    tpcb = Space(TPCB, "accounts", "tpcb.p2")
    assert tpcb.file_axes == [("links", ("offset64", "offset32")), ("alloc", ("pow2", "exact"))]
    assert tpcb.rel_axes == []
    # OO7's records hold refs and texts: 32-bit links would narrow them (another API)
    oo7 = Space(OO7, "atomic_parts", "oo7.p2")
    assert oo7.file_axes == [("alloc", ("pow2", "exact"))]
    # the 1:N relationships atomic_parts plays a role in: ilist or refarray
    assert oo7.rel_axes == [(r, ("ilist", "refarray")) for r in ("parts", "outgoing", "incoming")]
    # the REL spec's memory is not a file: no file options
    assert Space(REL, "parts", "rel.p2").file_axes == []
    stacks = oo7.enumerate()
    assert {st.rels for st in stacks} >= {(), (("parts", "refarray"),),
                                          (("parts", "refarray"), ("outgoing", "refarray"),
                                           ("incoming", "refarray"))}
    assert {st.file_opts for st in stacks} == {(), (("alloc", "exact"),)}


def test_edits_change_only_the_options_and_layers_they_name():
    space = Space(TPCB, "accounts", "tpcb.p2")
    st = next(s for s in space.enumerate()
              if s.file_opts == (("links", "offset32"), ("alloc", "pow2")) and not s.indexes)
    text = space.spec_text(space.equation(st), st)
    # every container of the file gets 32-bit links; the default allocator is not written
    assert text.count('persistent(file = "tpcb_hash1.db", links = offset32)') == 4
    assert 'persistent(file = "tpcb_hash1.db", links = offset32)]]' in text
    assert "alloc" not in text
    # what the edits do not name stays byte for byte
    for e in space.edits(st):
        assert TPCB[e.start:e.end] == e.old
    oo7 = Space(OO7, "atomic_parts", "oo7.p2")
    st = next(s for s in oo7.enumerate() if s.rels == (("outgoing", "refarray"),))
    text = oo7.spec_text(oo7.equation(st), st)
    assert "to many connections.from              = refarray;" in text
    assert "to many connections.to                = ilist;" in text
    assert oo7.describe_edits(st) == "relationship outgoing = refarray"


def test_the_space_keeps_what_must_not_change():
    space = Space(KEYS, "lots", "keys.p2")
    assert space.keys == [("mat", "kind"), ("tag",), ("w",)]
    stacks = space.enumerate()
    assert stacks
    for st in stacks:
        eq = space.equation(st)
        assert eq.startswith("top2ds_qualify[")
        assert "[journal[persistent(file = \"l.db\"" in eq
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
