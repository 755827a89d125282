"""Transactions from Python: a journalled spec's module has Database.begin/commit/abort,
and what a commit made durable survives a process that dies without closing."""
from __future__ import annotations

import importlib
import subprocess
import sys
import textwrap

import pytest

from p2gen import pyapi
from p2gen.build import generate
from p2gen.pybind import build_python

SPEC = """
record account { id: u32; balance: i64; note: text; }
container p2tj_accounts of account = top2ds_qualify[hash[array[journal[persistent]]]]
    with hash(key = id), persistent(file = "p2tj.db");
"""


@pytest.fixture(scope="module")
def gen(tmp_path_factory):
    root = tmp_path_factory.mktemp("pyjournal")
    spec = root / "p2tj.p2"
    spec.write_text(textwrap.dedent(SPEC))
    g = generate(str(spec), str(root / "out"))
    build_python(g)
    return g


@pytest.fixture
def mod(gen):
    sys.path.insert(0, gen.out_dir)
    try:
        yield importlib.import_module("p2tj")
    finally:
        sys.path.remove(gen.out_dir)


def test_commit_abort_begin(mod, tmp_path):
    with mod.open(str(tmp_path)) as db:
        db.p2tj_accounts.insert(id=1, balance=5, note="kept")
        db.commit()
        db.p2tj_accounts.insert(id=2, balance=6, note="dropped")
        assert len(db.p2tj_accounts) == 2
        db.abort()
        assert len(db.p2tj_accounts) == 1
        assert db.p2tj_accounts.find(1).note == "kept"
        assert db.p2tj_accounts.find(2) is None
        db.begin()                                  # nothing pending: fine
        db.p2tj_accounts.update(db.p2tj_accounts.find(1), balance=7)
        with pytest.raises(pyapi.P2Error, match="commit or abort"):
            db.begin()                              # changes pending
        db.commit()
    with mod.open(str(tmp_path)) as db:
        assert db.p2tj_accounts.find(1).balance == 7
        assert db.verify() == []                    # the integrity checker, from Python


def test_commit_survives_a_process_that_dies_without_closing(gen, tmp_path):
    child = f"""
import os, sys
sys.path.insert(0, {gen.out_dir!r})
import p2tj
db = p2tj.open({str(tmp_path)!r})
db.p2tj_accounts.insert(id=10, balance=1, note="committed")
db.commit()
db.p2tj_accounts.insert(id=11, balance=2, note="never committed")
os._exit(0)                                        # no close, no flush: as if killed
"""
    subprocess.run([sys.executable, "-c", child], check=True, timeout=120)
    sys.path.insert(0, gen.out_dir)
    try:
        mod = importlib.import_module("p2tj")
    finally:
        sys.path.remove(gen.out_dir)
    with mod.open(str(tmp_path)) as db:
        assert db.p2tj_accounts.find(10).note == "committed"
        assert db.p2tj_accounts.find(11) is None
        assert len(db.p2tj_accounts) == 1


def test_transactions_need_a_journal(tmp_path):
    spec = tmp_path / "p2tn.p2"
    spec.write_text("record r { a: u32; }\ncontainer p2tn_c of r = top2ds[array[transient]];\n")
    g = generate(str(spec), str(tmp_path / "out"))
    build_python(g)
    sys.path.insert(0, g.out_dir)
    try:
        mod = importlib.import_module("p2tn")
    finally:
        sys.path.remove(g.out_dir)
    with mod.open() as db:
        with pytest.raises(TypeError, match="journal"):
            db.commit()
