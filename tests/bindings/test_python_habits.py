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
    build_python(g)
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
