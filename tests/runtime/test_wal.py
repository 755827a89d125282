"""The record log (`wal` memory layer) through the generated harness, under ASan/UBSan.

- Random sessions of inserts, updates, deletes, commits and aborts, each session ended by
  a clean close or by a crash (the process exits without closing), checked against a
  model of committed and working state: after an abort, and after every reopen, the
  database holds exactly what was committed.
- What a commit logs: the bytes written, not pages (parsed from the log file).
- A torn log tail (the last transaction cut at every offset) recovers to the last intact
  commit; a damaged last transaction is dropped like a torn one; damage with a committed
  transaction after it is refused with a message, and `p2gen recover`-style opens are
  not needed for that (the files stay as they were).
"""
from __future__ import annotations

import random
import shutil
import struct
from pathlib import Path

import pytest

from conftest import SAN_QUICK_FLAGS, run_clean

SPEC = """
record item { id: u32; v: i64; name: char[12]; }
container items of item
    = top2ds_qualify[hash(key = id, buckets = 4)[avl(key = v)[array(capacity = 2)[wal[persistent(file = "w.db")]]]]];
"""
PAGE_SPEC = SPEC.replace("wal[", "journal[")

REC_RANGE, REC_COMMIT = 0x52414E47, 0x434F4D54
LOG_HDR = 64


@pytest.fixture(scope="module")
def exe(harness_builder):
    return harness_builder(SPEC, "wl").exe


run = run_clean


def rows(out, start):
    """The records an `all items` printed from line `start` on, as a set, and where it ended."""
    got = set()
    i = start
    while not out[i].startswith("end "):
        assert out[i].startswith("rec "), out[i]
        f = out[i].split()
        got.add((int(f[1]), int(f[2]), f[3]))
        i += 1
    assert int(out[i].split()[1]) == len(got)
    return got, i + 1


def name(i: int) -> str:
    return f'"n{i}"'


def session(rnd, committed: dict, nops: int):
    """Commands of one session, the states `all items` must show in order, and the
    committed and working states at its end."""
    work = dict(committed)
    cmds, expect = ["open", "all items"], [dict(committed)]
    for _ in range(nops):
        op = rnd.random()
        if op < 0.35:
            k = rnd.randrange(60)      # ids are not unique here: keep them so in the model
            if k in work:
                continue
            v = rnd.randrange(-50, 50)
            cmds.append(f"insert items {k} {v} {name(k)}")
            work[k] = (v, name(k))
        elif op < 0.55 and work:
            k = rnd.choice(sorted(work))
            v = rnd.randrange(-50, 50)
            cmds.append(f"set items id {k} v {v}")
            work[k] = (v, work[k][1])
        elif op < 0.7 and work:
            k = rnd.choice(sorted(work))
            cmds.append(f"delete items id {k}")
            del work[k]
        elif op < 0.85:
            cmds.append("commit")
            committed = dict(work)
        else:
            cmds.append("abort")
            work = dict(committed)
            cmds.append("all items")
            expect.append(dict(work))
    return cmds, expect, committed, work


def as_rows(state: dict) -> set:
    return {(k, v, n) for k, (v, n) in state.items()}


def check_session(exe, cwd, cmds, expect):
    proc, out = run(exe, cmds, cwd)
    # each `all items` answer (rec lines, then end N) comes after the answers of the
    # commands before it, which print no rec lines except set/delete (upd/del lines)
    i, k = 0, 0
    while k < len(expect):
        while not (out[i].startswith("rec ") or out[i].startswith("end ")):
            i += 1
        got, i = rows(out, i)
        assert got == as_rows(expect[k]), (k, cmds[:5])
        k += 1
    return proc


@pytest.mark.parametrize("seed", range(6))
def test_random_sessions_against_the_model(exe, tmp_path, seed):
    rnd = random.Random(seed)
    committed: dict = {}
    for s in range(5):
        cmds, expect, committed, work = session(rnd, committed, 40)
        if rnd.random() < 0.5:
            cmds.append("crash")        # what was not committed is gone
        else:
            cmds.append("close")        # the harness commits before it closes
            committed = work
        # the state after the session is checked by the next one's first `all items`
        check_session(exe, tmp_path, cmds, expect)
    proc, out = run(exe, ["open", "all items", "close"], tmp_path)
    got, _ = rows(out, 1)
    assert got == as_rows(committed)


def log_transactions(path: Path):
    """[(start offset, end offset)] of each complete transaction in a record log."""
    data = path.read_bytes()
    off, start, txs = LOG_HDR, LOG_HDR, []
    while off + 16 <= len(data):
        magic = struct.unpack_from("<I", data, off)[0]
        if magic == REC_RANGE:
            where = struct.unpack_from("<Q", data, off + 8)[0]
            n = (where >> 46) + 1
            off += 16 + (n + 7) // 8 * 8
        elif magic == REC_COMMIT:
            off += 32
            txs.append((start, off))
            start = off
        else:
            break
    return txs


def load(n):
    cmds = ["open"] + [f"insert items {k} {k} {name(k)}" for k in range(n)] + ["commit"]
    return cmds


def test_a_commit_logs_the_bytes_written_not_pages(harness_builder, tmp_path):
    exe = harness_builder(SPEC, "wl").exe
    run(exe, load(20) + ["set items id 5 name \"renamed\"", "commit", "crash"], tmp_path)
    txs = log_transactions(tmp_path / "w.db-wal")
    assert len(txs) >= 2
    last = txs[-1][1] - txs[-1][0]
    # one 8-byte-rounded name field: a 16-byte header, 16 bytes, the 32-byte commit record
    assert last <= 96, last
    # the same transaction under the page journal logs at least one whole page
    pj = harness_builder(PAGE_SPEC, "pj").exe
    d2 = tmp_path / "pj"
    d2.mkdir()
    run(pj, load(20) + ["set items id 5 name \"renamed\"", "commit", "crash"], d2)
    assert (d2 / "w.db-journal").stat().st_size >= 4096


def crashed_db(exe, d):
    """A log with 21 committed transactions (a load and 20 single updates), left by a crash."""
    cmds = load(10)
    for t in range(20):
        cmds += [f"set items id {t % 10} v {100 + t}", "commit"]
    run(exe, cmds + ["crash"], d)
    state = {k: (k, name(k)) for k in range(10)}
    states = [dict(state)]
    for t in range(20):
        state[t % 10] = (100 + t, name(t % 10))
        states.append(dict(state))
    return states


def reopen(exe, d):
    proc, out = run(exe, ["open", "all items", "close"], d)
    if out[0] != "ok":
        return out[0], proc
    got, _ = rows(out, 1)
    return got, proc


def test_a_torn_tail_recovers_the_last_intact_commit(exe, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    states = crashed_db(exe, src)
    txs = log_transactions(src / "w.db-wal")
    start, end = txs[-1]
    for cut in list(range(start, end)) + [end]:
        d = tmp_path / f"cut{cut}"
        shutil.copytree(src, d)
        with open(d / "w.db-wal", "r+b") as f:
            f.truncate(cut)
        got, _ = reopen(exe, d)
        want = states[-1] if cut == end else states[-2]
        assert got == as_rows(want), cut
        shutil.rmtree(d)


def test_a_damaged_last_transaction_is_dropped_and_earlier_damage_refused(exe, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    states = crashed_db(exe, src)
    txs = log_transactions(src / "w.db-wal")
    # a flipped byte in the last transaction's data: its commit never returned intact
    d = tmp_path / "last"
    shutil.copytree(src, d)
    with open(d / "w.db-wal", "r+b") as f:
        f.seek(txs[-1][0] + 16)
        b = f.read(1)
        f.seek(txs[-1][0] + 16)
        f.write(bytes([b[0] ^ 0x40]))
    got, _ = reopen(exe, d)
    assert got == as_rows(states[-2])
    # the same in an earlier transaction, with committed ones after it: refused, files kept
    d = tmp_path / "mid"
    shutil.copytree(src, d)
    before = (d / "w.db-wal").read_bytes()
    with open(d / "w.db-wal", "r+b") as f:
        f.seek(txs[-5][0] + 16)
        b = f.read(1)
        f.seek(txs[-5][0] + 16)
        f.write(bytes([b[0] ^ 0x40]))
    damaged = (d / "w.db-wal").read_bytes()
    assert damaged != before
    got, proc = reopen(exe, d)
    assert isinstance(got, str) and got.startswith("err EFORMAT"), got
    assert "damaged at offset" in got and "refusing to open" in got, got
    assert (d / "w.db-wal").read_bytes() == damaged


def test_a_tpcb_transaction_logs_at_most_256_bytes(harness_builder, tmp_path):
    """Three balance updates and a history insert, committed: the bytes the record log
    appends per transaction (the page journal appended ~16.7 KB)."""
    spec = (Path(__file__).resolve().parents[1] / "specs" / "tpcb_wal.p2").read_text()
    exe = harness_builder(spec, "tw").exe
    rnd = random.Random(7)
    cmds = ["open"] + [f'insert branches {b} 0 "b"' for b in range(2)]
    cmds += [f'insert tellers {t} {t // 10} 0 "t"' for t in range(20)]
    cmds += [f'insert accounts {a} {a // 100} 0 "a"' for a in range(200)] + ["commit"]
    for i in range(60):
        a, t, d = rnd.randrange(200), rnd.randrange(20), rnd.randrange(-99, 100)
        cmds += [f"set accounts id {a} balance {d}", f"set tellers id {t} balance {d}",
                 f"set branches id {t // 10} balance {d}",
                 f'insert histories {a} {t} {t // 10} {d} {i} "h"', "commit"]
    proc, out = run(exe, cmds + ["crash"], tmp_path)
    assert not any(line.startswith("err") for line in out), [x for x in out if x.startswith("err")]
    txs = log_transactions(tmp_path / "tpcb_wal.db-wal")
    assert len(txs) >= 61                  # the new file's, the load, the 60 transactions
    sizes = sorted(e - s for s, e in txs[-60:])
    assert sizes[len(sizes) // 2] <= 256, sizes


def test_verify_checks_a_record_logged_file(exe, cc, tmp_path):
    """`<prefix>_verify` (the integrity check) over a record-logged file left by a crash
    with committed transactions only in the log: clean after the log's replay; a damaged
    element link is reported."""
    import subprocess
    from p2gen.harness import sanitizer_env
    from p2gen.verify import build_verifier
    spec = tmp_path / "wl.p2"
    spec.write_text(SPEC)
    vexe = build_verifier(str(spec), str(tmp_path / "vcache"), "wl", cc, True, SAN_QUICK_FLAGS)
    d = tmp_path / "db"
    d.mkdir()
    cmds = load(30) + [f"set items id {k} v {-k}" for k in range(0, 30, 3)] + ["commit", "crash"]
    run(exe, cmds, d)
    proc = subprocess.run([vexe, str(d)], capture_output=True, text=True, env=sanitizer_env())
    assert proc.returncode == 0 and proc.stdout.strip() == f"ok: {d}", proc.stdout + proc.stderr
    got, _ = reopen(exe, d)                      # the replay kept every committed change
    assert got == as_rows({k: (-k if k % 3 == 0 else k, name(k)) for k in range(30)})
    # an avl child link of an element pointed far outside the file
    data = bytearray((d / "w.db").read_bytes())
    # element 7's name in the slot block in use (the last, largest one: the blocks the
    # array outgrew are free but keep old copies); hash_next, avl_left, avl_right, height
    # and the slot word (32 bytes) come before the record, whose name is 16 bytes in
    pos = data.rfind(b"n7\0")
    assert pos > 0
    data[pos - 40:pos - 32] = (1 << 40).to_bytes(8, "little")
    (d / "w.db").write_bytes(bytes(data))
    proc = subprocess.run([vexe, str(d)], capture_output=True, text=True, env=sanitizer_env())
    assert "Sanitizer" not in proc.stderr and "runtime error" not in proc.stderr, proc.stderr
    assert proc.returncode in (1, 2), proc.stdout + proc.stderr
