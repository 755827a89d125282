"""What a Python user expects of a generated module, through its public interface: `with`
blocks that never lose changes silently, dict habits (`[]`, `in`, `get` by key; every field
given or defaulted at insert; `find` by any key), methods present only where they work, and
`python -m p2gen`. (issue 37)"""
from __future__ import annotations

import importlib
import subprocess
import sys
import textwrap

import pytest

from p2gen.build import generate
from conftest import QUICK_PY_CFLAGS
from p2gen.pybind import build_python
from p2gen.runtime import pyapi

JOURNALLED = """
record purchase { id: u32; qty: u32; note: text; }
container p2u_orders of purchase = top2ds_qualify[hash[array[journal[persistent]]]]
    with hash(key = id), persistent(file = "p2u.db");
"""

PLAIN = """
record r { a: u32; }
container p2up_c of r = top2ds[array[transient]];
"""


def _module(root, prefix, text):
    spec = root / f"{prefix}.p2"
    spec.write_text(textwrap.dedent(text))
    g = generate(str(spec), str(root / "out"))
    build_python(g, extra_cflags=QUICK_PY_CFLAGS)
    sys.path.insert(0, g.out_dir)
    try:
        return importlib.import_module(prefix)
    finally:
        sys.path.remove(g.out_dir)


@pytest.fixture(scope="module")
def jmod(tmp_path_factory):
    return _module(tmp_path_factory.mktemp("p2u"), "p2u", JOURNALLED)


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    return _module(tmp_path_factory.mktemp("p2up"), "p2up", PLAIN)


# -- transactions -----------------------------------------------------------------------
def test_leaving_the_with_block_normally_commits(jmod, tmp_path):
    with jmod.open(str(tmp_path)) as db:
        db.p2u_orders.insert(id=1, qty=2, note="kept")      # no commit()
    with jmod.open(str(tmp_path)) as db:
        assert db.p2u_orders.find(1).note == "kept"


def test_leaving_the_with_block_by_an_exception_aborts(jmod, tmp_path):
    with jmod.open(str(tmp_path)) as db:
        db.p2u_orders.insert(id=1, qty=2, note="committed")
    with pytest.raises(ZeroDivisionError):
        with jmod.open(str(tmp_path)) as db:
            db.p2u_orders.insert(id=2, qty=3, note="dropped")
            1 / 0
    with jmod.open(str(tmp_path)) as db:
        assert db.p2u_orders.find(1) is not None and db.p2u_orders.find(2) is None


def test_transaction_block_commits_or_aborts(jmod, tmp_path):
    with jmod.open(str(tmp_path)) as db:
        orders = db.p2u_orders
        with db.transaction():
            orders.insert(id=1, qty=1, note="a")
        with pytest.raises(KeyError):
            with db.transaction():
                orders.insert(id=2, qty=1, note="b")
                raise KeyError("boom")
        assert orders.find(2) is None and orders.find(1) is not None
        db.abort()                          # nothing pending: the first block committed
        assert orders.find(1) is not None
        with db.transaction() as same:
            assert same is db
            with pytest.raises(RuntimeError, match="nest"):
                with db.transaction():
                    pass
            orders.insert(id=3, qty=1, note="c")
        orders.insert(id=4, qty=1, note="pending")
        with pytest.raises(pyapi.P2Error, match="commit or abort"):
            with db.transaction():         # changes pending: say so, never fold them in
                pass
        db.abort()
    with jmod.open(str(tmp_path)) as db:
        assert sorted(r.id for r in db.p2u_orders) == [1, 3]


def test_transactions_absent_without_a_journal(plain):
    with plain.open() as db:
        for name in ("begin", "commit", "abort", "transaction"):
            assert not hasattr(db, name), name
        db.p2up_c.insert(a=1)               # leaving the block: nothing to commit
    assert db.closed


# -- python -m p2gen --------------------------------------------------------------------
def test_python_dash_m_p2gen(tmp_path):
    spec = tmp_path / "s.p2"
    spec.write_text(PLAIN)
    r = subprocess.run([sys.executable, "-m", "p2gen", "check", str(spec)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "ok" in r.stdout
    r = subprocess.run([sys.executable, "-m", "p2gen", "--help"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0 and "Usage: p2gen" in r.stdout


# -- records and keys -------------------------------------------------------------------
BOOK = """
record trade { id: u32; symbol: char[8]; price: u32; qty: u32 = 0; side: char[4] = "buy";
               rate: f64 = 1.5; note: char[8]; }
container p2ub_trades of trade
    = top2ds_qualify[hash(key = id)[avl(key = (symbol, price))[array[transient]]]];
record quote { symbol: char[8]; price: u32; size: u32 = 1; }
container p2ub_quotes of quote
    = top2ds_qualify[avl(key = (symbol, price), unique = true)[array[transient]]];
record memo { id: u32; body: text = "none yet"; tag: u16; }
container p2ub_memos of memo = top2ds_qualify[hash(key = id)[array[transient]]];
record plain { a: u32; }
container p2ub_plain of plain = top2ds[array[transient]];
"""


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    return _module(tmp_path_factory.mktemp("p2ub"), "p2ub", BOOK)


def test_insert_needs_fields_without_a_default(book):
    with book.open() as db:
        t = db.p2ub_trades
        with pytest.raises(TypeError, match="needs field.*symbol, price, note"):
            t.insert(id=5)
        with pytest.raises(TypeError, match="needs field.*note"):
            t.insert(id=5, symbol="A", price=3)
        assert len(t) == 0
        r = t.insert(id=5, symbol="A", price=3, note="")
        assert (r.qty, r.side, r.rate) == (0, "buy", 1.5)        # the spec's defaults
        r = t.insert({"id": 6, "symbol": "B", "price": 4, "note": "n"}, qty=9)
        assert (r.qty, r.side) == (9, "buy")
        with pytest.raises(TypeError, match="row 1: trade needs field.*note"):
            t.insert_many([dict(id=7, symbol="C", price=1, note=""),
                           dict(id=8, symbol="C", price=2)])
        assert len(t) == 2
        m = db.p2ub_memos.insert(id=1, tag=2)                        # a text default
        assert m.body == "none yet"
        with pytest.raises(TypeError, match="needs field.*tag"):
            db.p2ub_memos.insert(id=2, body="x")
        q, inserted = db.p2ub_quotes.upsert(symbol="A", price=1)
        assert inserted and q.size == 1
        with pytest.raises(TypeError, match="needs field.*price"):
            db.p2ub_quotes.upsert(symbol="A")


def test_defaults_in_the_spec_are_checked(tmp_path):
    bad = tmp_path / "bad.p2"
    bad.write_text('record r { a: u8 = 300; b: char[2] = "abc"; c: f32 = "x"; d: ref cs = 1; }\n'
                   "container cs of r = top2ds[array[transient]];\n")
    r = subprocess.run([sys.executable, "-m", "p2gen", "check", str(bad)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1
    for want in ("bad.p2:1:20: error: default of field 'a' of record 'r': 300 is out of range "
                 "for u8 (0 .. 255)", "'b' of record 'r': \"abc\" does not fit char[2]",
                 "'c' of record 'r': expected a number for f32", "a ref field's default can "
                 "only be none"):
        assert want in r.stderr, r.stderr
    good = tmp_path / "good.p2"
    good.write_text('record r { a: u8 = 255; b: char[3] = "abc"; c: f32 = 2; d: ref cs = none;'
                    ' e: i8 = -128; t: text = ""; }\ncontainer cs of r = top2ds[array[transient]];\n')
    r = subprocess.run([sys.executable, "-m", "p2gen", "check", str(good)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


def test_brackets_in_and_get_by_key(book):
    with book.open() as db:
        t = db.p2ub_trades
        assert t.key == "id"
        for i in (10, 1, 2):
            t.insert(id=i, symbol="S", price=i, note="")
        r1 = t[1]
        assert r1.id == 1 and t.at(r1.ref) == r1        # references: at()
        assert 2 in t and 3 not in t
        assert t.get(10).price == 10 and t.get(3) is None and t.get(3, "x") == "x"
        with pytest.raises(KeyError):
            t[3]
        del t[2]
        assert 2 not in t and len(t) == 2
        with pytest.raises(KeyError):
            del t[2]
        q = db.p2ub_quotes                                # the unique key, a composite one
        assert q.key == "symbol_price" or set(q.composite_keys[q.key]) == {"symbol", "price"}
        q.insert(symbol="A", price=5, size=3)
        assert q[("A", 5)].size == 3 and ("A", 5) in q and ("A", 6) not in q
        with pytest.raises(TypeError, match="tuple of 2"):
            q["A"]
        p = db.p2ub_plain
        p.insert(a=1)
        with pytest.raises(TypeError, match="no key.*at\\(ref\\)"):
            p.get(1)


def test_find_by_any_key_composite_included(book):
    with book.open() as db:
        t = db.p2ub_trades
        t.insert(id=1, symbol="A", price=7, note="")
        assert t.find(1).id == 1 and t.find(id=1).id == 1
        assert t.find(symbol="A", price=7).id == 1
        assert t.find(symbol="A", price=8) is None
        with pytest.raises(TypeError, match=r"one of its keys: id, \(symbol, price\)"):
            t.find(symbol="A")
        with pytest.raises(TypeError, match=r"one of its keys: id, \(symbol, price\)"):
            t.find(qty=0)
        with pytest.raises(TypeError, match=r"'nope' is not a field"):
            t.find(nope=0)
        assert db.p2ub_quotes.find(("A", 1)) is None


def test_unsupported_methods_are_absent(book):
    with book.open() as db:
        assert not hasattr(db.p2ub_trades, "upsert")      # no unique index
        assert hasattr(db.p2ub_quotes, "upsert")
        assert not hasattr(db.p2ub_trades, "purge")       # no delflag layer
        assert not hasattr(db, "commit")                  # no journal
