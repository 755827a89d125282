"""persistent(links = offset32): references stored in 32 bits (layers/README.md, "Link
width"). The checker refuses what 32-bit links cannot hold; the generated code of a
64-bit file does not change; a record's ref fields and text handles keep their 64 bits in
either width."""
import pytest

from p2gen.check import check, fingerprint
from p2gen.errors import SpecError, SpecErrors
from p2gen.layers import LAYERS
from p2gen.layers.persistent import LINK32_LIMIT
from p2gen.parser import parse
from p2gen.runtime import pyapi

REC = "record r { id: i32; v: i64; }\n"


def errors_of(text):
    with pytest.raises((SpecError, SpecErrors)) as info:
        check(parse(text, "t.p2"), "t")
    err = info.value
    return err.errors if isinstance(err, SpecErrors) else [err]


def unconverted(realm):
    """Layers of `realm` that still store 64-bit links (the checker refuses them)."""
    return [n for n, l in LAYERS.items() if l.realm == realm and not l.narrow_links]


def test_unconverted_layer_refused_naming_layer_and_parameter():
    names = unconverted("ds")
    if not names:
        pytest.skip("every ds layer stores narrow links")
    # an index layer when one is left, else the storage
    idx = [n for n in names if LAYERS[n].role == "index"]
    name = (idx or names)[0]
    if LAYERS[name].role == "index":
        eq = f"top2ds[{name}(key = id)[array[persistent(file = \"a.db\", links = offset32)]]]"
    else:
        eq = f"top2ds[{name}[persistent(file = \"a.db\", links = offset32)]]"
    errs = errors_of(REC + f"container c of r = {eq};\n")
    msg = next(e.message for e in errs if f"layer '{name}'" in e.message)
    assert "persistent(links = offset32)" in msg and "32-bit" in msg, msg
    assert "links = offset64" in msg


def test_reserve_above_32_gib_refused():
    text = REC + ("container c of r = top2ds[array[persistent(file = \"a.db\", links = offset32, "
                  f"reserve = {LINK32_LIMIT + 1})]];\n")
    msgs = [e.message for e in errors_of(text)]
    assert any("reserve" in m and "32 GiB" in m for m in msgs), msgs


# ---------------------------------------------------------------------------
# built: the same equation over both link widths, through the Python binding
# ---------------------------------------------------------------------------
import importlib
import re
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

SPEC = """
record owner { id: i32 = 0; pad: i32 = 0; v: i64 = 0; fav: ref items = none; note: text = ""; }
record item  { id: i32 = 0; grp: i32 = 0; v: i64 = 0; }
container owners of owner = top2ds_qualify[hash(key = id, buckets = 16)[array[persistent(file = "o.db"LINKS)]]];
container items  of item  = top2ds_qualify[hash(key = grp, buckets = 16)[hash(key = id, buckets = 16)[array(capacity = 4)[persistent(file = "o.db"LINKS)]]]];
cursor by_grp on items where grp == $g;
relationship holds one owners.items to many items.owner = ilist;
relationship tagging many owners.tags to many items.tagged = refarray(capacity = 1);
relationship best one owners.best to one items.best_of = refarray;
"""
BUILD = """
import sys
from p2gen.build import generate
from p2gen.pybind import build_python
build_python(generate(sys.argv[1], sys.argv[2]), extra_cflags=("-O0", "-g0"))  # QUICK_PY_CFLAGS
"""
WIDTHS = ("offset64", "offset32")
N_OWNERS, N_ITEMS = 200, 6000
BRK = 40          # the file header's end of the allocated area (runtime/p2_runtime.c)


@pytest.fixture(scope="module")
def mods(tmp_path_factory):
    """width -> the compiled Python module of SPEC over that width."""
    root = tmp_path_factory.mktemp("links32")
    procs, out = {}, {}
    for w in WIDTHS:
        path = root / f"p2o32_{w}.p2"
        path.write_text(SPEC.replace("LINKS", "" if w == "offset64" else f", links = {w}"))
        out[w] = root / w
        procs[w] = subprocess.Popen([sys.executable, "-c", BUILD, str(path), str(out[w])],
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    text=True, cwd=str(root))
    mods = {}
    for w, p in procs.items():
        log, _ = p.communicate(timeout=600)
        assert p.returncode == 0, f"building {w} failed:\n{log}"
        sys.path.insert(0, str(out[w]))
        try:
            mods[w] = importlib.import_module(f"p2o32_{w}")
        finally:
            sys.path.remove(str(out[w]))
    return mods


def fill(mod, d):
    """The same contents in any width: owners, items chained in hash buckets and listed
    on their owners (ilist), some deleted, some moved."""
    db = mod.open(d)
    try:
        owners = [db.owners.insert(id=i, pad=0, v=1000 + i) for i in range(N_OWNERS)]
        items = [db.items.insert(id=i, grp=i % 37, v=(i * 7919) % 100003)
                 for i in range(N_ITEMS)]
        for i, it in enumerate(items):
            db.owners.items.add(owners[(i * 31) % N_OWNERS], it)
        for i in range(0, N_ITEMS, 5):
            db.items.delete(items[i])
        for i in range(1, N_ITEMS, 11):
            if i % 5:
                db.items.owner.set(items[i], owners[i % 3])
        for i in range(1, N_ITEMS, 3):
            if i % 5:
                db.owners.tags.add(owners[i % 17], items[i])
                db.owners.tags.add(owners[i % 17], items[i])   # a bag: twice
                db.items.tagged.add(items[i], owners[(i * 5) % N_OWNERS])
        for i in range(1, N_ITEMS, 3 * 29):
            if i % 5:
                db.owners.tags.remove(owners[i % 17], items[i])
        for o in range(0, N_OWNERS, 2):
            db.owners.best.set(owners[o], items[o * 10 + 1])
        db.items.delete(items[8])
        db.items.delete(items[22])
        assert db.verify() == []
    finally:
        db.close()


def annotate(mod, d):
    """A ref field and a text in the owners' records (64-bit in both widths), set on some
    owners and cleared again on some of those."""
    db = mod.open(d)
    try:
        for o in range(0, N_OWNERS, 3):
            db.owners.update(db.owners.find(o), fav=db.items.find(id=o * 25 + 1), note=f"owner {o}")
        for o in range(0, N_OWNERS, 9):
            db.owners.update(db.owners.find(o), fav=None, note="")
        assert db.verify() == []
    finally:
        db.close()


def contents(mod, d):
    db = mod.open(d)
    try:
        assert db.verify() == []
        out = {}
        for o in range(N_OWNERS):
            ow = db.owners.find(o)
            rec = db.owners.at(ow)
            out[o] = ([r.id for r in db.owners.items(ow)], [r.id for r in db.owners.tags(ow)],
                      db.owners.best.ref(ow) is not None and db.owners.best(ow).id,
                      rec.fav is not None and db.items.at(rec.fav).id, rec.note)
        out["g5"] = sorted(r.id for r in db.by_grp(g=5))
        out["find"] = [db.items.find(id=i).v for i in range(1, N_ITEMS, 97) if i % 5]
        return out
    finally:
        db.close()


def test_offset32_same_answers_after_reopen_and_smaller_file(mods, tmp_path):
    """The same operations in both widths give the same answers after a reopen in this
    process, and the 32-bit file uses fewer bytes (its allocated area: links are half as
    wide in every element and bucket block)."""
    used, answers = {}, {}
    for w in WIDTHS:
        d = tmp_path / w
        d.mkdir()
        fill(mods[w], str(d))
        with open(d / "o.db", "rb") as f:
            head = f.read(64)
        used[w] = struct.unpack_from("<Q", head, BRK)[0]
        annotate(mods[w], str(d))
        answers[w] = contents(mods[w], str(d))
    assert answers["offset32"] == answers["offset64"]
    assert sum(len(v[0]) + len(v[1]) for k, v in answers["offset32"].items()
               if isinstance(k, int)) > 0
    assert sum(1 for k, v in answers["offset32"].items() if isinstance(k, int) and v[3]) > 10
    assert sum(1 for k, v in answers["offset32"].items() if isinstance(k, int) and v[4]) > 10
    # elements of items: 64-bit 2 hash links + free link + 3 ilist links = 48 bytes of
    # links and padding against 24 at 32 bits, beside 16 bytes of record (0.625x); the
    # allocated area also holds the holes that doubling the slot blocks leaves behind,
    # which depend on the order of allocations (0.53x before the owners had their two
    # 64-bit fields, 0.76x with them)
    print(f"allocated bytes: offset64 {used['offset64']}, offset32 {used['offset32']}")
    assert used["offset32"] < 0.8 * used["offset64"], used


def test_offset64_file_refused_by_offset32_spec(mods, tmp_path):
    fill(mods["offset64"], str(tmp_path))
    with pytest.raises(mods["offset32"].P2Error) as err:
        mods["offset32"].open(str(tmp_path))
    assert "fingerprint" in str(err.value) or "spec" in str(err.value)


def elem_offsets(source: Path, struct_name: str) -> dict:
    """Field offsets of a generated element struct (its fields are fixed-width integers
    and the record, 8-byte aligned here), laid out as C does: each at its alignment."""
    text = source.read_text()
    body = text[text.index(f"typedef struct {struct_name} {{"):]
    body = body[:body.index("}")]
    size = {"uint8_t": 1, "uint32_t": 4, "int32_t": 4, "uint64_t": 8}
    out, off = {}, 0
    for ctype, name in re.findall(r"^\s+(\w+) (\w+);", body, re.M):
        a = size.get(ctype, 8)
        off = (off + a - 1) // a * a
        out[name] = off
        off += a
    return out


def test_corrupt_32_bit_link_is_caught(mods, tmp_path):
    """A hash chain link of an owner rewritten to a slot far beyond the file's slot block:
    the integrity check at open refuses the file, naming the layer."""
    mod = mods["offset32"]
    fill(mod, str(tmp_path))
    path = tmp_path / "o.db"
    data = bytearray(path.read_bytes())
    # owner 7's record (id, pad, v = 1007) follows its links (the generated struct says where)
    rec = struct.pack("<iiq", 7, 0, 1007)
    at = data.find(rec)
    assert at > 0 and data.find(rec, at + 1) < 0
    offs = elem_offsets(Path(mod.__file__).parent / "p2o32_offset32.c", "p2o32_offset32_owners_elem")
    elem = at - offs["rec"]
    at_link = elem + offs["_hash_next"]
    data[at_link:at_link + 4] = struct.pack("<I", 0x7FFFFFF0)
    path.write_bytes(bytes(data))
    with pytest.raises(mod.P2Error) as err:
        mod.open(str(tmp_path))
    assert "hash" in str(err.value) and "not live" in str(err.value), str(err.value)


def test_corrupt_32_bit_text_handle_is_caught(mods, tmp_path):
    """A 32-bit text handle (p2_text32: the block's offset >> 3, then the length) whose
    length runs past the used memory: the integrity check at open refuses the file,
    naming the text."""
    mod = mods["offset32"]
    fill(mod, str(tmp_path))
    annotate(mod, str(tmp_path))
    db = mod.open(str(tmp_path))
    try:
        assert db.owners.find(3).note == "owner 3" and db.owners.find(3).fav is not None
    finally:
        db.close()
    path = tmp_path / "o.db"
    data = bytearray(path.read_bytes())
    rec = struct.pack("<iiq", 3, 0, 1003)      # owner 3: id, pad, v; then fav (u32), note
    at = data.find(rec)
    assert at > 0 and data.find(rec, at + 1) < 0
    mref, length = struct.unpack_from("<II", data, at + 20)
    assert mref != 0 and length == len("owner 3"), (mref, length)
    struct.pack_into("<I", data, at + 24, 0x7FFFFFF0)
    path.write_bytes(bytes(data))
    with pytest.raises(mod.P2Error) as err:
        mod.open(str(tmp_path))
    assert "text note" in str(err.value), str(err.value)


# ---------------------------------------------------------------------------
# what the checker refuses or decides (no C)
# ---------------------------------------------------------------------------
def test_offset32_reserve_defaults_to_what_links_reach():
    text = REC + 'container c of r = top2ds[array[persistent(file = "a.db", links = offset32)]];\n'
    checked = check(parse(text, "t.p2"), "t")
    assert checked.files[0].reserve == LINK32_LIMIT
    text64 = text.replace(", links = offset32", "")
    assert check(parse(text64, "t.p2"), "t").files[0].reserve == 1 << 36


def test_link_width_is_part_of_the_fingerprint():
    text = REC + 'container c of r = top2ds[array[persistent(file = "a.db", links = offset32)]];\n'
    a = check(parse(text, "t.p2"), "t").files[0].fingerprint
    b = check(parse(text.replace(", links = offset32", ""), "t.p2"), "t").files[0].fingerprint
    c = check(parse(text.replace("offset32", "offset64"), "t.p2"), "t").files[0].fingerprint
    assert a != b and b == c


def test_ref_and_text_fields_narrow_with_the_links():
    """Over 32-bit links a record's ref field is stored as a u32 (the slot number,
    UINT32_MAX for none) and its text handle as a p2_text32; over 64-bit links both keep
    their width. A record held by containers of both widths cannot be both: refused,
    naming the record and the containers."""
    base = ("record r { id: i32; x: ref c; t: text; }\n"
            'container c of r = top2ds[array[persistent(file = "a.db"LINKS)]];\n')
    narrow = check(parse(base.replace("LINKS", ", links = offset32"), "t.p2"), "t")
    types = {f.name: f.type for f in narrow.records[0].fields}
    assert (types["x"].ctype, types["x"].target, types["t"].ctype) == ("uint32_t", "c", "p2_text32")
    assert types["x"].narrow and types["t"].narrow and types["x"].spelled() == "ref c"
    wide = check(parse(base.replace("LINKS", ""), "t.p2"), "t")
    types = {f.name: f.type for f in wide.records[0].fields}
    assert (types["x"].ctype, types["t"].ctype) == ("uint64_t", "p2_text")
    mixed = (base.replace("LINKS", ", links = offset32") +
             'container d of r = top2ds[array[persistent(file = "b.db")]];\n')
    msgs = [e.message for e in errors_of(mixed)]
    assert any("record 'r'" in m and "'c' (32-bit)" in m and "'d' (64-bit)" in m for m in msgs), msgs


def test_mapped_has_no_link_width():
    """mapped stores raw addresses, as wide as a pointer: `links` is not one of its
    parameters (it was accepted and ignored once), and the --pointers run makes no
    raw-address twin of a 32-bit file (it would be the 64-bit variant's)."""
    text = REC + 'container c of r = top2ds[array[mapped(file = "a.db", links = offset32)]];\n'
    msgs = [e.message for e in errors_of(text)]
    assert any("layer 'mapped' has no parameter 'links'" in m for m in msgs), msgs
    from p2gen.bench.oo7 import run as bo
    v32 = [v for v in bo.default_variants() if v.spec.endswith("hash_ilist_offset32.p2")]
    assert v32 and bo.mapped_twin(v32[0], Path("/nonexistent")) is None


def test_one_file_one_link_width():
    text = (REC + 'container c of r = top2ds[array[persistent(file = "a.db", links = offset32)]];\n'
            'container d of r = top2ds[array[persistent(file = "a.db")]];\n')
    msgs = [e.message for e in errors_of(text)]
    assert any("share file" in m and "link width" in m for m in msgs), msgs


def test_unconverted_rel_layer_refused():
    names = unconverted("rel")
    if not names:
        pytest.skip("every rel layer stores narrow links")
    text = (REC + 'container c of r = top2ds[array[persistent(file = "a.db", links = offset32)]];\n'
            'container d of r = top2ds[array[persistent(file = "a.db", links = offset32)]];\n'
            f"relationship x one c.ds to many d.cs = {names[0]};\n")
    msgs = [e.message for e in errors_of(text)]
    assert any(f"layer '{names[0]}'" in m and "32-bit" in m for m in msgs), msgs


SMALL = """
record item { id: i32; v: i64; }
container items of item = top2ds[hash(key = id, buckets = 16)[array[persistent(file = "s.db", links = offset32, reserve = 1048576)]]];
"""


def built_module(tmp_path, name: str, spec: str):
    """The Python module of `spec` (built in tmp_path as `name`), and an empty directory
    for its database."""
    path = tmp_path / f"{name}.p2"
    path.write_text(spec)
    out = tmp_path / name
    proc = subprocess.run([sys.executable, "-c", BUILD, str(path), str(out)],
                          capture_output=True, text=True, cwd=str(tmp_path), timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    sys.path.insert(0, str(out))
    try:
        mod = importlib.import_module(name)
    finally:
        sys.path.remove(str(out))
    d = tmp_path / "db"
    d.mkdir()
    return mod, d


def test_offset32_file_stops_at_its_reserve(tmp_path):
    """The segment never grows past its reservation (the checker bounds it by what 32-bit
    links reach): inserting into a full file fails with P2_ENOMEM and a message, and what
    was inserted before stays and verifies after a reopen."""
    mod, d = built_module(tmp_path, "p2o32_small", SMALL)
    db = mod.open(str(d))
    n = 0
    with pytest.raises(mod.P2Error) as err:
        for n in range(1 << 20):
            db.items.insert(id=n, v=n)
    assert err.value.code == pyapi.P2_ENOMEM, err.value
    assert "reserv" in str(err.value), str(err.value)
    db.close()
    db = mod.open(str(d))
    try:
        assert db.verify() == []
        assert len(db.items) == n and db.items.find(n - 1).v == n - 1
    finally:
        db.close()


def test_layer_layout_is_part_of_the_fingerprint(monkeypatch):
    # a layer whose element fields changed (avl's parent links) gives every file with it in
    # an equation another fingerprint, so a file written with the old fields is refused at
    # open; files without such a layer keep theirs
    from p2gen.layers.avl import Avl
    avl = REC + 'container c of r = top2ds[avl(key = id)[array[persistent(file = "a.db")]]];\n'
    plain = REC + 'container c of r = top2ds[array[persistent(file = "a.db")]];\n'
    now = check(parse(avl, "t.p2"), "t").files[0].fingerprint
    plain_now = check(parse(plain, "t.p2"), "t").files[0].fingerprint
    monkeypatch.setattr(Avl, "layout", 1)
    assert check(parse(avl, "t.p2"), "t").files[0].fingerprint != now
    assert check(parse(plain, "t.p2"), "t").files[0].fingerprint == plain_now


NARROW_REFS = """
record a { id: i32 = 0; r: ref bs = none; }
record b { id: i32 = 0; }
container as_ of a = top2ds_qualify[hash(key = id, buckets = 16)[array[persistent(file = "n.db", links = offset32)]]];
container bs of b = top2ds_qualify[hash(key = id, buckets = 16)[array[persistent(file = "n.db", links = offset32)]]];
"""


def test_narrow_ref_field_from_python(tmp_path):
    """A ref field over 32-bit links from Python: None for none in records, numpy (a u4
    column, 2**32-1 for none) both ways, 2**32 and more refused as no reference, and a
    reopen keeps every value."""
    np = pytest.importorskip("numpy")
    mod, d = built_module(tmp_path, "p2o32_refs", NARROW_REFS)
    db = mod.open(str(d))
    try:
        b = [db.bs.insert(id=i) for i in range(5)]
        x = db.as_.insert(id=1, r=b[2])
        db.as_.insert(id=2)
        assert (db.as_.find(1).r, db.as_.find(2).r) == (b[2].ref, None)
        arr = db.as_.to_numpy()
        assert arr.dtype["r"] == np.dtype("<u4") and list(arr["r"]) == [b[2].ref, 2 ** 32 - 1]
        rows = np.zeros(3, dtype=arr.dtype)
        rows["id"], rows["r"] = [10, 11, 12], [b[0].ref, 2 ** 32 - 1, b[4].ref]
        db.as_.insert_many(rows)
        db.as_.update(x, r=None)
        with pytest.raises(pyapi.RangeError, match=r"not a reference \(0 \.\. 2\*\*32-1\)"):
            db.as_.insert(id=99, r=2 ** 33)
        with pytest.raises(mod.P2Error, match="no element 77"):
            db.as_.insert(id=98, r=77)
    finally:
        db.close()
    db = mod.open(str(d))
    try:
        assert db.verify() == []
        assert sorted((r.id, r.r) for r in db.as_) == sorted(
            [(1, None), (2, None), (10, b[0].ref), (11, None), (12, b[4].ref)])
    finally:
        db.close()
