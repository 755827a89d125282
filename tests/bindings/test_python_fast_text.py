"""Records with text fields on the C paths of the Python binding (generator/pyfast.py,
issue 37 item 3): insert, find (by value and by keyword), get / [] / in by key, at,
update, update_by, delete, cursor batches, relationship walks and one-role reads of a
record with `text` fields cross into C once, reading and writing the texts there. They
must give what the checked Python paths give (the same Records, the same exceptions with
the same messages, the same database afterwards), for every kind of text value: non-ASCII
str, bytes that are not UTF-8, embedded NULs, empty and very long texts, and values the C
paths leave to the Python ones (a str subclass, bytearray, a lone surrogate, a wrong type).
"""
import json
import os
import random
import subprocess
import sys

import pytest
from conftest import python_module

from p2gen.runtime import pyapi

SPEC = """
record user { id: u32; name: text = "anon"; karma: i32 = 0; }
record post { id: u32; body: text; at: i64 = 0; tag: char[8] = ""; }
record plain { id: u32; at: i64 = 0; tag: char[8] = ""; }
container users of user = top2ds_qualify[hash[array[transient]]] with hash(key = id, buckets = 64);
container posts of post = top2ds_qualify[hash[array[transient]]] with hash(key = id, buckets = 64);
container plains of plain = top2ds_qualify[hash[array[transient]]] with hash(key = id, buckets = 64);
cursor recent on posts where at > $t;
relationship wrote one users.posts to many posts.author = ilist;
relationship likes many users.liked to many posts.fans = refarray(capacity = 2);
"""

PYAPI = os.path.dirname(pyapi.__file__) + os.sep    # the package's parts


@pytest.fixture(scope="module")
def mod(tmp_path_factory):
    return python_module(tmp_path_factory, "p2t_ftext", SPEC)


class _Without:
    """A lib without the C paths' module: the checked Python paths throughout."""

    def __init__(self, lib):
        self._lib = lib

    def __getattr__(self, name):
        if name == "p2py__fast_init":
            raise AttributeError(name)
        return getattr(self._lib, name)


@pytest.fixture
def db(mod):
    d = mod.open(None)
    yield d
    d.close()


@pytest.fixture
def checked(mod):
    api = pyapi.bind(mod.ffi, _Without(mod.lib), mod.METADATA)
    d = api.open(None)
    yield d
    d.close()


def python_calls(fn):
    """(fn(), the names of the binding's Python functions that ran during it)."""
    seen = []

    def prof(frame, event, arg):
        if event == "call" and frame.f_code.co_filename.startswith(PYAPI):
            seen.append(frame.f_code.co_name)
    sys.setprofile(prof)
    try:
        v = fn()
    finally:
        sys.setprofile(None)
    return v, seen


LONG = "long ✓ text " * 100_000            # 1.3 MB
TEXTS = ["", "héllo wörld ✓", "a\0b\0", b"\xff\xfe\0raw", b"", LONG, "\udcff\udc80",
         "x" * 4097]


def test_text_containers_and_their_roles_take_the_c_paths(db, mod):
    fast = sys.modules["_p2t_ftext_fast"]
    p, u = db.posts, db.users
    for c in (p, u):
        for name in ("insert", "at", "find", "get", "update", "update_by", "delete",
                     "delete_by", "_getitem", "_contains"):
            assert type(getattr(c, name)).__name__ == "builtin_function_or_method", name
    assert isinstance(u.posts, fast.ManyRole) and isinstance(p.author, fast.OneRole)
    assert isinstance(u.liked, fast.ManyRole) and isinstance(p.fans, fast.ManyRole)
    x = u.insert(id=1)
    assert isinstance(u.posts(x), fast.RoleWalk)
    assert isinstance(iter(p), fast.Walk)


def test_calls_on_text_records_run_no_python_code_of_the_binding(db):
    u, p = db.users, db.posts
    x, _ = python_calls(lambda: u.insert(id=1, name="ünï"))
    assert x.name == "ünï"
    for i in range(200):
        p.insert(id=i, body=f"post {i} ✓", at=i)
        if i % 3 == 0:
            u.posts.add(x, i)
    assert u.liked.add(x, 5) is None
    r8 = p.find(8).ref          # (Record.ref is a Python property)
    calls = {
        "insert": lambda: p.insert(id=1000, body=b"\xff\0z", tag="t"),
        "find": lambda: p.find(7), "find_kw": lambda: p.find(id=7),
        "get": lambda: p.get(7), "item": lambda: p[7], "in": lambda: 7 in p,
        "get_missing": lambda: p.get(99999, "none"), "at": lambda: p.at(r8),
        "update": lambda: p.update(p.find(9), body="changed", at=-1),
        "update_by": lambda: p.update_by(10, body="by key"),
        "update_by_fields": lambda: p.update_by(11, at=5),
        "delete": lambda: p.delete(p.find(12)), "delete_by": lambda: p.delete_by(13),
        "walk": lambda: list(u.posts(x)), "refs": lambda: list(u.posts.refs(x)),
        "count": lambda: u.posts.count(x), "one_get": lambda: p.author.get(3),
        "one_call": lambda: p.author(3), "many_many": lambda: list(u.liked(x)),
    }
    # [] and in: the class's dunder, one line handing over to the C path
    trampoline = {"item": ["__getitem__"], "in": ["__contains__"]}
    for name, call in calls.items():
        v, ran = python_calls(call)
        assert ran == trampoline.get(name, []), (name, ran)
    assert p.find(1000).body.encode("utf-8", "surrogateescape") == b"\xff\0z"
    assert p.get(99999, "none") == "none" and 7 in p and 13 not in p
    assert [r.body for r in u.posts(x)][:3] == ["post 0 ✓", "post 3 ✓", "post 6 ✓"]
    assert p.author(3) == x and p.author(4) is None
    assert p.find(9).body == "changed" and p.find(10).body == "by key"
    assert p.find(11).body == "post 11 ✓" and p.find(11).at == 5    # text kept
    # a cursor: its batches' Records (texts read in C), no per-row Python
    cur = db.recent(t=-100)
    rows, ran = python_calls(lambda: list(cur))
    assert len(rows) == len(p) and {"_make", "_text", "_record", "_records"}.isdisjoint(ran)
    assert sorted(r.id for r in rows) == sorted(r.id for r in p)


@pytest.mark.parametrize("i", range(len(TEXTS)))
def test_text_values_as_the_python_paths_take_them(db, checked, i):
    value = TEXTS[i]
    want = value if isinstance(value, bytes) else value.encode("utf-8", "surrogateescape")
    outs = []
    for d in (db, checked):
        p = d.posts
        a = p.insert(id=1, body=value, tag="é")
        b = p.insert(id=2, body="old")
        c = p.update(b, body=value)
        e = p.update_by(1, body=value, at=3)
        f = p.find(1)
        assert a.body.encode("utf-8", "surrogateescape") == want
        assert f.body.encode("utf-8", "surrogateescape") == want and f.at == 3
        assert c.body == a.body == e.body == p[2].body == p.at(c.ref).body
        outs.append([r._values for r in (a, c, e, f)] + sorted(r._values for r in p))
    assert outs[0] == outs[1]


def _outcome(call):
    """A call's value (Records as their values and reference) or its exception's type and
    message."""
    try:
        v = call()
        if isinstance(v, (pyapi.Links, pyapi.Cursor)):
            v = list(v)
    except (pyapi.P2Error, TypeError, ValueError, RuntimeError, KeyError) as e:
        return ("raised", type(e).__name__, str(e))

    def plain(x):
        if isinstance(x, pyapi.Record):
            return ("record", x._values, x.ref, x._origin)
        if isinstance(x, (list, tuple)):
            return [plain(y) for y in x]
        return x
    return plain(v)


class Sub(str):
    pass


# values the C paths leave to the Python ones, which take some and refuse the rest
ODD = [bytearray(b"ba\0"), memoryview(b"mv"), Sub("sub"), "\ud800", 5, None, 1.5,
       ["x"], b"\0"]


@pytest.mark.parametrize("value", ODD, ids=lambda v: type(v).__name__)
def test_odd_text_values_raise_or_pass_as_in_the_python_paths(db, checked, value):
    outs = []
    for d in (db, checked):
        p = d.posts
        p.insert(id=1, body="one")
        outs.append([_outcome(lambda: p.insert(id=2, body=value)),
                     _outcome(lambda: p.update_by(1, body=value)),
                     _outcome(lambda: p.update(p.find(1), body=value)),
                     _outcome(lambda: p.insert(id=3)),                 # body has no default
                     _outcome(lambda: sorted(r._values for r in p))])
    assert outs[0] == outs[1]


def test_unusual_calls_of_the_by_key_forms_say_what_the_python_paths_say(db, checked):
    outs = []
    for d in (db, checked):
        p = d.posts
        p.insert(id=1, body="one")
        outs.append([_outcome(call) for call in (
            lambda: p.get(1, 2, 3, 4), lambda: p.get(1, default="d"), lambda: p.get(2, "d"),
            lambda: p.get(-1), lambda: p.get("1"), lambda: p.get(key=1), lambda: p[2],
            lambda: p["x"], lambda: p[True], lambda: 1.0 in p, lambda: (1 << 70) in p)])
    assert outs[0] == outs[1]


def test_defaults_of_text_fields_are_written_by_insert(db, checked):
    for d in (db, checked):
        a = d.users.insert(id=1)
        assert a.name == "anon" and d.users.find(1).name == "anon"
        assert d.users.insert(id=2, name="").name == ""


def test_closed_database_raises_closed_error_on_text_records(mod):
    d = mod.open(None)
    u, p = d.users, d.posts
    x = u.insert(id=1)
    a = p.insert(id=1, body="b")
    u.posts.add(x, a)
    d.close()
    for call in (lambda: p.insert(id=2, body="x"), lambda: p.find(1), lambda: p.get(1),
                 lambda: p[1], lambda: 1 in p, lambda: p.at(a.ref), lambda: p.update(a, body="c"),
                 lambda: p.update_by(1, body="c"), lambda: list(u.posts(x)),
                 lambda: p.author(a), lambda: list(p)):
        with pytest.raises(pyapi.ClosedError):
            call()


# A text write that fails in C (P2_ENOMEM: a 256 MB text under an address-space limit 64
# MB above what the process uses), in a subprocess: through the C paths and the Python
# paths, the failed insert leaves no element and the failed updates leave the old fields
# and text, with the same error.
OOM = """
import json, resource, sys
sys.path.insert(0, sys.argv[1])
import p2t_ftext as m
from p2gen.runtime import pyapi

class _Without:
    def __init__(self, lib): self._lib = lib
    def __getattr__(self, name):
        if name == "p2py__fast_init": raise AttributeError(name)
        return getattr(self._lib, name)

def run(open_, big):
    db = open_(None)
    p = db.posts
    p.insert(id=1, body="keep")
    a = p.insert(id=2, body="old", at=1)
    out = {"c_paths": type(p.insert).__name__ == "builtin_function_or_method"}
    for name, call in (("insert", lambda: p.insert(id=3, body=big)),
                       ("update", lambda: p.update(a, body=big, at=2)),
                       ("update_by", lambda: p.update_by(2, body=big, at=3, tag="t"))):
        try:
            call()
            out[name] = "no error"
        except pyapi.P2Error as e:
            out[name] = [e.code, str(e)]
    out["rows"] = sorted(r._values for r in p)
    out["verify"] = db.verify()
    db.close()
    return out

big = b"x" * (256 << 20)
checked = pyapi.bind(m.ffi, _Without(m.lib), m.METADATA)
soft, hard = resource.getrlimit(resource.RLIMIT_AS)
used = int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize()
resource.setrlimit(resource.RLIMIT_AS, (used + (64 << 20), hard))
res = {"fast": run(m.open, big), "checked": run(checked.open, big)}
resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
print(json.dumps(res))
"""


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc (Linux)")
def test_failing_text_write_leaves_nothing_half_made(mod):
    out_dir = os.path.dirname(mod.__file__)
    p = subprocess.run([sys.executable, "-c", OOM, out_dir], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr[-4000:]
    res = json.loads(p.stdout.strip().splitlines()[-1])
    fast, checked = res["fast"], res["checked"]
    assert fast.pop("c_paths") is True and checked.pop("c_paths") is False
    assert fast == checked
    for op in ("insert", "update", "update_by"):
        assert fast[op][0] == pyapi.P2_ENOMEM, (op, fast[op])
    assert fast["rows"] == [[1, "keep", 0, ""], [2, "old", 1, ""]] and fast["verify"] == []


def _ops(rnd, n):
    return [(rnd.randrange(14), rnd.randrange(40), rnd.randrange(len(TEXTS) + len(ODD)),
             rnd.randrange(8)) for _ in range(n)]


def _run(d, ops):
    u, p = d.users, d.posts
    vals = TEXTS[:5] + ["x" * 300] + ODD     # (the 1.3 MB text once, below)
    out = []
    for i in range(4):
        u.insert(id=i, name=f"user {i}")
    cur = None
    for k, i, v, j in ops:
        val = vals[v % len(vals)]
        calls = {
            0: lambda: p.insert(id=i, body=val, at=j),
            1: lambda: p.update_by(i, body=val, tag="t"),
            2: lambda: p.update(p.find(i) or i, body=val, at=-j),
            3: lambda: p.delete_by(i),
            4: lambda: (p.find(i), p.find(id=i), p.get(i), i in p),
            5: lambda: p[i],
            6: lambda: u.posts.add(j % 4, p.find(i) or i),
            7: lambda: u.posts.remove(j % 4, p.find(i) or i),
            8: lambda: list(u.posts(j % 4)),
            9: lambda: p.author(p.find(i) or i),
            10: lambda: u.liked.add(j % 4, p.find(i) or i),
            11: lambda: list(p.fans(p.find(i) or i)),
            12: lambda: u.update_by(j % 4, name=val),
            13: lambda: (next(cur, None) if cur is not None and j else list(d.recent(t=j))),
        }
        if k == 13 and j == 0:
            cur = d.recent(t=-1)
        out.append(_outcome(calls[k]))
    out.append(_outcome(lambda: p.insert(id=999, body=LONG)))
    out.append(_outcome(lambda: sorted(r._values for r in p)))
    out.append(_outcome(lambda: sorted(r._values for r in u)))
    out.append(d.verify())
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_text_differential_against_the_python_paths(db, checked, seed):
    """The same random calls (good text values and odd ones) through the C paths and the
    Python paths give the same values, errors and database."""
    ops = _ops(random.Random(seed), 500)
    a, b = _run(db, ops), _run(checked, ops)
    for n, (x, y) in enumerate(zip(a, b)):
        assert x == y, f"op {n} ({ops[n] if n < len(ops) else 'end'})"
