"""Files from elsewhere: a damaged or crafted database
file may be refused or give wrong answers, but never makes an ordinary call read or write
outside the file's mapping, crash, hang, or fill the disk.

The databases are those of tests/runtime/test_verify.py (its `tools` and `dbs` fixtures): "vall"
(every storage layer under every index layer, in one file, driven by the command harness)
and "links" (relationships of every multiplicity, texts, malloc storage; driven by
tests/c/links_driver.c, built here with ASan/UBSan). Crafted files get their checksums
recomputed (`reseal`): an attacker can do that, so nothing here leans on them.

- an existing empty file is refused, a missing one is created;
- a file made by another spec names the spec and equations that made it;
- crafted counts (2^63) and link words are refused at open (P2_EFORMAT, saying what is
  wrong), and the file does not grow;
- `verify` checks the allocator's free lists: out of bounds, cycles, and blocks in use;
- fuzz: mutated files (random byte flips anywhere or in record data, crafted link words,
  crafted free-list heads)
  go through the ordinary API (find, cursor walks, insert, delete, update, relationship
  traversal) under ASan/UBSan; pass = no sanitizer report, no signal, no hang.
  FUZZ_FILES mutated files in CI (seeded); P2GEN_SOAK=1 multiplies them by 20.
"""
from __future__ import annotations

import os
import random
import re
import shutil
import struct
import subprocess
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import SAN_QUICK_OPT, build_san_program, cache_lock, sources_digest
from test_verify import (CONTAINERS, LINKS_SPEC, DRIVER, SAN_MARKERS, byte_map, check,  # noqa: F401
                         copy_db, dbs, patch, read, tools)

HEADER = 4096
SOAK = os.environ.get("P2GEN_SOAK", "") not in ("", "0")
FUZZ_FILES = 160 * (20 if SOAK else 1)
TIMEOUT = 30          # seconds per mutated file: a hang fails


# ---------------------------------------------------------------------------
# file surgery
# ---------------------------------------------------------------------------
def reseal(path: Path) -> None:
    """Recompute the roots checksum and the header checksum, as a crafter would."""
    data = bytearray(path.read_bytes())
    nroots = struct.unpack_from("<I", data, 120)[0]
    if struct.unpack_from("<I", data, 132)[0]:           # roots_sealed
        crc = 0
        for i in range(min(nroots, 60)):
            off, size = struct.unpack_from("<QQ", data, 256 + 64 * i + 48)
            crc = zlib.crc32(bytes(data[off:off + size]), crc)
        struct.pack_into("<I", data, 136, crc)
    struct.pack_into("<I", data, 124, 0)
    struct.pack_into("<I", data, 124, zlib.crc32(bytes(data[:HEADER])))
    path.write_bytes(bytes(data))


def root_fields(exe: str, d: Path) -> dict:
    """{'a_hash root _array_hwm': (off, len), ...} from the checker's map."""
    return {what: (off, ln) for cls, off, ln, what in byte_map(exe, d) if " root " in what}


def harness(tools_, d: Path, *lines: str, env=None) -> subprocess.CompletedProcess:
    from p2gen.harness import run_harness, sanitizer_env
    proc = run_harness(tools_["harness"], list(lines), cwd=str(d),
                       env=env or sanitizer_env(), timeout=TIMEOUT)
    out = proc.stdout + proc.stderr
    assert not any(m in out for m in SAN_MARKERS), out[-4000:]
    assert proc.returncode >= 0, f"killed by signal {-proc.returncode}\n{out[-4000:]}"
    return proc


# ---------------------------------------------------------------------------
# item 14: empty files, and which spec made a file
# ---------------------------------------------------------------------------
def test_empty_file_is_refused_missing_file_created(tools, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "v.db").write_bytes(b"")
    proc = harness(tools, empty, "open .", "count a_hash", "insert a_hash 1 2 \"x\"", "close")
    first = proc.stdout.splitlines()[0]
    assert first.startswith("err EFORMAT") and "not a p2gen database: empty" in first, proc.stdout
    assert (empty / "v.db").stat().st_size == 0      # left as it was, not made a database
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    proc = harness(tools, fresh, "open .", "insert a_hash 1 2 \"x\"", "count a_hash", "close")
    assert proc.stdout.splitlines()[:3] == ["ok", "ok", "count 1"], proc.stdout
    assert (fresh / "v.db").stat().st_size > HEADER


OTHER_SPEC = """
record item { id: u32; score: i32; name: char[8]; }
container a_hash of item = top2ds_qualify[avl[array[persistent]]]
    with avl(key = id), persistent(file = "v.db");
"""


def test_mismatch_names_the_spec_that_made_the_file(tools, dbs, harness_builder, tmp_path):
    other = harness_builder(OTHER_SPEC, "other", opt=SAN_QUICK_OPT)
    _, d, _ = dbs["vall"]
    db = copy_db(d, tmp_path / "db")
    proc = harness({"harness": other.exe}, db, "open .")
    line = proc.stdout.splitlines()[0]
    assert line.startswith("err EMISMATCH"), line
    # what made the file (stored in its header at creation), then what this program wants
    assert 'the file was made by "spec vall.p2: a_hash = top2ds_qualify[hash' in line, line
    assert 'this program expects "spec other.p2: a_hash = top2ds_qualify[avl' in line, line
    # a file from before the description was stored (or with it wiped): said so, no garbage
    data = bytearray((db / "v.db").read_bytes())
    data[152:248] = bytes(96)
    (db / "v.db").write_bytes(bytes(data))
    reseal(db / "v.db")
    line = harness({"harness": other.exe}, db, "open .").stdout.splitlines()[0]
    assert "a program that did not record its spec" in line, line
    # a crafted description: control bytes are not printed
    data = bytearray((db / "v.db").read_bytes())
    evil = b"\x1b[31mevil\x07\x00"
    data[152:152 + len(evil)] = evil      # in place: the rest of the header stays where it is
    (db / "v.db").write_bytes(bytes(data))
    reseal(db / "v.db")
    line = harness({"harness": other.exe}, db, "open .").stdout.splitlines()[0]
    assert '"?[31mevil?"' in line and "\x1b" not in line, line


# ---------------------------------------------------------------------------
# item 8: crafted counts
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("field,value,expect", [
    ("a_hash root array_count", 1 << 63, "count"),
    ("a_hash root array_hwm", 1 << 63, "high-water mark"),
    ("a_hash root array_cap", 1 << 63, "slot block"),
    ("q root qsort_count", 1 << 63, "count"),
    ("i_hash root iarray_cap", 1 << 63, "slot block"),
    ("m_dlist root malloc_count", 1 << 63, "count"),
    ("a_hash root hash_nbuckets", 1 << 63, "bucket block"),
    ("a_hash root hash_count", 1 << 63, "count"),
])
def test_crafted_count_is_refused_and_file_does_not_grow(tools, dbs, tmp_path, field, value, expect):
    exe, d, fname = dbs["vall"]
    roots = root_fields(exe, d)
    assert field in roots, sorted(roots)
    off, ln = roots[field]
    db = copy_db(d, tmp_path / "db")
    if ln == 4:
        value = 0xFFFFFFF0 if value >= 1 << 32 else value   # the largest a u32 field holds
    patch(db / fname, off, value.to_bytes(ln, "little"))
    reseal(db / fname)
    size = (db / fname).stat().st_size
    c = field.split()[0]
    proc = harness(tools, db, "open .", f'insert {c} 1000 1 "x"', f'insert {c} 1001 2 "y"',
                   f"all {c}", "close")
    first = proc.stdout.splitlines()[0]
    assert first.startswith("err EFORMAT") and "corrupt" in first, proc.stdout
    assert f"container {c}" in first and expect in first, first
    assert (db / fname).stat().st_size == size


@pytest.mark.parametrize("count,cycle", [
    ("a_hash root array_count", "a_hash element _hash_next"),
    ("i_odlist root iarray_count", "i_odlist element _odlist_next"),
    ("m_dlist root malloc_count", "m_dlist element _dlist_next"),
])
def test_crafted_count_and_cycle_end_quickly(tools, dbs, tmp_path, count, cycle):
    """A count near 2^32 (2^63 for malloc) bounds the walks above the storage: with a
    crafted cycle among the elements, the walk at open must still end at once."""
    exe, d, fname = dbs["vall"]
    rows = byte_map(exe, d)
    db = copy_db(d, tmp_path / "db")
    off, ln = root_fields(exe, d)[count]
    patch(db / fname, off, ((1 << 63) if ln == 8 else 0xFFFFFFF0).to_bytes(ln, "little"))
    links = [r for r in rows if r[3] == cycle and read(db / fname, r[1], 8) != b"\xff" * 8]
    for cls, at, n, what in links:        # every link points back at the first element's target
        patch(db / fname, at, read(db / fname, links[0][1], 8))
    reseal(db / fname)
    proc = harness(tools, db, "open .", f"all {count.split()[0]}", "close")
    assert proc.stdout.startswith("err EFORMAT"), proc.stdout[:500]


def test_verify_open_false_skips_the_walk(tools, dbs, harness_builder, tmp_path):
    """persistent(verify_open = false): a trusted file is not walked at open (O(1) open);
    the damage is then only found by verify. The spec's other file (vj.db, verified at
    open) is walked on its own: trusting one file does not walk it because another is not
    trusted."""
    exe, d, fname = dbs["vall"]
    trusted = harness_builder(
        open(tools["spec"]).read().replace('persistent(file = "v.db")',
                                           'persistent(file = "v.db", verify_open = false)'),
        "vall", opt=SAN_QUICK_OPT)
    db = copy_db(d, tmp_path / "db")
    off, ln = root_fields(exe, d)["a_hash root hash_count"]
    patch(db / fname, off, (5).to_bytes(ln, "little"))
    reseal(db / fname)
    assert harness(tools, db, "open .").stdout.startswith("err EFORMAT")
    proc = harness({"harness": trusted.exe}, db, "open .", "verify", "close")
    lines = proc.stdout.splitlines()
    assert lines[0] == "ok" and "layer hash: count says 5" in proc.stdout, proc.stdout


# ---------------------------------------------------------------------------
# item 6: crafted link words
# ---------------------------------------------------------------------------
LINKS = [   # (map entry, the value written)
    ("m_dlist element _dlist_next", 1 << 40),
    ("m_dlist element _dlist_prev", 0x10),
    ("a_hash element _hash_next", 0xFFFFFFF0),
    ("a_avl element _avl_left", 1 << 62),
    ("i_odlist element _odlist_next", 7),
    ("m_avl element _malloc_next", 1 << 40),
]


@pytest.mark.parametrize("entry,value", LINKS, ids=[e.split()[0] + e.split()[-1] for e, _ in LINKS])
def test_crafted_links_are_refused_not_followed(tools, dbs, tmp_path, entry, value):
    """Two link words of one element set to an attacker's values, then the ordinary API:
    before, a delete wrote outside the mapping; now the file is refused at open."""
    exe, d, fname = dbs["vall"]
    rows = [r for r in byte_map(exe, d) if r[3] == entry]
    db = copy_db(d, tmp_path / "db")
    rnd = random.Random(entry)
    live = [r for r in rows if read(db / fname, r[1], r[2]) != b"\xff" * r[2]]
    for cls, off, ln, what in rnd.sample(live, 2):
        patch(db / fname, off, (value & ((1 << (8 * ln)) - 1)).to_bytes(ln, "little"))
    reseal(db / fname)
    c = entry.split()[0]
    cmds = ["open ."] + [f"delete {c} id {i}" for i in range(36)] + [f"all {c}", "close"]
    proc = harness(tools, db, *cmds)
    first = proc.stdout.splitlines()[0]
    assert first.startswith("err EFORMAT") and f"container {c}" in first, proc.stdout[:2000]


# ---------------------------------------------------------------------------
# item 7: the allocator's free lists
# ---------------------------------------------------------------------------
def _free_heads(path: Path) -> list:
    data = path.read_bytes()
    return list(struct.unpack_from("<8Q", data, 48)) + [struct.unpack_from("<Q", data, 112)[0]]


def _elements(exe, d, entry):
    """Offsets inside the elements of a malloc container (its _malloc_magic words, rounded
    down to 16 bytes: inside the element's block)."""
    return sorted({off & ~15 for cls, off, ln, what in byte_map(exe, d) if what == entry})


def test_verify_reports_free_list_into_live_element(tools, dbs, tmp_path):
    """A small free list's head pointed at a live element: before, verify said 0 problems
    and the next inserts overwrote rows; now verify reports the overlap and open refuses."""
    exe, d, fname = dbs["vall"]
    heads = _free_heads(d / fname)
    elems = _elements(exe, d, "m_hash element _malloc_magic")
    assert elems
    db = copy_db(d, tmp_path / "db")
    # m_hash's elements are small blocks: find their class by trying each list
    for cls in range(8):
        patch(db / fname, 48 + 8 * cls, elems[3].to_bytes(8, "little"))
    reseal(db / fname)
    proc = check(tools["vall"], db)
    assert proc.returncode == 1, proc.stdout
    assert re.search(r"allocator: container m_hash, layer malloc: element at offset \d+ overlaps free"
                     r"|allocator: free \d+-byte block at offset \d+ overlaps container m_hash, layer "
                     r"malloc: element", proc.stdout), proc.stdout
    before = harness(tools, d, "open .", "all m_hash", "close").stdout
    proc = harness(tools, db, "open .", *[f'insert m_hash {100 + i} 1 "new"' for i in range(8)],
                   "all m_hash", "close")
    assert proc.stdout.startswith("err EFORMAT") and "allocator" in proc.stdout.splitlines()[0], proc.stdout
    assert "rec" in before   # the original has rows to lose


def test_verify_reports_free_list_link_inside_free_block(tools, dbs, tmp_path):
    """The link inside a free block (not the head) pointed at a live element."""
    exe, d, fname = dbs["vall"]
    heads = _free_heads(d / fname)
    small = [(c, h) for c, h in enumerate(heads[:8]) if h]
    assert small, heads
    elems = _elements(exe, d, "m_avl element _malloc_magic")
    db = copy_db(d, tmp_path / "db")
    c, h = small[0]
    patch(db / fname, h, elems[0].to_bytes(8, "little"))
    proc = check(tools["vall"], db)
    assert proc.returncode == 1 and "allocator" in proc.stdout, proc.stdout


@pytest.mark.parametrize("head", [8, 1 << 62, 4096 + 8, "cycle", "brk"])
def test_crafted_free_list_head(tools, dbs, tmp_path, head):
    """Heads out of the file, misaligned, into a cycle: reported, no crash (the checker
    and the ordinary API run under ASan/UBSan)."""
    exe, d, fname = dbs["vall"]
    db = copy_db(d, tmp_path / "db")
    path = db / fname
    heads = _free_heads(path)
    brk = struct.unpack_from("<Q", path.read_bytes(), 40)[0]
    if head == "cycle":
        c, h = next((c, h) for c, h in enumerate(heads[:8]) if h)
        patch(path, h, h.to_bytes(8, "little"))            # the block links to itself
    elif head == "brk":
        patch(path, 48, (brk - 16).to_bytes(8, "little"))  # last 16 bytes: maybe live
        patch(path, 48 + 8, (brk - 16).to_bytes(8, "little"))
    else:
        patch(path, 48 + 8 * 2, int(head).to_bytes(8, "little"))
    reseal(path)
    proc = check(tools["vall"], db)
    assert proc.returncode in (1, 2), proc.stdout
    out = harness(tools, db, "open .", *[f'insert m_hash {100 + i} 1 "new"' for i in range(40)], "close")
    assert out.stdout.startswith("err"), out.stdout[:500]


# ---------------------------------------------------------------------------
# fuzz: mutated files through the ordinary API
# ---------------------------------------------------------------------------
def _links_driver_san(cache: Path, cc: str) -> str:
    """tests/c/links_driver.c over links_persistent.p2, with ASan and UBSan."""
    from p2gen.build import generate
    import hashlib
    key = hashlib.sha256("\0".join([sources_digest(), cc, LINKS_SPEC.read_text(),
                                    DRIVER.read_text(), "san"]).encode()).hexdigest()[:20]
    out = cache / f"links-san-{key}"
    exe = out / "links_driver"
    if exe.exists():
        return str(exe)
    out.mkdir(parents=True, exist_ok=True)
    spec = out / "links_persistent.p2"
    shutil.copy(LINKS_SPEC, spec)
    gen = generate(str(spec), str(out), "links_persistent")
    build_san_program(cc, f"{exe}.tmp", [DRIVER, gen.source], out,
                      program_flags=["-DPREFIX=links_persistent", '-DHEADER="links_persistent.h"'])
    os.replace(f"{exe}.tmp", exe)
    return str(exe)


def _vall_ops(rnd: random.Random) -> list:
    ops = ["open ."]
    for c in CONTAINERS:
        ops += [f"count {c}", f"all {c}", f"find {c} id {rnd.randrange(40)}",
                f"find {c} score {rnd.randrange(-6, 7)}", f'insert {c} {rnd.randrange(30, 60)} 3 "f"',
                f"delete {c} id {rnd.randrange(36)}", f"update {c} id {rnd.randrange(36)} score 4",
                f"set {c} id {rnd.randrange(36)} name \"s\"", f"cdelete {c}.all 3",
                f"all {c}"]
    ops += ["close"]
    return ops


def _links_ops(rnd: random.Random) -> list:
    ops = ["dump"]
    for _ in range(6):
        r = rnd.randrange(4096, 1 << 16, 16)
        ops += [f"many comps parts {rnd.randrange(12)}", f"many atoms to {r}", f"many atoms kids {r}",
                f"many comps users {rnd.randrange(12)}", f"one atoms parent {r}",
                f"one comps twin {rnd.randrange(12)}", f"gettext {rnd.randrange(12)}",
                f"ins atoms {rnd.randrange(100, 200)} 1", f"del atoms {r}", f"del comps {rnd.randrange(12)}",
                f"walkdel comps parts {rnd.randrange(12)}", f"add atoms to {r} {rnd.randrange(30)}",
                f"settext {rnd.randrange(12)} 40 2", f"upd conns {rnd.randrange(30)} 5"]
    ops += ["dump", "reopen", "dump"]
    return ops


def _mutate(rnd: random.Random, path: Path, rows: list) -> str:
    """Damage the file at path; returns what was done."""
    data = bytearray(path.read_bytes())
    brk = struct.unpack_from("<Q", data, 40)[0]
    links = [r for r in rows if r[0] == "L"]
    kind = rnd.choice(["flip", "flip", "data", "link", "link", "link", "freelist"])
    done = []
    if kind == "data":      # bytes no structure check judges (records, free space): accepted
        judged = {b for cls, off, ln, _ in links for b in range(off, off + ln)}
        for _ in range(rnd.randint(1, 8)):
            at = rnd.randrange(HEADER, brk)
            if at not in judged:
                data[at] ^= rnd.randrange(1, 256)
                done.append(f"data@{at}")
    elif kind == "flip":
        for _ in range(rnd.randint(1, 4)):
            at = rnd.randrange(HEADER, brk)
            data[at] ^= rnd.randrange(1, 256)
            done.append(f"flip@{at}")
    elif kind == "link":
        for _ in range(rnd.randint(1, 2)):
            cls, off, ln, what = rnd.choice(links)
            value = rnd.choice([0, 1, 7, 0xFFFFFFFF, 0xFFFFFFFE, 1 << 31, 1 << 63, (1 << 64) - 1,
                                brk, brk - 16, len(data) + 4096, rnd.randrange(HEADER, brk, 16),
                                rnd.randrange(0, 64), rnd.getrandbits(64)])
            data[off:off + ln] = (value & ((1 << (8 * ln)) - 1)).to_bytes(ln, "little")
            done.append(f"{what}@{off}={value}")
    else:
        cls = rnd.randrange(9)
        value = rnd.choice([rnd.randrange(HEADER, brk, 16), rnd.randrange(HEADER, brk), 1 << 62, brk])
        struct.pack_into("<Q", data, 48 + 8 * cls, value)
        done.append(f"free[{cls}]={value}")
    path.write_bytes(bytes(data))
    if rnd.random() < 0.85:
        reseal(path)
        done.append("resealed")
    return " ".join(done)


def _fuzz_one(job) -> tuple:
    name, exe, src, fname, rows, seed, base = job
    from p2gen.harness import sanitizer_env
    rnd = random.Random(seed)
    d = copy_db(src, base / f"{name}-{seed}")
    what = _mutate(rnd, d / fname, rows)
    env = sanitizer_env()
    try:
        if name == "vall":
            text = "".join(line + "\n" for line in _vall_ops(rnd))
            proc = subprocess.run([exe], input=text, capture_output=True, text=True, cwd=str(d),
                                  errors="replace", env=env, timeout=TIMEOUT)
        else:
            text = "".join(line + "\n" for line in _links_ops(rnd))
            proc = subprocess.run([exe, str(d)], input=text, capture_output=True, text=True,
                                  errors="replace", env=env, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return (name, seed, what, "hang", "")
    out = proc.stdout + proc.stderr
    if any(m in out for m in SAN_MARKERS) or proc.returncode < 0:
        return (name, seed, what, f"crash (exit {proc.returncode})", out[-3000:])
    refused = proc.stdout.startswith("err EFORMAT") or "open: " in proc.stderr
    shutil.rmtree(d, ignore_errors=True)
    return (name, seed, what, "refused" if refused else "accepted", "")


def test_fuzz_mutated_files_through_the_api(tools, dbs, cc, tmp_path, capsys):
    """FUZZ_FILES mutated copies of both databases, each opened and used through the
    ordinary API in a fresh sanitized process."""
    with cache_lock(tools["cache"]):     # shared with other pytest-xdist workers
        driver = _links_driver_san(Path(tools["cache"]), cc)
        os.utime(Path(driver).parent)    # recently used: kept by the tools fixture's pruning
    jobs = []
    for i in range(FUZZ_FILES):
        name = "vall" if i % 2 == 0 else "links"
        exe_check, d, fname = dbs[name]
        jobs.append((name, tools["harness"] if name == "vall" else driver, d, fname, None,
                     7000 + i, tmp_path))
    maps = {n: byte_map(dbs[n][0], dbs[n][1]) for n in ("vall", "links")}
    jobs = [(n, e, d, f, maps[n], s, b) for n, e, d, f, _, s, b in jobs]
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(_fuzz_one, jobs))
    bad = [r for r in results if r[3] not in ("refused", "accepted")]
    tally = {}
    for r in results:
        tally[(r[0], r[3])] = tally.get((r[0], r[3]), 0) + 1
    with capsys.disabled():
        print(f"\nfuzz: {len(results)} mutated files: " +
              ", ".join(f"{k[0]} {k[1]} {v}" for k, v in sorted(tally.items())))
    assert not bad, "\n\n".join(f"{n} seed {s}: {w}: {o}\n{out}" for n, s, w, o, out in bad[:3])
