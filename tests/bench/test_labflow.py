"""LabFlow-1: the benchmark log generator (`p2gen bench labflow --gen`) and the Python
reference model that replays it, with the checks of the workload's specification that
apply to a log and to the model (counts, history order, latest == a scan of the history,
queue membership, schema versions decode payloads, intervals well formed)."""
from __future__ import annotations

import hashlib
import subprocess
import sys
from collections import Counter

import pytest

from p2gen.bench.labflow import gen

SMALL = 1 << 20         # X = 1 MiB: a log of ~40,000 lines, three full intervals
# The SHA-256 of the seed-1996, 1 MiB log. The log is a contract between the generator and
# every replayer (C drivers, peers, the model): a change of this digest is a change of the
# benchmark and must be deliberate (say so in the commit), never a Python upgrade.
GOLDEN_SMALL = "5ae75578ff7d02a0355db23c0ffbcdb6af88b4589dfe593b57902193bb9b239b"


@pytest.fixture(scope="module")
def small():
    return gen.generate_bytes(seed=gen.DEFAULT_SEED, memory=SMALL)


def test_splitmix64_known_answers():
    """The generator's PRNG is splitmix64 bit for bit (the reference C code's outputs for
    seed 0), so a C replayer or generator can reproduce it."""
    r = gen.SplitMix64(0)
    assert [r.next() for _ in range(3)] == [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4,
                                           0x06C45D188009454F]
    r = gen.SplitMix64(7)
    assert all(r.below(10) < 10 for _ in range(1000))
    assert {r.below(3) for _ in range(200)} == {0, 1, 2}


def test_log_is_deterministic(small):
    data, s = small
    again, s2 = gen.generate_bytes(seed=gen.DEFAULT_SEED, memory=SMALL)
    assert data == again and s == s2
    assert s.sha256 == hashlib.sha256(data).hexdigest()
    other, _ = gen.generate_bytes(seed=gen.DEFAULT_SEED + 1, memory=SMALL)
    assert other != data
    bigger, _ = gen.generate_bytes(seed=gen.DEFAULT_SEED, memory=2 * SMALL)
    assert bigger != data


def test_log_digest_is_pinned(small):
    assert small[1].sha256 == GOLDEN_SMALL


def test_log_lines_are_plain_tokens(small):
    """What a C replayer relies on: ASCII, single spaces, no empty token, short lines."""
    import re
    token = re.compile(rb"[A-Z][A-Z0-9]*( [A-Za-z0-9.,=_-]+)*\n")
    lines = small[0].splitlines(keepends=True)
    assert all(token.fullmatch(line) for line in lines)
    assert max(map(len, lines)) <= gen.MAX_LINE


def test_cli_writes_the_same_bytes(tmp_path, small):
    out = tmp_path / "lf.log"
    proc = subprocess.run([sys.executable, "-m", "p2gen.cli", "bench", "labflow", "--gen",
                           "--memory", "1M", "-o", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes() == small[0]
    assert small[1].sha256 in proc.stdout and "interval at 2X" in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "p2gen.cli", "bench", "labflow", "--gen",
                           "--memory", "lots"], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 2 and "--memory" in proc.stderr


def test_parse_size():
    assert gen.parse_size("8M") == 8 << 20
    assert gen.parse_size("256MiB") == 256 << 20
    assert gen.parse_size("1g") == 1 << 30
    assert gen.parse_size("4096") == 4096
    for bad in ("", "0", "-1M", "8X", "M"):
        with pytest.raises(ValueError):
            gen.parse_size(bad)


# -- the reference model and the checks of the workload's specification ----------------------

from p2gen.bench.labflow import model as lfmodel     # noqa: E402

# The spec's target request mix inside the intervals (per cent); the generator is tuned to
# within 5 points over the three intervals together (the later intervals hold more STEPs:
# a split kind records two steps per station visit).
TARGET_MIX = {"MAT": 3, "STEP": 15, "STATE": 17, "QUEUE": 15, "LOOK": 10, "LATEST": 25,
              "LASTSTEP": 8, "HIST": 5, "STEPMATS": 2}


@pytest.fixture(scope="module")
def replayed(small):
    text = small[0].decode("ascii")
    m = lfmodel.Model()
    m.replay(text.splitlines(keepends=True))
    return text.splitlines(), m


def _steps_of(lines):
    """STEP lines of the log, parsed independently of the model: (kind, when, mats, pairs)."""
    out = []
    for line in lines:
        if line.startswith("STEP "):
            t = line.split(" ")
            out.append((t[1], int(t[3]), [int(x) for x in t[4].split(",")],
                        [tuple(p.split("=", 1)) for p in t[5:]]))
    return out


def test_intervals_are_well_formed(small, replayed):
    lines, m = replayed
    s = small[1]
    assert len(m.intervals) == 3 and all(i.closed for i in m.intervals)
    assert [i.requests for i in m.intervals] == [gen.INTERVAL_REQUESTS] * 3
    assert [i.first_line for i in m.intervals] == [line for line, _ in s.cuts]
    for i in m.intervals:       # a schema change of each kind in every interval
        assert i.ops.get("ADDATTR", 0) >= 1 and i.ops.get("ADDKIND", 0) >= 1
        assert i.ops.get("SPLIT", 0) == 1
    # cut points where the estimated size passes 0.5X, 1X and 2X: the generator's running
    # estimate is the byte model of what the log holds so far, recomputed by the model; the
    # interval opens on whichever side of the request that passed the cut point is nearer
    assert len(s.crossings) == 3
    for (_, est), (a, b), i, (before, after) in zip(s.cuts, gen.CUT_FACTORS, m.intervals,
                                                     s.crossings):
        cut = SMALL * a // b
        assert i.size_at_cut == est
        if before is None:      # passed inside the interval before: opened at its end
            assert est == after >= cut
        else:
            assert before < cut <= after
            assert est == (before if cut - before < after - cut else after)
    # reads only inside intervals (the model raises otherwise), and the replay counted them
    inside = sum(sum(v for k, v in i.ops.items() if k in lfmodel.READS) for i in m.intervals)
    reads = sum(1 for line in lines if line.split(" ", 1)[0] in lfmodel.READS)
    assert reads == inside > 0
    assert len(m.out) == reads + 6          # one line per read, two reports per interval
    assert lines[-1] == f"END {s.materials} {s.steps} {s.involves}"


def test_request_mix_near_the_targets(replayed):
    _, m = replayed
    total = {}
    for i in m.intervals:
        for op, n in i.ops.items():
            total[op] = total.get(op, 0) + n
    n = sum(total.values())
    for op, share in TARGET_MIX.items():
        assert abs(100 * total.get(op, 0) / n - share) <= 5, (op, total.get(op, 0) / n)


def test_counts(replayed):
    lines, m = replayed
    steps = _steps_of(lines)
    assert len(m.materials) == sum(1 for line in lines if line.startswith("MAT "))
    assert len(m.steps) == len(steps)
    assert m.n_involves == sum(len(mats) for _, _, mats, _ in steps)
    assert m.n_involves == sum(len(mat.hist) for mat in m.materials)
    assert all(st.mats for st in m.steps)
    assert all(mat.hist for mat in m.materials)     # every material has its receive step
    samples = sum(1 for mat in m.materials if mat.kind == "sample")
    assert 0 < samples < len(m.materials)


def test_history_order(replayed):
    lines, m = replayed
    steps = _steps_of(lines)
    whens = [w for _, w, _, _ in steps]
    assert all(a < b for a, b in zip(whens, whens[1:]))
    nsteps = Counter(x for _, _, mats, _ in steps for x in mats)
    for mat in m.materials:
        hw = [m.steps[s - 1].when for s in mat.hist]
        assert hw == sorted(hw)
        assert len(mat.hist) == nsteps[mat.oid]


def test_latest_equals_a_scan_of_the_history(replayed):
    _, m = replayed
    for (oid, kind), s in m.latest.items():
        of_kind = [x for x in m.materials[oid - 1].hist if m.steps[x - 1].kind == kind]
        assert s == of_kind[-1]
    assert len(m.latest) == len({(x, st.kind) for st in m.steps for x in st.mats})
    names = sorted(m.attrs_named)
    found = absent = 0
    for mat in m.materials:
        for a in names:
            fast = m.latest_value(mat.oid, a)
            assert fast == m.latest_by_scan(mat.oid, a), (mat.oid, a)
            found += fast is not None
            absent += fast is None
    assert found and absent
    # the LATEST answers in the output say "absent", never a zero for a missing value
    assert "A absent" in m.out


def test_queue_membership(replayed):
    _, m = replayed
    seen = Counter(o for q in m.queues.values() for o in q)
    assert set(seen) == {mat.oid for mat in m.materials} and set(seen.values()) == {1}
    assert sum(len(q) for q in m.queues.values()) == len(m.materials)
    for s, q in m.queues.items():
        assert q == {mat.oid for mat in m.materials if mat.state == s}
    assert m.queues["passed"] and m.queues["released"] and m.queues["failed"]


def test_terminal_materials_never_move(replayed):
    lines, _ = replayed
    state = {}
    oid = 0
    for line in lines:
        t = line.split(" ")
        if t[0] == "MAT":
            oid += 1
            state[oid] = gen.INITIAL_STATE[t[2]]
        elif t[0] == "STATE":
            assert state[int(t[1])] not in gen.TERMINAL, line
            state[int(t[1])] = t[2]


def test_schema_versions_decode_payloads_exactly(replayed):
    lines, m = replayed
    steps = _steps_of(lines)
    for st, (kind, when, mats, pairs) in zip(m.steps, steps):
        assert m.kinds[st.kind].name == kind and st.when == when and list(st.mats) == mats
        assert [(a.name, v) for a, v in m.values(st)] == pairs
    # versions increase with every schema change, and attributes in the order they came
    assert [a.since for a in m.attrs] == sorted(a.since for a in m.attrs)
    assert len({a.since for a in m.attrs}) > 20
    # before an added attribute its kind's steps lack it, after it they carry it
    for kind, attr, _ in (c[0] for c in gen.SCHEMA_CHANGES):
        k = m.kind_by_name[kind]
        a = next(x for x in k.attrs if x.name == attr)
        before = [st for st in m.steps if st.kind == k.id and st.schema_ver < a.since]
        after = [st for st in m.steps if st.kind == k.id and st.schema_ver >= a.since]
        assert before and after, attr
        assert all(attr not in dict((x.name, v) for x, v in m.values(st)) for st in before)
        assert all(attr in dict((x.name, v) for x, v in m.values(st)) for st in after)
        # a payload read with the other version's layout does not decode
        with pytest.raises(ValueError):
            lfmodel.decode(k.layout(a.since), before[0].payload)
        with pytest.raises(ValueError):
            lfmodel.decode(k.layout(a.since - 1), after[0].payload)
    # split kinds are retired: no step of theirs after the split
    for kind, _ in (c[2] for c in gen.SCHEMA_CHANGES):
        k = m.kind_by_name[kind]
        assert k.retired and all(st.schema_ver < k.retired for st in m.steps if st.kind == k.id)


def test_reports_against_a_scan(replayed):
    """The last interval's reports against a scan of the model's state at that point."""
    lines, _ = replayed
    upto = max(i for i, line in enumerate(lines) if line == "REPORT2") + 1
    m = lfmodel.Model()
    m.replay(lines[:upto], require_end=False)
    r1 = [line for line in lines if line.startswith("REPORT1 ")][-1].split(" ")
    t0, t1 = int(r1[1]), int(r1[2])
    want = Counter(m.kinds[st.kind].name for st in m.steps if t0 <= st.when <= t1)
    got = [o for o in m.out if o.startswith("R1 ")][-1].split(" ")[1:]
    assert {p.split("=")[0]: int(p.split("=")[1]) for p in got if not p.endswith("=0")} == want
    r2 = [o for o in m.out if o.startswith("R2 ")][-1].split(" ")[1:]
    for part, s in zip(r2, gen.STATES):
        members = [mat for mat in m.materials if mat.state == s]
        # a material made by the interval's last request has no step yet: counted, no `when`
        oldest = min((max(m.steps[x - 1].when for x in mat.hist) for mat in members
                      if mat.hist), default="-")
        assert part == f"{s}={len(members)}/{oldest}"


def _corrupt(text, old, new, count=1):
    assert old in text
    return text.replace(old, new, count)


@pytest.mark.parametrize("mutate, message", [
    (lambda t: _corrupt(t, "MARK 0 1 BASELINE\n", "MARK 0 1 BASELINE\nHIST 1\n"),
     "outside the intervals"),
    (lambda t: t.replace("REPORT1", "LOOK nobody\nREPORT1", 1), "more than 10000 requests"),
    (lambda t: t[:t.rindex("\n", 0, t.index("REPORT1") - 1) + 1] + t[t.index("REPORT1"):],
     "9999 requests before its reports"),
    (lambda t: _corrupt(t, "MARK 1 4 BASELINE\n", ""), "between an interval's markers"),
    (lambda t: _corrupt(t, "REPORT2\n", ""), "marker out of place"),
    (lambda t: _corrupt(t, "MARK 2 1 BASELINE\n", ""), "MARK k 1 BASELINE"),
    (lambda t: _corrupt(t, " temp=", " tmp="), "attributes"),
    (lambda t: t[:t.rindex("END")], "no END"),
    (lambda t: t[:t.rindex("END")] + "END 1 2 3\n", "END totals"),
])
def test_model_rejects_a_broken_log(small, mutate, message):
    with pytest.raises(lfmodel.LogError, match=message):
        lfmodel.Model().replay(mutate(small[0].decode("ascii")).splitlines())


def test_model_rejects_moves_out_of_terminal_states_and_time_going_back():
    head = ("LABFLOW1 1 seed=1 memory=1 interval=100\nMARK 0 1 BASELINE\nADDKIND receive\n"
            "ADDATTR receive source str16\nMAT smp1 sample\n"
            "STEP receive ada 10 1 source=lab-01\n")
    with pytest.raises(lfmodel.LogError, match="0 intervals, not 3"):
        lfmodel.Model().replay((head + "STATE 1 failed\nEND 1 1 1\n").splitlines())
    with pytest.raises(lfmodel.LogError, match="terminal"):
        lfmodel.Model().replay((head + "STATE 1 failed\nSTATE 1 received\n").splitlines())
    with pytest.raises(lfmodel.LogError, match="not a state of a sample"):
        lfmodel.Model().replay((head + "STATE 1 amplified\n").splitlines())
    with pytest.raises(lfmodel.LogError, match="does not increase"):
        lfmodel.Model().replay((head + "STEP receive ada 10 1 source=x\n").splitlines())
    with pytest.raises(lfmodel.LogError, match="longer than"):
        lfmodel.Model().replay((head + "STEP receive ada 11 1 source=" + "x" * 17 + "\n")
                               .splitlines())


def test_model_command_writes_the_query_output(tmp_path, small, replayed):
    log = tmp_path / "lf.log"
    log.write_bytes(small[0])
    out = tmp_path / "out.txt"
    proc = subprocess.run([sys.executable, "-m", "p2gen.bench.labflow.model", str(log),
                           str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert out.read_text().splitlines() == replayed[1].out
    log.write_bytes(small[0][:-30])
    proc = subprocess.run([sys.executable, "-m", "p2gen.bench.labflow.model", str(log)],
                          capture_output=True, text=True)
    assert proc.returncode == 1 and "line" in proc.stderr


def test_a_budget_smaller_than_an_interval_runs_the_intervals_back_to_back():
    """When one interval's requests carry the database past the next cut point, the next
    interval opens right after the previous one closes."""
    data, s = gen.generate_bytes(memory=64 << 10)
    m = lfmodel.Model()
    m.replay(data.decode("ascii").splitlines())
    assert [i.requests for i in m.intervals] == [gen.INTERVAL_REQUESTS] * 3
    lines = data.decode("ascii").splitlines()
    for i in m.intervals[1:]:       # line before MARK k 1 is the previous MARK k-1 11
        assert lines[i.first_line - 5] == f"MARK {i.k - 1} 11 DBSIZE"
    assert s.cuts[1][1] > 64 << 10


def test_the_header_says_the_interval_length():
    data, s = gen.generate_bytes(memory=256 << 10, interval=500)
    assert data.startswith(b"LABFLOW1 1 seed=1996 memory=262144 interval=500\n")
    m = lfmodel.Model()
    m.replay(data.decode("ascii").splitlines())
    assert [i.requests for i in m.intervals] == [500] * 3
    with pytest.raises(lfmodel.LogError, match="line 1"):
        lfmodel.Model().replay(data.decode("ascii").replace(" interval=500", "", 1).splitlines())
