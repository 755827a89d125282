"""`p2gen tune`'s ranking (tune_rank): a candidate's cost from its layers' cards (each layer
checked alone over the storage) equals its cost from the whole candidate checked; the sizes
come from the profile; the ranking puts the keyed paths of a point-find workload first and
orders candidates by the planner's costs at the profile's n. No C is built."""
from __future__ import annotations

import random
from pathlib import Path

import pytest

from p2gen.tune_rank import current_candidate, predicted, ranked, sized_variants
from p2gen.tune_space import Space

SPEC = """record item { sku: u32; kind: u16; name: char[8]; price: f64; qty: i32; }
container items of item = top2ds_qualify[odlist(key = price)[array[transient]]];
find items by sku;
find items by name;
find items by (kind, sku);
cursor cheap on items where price < $p order by price;
"""


def profile(n=3000, sku_max=10006, finds=5000):
    return {"count_max": n, "count_final": n,
            "ops": {"insert": n, "get": 0, "at": 0, "update_key": 300, "update_other": 300,
                    "delete": 500},
            "cursors": {"cheap": {"walks": 100, "rows": 15000}},
            "keys": {"price": {"finds": 0, "min": 0.0, "max": 99.0, "distinct": 100},
                     "sku": {"finds": finds, "min": 0, "max": sku_max, "distinct": n},
                     "name": {"finds": 1000, "min": None, "max": None, "distinct": 500},
                     "kind_sku": {"finds": 1667, "min": None, "max": None, "distinct": n}}}


def test_cards_combined_equal_the_whole_candidate_checked():
    space = Space(SPEC, "items", "inv.p2")
    cprof = profile()
    cur = current_candidate(space, cprof)
    cands = ranked(space, cprof, cur.find_keys)
    assert len(cands) > 100
    for c in random.Random(38).sample(cands, 12):
        whole = predicted(space, type(c)(c.stack, c.params), cprof)
        assert abs(whole.cost - c.cost) < 1e-6 * max(1.0, c.cost), c.equation
        assert whole.find_keys == c.find_keys == cur.find_keys
    # the spec's own (an odlist, O(n) per insert and find) ranks below the best
    assert cands[0].cost < cur.cost / 10
    assert [c.cost for c in cands] == sorted(c.cost for c in cands)


def test_sizes_come_from_the_profile():
    space = Space(SPEC, "items", "inv.p2")
    cprof = profile(n=5000)
    for c in ranked(space, cprof)[:50]:
        if "hash(" in c.equation:
            assert "buckets = 8192" in c.equation          # the power of two >= n
        if "array(" in c.equation:
            assert "capacity = 8192" in c.equation
    # iarray (its key unique) over sparse keys: its slot block would be mostly empty
    uniq = SPEC.replace("find items by sku;\n", "").replace(
        "odlist(key = price)[array[transient]]",
        "odlist(key = price)[hash(key = sku, unique = true)[array[transient]]]")
    space = Space(uniq, "items", "inv.p2")
    iarrays = lambda prof: [c for st in space.enumerate() if st.storage == "iarray"
                            for c in sized_variants(space, st, prof)]
    dense = iarrays(profile(n=3000, sku_max=2999))
    assert dense and all("max_key" in str(c.params) for c in dense)
    assert iarrays(profile(n=3000, sku_max=10 ** 7)) == []


def test_the_generated_all_cursor_does_not_make_every_candidate_infinite():
    """A walk of the generated `all` cursor (an invariant check's scan in the profile) is the
    same walk on every candidate, paying only each candidate's element layout (its bytes /
    64 lines a row): the ranking is not empty, and each cost is the one without it plus
    that."""
    space = Space(SPEC, "items", "inv.p2")
    cprof = profile()
    with_all = dict(cprof, cursors={**cprof["cursors"], "all": {"walks": 1, "rows": 3000}})
    plain = {c.equation: c.cost for c in ranked(space, cprof)}
    walked = ranked(space, with_all)
    assert walked and len(walked) == len(plain)
    for c in walked[:20]:
        assert 3000 * 0.25 <= c.per_op["walk_all"] <= 3000 * 2
        assert abs(c.cost - plain[c.equation] - c.per_op["walk_all"]) < 1e-6 * c.cost


REL = """record part { id: u32; x: i32; }
record comp { id: u32; }
container parts of part = top2ds_qualify[hash(key = id)[array[persistent(file = "r.db")]]];
container comps of comp = top2ds_qualify[array[persistent(file = "r.db")]];
relationship has one comps.parts to many parts.owner = ilist;
find parts by id;
"""


def rel_profile(rel: dict, rows: int = 0) -> dict:
    n = 2000
    return {"count_max": n, "count_final": n, "ops": {"insert": n},
            "cursors": {"all": {"walks": 1, "rows": rows}} if rows else {},
            "keys": {"id": {"finds": 4 * n, "min": 0, "max": n - 1, "distinct": n}},
            "relationships": {"has": rel}}


def _cost(cands, **want) -> float:
    """The cost of the cheapest candidate whose stack has each attribute `want` gives."""
    return min(c.cost for c in cands if all(getattr(c.stack, k) == v for k, v in want.items()))


def test_the_ranking_moves_with_the_workload_on_each_new_axis():
    space = Space(REL, "parts", "rel.p2")
    assert space.rel_axes == [("has", ("ilist", "refarray"))]
    refarray = (("has", "refarray"),)
    # long walks of the relationship: refarray's block beats chasing the list
    walks = ranked(space, rel_profile({"walks": 100, "rows": 100_000, "adds": 2000}))
    assert _cost(walks, rels=refarray) < _cost(walks, rels=())
    # removing members from large collections: refarray searches its block, ilist unlinks
    cprof = rel_profile({"walks": 10, "rows": 20_000, "adds": 2000, "removes": 2000})
    removes = ranked(space, cprof)
    best = removes[0]
    st = best.stack
    as_refarray = predicted(space, type(best)(type(st)(st.indexes, st.storage, st.storage_key,
                                                       st.file_opts, refarray), best.params),
                            cprof)
    assert best.stack.rels == () and best.cost < as_refarray.cost
    assert not [c for c in removes if c.stack.rels]     # no gain: not ranked
    # a workload without the relationship's operations sees no gain in another layer:
    # those candidates are not ranked at all; 32-bit links only where they gain (a btree's
    # nodes hold more entries: fewer levels), never on a hash over an array
    finds = ranked(space, rel_profile({}))
    assert finds and not [c for c in finds if c.stack.rels]
    assert not [c for c in finds if c.edits and c.stack.storage == "array" and
                [ix.layer for ix in c.stack.indexes] == ["hash"]]
    assert [c for c in finds if c.edits and "btree" in c.equation]
    # scanning every element: 32-bit links (narrower elements) and exact size classes
    # for one block per element (malloc, whose 64-bit links 32-bit links refuse) cost less
    scans = ranked(space, rel_profile({}, rows=200_000))
    narrow = (("links", "offset32"), ("alloc", "pow2"))
    assert _cost(scans, file_opts=narrow, storage="array") < \
        _cost(scans, file_opts=(), storage="array")
    assert not [c for c in scans if c.stack.file_opts == narrow and c.stack.storage == "malloc"]
    exact = (("links", "offset64"), ("alloc", "exact"))
    assert _cost(scans, file_opts=exact, storage="malloc") < \
        _cost(scans, file_opts=(), storage="malloc")
    assert not [c for c in scans if c.stack.file_opts == exact and c.stack.storage == "array"]


def test_btree_node_sizes_are_sized_variants_the_checker_allows():
    space = Space(SPEC, "items", "inv.p2")
    cands = ranked(space, profile(n=100_000))
    nodes = {c.params[i]["node"] for c in cands for i, ix in enumerate(c.stack.indexes)
             if ix.layer == "btree"}
    assert nodes == {"256", "1024", "4096"}
    # each is legal whole: a sample checked by the checker through `predicted`
    for c in random.Random(7).sample([c for c in cands if "btree" in c.equation], 4):
        assert predicted(space, type(c)(c.stack, c.params), profile(n=100_000)).cost == \
            pytest.approx(c.cost)


def test_the_evidence_says_when_declaring_unique_would_open_iarray():
    from p2gen.tune_rank import unique_would_open
    from p2gen.tune_run import Outcome
    from p2gen.tune_write import evidence
    tpcb = (Path(__file__).resolve().parents[2] / "type_equations" / "tpcb" /
            "hash1_persistent.p2").read_text()
    space = Space(tpcb, "accounts", "tpcb.p2")
    keys = {"finds": 50000, "inserts": 20000, "min": 0, "max": 19999, "in_order": True}
    cprof = {"count_max": 20000, "ops": {"insert": 20000}, "cursors": {},
             "keys": {"id": dict(keys, distinct=21717)}}      # TPC-B's profile: +8.6%
    notes = unique_would_open(space, cprof)
    assert len(notes) == 1 and "declaring `unique = true` on id would let tune try " \
                               "iarray(key = id)" in notes[0]
    # half as many distinct keys as inserts: duplicates, no note
    assert unique_would_open(space, dict(cprof, keys={"id": dict(keys, distinct=10000)})) == []
    # negative keys: no iarray
    assert unique_would_open(space, dict(cprof, keys={"id": dict(keys, distinct=20000,
                                                                 min=-5)})) == []
    # declared unique already: iarray is in the space, nothing to say
    uniq = Space(tpcb.replace("hash(key = id, buckets = 65536", "hash(key = id, unique = true, "
                              "buckets = 65536"), "accounts", "tpcb.p2")
    assert unique_would_open(uniq, cprof) == []
    from p2gen.tune_measure import Result
    from p2gen.tune_rank import Candidate
    from p2gen.tune_space import Stack
    own = Candidate(Stack((), "", None), equation="e", cost=1.0, current=True)
    o = Outcome("accounts", [own], [Result(0, {"insert": 1.0}, [1e6] * 3, 1e6, 0.0)],
                {"insert": 20000}, 0.0, 20000, notes=notes)
    assert f"note: {notes[0]}" in evidence(o, 3, "m")


SCAN = """record row { k: u32; v: u64; pad: char[88]; }
container rows of row = top2ds_qualify[array[transient]];
find rows by k;
cursor walk on rows;
"""


def test_a_walk_of_every_row_pays_the_scan_the_planner_takes():
    """20 walks of 100,000 rows, a find per 100 rows: the planner walks the array in place
    under any index (its scan is the cheapest by its costs), so the walk costs the same on
    every index over a presized packed array, streamed (STREAMED: less than a line a row),
    line slots more; a btree's ordered walk, cheaper by tune's ROW_COST, is not what runs.
    The hash over the packed array (measured best, bench/RESULTS.md) ranks first."""
    n = 100_000
    space = Space(SCAN, "rows", "scan.p2")
    cprof = {"count_max": n, "count_final": n, "ops": {"insert": n},
             "cursors": {"walk": {"walks": 20, "rows": 20 * n}},
             "keys": {"k": {"finds": n // 100, "inserts": n, "min": 0, "max": n - 1,
                            "distinct": n, "in_order": False, "out_of_order": n // 2}}}
    cur = current_candidate(space, cprof)
    cands = ranked(space, cprof, cur.find_keys)
    walk = {c.equation: c.per_op["walk_walk"] for c in cands}
    packed = {e: v for e, v in walk.items()
              if "array(capacity" in e and "slots = line" not in e and "malloc" not in e}
    assert any(e.startswith("top2ds_qualify[btree") for e in packed)
    assert len(set(packed.values())) == 1 and next(iter(packed.values())) < 20 * n
    line = {v for e, v in walk.items() if "slots = line" in e}
    assert min(line) > next(iter(packed.values()))
    first = cands[0].equation
    assert first.startswith("top2ds_qualify[hash(") and "slots = line" not in first, first
