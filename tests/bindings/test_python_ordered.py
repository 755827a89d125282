"""Ordered roles and the feed from Python (runtime/pyapi.py ManyRole, the C paths of
templates/pyfast.c): `users.posts(u)` walks newest first, `reverse=True`, `lo=` / `hi=`
bounds, `users.posts.feed(owners, k)` merges several users' posts; each checked against a
sorted-list model under inserts, moves, deletes and updates of the ordering field, on the
C paths (a walk made in C holds no Python iterator) and against the Python paths.
Tie rule (as in C): equal times in the order posts joined their author's role."""
from __future__ import annotations

import random
import sys

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import python_module
from p2gen.runtime import pyapi

SPEC = """
record user { id: u32; name: char[12] = ""; }
record post { id: u32; time: i64; body: text; }
container users of user = top2ds_qualify[hash[array[transient]]] with hash(key = id, unique = true);
container posts of post = top2ds_qualify[hash[array[transient]]] with hash(key = id, unique = true);
relationship wrote one users.posts order by time desc to many posts.author = ilist;
relationship follows many users.followees to many users.followers = refarray;
cursor since on posts where time >= $t;
"""


@pytest.fixture(scope="module")
def mod(tmp_path_factory):
    return python_module(tmp_path_factory, "p2t_ordered", SPEC)


@pytest.fixture
def db(mod):
    d = mod.open(None)
    yield d
    d.close()


def slow(c, name):
    """The Python path a C path stands for."""
    return getattr(type(c), name).__get__(c)


class Model:
    def __init__(self):
        self.posts = {}     # id -> [time, author id or None, seq]
        self.clock = 0

    def join(self, pid, uid):
        self.clock += 1
        self.posts[pid][1:] = [uid, self.clock]

    def walk(self, uid, reverse=False, lo=None, hi=None):
        rows = sorted(((-t, s, pid) for pid, (t, a, s) in self.posts.items() if a == uid
                       and (lo is None or t >= lo) and (hi is None or t <= hi)))
        out = [pid for _, _, pid in rows]
        return out[::-1] if reverse else out

    def feed(self, uids, k=None, reverse=False, lo=None, hi=None):
        rows = sorted((-self.posts[pid][0], i, j, pid) for i, u in enumerate(uids)
                      for j, pid in enumerate(self.walk(u, False, lo, hi)))
        out = [r[3] for r in rows]
        out = out[::-1] if reverse else out
        return out if k is None else out[:k]


def ids(rows):
    return [r.id for r in rows]


def test_walks_feed_and_updates(db, mod):
    fast = sys.modules["_p2t_ordered_fast"]
    u = [db.users.insert(id=i) for i in range(3)]
    m = Model()
    for pid, (uid, t) in enumerate([(0, 5), (0, 9), (1, 5), (0, 5), (2, 7), (1, 1), (0, 2),
                                    (2, 9), (1, 9)]):
        p = db.posts.insert(id=pid, time=t, body=f"post {pid}")
        db.posts.author.set(p, u[uid])
        m.posts[pid] = [t, None, 0]
        m.join(pid, uid)
    assert db.users.posts.order == ("time", True)
    assert db.users.followees.order is None
    for kw in ({}, {"reverse": True}, {"lo": 5}, {"hi": 5}, {"lo": 2, "hi": 7, "reverse": True},
               {"lo": 6, "hi": 6}):
        w = db.users.posts(u[0], **kw)
        assert isinstance(w, fast.RoleWalk) and "_it" not in vars(w), kw   # the C paths
        assert ids(w) == m.walk(0, **kw), kw
        assert list(db.users.posts.refs(u[0], **kw)) == [db.posts.find(i).ref for i in m.walk(0, **kw)]
        assert ids(slow(db.users.posts, "__call__")(u[0], **kw)) == m.walk(0, **kw)
    assert [r.body for r in db.users.posts(u[0])] == [f"post {i}" for i in m.walk(0)]
    for kw in ({}, {"k": 4}, {"k": 0}, {"reverse": True, "k": 3}, {"lo": 5, "hi": 9}):
        got = db.users.posts.feed(u, **kw)
        assert ids(got) == m.feed([0, 1, 2], **kw), kw
        assert got == slow(db.users.posts, "feed")(u, **kw)
        assert [r.body for r in got] == [f"post {i}" for i in ids(got)]
    assert ids(db.users.posts.feed([u[2].ref, u[0]], 3)) == m.feed([2, 0], 3)
    assert db.users.posts.feed([], 5) == []
    # updates of time move the post; other updates leave it
    db.posts.update(db.posts.find(3), time=10)
    m.posts[3][0] = 10
    m.join(3, 0)
    db.posts.update(db.posts.find(0), body="edited")
    assert ids(db.users.posts(u[0])) == m.walk(0) and m.walk(0)[0] == 3
    del db.posts[1]
    del m.posts[1]
    assert ids(db.users.posts(u[0], reverse=True)) == m.walk(0, reverse=True)
    # what an unordered role or a wrong bound says
    with pytest.raises(TypeError, match="ordered role"):
        db.users.followees(u[0], reverse=True)
    with pytest.raises(TypeError, match="ordered role"):
        db.users.followees.feed(u, 3)
    with pytest.raises(TypeError):
        list(db.users.posts(u[0], lo="x"))
    with pytest.raises(TypeError):
        db.users.posts(u[0], newest=True)
    with pytest.raises(ValueError):
        db.users.posts.feed(u, -1)
    with pytest.raises(pyapi.NotFoundError):
        db.users.posts.feed([12345], 3)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1))
def test_random_against_the_model(mod, seed):
    rnd = random.Random(seed)
    m = Model()
    with mod.open(None) as db:
        us = [db.users.insert(id=i) for i in range(4)]
        for step in range(60):
            k = rnd.randrange(6)
            pid = rnd.randrange(25)
            if k == 0 and pid not in m.posts:
                t = rnd.randrange(6)
                p = db.posts.insert(id=pid, time=t, body="")
                m.posts[pid] = [t, None, 0]
                if rnd.random() < 0.8:
                    uid = rnd.randrange(4)
                    db.posts.author.set(p, us[uid])
                    m.join(pid, uid)
            elif k == 1 and pid in m.posts:
                t = rnd.randrange(6)
                db.posts.update(db.posts.find(pid), time=t)
                if m.posts[pid][0] != t:
                    m.posts[pid][0] = t
                    if m.posts[pid][1] is not None:
                        m.join(pid, m.posts[pid][1])
            elif k == 2 and pid in m.posts:
                uid = rnd.randrange(4)
                db.posts.author.set(db.posts.find(pid), us[uid])
                if m.posts[pid][1] != uid:
                    m.join(pid, uid)
            elif k == 3 and pid in m.posts:
                del db.posts[pid]
                del m.posts[pid]
            elif k == 4:
                uid = rnd.randrange(4)
                lo = rnd.choice([None, rnd.randrange(6)])
                hi = rnd.choice([None, rnd.randrange(6)])
                rev = rnd.random() < 0.5
                assert ids(db.users.posts(us[uid], reverse=rev, lo=lo, hi=hi)) == \
                    m.walk(uid, rev, lo, hi)
            else:
                owners = rnd.sample(range(4), rnd.randrange(5))
                kk = rnd.choice([None, rnd.randrange(8)])
                rev = rnd.random() < 0.3
                lo = rnd.choice([None, rnd.randrange(6)])
                assert ids(db.users.posts.feed([us[i] for i in owners], kk, reverse=rev, lo=lo)) \
                    == m.feed(owners, kk, rev, lo)
        for uid in range(4):
            assert ids(db.users.posts(us[uid])) == m.walk(uid)


def test_an_update_through_a_cursor_moves_the_post(db):
    """The third way to change time (beside update and the setter): a cursor's update."""
    u = db.users.insert(id=1)
    for pid, t in enumerate([3, 8, 5]):
        db.posts.author.set(db.posts.insert(id=pid, time=t, body=""), u)
    assert ids(db.users.posts(u)) == [1, 2, 0]
    with db.since(t=5) as c:
        for p in c:
            if p.id == 1:
                c.update(time=1)
    assert ids(db.users.posts(u)) == [2, 0, 1]
    assert ids(db.users.posts(u, reverse=True, hi=4)) == [1, 0]


def test_stubs_type_ordered_walks_and_the_feed(tmp_path):
    """The wheel's stubs (`__init__.pyi`) of an ordered role: reverse=, lo=, hi= and feed
    type-check under mypy --strict, a bound of the wrong type does not."""
    from pathlib import Path
    from mypy import api as mypy
    from p2gen.build import load
    from p2gen.package import RUNTIME_SUPPORT, stubs
    from p2gen.pybind import binding_metadata
    root = Path(__file__).resolve().parents[2]
    checked = load(str(root / "bench" / "python" / "social_py.p2"))
    pkg = tmp_path / checked.prefix
    (pkg / "_runtime" / "pyapi").mkdir(parents=True)   # the package's parts
    (pkg / "__init__.pyi").write_text(stubs(binding_metadata(checked), False))
    (pkg / "_runtime" / "__init__.py").write_text("")
    for n in RUNTIME_SUPPORT:
        (pkg / "_runtime" / n).write_bytes((root / "runtime" / n).read_bytes())
    use = ("import social_py\n\n\ndef use(db: social_py.Database) -> list[int]:\n"
           "    u = db.users.insert(id=1)\n"
           "    a = [p.time for p in db.users.posts(u, reverse=True, lo=5)]\n"
           "    b = [p.id for p in db.users.posts.feed([u, 2], 10, hi=7)]\n"
           "    c = list(db.users.posts.refs(u, lo=None, hi=3))\n"
           "    return a + b + c\n")
    (tmp_path / "use.py").write_text(use)
    cache = ["--cache-dir", str(tmp_path / "cache"), "--follow-imports=silent"]
    out, err, status = mypy.run(["--strict", *cache, str(tmp_path / "use.py"),
                                 str(pkg / "__init__.pyi")])
    assert status == 0, out + err
    (tmp_path / "bad.py").write_text(use + "\n\ndef bad(db: social_py.Database) -> None:\n"
                                     "    db.users.posts(1, lo='x')\n")
    out, err, status = mypy.run([*cache, str(tmp_path / "bad.py")])
    assert status == 1 and f"{tmp_path / 'bad.py'}:13: error:" in out and '"lo"' in out, out
