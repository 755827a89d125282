"""`p2gen tune`'s ranking (tune_rank): a candidate's cost from its layers' cards (each layer
checked alone over the storage) equals its cost from the whole candidate checked; the sizes
come from the profile; the ranking puts the keyed paths of a point-find workload first and
orders candidates by the planner's costs at the profile's n. No C is built."""
from __future__ import annotations

import random

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
    same walk on every candidate: the ranking is the one without it, not empty."""
    space = Space(SPEC, "items", "inv.p2")
    cprof = profile()
    with_all = dict(cprof, cursors={**cprof["cursors"], "all": {"walks": 1, "rows": 3000}})
    plain, walked = ranked(space, cprof)[:20], ranked(space, with_all)[:20]
    assert walked and [(c.equation, c.cost) for c in walked] == \
        [(c.equation, c.cost) for c in plain]
