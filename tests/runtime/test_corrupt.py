"""Torn and corrupt files: damaged headers, root blocks, journals and
truncated files are either recovered to a committed state or refused with a message --
never a crash (every opener runs under ASan/UBSan), never wrong data.

Files come from tests/c/crash_tpcb.c on tests/specs/tpcb_plain.p2 (no journal) and
tests/specs/tpcb_journal{,_group}.p2:
- "clean": 150 committed transactions, then a clean close (the journal is gone);
- "crashed": the same, then 150 more committed transactions on the journalled file and a
  kill -9 (the journal holds them all; with group 100 some are not in the data file yet).

Every trial copies the pristine files, damages the copy and opens it in a fresh process
(crash_tpcb check): exit 2 with "refused <code> <message>", or exit 0 with the state, which
must satisfy the TPC-B invariant, verify clean and be a state the writer reported as
committed. Header flips, root-block flips and truncations of clean files must be refused
(there is nothing to recover them from). Counts are bounded and seeded; P2GEN_CRASH_KILLS
(any value > 0) multiplies them by 4 for a soak.
"""
from __future__ import annotations

import os
import random
import struct
import subprocess
from pathlib import Path

import pytest

import crashkit as ck

pytestmark = pytest.mark.skipif(not ck.have_compilers(), reason="no C/C++ compiler")

SCALE = 4 if int(os.environ.get("P2GEN_CRASH_KILLS", "0") or 0) > 0 else 1
HEADER_FLIPS = 100 * SCALE        # split over plain and journalled files
ROOT_FLIPS = 30 * SCALE
JOURNAL_FLIPS = 100 * SCALE       # split over group 1 and group 100
TRUNCATIONS = 50 * SCALE          # data files and journals
NB, NT, NA = 2, 20, 200
HEADER = 4096
OUTCOMES: dict = {}


@pytest.fixture(scope="session")
def crash_cache(request, tmp_path_factory) -> Path:
    return ck.cache_dir(request, tmp_path_factory)


@pytest.fixture(scope="session")
def env():
    return ck.san_env()


def opened(exe, env, d: Path):
    """('refused', msg) | ('new',) | ('state', n, s) after asserting the state is sound; a
    crash, a sanitizer report or an unsound state fails."""
    proc = subprocess.run([exe, "check", str(d)], capture_output=True, text=True, env=env, timeout=120)
    assert ck.sanitizer_clean(proc.stderr) and proc.returncode in (0, 2), (
        f"the opener crashed on {d}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr[-4000:]}")
    w = proc.stdout.split()
    if proc.returncode == 2:
        assert w[0] == "refused" and len(w) >= 3, proc.stdout
        assert any(k in proc.stdout for k in ("checksum", "corrupt", "truncated", "magic", "version",
                                              "journal", "not closed", "different spec", "root")), proc.stdout
        return ("refused", proc.stdout.strip())
    if w[0] == "new":
        return ("new",)
    assert w[0] == "state", proc.stdout
    nb, nt, na, nh, sb, st, sa, sh, seq, problems = (int(x) for x in w[1:11])
    why = ""
    if problems:
        why = f"verify reports {problems} problems: {proc.stderr[-1500:]}"
    elif (nb, nt, na) != (NB, NT, NA):
        why = f"counts {nb}/{nt}/{na}"
    elif not (sb == st == sa == sh):
        why = f"TPC-B invariant violated: {sb} {st} {sa} {sh}"
    elif not seq:
        why = "history not 1..n"
    assert not why, f"a damaged file was accepted with wrong data ({d}): {why}"
    return ("state", nh, sh)


class Pristine:
    def __init__(self, name, files: dict, reported: set, last):
        self.name, self.files, self.reported, self.last = name, files, reported, last

    def materialise(self, d: Path) -> Path:
        d.mkdir(parents=True, exist_ok=True)
        for f in d.iterdir():
            f.unlink()
        for name, data in self.files.items():
            (d / name).write_bytes(data)
        return d


def _reported(lines) -> set:
    out = set()
    for line in lines:
        w = line.split()
        if w and w[0] in ("C", "P"):      # P: the pending one may be durable too
            out.add((int(w[1]), int(w[2])))
        elif w and w[0] == "loaded":
            out.add((0, 0))
    return out


@pytest.fixture(scope="session")
def pristine(crash_cache, env, tmp_path_factory):
    """{'plain': clean plain file, 'journal': clean journalled file, 'crashed', 'crashed_group'}"""
    out = {}
    for key, spec in (("plain", "tpcb_plain"), ("journal", "tpcb_journal"),
                      ("crashed", "tpcb_journal"), ("crashed_group", "tpcb_journal_group")):
        exe = ck.tpcb_exe(crash_cache, ck.SPECS / f"{spec}.p2")
        d = tmp_path_factory.mktemp(key)
        proc = subprocess.run([exe, "run", str(d), "5", "150"], capture_output=True, text=True,
                              env=env, timeout=300)
        assert proc.returncode == 0 and proc.stdout.rstrip().endswith("closed"), proc.stderr[-3000:]
        reported = _reported(proc.stdout.splitlines())
        if key.startswith("crashed"):
            logs = tmp_path_factory.mktemp(key + "_logs")
            rc, lines, err = ck.spawn_and_kill([exe, "run", str(d), "6"], env, logs, delay=0,
                                               after_line="C 300 ")
            assert rc == -9 and ck.sanitizer_clean(err), err[-3000:]
            reported |= _reported(lines)
            assert (d / f"{spec}.db-journal").stat().st_size > 64, "the journal is empty"
        files = {f.name: f.read_bytes() for f in d.iterdir() if f.is_file()}
        st = opened(exe, env, Pristine(key, files, reported, None).materialise(
            tmp_path_factory.mktemp(key + "_probe")))
        assert st[0] == "state" and (st[1], st[2]) in reported, st
        out[key] = (exe, Pristine(key, files, reported, (st[1], st[2])), spec)
    return out


def _tally(test: str, outcome: str):
    OUTCOMES.setdefault(test, {}).setdefault(outcome, 0)
    OUTCOMES[test][outcome] += 1


def _judge(test, p: Pristine, st, must_refuse: bool, what: str):
    if st[0] == "refused":
        _tally(test, "refused")
        return
    assert not must_refuse, f"{what}: accepted, must be refused (state {st})"
    assert st[0] == "state", f"{what}: reopened empty ({st})"
    assert (st[1], st[2]) in p.reported, (
        f"{what}: recovered to {st[1:]} which the writer never reported as committed "
        f"(last reported {max(p.reported)})")
    _tally(test, "recovered" if (st[1], st[2]) == p.last else "recovered-older")


def _db_name(p: Pristine) -> str:
    return next(n for n in p.files if n.endswith(".db"))


@pytest.mark.parametrize("key", ["plain", "journal", "crashed"])
def test_flipped_header_bytes(key, pristine, env, tmp_path):
    """Clean files: refused. A crashed journalled file: refused or recovered (the journal
    may hold the header page of a later commit, which recovery writes over the flip)."""
    exe, p, _ = pristine[key]
    rng = random.Random(f"header-{key}")
    n = HEADER_FLIPS // 2 if key != "crashed" else HEADER_FLIPS // 4
    db = _db_name(p)
    for i in range(n):
        d = p.materialise(tmp_path / "t")
        data = bytearray(p.files[db])
        offs = rng.sample(range(HEADER), rng.choice([1, 1, 1, 2, 3]))
        for off in offs:
            data[off] ^= rng.randint(1, 255)
        (d / db).write_bytes(bytes(data))
        st = opened(exe, env, d)
        _judge(f"header-{key}", p, st, must_refuse=key != "crashed",
               what=f"{key}: header bytes {offs} flipped")
    print(f"\nheader-{key}: {OUTCOMES.get(f'header-{key}')}")


def _roots(data: bytes):
    nroots = struct.unpack_from("<I", data, 120)[0]
    out = []
    for i in range(nroots):
        name = data[256 + 64 * i: 256 + 64 * i + 48].split(b"\0")[0].decode()
        off, size = struct.unpack_from("<QQ", data, 256 + 64 * i + 48)
        out.append((name, off, size))
    return out


@pytest.mark.parametrize("key", ["plain", "journal"])
def test_flipped_root_block_bytes(key, pristine, env, tmp_path):
    exe, p, _ = pristine[key]
    db = _db_name(p)
    roots = _roots(p.files[db])
    assert [r[0] for r in roots] == ["branches", "tellers", "accounts", "histories"], roots
    rng = random.Random(f"roots-{key}")
    for i in range(ROOT_FLIPS // 2):
        name, off, size = roots[i % len(roots)]
        d = p.materialise(tmp_path / "t")
        data = bytearray(p.files[db])
        at = off + rng.randrange(size)
        data[at] ^= rng.randint(1, 255)
        (d / db).write_bytes(bytes(data))
        st = opened(exe, env, d)
        _judge(f"roots-{key}", p, st, must_refuse=True, what=f"{key}: root {name} byte {at} flipped")
        assert "root" in st[1], st[1]
    print(f"\nroots-{key}: {OUTCOMES.get(f'roots-{key}')}")


def _journal_records(j: bytes, pgsize: int = 4096):
    """[(offset, kind, length)] of the journal's records, as far as they parse."""
    recs, off = [], 64
    while off + 24 <= len(j):
        magic = struct.unpack_from("<I", j, off)[0]
        if magic == 0x50414745:
            recs.append((off, "page", 24))
            off += 24 + pgsize
        elif magic == 0x434F4D54:
            recs.append((off, "commit", 32))
            off += 32
        else:
            break
    return recs


@pytest.mark.parametrize("key", ["crashed", "crashed_group"])
def test_flipped_journal_bytes(key, pristine, env, tmp_path):
    exe, p, spec = pristine[key]
    jname = f"{spec}.db-journal"
    j = p.files[jname]
    recs = _journal_records(j)
    assert any(r[1] == "commit" for r in recs), "no commit record in the crashed journal"
    rng = random.Random(f"journal-{key}")
    for i in range(JOURNAL_FLIPS // 2):
        d = p.materialise(tmp_path / "t")
        data = bytearray(j)
        kind = i % 5
        if kind == 0:                   # the journal header
            at = rng.randrange(64)
        elif kind in (1, 2):            # a record header / commit record
            off, _, length = rng.choice(recs)
            at = off + rng.randrange(length)
        elif kind == 3:                 # the last commit's records (a torn tail look-alike)
            off, _, length = recs[-1]
            at = off + rng.randrange(length)
        else:                           # anywhere (mostly page images)
            at = rng.randrange(64, len(data))
        data[at] ^= rng.randint(1, 255)
        (d / jname).write_bytes(bytes(data))
        st = opened(exe, env, d)
        _judge(f"journal-{key}", p, st, must_refuse=False, what=f"{key}: journal byte {at} flipped")
    print(f"\njournal-{key}: {OUTCOMES.get(f'journal-{key}')}")


# A journal cut short in its middle must not be replayed over a data file that already
# holds the pages of later commits: the data file records the last transaction it holds
# (data_seq) and recovery refuses a journal that ends before it. (Found by this test: it
# used to open with the TPC-B invariant broken.) Cutting commits that were only in the
# journal (group commit, not yet flushed) recovers an older committed state.
@pytest.mark.parametrize("key,target", [
    ("plain", "db"), ("journal", "db"), ("crashed", "db"),
    ("crashed", "journal"), ("crashed_group", "journal")])
def test_truncated_files(key, target, pristine, env, tmp_path):
    exe, p, spec = pristine[key]
    name = f"{spec}.db" + ("-journal" if target == "journal" else "")
    data = p.files[name]
    rng = random.Random(f"trunc-{key}-{target}")
    n = TRUNCATIONS // 5
    for i in range(n):
        d = p.materialise(tmp_path / "t")
        cut = rng.choice([rng.randrange(len(data)), rng.randrange(min(len(data), 3 * HEADER)),
                          len(data) - 1 - rng.randrange(min(len(data), 5000))])
        if i < 2:       # always a cut at 10% and at 25%
            cut = len(data) * (10, 25)[i] // 100
        (d / name).write_bytes(data[:cut])
        st = opened(exe, env, d)
        test = f"truncate-{key}-{target}"
        if st[0] == "new":
            # an empty (or shorter than its header) journal means "nothing to replay", and
            # an empty data file of a journalled spec with no journal is a new database
            assert cut == 0 or target == "journal" and cut < 64, f"{name} cut at {cut}: reopened empty"
            _tally(test, "new")
            continue
        _judge(test, p, st, must_refuse=key in ("plain", "journal"),
               what=f"{key}: {name} truncated at {cut} of {len(data)}")
    print(f"\ntruncate-{key}-{target}: {OUTCOMES.get(f'truncate-{key}-{target}')}")
