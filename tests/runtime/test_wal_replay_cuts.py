"""The record log's recovery, cut short at every write it makes: a crash during an open's
replay (or during a checkpoint) must leave files that the next open recovers.

The harness is built with -DP2_FAULT_INJECT: `fault pwrite:N-` makes the Nth `pwrite` of
the process and every later one fail, so an open stops exactly where a kill after N - 1
writes would have stopped it (replay writes the data file with `pwrite` only, a range at a
time; the last two writes are the header's new data_seq and the log's restart). After each
cut, a fresh process without faults must open the files, hold exactly the committed
records and verify.

What this guards: the record log logs the header's changed fields and its checksum as
they were in memory, where data_seq is the log's base; a replay over a header whose
data_seq had already advanced (the replay's own last step before the log restarted, or a
checkpoint that wrote the header and died) used to leave a header that its own checksum
refused ("header checksum mismatch"), and the files could not be opened again.
"""
from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest

from conftest import run_clean

# records of 1.5 KB, each its own block of the allocator (malloc: the header's brk or free
# lists change in every insert and delete), and the smallest checkpoint (64 KiB): the log
# restarts every few dozen inserts, so the crash leaves a data file whose header's
# data_seq is past 0 and a log of header-changing transactions after it
SPEC = """
record item { id: u32; v: i64; pad: char[1500]; }
container items of item
    = top2ds_qualify[hash(key = id, buckets = 4)[malloc[wal[persistent(file = "w.db")]]]]
    with wal(checkpoint = 65536);
"""
FI = ("-DP2_FAULT_INJECT",)


@pytest.fixture(scope="module")
def exe(harness_builder):
    return harness_builder(SPEC, "wc", extra_cflags=FI).exe


def run(exe, cmds, cwd):
    return run_clean(exe, cmds, cwd)[1]


def rows(out):
    got = {}
    for line in out:
        if line.startswith("rec "):
            f = line.split()
            got[int(f[1])] = int(f[2])
    return got


def crashed(exe, d, fault_at_end: str | None):
    """Commits that allocate and free (the header changes in each) and update records,
    then one transaction of 45 inserts (68 KB of log: its commit checkpoints); with
    fault_at_end, that checkpoint runs with the fault on, as if killed part way. The
    process dies without closing: what the last checkpoint did not write is only in the
    log."""
    cmds, state = ["open"], {}
    for k in range(60):
        cmds += [f'insert items {k} {k} "n{k}"', "commit"]
        state[k] = k
        if k % 3 == 0 and k // 2 in state:
            cmds += [f"set items id {k // 2} v {1000 + k}", "commit"]
            state[k // 2] = 1000 + k
        if k % 5 == 4:
            cmds += [f"delete items id {k - 2}", "commit"]
            del state[k - 2]
    for k in range(100, 145):
        cmds.append(f'insert items {k} {k} "n{k}"')
        state[k] = k
    if fault_at_end:
        cmds.append(f"fault {fault_at_end}")
    cmds.append("commit")
    if not fault_at_end:       # (with the fault, the next commit would retry the checkpoint)
        for k in range(150, 170):
            cmds += [f'insert items {k} {k} "n{k}"', f"delete items id {k - 100}", "commit"]
            state[k] = k
            state.pop(k - 100, None)
    cmds += ["fault", 'insert items 999 1 "uncommitted"', "crash"]
    out = run(exe, cmds, d)
    assert out[0] == "ok" and out[-3:] == ["ok", "ok", "ok"], out[-4:]   # commit: done
    return state


def reopened(exe, d):
    out = run(exe, ["open", "all items", "verify", "close"], d)
    assert out[0] == "ok", f"the files do not open after the cut: {out[0]}"
    assert "verify ok" in out, out
    return rows(out)


def seqs(d: Path):
    """(the data file header's data_seq, the log's base_seq)."""
    data = (d / "w.db").read_bytes()[:4096]
    log = (d / "w.db-wal").read_bytes()[:64]
    return struct.unpack_from("<Q", data, 144)[0], struct.unpack_from("<Q", log, 24)[0]


def open_cut(exe, src, d, n):
    """Copy src to d and open it with every pwrite from the nth on failing: True if the
    open completed (it needed fewer than n writes)."""
    shutil.copytree(src, d)
    out = run(exe, [f"fault pwrite:{n}-", "open", "crash"], d)
    assert out[0] == "ok", out          # the fault command
    if out[1] == "ok":
        return True
    assert out[1].startswith("err EIO"), out[1]
    return False


# None: the crash after a checkpoint and commits; pwrite:3-: the last commit's checkpoint
# wrote the header's new data_seq and no page (its writes: the log append, the header,
# the pages), so the header is ahead of the log's base, as after a kill in a checkpoint
@pytest.mark.parametrize("fault_at_end", [None, "pwrite:3-"])
def test_an_open_cut_at_every_write_is_recovered_by_the_next(exe, tmp_path, fault_at_end):
    src = tmp_path / "src"
    src.mkdir()
    state = crashed(exe, src, fault_at_end)
    dseq, base = seqs(src)
    assert dseq > 0 and (dseq > base) == (fault_at_end is not None), (dseq, base)
    # every 4th cut, then each of the last ones: the header's replay, its new data_seq
    # and the log's restart are the open's last writes
    tried, n = [], 1
    while not open_cut(exe, src, tmp_path / f"cut{n}", n):
        tried.append(n)
        n += 4
    assert n > 12, "the open replayed too little: make the session longer"
    for k in range(n - 3, n):
        if open_cut(exe, src, tmp_path / f"cut{k}", k):
            break
        tried.append(k)
    for k in tried:
        d = tmp_path / f"cut{k}"
        assert reopened(exe, d) == state, f"cut after {k - 1} writes of the open's recovery"
        shutil.rmtree(d)
    assert reopened(exe, src) == state
