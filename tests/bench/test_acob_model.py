"""ACOB's reference model (acob_model.py, acob.md §6.1) against the spec's expected counts:
per-set means over five sets within 3 sd of the spec's 8-seed mean (references, page
reads, object gets, page write-backs and object puts of the random read and update, for
the lowest and highest clustering), every single set's references and requests per
reference within 5 %, the scan exactly 300 pages
and 10,500 objects, the smeared scan about 1,150 pages. Pure Python, a few seconds."""
from __future__ import annotations

import statistics

import pytest

from acob_model import Lru, Model, Rng

from p2gen.bench.acob.run import MODEL


def _mean(cs, attr):
    return statistics.mean(getattr(c, attr) for c in cs)


@pytest.mark.parametrize("f", [10, 90])
def test_model_counts_agree_with_the_spec(f):
    m = Model(sets=5, f=f)
    read, update = m.step("read"), m.step("update")
    (refs, pages, objs, pwb, puts) = MODEL[f]
    for got, (mean, sd), what in ((_mean(read, "walk"), refs, "references"),
                                  (_mean(read, "page_reads"), pages, "page reads"),
                                  (_mean(read, "obj_reads"), objs, "object gets"),
                                  (_mean(update, "page_writes"), pwb, "page write-backs"),
                                  (_mean(update, "obj_writes"), puts, "object puts")):
        assert abs(got - mean) <= 3 * sd, (f, what, got, mean, sd)
    for c in read:
        # a single set: its references within 5 %, its requests per reference too (a set's
        # requests follow its walk's length, which spreads by a few per cent)
        assert abs(c.walk - refs[0]) <= 0.05 * refs[0]
        assert abs(c.page_reads / c.walk - pages[0] / refs[0]) <= 0.05 * pages[0] / refs[0]
        assert abs(c.obj_reads / c.walk - objs[0] / refs[0]) <= 0.05 * objs[0] / refs[0]
    # the update reads what the read reads (same seed, same walk); ≈ 300 × 16.8 updates
    assert [c.walk for c in update] == [c.walk for c in read]
    assert [c.page_reads for c in update] == [c.page_reads for c in read]
    assert 4700 <= _mean(update, "updates") <= 5300
    # at B = 50 every page is written back more than once in the update
    assert all(c.page_rewrites >= 250 for c in update)


def test_model_scan_and_smeared_scan():
    for c in Model(sets=2, f=50).step("scan"):
        assert (c.walk, c.roots, c.page_reads, c.obj_reads, c.updates) == (10500, 1500, 300, 10500, 0)
    smeared = Model(sets=3, f=50, smear=True).step("scan")
    assert all(1050 <= c.page_reads <= 1250 for c in smeared), [c.page_reads for c in smeared]
    assert all(c.obj_reads == 10500 for c in smeared)


def test_model_walk_counts_do_not_depend_on_f():
    # revisits counted: the walk's references follow the coins only (acob.md §3)
    assert [c.walk for c in Model(sets=2, f=10).step("read")] == \
        [c.walk for c in Model(sets=2, f=90).step("read")]


def test_lru_counts_misses_and_write_backs():
    b = Lru(2)
    for u, d in ((1, False), (2, True), (1, False), (3, False), (2, False), (1, True)):
        b.touch(u, d)
    b.commit()
    # 1 2 hit(1) 3 (evicts dirty 2: a write) 2 (evicts 1) 1 (evicts 3); commit writes 1
    assert (b.reads, b.writes, b.rewrites) == (5, 2, 0)


def test_splitmix_stream_is_the_drivers():
    # the first outputs of splitmix64 from seed 0 (its reference values)
    r = Rng(0)
    assert [r.next() for _ in range(2)] == [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4]
