"""The integrity checker: the generated `<prefix>_verify` and `p2gen verify`.

Two persistent databases are built: SPEC below (every storage layer under every index
layer, delflag, qsort, and a transient container, all in one file; qualify over top2ds in
a second, journalled file) through the command harness, and tests/specs/links_persistent.p2 (ilist and refarray relationships of every
multiplicity, texts, malloc storage) through tests/c/links_driver.c. Their checkers (the
program `p2gen verify` builds) are compiled with ASan and UBSan.

- clean databases verify clean (exit 0), through the program and the CLI;
- targeted corruptions (a hash chain link, an AVL child, a slot's live flag, a list link,
  a refarray entry, an ilist owner, a text handle, ...) are reported naming the right
  container and layer;
- random corruption: bytes of the data area (past the 4096-byte header, below brk) are
  XORed with a random mask, one flip per run, seeded; the checker (open included) must
  never crash or trip a sanitizer, and every flip inside a byte the checker always judges
  (class L of the checker's --map: links, live flags, counts, bucket arrays, reference
  arrays, empty slots that must be zero) must be reported, or refused at open (the roots'
  checksum). Detection rates per class are printed.
"""
from __future__ import annotations

import hashlib
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import SAN_QUICK_FLAGS, SAN_QUICK_OPT, cache_lock, runtime_obj, sources_digest

ROOT = Path(__file__).resolve().parents[2]
LINKS_SPEC = ROOT / "tests" / "specs" / "links_persistent.p2"
DRIVER = ROOT / "tests" / "c" / "links_driver.c"
HEADER = 4096
FLIPS = int(os.environ.get("P2GEN_VERIFY_FLIPS", "200"))   # random flips in all
SAN_MARKERS = ("ERROR: AddressSanitizer", "runtime error:", "SUMMARY: UndefinedBehaviorSanitizer",
               "AddressSanitizer:DEADLYSIGNAL")

SPEC = """
record item { id: u32; score: i32; name: char[8]; }
container a_hash of item = top2ds_qualify[hash[array[persistent]]]
    with hash(key = id, buckets = 4), persistent(file = "v.db");
container a_avl of item = top2ds_qualify[avl[array[persistent]]]
    with avl(key = score), persistent(file = "v.db");
container a_hashavl of item = top2ds_qualify[hash(key = id)[avl(key = score)[array[persistent]]]]
    with persistent(file = "v.db");
container i_hash of item = top2ds_qualify[hash[iarray[persistent]]]
    with hash(key = score), iarray(key = id, capacity = 8), persistent(file = "v.db");
container i_odlist of item = top2ds_qualify[odlist[iarray[persistent]]]
    with odlist(key = name), iarray(key = id, capacity = 8), persistent(file = "v.db");
container m_hash of item = top2ds_qualify[hash[malloc[persistent]]]
    with hash(key = name), persistent(file = "v.db");
container m_avl of item = top2ds_qualify[avl[malloc[persistent]]]
    with avl(key = name), persistent(file = "v.db");
container m_dlist of item = top2ds_qualify[dlist[malloc[persistent]]] with persistent(file = "v.db");
container m_odlist of item = top2ds_qualify[odlist[malloc[persistent]]]
    with odlist(key = score), persistent(file = "v.db");
container q of item = top2ds_qualify[qsort[persistent]]
    with qsort(key = score, capacity = 4), persistent(file = "v.db");
container d_hash of item = delflag[top2ds_qualify[hash[array[persistent]]]]
    with hash(key = id), persistent(file = "v.db");
container t_hashavl of item = top2ds_qualify[hash(key = id)[avl(key = score)[malloc[transient]]]];
container j_qualify of item = qualify[top2ds[dlist[array[journal[persistent]]]]]
    with persistent(file = "vj.db");
container x_hash of item = top2ds_qualify[hash[malloc[mapped]]]
    with hash(key = id), mapped(file = "vm.db");
container a_btree of item = top2ds_qualify[hash(key = id)[btree(key = score, node = 96)[array[persistent]]]]
    with persistent(file = "v.db");
container m_btree of item = top2ds_qualify[btree(key = name, node = 128)[malloc[persistent]]]
    with persistent(file = "v.db");
"""
CONTAINERS = ["a_hash", "a_avl", "a_hashavl", "i_hash", "i_odlist", "m_hash", "m_avl",
              "m_dlist", "m_odlist", "q", "d_hash", "t_hashavl", "j_qualify", "x_hash",
              "a_btree", "m_btree"]


def san_env() -> dict:
    env = dict(os.environ)
    # exit codes apart from the checker's own 0 / 1 / 2
    env["ASAN_OPTIONS"] = "detect_leaks=0:abort_on_error=0:exitcode=86"
    env["UBSAN_OPTIONS"] = "halt_on_error=1:print_stacktrace=1:exitcode=87"
    return env


# ---------------------------------------------------------------------------
# building
# ---------------------------------------------------------------------------
def _links_driver(cache: Path, cc: str) -> str:
    from p2gen.build import generate
    flags = ["-std=c11", "-O0", "-g0", "-Wall", "-Wextra", "-Werror"]
    key = hashlib.sha256("\0".join([sources_digest(), cc, LINKS_SPEC.read_text(),
                                    DRIVER.read_text()]).encode()).hexdigest()[:20]
    out = cache / f"links-{key}"
    exe = out / "links_driver"
    if exe.exists():
        return str(exe)
    out.mkdir(parents=True, exist_ok=True)
    spec = out / "links_persistent.p2"
    shutil.copy(LINKS_SPEC, spec)
    gen = generate(str(spec), str(out), "links_persistent")
    cmd = [*shlex.split(cc), *flags, "-DPREFIX=links_persistent",
           '-DHEADER="links_persistent.h"', "-I", str(out), str(DRIVER), gen.source,
           runtime_obj(cc, flags), "-o", f"{exe}.tmp"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    os.replace(f"{exe}.tmp", exe)
    return str(exe)


@pytest.fixture(scope="session")
def tools(request, tmp_path_factory, cc, harness_builder):
    """Harness of SPEC, links driver, and the sanitized checkers of both specs."""
    from p2gen.verify import build_verifier
    cache = getattr(request.config, "cache", None)
    root = (Path(cache.mkdir("p2gen-verify")) if cache is not None
            and os.environ.get("P2GEN_TEST_NO_CACHE") != "1" else tmp_path_factory.mktemp("verify"))
    # one pytest-xdist worker prunes and builds at a time; a run's entries (four) are the
    # newest, so pruning never removes one in use
    with cache_lock(root):
        entries = sorted((d for d in root.iterdir() if d.is_dir() and d.name != "specs"),
                         key=lambda d: d.stat().st_mtime, reverse=True)
        for old in entries[8:]:
            shutil.rmtree(old, ignore_errors=True)
        specs = root / "specs"
        specs.mkdir(exist_ok=True)
        vspec = specs / "vall.p2"
        if not vspec.exists() or vspec.read_text() != SPEC:   # other workers may be reading it
            vspec.write_text(SPEC)
        with ThreadPoolExecutor(max_workers=4) as pool:
            harness = pool.submit(harness_builder, SPEC, "vall", opt=SAN_QUICK_OPT)
            driver = pool.submit(_links_driver, root, cc)
            vcheck = pool.submit(build_verifier, str(vspec), str(root), None, cc, True, SAN_QUICK_FLAGS)
            lcheck = pool.submit(build_verifier, str(LINKS_SPEC), str(root), None, cc, True, SAN_QUICK_FLAGS)
            out = {"harness": harness.result().exe, "driver": driver.result(),
                   "vall": vcheck.result(), "links": lcheck.result(), "spec": str(vspec),
                   "cache": str(root)}
        for built in (out["driver"], out["vall"], out["links"]):
            os.utime(Path(built).parent)    # recently used: what the pruning above keeps
        return out


# ---------------------------------------------------------------------------
# the two databases
# ---------------------------------------------------------------------------
def _vall_commands(seed: int = 1) -> list:
    rnd = random.Random(seed)
    cmds = ["open ."]
    for c in CONTAINERS:
        for i in range(36):
            cmds.append(f'insert {c} {i} {rnd.randint(-6, 6)} "n{rnd.randint(0, 25)}"')
        for i in range(0, 36, 4):
            cmds.append(f"delete {c} id {i}")
        for i in range(1, 36, 7):   # key updates relink the indexes
            cmds.append(f"update {c} id {i} score {rnd.randint(-9, 9)}")
        cmds.append(f"update {c} id 2 name \"zz{rnd.randint(0, 9)}\"")
    cmds.append("close")
    return cmds


class Driver:
    """The links driver over a pipe, one command at a time."""

    def __init__(self, exe: str, d: Path):
        self.p = subprocess.Popen([exe, str(d)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True, bufsize=1)

    def __call__(self, line: str) -> str:
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        return self.p.stdout.readline().strip()

    def close(self) -> int:
        self.p.stdin.close()
        return self.p.wait(timeout=60)


def _links_db(exe: str, d: Path, seed: int = 2) -> None:
    rnd = random.Random(seed)
    drv = Driver(exe, d)

    def ins(*args):
        out = drv("ins " + " ".join(map(str, args)))
        assert out.startswith("ok "), out
        return int(out.split()[1])

    comps = [ins("comps", i, "N") for i in range(10)]
    atoms = [ins("atoms", i, i * 3) for i in range(24)]
    conns = [ins("conns", i) for i in range(30)]
    for a in atoms:
        assert drv(f"add comps parts {rnd.choice(comps)} {a}") == "rc 0"
    for c in conns:
        assert drv(f"add atoms to {rnd.choice(atoms)} {c}") == "rc 0"
        assert drv(f"add atoms from {rnd.choice(atoms)} {c}") == "rc 0"
    for _ in range(25):    # a bag: repeats allowed, self-links too
        assert drv(f"add comps users {rnd.choice(comps)} {rnd.choice(comps)}") == "rc 0"
    for c, a in zip(comps[:6], rnd.sample(atoms, 6)):
        assert drv(f"set comps twin {c} {a}") == "rc 0"
    for a in atoms[1:12]:
        assert drv(f"add atoms kids {atoms[0]} {a}") == "rc 0"
    for i, c in enumerate(comps):
        assert drv(f"settext {c} {5 + 7 * i} {2 * i}") == "rc 0"
    for c in comps[:5]:
        assert drv(f"setroot {c} {rnd.choice(atoms)}") == "rc 0"
    for a in atoms[18:21]:
        assert drv(f"del atoms {a}") == "rc 0"
    assert drv(f"del comps {comps[-1]}") == "rc 0"
    assert drv(f"del conns {conns[3]}") == "rc 0"
    assert drv.close() == 0


@pytest.fixture(scope="session")
def dbs(tools, tmp_path_factory):
    from p2gen.harness import run_harness
    base = tmp_path_factory.mktemp("verify-dbs")
    vdir = base / "vall"
    vdir.mkdir()
    proc = run_harness(tools["harness"], _vall_commands(), cwd=str(vdir))
    assert proc.returncode == 0 and "bug" not in proc.stdout, proc.stdout + proc.stderr
    ldir = base / "links"
    ldir.mkdir()
    _links_db(tools["driver"], ldir)
    return {"vall": (tools["vall"], vdir, "v.db"), "links": (tools["links"], ldir, "links.db")}


def check(exe: str, d: Path, *args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([exe, str(d), *args], capture_output=True, text=True,
                          errors="replace", env=san_env(), timeout=120)
    out = proc.stdout + proc.stderr
    assert not any(m in out for m in SAN_MARKERS), out[-4000:]
    assert proc.returncode in (0, 1, 2), (proc.returncode, out[-4000:])
    if proc.returncode == 2:
        assert "cannot open:" in proc.stderr, out
    return proc


def byte_map(exe: str, d: Path) -> list:
    """[(cls, off, len, what)] of the checker's --map in file 0 (v.db, links.db: the file
    the corruptions go into)."""
    proc = check(exe, d, "--map")
    assert proc.returncode == 0, proc.stderr
    out = []
    for line in proc.stdout.splitlines():
        cls, f, off, ln, what = line.split(" ", 4)
        if f == "0":
            out.append((cls, int(off), int(ln), what))
    assert out, proc.stdout
    return out


def copy_db(src: Path, dst: Path) -> Path:
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst)
    return dst


def patch(path: Path, off: int, data: bytes) -> None:
    with open(path, "r+b") as f:
        f.seek(off)
        f.write(data)


def read(path: Path, off: int, n: int) -> bytes:
    with open(path, "rb") as f:
        f.seek(off)
        return f.read(n)


def test_specs_cover_every_layer():
    """Every registered layer stands in SPEC, the links schema or test_wal's spec, so its integrity check
    (or, for a memory layer, the check over its memory) runs on clean and corrupted files."""
    from p2gen.check import check as check_spec
    from p2gen.layers import LAYERS
    from p2gen.parser import parse
    from test_wal import SPEC as WAL_SPEC   # the record log's check runs in test_wal.py
    used = set()                             # (a spec's transactions come from one layer)
    for text, name in ((SPEC, "vall"), (LINKS_SPEC.read_text(), "links_persistent"),
                       (WAL_SPEC, "wl")):
        checked = check_spec(parse(text, f"{name}.p2"), name)
        used |= {li.name for info in checked.containers for li in info.chain}
        used |= {ri.layer.name for ri in checked.relationships}
    for name in LAYERS:
        if getattr(LAYERS[name], "file_is_uri", False):   # on a server: tests/layers/test_pageserver.py
            continue                   # checks a damaged server image is refused
        assert name in used, (f"layer '{name}' is in no container or relationship the "
                              f"integrity-check tests build: add one to SPEC in "
                              f"tests/runtime/test_verify.py")


# ---------------------------------------------------------------------------
# (a) clean databases
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["vall", "links"])
def test_clean_database_verifies_clean(dbs, name):
    exe, d, _ = dbs[name]
    proc = check(exe, d)
    assert proc.returncode == 0, proc.stdout
    assert proc.stdout.strip() == f"ok: {d}"
    # the check reads only: a second run agrees
    assert check(exe, d).returncode == 0


def test_cli_verify(tools, dbs, tmp_path):
    exe, d, _ = dbs["vall"]
    cli = [sys.executable, "-m", "p2gen.cli", "verify", tools["spec"], "--build-dir",
           tools["cache"], "--sanitize"]
    env = san_env()
    proc = subprocess.run(cli + ["--dir", str(d)], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ok:" in proc.stdout
    # a missing database is "cannot open" (2), not a new empty file
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = subprocess.run(cli + ["--dir", str(empty)], capture_output=True, text=True, env=env)
    assert proc.returncode == 2 and "no such database file" in proc.stderr, proc.stderr
    assert not (empty / "v.db").exists()
    # problems: exit 1, the report on stdout
    bad = copy_db(d, tmp_path / "bad")
    cls, off, ln, what = next(r for r in byte_map(exe, d) if r[3].startswith("a_avl element _avl_left"))
    patch(bad / "v.db", off, b"\x77" * ln)
    proc = subprocess.run(cli + ["--dir", str(bad)], capture_output=True, text=True, env=env)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "container a_avl, layer avl" in proc.stdout
    assert re.search(r"\d+ problems? in ", proc.stdout)
    # a file that is not a database: the open refusal is printed
    notdb = tmp_path / "notdb"
    notdb.mkdir()
    (notdb / "v.db").write_bytes(b"hello" * 2000)
    for other in [*d.glob("vj.db*"), *d.glob("vm.db*")]:   # the other files of the spec are fine
        shutil.copy(other, notdb / other.name)
    proc = subprocess.run(cli + ["--dir", str(notdb)], capture_output=True, text=True, env=env)
    assert proc.returncode == 2 and "cannot open:" in proc.stderr and "p2gen" in proc.stderr


def test_cli_bad_spec(tmp_path):
    spec = tmp_path / "bad.p2"
    spec.write_text("record r { a: i32; }\ncontainer c of r = hash[persistent];\n")
    proc = subprocess.run([sys.executable, "-m", "p2gen.cli", "verify", str(spec),
                           "--build-dir", str(tmp_path / "cache")], capture_output=True, text=True)
    assert proc.returncode == 3 and "error" in proc.stderr


# ---------------------------------------------------------------------------
# (b) targeted corruptions
# ---------------------------------------------------------------------------
LIVE32 = (0xFFFFFFFE).to_bytes(4, "little")
NIL = b"\xff" * 8

# (database, map entry prefix, how to corrupt it, expected message part)
TARGETS = [
    ("vall", "a_hash element _hash_next", "xor", "container a_hash, layer hash"),
    ("vall", "m_hash element _hash_next", "nil", "container m_hash, layer hash"),
    ("vall", "a_avl element _avl_left", "xor", "container a_avl, layer avl"),
    ("vall", "a_hashavl element _avl_right", "nil", "container a_hashavl, layer avl"),
    ("vall", "m_avl element _avl_height", "xor", "container m_avl, layer avl"),
    ("vall", "a_avl element _avl_parent", "xor", "container a_avl, layer avl"),
    ("vall", "m_avl element _avl_parent", "nil", "container m_avl, layer avl"),
    ("vall", "a_avl slot _array_next_free", "unlive", "container a_avl, layer array"),
    ("vall", "i_hash slot _iarray_valid", "zero", "container i_hash, layer iarray"),
    ("vall", "i_hash slot key", "xor", "container i_hash, layer iarray"),
    ("vall", "i_odlist empty slot", "xor", "container i_odlist, layer iarray"),
    ("vall", "m_dlist element _dlist_next", "xor", "container m_dlist, layer dlist"),
    ("vall", "m_dlist element _dlist_prev", "nil", "container m_dlist, layer dlist"),
    ("vall", "m_odlist element _odlist_next", "nil", "container m_odlist, layer odlist"),
    ("vall", "i_odlist element _odlist_prev", "xor", "container i_odlist, layer odlist"),
    ("vall", "m_hash element _malloc_magic", "xor", "container m_hash, layer malloc"),
    ("vall", "m_avl element _malloc_next", "xor", "container m_avl, layer malloc"),
    ("vall", "q slot past the end", "xor", "container q, layer qsort"),
    ("vall", "q key column", "xor", "container q, layer qsort"),
    ("vall", "d_hash element _delflag_deleted", "xor", "container d_hash, layer delflag"),
    ("vall", "a_hash hash_buckets", "xor", "container a_hash, layer hash"),
    ("links", "atoms references _outgoing_to_vec", "xor", "layer refarray (relationship outgoing)"),
    ("links", "comps references _bag_users_vec", "xor", "layer refarray (relationship bag)"),
    ("links", "comps element _bag_used_by_len", "xor", "layer refarray (relationship bag)"),
    ("links", "conns element _outgoing_from", "xor", "layer refarray (relationship outgoing)"),
    ("links", "atoms element _twin_twin_of", "xor", "layer refarray (relationship twin)"),
    ("links", "atoms element _parts_owner", "xor", "layer ilist (relationship parts)"),
    ("links", "comps element _parts_head", "xor", "layer ilist (relationship parts)"),
    ("links", "atoms element _tree_next", "xor", "layer ilist (relationship tree)"),
    ("links", "conns element _incoming_prev", "xor", "layer ilist (relationship incoming)"),
    ("links", "comps element _parts_count", "xor", "layer ilist (relationship parts)"),
    ("links", "comps text handle doc", "len", "container comps, text doc"),
    ("links", "comps text handle doc", "mref", "container comps, text doc"),
    ("links", "atoms element _hash_next", "xor", "container atoms, layer hash"),
    ("links", "conns slot _array_next_free", "unlive", "container conns, layer array"),
]


@pytest.mark.parametrize("db,entry,how,expect", TARGETS,
                         ids=[f"{t[0]}-{t[1].replace(' ', '-')}-{t[2]}" for t in TARGETS])
def test_targeted_corruption_is_reported(dbs, tmp_path, db, entry, how, expect):
    exe, d, fname = dbs[db]
    rnd = random.Random(entry + how)
    rows = [r for r in byte_map(exe, d) if r[3] == entry or r[3].startswith(entry + " ")]
    assert rows, f"no {entry!r} in the map"
    path = copy_db(d, tmp_path / "db") / fname
    if how == "unlive":   # a live slot's flag
        rows = [r for r in rows if read(path, r[1], 4) == LIVE32]
    elif how == "nil":    # a link that is set: cut it
        rows = [r for r in rows if read(path, r[1], 8) != NIL]
    elif how in ("len", "mref"):
        rows = [r for r in rows if read(path, r[1] + 8, 8) != bytes(8)]   # a text
    assert rows, f"no candidate {entry!r} for {how}"
    cls, off, ln, what = rnd.choice(rows)
    if how == "xor":
        at = off + rnd.randrange(ln)
        patch(path, at, bytes([read(path, at, 1)[0] ^ rnd.randrange(1, 256)]))
    elif how == "nil":
        patch(path, off, NIL)
    elif how == "unlive":
        patch(path, off, b"\x00" * 4)
    elif how == "zero":
        patch(path, off, b"\x00" * ln)
    elif how == "len":    # far longer than its block
        length = int.from_bytes(read(path, off + 8, 8), "little")
        patch(path, off + 8, (length | (1 << 30)).to_bytes(8, "little"))
    elif how == "mref":   # into the header
        patch(path, off, (64).to_bytes(8, "little"))
    proc = check(exe, path.parent)
    assert proc.returncode in (1, 2), f"{what} at {off}: not reported\n{proc.stdout}"
    if proc.returncode == 1:
        assert expect in proc.stdout, proc.stdout
    else:   # refused at open: only for root blocks (their checksum), which no target is
        pytest.fail(f"open refused: {proc.stderr}")


# btree nodes are blocks of the memory, outside the elements and the map: the targets are
# found from the root's reference to the root node (an inner node: small nodes make the
# tree several levels deep), the first leaf below it, and the node layout
# (layers/btree.py, Geometry.layout).
BTREE_TARGETS = [
    ("root level", "inner", "level", "zero"),
    ("root separators", "inner", "n", "zero"),
    ("root child link", "inner", "child", "xor"),
    ("root separator key", "inner", "key", "xor"),
    ("leaf next link", "leaf", "next", "xor"),
    ("leaf back link", "leaf", "prev", "xor"),
    ("leaf reference", "leaf", "ref", "xor"),
    ("leaf key copy", "leaf", "key", "xor"),
    ("leaf count", "leaf", "n", "big"),
]


@pytest.mark.parametrize("what,node,field,how", BTREE_TARGETS, ids=[t[0].replace(" ", "-") for t in BTREE_TARGETS])
def test_btree_node_corruption_is_reported(dbs, tmp_path, what, node, field, how):
    from p2gen.build import load
    from p2gen.layers.btree import geometry
    exe, d, fname = dbs["vall"]
    info = next(c for c in load(_vall_spec(tmp_path)).containers if c.name == "a_btree")
    g = geometry(next(li for li in info.ds if li.name == "btree"))
    fields = {r[3]: (r[1], r[2]) for r in byte_map(exe, d) if r[3].startswith("a_btree root btree_")}
    path = copy_db(d, tmp_path / "db") / fname
    root = int.from_bytes(read(path, *fields["a_btree root btree_root"]), "little")
    height = int.from_bytes(read(path, *fields["a_btree root btree_height"]), "little")
    assert height >= 2, f"expected an inner root, not {height} levels"
    lay = g.layout(inner=True)
    assert int.from_bytes(read(path, root + lay["level"], 2), "little") == height - 1
    at = root
    if node == "leaf":    # the first leaf: down the first children
        for _ in range(height - 1):
            at = int.from_bytes(read(path, at + lay["child"], g.link), "little")
        lay = g.layout(inner=False)
        assert int.from_bytes(read(path, at + lay["level"], 2), "little") == 0
    pos = at + lay[field]
    size = {"level": 2, "n": 2, "key": g.key_size}.get(field, g.link)
    if field == "prev":   # the second leaf's back link: the first leaf has none
        at = int.from_bytes(read(path, at + lay["next"], g.link), "little")
        pos = at + lay["prev"]
    if how == "zero":
        patch(path, pos, bytes(size))
    elif how == "big":
        patch(path, pos, (g.leaf_cap + 1).to_bytes(2, "little"))
    else:
        patch(path, pos, bytes([read(path, pos, 1)[0] ^ 0x5A]))
    proc = check(exe, path.parent)
    assert proc.returncode == 1, f"{what}: not reported\n{proc.stdout}{proc.stderr}"
    assert "container a_btree, layer btree" in proc.stdout, proc.stdout


def _vall_spec(tmp_path: Path) -> str:
    p = tmp_path / "vall.p2"
    p.write_text(SPEC)
    return str(p)


# ---------------------------------------------------------------------------
# (c) random corruption
# ---------------------------------------------------------------------------
def _classify(rows: list) -> dict:
    cls_of = {}
    for cls, off, ln, _ in rows:
        for b in range(off, off + ln):
            if cls == "L" or b not in cls_of:
                cls_of[b] = cls
    return cls_of


def test_random_corruption(dbs, tmp_path, capsys):
    """FLIPS one-byte corruptions across both databases, each checked by the sanitized
    checker in a fresh process; half the flips land anywhere in the data area, half in
    bytes of class L (which must always be reported)."""
    rnd = random.Random(20240)
    plans = []
    per_db = {"vall": FLIPS * 3 // 5, "links": FLIPS - FLIPS * 3 // 5}
    ctx = {}
    for name, n in per_db.items():
        exe, d, fname = dbs[name]
        data = (d / fname).read_bytes()
        brk = int.from_bytes(data[40:48], "little")
        assert HEADER < brk <= len(data)
        rows = byte_map(exe, d)
        cls_of = _classify(rows)
        critical = sorted(b for b, c in cls_of.items() if c == "L")
        ctx[name] = (exe, data, fname, cls_of, [o for o in d.iterdir() if o.name != fname])
        for i in range(n):
            off = rnd.choice(critical) if i % 2 else rnd.randrange(HEADER, brk)
            plans.append((name, off, rnd.randrange(1, 256)))

    def run(job):
        i, (name, off, mask) = job
        exe, data, fname, cls_of, others = ctx[name]
        d = tmp_path / f"f{i}"
        d.mkdir()
        b = bytearray(data)
        b[off] ^= mask
        (d / fname).write_bytes(bytes(b))
        for other in others:                 # the spec's other files, intact
            shutil.copy(other, d / other.name)
        proc = check(exe, d)   # asserts: no sanitizer report, exit 0 / 1 / 2
        shutil.rmtree(d)
        return name, off, mask, cls_of.get(off, "-"), proc.returncode, proc.stdout

    with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 2)) as pool:
        results = list(pool.map(run, enumerate(plans)))

    table = {}
    missed = []
    for name, off, mask, cls, rc, out in results:
        row = table.setdefault((name, cls), [0, 0, 0])   # flips, reported, refused at open
        row[0] += 1
        row[1] += rc == 1
        row[2] += rc == 2
        if cls == "L" and rc == 0:
            missed.append((name, off, hex(mask)))
    with capsys.disabled():
        print(f"\nrandom corruption: {len(results)} one-byte flips "
              "(class L: links/flags/counts, must be caught; O: block references, capacities, "
              "text handles; -: record data and free space)")
        for (name, cls), (n, rep, ref) in sorted(table.items()):
            print(f"  {name:6} class {cls}: {n:4} flips, {rep:4} reported, {ref:3} refused at "
                  f"open, detection {100.0 * (rep + ref) / n:5.1f}%")
    assert not missed, f"flips in class L bytes not reported: {missed[:10]}"
    assert sum(r[0] for k, r in table.items() if k[1] == "L") >= FLIPS // 2
