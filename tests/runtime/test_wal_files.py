"""One transaction over several files: the record log (`wal`) commits a spec's logged files
together, all or none, through the generated harness under ASan/UBSan.

The crash that matters falls between the files' writes of one commit: one log holds the
transaction complete, the other does not. It is made here exactly, by cutting the second
file's log at every offset of its last transaction (what a kill between the two writes, or
during the second, leaves), and the reopened database must hold the transaction in both
files or in neither -- and drop whatever the first file committed after it. Transfers
between the files keep a sum that every reopen checks.
"""
from __future__ import annotations

import random
import shutil
import struct
from pathlib import Path

import pytest

from conftest import run_clean

SPEC = """
record acct { id: u32; bal: i64; }
container a of acct
    = top2ds_qualify[hash(key = id, buckets = 4)[array(capacity = 2)[wal[persistent(file = "a.db")]]]];
container b of acct
    = top2ds_qualify[hash(key = id, buckets = 4)[array(capacity = 2)[wal[persistent(file = "b.db")]]]];
"""
PAGE_SPEC = SPEC.replace("wal[", "journal[")

REC_RANGE, REC_COMMIT, REC_XACT = 0x52414E47, 0x434F4D54, 0x58414354
LOG_HDR = 64
N = 6          # accounts in each file
START = 1000   # each account's first balance


@pytest.fixture(scope="module")
def exe(harness_builder):
    return harness_builder(SPEC, "wf").exe


def run(exe, cmds, cwd):
    return run_clean(exe, cmds, cwd)[1]


def state(exe, d):
    """{container: {id: bal}} after a reopen, or the open's error line."""
    out = run(exe, ["open", "all a", "all b", "close"], d)
    if out[0] != "ok":
        return out[0]
    got, cur = {}, None
    for line in out[1:]:
        f = line.split()
        if f[0] == "rec":
            got.setdefault(cur or "a", {})[int(f[1])] = int(f[2])
        elif f[0] == "end":
            got.setdefault(cur or "a", {})
            cur = "b"
    return {"a": got.get("a", {}), "b": got.get("b", {})}


def transactions(path: Path):
    """[(start, end, spans files)] of each complete transaction in a record log."""
    data = path.read_bytes()
    off, start, txs, spans = LOG_HDR, LOG_HDR, [], False
    while off + 16 <= len(data):
        magic = struct.unpack_from("<I", data, off)[0]
        if magic == REC_XACT:
            nparts = struct.unpack_from("<I", data, off + 20)[0]
            off += 24 + 16 * nparts
            spans = True
        elif magic == REC_RANGE:
            where = struct.unpack_from("<Q", data, off + 8)[0]
            off += 16 + ((where >> 46) + 1 + 7) // 8 * 8
        elif magic == REC_COMMIT:
            off += 32
            txs.append((start, off, spans))
            start, spans = off, False
        else:
            break
    return txs


def history(rnd, n):
    """Commands of `n` committed transactions after the load, and the state after each:
    transfers between a and b (both files), and updates of a alone or b alone."""
    model = {"a": {k: START for k in range(N)}, "b": {k: START for k in range(N)}}
    cmds = ["open"] + [f"insert {c} {k} {START}" for c in "ab" for k in range(N)] + ["commit"]
    states = [{c: dict(m) for c, m in model.items()}]
    kinds = []
    for _ in range(n):
        kind = rnd.choice(["transfer", "transfer", "a", "b"])
        k, amount = rnd.randrange(N), rnd.randrange(1, 50)
        if kind == "transfer":
            model["a"][k] -= amount
            model["b"][k] += amount
            cmds += [f"set a id {k} bal {model['a'][k]}", f"set b id {k} bal {model['b'][k]}"]
        else:          # a change inside one file: its sum moves, the other's does not
            model[kind][k] += amount
            cmds.append(f"set {kind} id {k} bal {model[kind][k]}")
        cmds.append("commit")
        states.append({c: dict(m) for c, m in model.items()})
        kinds.append(kind)
    return cmds, states, kinds


def crashed(exe, d, seed, n=12):
    cmds, states, kinds = history(random.Random(seed), n)
    run(exe, cmds + ["crash"], d)
    return states, kinds


def test_a_transfer_is_logged_in_both_files_with_the_same_transaction(exe, tmp_path):
    run(exe, ["open", "insert a 1 10", "insert b 1 10", "commit",
              "set a id 1 bal 5", "set b id 1 bal 15", "commit",
              "set a id 1 bal 4", "commit", "crash"], tmp_path)
    ta, tb = transactions(tmp_path / "a.db-wal"), transactions(tmp_path / "b.db-wal")
    # a: create, load, transfer, own update; b: create, load, transfer
    assert [t[2] for t in ta][-3:] == [True, True, False], ta
    assert [t[2] for t in tb][-2:] == [True, True], tb

    def xact(path, t):
        data = path.read_bytes()
        gtid, self_, nparts = struct.unpack_from("<QII", data, t[0] + 8)
        parts = [struct.unpack_from("<IIQ", data, t[0] + 24 + 16 * i) for i in range(nparts)]
        return gtid, self_, [(f, s) for f, _, s in parts]

    ga, sa, pa = xact(tmp_path / "a.db-wal", ta[-2])
    gb, sb, pb = xact(tmp_path / "b.db-wal", tb[-1])
    assert ga == gb and pa == pb and (sa, sb) == (0, 1)
    assert state(exe, tmp_path) == {"a": {1: 4}, "b": {1: 15}}


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("lagging", ["a", "b"])
def test_a_crash_between_the_files_writes_keeps_all_or_nothing(exe, tmp_path, seed, lagging):
    """The lagging file's log is cut at every offset of its last transaction spanning both
    files: the other file then holds a transaction its partner lacks."""
    src = tmp_path / "src"
    src.mkdir()
    states, kinds = crashed(exe, src, seed)
    assert state(exe, src) == states[-1]       # the crash lost nothing committed
    shutil.rmtree(src)
    src.mkdir()
    crashed(exe, src, seed)
    log = src / f"{lagging}.db-wal"
    txs = transactions(log)
    spans = [i for i, t in enumerate(txs) if t[2]]
    assert spans, "the history has a transfer"
    last = spans[-1]
    # that transfer's number among the history's transactions: states[j] holds it
    j = [i for i, k in enumerate(kinds) if k == "transfer"][-1] + 1
    before = states[j - 1]
    start, end, _ = txs[last]
    for cut in list(range(start, end, 8)) + [end - 1]:
        d = tmp_path / f"cut{cut}"
        shutil.copytree(src, d)
        with open(d / f"{lagging}.db-wal", "r+b") as f:
            f.truncate(cut)
        got = state(exe, d)
        # neither file holds the transfer, nor anything either committed after it
        assert got == before, (cut, got, before)
        assert sum(got["a"].values()) + sum(got["b"].values()) == \
            sum(before["a"].values()) + sum(before["b"].values())
        shutil.rmtree(d)
    d = tmp_path / "whole"
    shutil.copytree(src, d)
    assert state(exe, d) == states[-1]


def test_work_after_a_dropped_transfer_commits_and_survives_crashes(exe, tmp_path):
    """A dropped transfer's numbers are used again by the next transactions: the identifier
    drawn for each transfer keeps the old one from being taken for the new."""
    states, kinds = crashed(exe, tmp_path, seed=7)
    t = transactions(tmp_path / "b.db-wal")
    spans = [x for x in t if x[2]]
    with open(tmp_path / "b.db-wal", "r+b") as f:
        f.truncate(spans[-1][0])
    j = [i for i, k in enumerate(kinds) if k == "transfer"][-1] + 1
    model = states[j - 1]
    assert state(exe, tmp_path) == model
    cmds = ["open"]
    rnd = random.Random(3)
    for _ in range(10):
        k, amount = rnd.randrange(N), rnd.randrange(1, 9)
        model["a"][k] -= amount
        model["b"][k] += amount
        cmds += [f"set a id {k} bal {model['a'][k]}", f"set b id {k} bal {model['b'][k]}", "commit"]
    cmds += ["set a id 0 bal 0", "set b id 0 bal 0"]     # not committed: gone after the crash
    run(exe, cmds + ["crash"], tmp_path)
    assert state(exe, tmp_path) == model


def test_an_abort_undoes_both_files(exe, tmp_path):
    run(exe, ["open", "insert a 1 10", "insert b 1 10", "commit",
              "set a id 1 bal 1", "set b id 1 bal 19", "abort",
              "set a id 1 bal 9", "commit", "close"], tmp_path)
    assert state(exe, tmp_path) == {"a": {1: 9}, "b": {1: 10}}


def test_headers_and_explain_say_which_layer_gives_which_guarantee(harness_builder, tmp_path):
    from click.testing import CliRunner

    from p2gen.cli import main
    wal = Path(harness_builder(SPEC, "wf").gen.header)
    page = Path(harness_builder(PAGE_SPEC, "pf").gen.header)
    assert "a commit is in every file or in none" in wal.read_text()
    assert "commits are atomic per file" in page.read_text()
    for text, says in ((SPEC, "commits in all of them or none"),
                       (PAGE_SPEC, "atomic per file: a transaction over several files commits each")):
        spec = tmp_path / "s.p2"
        spec.write_text(text)
        r = CliRunner().invoke(main, ["explain", str(spec)])
        assert r.exit_code == 0 and says in r.output, r.output
