"""The file allocator's size classes, a parameter of the file memory layers:
`persistent(alloc = pow2)` (the default: blocks up to 2048 bytes rounded up to a power of
two, as Texas's segregated allocator did) and `persistent(alloc = exact)` (rounded to the
16-byte granule only). runtime/p2_runtime.h, section alloc; layers/README.md, "The memory
layers".

The built tests drive the generated public API of one spec (texts, malloc elements, the
refarray vectors of a many-to-many relationship) from tests/c/alloc_policy_driver.c,
compiled -Wall -Wextra -Werror under ASan/UBSan, and check every answer against a Python
model."""
from __future__ import annotations

import os
import random
import shlex
import struct
import subprocess
from pathlib import Path

import pytest

from p2gen.build import generate
from p2gen.check import check
from p2gen.errors import SpecError, SpecErrors
from conftest import SAN_QUICK_FLAGS, runtime_obj, san_quick_flags
from p2gen.parser import parse
from p2gen.plan import explain, plan

HERE = Path(__file__).resolve().parents[1]
DRIVER = HERE / "c" / "alloc_policy_driver.c"
BRK = 40          # the file header's end of the allocated area (runtime/p2_runtime.h)
EMISMATCH = 8

SPEC = """
record note { id: u32; k: i32; body: text; }
record tag  { n: u32; }
container notes of note
    = top2ds_qualify[hash(key = id, buckets = 64)[malloc[MEM]]];
container tags of tag
    = top2ds_qualify[hash(key = n, buckets = 16)[array(capacity = 4)[MEM]]];
relationship tagging many notes.tags to many tags.tagged = refarray(capacity = 1);
"""
MEMS = {
    "pow2": 'persistent(file = "a.db")',
    "exact": 'persistent(file = "a.db", alloc = exact)',
    "journal_exact": 'journal[persistent(file = "a.db", alloc = exact)]',
    "mapped_exact": 'mapped(file = "a.db", alloc = exact)',
    "wal_exact": 'wal[persistent(file = "a.db", alloc = exact)]',
    # every change the allocator makes in the class table announced (P2_WRITE_AUDIT)
    "audit_exact": 'persistent(file = "a.db", alloc = exact)',
}


def spec_text(kind: str) -> str:
    return SPEC.replace("MEM", MEMS[kind])


# ---------------------------------------------------------------------------
# the checker and explain (no C)
# ---------------------------------------------------------------------------
def errors_of(text):
    with pytest.raises((SpecError, SpecErrors)) as info:
        check(parse(text, "t.p2"), "t")
    err = info.value
    return err.errors if isinstance(err, SpecErrors) else [err]


REC = "record r { id: i32; v: i64; }\n"


@pytest.mark.parametrize("mem", ["persistent", "mapped"])
def test_bad_policy_refused_with_layer_and_position(mem):
    text = REC + f'container c of r = top2ds[array[{mem}(file = "a.db", alloc = tight)]];\n'
    errs = errors_of(text)
    err = next(e for e in errs if "alloc" in e.message)
    assert f"'{mem}'" in err.message and "pow2, exact" in err.message, err.message
    assert "tight" in err.message
    assert (err.pos.line, err.pos.col) == (2, text.splitlines()[1].index("tight") + 1), err.pos


def test_one_file_one_policy():
    text = (REC + 'container c of r = top2ds[array[persistent(file = "a.db", alloc = exact)]];\n'
            'container d of r = top2ds[array[persistent(file = "a.db")]];\n')
    msgs = [e.message for e in errors_of(text)]
    assert any("share file" in m and "allocator" in m and "alloc = exact" in m
               and "alloc = pow2" in m for m in msgs), msgs


def test_policy_is_part_of_the_fingerprint_and_explained():
    text = REC + 'container c of r = top2ds[array[persistent(file = "a.db"ALLOC)]];\n'
    fp = {}
    for name, alloc in (("default", ""), ("pow2", ", alloc = pow2"), ("exact", ", alloc = exact")):
        checked = plan(check(parse(text.replace("ALLOC", alloc), "t.p2"), "t"))
        fp[name] = checked.files[0].fingerprint
        said = explain(checked).splitlines()[0]
        want = "exact" if name == "exact" else "pow2"
        assert said.startswith(f"file a.db: allocator (alloc = {want})"), said
    assert fp["default"] == fp["pow2"] != fp["exact"]


def test_generated_header_and_file_description_say_exact(tmp_path):
    """The header of a spec with an exact file says so; the description recorded in the
    file (named when another program opens it) too. A pow2 spec's output says nothing."""
    for kind in ("pow2", "exact"):
        spec = tmp_path / f"h_{kind}.p2"
        spec.write_text(spec_text(kind))
        gen = generate(str(spec), str(tmp_path / kind), f"h_{kind}")
        header, source = Path(gen.header).read_text(), Path(gen.source).read_text()
        says = "Allocator of file a.db: exact size classes (alloc = exact)" in header
        recorded = f'"spec h_{kind}.p2 (alloc = exact): notes = ' in source
        assert says == recorded == (kind == "exact"), kind
        assert ("P2_SEG_EXACT_ROOT" in source) == (kind == "exact")


def test_exact_file_holds_one_container_fewer():
    # the class table takes a root of the header's 60
    decls = "".join(f'container c{i} of r = top2ds[array[persistent(file = "a.db"ALLOC)]];\n'
                    for i in range(60))
    check(parse(REC + decls.replace("ALLOC", ""), "t.p2"), "t")
    msgs = [e.message for e in errors_of(REC + decls.replace("ALLOC", ", alloc = exact"))]
    assert any("c59" in m and "class table" in m for m in msgs), msgs


# ---------------------------------------------------------------------------
# built: the driver over each memory
# ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def drivers(cc, tmp_path_factory):
    """kind -> path of the driver built over that memory (in parallel)."""
    root = tmp_path_factory.mktemp("allocp")
    procs, exes = {}, {}
    for kind in MEMS:
        prefix = f"ap_{kind}"
        out = root / kind
        out.mkdir()
        spec = out / f"{prefix}.p2"
        spec.write_text(spec_text(kind))
        gen = generate(str(spec), str(out), prefix)
        exe = out / "driver"
        # the other sanitized drivers' flags (and the write audit's, test_write_audit.py's)
        flags = san_quick_flags(*(["-DP2_WRITE_AUDIT"] if kind.startswith("audit") else []))
        cmd = [*shlex.split(cc), *flags, f"-DPFX={prefix}", f'-DHEADER="{prefix}.h"',
               *(["-DTXN"] if kind.startswith(("journal", "wal")) else []),
               "-I", str(out), "-o", str(exe), str(DRIVER), gen.source, runtime_obj(cc, flags)]
        procs[kind] = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                       text=True)
        exes[kind] = str(exe)
    for kind, p in procs.items():
        log, _ = p.communicate(timeout=600)
        assert p.returncode == 0, f"building the driver over {kind} failed:\n{log}"
    return exes


def run(exe, cmds, env):
    proc = subprocess.run([exe], input="".join(c + "\n" for c in cmds), capture_output=True,
                          text=True, env=env, timeout=300)
    assert "Sanitizer" not in proc.stderr and "runtime error" not in proc.stderr, proc.stderr
    assert proc.returncode == 0, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    return proc.stdout.splitlines()


def body(length: int, seed: int) -> str:
    """The body the driver makes from (length, seed)."""
    return "".join(chr(ord("a") + (seed * 7 + i * 13 + i // 5) % 26) for i in range(length))


# text lengths: many just above a power of two (what pow2 rounds up most), some large
def text_len(rng) -> int:
    r = rng.random()
    if r < 0.1:
        return 0
    if r < 0.7:
        return rng.choice([17, 33, 40, 65, 129, 200, 260, 300, 513, 700, 1030, 1500])
    if r < 0.9:
        return rng.randint(1, 2047)
    return rng.randint(2048, 9000)


class Model:
    def __init__(self):
        self.notes = {}       # id -> [k, body, tag multiset]

    def dump(self) -> list:
        out = []
        for nid, (k, b, tags) in sorted(self.notes.items()):
            out.append(" ".join([f"note {nid} {k} {len(b)} {b}"] + [str(t) for t in sorted(tags)]))
        return out


def random_session(rng, model, n_ops) -> list:
    """Commands for one open .. close, applied to the model as the driver will."""
    cmds = []
    for _ in range(n_ops):
        r = rng.random()
        ids = list(model.notes)
        if r < 0.35 or not ids:
            nid = rng.randrange(1 << 20)
            if nid in model.notes:
                continue
            n, seed, k = text_len(rng), rng.randrange(1000), rng.randrange(1 << 30)
            cmds.append(f"ins {nid} {k} {n} {seed}")
            model.notes[nid] = [k, body(n, seed), []]
        elif r < 0.65:
            nid = rng.choice(ids)
            n, seed = text_len(rng), rng.randrange(1000)
            cmds.append(f"set {nid} {n} {seed}")
            model.notes[nid][1] = body(n, seed)
        elif r < 0.75:
            nid = rng.choice(ids)
            cmds.append(f"del {nid}")
            del model.notes[nid]
        elif r < 0.93:
            nid = rng.choice(ids)
            t = rng.randrange(40)
            cmds.append(f"tag {nid} {t}")
            model.notes[nid][2].append(t)
        else:
            nid = rng.choice(ids)
            tags = model.notes[nid][2]
            if tags:
                t = rng.choice(tags)
                cmds.append(f"untag {nid} {t}")
                tags.remove(t)
    return cmds


def check_session(exe, env, d, cmds, model):
    out = run(exe, [f"open {d}", *cmds, "verify", "dump", "close"], env)
    assert all(line == "ok" for line in out[:len(cmds) + 2]), \
        next((c, line) for c, line in zip(["open"] + cmds + ["verify"], out) if line != "ok")
    got = sorted(out[len(cmds) + 2:-2], key=lambda line: int(line.split()[1]))
    assert out[-2:] == ["end", "ok"], out[-3:]
    assert got == model.dump()


@pytest.mark.parametrize("kind", list(MEMS))
def test_random_alloc_free_realloc_matches_model(drivers, san_env, tmp_path, kind):
    """Random inserts (texts of every size class and large ones), text reallocations,
    deletes and refarray growth; the contents survive close and reopen and verify."""
    rng = random.Random(hash(kind) & 0xFFFF)
    model = Model()
    sessions = 4 if kind in ("pow2", "exact") else 2
    for _ in range(sessions):
        check_session(drivers[kind], san_env, tmp_path, random_session(rng, model, 400), model)
    assert len(model.notes) > 50
    # a last open that only reads: the file as the sessions left it
    check_session(drivers[kind], san_env, tmp_path, [], model)


def allocated(d: Path) -> int:
    with open(d / "a.db", "rb") as f:
        return struct.unpack_from("<Q", f.read(64), BRK)[0]


@pytest.mark.parametrize("length", [40, 300, 1100])
def test_exact_file_is_smaller_where_pow2_rounds_up(drivers, san_env, tmp_path, length):
    """The same records with texts of one length: the allocated area of an exact file is
    smaller by about what pow2's rounding of each text block wastes."""
    n = 600
    cmds = [f"ins {i} {i} {length} {i}" for i in range(n)]
    used = {}
    for kind in ("pow2", "exact"):
        d = tmp_path / kind
        d.mkdir()
        out = run(drivers[kind], [f"open {d}", *cmds, "verify", "close"], san_env)
        assert set(out) == {"ok"}, out[-3:]
        used[kind] = allocated(d)
    text_block = length + 1          # the text, then NUL
    pow2 = 1 << (text_block - 1).bit_length()
    exact = -(-text_block // 16) * 16
    saved = (pow2 - exact) * n
    print(f"texts of {length}: pow2 {used['pow2']} bytes, exact {used['exact']} bytes")
    # at least the texts' rounding (elements and bucket tables are rounded too)
    assert used["pow2"] - used["exact"] >= saved, used


@pytest.mark.parametrize("made,opens", [("exact", "pow2"), ("pow2", "exact")])
def test_other_policy_refused_with_message(drivers, san_env, tmp_path, made, opens):
    """A file is refused by a program of the other policy (P2_EMISMATCH, saying which
    policies), and left as it was: it still opens with its own."""
    model = Model()
    rng = random.Random(5)
    check_session(drivers[made], san_env, tmp_path, random_session(rng, model, 100), model)
    before = (tmp_path / "a.db").read_bytes()
    out = run(drivers[opens], [f"open {tmp_path}"], san_env)
    assert out[0].startswith(f"err {EMISMATCH} "), out
    msg = out[0]
    file_says, we_say = ("exact", "pow2") if made == "exact" else ("pow2", "exact")
    assert "a.db" in msg and "refused" in msg and "allocator" in msg, msg
    assert f"the file's allocator uses" in msg and f"(alloc = {file_says})" in msg, msg
    assert f"this program's" in msg and f"(alloc = {we_say})" in msg, msg
    assert (tmp_path / "a.db").read_bytes() == before
    check_session(drivers[made], san_env, tmp_path, [], model)


def test_exact_size_class_rest_goes_to_its_class(drivers, san_env, tmp_path):
    """A large block freed, then cut into exact blocks of a class that does not divide
    4096 (48 bytes: the rest of 16 goes to the 16-byte class): no overlaps (verify), the
    contents intact, and the cut blocks reused before the file grows."""
    big = [f"ins {i} 0 8000 {i}" for i in range(4)]
    d = tmp_path
    model = Model()
    for i in range(4):
        model.notes[i] = [0, body(8000, i), []]
    check_session(drivers["exact"], san_env, d, big, model)
    frees = [f"set {i} 0 0" for i in range(4)]       # 8 KiB blocks back to the large list
    for i in range(4):
        model.notes[i][1] = ""
    check_session(drivers["exact"], san_env, d, frees, model)
    grown_from = allocated(d)
    small = []
    for i in range(100, 300):
        small.append(f"ins {i} 1 40 {i}")            # 41-byte texts: 48-byte blocks
        model.notes[i] = [1, body(40, i), []]
    check_session(drivers["exact"], san_env, d, small, model)
    # the 200 texts of 48 bytes and 200 malloc elements come from the 32 KiB freed: the
    # file grows by less than a quarter of what the texts alone take
    assert allocated(d) - grown_from < 200 * 48 // 4, (grown_from, allocated(d))


def test_recover_rebuilds_an_exact_file(drivers, san_env, cc, tmp_path):
    """A process dies with an exact file open: the file is refused as not closed cleanly,
    `p2gen recover` (built for the spec, sanitized) walks its exact free lists and brings
    it back with every note, text and tag; it then verifies and opens as before."""
    from p2gen.recover import build_recoverer
    spec = tmp_path / "ap_exact.p2"
    spec.write_text(spec_text("exact"))
    d = tmp_path / "db"
    d.mkdir()
    rng = random.Random(11)
    model = Model()
    check_session(drivers["exact"], san_env, d, random_session(rng, model, 300), model)
    cmds = random_session(rng, model, 300)
    out = run(drivers["exact"], [f"open {d}", *cmds, "sync", "crash"], san_env)
    assert set(out) == {"ok"}, [x for x in out if x != "ok"][:3]
    out = run(drivers["exact"], [f"open {d}"], san_env)
    assert out[0].startswith("err ") and "not closed cleanly" in out[0], out
    exe = build_recoverer(str(spec), str(tmp_path / "cache"), None, cc, True, SAN_QUICK_FLAGS)
    proc = subprocess.run([exe, str(d)], capture_output=True, text=True, env=san_env,
                          timeout=300)
    assert "Sanitizer" not in proc.stderr and "runtime error" not in proc.stderr, proc.stderr
    assert proc.returncode == 0 and "recovered:" in proc.stdout, proc.stdout + proc.stderr
    assert "broken free lists" not in proc.stdout, proc.stdout
    check_session(drivers["exact"], san_env, d, [], model)
