"""The C paths of the Python binding (generator/pyfast.py): insert, find, update_by,
delete_by and the cursors' batches run in a small CPython module compiled into the
spec's extension. They must give what the Python paths give (the same Records, the same
exceptions), keep the database's lock and closed state, and a module without them (an
extension built before, PyPy) must keep working on the Python paths.
"""
import subprocess
import sys
import threading

import pytest
from conftest import python_module

from p2gen.runtime import pyapi

SPEC = """
record other { id: i32 = 0; }
record thing { id: u32 = 0; a: i8 = 0; b: u16 = 0; c: i64 = 0; d: u64 = 0; e: f32 = 0; f: f64 = 0; s: char[6] = ""; r: ref others = none; }
record noted { id: u32 = 0; t: text = ""; }
container others of other = top2ds_qualify[hash[array[transient]]] with hash(key = id, buckets = 16);
container things of thing = top2ds_qualify[hash[array[transient]]] with hash(key = id, buckets = 16);
container notes of noted = top2ds_qualify[hash[array[transient]]] with hash(key = id, buckets = 16);
record wide { id: u32 = 0; s: char[5000] = ""; }
container wides of wide = top2ds[array[transient]];
container bag of thing = top2ds[array[transient]];
record item { id: u32 = 0; qty: i32 = 0; }
container items of item = top2ds[iarray[transient]] with iarray(key = id, max_key = 1000);
cursor big on things where c > $min;
relationship owns one others.things to many things.owner = ilist;
record tagr { n: i32 = 0; }
container tags of tagr = top2ds[array[transient]];
relationship tagging many things.tags to many tags.tagged = refarray(capacity = 1);
relationship best one others.best to one things.best_of = refarray;
relationship chain one tags.up to many tags.down = ilist;
"""


@pytest.fixture(scope="module")
def mod(tmp_path_factory):
    return python_module(tmp_path_factory, "p2t_fast", SPEC)


@pytest.fixture
def db(mod):
    d = mod.open(None)
    yield d
    d.close()


ROW = dict(a=-5, b=65535, c=-(1 << 63), d=(1 << 64) - 2, e=1.5, f=-2.25, s="héé")


def slow(c, name):
    """The Python path a C path stands for."""
    return getattr(type(c), name).__get__(c)


def test_c_paths_are_installed(db, mod):
    fast = sys.modules["_p2t_fast_fast"]
    assert isinstance(db._lock, fast.Lock)
    t = db.things
    for name in ("insert", "at", "find", "update_by", "delete_by"):
        assert type(getattr(t, name)).__name__ == "builtin_function_or_method", name
    assert type(db.bag.insert).__name__ == "builtin_function_or_method"
    assert "find" not in vars(db.bag)                # no key: the Python find
    assert type(db.notes.insert).__name__ == "builtin_function_or_method"   # text: C too
    assert db.wides._fc is None                # larger than STACK_MAX: no C paths
    assert type(db.wides.insert).__name__ == "function"
    assert isinstance(iter(t), fast.Walk) and isinstance(iter(t), pyapi.Cursor)


def test_records_are_those_of_the_python_paths(db):
    t, o = db.things, db.others
    x = o.insert(id=-7)
    a = t.insert(id=1, r=x.ref, **ROW)
    b = slow(t, "insert")(id=2, r=x.ref, **ROW)
    assert type(a) is type(b) is t.record
    assert a._values[1:] == b._values[1:] and a._origin == b._origin == "things"
    assert a.s == "héé" and a.r == x.ref and a.d == (1 << 64) - 2 and a.e == 1.5
    f = t.find(1)
    assert f == slow(t, "find")(1) == a and f.ref == a.ref and f._origin == "things"
    assert hash(f) == hash(a) and repr(f) == repr(slow(t, "find")(1))
    n = t.insert(id=3)                                  # defaults: 0, "", no element
    assert n == slow(t, "at")(n.ref) and n.r is None and n.s == "" and n.e == 0.0
    u = t.update_by(1, s=b"ab", e=2, r=None)
    assert u == t.at(a.ref) and u.s == "ab" and u.e == 2.0 and u.r is None
    assert u.c == -(1 << 63)                            # fields not given are kept
    assert t.find(99) is None and t.update_by(99, a=1) is None
    assert t.delete_by(2) is True and t.delete_by(2) is False and t.find(2) is None
    rows = list(t)
    assert rows == [slow(t, "at")(r.ref) for r in rows]
    assert [r.ref for r in rows] == [r.ref for r in rows if t.at(r.ref)]
    bad = b"\xff\xfeok"                                 # undecodable bytes: escapes
    t.update_by(3, s=bad)
    assert t.find(3).s.encode("utf-8", "surrogateescape") == bad


def test_record_fields_are_read_by_c_descriptors(db, mod):
    t = db.things
    a = t.insert(id=1, **ROW)
    cls = type(a)
    assert type(cls.__dict__["c"]).__name__ == "Field" and cls.c is cls.__dict__["c"]
    assert cls.c.__doc__ == "field c: i64" and cls.r.__doc__ == "field r: ref others"
    assert [getattr(a, n) for n in cls._fields] == list(a._values)
    with pytest.raises(AttributeError, match="read-only"):
        a.c = 1
    with pytest.raises(TypeError):
        cls.c.__get__(object())
    api = pyapi.bind(mod.ffi, _Without(mod.lib), mod.METADATA)
    assert isinstance(api.records["thing"].__dict__["c"], property)   # no module: properties


def test_get_by_reference(db):
    t = db.things
    a = t.insert(id=1, **ROW)
    b = t.insert(id=2)
    assert t.at(a.ref) == slow(t, "at")(a.ref) == a and t.at(a.ref).ref == a.ref
    assert t[2] == b and t.at(b) == b and 1 in t and 2 in t     # [] and in: by key
    t.delete_by(2)
    for bad, exc in ((b.ref, pyapi.NotFoundError), (b, pyapi.NotFoundError),
                     (-1, pyapi.NotFoundError), ((1 << 64) - 1, pyapi.NotFoundError),
                     (1 << 64, pyapi.NotFoundError), ("0", TypeError), (1.0, TypeError)):
        with pytest.raises(exc):
            t.at(bad)
    assert 2 not in t
    t.update_by(1, id=9)                                 # the Record's key is stale now
    with pytest.raises(pyapi.NotFoundError, match="stale"):
        t.at(a)
    assert t.at(a.ref).id == 9


@pytest.mark.parametrize("call, exc", [
    (lambda t: t.insert(id=-1), pyapi.RangeError),
    (lambda t: t.insert(id=1 << 32), pyapi.RangeError),
    (lambda t: t.insert(id=1, a=128), pyapi.RangeError),
    (lambda t: t.insert(id=1, a=1.0), TypeError),
    (lambda t: t.insert(id=1, s="toolong"), pyapi.RangeError),
    (lambda t: t.insert(id=1, s="a\0b"), pyapi.RangeError),
    (lambda t: t.insert(id=1, s=5), TypeError),
    (lambda t: t.insert(id=1, f="x"), TypeError),
    (lambda t: t.insert(id=1, r=-1), pyapi.RangeError),
    (lambda t: t.insert(id=1, r=12345), pyapi.NotFoundError),
    (lambda t: t.insert(id=1, nope=1), TypeError),
    (lambda t: t.insert(id=1, s="\udc80\ud800"), pyapi.RangeError),
    (lambda t: t.find("1"), TypeError),
    (lambda t: t.find(-1), pyapi.RangeError),
    (lambda t: t.find(1 << 40), pyapi.RangeError),
    (lambda t: t.find(1.0), TypeError),
    (lambda t: t.update_by(-1, a=1), pyapi.RangeError),
    (lambda t: t.update_by(7, a=1000), pyapi.RangeError),
    (lambda t: t.update_by(7, nope=1), TypeError),
    (lambda t: t.update_by(7, s=b"\0"), pyapi.RangeError),
    (lambda t: t.delete_by("7"), TypeError),
    (lambda t: t.delete_by(1 << 64), pyapi.RangeError),
])
def test_wrong_values_raise_what_the_python_paths_raise(db, call, exc):
    t = db.things
    t.insert(id=7, c=3)
    before = list(t)
    with pytest.raises(exc):
        call(t)
    assert list(t) == before                       # nothing changed


def test_unusual_arguments_take_the_python_paths(db):
    t = db.things
    x = db.others.insert(id=1)
    a = t.insert({"id": 5, "a": 1}, b=2)           # a mapping: the Python insert
    assert (a.id, a.a, a.b) == (5, 1, 2)
    assert t.insert(id=6, a=True).a == 1           # bool counts as int there
    assert t.insert(id=8, r=x).r == x.ref          # a Record for a ref field
    assert t.find(True) is None and t.find(id=5) == a
    assert t.update_by(5, r=x).r == x.ref
    with pytest.raises(TypeError):
        t.find(5, id=5)
    with pytest.raises(TypeError):
        t.delete_by()


def test_errors_of_the_c_library_are_raised_with_its_message(db):
    items = db.items
    assert type(items.insert).__name__ == "builtin_function_or_method"
    a = items.insert(id=4, qty=1)
    with pytest.raises(pyapi.DuplicateError) as ei:
        items.insert(id=4, qty=2)
    assert ei.value.code == pyapi.P2_EDUP
    assert items.find(4) == a and len(items) == 1


def test_closed_database_raises_closed_error(mod):
    d = mod.open(None)
    t = d.things
    t.insert(id=1)
    ops = [t.find, t.insert, t.update_by, t.delete_by]
    it = iter(t)
    d.close()
    for call in (lambda: ops[0](1), lambda: ops[1](id=2), lambda: ops[2](1, a=1),
                 lambda: ops[3](1), lambda: next(it), lambda: list(t)):
        with pytest.raises(pyapi.ClosedError):
            call()
    d.close()


def test_versions_are_bumped(db):
    t = db.things
    for i in range(100):
        t.insert(id=i)
    for change in (lambda: t.insert(id=1000), lambda: t.update_by(5, a=1),
                   lambda: t.delete_by(6)):
        it = iter(t)
        next(it)
        v, links = t._version, t._links
        change()
        assert (t._version, t._links) == (v + 1, links + 1)
        with pytest.raises(RuntimeError, match="changed during iteration"):
            next(it)
    assert t.update_by(99999, a=1) is None and t.delete_by(99999) is False
    v = t._version
    t.find(5)
    assert t._version == v                       # reads and misses change nothing


def test_cursor_walk_in_c_keeps_updates_and_deletes(db):
    t = db.things
    for i in range(300):
        t.insert(id=i, c=i)
    seen = []
    cur = db.big(min=-1)
    for r in cur:
        seen.append(r.id)
        assert cur.current is r
        if r.id % 3 == 0:
            cur.delete()
        elif r.id % 3 == 1:
            assert cur.update(c=-r.c).c == -r.c
    assert sorted(seen) == list(range(300))
    assert sorted(r.id for r in t) == [i for i in range(300) if i % 3]
    assert len(list(db.big(min=-1))) == 100
    with db.big(min=0) as cur:
        next(cur)
    with pytest.raises(StopIteration):
        next(cur)


def test_lock_behaves_as_an_rlock(db):
    lock = db._lock
    assert lock.acquire() and lock.acquire(blocking=False) and lock._is_owned()
    lock.release()
    lock.release()
    assert not lock._is_owned()
    with pytest.raises(RuntimeError):
        lock.release()
    with lock:
        with lock:
            assert db.things.insert(id=1).id == 1       # reentrant, through the C path
        got = []
        th = threading.Thread(target=lambda: got.append(lock.acquire(blocking=False)))
        th.start()
        th.join()
        assert got == [False]
        got.clear()
        th = threading.Thread(target=lambda: got.append(lock.acquire(timeout=0.01)))
        th.start()
        th.join()
        assert got == [False]
    with pytest.raises(ValueError):
        lock.acquire(False, 1)


def test_c_paths_wait_for_another_thread_holding_the_lock(db):
    t = db.things
    t.insert(id=1)
    done = []
    db._lock.acquire()
    th = threading.Thread(target=lambda: done.append((t.find(1), t.update_by(1, a=2))))
    th.start()
    th.join(0.2)
    assert not done            # it waits while this thread holds the lock
    db._lock.release()
    th.join()
    assert done[0][1].a == 2


def test_threads(mod):
    with mod.open(None) as d:
        t = d.things
        errors = []

        def work(base):
            try:
                for i in range(base, base + 300):
                    t.insert(id=i, c=i)
                    assert t.find(i).c == i
                    assert t.update_by(i, c=-i).c == -i
                    if i % 2:
                        assert t.delete_by(i)
                    if i % 50 == 0:
                        slow(t, "update")(t.find(i), a=1)      # the Python path between
            except Exception as e:   # noqa: BLE001 - reported below
                errors.append(e)

        ths = [threading.Thread(target=work, args=(k * 1000,)) for k in range(4)]
        for th in ths:
            th.start()
        for th in ths:
            th.join()
        assert errors == []
        assert sorted(r.id for r in t) == sorted(k * 1000 + i for k in range(4)
                                                 for i in range(0, 300, 2))
        assert all(r.c == -r.id for r in t)
        assert d.verify() == []


class _Without:
    """A lib without the fast module's init: an extension built before it."""

    def __init__(self, lib):
        self._lib = lib

    def __getattr__(self, name):
        if name == "p2py__fast_init":
            raise AttributeError(name)
        return getattr(self._lib, name)


def test_a_module_without_the_c_paths_works(mod):
    api = pyapi.bind(mod.ffi, _Without(mod.lib), mod.METADATA)
    with api.open(None) as d:
        assert not hasattr(d._lock, "_detach")          # a threading.RLock
        t = d.things
        assert type(t.find).__name__ == "function"
        a = t.insert(id=1, **ROW)
        assert t.find(1) == a and t.update_by(1, a=3).a == 3 and t.delete_by(1)
        for i in range(100):
            t.insert(id=i)
        assert sorted(r.id for r in t) == list(range(100))
        assert type(iter(t)) is pyapi.Cursor
    with pytest.raises(pyapi.ClosedError):
        t.find(1)


def test_relationship_walks_in_c(db):
    o, t = db.others, db.things
    x = o.insert(id=1)
    for i in range(150):
        o.things.add(x, t.insert(id=i, c=i))
    w = o.things(x)
    fast = sys.modules["_p2t_fast_fast"]
    assert isinstance(w, fast.Walk) and isinstance(w, pyapi.Links)
    assert [r.id for r in w] == list(range(150))
    assert list(o.things.refs(x)) == [t.find(i).ref for i in range(150)]
    w = o.things(x)
    next(w)
    t.update_by(5, a=1)                          # a change of either end: the walk stops
    with pytest.raises(RuntimeError, match="changed while walking"):
        next(w)
    w = o.things(x)
    assert next(w).id == 0
    o.things.remove(x, t.find(100))
    with pytest.raises(RuntimeError):
        next(w)
    w = o.things(x)
    next(w)
    db.close()
    with pytest.raises(pyapi.ClosedError):
        next(w)


def test_a_fast_module_of_another_version_is_not_used(mod, monkeypatch):
    monkeypatch.setattr(pyapi.spec, "FAST_API", pyapi.FAST_API + 1)   # where bind reads it
    api = pyapi.bind(mod.ffi, mod.lib, mod.METADATA)
    assert api.fast is None and api.Cursor is pyapi.Cursor
    with api.open(None) as d:
        assert d.things.insert(id=1).id == 1 and d.things.find(1).id == 1
        assert type(d.things.find).__name__ == "function"


class _Other:
    """A lib whose init leaves another extension's module in sys.modules (a spec's prefix
    built twice and loaded in one process)."""

    def __init__(self, lib):
        self._lib = lib

    def __getattr__(self, name):
        return getattr(self._lib, name)

    def p2py__fast_init(self):
        import types
        rc = self._lib.p2py__fast_init()
        sys.modules["_p2t_fast_fast"] = types.SimpleNamespace(API=pyapi.FAST_API, ID=1)
        return rc


def test_another_extensions_fast_module_is_not_used(mod):
    api = pyapi.bind(mod.ffi, _Other(mod.lib), mod.METADATA)
    assert api.fast is None
    with api.open(None) as d:
        assert d.things.insert(id=1).id == 1 and d.things.find(1).id == 1
    mod.lib.p2py__fast_init()            # the module back, for the tests after


def test_records_from_both_bindings_agree(mod):
    api = pyapi.bind(mod.ffi, _Without(mod.lib), mod.METADATA)
    with api.open(None) as plain, mod.open(None) as fast:
        for d in (plain, fast):
            x = d.others.insert(id=3)
            for i in range(70):
                d.things.insert(id=i, r=x.ref if i % 2 else None, **ROW)
        assert [r._values for r in plain.things] == [r._values for r in fast.things]
        assert [r.ref for r in plain.things] == [r.ref for r in fast.things]
        for d in (plain, fast):
            x = d.others.find(3)
            for i in range(0, 70, 3):
                d.others.things.add(x, d.things.find(i))
        assert [r._values for r in plain.others.things(plain.others.find(3))] == \
            [r._values for r in fast.others.things(fast.others.find(3))]


def test_lock_excludes_threads_that_wait(db):
    """Threads that find the lock taken sleep and are woken by its release; each holder
    has it alone across points where the GIL is let go."""
    import time
    lock, box, inside = db._lock, [0], []

    def work():
        for _ in range(200):
            with lock:
                inside.append(1)
                assert len(inside) == 1
                x = box[0]
                time.sleep(0)            # lets the GIL go: others run and must wait
                box[0] = x + 1
                inside.pop()

    ths = [threading.Thread(target=work) for _ in range(4)]
    for th in ths:
        th.start()
    for th in ths:
        th.join()
    assert box[0] == 800 and not lock._is_owned() and lock.acquire(blocking=False)
    lock.release()


def test_the_extension_compiles_with_warnings_as_errors(mod):
    """The fast module's C (and the rest of the extension's) under -Wall -Wextra -Werror."""
    import os
    import shutil
    import subprocess
    import sysconfig
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    out = os.path.dirname(mod.__file__)
    src = os.path.join(out, "_p2t_fast_cffi.c")
    r = subprocess.run([cc, "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-fsyntax-only",
                        "-D_CFFI_NO_LIMITED_API", "-I", out,
                        "-I", sysconfig.get_paths()["include"], src],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "p2py__fast_init" in open(src).read()


# ---------------------------------------------------------------------------------------
# Roles: their calls and walks in C (a role of two containers without text fields)
# ---------------------------------------------------------------------------------------
def test_roles_take_the_c_paths_where_they_can(db, mod):
    fast = sys.modules["_p2t_fast_fast"]
    o, t, g = db.others, db.things, db.tags
    for role in (o.things, t.tags, g.tagged, g.up):
        assert isinstance(role, fast.ManyRole) and isinstance(role, pyapi.ManyRole)
    for role in (t.owner, o.best, t.best_of, g.down):
        assert isinstance(role, fast.OneRole) and isinstance(role, pyapi.OneRole)
    # roles are plain attributes of their container (no __getattr__ per use)
    assert vars(o)["things"] is o.role("things") and vars(g)["up"] is g.role("up")
    x = o.insert(id=1)
    a = t.insert(id=1)
    o.things.add(x, a)
    w = o.things(x)
    assert isinstance(w, fast.RoleWalk) and isinstance(w, pyapi.Links)
    assert "_it" not in vars(w)                  # made in C: no Python iterator state
    assert w._owner == x.ref and w._role is o.things and w._records is True
    assert repr(w) == f"<walk of others.things of {x.ref}>"
    assert list(w) == [a] and list(o.things.refs(x)) == [a.ref]
    # a walk's change check and its end hold as in the Python walk
    w = o.things.refs(x)
    assert next(w) == a.ref
    with pytest.raises(StopIteration):
        next(w)
    with pytest.raises(StopIteration):
        next(w)


def _outcome(call):
    """What a call gives: its value (Records as their values and reference), or its
    exception's type and message."""
    try:
        v = call()
        if isinstance(v, pyapi.Links):
            v = list(v)
    except (pyapi.P2Error, TypeError, ValueError, RuntimeError, KeyError) as e:
        return ("raised", type(e).__name__, str(e))

    def plain(x):
        if isinstance(x, pyapi.Record):
            return ("record", x._values, x.ref, x._origin)
        if isinstance(x, list):
            return [plain(y) for y in x]
        return x
    return plain(v)


def _role_ops(rnd, n):
    """n random calls on roles, containers and walks, as (name, function of the
    database's state) pairs; values that are wrong on purpose among them."""
    ops = []
    for _ in range(n):
        k = rnd.randrange(16)
        i, j = rnd.randrange(12), rnd.randrange(12)
        ops.append((k, i, j, rnd.random()))
    return ops


def _run_role_ops(d, ops):
    """Apply ops to database d; the outcome of each."""
    o, t, g = d.others, d.things, d.tags
    xs = [o.insert(id=i) for i in range(6)]
    ts = [t.insert(id=i, c=i) for i in range(12)]
    gs = [g.insert(n=i) for i in range(8)]
    out = []

    def pick(seq, i, u):
        """an element: a Record, its int reference, a reference with no element, a stale
        Record, a bool, a Record of another container or None"""
        r = seq[i % len(seq)]
        if u < 0.45:
            return r
        if u < 0.75:
            return r.ref
        if u < 0.8:
            return 10_000 + i
        if u < 0.85:
            return -1 if i % 2 else (1 << 64) - 1
        if u < 0.9:
            return True
        if u < 0.95:
            return gs[i % len(gs)] if seq is not gs else xs[0]
        return None

    for k, i, j, u in ops:
        if k == 0:
            call = lambda: o.things.add(pick(xs, i, u), pick(ts, j, u))
        elif k == 1:
            call = lambda: o.things.remove(pick(xs, i, u), pick(ts, j, u))
        elif k == 2:
            call = lambda: o.things(pick(xs, i, u))
        elif k == 3:
            call = lambda: o.things.refs(pick(xs, i, u))
        elif k == 4:
            call = lambda: o.things.count(pick(xs, i, u))
        elif k == 5:
            call = lambda: t.owner(pick(ts, i, u))
        elif k == 6:
            call = lambda: t.owner.ref(pick(ts, i, u))
        elif k == 7:
            call = lambda: t.owner.set(pick(ts, i, u), pick(xs, j, u) if u < 0.9 else None)
        elif k == 8:
            call = lambda: t.tags.add(pick(ts, i, u), pick(gs, j, u))
        elif k == 9:
            call = lambda: g.tagged(pick(gs, i, u))
        elif k == 10:
            call = lambda: o.best.set(pick(xs, i, u), pick(ts, j, u))
        elif k == 11:
            call = lambda: t.best_of.get(pick(ts, i, u))
        elif k == 12:
            call = lambda: g.up.add(pick(gs, i, u), pick(gs, j, u))
        elif k == 13:
            call = lambda: g.down(pick(gs, i, u))
        elif k == 14:                 # update(record) and delete(record): stale ones too
            def call():
                r = t.update(pick(ts, i, u), c=int(u * 1000), a=i - 6)
                ts[i % len(ts)] = r
                return r
        else:
            def call():
                t.delete(pick(ts, i, u))
                ts[i % len(ts)] = t.insert(id=100 + i, c=j)   # stale where it was kept
                return ts[i % len(ts)]
        out.append((k, _outcome(call)))
    out.append(("walks", [_outcome(lambda x=x: o.things(x)) for x in xs],
                [_outcome(lambda x=x: g.tagged(x)) for x in gs]))
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_roles_differential_against_the_python_paths(mod, seed):
    """The same random calls on roles (good values and wrong ones) through the C paths
    and through the Python paths (a binding without the fast module) give the same values,
    the same exceptions with the same messages, and the same database."""
    import random
    ops = _role_ops(random.Random(seed), 400)
    api = pyapi.bind(mod.ffi, _Without(mod.lib), mod.METADATA)
    with api.open(None) as plain, mod.open(None) as fast:
        assert api.fast is None and type(fast._lock).__name__ == "Lock"
        a, b = _run_role_ops(plain, ops), _run_role_ops(fast, ops)
        for n, (x, y) in enumerate(zip(a, b)):
            assert x == y, f"op {n} ({ops[n] if n < len(ops) else 'walks'})"
        assert [r._values for r in plain.things] == [r._values for r in fast.things]


def test_role_calls_on_a_closed_database_raise_closed_error(mod):
    d = mod.open(None)
    o, t = d.others, d.things
    x, a = o.insert(id=1), t.insert(id=1)
    o.things.add(x, a)
    w = o.things(x)
    d.close()
    for call in (lambda: o.things(x), lambda: o.things.refs(x), lambda: o.things.count(x),
                 lambda: o.things.add(x, a), lambda: o.things.remove(x, a),
                 lambda: t.owner(a), lambda: t.owner.ref(a), lambda: t.owner.set(a, None),
                 lambda: next(w), lambda: t.update(a, c=1), lambda: t.delete(a)):
        with pytest.raises(pyapi.ClosedError):
            call()


def test_role_walks_fetch_in_batches_and_see_changes(db):
    o, t = db.others, db.things
    x = o.insert(id=1)
    for i in range(200):                          # more than one batch
        o.things.add(x, t.insert(id=i, c=i))
    assert [r.c for r in o.things(x)] == list(range(200))
    assert o.things.count(x) == 200
    w = o.things(x)
    for _ in range(70):                           # into the second batch
        next(w)
    o.things.remove(x, t.find(3))                 # a role's change: the walk stops
    with pytest.raises(RuntimeError, match="changed while walking"):
        next(w)
    w = o.things.refs(x)
    next(w)
    t.owner.set(t.find(150), None)                # from the other end too
    with pytest.raises(RuntimeError, match="changed while walking"):
        next(w)
    v = (o._links, t._links)
    list(o.things(x))
    o.things.count(x)
    t.owner.ref(t.find(7))
    assert (o._links, t._links) == v               # reads change nothing


def test_role_calls_wait_for_another_thread_holding_the_lock(db):
    o, t = db.others, db.things
    x, a = o.insert(id=1), t.insert(id=1)
    got = []
    db._lock.acquire()
    th = threading.Thread(target=lambda: (o.things.add(x, a),
                                          got.append(list(o.things.refs(x)))))
    th.start()
    th.join(0.2)
    assert th.is_alive() and not got              # waiting on the Python way
    db._lock.release()
    th.join()
    assert got == [[a.ref]]


def test_change_counters_are_shared_by_the_c_and_python_paths(db):
    """The counters are C fields of the container's C paths: a change through the Python
    paths (insert from a mapping) stops a walk made in C, and a role's change made in C
    is seen by the Python attributes."""
    o, t = db.others, db.things
    assert t._counters() is t._fc and isinstance(db.wides._counters(), dict)
    for i in range(10):
        t.insert(id=i)
    it = iter(t)
    next(it)
    v = t._version
    t.insert({"id": 100})                         # the Python path (a mapping)
    assert t._version == v + 1 and t._fc.version == v + 1
    with pytest.raises(RuntimeError, match="changed during iteration"):
        next(it)
    x = o.insert(id=1)
    w = o.things(x)
    links = (o._links, t._links)
    o.things.add(x, t.find(3))                    # in C
    assert (o._links, t._links) == (links[0] + 1, links[1] + 1)
    with pytest.raises(RuntimeError, match="changed while walking"):
        next(w)
    n = db.wides                                  # no C paths: the counters in its dict
    v = n._version
    n.insert(id=1, s="a")
    assert n._version == vars(n)["_version"] == v + 1


def test_role_threads(mod):
    """Threads adding, walking and removing partners of their own owners at once: every
    call holds the lock; each thread's walks (made holding the lock: another thread's
    change of the containers would stop them) see its own partners."""
    with mod.open(None) as d:
        o, t = d.others, d.things
        errors = []

        def work(k):
            try:
                x = o.insert(id=k)
                mine = [t.insert(id=k * 1000 + i) for i in range(100)]
                for i, a in enumerate(mine):
                    o.things.add(x, a)
                    assert t.owner.ref(a) == x.ref
                    if i % 10 == 9:
                        with d._lock:     # no other thread's change during the walk
                            got = list(o.things.refs(x))
                        assert got == [b.ref for b in mine[:i + 1]]
                for a in mine[::2]:
                    o.things.remove(x, a)
                with d._lock:
                    assert [r.id for r in o.things(x)] == [a.id for a in mine[1::2]]
            except Exception as e:   # noqa: BLE001 - reported below
                errors.append(e)

        ths = [threading.Thread(target=work, args=(k,)) for k in range(1, 5)]
        for th in ths:
            th.start()
        for th in ths:
            th.join()
        assert errors == []
        assert sum(o.things.count(x) for x in o) == 200
        assert d.verify() == []


def test_fast_path_c_compiles_by_itself(tmp_path, cc):
    """templates/pyfast.c, the binding's spec-independent C, compiles on its own under
    -Wall -Wextra -Werror: with no spec's tables at its fence (what fast_c gives a spec
    without containers), after only Python.h and the runtime's header."""
    import sysconfig
    import types
    from p2gen.pyfast import FENCE, fast_c, fast_c_parts
    from p2gen.toolchain import RUNTIME_DIR
    before, after = fast_c_parts()
    assert before and after and FENCE not in before + after
    text = fast_c(types.SimpleNamespace(prefix="t", containers=[], relationships=[], files=[]))
    src = tmp_path / "fast_alone.c"
    src.write_text('#define PY_SSIZE_T_CLEAN\n#include <Python.h>\n#include "p2_runtime.h"\n'
                   + text)
    proc = subprocess.run([cc, "-std=c11", "-O1", "-Wall", "-Wextra", "-Werror", "-fPIC",
                           "-I", sysconfig.get_paths()["include"], "-I", RUNTIME_DIR,
                           "-c", str(src), "-o", str(tmp_path / "fast_alone.o")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
