"""Slot storage over a file keeps its slot block's address in the handle (iarray, array:
`Layer.mirrors_root`): an element is one load from db, as on the heap. These tests move the
block behind that copy -- growth, an abort that undoes a growth, a reopen -- and check,
through the Python module (the generated library), that every read and write still lands
in the block the file's root names: a stale copy would lose the writes made after it went
stale (they would go to a block the file no longer uses)."""
from __future__ import annotations

import random

import pytest
from conftest import python_module

from p2gen.runtime.pyapi import NotFoundError

SPEC = """
record item { id: u32; v: i64; }
container mirr_keyed of item = top2ds_qualify[iarray[journal[persistent]]]
    with iarray(key = id, capacity = 2), persistent(file = "mirr.db");
container mirr_log of item = top2ds_qualify[array[journal[persistent]]]
    with array(capacity = 2), persistent(file = "mirr.db");
"""


@pytest.fixture(scope="module", params=["journal", "wal"])
def mod(request, tmp_path_factory):
    """The page journal's abort restores pages, the record log's its logged bytes: both
    put the roots back behind the handle's copies."""
    return python_module(tmp_path_factory, f"mirr_{request.param}",
                         SPEC.replace("journal", request.param))


def _state(db):
    keyed = {r.id: r.v for r in db.mirr_keyed}
    log = sorted((r.id, r.v) for r in db.mirr_log)
    return keyed, log


def test_an_abort_that_undoes_growth_brings_the_blocks_back(mod, tmp_path):
    with mod.open(str(tmp_path)) as db:
        for i in range(2):
            db.mirr_keyed.insert(id=i, v=i)
            db.mirr_log.insert(id=i, v=i)
        db.commit()
        # both slot blocks double several times, in turns: each growth moves a block
        for i in range(2, 200):
            db.mirr_keyed.insert(id=i, v=i)
            db.mirr_log.insert(id=i, v=i)
        db.abort()
        # the blocks are the committed ones again: writes go there, and survive
        db.mirr_keyed.update(db.mirr_keyed.find(1), v=100)
        first = next(iter(db.mirr_log))
        db.mirr_log.update(first, v=200)
        for i in range(2, 40):
            db.mirr_keyed.insert(id=i, v=-i)
            db.mirr_log.insert(id=i, v=-i)
        db.commit()
        keyed, log = _state(db)
        assert db.verify() == []
    expect_keyed = {0: 0, 1: 100, **{i: -i for i in range(2, 40)}}
    expect_log = sorted([(first.id, 200), (1 - first.id, 1 - first.id)]
                        + [(i, -i) for i in range(2, 40)])
    assert keyed == expect_keyed and log == expect_log
    with mod.open(str(tmp_path)) as db:      # a reopen resolves the blocks afresh
        assert _state(db) == (expect_keyed, expect_log)
        assert db.verify() == []


def test_random_growth_and_aborts_against_a_model(mod, tmp_path):
    rng = random.Random(7)
    committed = ({}, {})          # keyed: id -> v; log: insertion number -> v
    with mod.open(str(tmp_path)) as db:
        keyed, log = dict(committed[0]), dict(committed[1])
        refs = {}                 # log insertion number -> its reference (committed ones)
        pending_refs = {}
        for step in range(600):
            op = rng.random()
            if op < 0.45:
                k = rng.randrange(0, 300)
                if k in keyed:
                    db.mirr_keyed.update(db.mirr_keyed.find(k), v=step)
                else:
                    db.mirr_keyed.insert(id=k, v=step)
                keyed[k] = step
            elif op < 0.8:
                n = len(refs) + len(pending_refs)
                pending_refs[n] = db.mirr_log.insert(id=n, v=step)
                log[n] = step
            elif op < 0.9:
                db.commit()
                refs.update(pending_refs)
                pending_refs = {}
                committed = (dict(keyed), dict(log))
            else:
                db.abort()
                pending_refs = {}
                keyed, log = dict(committed[0]), dict(committed[1])
            if step % 50 == 0:
                assert {r.id: r.v for r in db.mirr_keyed} == keyed
                assert {r.id: r.v for r in db.mirr_log} == log
        db.commit()
        committed = (dict(keyed), dict(log))
        assert db.verify() == []
    with mod.open(str(tmp_path)) as db:
        assert {r.id: r.v for r in db.mirr_keyed} == committed[0]
        assert {r.id: r.v for r in db.mirr_log} == committed[1]


def live(db, ref) -> bool:
    """Is `ref` an element of mirr_log (at(), by reference; [], in and get go by key)?"""
    try:
        db.mirr_log.at(ref)
        return True
    except NotFoundError:
        return False


def test_references_an_abort_took_back_are_refused(mod, tmp_path):
    """array over a file also keeps its high-water mark (the bound _valid tests a reference
    against) in the handle. An abort of inserts that did not grow the block lowers the mark
    in the file behind that copy: the references those inserts handed out must be no
    element again (not a live slot of stale bytes), until inserts reach them anew."""
    with mod.open(str(tmp_path)) as db:
        kept = [db.mirr_log.insert(id=i, v=i) for i in range(6)]   # capacity 2 -> 4 -> 8
        db.commit()
        gone = [db.mirr_log.insert(id=100 + i, v=i) for i in range(2)]   # slots 6, 7: no growth
        assert all(live(db, r.ref) for r in kept + gone)
        db.abort()
        assert all(live(db, r.ref) for r in kept)
        assert not any(live(db, r.ref) for r in gone)
        assert sorted(r.id for r in db.mirr_log) == list(range(6))
        again = db.mirr_log.insert(id=200, v=0)
        assert again.ref == gone[0].ref and db.mirr_log.at(again.ref) == again
        assert not live(db, gone[1].ref)
        db.commit()
        assert db.verify() == []
    with mod.open(str(tmp_path)) as db:    # a reopen loads the mark from the file
        assert live(db, gone[0].ref) and not live(db, gone[1].ref)
        assert len(db.mirr_log) == 7
