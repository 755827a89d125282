"""Large blocks of the transient memory layer (the generated harness, under ASan/UBSan).

A block of 4 MiB or more is a mapping of its own (p2_heap_big_alloc): made zeroed, grown by
moving its pages (mremap) with the growth zero, and crossing the 4 MiB line in either
direction by a copy into a block of the other kind. These tests drive a reserve that jumps
past 4 MiB (a bulk load's) and growth by insertion across the line and then twice past it
(the slot block 3.8 -> 7.6 -> 15.2 MB), and check that every element stored before, during
and after them is still there, with its fields, through find, get and a full cursor.
"""
from __future__ import annotations

from p2gen.harness import run_harness

# ~232-byte elements: 40,000 of them (65,536 slots) are ~15 MB
SPEC = """
record item { id: u32; grp: i32; pad: char[200]; }
container items of item = top2ds_qualify[hash(key = id, buckets = 64)[array(capacity = 4)[transient]]];
"""
N = 40000


def run(exe, cmds):
    proc = run_harness(exe, cmds)
    assert "Sanitizer" not in proc.stderr and "runtime error" not in proc.stderr, proc.stderr
    assert proc.returncode == 0, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    out = proc.stdout.splitlines()
    assert not any(line.startswith(("bug", "err")) for line in out), \
        [line for line in out if line.startswith(("bug", "err"))][:5]
    return out


def pad(i: int) -> str:
    return f'"p{i:07d}"'


def check_all(out, n, ids=None):
    """The last `all` listed exactly the elements `ids` (default: 0 .. n-1), fields intact."""
    ids = range(n) if ids is None else ids
    assert out[-1] == f"end {n}", out[-3:]
    recs = [line for line in out[-1 - n:-1]]
    assert all(r.startswith("rec ") for r in recs)
    got = sorted(tuple(r.split()[1:4]) for r in recs)
    assert got == sorted((str(i), str(-i), pad(i)) for i in ids)


def test_a_reserve_past_4_mib_keeps_what_was_stored(harness_builder):
    exe = harness_builder(SPEC, "tl").exe
    cmds = ["open"]
    cmds += [f"insert items {i} {-i} {pad(i)}" for i in range(100)]
    cmds.append(f"reserve items {N}")            # one jump from 128 slots to ~9 MB
    cmds += [f"insert items {i} {-i} {pad(i)}" for i in range(100, N)]
    cmds += ["count items", "find items id 0", f"find items id {N - 1}", "all items"]
    out = run(exe, cmds)
    assert f"count {N}" in out
    assert out[out.index(f"count {N}") + 1].startswith(f"rec 0 0 {pad(0)}")
    assert out[out.index(f"count {N}") + 2].startswith(f"rec {N - 1} {1 - N} {pad(N - 1)}")
    check_all(out, N)


def test_growth_by_insertion_past_4_mib_keeps_what_was_stored(harness_builder):
    exe = harness_builder(SPEC, "tl").exe
    cmds = ["open"] + [f"insert items {i} {-i} {pad(i)}" for i in range(N)]
    # remove every third element (one walk deleting through its cursor: a delete by value
    # would scan for each), so the inserts after it reuse slots inside the large block
    cmds += ["cdelete items.all 3"]
    more = range(N, N + N // 3)
    cmds += [f"insert items {i} {-i} {pad(i)}" for i in more]
    cmds += ["count items", "all items"]
    out = run(exe, cmds)
    gone = {int(line.split()[1]) for line in out if line.startswith("del ")}
    assert f"deleted {len(gone)} of {N}" in out and abs(len(gone) - N / 3) < 2
    left = (set(range(N)) - gone) | set(more)
    assert f"count {len(left)}" in out
    check_all(out, len(left), left)
