"""The `mapped` memory layer: a file whose references are raw addresses, mapped at the
base its header records. Through the generated harness (ASan/UBSan): a filled file
reopens in a fresh process with every record and verifies; each file of a spec gets its
own base in the runtime's quiet range; a reopen whose range something else occupies is
refused with a message, as is a file whose recorded base is garbage (never mapped there,
nothing in it followed), and the refused file is left as it was. With
mapped(relocate = true) a taken range (or P2_MAPPED_RELOCATE) relocates the file in
memory instead: it verifies and answers as before, a reader leaves it unchanged, a writer
moves it to its new base; a garbage base is still refused.
"""
from __future__ import annotations

import random
import re
import subprocess
import struct
import zlib
from pathlib import Path

import pytest

from conftest import SAN_QUICK_FLAGS
from p2gen.harness import run_harness

RECORD = "record item { id: u32; grp: i32; tag: char[8]; }\n"
SPEC = RECORD + """container hs of item
    = top2ds_qualify[hash(key = grp, buckets = 4)[malloc[mapped(file = "ma.db")]]];
container ts of item
    = top2ds_qualify[avl(key = id)[array(capacity = 4)[mapped(file = "mb.db", reserve = 1073741824)]]];
cursor hs_g on hs where grp == $g;
cursor ts_r on ts where id >= $lo and id < $hi;
"""
HEADER = 4096
MAP_BASE = 248                     # the header's map_base field
GRANULE = 64 * 1024


def _runtime_define(name: str) -> int:
    """A `(UINT64_C(a) << b)` constant of runtime/p2_runtime.h, read from the header so that
    the tests follow the runtime (the quiet range's end moved once, from 96 to 80 TiB)."""
    text = (Path(__file__).resolve().parents[2] / "runtime" / "p2_runtime.h").read_text()
    m = re.search(rf"#define {name} \(UINT64_C\((\d+)\) << (\d+)\)", text)
    assert m, name
    return int(m.group(1)) << int(m.group(2))


FIXED_LO, FIXED_HI = _runtime_define("P2_SEG_FIXED_LO"), _runtime_define("P2_SEG_FIXED_HI")
N = 150


def run(exe, cmds, env, cwd):
    proc = run_harness(exe, cmds, cwd=str(cwd), env=env)
    assert "Sanitizer" not in proc.stderr and "runtime error" not in proc.stderr, proc.stderr
    assert proc.returncode == 0, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    assert not any(line.startswith("bug") for line in proc.stdout.splitlines()), proc.stdout
    return proc.stdout.splitlines()


def records(out, *containers):
    """The `rec` lines of each `all C` in out (they follow the command's echo)."""
    got, cur = {}, None
    for line in out:
        if line.startswith("echo-"):
            cur = line[5:]
            got[cur] = []
        elif line.startswith("rec ") and cur is not None:
            got[cur].append(line)
    return {c: sorted(got[c]) for c in containers}


def listing():
    return ["echo echo-hs", "all hs", "echo echo-ts", "all ts",
            "echo echo-hs_g", "cursor hs_g 3", "echo echo-ts_r", "cursor ts_r 200000 900000"]


def base_of(path: Path) -> int:
    return struct.unpack_from("<Q", path.read_bytes(), MAP_BASE)[0]


def reseal(path: Path) -> None:
    """Recompute the header checksum, as a crafter would."""
    data = bytearray(path.read_bytes())
    struct.pack_into("<I", data, 124, 0)
    struct.pack_into("<I", data, 124, zlib.crc32(bytes(data[:HEADER])))
    path.write_bytes(bytes(data))


@pytest.fixture(scope="module")
def harness(harness_builder):
    return harness_builder(SPEC, "mp").exe


@pytest.fixture(scope="module")
def filled(harness, san_env, tmp_path_factory):
    """(directory of two filled, cleanly closed mapped files, what the listing printed in
    the process that wrote them)."""
    return fill(harness, san_env, tmp_path_factory.mktemp("mapped"), 11)


def fill(exe, san_env, d: Path, seed: int):
    """Fill both containers in d (inserts and deletes drawn with seed), list, verify and
    close cleanly: (d, what the listing printed)."""
    rng = random.Random(seed)
    cmds = [f"open {d}"]
    for i in range(N):
        cmds.append(f'insert hs {i} {rng.randint(0, 6)} "h{i}"')
        cmds.append(f'insert ts {rng.randint(0, 10**6)} {rng.randint(-9, 9)} "t{i}"')
    cmds += [f"delete hs id {i}" for i in range(0, N, 5)]
    cmds += [f"delete ts grp {g}" for g in (1, 2)]
    cmds += listing() + ["verify", "close"]
    out = run(exe, cmds, san_env, d)
    assert "verify ok" in out, out[-5:]
    return d, out[out.index("echo-hs"):out.index("verify ok")]


def test_reopens_in_a_fresh_process_at_its_recorded_base(harness, san_env, filled):
    d, before = filled
    a, b = base_of(d / "ma.db"), base_of(d / "mb.db")
    for base, size in ((a, 64 << 30), (b, 1 << 30)):
        assert base % GRANULE == 0 and FIXED_LO <= base and base + size <= FIXED_HI, hex(base)
    # the two files of the spec lie apart
    assert a + (64 << 30) <= b or b + (1 << 30) <= a, (hex(a), hex(b))
    out = run(harness, [f"open {d}", "verify"] + listing(), san_env, d)
    assert out[:2] == ["ok", "verify ok"], out[:3]
    after = out[2:]
    assert records(after, "hs", "ts") == records(before, "hs", "ts")
    assert sorted(after) == sorted(before)   # the cursors answer the same too
    assert len(records(after, "hs")["hs"]) == N - len(range(0, N, 5))
    # the files keep their bases
    assert (base_of(d / "ma.db"), base_of(d / "mb.db")) == (a, b)


def copy_files(src: Path, dst: Path) -> None:
    for name in ("ma.db", "mb.db"):
        (dst / name).write_bytes((src / name).read_bytes())


def test_a_taken_range_is_refused(harness, san_env, filled, tmp_path):
    d, _ = filled
    copy_files(d, tmp_path)
    base = base_of(tmp_path / "mb.db")
    before = (tmp_path / "mb.db").read_bytes()
    # something else in the process sits inside the file's range (its second page)
    out = run(harness, [f"take {base + GRANULE} {GRANULE}", f"open {tmp_path}", "count ts",
                        "all ts"], san_env, tmp_path)
    assert out[0] == "ok", out
    assert out[1].startswith("err ENOMEM ") and "mb.db" in out[1], out[1]
    assert "is taken by another mapping" in out[1] and f"0x{base:x}" in out[1], out[1]
    assert out[2] == "count 0" and out[3].startswith("err ECLOSED"), out
    assert (tmp_path / "mb.db").read_bytes() == before, "a refused file was modified"
    # the other file was not left open or locked: with the range free both open
    out = run(harness, [f"open {tmp_path}", "verify", "count ts"], san_env, tmp_path)
    assert out[:2] == ["ok", "verify ok"], out


GARBAGE = [
    (lambda b, n: b + 8, "not aligned"),
    (lambda b, n: b + 4096, "aligned to a page, not to the granule"),
    (lambda b, n: 1 << 20, "below the quiet range"),
    (lambda b, n: FIXED_HI, "at its end"),
    (lambda b, n: FIXED_HI - ((n - 1) // GRANULE) * GRANULE, "the file would reach past it"),
    (lambda b, n: (1 << 47) + (1 << 40), "beyond the user address space"),
    (lambda b, n: (1 << 64) - GRANULE, "in the kernel's half"),
]


def with_garbage_base(d: Path, tmp_path: Path, bad):
    """Copy the files of d to tmp_path with the recorded base of ma.db replaced by
    bad(base, length) and the header resealed (a crafted header: the checksum agrees):
    (its path, its bytes)."""
    copy_files(d, tmp_path)
    db = tmp_path / "ma.db"
    data = bytearray(db.read_bytes())
    struct.pack_into("<Q", data, MAP_BASE, bad(base_of(db), len(data)))
    db.write_bytes(bytes(data))
    reseal(db)
    return db, db.read_bytes()


@pytest.mark.parametrize("bad, why", GARBAGE)
def test_a_garbage_base_is_refused(harness, san_env, filled, tmp_path, bad, why):
    db, damaged = with_garbage_base(filled[0], tmp_path, bad)
    out = run(harness, [f"open {tmp_path}", "count hs"], san_env, tmp_path)
    assert out[0].startswith("err EFORMAT ") and "ma.db" in out[0], (why, out[0])
    assert "recorded base address" in out[0] and "corrupt" in out[0], (why, out[0])
    assert out[1] == "count 0"
    assert db.read_bytes() == damaged, "a refused file was modified"


def test_a_moved_base_fails_the_integrity_check(harness, san_env, filled, tmp_path):
    """A base the runtime could have chosen, but not the file's: it is mapped there, and
    the integrity check at open finds the references (addresses at the old base) outside
    the file, without following them."""
    d, _ = filled
    copy_files(d, tmp_path)
    db = tmp_path / "ma.db"
    base = base_of(db)
    moved = base + (1 << 40) if base + (1 << 40) + (64 << 30) <= FIXED_HI else base - (1 << 40)
    data = bytearray(db.read_bytes())
    struct.pack_into("<Q", data, MAP_BASE, moved)
    db.write_bytes(bytes(data))
    reseal(db)
    damaged = db.read_bytes()
    out = run(harness, [f"open {tmp_path}", "count hs"], san_env, tmp_path)
    assert out[0].startswith("err EFORMAT ") and "integrity check" in out[0], out[0]
    assert "container hs" in out[0] and "not a live element" in out[0], out[0]
    assert db.read_bytes() == damaged, "a refused file was modified"


def test_a_file_of_offsets_is_not_a_mapped_file(harness, san_env, filled, tmp_path):
    """map_base 0 says the references are offsets (persistent's format): refused, not
    taken for addresses."""
    d, _ = filled
    copy_files(d, tmp_path)
    db = tmp_path / "mb.db"
    data = bytearray(db.read_bytes())
    struct.pack_into("<Q", data, MAP_BASE, 0)
    db.write_bytes(bytes(data))
    reseal(db)
    out = run(harness, [f"open {tmp_path}"], san_env, tmp_path)
    assert out[0].startswith("err EMISMATCH ") and "references are offsets" in out[0], out[0]


@pytest.fixture(scope="module")
def tools(harness, cc, tmp_path_factory):
    """The recovery program and the checker of SPEC (`p2gen recover`, `p2gen verify`)."""
    from p2gen.recover import build_recoverer
    from p2gen.verify import build_verifier
    d = tmp_path_factory.mktemp("mapped-tools")
    spec = d / "mp.p2"
    spec.write_text(SPEC)
    return (build_recoverer(str(spec), str(d), None, cc, True, SAN_QUICK_FLAGS),
            build_verifier(str(spec), str(d), None, cc, True, SAN_QUICK_FLAGS))


def test_a_crashed_file_is_refused_then_recovered_at_its_base(harness, tools, san_env, tmp_path):
    """kill -9 leaves the files marked open: refused; `p2gen recover` opens them at their
    recorded bases, rebuilds, and they reopen with every record and verify."""
    recoverer, verifier = tools
    cmds = [f"open {tmp_path}"] + [f'insert hs {i} {i % 4} "c{i}"' for i in range(40)] + \
        [f'insert ts {i * 7} {i % 3} "d{i}"' for i in range(40)] + ["sync"]
    out = run(harness, cmds + ["echo echo-hs", "all hs", "echo echo-ts", "all ts", "crash"],
              san_env, tmp_path)
    want = records(out, "hs", "ts")
    bases = (base_of(tmp_path / "ma.db"), base_of(tmp_path / "mb.db"))
    out = run(harness, [f"open {tmp_path}"], san_env, tmp_path)
    assert out[0].startswith("err EFORMAT") and "not closed cleanly" in out[0], out
    proc = subprocess.run([recoverer, str(tmp_path)], capture_output=True, text=True, env=san_env)
    assert "Sanitizer" not in proc.stderr and "runtime error" not in proc.stderr, proc.stderr
    assert proc.returncode == 0 and "was not closed cleanly" in proc.stdout, proc.stdout + proc.stderr
    out = run(harness, [f"open {tmp_path}", "verify", "echo echo-hs", "all hs", "echo echo-ts",
                        "all ts"], san_env, tmp_path)
    assert out[:2] == ["ok", "verify ok"], out[:3]
    assert records(out, "hs", "ts") == want
    assert (base_of(tmp_path / "ma.db"), base_of(tmp_path / "mb.db")) == bases
    proc = subprocess.run([verifier, str(tmp_path)], capture_output=True, text=True, env=san_env)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# ---------------------------------------------------------------------------
# mapped(relocate = true): a taken range is not refused; the file is mapped elsewhere,
# privately, and every address in it moved by one delta (the pointer maps the generator
# derives from the layers' declared links); an open that only reads leaves the file as
# it was, one that writes moves the file to its new base at close.
# ---------------------------------------------------------------------------
RSPEC = SPEC.replace('mapped(file = "ma.db")', 'mapped(file = "ma.db", relocate = true)').replace(
    'mapped(file = "mb.db", reserve = 1073741824)',
    'mapped(file = "mb.db", reserve = 1073741824, relocate = true)')
assert RSPEC.count("relocate = true") == 2


@pytest.fixture(scope="module")
def rharness(harness_builder):
    return harness_builder(RSPEC, "mr").exe


@pytest.fixture(scope="module")
def rfilled(rharness, san_env, tmp_path_factory):
    return fill(rharness, san_env, tmp_path_factory.mktemp("mapped-reloc"), 12)


def take_both(d: Path) -> list:
    """Commands occupying a page inside each file's recorded range."""
    return [f"take {base_of(d / n) + GRANULE} {GRANULE}" for n in ("ma.db", "mb.db")]


def test_a_taken_range_relocates_in_memory_and_leaves_the_file(rharness, san_env, rfilled, tmp_path):
    """Both files' ranges taken: each is mapped elsewhere and relocated (malloc elements
    and hash buckets are addresses; array slots and the AVL tree's links are slot
    numbers, its slot block an address); it verifies and answers every query as before,
    and a close after reading only leaves both files byte for byte as they were."""
    d, before = rfilled
    copy_files(d, tmp_path)
    files = {n: (tmp_path / n).read_bytes() for n in ("ma.db", "mb.db")}
    out = run(rharness, take_both(tmp_path) + [f"open {tmp_path}", "verify"] + listing() + ["close"],
              san_env, tmp_path)
    assert out[:4] == ["ok", "ok", "ok", "verify ok"], out[:5]
    assert sorted(out[4:-1]) == sorted(before)
    for n, data in files.items():
        assert (tmp_path / n).read_bytes() == data, f"a relocated open that only read changed {n}"


@pytest.mark.parametrize("pct", [100, 20])
def test_forced_relocation_answers_the_same(rharness, san_env, rfilled, tmp_path, pct):
    """P2_MAPPED_RELOCATE=P relocates although the range is free (P = 100: to another
    slot; less: a share of the pages in place)."""
    d, before = rfilled
    copy_files(d, tmp_path)
    files = {n: (tmp_path / n).read_bytes() for n in ("ma.db", "mb.db")}
    env = dict(san_env, P2_MAPPED_RELOCATE=str(pct))
    out = run(rharness, [f"open {tmp_path}", "verify"] + listing(), env, tmp_path)
    assert out[:2] == ["ok", "verify ok"], out[:3]
    assert sorted(out[2:]) == sorted(before)
    for n, data in files.items():
        assert (tmp_path / n).read_bytes() == data, n


def test_writes_after_relocation_move_the_file(rharness, san_env, rfilled, tmp_path):
    """Writes on a relocated open go through; its close writes the file back with the new
    base, so a fresh process opens it there (no relocation) with every change."""
    d, before = rfilled
    copy_files(d, tmp_path)
    old = (base_of(tmp_path / "ma.db"), base_of(tmp_path / "mb.db"))
    cmds = take_both(tmp_path) + [f"open {tmp_path}", 'insert hs 9001 3 "new"',
                                  'insert ts 424242 5 "new"', "delete hs id 1", "verify"]
    out = run(rharness, cmds + ["echo echo-hs", "all hs", "echo echo-ts", "all ts", "close"],
              san_env, tmp_path)
    assert out[:5] == ["ok"] * 5 and out[5:8] == ['del 1 5 "h1"', "ok", "verify ok"], out[:8]
    want = records(out, "hs", "ts")
    new = (base_of(tmp_path / "ma.db"), base_of(tmp_path / "mb.db"))
    for o, n, size in zip(old, new, (64 << 30, 1 << 30)):
        assert n != o and n % GRANULE == 0 and FIXED_LO <= n and n + size <= FIXED_HI, (hex(o), hex(n))
    out = run(rharness, [f"open {tmp_path}", "verify", "echo echo-hs", "all hs", "echo echo-ts",
                         "all ts"], san_env, tmp_path)
    assert out[:2] == ["ok", "verify ok"], out[:3]
    assert records(out, "hs", "ts") == want
    assert len(want["hs"]) == len(records(before, "hs")["hs"])   # one added, one deleted


@pytest.mark.parametrize("bad, why", GARBAGE)
def test_a_garbage_base_is_refused_with_relocation_too(rharness, san_env, rfilled, tmp_path, bad, why):
    """relocate = true does not relocate from a base the runtime never chooses, even with
    relocation forced: refused, the file left as it was, nothing in it followed."""
    db, damaged = with_garbage_base(rfilled[0], tmp_path, bad)
    out = run(rharness, [f"open {tmp_path}", "count hs"], dict(san_env, P2_MAPPED_RELOCATE="100"),
              tmp_path)
    assert out[0].startswith("err EFORMAT ") and "recorded base address" in out[0], (why, out[0])
    assert out[1] == "count 0"
    assert db.read_bytes() == damaged


def test_without_relocation_the_refusal_names_the_option(harness, san_env, filled, tmp_path):
    d, _ = filled
    copy_files(d, tmp_path)
    base = base_of(tmp_path / "mb.db")
    out = run(harness, [f"take {base + GRANULE} {GRANULE}", f"open {tmp_path}"], san_env, tmp_path)
    assert out[1].startswith("err ENOMEM ") and "mapped(relocate = true)" in out[1], out[1]
    # forcing relocation does nothing to a spec that does not relocate
    out = run(harness, [f"open {tmp_path}", "verify"], dict(san_env, P2_MAPPED_RELOCATE="100"),
              tmp_path)
    assert out[:2] == ["ok", "verify ok"], out
    assert base_of(tmp_path / "mb.db") == base


@pytest.mark.parametrize("seed", range(6))
def test_relocating_a_damaged_file_reads_nothing_outside_it(rharness, san_env, rfilled, tmp_path, seed):
    """Words of the data area overwritten with addresses of the old range, of its end,
    and garbage (the header and roots left valid): the forced relocation walks the file
    without reading outside it (ASan is watching), and the integrity check at open refuses
    what the damage broke."""
    d, _ = rfilled
    copy_files(d, tmp_path)
    rng = random.Random(seed)
    for name in ("ma.db", "mb.db"):
        db = tmp_path / name
        data = bytearray(db.read_bytes())
        base = base_of(db)
        brk = struct.unpack_from("<Q", data, 40)[0]
        roots = {struct.unpack_from("<Q", data, 256 + 64 * i + 48)[0] for i in range(2)}
        for _ in range(40):
            at = rng.randrange(HEADER, brk - 8) & ~7
            if any(r <= at < r + 512 for r in roots):
                continue   # the roots are checksummed: damage there is refused before the walk
            struct.pack_into("<Q", data, at, rng.choice([
                base + rng.randrange(HEADER, brk), base + brk + 8, base + (64 << 30) - 8,
                base - 16, rng.getrandbits(64), 2**64 - 1, 0]))
        db.write_bytes(bytes(data))
    out = run(rharness, [f"open {tmp_path}", "verify"], dict(san_env, P2_MAPPED_RELOCATE="100"), tmp_path)
    assert out[0].startswith("err EFORMAT ") and "integrity check" in out[0], out[:2]


def test_a_layer_whose_links_are_not_declared_is_refused(monkeypatch):
    """A layer saying its references cannot all be found from its declarations
    (`unmapped_refs`) is refused under relocate = true, naming it and why; relocate = false
    takes it."""
    from p2gen.layers import LAYERS
    from p2gen.parser import parse
    from p2gen.check import check
    from p2gen.errors import SpecError, SpecErrors
    monkeypatch.setattr(type(LAYERS["avl"]), "unmapped_refs", "its links are kept elsewhere")
    def text(extra):
        return RECORD + f'container c of item = top2ds[avl(key = id)[array[mapped(file = "c.db"{extra})]]];\n'
    check(parse(text(""), "ok.p2"), "ok")
    with pytest.raises((SpecError, SpecErrors)) as err:
        check(parse(text(", relocate = true"), "bad.p2"), "bad")
    msg = str(err.value)
    assert "layer 'avl' of container 'c' cannot be relocated: its links are kept elsewhere" in msg
    assert "relocate = false" in msg
