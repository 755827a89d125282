"""`p2gen recover`: a plain persistent file that was not closed cleanly
has a way back.

- Every storage and index layer (tests/runtime/test_verify.py's SPEC, through the command harness):
  a process that dies with the file open (the harness's `crash`: nothing closed, as after
  kill -9) leaves a file that ordinary opens and `p2gen verify` refuse; `p2gen recover`
  brings it back with every element, verify clean, ordinary opens work again. With the
  derived structures damaged too (hash buckets, counts, tree roots, list heads, the array
  free list: what a kill in the middle of an operation can leave), recover rebuilds them
  from the stored elements.
- TPC-B on a plain file (tests/c/crash_tpcb.c), killed with SIGKILL while it runs: after
  recover every transaction whose sync returned is there and the file verifies.
- Relationships, texts, malloc storage (tests/specs/links_persistent.p2 through the links
  driver): a copy taken while the driver has the file open recovers to the same contents.
- Exit codes: 0 recovered, 2 cannot open (missing file, another spec's file).

The recovery programs are built with ASan and UBSan.
"""
from __future__ import annotations

import os
import random
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

import crashkit as ck
from conftest import SAN_QUICK_FLAGS, SAN_QUICK_OPT, cache_lock
from p2gen.harness import run_harness

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))   # test_verify.py, beside
import test_verify as tv   # noqa: E402  (SPEC, CONTAINERS, the links driver and checker helpers)

PERSISTENT = [c for c in tv.CONTAINERS if not c.startswith("t_")]


@pytest.fixture(scope="module")
def rcache(request, tmp_path_factory) -> Path:
    """Where the sanitized recovery programs and checkers are built: .pytest_cache (they
    are keyed by spec text and p2gen's sources), or a temporary directory with
    P2GEN_TEST_NO_CACHE=1. What builds into it holds cache_lock(rcache): pytest-xdist's
    workers share it."""
    cache = getattr(request.config, "cache", None)
    if cache is None or os.environ.get("P2GEN_TEST_NO_CACHE") == "1":
        return Path(tmp_path_factory.mktemp("p2gen-recover"))
    return Path(cache.mkdir("p2gen-recover"))


@pytest.fixture(scope="module")
def built(tmp_path_factory, harness_builder, cc, rcache):
    from p2gen.recover import build_recoverer
    from p2gen.verify import build_verifier
    d = tmp_path_factory.mktemp("recover")
    spec = d / "vall.p2"
    spec.write_text(tv.SPEC)
    with cache_lock(rcache):
        return {"spec": spec, "harness": harness_builder(tv.SPEC, "vall", opt=SAN_QUICK_OPT).exe,
                "recover": build_recoverer(str(spec), str(rcache), None, cc, True, SAN_QUICK_FLAGS),
                "verify": build_verifier(str(spec), str(rcache), None, cc, True, SAN_QUICK_FLAGS)}


@pytest.fixture(scope="module")
def links(cc, rcache):
    """The links driver, recovery program and checker of tests/specs/links_persistent.p2."""
    from p2gen.recover import build_recoverer
    from p2gen.verify import build_verifier
    with cache_lock(rcache):
        return (tv._links_driver(rcache, cc),
                build_recoverer(str(tv.LINKS_SPEC), str(rcache), None, cc, True, SAN_QUICK_FLAGS),
                build_verifier(str(tv.LINKS_SPEC), str(rcache), None, cc, True, SAN_QUICK_FLAGS))


def harness(exe, d, cmds):
    proc = run_harness(exe, [f"open {d}"] + cmds)
    assert ck.sanitizer_clean(proc.stderr), proc.stderr[-3000:]
    return proc.stdout.splitlines()


def contents(exe, d):
    """Every container's elements, as sorted lines (index rebuilds may change scan order)."""
    out = {}
    for c in PERSISTENT:
        lines = harness(exe, d, [f"all {c}", "close"])
        assert lines[0] == "ok" and lines[-1] == "ok", lines
        out[c] = sorted(lines[1:-2])
        assert lines[-2] == f"end {len(out[c])}", lines
    return out


def recover(exe, d):
    proc = subprocess.run([exe, str(d)], capture_output=True, text=True, env=tv.san_env())
    assert ck.sanitizer_clean(proc.stderr), proc.stderr[-3000:]
    return proc


def crashed_vall(built, d: Path):
    """Fill the database (inserts, deletes, key updates), sync, and die without closing.
    Returns what it held."""
    cmds = [c for c in tv._vall_commands(5)[1:-1]] + ["sync"]
    lines = harness(built["harness"], d, cmds + [f"all {c}" for c in PERSISTENT] + ["crash"])
    assert not [x for x in lines if x.startswith(("err", "bug"))], lines
    # expected contents: a clean copy of the same commands
    clean = d.parent / (d.name + "-clean")
    clean.mkdir()
    harness(built["harness"], clean, cmds + ["close"])
    return contents(built["harness"], clean)


def test_unclean_file_is_refused_then_recovered(built, tmp_path):
    d = tmp_path / "db"
    d.mkdir()
    expected = crashed_vall(built, d)
    lines = harness(built["harness"], d, [])
    assert lines[0].startswith("err EFORMAT") and "not closed cleanly" in lines[0], lines
    assert tv.check(built["verify"], d).returncode == 2
    proc = recover(built["recover"], d)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "was not closed cleanly" in proc.stdout and "0 elements could not be saved" in proc.stdout
    assert "recovered:" in proc.stdout
    assert contents(built["harness"], d) == expected
    assert tv.check(built["verify"], d).returncode == 0
    # recovering a clean database changes nothing
    again = recover(built["recover"], d)
    assert again.returncode == 0 and "not closed cleanly" not in again.stdout
    assert contents(built["harness"], d) == expected


DERIVED = ("_count", "_root", "_head", "_tail", "_free", "_ndeleted")


def test_damaged_derived_structures_are_rebuilt(built, tmp_path):
    """What a kill in the middle of an operation can leave: every index and count wrong.
    The map of a clean file says where they are; they are overwritten, the file marked
    OPEN (as after a crash), and recover rebuilds them from the stored elements."""
    d = tmp_path / "db"
    d.mkdir()
    cmds = tv._vall_commands(7)
    harness(built["harness"], d, cmds[1:])
    expected = contents(built["harness"], d)
    rows = tv.byte_map(built["verify"], d)
    rnd = random.Random(3)
    path = d / "v.db"
    data = bytearray(path.read_bytes())
    hit = []
    for cls, off, ln, what in rows:
        storage_truth = what.startswith(("q root", "m_")) and what.endswith(("_head", "_count"))
        root_field = " root " in what and what.endswith(DERIVED) and not storage_truth
        buckets = what.endswith("_buckets") and " root " not in what
        if root_field or buckets:
            data[off:off + ln] = bytes(rnd.randrange(256) for _ in range(ln))
            hit.append(what)
    assert any("_buckets" in w for w in hit) and any(w.endswith("_root") for w in hit), hit
    data[20:24] = struct.pack("<I", 1)        # state OPEN: not closed cleanly
    path.write_bytes(bytes(data))
    assert tv.check(built["verify"], d).returncode == 2
    proc = recover(built["recover"], d)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "corrected" in proc.stdout or "rebuilt" in proc.stdout or "allocated again" in proc.stdout
    assert contents(built["harness"], d) == expected
    assert tv.check(built["verify"], d).returncode == 0


def test_recover_exit_codes(built, tmp_path, rcache):
    from p2gen.cli import main
    from click.testing import CliRunner
    missing = CliRunner().invoke(main, ["recover", str(built["spec"]), "--dir", str(tmp_path),
                                        "--build-dir", str(rcache)])
    assert missing.exit_code == 2 and "no such database file" in missing.output
    for name in ("v.db", "vj.db", "vm.db"):     # the spec's three files
        (tmp_path / name).write_bytes(b"x" * 8192)
    foreign = recover(built["recover"], tmp_path)
    assert foreign.returncode == 2 and "not a p2gen database" in foreign.stderr


# ---------------------------------------------------------------------------
# TPC-B, killed while it runs
# ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tpcb(request, tmp_path_factory, cc, rcache):
    from p2gen.recover import build_recoverer
    cache = ck.cache_dir(request, tmp_path_factory)
    spec = ck.SPECS / "tpcb_plain.p2"
    with cache_lock(rcache):
        return {"exe": ck.tpcb_exe(cache, spec),
                "recover": build_recoverer(str(spec), str(rcache), None, cc, True, SAN_QUICK_FLAGS)}


@pytest.mark.parametrize("seed", range(3))
def test_killed_tpcb_recovers_every_synced_transaction(tpcb, tmp_path, seed):
    rnd = random.Random(seed)
    d = tmp_path / "db"
    d.mkdir()
    env = ck.san_env()
    _, lines, err = ck.spawn_and_kill([tpcb["exe"], "run", str(d), str(seed)], env, d,
                                      delay=rnd.uniform(0.0, 0.15), after_line="C 5 ")
    assert ck.sanitizer_clean(err), err[-3000:]
    synced = [int(x.split()[1]) for x in lines if x.startswith("C ")]
    assert synced, lines[-5:]
    refused = subprocess.run([tpcb["exe"], "check", str(d)], capture_output=True, text=True, env=env)
    assert refused.stdout.startswith("refused") and "not closed cleanly" in refused.stdout
    proc = recover(tpcb["recover"], d)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    state = subprocess.run([tpcb["exe"], "check", str(d)], capture_output=True, text=True, env=env)
    assert ck.sanitizer_clean(state.stderr) and state.returncode == 0, state.stdout + state.stderr
    words = state.stdout.split()
    assert words[0] == "state", state.stdout
    nb, nt, na, nh = (int(w) for w in words[1:5])
    assert (nb, nt, na) == (2, 20, 200)
    assert nh >= synced[-1], (nh, synced[-1])
    assert int(words[10]) == 0       # verify: no problems


# ---------------------------------------------------------------------------
# relationships, texts, malloc storage
# ---------------------------------------------------------------------------
def dump(drv):
    lines = [drv("dump")]
    while lines[-1] != "end":
        lines.append(drv.p.stdout.readline().strip())
    return lines


def test_relationships_recover_from_an_open_copy(tmp_path, links):
    exe, rec, _ = links
    d, snap = tmp_path / "db", tmp_path / "snap"
    d.mkdir()
    tv._links_db(exe, d)                 # relationships of every kind, texts, deletes
    drv = tv.Driver(exe, d)
    assert drv("ins atoms 99 7").startswith("ok")
    expected = dump(drv)
    ck.copy_db(d, snap)                  # the file as a kill -9 now would leave it
    assert drv.close() == 0
    proc = recover(rec, snap)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    drv = tv.Driver(exe, snap)
    assert dump(drv) == expected
    assert drv.close() == 0


# ---------------------------------------------------------------------------
# the journal's dead ends
# ---------------------------------------------------------------------------
from test_durability_errors import FI, journal_spec, run as jrun, answer, found  # noqa: E402

REC_PAGE, REC_COMMIT = 0x50414745, 0x434F4D54


@pytest.fixture(scope="module")
def jbuilt(tmp_path_factory, harness_builder, cc, rcache):
    from p2gen.recover import build_recoverer
    d = tmp_path_factory.mktemp("jrecover")
    spec = d / "dur.p2"
    spec.write_text(journal_spec(1 << 30))      # no checkpoint before close
    with cache_lock(rcache):
        return {"harness": harness_builder(journal_spec(1 << 30), "dur", extra_cflags=FI, opt=SAN_QUICK_OPT).exe,
                "recover": build_recoverer(str(spec), str(rcache), None, cc, True, SAN_QUICK_FLAGS)}


def journal_txs(j: bytes, pgsize: int = 4096):
    """{seq: [(offset of each page record)], ...} of the journal's current generation,
    in order, and the offset of each commit record: [(seq, [page offsets], commit offset)]."""
    base = struct.unpack_from("<Q", j, 24)[0]
    out, pages, off = [], [], 64
    while off + 24 <= len(j):
        magic, _, seq = struct.unpack_from("<IIQ", j, off)
        if seq <= base or magic not in (REC_PAGE, REC_COMMIT):
            break
        if magic == REC_PAGE:
            pages.append(off)
            off += 24 + pgsize
        else:
            out.append((seq, pages, off))
            pages = []
            off += 32
    return out


def three_commits_then_crash(jbuilt, d):
    pairs, _ = jrun(jbuilt["harness"], san_env_j(), d, [
        'insert items 1 10 "a"', "commit", 'insert items 2 20 "b"', "commit",
        'insert items 3 30 "c"', "commit", "crash"])
    assert [a for c, a in pairs if c == "commit"] == ["ok"] * 3
    j = (d / "dur.db-journal").read_bytes()
    txs = journal_txs(j)
    assert len(txs) >= 3, txs
    return bytearray(j), txs


def san_env_j():
    from p2gen.harness import sanitizer_env
    return sanitizer_env()


def present(jbuilt, d, ids):
    pairs, _ = jrun(jbuilt["harness"], san_env_j(), d, [f"find items id {i}" for i in ids] + ["verify", "close"])
    assert answer(pairs, "verify") == "verify ok"
    return [found(answer(pairs, f"find items id {i}")) for i in ids]


def test_torn_page_in_the_last_transaction_is_dropped(jbuilt, tmp_path):
    """A page record of the last transaction torn (its commit record intact): what a power
    loss during that commit's write can leave. The commit never returned (its write was
    not synced), so the open drops it like a torn tail, instead of refusing."""
    d = tmp_path / "db"
    d.mkdir()
    j, txs = three_commits_then_crash(jbuilt, d)
    seq, pages, _ = txs[-1]
    j[pages[0] + 24 + 100] ^= 0x5A
    (d / "dur.db-journal").write_bytes(bytes(j))
    assert present(jbuilt, d, [1, 2, 3]) == [True, True, False]


def test_damage_before_later_commits_is_refused_then_recovered(jbuilt, tmp_path):
    d = tmp_path / "db"
    d.mkdir()
    j, txs = three_commits_then_crash(jbuilt, d)
    seq, pages, _ = txs[-2]                     # the second of the three inserts
    j[pages[0] + 24 + 100] ^= 0x5A
    (d / "dur.db-journal").write_bytes(bytes(j))
    before = (d / "dur.db").read_bytes()
    pairs, _ = jrun(jbuilt["harness"], san_env_j(), d, [])
    refusal = pairs[0][1]
    assert refusal.startswith("err EFORMAT") and "committed transactions after it" in refusal
    assert "p2gen recover" in refusal
    assert (d / "dur.db").read_bytes() == before          # a refusal writes nothing
    proc = recover(jbuilt["recover"], d)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "damaged" in proc.stdout and "2 committed from the damage on are dropped" in proc.stdout, proc.stdout
    assert present(jbuilt, d, [1, 2, 3]) == [True, False, False]


def test_journal_deleted_before_the_first_checkpoint_is_refused(jbuilt, tmp_path):
    """Every committed transaction is only in the journal: without it the database used to
    reopen empty without a word. Now refused; recover offers the data file's state (the
    empty database it was made as), saying so."""
    d = tmp_path / "db"
    d.mkdir()
    three_commits_then_crash(jbuilt, d)
    (d / "dur.db-journal").unlink()
    pairs, _ = jrun(jbuilt["harness"], san_env_j(), d, [])
    refusal = pairs[0][1]
    assert refusal.startswith("err EFORMAT") and "missing" in refusal and "never checkpointed" in refusal, refusal
    assert "p2gen recover" in refusal
    proc = recover(jbuilt["recover"], d)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "missing" in proc.stdout, proc.stdout
    assert present(jbuilt, d, [1, 2, 3]) == [False, False, False]


def test_what_cannot_be_repaired_is_reported_and_stays_refused(tmp_path, links):
    """A bag relationship whose two sides disagree (an entry of one owner's users changed
    to another live element: no element is gone, so nothing says which side is right):
    recover reports the problem, exits 1, and the file stays refused."""
    exe, rec, chk = links
    d = tmp_path / "db"
    d.mkdir()
    tv._links_db(exe, d)
    rows = [r for r in tv.byte_map(chk, d) if r[3].startswith("comps references _bag_users_vec")]
    path = d / "links.db"
    data = bytearray(path.read_bytes())
    values = sorted({struct.unpack_from("<Q", data, off + 8 * i)[0]
                     for _, off, ln, _ in rows for i in range(ln // 8)})
    assert len(values) >= 2, rows
    _, off, _, _ = rows[0]
    old = struct.unpack_from("<Q", data, off)[0]
    struct.pack_into("<Q", data, off, next(v for v in values if v != old))
    data[20:24] = struct.pack("<I", 1)        # state OPEN: not closed cleanly
    path.write_bytes(bytes(data))
    proc = recover(rec, d)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "relationship bag" in proc.stdout and "left marked as not closed cleanly" in proc.stdout, proc.stdout
    assert tv.check(chk, d).returncode == 2        # still refused: not closed cleanly


def _normalised(lines):
    """A dump with every [..] list sorted: an ilist rebuilt from its members keeps who
    belongs to whom, not the order they were added in."""
    import re
    return [re.sub(r"\[([^\]]*)\]", lambda m: "[" + ",".join(sorted(m.group(1).split(","))) + "]", x)
            for x in lines]


def test_broken_ilist_is_rebuilt_from_its_members(tmp_path, links):
    """An owner's list head and count of an ilist relationship wrong (an add cut short):
    recover rebuilds every list from the members' owner links; who belongs to whom is
    kept, the file verifies."""
    exe, rec, chk = links
    d = tmp_path / "db"
    d.mkdir()
    tv._links_db(exe, d)
    drv = tv.Driver(exe, d)
    expected = dump(drv)
    assert drv.close() == 0
    rows = [r for r in tv.byte_map(chk, d)
            if r[3].startswith(("comps element _parts_head", "comps element _parts_count"))]
    assert rows
    path = d / "links.db"
    data = bytearray(path.read_bytes())
    for _, off, ln, _ in rows[:4]:
        data[off:off + ln] = b"\xff" * ln if ln == 8 else b"\x07" * ln
    data[20:24] = struct.pack("<I", 1)
    path.write_bytes(bytes(data))
    proc = recover(rec, d)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "relationship parts (ilist): rebuilt" in proc.stdout, proc.stdout
    assert tv.check(chk, d).returncode == 0
    drv = tv.Driver(exe, d)
    assert _normalised(dump(drv)) == _normalised(expected)
    assert drv.close() == 0
