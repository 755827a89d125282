"""The Python API (generator/pybind.py, runtime/pyapi.py) over `text` fields, `ref` fields
and relationships.

LINKS below has text fields (two in one record), ref fields, and relationships of both
layers and every multiplicity: ilist 1:N (declared both ways round, one of them a
self-relationship with a role named like a Python keyword), refarray 1:N, M:N (a bag) and
1:1, and a role whose name a Container attribute takes (`keys`). It is built twice, over
transient memory and in one persistent file (reopened through close/open inside the
tests); type_equations/oo7/hash_ilist_transient.p2 is built too and navigated. The three
builds run concurrently in subprocesses. Prefixes start with `p2tl_` (the OO7 one is the
spec's own) so that they cannot clash with other test modules' imports.
"""
from __future__ import annotations

import gc
import importlib
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from p2gen.runtime import pyapi
from p2gen.build import generate
from p2gen.pybind import cdef

ROOT = Path(__file__).resolve().parents[2]
OO7 = ROOT / "type_equations" / "oo7" / "hash_ilist_transient.p2"
CC = shutil.which("cc") or shutil.which("gcc")
pytestmark = pytest.mark.skipif(CC is None, reason="no C compiler")

LINKS = """
record doc    { id: i32 = 0; title: char[8] = ""; body: text = ""; note: text = ""; owner: ref people = none; n: i32 = 0; }
record person { id: i32 = 0; name: char[12] = ""; bio: text = ""; }
record tag    { n: i32 = 0; }

container docs   of doc    = top2ds_qualify[hash[array[MEM]]] with hash(key = id)FILE;
container people of person = top2ds_qualify[hash[array[MEM]]] with hash(key = id)FILE;
container tags   of tag    = top2ds[array[MEM]]FILE2;

cursor docs_from on docs where n >= $lo;
cursor docs_of on docs where owner == $o;

relationship authorship one people.docs to many docs.author = ilist;          // 1:N ilist
relationship editing many docs.editor to one people.edits = ilist;            // N:1, ilist
relationship tagging many docs.tags to many tags.tagged = refarray(capacity = 1);  // M:N bag
relationship best one people.best to one docs.best_of = refarray;             // 1:1
relationship mentoring one people.mentees to many people.mentor = refarray;   // 1:N, self
relationship chain one tags.from to many tags.keys = ilist;                   // self, odd names
"""
NOREF = (1 << 64) - 1


def _spec_text(mem: str) -> str:
    if mem == "transient":
        return LINKS.replace("MEM", "transient").replace("FILE2", "").replace("FILE", "")
    return (LINKS.replace("MEM", "persistent")
            .replace("FILE2", ' with persistent(file = "links.db")')
            .replace("FILE", ', persistent(file = "links.db")'))


BUILD = """
import sys
from p2gen.build import generate
from p2gen.pybind import build_python
build_python(generate(sys.argv[1], sys.argv[2]), extra_cflags=("-O0", "-g0"))  # QUICK_PY_CFLAGS
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """prefix -> Generated: the three specs, compiled concurrently."""
    root = tmp_path_factory.mktemp("pylinks")
    specs = {}
    for mem in ("transient", "persistent"):
        path = root / f"p2tl_{mem}.p2"
        path.write_text(textwrap.dedent(_spec_text(mem)))
        specs[f"p2tl_{mem}"] = path
    specs["hash_ilist_transient"] = OO7
    gens, procs = {}, {}
    for prefix, path in specs.items():
        out = root / prefix
        gens[prefix] = generate(str(path), str(out))
        procs[prefix] = subprocess.Popen([sys.executable, "-c", BUILD, str(path), str(out)],
                                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                         text=True, cwd=str(root))
    for prefix, p in procs.items():
        out, _ = p.communicate(timeout=300)
        assert p.returncode == 0, f"building {prefix} --python failed:\n{out}"
    return gens


def _import(gen, prefix):
    sys.path.insert(0, gen.out_dir)
    try:
        return importlib.import_module(prefix)
    finally:
        sys.path.remove(gen.out_dir)


@pytest.fixture(scope="module", params=["transient", "persistent"])
def mod(request, built):
    prefix = f"p2tl_{request.param}"
    m = _import(built[prefix], prefix)
    m.MEM = request.param
    return m


@pytest.fixture
def db(mod, tmp_path):
    d = mod.open(tmp_path)
    yield d
    d.close()


def reopen(mod, d):
    """Close and open again: persistent contents survive, transient ones start empty."""
    d.close()
    return mod.open(d.dir)


def walk(role, owner):
    return [r.ref for r in role(owner)]


# ---------------------------------------------------------------------------
# declarations and metadata
# ---------------------------------------------------------------------------
def test_cdef_declares_every_header_function(built):
    for prefix in ("p2tl_transient", "hash_ilist_transient"):
        gen = built[prefix]
        m = _import(gen, prefix)
        header = Path(gen.header).read_text()
        protos = re.findall(r"^[A-Za-z][^;#{}()]*?\b(\w+)\((?:[^;]*)\);$", header, re.M)
        assert any(p.endswith("_get_body") or p.endswith("_get_text") for p in protos)
        missing = [p for p in protos if not hasattr(m.lib, p)]
        assert not missing
        assert cdef(gen.checked, gen.declarations) == cdef(gen.checked)   # the emit pass's table
        assert m.ffi.sizeof("p2_text") == 16


def test_metadata(mod):
    meta = mod.METADATA
    fields = {f["name"]: f for f in meta["records"]["doc"]}
    assert fields["body"]["kind"] == "text" and fields["note"]["kind"] == "text"
    assert fields["owner"]["kind"] == "int" and fields["owner"]["target"] == "people"
    assert "target" not in fields["id"]
    docs = next(c for c in meta["containers"] if c["name"] == "docs")
    assert docs["texts"] == ["body", "note"] and docs["refs"] == {"owner": "people"}
    assert [r["role"] for r in docs["roles"]] == ["author", "editor", "tags", "best_of"]
    rels = {r["name"]: r for r in meta["relationships"]}
    assert list(rels) == ["authorship", "editing", "tagging", "best", "mentoring", "chain"]
    assert [rels[n]["kind"] for n in rels] == ["1:N", "1:N", "M:N", "1:1", "1:N", "1:N"]
    assert rels["tagging"]["layer"] == "refarray" and rels["chain"]["layer"] == "ilist"
    left, right = rels["authorship"]["roles"]
    assert (left["container"], left["role"], left["many"]) == ("people", "docs", True)
    assert (right["container"], right["role"], right["many"]) == ("docs", "author", False)
    assert left["partner"] == {"container": "docs", "role": "author", "many": False}
    assert left["c"]["iter"] == f"{meta['prefix']}_people_docs_iter"
    assert right["c"] == {"get": f"{meta['prefix']}_docs_author",
                          "set": f"{meta['prefix']}_docs_set_author"}
    assert "db.tags.role('keys')" in mod.__doc__ and "db.tags.role('from')" in mod.__doc__
    assert "db.people.docs(x)" in mod.__doc__


# ---------------------------------------------------------------------------
# text fields
# ---------------------------------------------------------------------------
def test_text_round_trip(mod, db):
    big = "".join(chr(0x20 + i % 0x3000) for i in range(40_000))   # ~100 KB of UTF-8
    assert len(big.encode()) > 100_000
    raw = b"\xff\x00bin\xfe"                                        # not UTF-8, NULs
    cases = {1: "", 2: "Ünïcödé ✓ 日本", 3: big, 4: raw, 5: "a\0b"}
    refs = {}
    for i, body in cases.items():
        d = db.docs.insert(id=i, title="t", body=body, note=f"note {i}")
        want = raw.decode("utf-8", "surrogateescape") if isinstance(body, bytes) else body
        assert d.body == want and d.note == f"note {i}"
        assert db.docs.at(d) == d and db.docs.find(i).body == want
        refs[i] = d.ref
    assert db.docs.at(refs[4]).body.encode("utf-8", "surrogateescape") == raw
    assert sorted(r.body for r in db.docs) == sorted(
        raw.decode("utf-8", "surrogateescape") if isinstance(b, bytes) else b
        for b in cases.values())
    # update keeps texts not given, changes those given (also to empty and back)
    d = db.docs.update(refs[3], title="u", n=7)
    assert (d.body, d.note, d.title) == (big, "note 3", "u")
    d = db.docs.update(d, body="")
    assert (d.body, d.note) == ("", "note 3")
    d = db.docs.update(d, body=b"again", note=big)
    assert (db.docs.at(d).body, db.docs.at(d).note) == ("again", big)
    # a record's text is a copy
    old = db.docs.at(refs[2])
    db.docs.update(refs[2], body="changed")
    assert old.body == "Ünïcödé ✓ 日本" and db.docs.at(refs[2]).body == "changed"
    # insert from a record copies its texts into a new element
    copy = db.docs.insert(db.docs.at(refs[3]), id=33)
    assert copy.ref != refs[3] and copy.note == big and copy.body == "again"
    # cursors read texts too, and cursor.update writes them
    cur = db.docs_from(lo=7)
    got = sorted((r.id, r.body[:5]) for r in cur)
    assert got == [(3, "again"), (33, "again")]
    cur = db.docs_from(7)
    r = next(cur)
    r2 = cur.update(body="via cursor", n=8)
    assert r2.body == "via cursor" and db.docs.at(r2).body == "via cursor"
    assert db.docs.at(r2).note == big
    db = reopen(mod, db)
    try:
        if mod.MEM == "persistent":
            assert db.docs.find(3).note == big and db.docs.find(2).body == "changed"
            assert db.docs.find(4).body.encode("utf-8", "surrogateescape") == raw
            assert db.docs.find(1).body == "" and db.docs.find(5).body == "a\0b"
        else:
            assert len(db.docs) == 0
    finally:
        db.close()


def test_text_type_errors_insert_nothing(db):
    with pytest.raises(TypeError, match="body.*text"):
        db.docs.insert(id=1, body=5)
    with pytest.raises(TypeError):
        db.docs.insert(id=1, note=["x"])
    assert len(db.docs) == 0
    d = db.docs.insert(id=1, body="x")
    with pytest.raises(TypeError):
        db.docs.update(d, body=None)
    assert db.docs.at(d).body == "x"


def test_failing_text_write_leaves_nothing_half_made(db):
    """A text write failing after the insert deletes the element again; after an update,
    the element gets its old fields and texts back (P2_ENOMEM simulated in the Python
    paths' text writer, whose methods are called here: the C paths' own failures are
    tests/bindings/test_python_fast_text.py's, under a real address-space limit)."""
    c = db.docs
    insert, update = type(c).insert.__get__(c), type(c).update.__get__(c)
    get, real_set = c._texts["note"]
    c._texts["note"] = (get, lambda *args: pyapi.P2_ENOMEM)
    try:
        with pytest.raises(pyapi.P2Error) as e:
            insert(id=1, body="b", note="n")
        assert e.value.code == pyapi.P2_ENOMEM
        assert len(c) == 0 and c.find(1) is None
        c._texts["note"] = (get, real_set)
        d = insert(id=2, body="old body", note="old note", n=1)
        c._texts["note"] = (get, lambda *args: pyapi.P2_ENOMEM)
        with pytest.raises(pyapi.P2Error):
            update(d, body="new body", note="new note", n=2)
        c._texts["note"] = (get, real_set)
        assert c.at(d) == d
    finally:
        c._texts["note"] = (get, real_set)


# ---------------------------------------------------------------------------
# ref fields
# ---------------------------------------------------------------------------
def test_ref_fields(mod, db):
    p = db.people.insert(id=1, name="ann")
    q = db.people.insert(id=2, name="bob")
    assert db.docs.insert(id=1).owner is None                  # not given: no element
    assert db.docs.insert(id=2, owner=None).owner is None
    d3 = db.docs.insert(id=3, owner=p)                           # a Record
    assert d3.owner == p.ref
    d4 = db.docs.insert(id=4, owner=q.ref)                       # an int
    assert db.docs.at(d4).owner == q.ref
    n = len(db.docs)
    with pytest.raises(mod.NotFoundError):
        db.docs.insert(id=5, owner=12345)
    with pytest.raises(mod.NotFoundError):
        db.docs.update(d3, owner=999)
    with pytest.raises(TypeError, match="ref people"):
        db.docs.insert(id=5, owner=d3)                           # a doc, not a person
    with pytest.raises(TypeError):
        db.docs.insert(id=5, owner="1")
    with pytest.raises(TypeError):
        db.docs.insert(id=5, owner=True)
    with pytest.raises(mod.RangeError):
        db.docs.insert(id=5, owner=-1)
    with pytest.raises(mod.RangeError):
        db.docs.insert(id=5, owner=1 << 64)
    assert len(db.docs) == n and db.docs.at(d3).owner == p.ref
    d3 = db.docs.update(d3, owner=q)
    assert d3.owner == q.ref
    d3 = db.docs.update(d3, owner=None)
    assert d3.owner is None
    assert db.docs.insert(id=6, owner=NOREF).owner is None       # NOREF spelled as an int
    # a cursor parameter compared with a ref field takes the same values
    assert sorted(d.id for d in db.docs_of(q)) == [4]
    assert sorted(d.id for d in db.docs_of(o=None)) == [1, 2, 3, 6]
    with pytest.raises(TypeError):
        db.docs_of(d4)
    db.docs.update(d4, owner=p)
    db = reopen(mod, db)
    try:
        if mod.MEM == "persistent":
            assert db.docs.find(4).owner == db.people.find(1).ref
            assert db.docs.find(3).owner is None
    finally:
        db.close()


# ---------------------------------------------------------------------------
# relationships
# ---------------------------------------------------------------------------
def test_one_to_many_ilist(mod, db):
    a, b = (db.people.insert(id=i) for i in (1, 2))
    docs = [db.docs.insert(id=10 + i) for i in range(4)]
    role = db.people.docs
    assert isinstance(role, pyapi.ManyRole)
    assert role.partner_role is db.docs.author and db.docs.author.partner_role is role
    assert role.many and not db.docs.author.many
    for d in docs[:3]:
        role.add(a, d)
    assert walk(role, a) == [d.ref for d in docs[:3]]            # in the order added
    assert [r.id for r in role(a)] == [10, 11, 12] and role.count(a) == 3
    assert list(role.refs(a)) == [d.ref for d in docs[:3]]
    assert db.docs.author(docs[0]) == db.people.at(a)
    assert db.docs.author.get(docs[3]) is None and db.docs.author.ref(docs[3]) is None
    # the one end moves a member; the many end follows
    db.docs.author.set(docs[1], b)
    assert walk(role, a) == [docs[0].ref, docs[2].ref] and walk(role, b) == [docs[1].ref]
    role.add(b, docs[0])                                         # leaves a
    assert role.count(a) == 1 and walk(role, b) == [docs[1].ref, docs[0].ref]
    assert db.docs.author.ref(docs[0]) == b.ref
    role.remove(b, docs[1])
    assert db.docs.author(docs[1]) is None and role.count(b) == 1
    with pytest.raises(mod.NotFoundError):
        role.remove(b, docs[1])                                  # not there any more
    db.docs.author.set(docs[2], None)
    assert role.count(a) == 0 and list(role(a)) == []
    # the other ilist, declared many-to-one: docs.editor is the one-role
    ed = db.people.edits
    assert ed.many and not db.docs.editor.many
    db.docs.editor.set(docs[0], a)
    db.docs.editor.set(docs[3], a)
    ed.add(a, docs[1])
    assert walk(ed, a) == [docs[0].ref, docs[3].ref, docs[1].ref]
    # deleting a member takes it out; deleting the owner clears its members' end
    db.docs.delete(docs[3])
    assert walk(ed, a) == [docs[0].ref, docs[1].ref]
    db = reopen(mod, db)
    try:
        if mod.MEM == "persistent":
            a2 = db.people.find(1)
            assert [r.id for r in db.people.edits(a2)] == [10, 11]
            assert [r.id for r in db.people.docs(db.people.find(2))] == [10]
            db.people.delete(a2)
            assert db.docs.editor(db.docs.find(10)) is None
            assert db.docs.editor.ref(db.docs.find(11)) is None
    finally:
        db.close()


def test_many_to_many_bag(mod, db):
    d1, d2 = (db.docs.insert(id=i) for i in (1, 2))
    t1, t2, t3 = (db.tags.insert(n=i) for i in (1, 2, 3))
    tags, tagged = db.docs.tags, db.tags.tagged
    for o, m in [(d1, t1), (d1, t2), (d1, t1), (d2, t1)]:
        tags.add(o, m)                                           # capacity 1: blocks grow
    tagged.add(t3, d2)                                           # from the other end
    assert walk(tags, d1) == [t1.ref, t2.ref, t1.ref]            # a bag
    assert walk(tags, d2) == [t1.ref, t3.ref]
    assert walk(tagged, t1) == [d1.ref, d1.ref, d2.ref] and tagged.count(t1) == 3
    assert [t.n for t in tags(d1)] == [1, 2, 1]
    tagged.remove(t1, d1)                                        # one occurrence each side
    assert walk(tags, d1) == [t2.ref, t1.ref] and walk(tagged, t1) == [d1.ref, d2.ref]
    db.tags.delete(t1)                                           # unlinks every occurrence
    assert walk(tags, d1) == [t2.ref] and walk(tags, d2) == [t3.ref]
    db.docs.delete(d2)
    assert tagged.count(t3) == 0 and walk(tagged, t2) == [d1.ref]
    db = reopen(mod, db)
    try:
        if mod.MEM == "persistent":
            assert [t.n for t in db.docs.tags(db.docs.find(1))] == [2]
    finally:
        db.close()


def test_one_to_one_and_self(mod, db):
    a, b = (db.people.insert(id=i, name=f"p{i}") for i in (1, 2))
    x, y = (db.docs.insert(id=i) for i in (1, 2))
    best, best_of = db.people.best, db.docs.best_of
    assert isinstance(best, pyapi.OneRole) and isinstance(best_of, pyapi.OneRole)
    best.set(a, x)
    assert best(a) == db.docs.at(x) and best_of(x).name == "p1"
    best_of.set(x, b)                                            # a lets go
    assert best(a) is None and best.ref(b) == x.ref
    best.set(b, y)                                               # x lets go
    assert best_of(x) is None and best_of.ref(y) == b.ref
    best.set(b, None)
    assert best_of(y) is None and best(b) is None
    best.set(a, y)
    # refarray 1:N on one container: mentees / mentor
    c = db.people.insert(id=3)
    db.people.mentees.add(a, b)
    db.people.mentor.set(c, a)
    db.people.mentees.add(a, a)                                  # its own mentee
    assert walk(db.people.mentees, a) == [b.ref, c.ref, a.ref]
    assert db.people.mentor.ref(a) == a.ref
    # ilist self-relationship with role names a keyword and a Container attribute take
    frm, keys = db.tags.role("from"), db.tags.role("keys")
    assert db.tags.keys == () and db.tags.roles["keys"] is keys
    assert getattr(db.tags, "from") is frm
    t = [db.tags.insert(n=i) for i in range(3)]
    frm.add(t[0], t[1])
    keys.set(t[2], t[0])
    assert walk(frm, t[0]) == [t[1].ref, t[2].ref] and keys(t[1]).n == 0
    db.people.delete(a)                                          # unlinks every role
    assert best_of(y) is None and db.people.mentor(b) is None
    assert db.people.mentor(c) is None
    db.tags.delete(t[0])
    assert keys(t[2]) is None
    db = reopen(mod, db)
    try:
        if mod.MEM == "persistent":
            b2, c2 = db.people.find(2), db.people.find(3)
            db.people.mentees.add(b2, c2)
            t1 = next(t for t in db.tags if t.n == 1)
            db.tags.role("from").add(t1, t1)
            db = reopen(mod, db)
            assert [p.id for p in db.people.mentees(db.people.find(2))] == [3]
            t1 = next(t for t in db.tags if t.n == 1)
            assert db.tags.role("keys")(t1) == t1
    finally:
        db.close()


def test_misuse(mod, db):
    a = db.people.insert(id=1)
    d = db.docs.insert(id=1)
    t = db.tags.insert(n=1)
    role = db.people.docs
    with pytest.raises(TypeError):
        role.add(a, t)                                           # a tag, not a doc
    with pytest.raises(TypeError):
        role.add(d, d)                                           # owner must be a person
    with pytest.raises(TypeError):
        role.add(a, "1")
    with pytest.raises(mod.NotFoundError):
        role.add(a, 4242)
    with pytest.raises(mod.NotFoundError):
        role.add(4242, d)
    with pytest.raises(mod.NotFoundError):
        role.count(4242)
    with pytest.raises(mod.NotFoundError):
        list(role(4242))
    with pytest.raises(mod.NotFoundError):
        db.docs.author(4242)
    with pytest.raises(mod.NotFoundError):
        db.docs.author.set(d, 4242)
    with pytest.raises(mod.NotFoundError):
        role.remove(a, d)                                        # not a member
    with pytest.raises(AttributeError, match="roles: docs"):
        db.people.nope
    with pytest.raises(AttributeError):
        db.people.role("nope")
    with pytest.raises(AttributeError):
        role.add_member
    # a stale record: deleted, its place reused by another key
    gone = db.docs.insert(id=2)
    db.docs.delete(gone)
    with pytest.raises(mod.NotFoundError):
        role.add(a, gone)
    role.add(a, d)
    # changing either side while a walk is under way
    it = role(a)
    db.docs.insert(id=3)
    with pytest.raises(RuntimeError):
        next(it)
    it = role(a)
    db.people.best.set(a, d)
    with pytest.raises(RuntimeError):
        next(it)
    it = role(a)
    assert next(it) == db.docs.at(d)
    with pytest.raises(StopIteration):
        next(it)
    it = role(a)
    db.close()
    for call in (lambda: next(it), lambda: role(a), lambda: role.count(a),
                 lambda: role.add(a, d), lambda: role.remove(a, d),
                 lambda: db.docs.author(d), lambda: db.docs.author.set(d, None),
                 lambda: db.docs.at(d)):
        with pytest.raises(mod.ClosedError):
            call()
    gc.collect()


# ---------------------------------------------------------------------------
# OO7 through Python
# ---------------------------------------------------------------------------
def test_oo7_navigation(built, tmp_path):
    m = _import(built["hash_ilist_transient"], "hash_ilist_transient")
    manual_text = "OO7 manual — " + "x" * 50_000
    with m.open(tmp_path) as db:
        mod = db.modules.insert(id=1, type="mod", build_date=1000, design_root=None)
        man = db.manuals.insert(id=1, title="Manual 1", text=manual_text,
                                text_len=len(manual_text.encode()))
        db.modules.man.set(mod, man)
        assert db.manuals.mod(man) == db.modules.at(mod)
        assert db.modules.man(mod).text == manual_text
        root = db.complex_assemblies.insert(id=1, type="root", build_date=0)
        mod = db.modules.update(mod, design_root=root)
        assert db.complex_assemblies.at(mod.design_root).type == "root"
        db.modules.complex_assemblies.add(mod, root)
        base = db.base_assemblies.insert(id=7, type="base", build_date=0)
        db.complex_assemblies.sub_base.add(root, base)
        comps = [db.composite_parts.insert(id=i, type="c", build_date=0, root_part=None)
                 for i in range(3)]
        for c in comps:
            db.base_assemblies.components_priv.add(base, c)
        db.base_assemblies.components_shar.add(base, comps[0])
        doc = db.documents.insert(id=5, title="Composite Part 00000005", text="I am a doc")
        db.composite_parts.documentation.set(comps[1], doc)
        atoms = [db.atomic_parts.insert(id=100 + i, type="a", build_date=i, x=0, y=0, doc_id=0)
                 for i in range(4)]
        for a in atoms:
            db.composite_parts.parts.add(comps[1], a)
        comps[1] = db.composite_parts.update(comps[1], root_part=atoms[0])
        conn = db.connections.insert(type="c", length=3)
        db.atomic_parts.to.add(atoms[0], conn)
        db.connections.to.set(conn, atoms[1])
        # navigate down from the module to the documentation text
        (r,) = db.modules.complex_assemblies(mod)
        (b,) = db.complex_assemblies.sub_base(r)
        private = list(db.base_assemblies.components_priv(b))
        assert [c.id for c in private] == [0, 1, 2]
        assert [c.id for c in db.base_assemblies.components_shar(b)] == [0]
        assert db.composite_parts.documentation(private[1]).text == "I am a doc"
        assert db.composite_parts.parts.count(private[1]) == 4
        assert db.atomic_parts.at(private[1].root_part).id == 100
        assert sorted(a.id for a in db.composite_parts.parts(private[1])) == [100, 101, 102, 103]
        # and back up
        assert db.atomic_parts.part_of(atoms[2]).id == 1
        assert db.documents.part(db.documents.find(title="Composite Part 00000005")).id == 1
        assert db.base_assemblies.super(base).id == 1 and db.complex_assemblies.module(r).id == 1
        assert [p.id for p in db.composite_parts.used_in_priv(comps[2])] == [7]
        assert db.connections.role("from")(conn).id == 100
        assert [c.length for c in db.atomic_parts.role("from")(atoms[1])] == [3]
        # delete unlinks
        db.atomic_parts.delete(atoms[0])
        assert db.connections.role("from")(conn) is None
        assert db.composite_parts.parts.count(comps[1]) == 3
        db.documents.update(doc, text="rewritten")
        assert db.composite_parts.documentation(comps[1]).text == "rewritten"
