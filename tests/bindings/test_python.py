"""Tests of `p2gen build --python`: the CFFI extension (generator/pybind.py) and the Pythonic
layer over it (runtime/pyapi.py).

Each spec is built once per module (module-scoped fixtures) into a temporary directory and
imported from there; every test opens a fresh database directory. Prefixes start with
`p2t_` so that they cannot clash with other test modules' imports.
"""
import gc
import importlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from p2gen.runtime import pyapi
from p2gen.build import generate
from p2gen.pybind import build_python, cdef, python_module, binding_metadata
from conftest import QUICK_PY_CFLAGS

ROOT = Path(__file__).resolve().parents[2]
LAYERS = ROOT / "layers"
CC = shutil.which("cc") or shutil.which("gcc")
pytestmark = pytest.mark.skipif(CC is None, reason="no C compiler")


def needs_layers(*names):
    missing = [n for n in names if not (LAYERS / f"{n}.c.j2").exists()]
    return pytest.mark.skipif(bool(missing), reason=f"layer template(s) missing: {missing}")


BANK = """
record account { id: u32 = 0; branch: u16 = 0; balance: i64 = 0; name: char[12] = ""; rate: f64 = 0; tiny: i8 = 0; }
container accounts of account
    = top2ds_qualify[hash[array[persistent]]]
    with hash(key = id, buckets = 16), persistent(file = "bank.db");
record note { id: u32 = 0; owner: char[8] = ""; text: char[16] = ""; }
container notes of note
    = delflag[top2ds_qualify[hash(key = id)[hash(key = owner)[array[transient]]]]];
container log of note = qualify[top2ds[array[transient]]];
cursor rich_in_branch on accounts where branch == $b and balance > $min;
cursor by_name on accounts where name == $n;
cursor rate_between on accounts where rate >= $lo and rate < $hi;
cursor notes_of on notes where owner == $who;
cursor loud on log where text != "";
"""

# Same file name as BANK, another record: opening one's file with the other is a mismatch.
# Field names that are also Python / API words.
OTHER = """
record thing { ref: u32 = 0; key: i16 = 0; self: char[4] = ""; }
container things of thing = top2ds[array[persistent]] with persistent(file = "bank.db");
"""

KEYED = """
record item { id: u32 = 0; qty: i32 = 0; }
container items of item = top2ds[iarray[transient]] with iarray(key = id, max_key = 1000);
"""


def _build(tmp_path_factory, prefix, text, **kw):
    """Generate and build a spec's module: at QUICK_PY_CFLAGS unless `kw` says how (the
    bank module is built as users build it, with $CC and Python's flags)."""
    kw.setdefault("extra_cflags", QUICK_PY_CFLAGS)
    root = tmp_path_factory.mktemp(prefix)
    spec = root / f"{prefix}.p2"
    spec.write_text(textwrap.dedent(text))
    gen = generate(str(spec), str(root / "out"))
    path = build_python(gen, **kw)
    return gen, path


def _import(gen, prefix):
    sys.path.insert(0, gen.out_dir)
    try:
        return importlib.import_module(prefix)
    finally:
        sys.path.remove(gen.out_dir)


@pytest.fixture(scope="module")
def bank_build(tmp_path_factory):
    saved = os.environ.get("CC")
    gen, path = _build(tmp_path_factory, "p2t_bank", BANK, cc=CC, extra_cflags=())
    assert os.environ.get("CC") == saved, "build_python must restore $CC"
    return gen, path


@pytest.fixture(scope="module")
def bank(bank_build):
    return _import(bank_build[0], "p2t_bank")


@pytest.fixture(scope="module")
def other(tmp_path_factory):
    gen, _ = _build(tmp_path_factory, "p2t_other", OTHER)
    return _import(gen, "p2t_other")


@pytest.fixture(scope="module")
def keyed(tmp_path_factory):
    gen, _ = _build(tmp_path_factory, "p2t_keyed", KEYED)
    return _import(gen, "p2t_keyed")


@pytest.fixture
def db(bank, tmp_path):
    d = bank.open(tmp_path)
    yield d
    d.close()


def fill(db, n=200, seed=7):
    rng = random.Random(seed)
    names = ["ann", "bob", "cy", "dee", "éva"]
    rows = []
    for i in range(n):
        row = dict(id=i * 3 + 1, branch=rng.randrange(5), balance=rng.randrange(-1000, 1000),
                   name=rng.choice(names), rate=rng.random(), tiny=rng.randrange(-128, 128))
        db.accounts.insert(**row)
        rows.append(row)
    return rows


def ids(records):
    return sorted(r.id for r in records)


# ---------------------------------------------------------------------------
# the build
# ---------------------------------------------------------------------------
def test_build_outputs(bank_build, bank):
    gen, path = bank_build
    assert path == os.path.join(os.path.abspath(gen.out_dir), "p2t_bank.py")
    assert bank.__file__ == path
    assert bank.METADATA["prefix"] == "p2t_bank"
    assert [f["name"] for f in bank.METADATA["records"]["account"]] == \
        ["id", "branch", "balance", "name", "rate", "tiny"]
    assert bank.ffi.sizeof("p2t_bank_account") >= 4 + 2 + 8 + 12 + 8 + 1


def test_build_is_deterministic(bank_build):
    gen, path = bank_build
    assert cdef(gen.checked, gen.declarations) == cdef(gen.checked)   # the emit pass's table
    text = python_module(gen, binding_metadata(gen.checked))
    assert text == python_module(gen, binding_metadata(gen.checked))
    assert Path(path).read_text() == text


def test_cdef_declares_every_header_function(bank_build, bank):
    gen, _ = bank_build
    header = Path(gen.header).read_text()
    protos = re.findall(r"^[A-Za-z][^;#{}()]*?\b(\w+)\((?:[^;]*)\);$", header, re.M)
    assert len(protos) > 30
    missing = [p for p in protos if not hasattr(bank.lib, p)]
    assert not missing
    for name, code in [("P2_OK", 0), ("P2_END", 1), ("P2_NOTFOUND", 2), ("P2_EDUP", 3),
                       ("P2_EFORMAT", 7), ("P2_EMISMATCH", 8), ("P2_EBUSY", 11)]:
        assert getattr(bank.lib, name) == code
    assert bank.ffi.string(bank.lib.p2_strerror(3)).startswith(b"P2_EDUP")


# ---------------------------------------------------------------------------
# containers
# ---------------------------------------------------------------------------
def test_insert_get_find(db):
    a = db.accounts.insert(id=7, branch=2, balance=-5, name="zoë", rate=0.5, tiny=-3)
    assert (a.id, a.branch, a.balance, a.name, a.rate, a.tiny) == (7, 2, -5, "zoë", 0.5, -3)
    assert isinstance(a.ref, int)
    assert db.accounts.at(a.ref) == a
    assert db.accounts.at(a) == a
    assert db.accounts.find(7) == a
    assert db.accounts.find(id=7).ref == a.ref
    assert db.accounts.find(8) is None
    assert db.accounts.find(id=8) is None
    assert len(db.accounts) == 1
    assert 7 in db.accounts and 12345 not in db.accounts     # by key
    assert db.accounts[7] == a and db.accounts.get(7) == a and db.accounts.get(8) is None


def test_insert_defaults_and_bytes(db):
    a = db.accounts.insert(id=1)
    assert a._asdict() == dict(id=1, branch=0, balance=0, name="", rate=0.0, tiny=0)
    b = db.accounts.insert(id=2, name=b"bytes")
    assert b.name == "bytes"
    full = db.accounts.insert(id=3, name="x" * 12)  # exactly N bytes: no terminator
    assert db.accounts.at(full.ref).name == "x" * 12
    c = db.accounts.insert(full, id=4)  # from a record, overridden by keywords
    assert c.name == "x" * 12 and c.id == 4
    d = db.accounts.insert({"id": 5, "balance": 9})
    assert (d.id, d.balance) == (5, 9)


def test_update_and_key_update(db):
    a = db.accounts.insert(id=10, branch=1, balance=100, name="old")
    b = db.accounts.update(a, balance=150, name="new")
    assert (b.balance, b.name, b.id) == (150, "new", 10)
    assert (a.balance, a.name) == (100, "old")   # records are copies
    assert db.accounts.find(10) == b
    c = db.accounts.update(b.ref, id=11)          # the key: every index follows
    assert db.accounts.find(10) is None
    assert db.accounts.find(11) == c
    assert c.balance == 150
    assert db.accounts.at(c.ref) == c
    assert len(db.accounts) == 1
    assert ids(db.rich_in_branch(b=1, min=0)) == [11]
    with pytest.raises(pyapi.NotFoundError, match="stale"):
        db.accounts.update(b, balance=1)     # b still says id 10
    with pytest.raises(pyapi.NotFoundError, match="stale"):
        db.accounts.delete(a)
    assert db.accounts.at(c.ref) == c


@needs_layers("qsort")
def test_moving_references(tmp_path_factory):
    gen, _ = _build(tmp_path_factory, "p2t_sorted", """
        record row { k: i32; v: i32; }
        container rows of row = top2ds_qualify[qsort[transient]] with qsort(key = k);
        cursor small on rows where k < $lim;
    """)
    mod = _import(gen, "p2t_sorted")
    with mod.open() as d:
        rows = d.rows
        recs = [rows.insert(k=k, v=k) for k in (50, 10, 30, 20, 40)]
        assert [r.k for r in rows] == [10, 20, 30, 40, 50]
        old = recs[0]                             # k=50, its position has moved since
        assert rows.at(rows.find(50)).k == 50
        with pytest.raises(pyapi.NotFoundError, match="stale"):
            rows.update(old, v=0)
        with pytest.raises(pyapi.NotFoundError, match="stale"):
            rows.delete(recs[2])
        rows.delete(rows.find(30))
        moved = rows.update(rows.find(10), k=45)  # to the other end
        assert rows.at(moved.ref) == moved and moved.k == 45
        cur = d.small(lim=46)
        for r in cur:
            cur.update(v=-r.k)
        assert [(r.k, r.v) for r in rows] == [(20, -20), (40, -40), (45, -45), (50, 50)]


def test_delete_len_iteration(db):
    rows = fill(db, 50)
    assert len(db.accounts) == 50
    assert ids(db.accounts) == sorted(r["id"] for r in rows)
    victim = db.accounts.find(1)
    db.accounts.delete(victim)
    assert len(db.accounts) == 49
    assert db.accounts.find(1) is None
    with pytest.raises(pyapi.NotFoundError) as ei:
        db.accounts.at(victim.ref)
    assert ei.value.code == pyapi.P2_NOTFOUND
    assert isinstance(ei.value, KeyError)
    assert "no element" in str(ei.value)
    with pytest.raises(pyapi.NotFoundError):
        db.accounts.delete(victim.ref)
    with pytest.raises(pyapi.NotFoundError):
        db.accounts.update(victim, balance=1)
    with pytest.raises(pyapi.NotFoundError):
        db.accounts.at(-1)
    assert 1 not in ids(db.accounts)


def test_cursors_match_python_filtering(db, bank):
    rows = fill(db, 300)
    for b in range(5):
        for lo in (-1001, -200, 0, 500, 999):
            want = sorted(r["id"] for r in rows if r["branch"] == b and r["balance"] > lo)
            assert ids(db.rich_in_branch(b=b, min=lo)) == want
            assert ids(db.cursor("rich_in_branch", b, lo)) == want
    for n in ("ann", "éva", "nobody"):
        assert ids(db.by_name(n=n)) == sorted(r["id"] for r in rows if r["name"] == n)
    assert ids(db.by_name(n=b"bob")) == sorted(r["id"] for r in rows if r["name"] == "bob")
    for lo, hi in ((0.0, 0.5), (0.25, 0.26), (0.9, 2.0), (1, 0)):
        want = sorted(r["id"] for r in rows if lo <= r["rate"] < hi)
        assert ids(db.rate_between(lo=lo, hi=hi)) == want
    assert ids(db.rate_between(hi=1.0, lo=0.0)) == sorted(r["id"] for r in rows)


def test_cursor_update_and_delete_while_walking(db):
    rows = fill(db, 100)
    cur = db.rich_in_branch(b=3, min=-1001)
    touched = []
    for rec in cur:
        new = cur.update(balance=rec.balance + 10_000)
        assert new.balance == rec.balance + 10_000 and cur.current == new
        touched.append(rec.id)
    assert sorted(touched) == sorted(r["id"] for r in rows if r["branch"] == 3)
    assert all(db.accounts.find(i).balance >= 9_000 for i in touched)
    cur = db.rich_in_branch(3, 9_000)
    for rec in cur:
        if rec.id % 2:
            cur.delete()
            assert cur.current is None
    left = sorted(i for i in touched if i % 2 == 0)
    assert ids(db.rich_in_branch(3, -1001)) == left
    assert len(db.accounts) == 100 - (len(touched) - len(left))
    cur = iter(db.accounts)
    with pytest.raises(pyapi.P2Error):
        cur.delete()   # not on an element yet


def test_changing_container_while_walking_raises(db):
    fill(db, 20)
    it = iter(db.accounts)
    first = next(it)
    db.accounts.delete(first)
    with pytest.raises(RuntimeError, match="changed during iteration"):
        next(it)
    it = iter(db.accounts)
    next(it)
    db.notes.insert(id=1)          # another container: fine
    next(it)
    db.accounts.insert(id=100_000)
    with pytest.raises(RuntimeError):
        next(it)


def test_cursor_parameter_errors(db):
    with pytest.raises(TypeError, match="missing parameter.*min"):
        db.rich_in_branch(b=1)
    with pytest.raises(TypeError, match="no parameter 'x'.*b, min"):
        db.rich_in_branch(b=1, min=2, x=3)
    with pytest.raises(TypeError, match="takes 2 parameter"):
        db.rich_in_branch(1, 2, 3)
    with pytest.raises(TypeError, match="given twice"):
        db.rich_in_branch(1, b=2, min=3)
    with pytest.raises(TypeError, match=r"\$b"):
        db.rich_in_branch(b="one", min=2)
    with pytest.raises(OverflowError, match=r"\$b.*u16"):
        db.rich_in_branch(b=70000, min=2)
    with pytest.raises(ValueError, match=r"\$n.*char\[12\]"):
        db.by_name(n="x" * 13)
    with pytest.raises(TypeError, match="takes 0 parameter"):
        db.loud(1)
    with pytest.raises(AttributeError, match="no cursor 'nope'"):
        db.cursor("nope")


def test_transient_and_persistent_in_one_spec(bank, tmp_path):
    with bank.open(tmp_path) as d:
        assert d.accounts.persistent and not d.notes.persistent
        assert d.accounts.file == "bank.db" and d.notes.file is None
        d.accounts.insert(id=1, name="kept")
        d.notes.insert(id=1, owner="me", text="gone")
        d.log.insert(id=2, text="hi")
        d.log.insert(id=3)
        assert [r.id for r in d.loud()] == [2]
        d.sync()
    assert (tmp_path / "bank.db").exists()
    with bank.open(str(tmp_path)) as d:
        assert [r.name for r in d.accounts] == ["kept"]
        assert len(d.notes) == 0 and len(d.log) == 0


def test_delflag_purge_and_several_keys(db):
    notes = db.notes
    assert notes.keys == ("id", "owner")
    for i in range(10):
        notes.insert(id=i, owner="ann" if i % 2 else "bob", text=f"n{i}")
    assert notes.find(id=3).owner == "ann"
    assert notes.find(owner="bob").owner == "bob"
    assert notes.find(owner="x" * 20) is None     # longer than the field: cannot be there
    assert notes.key == "id" and notes.find(3).id == 3   # find(v): by the container's key
    with pytest.raises(TypeError, match="'text' is not a key.*id, owner"):
        notes.find(text="n1")
    with pytest.raises(TypeError, match="not a field"):
        notes.find(nope=1)
    with pytest.raises(TypeError, match="has no key fields"):
        db.log.find(id=1)
    assert ids(db.notes_of(who="ann")) == [1, 3, 5, 7, 9]
    for i in (1, 3, 4):
        notes.delete(notes.find(id=i))
    assert len(notes) == 7
    assert ids(db.notes_of(who="ann")) == [5, 7, 9]
    assert notes.purge() == 3
    assert notes.purge() == 0
    assert len(notes) == 7 and ids(notes) == [0, 2, 5, 6, 7, 8, 9]
    assert not hasattr(db.accounts, "purge")


def test_records(db, bank):
    a = db.accounts.insert(id=1, branch=2, name="n", rate=1.5)
    b = db.accounts.find(1)
    assert a == b and hash(a) == hash(b) and a is not b
    assert a != db.accounts.update(a, tiny=1)
    assert repr(a).startswith("account(id=1, branch=2, balance=0, name='n', rate=1.5, tiny=0, ref=")
    assert a._fields == ("id", "branch", "balance", "name", "rate", "tiny")
    assert type(a) is bank.records["account"]
    with pytest.raises(AttributeError, match="read-only"):
        a.balance = 3
    n = db.notes.insert(id=1)
    with pytest.raises(TypeError, match="note record of container notes"):
        db.log.delete(n)   # same record type, another container
    db.log.insert(n)       # copying between containers is fine


def test_fields_named_like_api_words(other, tmp_path):
    with other.open(tmp_path) as d:
        t = d.things.insert(ref=5, key=-2, self="abc")
        assert (t.ref, t.key, t.self, t._ref) == (5, -2, "abc", t._ref)
        assert d.things.at(t._ref).key == -2
        u = d.things.update(t, key=3)
        assert u.key == 3


# ---------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------
def test_bad_field_values(db):
    acc = db.accounts
    with pytest.raises(TypeError, match=r"no field 'balanse' \(fields: id, branch, balance"):
        acc.insert(id=1, balanse=3)
    with pytest.raises(TypeError, match="field 'id' of account is u32: expected an int"):
        acc.insert(id="1")
    with pytest.raises(TypeError, match="field 'id'"):
        acc.insert(id=1.0)
    with pytest.raises(TypeError, match="field 'name'.*str or bytes"):
        acc.insert(id=1, name=5)
    with pytest.raises(TypeError, match="field 'rate'.*float"):
        acc.insert(id=1, rate="0.5")
    with pytest.raises(ValueError, match=r"field 'name' of account is char\[12\].*13 bytes"):
        acc.insert(id=1, name="x" * 13)
    with pytest.raises(ValueError, match=r"char\[12\]"):
        acc.insert(id=1, name="é" * 7)                # 14 bytes in UTF-8
    with pytest.raises(ValueError, match="NUL"):
        acc.insert(id=1, name="a\0b")
    for field, value in (("id", -1), ("id", 1 << 32), ("branch", 65536), ("tiny", 128),
                         ("tiny", -129), ("balance", 1 << 63)):
        with pytest.raises(OverflowError, match=f"field '{field}'") as ei:
            acc.insert(**{field: value})
        assert isinstance(ei.value, pyapi.RangeError)
    assert acc.insert(tiny=-128, branch=65535, balance=-(1 << 63), id=(1 << 32) - 1).tiny == -128
    assert len(acc) == 1                               # nothing else got in
    a = acc.find(id=(1 << 32) - 1)
    with pytest.raises(TypeError, match="no field 'nope'"):
        acc.update(a, nope=1)
    with pytest.raises(ValueError):
        acc.update(a, name="y" * 20)
    assert acc.at(a.ref) == a                         # failed updates change nothing
    with pytest.raises(TypeError, match="expected a Record or a reference"):
        acc.at("0")
    with pytest.raises(OverflowError):
        acc.find(-5)


def test_closed_database(bank, tmp_path):
    d = bank.open(tmp_path)
    acc = d.accounts
    a = acc.insert(id=1)
    it = iter(acc)
    cur = d.rich_in_branch(b=0, min=-1)
    d.close()
    assert d.closed
    d.close()   # twice: nothing
    for op in (lambda: acc.insert(id=2), lambda: acc.at(a), lambda: acc.find(1),
               lambda: acc.update(a, balance=1), lambda: acc.delete(a), lambda: len(acc),
               lambda: list(acc), lambda: next(it), lambda: next(cur), d.sync,
               lambda: d.rich_in_branch(b=0, min=0), lambda: d.notes.purge(),
               lambda: d.__enter__()):
        with pytest.raises(pyapi.ClosedError, match="closed") as ei:
            op()
        assert ei.value.code == pyapi.P2_ECLOSED
    with bank.open(tmp_path) as d2:        # the file was closed cleanly
        assert d2.accounts.find(1) == a


def test_busy(bank, tmp_path):
    with bank.open(tmp_path):
        with pytest.raises(pyapi.BusyError) as ei:
            bank.open(tmp_path)
        assert ei.value.code == pyapi.P2_EBUSY
        assert "bank.db" in str(ei.value)


def test_unclosed_database_is_closed_when_collected(bank, tmp_path):
    d = bank.open(tmp_path)
    d.accounts.insert(id=42)
    del d
    gc.collect()
    with bank.open(tmp_path) as d:
        assert d.accounts.find(42) is not None


def test_corrupt_file(bank, tmp_path):
    with bank.open(tmp_path) as d:
        d.accounts.insert(id=1)
    path = tmp_path / "bank.db"
    data = bytearray(path.read_bytes())
    data[200] ^= 0x40          # reserved header bytes, covered by the checksum
    path.write_bytes(bytes(data))
    with pytest.raises(pyapi.FormatError, match="checksum") as ei:
        bank.open(tmp_path)
    assert ei.value.code == pyapi.P2_EFORMAT
    assert isinstance(ei.value, pyapi.P2Error)


def test_fingerprint_mismatch(bank, other, tmp_path):
    with bank.open(tmp_path) as d:
        d.accounts.insert(id=1)
    before = (tmp_path / "bank.db").read_bytes()
    with pytest.raises(pyapi.MismatchError, match="different spec") as ei:
        other.open(tmp_path)
    assert ei.value.code == pyapi.P2_EMISMATCH
    assert (tmp_path / "bank.db").read_bytes() == before
    with bank.open(tmp_path) as d:
        assert len(d.accounts) == 1


def test_open_error_bad_dir(bank, tmp_path):
    with pytest.raises(pyapi.P2Error) as ei:
        bank.open(tmp_path / "no" / "such" / "dir")
    assert ei.value.code == pyapi.P2_EIO
    assert str(ei.value)


@needs_layers("iarray")
def test_unique_key_storage(keyed):
    with keyed.open() as d:
        a = d.items.insert(id=5, qty=1)
        with pytest.raises(pyapi.DuplicateError) as ei:
            d.items.insert(id=5, qty=2)
        assert ei.value.code == pyapi.P2_EDUP and str(ei.value)
        with pytest.raises(pyapi.RangeError):
            d.items.insert(id=1001)
        assert len(d.items) == 1 and d.items.find(5) == a
        d.items.insert(id=6)
        with pytest.raises(pyapi.DuplicateError):
            d.items.update(a, id=6)
        b = d.items.update(a, id=7)        # the reference is the key: it moves
        assert d.items.at(b.ref) == b and d.items.find(5) is None
        assert ids(d.items) == [6, 7]


# ---------------------------------------------------------------------------
# another process
# ---------------------------------------------------------------------------
CHILD = """
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("p2t_bank", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
with mod.open(sys.argv[2]) as db:
    print(json.dumps(sorted((r._asdict() for r in db.accounts), key=lambda r: r["id"])))
    db.accounts.insert(id=999_999, name="child")
"""


def test_reopen_in_fresh_process(bank, bank_build, tmp_path):
    with bank.open(tmp_path) as d:
        fill(d, 40)
        d.accounts.delete(d.accounts.find(1))
        d.accounts.update(d.accounts.find(4), name="upd")
        mine = sorted((r._asdict() for r in d.accounts), key=lambda r: r["id"])
    # The module is loaded by file name: its directory is not on sys.path in the child.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    res = subprocess.run([sys.executable, "-c", CHILD, bank_build[1], str(tmp_path)],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == mine
    with bank.open(tmp_path) as d:
        assert d.accounts.find(999_999).name == "child"
        assert len(d.accounts) == 40


def test_reserve_presizes_without_changing_contents(tmp_path_factory):
    """reserve is a hint: contents and behaviour are the same with and without it."""
    gen, _ = _build(tmp_path_factory, "pyrsv", """
        record r { id: u32; g: i32; }
        container h of r = top2ds_qualify[hash(key = g, buckets = 2)[avl(key = id)[array(capacity = 1)[transient]]]];
        container i of r = top2ds_qualify[iarray(key = id, capacity = 1)[persistent(file = "r.db")]];
        """)
    mod = _import(gen, "pyrsv")
    d = str(tmp_path_factory.mktemp("rsvdb"))
    with mod.open(d) as db:
        db.h.reserve(1000)
        db.i.reserve(1000)
        db.h.reserve(10)  # smaller than what is there: no-op
        for k in range(1000):
            db.h.insert(id=k, g=k % 7)
            db.i.insert(id=k, g=k % 7)
        assert len(db.h) == len(db.i) == 1000
        assert sorted(r.id for r in db.h if r.g == 3) == [k for k in range(1000) if k % 7 == 3]
        assert db.i.find(999).g == 999 % 7
        with pytest.raises(TypeError):
            db.h.reserve(-1)
    with mod.open(d) as db:
        assert len(db.i) == 1000


# ---------------------------------------------------------------------------
# user-chosen names as keywords; values without a UTF-8 spelling (issue 16, item 14)
# ---------------------------------------------------------------------------
NAMES = """
record thing { id: u32 = 0; self: i32 = 0; name: char[8] = ""; body: text = ""; }
container things of thing = top2ds_qualify[hash[array[transient]]] with hash(key = id);
cursor q on things where self == $self and id > $name;
cursor named on things where name == $name;
"""


@pytest.fixture(scope="module")
def names(tmp_path_factory):
    gen, _ = _build(tmp_path_factory, "p2t_names", NAMES)
    return _import(gen, "p2t_names")


def test_binding_arguments_do_not_shadow_user_names(names, tmp_path):
    """A cursor parameter $name or $self and a field `self` pass by keyword: the binding's
    own arguments (the cursor's name, self) are positional-only."""
    with names.open(tmp_path) as d:
        for i in range(6):
            d.things.insert(id=i, self=i % 2, name=f"n{i}")
        assert ids(d.cursor("q", name=1, self=1)) == [3, 5]
        assert ids(d.cursor("q", self=0, name=0)) == [2, 4]
        assert ids(d.q(name=2, self=1)) == [3, 5]
        assert ids(d.q(self=1, name=4)) == [5]
        assert ids(d.cursor("named", name="n3")) == [3]
        assert ids(d.named(name="n4")) == [4]
        cur = d.q(self=0, name=0)
        for rec in cur:
            assert cur.update(self=rec.self + 10).self == 10
        assert sorted(r.self for r in d.things) == [0, 1, 1, 1, 10, 10]
        t = d.things.find(id=1)
        assert d.things.update(t, self=7).self == 7
        with pytest.raises(TypeError, match="given twice"):
            d.cursor("q", 1, 2, name=3)


def test_lone_surrogate_is_a_range_error(names, db, tmp_path):
    """A str with no UTF-8 spelling (a lone surrogate) in a char[N] field, a text field, a
    cursor parameter or a find key raises the binding's RangeError (a ValueError), naming
    what it was for; surrogate escapes of undecodable bytes still round-trip."""
    bad = "a\ud800b"
    with pytest.raises(pyapi.RangeError, match=r"field 'name' of account.*UTF-8") as ei:
        db.accounts.insert(id=1, name=bad)
    assert isinstance(ei.value, ValueError) and ei.value.code == pyapi.P2_ERANGE
    assert len(db.accounts) == 0
    with pytest.raises(pyapi.RangeError, match=r"\$n.*UTF-8"):
        db.by_name(n=bad)
    with names.open(tmp_path) as d:
        t = d.things.insert(id=1, body="ok")
        with pytest.raises(pyapi.RangeError, match="field 'body'.*UTF-8"):
            d.things.update(t, body=bad)
        with pytest.raises(pyapi.RangeError, match="field 'body'.*UTF-8"):
            d.things.insert(id=2, body="\udfff")
        assert [r.body for r in d.things] == ["ok"]
        with pytest.raises(pyapi.RangeError, match=r"\$name.*UTF-8"):
            d.named(name=bad)
        esc = b"\xff\xfe".decode("utf-8", "surrogateescape")
        assert d.things.insert(id=3, name=esc, body=esc).name == esc
        assert d.things.find(id=3).body.encode("utf-8", "surrogateescape") == b"\xff\xfe"


# ---------------------------------------------------------------------------
# the Halloween problem: cursor updates of the key the walk is ordered by (item 12)
# ---------------------------------------------------------------------------
ORDERS = """
record purchase { id: u32 = 0; price: i64 = 0; cust: i32 = 0; }
container by_avl of purchase = top2ds_qualify[avl(key = price)[array[transient]]];
container by_qsort of purchase = top2ds_qualify[qsort(key = price)[transient]];
container by_hash of purchase
    = top2ds_qualify[hash(key = cust, buckets = 2)[odlist(key = price)[malloc[transient]]]];
container by_id of purchase
    = top2ds_qualify[iarray(key = id, max_key = 100000)[transient]];
cursor avl_price on by_avl where price > $min order by price;
cursor qsort_price on by_qsort where price > $min order by price;
cursor odlist_price on by_hash where price > $min order by price;
cursor hash_cust on by_hash where cust == $c;
cursor ids on by_id where id >= $lo;
cursor avl_down on by_avl where price < $max order by price desc;
cursor qsort_down on by_qsort where price < $max order by price desc;
cursor odlist_down on by_hash where price < $max order by price desc;
"""


@pytest.fixture(scope="module")
def orders(tmp_path_factory):
    gen, _ = _build(tmp_path_factory, "p2t_orders", ORDERS)
    return _import(gen, "p2t_orders")


def test_cursor_updates_of_the_walk_key_meet_each_element_once(orders, tmp_path):
    """`for o in cur: cur.update(price=o.price + 1000)` over an `order by price` cursor
    (avl, qsort, odlist), `cur.update(cust=...)` over a hash walk on cust and
    `cur.update(id=o.id + 1)` over an iarray walk (each update moves the element ahead of
    the cursor): every element is met once, and the updates all took effect."""
    with orders.open(tmp_path) as d:
        for c in (d.by_avl, d.by_qsort, d.by_hash, d.by_id):
            for i in range(10):
                c.insert(id=i * 2, price=i * 10, cust=i % 2)
        for cname, cursor in (("by_avl", d.avl_price), ("by_qsort", d.qsort_price),
                              ("by_hash", d.odlist_price)):
            met = []
            cur = cursor(min=-1)
            for o in cur:
                met.append(o.id)
                assert cur.update(price=o.price + 1000).price == o.price + 1000
            assert sorted(met) == list(range(0, 20, 2)), cname
            assert sorted(r.price for r in d.container(cname)) == \
                [i * 10 + 1000 for i in range(10)]
        cur = d.hash_cust(c=0)
        met = []
        for o in cur:
            met.append(o.id)
            cur.update(cust=o.cust + 2)
        assert sorted(met) == [0, 4, 8, 12, 16]
        assert sorted(r.cust for r in d.by_hash) == [1] * 5 + [2] * 5
        cur = d.ids(lo=0)
        met = []
        for o in cur:
            met.append(o.id)
            assert cur.update(id=o.id + 1).id == o.id + 1
        assert met == list(range(0, 20, 2))
        assert sorted(r.id for r in d.by_id) == list(range(1, 21, 2))
        # a walk abandoned early (its cursor remembers moved elements) can be closed
        with d.avl_price(min=-1) as cur:
            for o in cur:
                cur.update(price=o.price + 5)
                break
        assert next(cur, None) is None



def test_batched_cursors_update_and_delete_mid_batch(orders, tmp_path):
    """Cursors fetch rows from C in batches (pyapi.BATCH per crossing): a walk longer than
    several batches that deletes some rows and updates others (some moving ahead of the
    cursor) between fetched rows meets every element once, and ends with exactly the
    changes made, over avl, qsort, odlist, hash and iarray walks (against a dict model)."""
    n = 3 * pyapi.BATCH + 17
    with orders.open(tmp_path) as d:
        for c in (d.by_avl, d.by_qsort, d.by_hash, d.by_id):
            for i in range(n):
                c.insert(id=i, price=i * 10, cust=i % 3)
        walks = (("by_avl", lambda: d.avl_price(min=-1), "price"),
                 ("by_qsort", lambda: d.qsort_price(min=-1), "price"),
                 ("by_hash", lambda: d.odlist_price(min=-1), "price"),
                 ("by_hash", lambda: d.hash_cust(c=1), "cust"),
                 ("by_id", lambda: d.ids(lo=0), "id"))
        for cname, open_cursor, moved in walks:
            model = {r.id: (r.price, r.cust) for r in d.container(cname)}
            met = []
            cur = open_cursor()
            for k, o in enumerate(cur):
                met.append(o.id)
                if k % 7 == 3:
                    cur.delete()
                    del model[o.id]
                elif k % 11 == 5 and moved != "id":
                    # moves the element further along the walk (a larger price), or out
                    # of the cursor's predicate (another cust)
                    new = cur.update(**{moved: getattr(o, moved) + (100000 if moved ==
                                                                     "price" else 1)})
                    model[o.id] = (new.price, new.cust)
                    assert cur.current == new
            assert len(met) == len(set(met)), (cname, moved)
            got = {r.id: (r.price, r.cust) for r in d.container(cname)}
            assert got == model, (cname, moved)
            assert len(d.container(cname)) == len(model)
        # every element of the full walks was met once
        met = [o.id for o in d.ids(lo=0)]
        assert met == sorted(r.id for r in d.by_id)


def test_descending_cursors_walk_backwards_through_batches(orders, tmp_path):
    """`order by price desc` cursors from Python (avl, qsort, odlist): the walk comes out
    largest price first, across several batches; deleting rows and lowering prices under
    it (which moves those elements ahead of a backward walk) meets every element once and
    leaves exactly the changes made."""
    n = 2 * pyapi.BATCH + 9
    with orders.open(tmp_path) as d:
        assert "order by price desc" in d.avl_down.__doc__
        for c in (d.by_avl, d.by_qsort, d.by_hash):
            for i in range(n):
                c.insert(id=i, price=(i * 37) % n * 10, cust=i % 3)
        walks = (("by_avl", d.avl_down), ("by_qsort", d.qsort_down),
                 ("by_hash", d.odlist_down))
        for cname, cursor in walks:
            top = 10 * (n - 5)
            prices = [o.price for o in cursor(max=top)]
            assert prices == sorted((r.price for r in d.container(cname) if r.price < top),
                                    reverse=True), cname
            model = {r.id: r.price for r in d.container(cname)}
            met, seen_prices = [], []
            cur = cursor(max=top)
            for k, o in enumerate(cur):
                met.append(o.id)
                seen_prices.append(o.price)
                if k % 5 == 2:
                    cur.delete()
                    del model[o.id]
                elif k % 3 == 1:
                    model[o.id] = cur.update(price=o.price - 100000).price
            want = [i for i in range(n) if (i * 37) % n * 10 < top]
            assert sorted(met) == want, cname
            assert seen_prices == sorted(seen_prices, reverse=True), cname
            assert {r.id: r.price for r in d.container(cname)} == model, cname


def test_descending_walk_is_the_ascending_one_reversed_ties_included(orders, tmp_path):
    """`_range_prev` steps through equal keys in exactly the reverse of `_range_next`'s
    order (avl: by reference, qsort: by position, odlist: by list order): with many
    duplicate prices, after deletes and re-inserts, the descending walk is the ascending
    walk backwards, element for element."""
    with orders.open(tmp_path) as d:
        for c, up in ((d.by_avl, d.avl_price), (d.by_qsort, d.qsort_price),
                      (d.by_hash, d.odlist_price)):
            for i in range(40):
                c.insert(id=i, price=i % 4, cust=i % 3)
            cur = up(min=-1)
            for o in cur:
                if o.id % 5 == 0:
                    cur.delete()
            for i in range(40, 50):
                c.insert(id=i, price=i % 4, cust=0)
        for up, down in ((d.avl_price, d.avl_down), (d.qsort_price, d.qsort_down),
                         (d.odlist_price, d.odlist_down)):
            asc = [o.id for o in up(min=-1)]
            assert len(asc) == 42
            assert [o.id for o in down(max=4)] == asc[::-1]
            # a bounded walk is the matching slice, backwards
            assert [o.id for o in down(max=2)] == \
                [i for i in asc[::-1] if i % 4 < 2]


def test_records_of_every_field_type_through_batches_and_find(bank, tmp_path):
    """Records decoded from C memory in one struct.unpack (pyapi._Layout) read every field
    type as the per-field reads did: ints of each width and sign at their limits, f64,
    char[N] full and with non-UTF-8 bytes, found by key and walked in batches."""
    with bank.open(tmp_path) as d:
        rows = []
        for i in range(pyapi.BATCH + 5):
            row = dict(id=(1 << 32) - 1 - i, branch=(1 << 16) - 1 if i % 2 else 0,
                       balance=-(1 << 63) + i if i % 3 else (1 << 63) - 1 - i,
                       name=("n" * 12) if i % 4 == 0 else b"\xff\xfe%d" % i,
                       rate=-1.5e300 if i % 2 else 2.0 ** -1074, tiny=-128 if i % 2 else 127)
            d.accounts.insert(**row)
            want = dict(row)
            if isinstance(want["name"], bytes):
                want["name"] = want["name"].decode("utf-8", "surrogateescape")
            rows.append(want)
        walked = {r.id: r._asdict() for r in d.accounts}
        assert walked == {r["id"]: r for r in rows}
        for r in rows:
            assert d.accounts.find(r["id"])._asdict() == r


# ---------------------------------------------------------------------------
# numpy: to_numpy, insert_many
# ---------------------------------------------------------------------------
NUMPY_SPEC = """
record other { id: u32 = 0; }
record every { a: i8 = 0; b: i16 = 0; c: i32 = 0; d: i64 = 0; e: u8 = 0; f: u16 = 0; g: u32 = 0; h: u64 = 0; x: f32 = 0; y: f64 = 0;
               s: char[5] = ""; r: ref others = none; }
record note { id: u32 = 0; body: text = ""; }
container others of other = top2ds_qualify[array[transient]];
container alls of every = top2ds_qualify[hash(key = g, buckets = 64)[array[transient]]];
container uniq of other
    = top2ds_qualify[iarray[transient]] with iarray(key = id, max_key = 1000);
container notes of note = top2ds_qualify[array[transient]];
cursor big on alls where d > $min;
"""


@pytest.fixture(scope="module")
def nump(tmp_path_factory):
    pytest.importorskip("numpy")
    gen, _ = _build(tmp_path_factory, "p2t_nump", NUMPY_SPEC)
    return _import(gen, "p2t_nump")


def _every_rows(o, n):
    rows = []
    for i in range(n):
        s = -1 if i % 2 else 1
        rows.append(dict(a=s * min(i, 127) - (i % 2), b=s * 32767 * (i % 2), c=s * (2**31 - 1),
                         d=s * i * 10**12, e=255 - i % 256, f=65535 - i, g=i, h=2**64 - 1 - i,
                         x=1.5 * i, y=s * 1e300 / (i + 1), s=("ab" * i)[:5] or "é",
                         r=None if i % 3 == 0 else o.ref))
    return rows


def test_to_numpy_and_insert_many_round_trip_every_field_type(nump, tmp_path):
    import numpy as np
    with nump.open(tmp_path) as d:
        o = d.others.insert(id=9)
        rows = _every_rows(o, 150)
        assert d.alls.insert_many(rows) == 150
        arr = d.alls.to_numpy()
        dt = d.alls.dtype
        assert arr.dtype == dt and dt.itemsize == nump.ffi.sizeof("p2t_nump_every")
        assert [dt.fields[n][1] for n in dt.names] == \
            [nump.ffi.offsetof("p2t_nump_every", n) for n in dt.names]
        recs = list(d.alls)
        assert len(arr) == len(recs) == 150
        for a, r in zip(arr, recs):       # the same order as iteration
            v = r._asdict()
            for n in dt.names:
                got = a[n].item()
                if n == "s":
                    got = got.decode("utf-8")
                elif n == "r":
                    got = None if got == pyapi.NOREF else got
                want = v[n]
                assert (got == pytest.approx(want, rel=1e-7) if n == "x" else got == want), n
        # and back: a copy of the array into a fresh database gives the same records
        with nump.open(tmp_path / "2") as d2:
            d2.others.insert(id=9)
            assert d2.alls.insert_many(arr) == 150
            assert [r._asdict() for r in d2.alls] == [r._asdict() for r in recs]
            assert d2.verify() == []
        # to_numpy of the rest of a cursor's walk, after some next()
        cur = d.big(min=0)
        first = [next(cur) for _ in range(3)]
        rest = cur.to_numpy()
        want = [r.g for r in d.big(min=0)]
        assert [r.g for r in first] + list(rest["g"]) == want
        assert next(cur, None) is None
        # a copy: valid after changes and close
        d.alls.delete(recs[0])
    assert arr["g"][0] == recs[0].g


def test_insert_many_checks_every_row_first_and_reports_c_errors_by_index(nump, tmp_path):
    import numpy as np
    with nump.open(tmp_path) as d:
        # a bad value anywhere: nothing inserted, the row named
        for bad, exc in (({"g": 1, "a": 128}, pyapi.RangeError),
                         ({"g": 1, "s": "toolong"}, pyapi.RangeError),
                         ({"g": 1, "s": "a\0b"}, pyapi.RangeError),
                         ({"g": 1, "c": 1.5}, TypeError),
                         ({"g": 1, "zz": 1}, TypeError)):
            with pytest.raises(exc, match="row 2"):
                d.alls.insert_many([{"g": 10}, {"g": 11}, bad])
            assert len(d.alls) == 0
        arr = np.zeros(4, dtype=[("g", "i8"), ("s", "S8")])
        arr["g"] = [1, 2, -3, 4]
        with pytest.raises(pyapi.RangeError, match="row 2"):
            d.alls.insert_many(arr)
        arr["g"] = [1, 2, 3, 4]
        arr["s"] = [b"a", b"b", b"c", b"longer!"]
        with pytest.raises(pyapi.RangeError, match="row 3"):
            d.alls.insert_many(arr)
        arr["s"] = [b"a", b"b\0c", b"c", b"d"]     # a NUL inside a value (checked in C)
        with pytest.raises(pyapi.RangeError, match="row 1: .*NUL"):
            d.alls.insert_many(arr)
        exact = np.zeros(3, dtype=d.alls.dtype)     # the C layout: packed as it is
        exact["g"], exact["r"], exact["s"] = [7, 8, 9], pyapi.NOREF, [b"x", b"y\0z", b"w"]
        with pytest.raises(pyapi.RangeError, match="row 1: .*NUL"):
            d.alls.insert_many(exact)
        with pytest.raises(TypeError, match="no field"):
            d.alls.insert_many(np.zeros(1, dtype=[("nope", "i4")]))
        assert len(d.alls) == 0
        exact["s"][1] = b"yz"
        assert d.alls.insert_many(exact) == 3
        assert sorted((r.g, r.s, r.r) for r in d.alls) == [(7, "x", None), (8, "yz", None),
                                                          (9, "w", None)]
        for r in list(d.alls):
            d.alls.delete(r)
        # fields the array lacks: 0 / "" / no element
        arr["s"] = b"ok"
        assert d.alls.insert_many(arr) == 4
        assert sorted((r.g, r.s, r.r, r.d) for r in d.alls) == \
            [(g, "ok", None, 0) for g in (1, 2, 3, 4)]
        # an error of the C insert (a duplicate key) stops there: .index, rows before stay
        with pytest.raises(pyapi.DuplicateError, match="row 2") as ei:
            d.uniq.insert_many([{"id": 1}, {"id": 2}, {"id": 1}, {"id": 3}])
        assert ei.value.index == 2 and ids(d.uniq) == [1, 2]
        # text fields live outside the record: refused with a message
        with pytest.raises(TypeError, match="text field"):
            d.notes.to_numpy()
        with pytest.raises(TypeError, match="text field"):
            d.notes.insert_many([{"id": 1}])
    with pytest.raises(pyapi.ClosedError):
        d.alls.to_numpy()
    with pytest.raises(pyapi.ClosedError):
        d.alls.insert_many([{"g": 1}])


class _Counting:
    """A lib that records the calls of one function (the rest passes through)."""

    def __init__(self, lib, name):
        self._lib, self._name, self.calls = lib, name, []

    def __getattr__(self, name):
        fn = getattr(self._lib, name)
        if name != self._name:
            return fn

        def call(*args):
            self.calls.append(args[1:])
            return fn(*args)
        return call


def test_insert_many_crosses_into_c_once_per_batch(nump, tmp_path):
    """A bulk load is one call of the C API's <container>_insert_many (which makes room for
    every row first), made only after every row was checked: a bad row calls nothing."""
    import numpy as np
    lib = _Counting(nump.lib, "p2t_nump_alls_insert_many")
    api = pyapi.bind(nump.ffi, lib, nump.METADATA)
    with api.open(tmp_path) as d:
        d.alls.insert(g=10_000)
        arr = np.zeros(300, dtype=d.alls.dtype)
        arr["g"], arr["r"] = np.arange(300), pyapi.NOREF
        assert d.alls.insert_many(arr) == 300
        assert [int(c[1]) for c in lib.calls] == [300]
        assert d.alls.insert_many([{"g": 20_000}, {"g": 20_001}]) == 2
        assert [int(c[1]) for c in lib.calls] == [300, 2]
        assert sorted(r.g for r in d.alls) == list(range(300)) + [10_000, 20_000, 20_001]
        with pytest.raises(pyapi.RangeError):       # a bad row: nothing called or inserted
            d.alls.insert_many([{"g": 1}, {"g": -1}])
        assert len(lib.calls) == 2 and len(d.alls) == 303


CLASH = """
record thing { ref: u32 = 0; key: i16 = 0; }
record other { id: u32 = 0; }
container close of thing = top2ds_qualify[array[transient]];
container others of other = top2ds_qualify[array[transient]];
relationship r one close.find to many others.to_numpy = ilist;
relationship r2 one close.dtype to many others.name = ilist;
cursor sync on others where id == $x;
"""


@needs_layers("ilist")
def test_names_that_clash_with_the_api_stay_reachable(tmp_path_factory, tmp_path):
    """Issue 11 item 4: a container `close`, a cursor `sync`, roles `find`, `name`,
    `to_numpy` and `dtype`, a field `ref`: the checker accepts them (names starting with
    '_', the binding's own, it refuses) and the binding's methods keep their meaning,
    while the user's names are reachable through db.container(), db.cursor(),
    container.role() and the Record's field (`ref`; the reference is then `._ref`)."""
    pytest.importorskip("numpy")
    gen, path = _build(tmp_path_factory, "p2t_clash", CLASH)
    mod = _import(gen, "p2t_clash")
    text = Path(path).read_text()
    assert "db.container('close').role('find')(x)" in text
    assert "db.others.role('to_numpy')(x)" in text and "db.others.role('name')(x)" in text
    with mod.open(tmp_path) as d:
        assert callable(d.close) and callable(d.sync)      # the API's methods
        c = d.container("close")
        t = c.insert(ref=5, key=1)
        assert t.ref == 5 and t._ref == 0 and c.at(t._ref) == t
        o = d.others.insert(id=3)
        c.role("find").add(t, o)
        c.role("dtype").add(t, o)
        assert list(c.role("find")(t)) == [o]
        assert d.others.role("to_numpy")(o) == t and d.others.role("name")(o) == t
        assert d.others.name == "others" and list(d.others.to_numpy()["id"]) == [3]
        assert c.dtype.names == ("ref", "key")
        assert [r.id for r in d.cursor("sync", x=3)] == [3]
        d.sync()


def test_update_by_and_delete_by_key(db, keyed, tmp_path):
    """update_by / delete_by (one call into C: find, read, write the given fields, update)
    act like find + update / delete, with the same checks, and change nothing on error."""
    rows = fill(db, 30)
    r = rows[7]
    new = db.accounts.update_by(r["id"], balance=-5, name="zed")
    assert new == db.accounts.find(r["id"]) and new.balance == -5 and new.name == "zed"
    assert (new.branch, new.rate, new.tiny) == (r["branch"], r["rate"], r["tiny"])
    assert db.accounts.update_by(2, balance=1) is None          # ids are 3k+1: absent
    before = sorted((x.id, x.balance, x.name, x.tiny) for x in db.accounts)
    for bad, exc in (({"balance": "x"}, TypeError), ({"tiny": 1000}, pyapi.RangeError),
                     ({"name": "much too long!"}, pyapi.RangeError), ({"nope": 1}, TypeError),
                     ({"name": "\ud800"}, pyapi.RangeError)):
        with pytest.raises(exc):
            db.accounts.update_by(r["id"], **bad)
    assert sorted((x.id, x.balance, x.name, x.tiny) for x in db.accounts) == before
    moved = db.accounts.update_by(r["id"], id=1000)            # the key itself
    assert moved.id == 1000 and db.accounts.find(r["id"]) is None
    assert db.accounts.delete_by(1000) is True and db.accounts.find(1000) is None
    assert db.accounts.delete_by(1000) is False
    assert len(db.accounts) == 29
    with pytest.raises(TypeError, match="several"):
        db.notes.update_by(1, owner="x")
    with pytest.raises(TypeError, match="no"):
        db.log.delete_by(1)
    db.close()
    with pytest.raises(pyapi.ClosedError):
        db.accounts.update_by(r["id"], balance=1)
    with pytest.raises(pyapi.ClosedError):
        db.accounts.delete_by(r["id"])
    with keyed.open(tmp_path / "k") as d:                      # unique keys (iarray)
        d.items.insert(id=5, qty=1)
        d.items.insert(id=6, qty=2)
        with pytest.raises(pyapi.DuplicateError):
            d.items.update_by(5, id=6)
        assert d.items.update_by(5, qty=9).qty == 9 and d.items.find(6).qty == 2


def test_an_unchanged_rebuild_keeps_the_extension_and_an_edit_rebuilds_it(tmp_path):
    """build_python compiles the extension only when what it is made of changed: the
    generated code (an edit of the spec), the flags; an unchanged rebuild leaves it."""
    spec = tmp_path / "p2t_stamp.p2"
    out = tmp_path / "out"

    def build(text, flags=QUICK_PY_CFLAGS):
        spec.write_text(textwrap.dedent(text))
        gen = generate(str(spec), str(out))
        build_python(gen, extra_cflags=flags)
        ext, = out.glob("_p2t_stamp_cffi.*.so")
        return ext

    def rebuilt(ext):        # compiled since set_old: its time is no longer the epoch's
        return ext.stat().st_mtime_ns != 0

    def set_old(ext):
        os.utime(ext, ns=(0, 0))

    FLAG = "-DP2T_X_INLINE=1"     # a flag the runtime's object is not keyed by (toolchain)
    ext = build(KEYED)
    set_old(ext)
    assert not rebuilt(build(KEYED))
    assert not rebuilt(build(KEYED))
    assert rebuilt(build(KEYED.replace("qty: i32", "qty: i64")))
    set_old(ext)
    assert rebuilt(build(KEYED.replace("qty: i32", "qty: i64"), (*QUICK_PY_CFLAGS, FLAG)))
    set_old(ext)
    assert not rebuilt(build(KEYED.replace("qty: i32", "qty: i64"), (*QUICK_PY_CFLAGS, FLAG)))
    # the rebuilt module is the edited spec's: its declarations say qty is 64 bits
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from _p2t_stamp_cffi import ffi; "
            "print(ffi.sizeof('p2t_stamp_item'))")
    r = subprocess.run([sys.executable, "-c", code, str(out)], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.split() == ["16"], (r.stdout, r.stderr)
    # a stale stamp (a build that failed after it) does not count: the module is compiled
    (ext.parent / (ext.name + ".stamp")).write_text("stale\n")
    set_old(ext)
    assert rebuilt(build(KEYED.replace("qty: i32", "qty: i64"), (*QUICK_PY_CFLAGS, FLAG)))
