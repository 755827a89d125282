"""Failures are told the truth, through the generated command
harness built with -DP2_FAULT_INJECT: the runtime's fault injection (P2_FAULT, see
runtime/p2_runtime.c) makes one system call fail at an exact moment, deterministically,
with no full file system needed.

- A commit reports failure only when the transaction is not committed: then it stays open,
  an abort undoes it, and no reopen (after a clean close or a crash) shows it. A failure
  after the commit point (the checkpoint into the data file) leaves the commit reported
  done, the abort a no-op and the data there after a reopen; the checkpoint is retried and
  its error surfaces from the next sync or commit, saying the data is safe in the journal.
- A file that cannot grow (posix_fallocate: ENOSPC) is P2_EIO "disk full" at the insert
  that grows it, the database stays usable, closes cleanly, and what was there survives.

The harness's `crash` exits without closing anything: the files are left as after kill -9.
"""
from __future__ import annotations

import re

import pytest

from conftest import SAN_QUICK_OPT
from p2gen.harness import run_harness

FI = ("-DP2_FAULT_INJECT",)

RECORD = "record item { id: u32; v: i64; pad: char[2000]; }\n"   # two to a page


def journal_spec(checkpoint: int) -> str:
    return RECORD + f"""
container items of item = top2ds_qualify[hash[array[journal[persistent]]]]
    with hash(key = id, buckets = 16, fn = identity), array(capacity = 4),
         persistent(file = "dur.db"), journal(sync = true, group = 1, checkpoint = {checkpoint});
"""


PLAIN_SPEC = RECORD + """
container items of item = top2ds_qualify[hash[array[persistent]]]
    with hash(key = id, buckets = 16, fn = identity), array(capacity = 4),
         persistent(file = "dur.db");
"""


SEP = "::"


def run(exe, env, d, lines):
    """Run the harness on lines (with 'open D' first); return (command, answer) pairs:
    the last line a command printed (every line of it in `proc.groups`)."""
    cmds = [f"open {d}"] + lines
    proc = run_harness(exe, [x for c in cmds for x in (c, f"echo {SEP}")], env=env)
    assert "Sanitizer" not in proc.stderr and "runtime error" not in proc.stderr, proc.stderr[-3000:]
    groups, cur = [], []
    for line in proc.stdout.splitlines():
        if line == SEP:
            groups.append(cur)
            cur = []
        else:
            cur.append(line)
    assert len(groups) >= len(cmds) - (1 if cmds[-1] == "crash" else 0), (proc.stdout, proc.stderr)
    assert all(groups), (proc.stdout, proc.stderr)
    proc.groups = list(zip(cmds, groups))
    return [(c, g[-1]) for c, g in zip(cmds, groups)], proc


def answer(pairs, cmd, nth=0):
    hits = [a for c, a in pairs if c == cmd]
    return hits[nth]


def found(a: str) -> bool:
    assert a.startswith("rec") or a == "notfound", a
    return a.startswith("rec")


def _fill(n0, n):
    return [f'insert items {i} {i * 10} "x"' for i in range(n0, n0 + n)]


@pytest.fixture(scope="module")
def ckpt_exe(harness_builder):
    # the smallest checkpoint: a transaction of 40 inserts (20 pages) checkpoints
    return harness_builder(journal_spec(65536), "dur", extra_cflags=FI, opt=SAN_QUICK_OPT).exe


@pytest.fixture(scope="module")
def lazy_exe(harness_builder):
    # never, until close (test_recover.py's build too)
    return harness_builder(journal_spec(1 << 30), "dur", extra_cflags=FI, opt=SAN_QUICK_OPT).exe


@pytest.fixture(scope="module")
def plain_exe(harness_builder):
    return harness_builder(PLAIN_SPEC, "dur", extra_cflags=FI, opt=SAN_QUICK_OPT).exe


def test_failed_checkpoint_commit_is_done_and_stays_done(ckpt_exe, san_env, tmp_path):
    """The data file cannot be written at the checkpoint (every pwrite fails; the journal
    is written with pwritev): the commit is done all the same, abort does not undo it, the
    retries at sync and commit report the failure saying the data is safe in the journal,
    a commit refused that way leaves its own transaction open (abort undoes it), and after
    a crash the reopen has exactly the commits reported done."""
    pairs, _ = run(ckpt_exe, san_env, tmp_path, [
        'insert items 1 10 "a"', "commit",
        'insert items 2 20 "b"'] + _fill(100, 40) + ["fault pwrite:1-", "commit", "abort", "find items id 2",
        "sync",
        'insert items 3 30 "c"', "commit", "abort", "find items id 3",
        "crash"])
    assert answer(pairs, "commit", 0) == "ok"
    assert answer(pairs, "commit", 1) == "ok", pairs        # the journal holds it: done
    assert answer(pairs, "abort", 0) == "ok"
    assert found(answer(pairs, "find items id 2"))           # abort did not undo a commit
    sync = answer(pairs, "sync")
    assert sync.startswith("err EIO") and "safe in" in sync and "dur.db-journal" in sync, sync
    refused = answer(pairs, "commit", 2)
    assert refused.startswith("err EIO") and "not committed and is still open" in refused, refused
    assert answer(pairs, "abort", 1) == "ok"
    assert not found(answer(pairs, "find items id 3"))
    # a fresh process, no faults: recovery replays the journal
    pairs, _ = run(ckpt_exe, san_env, tmp_path, [
        "find items id 1", "find items id 2", "find items id 3", "count items", "verify", "close"])
    assert answer(pairs, "count items") == "count 42"
    assert found(answer(pairs, "find items id 1")) and found(answer(pairs, "find items id 2"))
    assert not found(answer(pairs, "find items id 3"))
    assert answer(pairs, "verify") == "verify ok"
    assert answer(pairs, "close") == "ok"


def test_failed_checkpoint_is_retried_when_the_disk_recovers(ckpt_exe, san_env, tmp_path):
    pairs, _ = run(ckpt_exe, san_env, tmp_path, _fill(1, 40) + [
        "fault pwrite:1-", "commit", "fault", 'insert items 99 20 "b"', "commit", "close"])
    assert [a for c, a in pairs if c in ("commit", "close")] == ["ok", "ok", "ok"], pairs
    pairs, _ = run(ckpt_exe, san_env, tmp_path, ["count items", "verify", "close"])
    assert answer(pairs, "count items") == "count 41" and answer(pairs, "verify") == "verify ok"


def test_failed_journal_append_leaves_transaction_open(lazy_exe, san_env, tmp_path):
    """The journal append fails: commit fails, the transaction is open, abort restores
    the page as last committed (whose image is in the journal, not yet in the data file),
    and a retried commit after that works."""
    pairs, _ = run(lazy_exe, san_env, tmp_path, [
        'insert items 1 10 "a"', "commit",
        "set items id 1 v 11", "fault pwritev:1", "commit", "abort", "find items id 1",
        "set items id 1 v 12", "commit", "crash"])
    failed = answer(pairs, "commit", 1)
    assert failed.startswith("err EIO") and "not committed and is still open" in failed, failed
    assert answer(pairs, "abort") == "ok"
    rec = answer(pairs, "find items id 1")
    assert found(rec) and rec.split()[1:3] == ["1", "10"], rec
    assert answer(pairs, "commit", 2) == "ok"
    pairs, _ = run(lazy_exe, san_env, tmp_path, ["find items id 1", "verify", "close"])
    assert answer(pairs, "find items id 1").split()[1:3] == ["1", "12"]
    assert answer(pairs, "verify") == "verify ok"


@pytest.mark.parametrize("retry", [False, True])
def test_failed_journal_sync_is_not_a_commit(lazy_exe, san_env, tmp_path, retry):
    """fdatasync of the journal fails: the commit is not done. Abort undoes it and a crash
    does not bring it back (its commit record was voided); or a retry commits it."""
    then = ["fault", "commit"] if retry else ["abort", "find items id 2"]
    pairs, _ = run(lazy_exe, san_env, tmp_path, [
        'insert items 1 10 "a"', "commit",
        'insert items 2 20 "b"', "fault fdatasync:1", "commit"] + then + ["crash"])
    failed = answer(pairs, "commit", 1)
    assert failed.startswith("err EIO") and "not committed and is still open" in failed, failed
    if retry:
        assert answer(pairs, "commit", 2) == "ok"
    else:
        assert answer(pairs, "abort") == "ok"
        assert not found(answer(pairs, "find items id 2"))
    pairs, _ = run(lazy_exe, san_env, tmp_path, ["find items id 1", "find items id 2", "verify", "close"])
    assert found(answer(pairs, "find items id 1"))
    assert found(answer(pairs, "find items id 2")) == retry
    assert answer(pairs, "verify") == "verify ok"


def test_full_disk_is_an_error_of_the_growing_insert(plain_exe, san_env, tmp_path):
    """Plain file: with posix_fallocate failing (ENOSPC), the insert that must grow the
    file returns EIO "disk full"; the others work; the database verifies, closes cleanly,
    and every insert reported done survives the reopen."""
    pairs, _ = run(plain_exe, san_env, tmp_path,
                   _fill(1, 20) + ["sync", "fault fallocate:1-"] + _fill(21, 400) +
                   ["verify", "fault"] + _fill(421, 5) + ["close"])
    inserts = [(int(c.split()[2]), a) for c, a in pairs if c.startswith("insert")]
    failed = [(i, a) for i, a in inserts if a != "ok"]
    assert failed, "no insert needed to grow the file: make the fill larger"
    for _, a in failed:
        assert a.startswith("err EIO") and "disk full" in a, a
    assert all(i <= 420 for i, _ in failed)     # only while the fault was on
    done = sorted(i for i, a in inserts if a == "ok")
    assert answer(pairs, "verify") == "verify ok"
    assert answer(pairs, "close") == "ok"
    pairs, proc = run(plain_exe, san_env, tmp_path, ["count items", "all items", "verify", "close"])
    assert answer(pairs, "count items") == f"count {len(done)}"
    ids = sorted(int(a.split()[1]) for c, g in proc.groups if c == "all items" for a in g[:-1])
    assert ids == done
    assert answer(pairs, "verify") == "verify ok"


def test_full_disk_in_a_transaction_is_an_error_then_abort(lazy_exe, san_env, tmp_path):
    """Journalled file: growth of the data file (or of the journal at commit) refused:
    EIO at that call, abort undoes the transaction, work goes on once space is back."""
    pairs, _ = run(lazy_exe, san_env, tmp_path,
                   _fill(1, 10) + ["commit", "fault fallocate:1-"] + _fill(11, 300) +
                   ["commit", "abort", "count items", "fault"] + _fill(11, 5) + ["commit", "close"])
    grow = [a for c, a in pairs if c.startswith("insert") and a != "ok"]
    assert grow and all(a.startswith("err EIO") and "disk full" in a for a in grow), grow[:3]
    assert answer(pairs, "commit", 0) == "ok"
    second = answer(pairs, "commit", 1)
    assert second == "ok" or (second.startswith("err EIO") and "still open" in second), second
    assert answer(pairs, "abort") == "ok"
    ok_inserts = sum(1 for c, a in pairs[:-8] if c.startswith("insert") and a == "ok")
    assert answer(pairs, "count items") == f"count {ok_inserts if second == 'ok' else 10}"
    assert answer(pairs, "commit", 2) == "ok" and answer(pairs, "close") == "ok"
    pairs, _ = run(lazy_exe, san_env, tmp_path, ["verify", "find items id 15", "close"])
    assert answer(pairs, "verify") == "verify ok" and found(answer(pairs, "find items id 15"))
