"""`p2gen bench tune-topk`'s pieces that need no compiler: the synthetic workloads are
profiles tune ranks as it ranks a real one, the measured set is the model's top 5 (distinct)
and a sample of the rest; and the ranking's cost of a sorted array's inserts when the
profile saw the keys arrive in order. The experiment itself measures: not run here."""
from __future__ import annotations

import random

from p2gen.bench.tune import topk
from p2gen.tune_rank import current_candidate, ranked
from p2gen.tune_space import Space


def test_workloads_alternate_the_shapes_and_are_seeded():
    ws = topk.workloads(6, 38)
    assert [w.shape for w in ws] == ["tpcb", "range"] * 3
    assert ws == topk.workloads(6, 38) and ws != topk.workloads(6, 39)
    for w in ws:
        prof = w.profile()
        assert prof["count_max"] == w.n and prof["ops"]["insert"] == w.n
        (key, ks), = prof["keys"].items()
        assert ks["in_order"] is w.in_order and ks["max"] == (w.n - 1 if w.dense else 50 * w.n)


def test_the_measured_set_is_the_top_five_then_a_sample_of_the_rest():
    w = next(w for w in topk.workloads(4, 38) if w.shape == "range")
    name, source = topk.SHAPES[w.shape]
    space = Space(source, name, "range.p2")
    chosen, size = topk.choose(space, w.profile(), 3, random.Random(1))
    assert [r for r, _ in chosen] == [1, 2, 3, 4, 5, 0, 0, 0]
    assert len({c.canonical for _, c in chosen}) == len(chosen)       # no equation twice
    costs = [c.cost for _, c in chosen[:5]]
    assert costs == sorted(costs) and size >= len(chosen)


def _range_candidates(in_order: bool) -> list:
    """The range shape's candidates ranked for 10,000 inserts and 1,000 walks of 100 rows."""
    w = topk.Workload("range", 10000, finds=0, updates=0, key_updates=0, deletes=0,
                      walks=1000, rows_per_walk=100, in_order=in_order, dense=True)
    name, source = topk.SHAPES["range"]
    space = Space(source, name, "range.p2")
    prof = w.profile()
    return ranked(space, prof, current_candidate(space, prof).find_keys)


def _qsort_insert_cost(in_order: bool) -> float:
    cands = _range_candidates(in_order)
    return next(c for c in cands if c.equation.startswith("top2ds_qualify[qsort(")).per_op["insert"]


def test_a_sorted_array_appends_keys_that_arrive_in_order():
    # 10,000 inserts: in key order each a binary search (1 + log2 n); shuffled, also a shift
    # of n / 2 elements of 104 bytes (row and key), 1.625 lines each, streamed at a twelfth
    # of a line read
    assert _qsort_insert_cost(True) < 10000 * 20
    shift = 5000 * 104 / 64 / 12
    assert 10000 * shift < _qsort_insert_cost(False) < 10000 * (shift + 20)


def test_walk_rows_cost_less_on_a_btree_and_a_sorted_array_than_on_an_avl():
    # 1,000 walks of the range shape: per row an avl's successor is a dependent read, a
    # btree's walk prefetches (ROW_COST 0.45), a sorted array's rows are consecutive (0.2)
    from p2gen.tune_rank import ROW_COST
    cands = _range_candidates(True)
    walk = {layer: min(c.per_op.get("walk_walk", float("inf")) for c in cands
                       if c.equation.startswith(f"top2ds_qualify[{layer}("))
            for layer in ("avl", "btree", "qsort")}
    assert walk["qsort"] < walk["btree"] < walk["avl"]
    assert walk["btree"] / walk["avl"] < (1 + ROW_COST["btree"]) / 2
    # so the model's first is no longer an avl (it was: measured 1.5-2.9x the best)
    assert not cands[0].equation.startswith("top2ds_qualify[avl(")
