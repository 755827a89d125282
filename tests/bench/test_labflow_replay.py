"""The LabFlow-1 replay driver (bench/labflow/labflow_main.cc) and its peer systems (HAND,
SQLITE, LMDB): each replays a generated log and writes exactly the reference model's query
output, the three intervals come out as benchmarks with their counters, the verify mode's
digest of every record is the same for every system and survives a reopen of the
persistent ones, and a malformed log stops the replay with the line it is on -- under
ASan/UBSan, never a crash."""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from conftest import cache_lock, harness_cache_root
from p2gen.bench.labflow import gen, model, sources

SYSTEMS = tuple(sources.PEER_SOURCES)           # HAND, SQLITE, LMDB
PERSISTENT = ("SQLITE", "LMDB")
# the full-length intervals (10,000 requests) at a 1 MiB budget: ~38,000 lines, a fraction
# of a second per system; the sanitized runs take a shorter log (500-request intervals)
FULL = dict(memory=1 << 20)
SHORT = dict(memory=256 << 10, interval=500)
COUNTERS = ("user_s", "sys_s", "majflt", "minflt", "backlog_commit_s", "interval_commit_s",
            "file_bytes", "alloc_bytes", "cut_file_bytes", "requests")
SANITIZER_REPORT = re.compile(r"AddressSanitizer|runtime error:|LeakSanitizer|Segmentation fault")


def _build(request, tmp_path_factory, flags: tuple, name: str) -> Path:
    """The driver with every peer, compiled with `flags`; cached in the harness cache while
    no source changes (as conftest's harness_builder caches the generated harnesses)."""
    cxx = shutil.which("c++") or shutil.which("g++")
    if cxx is None:
        pytest.skip("no C++ compiler")
    missing = sources.missing_headers()
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed "
                    "(apt-get install libbenchmark-dev libsqlite3-dev liblmdb-dev)")
    srcs = sources.sources()
    key = hashlib.sha256(f"{cxx}\0{flags}\0{name}".encode())
    # every header the drivers include: labflow.h and bench/*.h (flags.h, bench_main.h,
    # sqlite_util.h, lmdb_util.h, p2_variant.h)
    for f in sorted(srcs + sorted(sources.HERE.glob("*.h")) + sorted(sources.HERE.parent.glob("*.h"))):
        key.update(f.name.encode() + b"\0" + f.read_bytes())
    root = harness_cache_root(request.config) or Path(tmp_path_factory.mktemp("labflow_build"))
    out = root / f"labflow-{key.hexdigest()[:20]}"
    exe = out / name
    with cache_lock(out):
        if not ((out / ".built").exists() and exe.exists()):
            # one process per source: the compiles overlap on a multi-core machine
            objs = []
            jobs = []
            for src in srcs:
                obj = out / (src.name + ".o")
                objs.append(obj)
                jobs.append((src, subprocess.Popen([cxx, *flags, "-c", str(src), "-o", str(obj)],
                                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                                   text=True)))
            for src, job in jobs:
                log, _ = job.communicate(timeout=600)
                assert job.returncode == 0, f"{src.name} does not compile cleanly:\n{log}"
            link = [f for f in flags if f.startswith("-fsanitize")]
            subprocess.run([cxx, *link, *map(str, objs), *sources.libs(), "-o", str(exe)],
                           check=True, timeout=300)
            (out / ".built").write_text("ok\n")
        os.utime(out)   # recently used: kept by the pruning at the next run's start
    return exe


@pytest.fixture(scope="module")
def exe(request, tmp_path_factory) -> Path:
    return _build(request, tmp_path_factory, sources.CXXFLAGS, "labflow")


@pytest.fixture(scope="module")
def san_exe(request, tmp_path_factory) -> Path:
    # no -O: the sanitized build compiles several times faster
    flags = tuple(f for f in sources.CXXFLAGS if not f.startswith("-O")) + sources.SANITIZE
    return _build(request, tmp_path_factory, flags, "labflow_san")


def _log(tmp_path_factory, name: str, **kw) -> tuple[Path, bytes, str]:
    data, _ = gen.generate_bytes(**kw)
    d = tmp_path_factory.mktemp(name)
    log = d / "labflow.log"
    log.write_bytes(data)
    m = model.Model()
    m.replay(data.decode("ascii").splitlines())
    return log, data, "".join(line + "\n" for line in m.out)


@pytest.fixture(scope="module")
def full_log(tmp_path_factory):
    return _log(tmp_path_factory, "labflow_full", **FULL)


@pytest.fixture(scope="module")
def short_log(tmp_path_factory):
    return _log(tmp_path_factory, "labflow_short", **SHORT)


def _replay(exe, log, tmp_path, system, *extra, env=None, dbdir=None):
    out = tmp_path / f"{system}.out"
    js = tmp_path / f"{system}.json"
    proc = subprocess.run([str(exe), f"--labflow_log={log}", f"--labflow_out={out}",
                           f"--labflow_system={system}",
                           f"--labflow_dir={dbdir or tmp_path / (system + '.db')}",
                           f"--benchmark_out={js}", "--benchmark_out_format=json", *extra],
                          capture_output=True, text=True, timeout=300, env=env)
    return proc, out, js


def _digests(stdout: str) -> dict:
    return {m.group(1): m.group(2)
            for m in re.finditer(r"^labflow verify: \S+ (digest|reopened digest) ([0-9a-f]{16})",
                                 stdout, re.M)}


@pytest.fixture(scope="module")
def full_runs(exe, full_log, tmp_path_factory):
    """Every system replays the full-interval log once, with --labflow_verify."""
    log, _, _ = full_log
    runs = {}
    for system in SYSTEMS:
        d = tmp_path_factory.mktemp(f"labflow_{system}")
        proc, out, js = _replay(exe, log, d, system, "--labflow_verify")
        runs[system] = (proc, out, js, d / (system + ".db"))
    return runs


@pytest.mark.parametrize("system", SYSTEMS)
def test_query_output_equals_the_model(full_runs, full_log, system):
    proc, out, _, _ = full_runs[system]
    assert proc.returncode == 0, proc.stderr
    want = full_log[2]
    got = out.read_text()
    assert got.count("\n") == want.count("\n") > 3 * 1000
    assert got == want


@pytest.mark.parametrize("system", SYSTEMS)
def test_three_intervals_are_benchmarks_with_their_counters(full_runs, system):
    proc, _, js, dbdir = full_runs[system]
    assert proc.returncode == 0, proc.stderr
    data = json.loads(js.read_text())
    rows = data["benchmarks"]
    assert [r["name"].split("/iterations")[0] for r in rows] == \
        [f"labflow/{system}/{c}" for c in gen.CUT_NAMES]
    for r in rows:
        assert "error_occurred" not in r, r
        assert r["iterations"] == 1
        for c in COUNTERS:
            assert c in r, (c, r)
        assert r["requests"] == gen.INTERVAL_REQUESTS
        assert r["real_time"] > 0           # manual time: marker 4 to marker 7
        assert r["backlog_commit_s"] >= 0 and r["interval_commit_s"] >= 0
        assert r["majflt"] >= 0 and r["minflt"] >= 0
    sizes = [r["file_bytes"] for r in rows]
    if system in PERSISTENT:
        # the files grow across the cut points (spec section 6) and are really allocated
        assert all(s > 0 for s in sizes) and sizes == sorted(sizes)
        # at each cut point (marker 3) no larger than at the interval's end (marker 11)
        cut = [r["cut_file_bytes"] for r in rows]
        assert all(0 < c <= s for c, s in zip(cut, sizes)), (cut, sizes)
        allocated = [r["alloc_bytes"] for r in rows]
        assert all(a > 0 for a in allocated) and allocated == sorted(allocated)
        assert sorted(p.name for p in dbdir.iterdir() if not p.name.endswith("-lock"))
    else:
        assert sizes == [0, 0, 0]
    assert data["context"]["labflow_system"] == system


def test_every_system_has_the_same_digest_and_the_persistent_ones_reopen(full_runs):
    digests = {}
    for system, (proc, _, _, _) in full_runs.items():
        assert proc.returncode == 0, proc.stderr
        assert f"labflow verify: {system} ok" in proc.stderr, proc.stderr
        d = _digests(proc.stderr)
        digests[system] = d["digest"]
        if system in PERSISTENT:
            assert d["reopened digest"] == d["digest"]
        else:
            assert "reopened digest" not in d and "transient: no reopen" in proc.stderr
    # read through the same primitives, the same records give the same digest everywhere
    assert len(set(digests.values())) == 1, digests


def _model_digest(m: model.Model) -> str:
    """The verify mode's digest (Replayer::digest) computed from the reference model: FNV-1a
    64 over the same fields in the same order, integers as 8 little-endian bytes."""
    b = bytearray()

    def u(v: int) -> None:
        b.extend(struct.pack("<Q", v))

    def text(t: str) -> None:
        u(len(t))
        b.extend(t.encode("ascii"))

    u(len(m.materials))
    u(len(m.steps))
    u(m.version)
    for k in m.kinds:
        u(k.id), u(k.since), u(k.retired or 0), text(k.name)
        for a in k.attrs:
            u(a.id), u(a.kind), u(model.TYPE_CODE["str" if a.type.startswith("str") else a.type])
            u(int(a.type[3:]) if a.type.startswith("str") else 0), u(a.since), text(a.name)
    for st in m.steps:
        u(st.oid), u(st.kind), u(st.schema_ver), u(gen.WHO.index(st.who)), u(st.when)
        u(len(st.payload))
        b.extend(st.payload)
        for x in sorted(st.mats):
            u(x)
        u(len(st.mats))
    for mat in m.materials:
        u(mat.oid), u(gen.MATERIAL_KINDS.index(mat.kind)), u(gen.STATES.index(mat.state))
        u(len(mat.hist))
        b.extend(mat.name.encode("ascii"))
        u(len(mat.name))
        for x in mat.hist:
            u(x)
        for k in range(len(m.kinds)):
            u(m.latest.get((mat.oid, k), 0))
    for s in gen.STATES:
        q = sorted(m.queues[s])
        u(len(q))
        for x in q:
            u(x)
    h = 0xCBF29CE484222325
    for byte in b:
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def test_the_digest_is_the_models(exe, short_log, tmp_path):
    """The digest read through the Store equals the one computed from the reference model:
    the payloads are model.encode's bytes, and histories, latest, queues and the dictionary
    are the model's."""
    log, data, _ = short_log
    m = model.Model()
    m.replay(data.decode("ascii").splitlines())
    proc, _, _ = _replay(exe, log, tmp_path, "HAND", "--labflow_verify")
    assert proc.returncode == 0, proc.stderr
    assert _digests(proc.stderr)["digest"] == _model_digest(m)


@pytest.mark.parametrize("system", SYSTEMS)
def test_sanitized_replay_and_reopen(san_exe, short_log, san_env, tmp_path, system):
    log, _, want = short_log
    proc, out, js = _replay(san_exe, log, tmp_path, system, "--labflow_verify", env=san_env)
    assert not SANITIZER_REPORT.search(proc.stderr), proc.stderr
    assert proc.returncode == 0, proc.stderr
    assert out.read_text() == want
    assert f"labflow verify: {system} ok" in proc.stderr
    rows = json.loads(js.read_text())["benchmarks"]
    assert [r["requests"] for r in rows] == [SHORT["interval"]] * 3


@pytest.mark.parametrize("fault, message", [
    ("queue", "the queues hold"),
    ("reopen", "differs from"),
])
def test_the_verify_mode_fails_on_a_wrong_store(exe, short_log, tmp_path, fault, message):
    """A Store wrapper that gets one answer wrong (--labflow_inject_fault): a queue short of
    a material, or a material that claims a step more after the reopen -- the verify mode
    exits 3 and says what differs."""
    log = short_log[0]
    proc, _, _ = _replay(exe, log, tmp_path, "SQLITE", "--labflow_verify",
                         f"--labflow_inject_fault={fault}")
    assert proc.returncode == 3, proc.stderr
    assert "labflow verify FAILED" in proc.stderr and message in proc.stderr
    d = _digests(proc.stderr)
    assert (d["digest"] != d["reopened digest"]) == (fault == "reopen")


def _lines(data: bytes) -> list[str]:
    return data.decode("ascii").split("\n")


def _nth(lines, prefix, n=0):
    """Index (0-based) of the n-th line starting with `prefix`."""
    hits = [i for i, line in enumerate(lines) if line.startswith(prefix)]
    return hits[n]


def _replace_line(data: bytes, prefix: str, make, n: int = 0):
    lines = _lines(data)
    i = _nth(lines, prefix, n)
    lines[i] = make(lines[i])
    return "\n".join(lines).encode("ascii"), i + 1


def _inside_interval(data: bytes, prefix: str) -> int:
    """The first `prefix` line after MARK 2 4 (inside the second interval)."""
    lines = _lines(data)
    start = lines.index("MARK 2 4 BASELINE")
    return next(i for i in range(start, len(lines)) if lines[i].startswith(prefix))


def _at(data: bytes, i: int, make):
    lines = _lines(data)
    lines[i] = make(lines[i])
    return "\n".join(lines).encode("ascii"), i + 1


def _truncated_mid_line(d):
    cut = d.rindex(b"\nSTEP ") + 10
    return d[:cut], d[:cut].count(b"\n") + 1


def _no_end(d):
    cut = d.rindex(b"END ")
    return d[:cut], d[:cut].count(b"\n") + 1


def _overlong(d):
    lines = _lines(d)
    i = _inside_interval(d, "LOOK ")
    lines[i] = "LOOK " + "x" * 2000
    return "\n".join(lines).encode(), i + 1


def _nul_byte(d):
    i = _inside_interval(d, "LOOK ")
    return _at(d, i, lambda s: s[:6] + "\0" + s[7:])


CORRUPTIONS = {
    # name: (mutate(data) -> (data, 1-based line number of the error), message)
    "truncated line": (_truncated_mid_line, "no newline"),
    "no END": (_no_end, "no END line"),
    "unknown material in STATE": (
        lambda d: _replace_line(d, "STATE ", lambda s: "STATE 999999 " + s.split(" ")[2], 3),
        "no material 999999"),
    "unknown material in a step": (
        lambda d: _replace_line(d, "STEP qc ", lambda s: " ".join(s.split(" ")[:4] + ["1,4294967295"]
                                                                  + s.split(" ")[5:])),
        "no material 4294967295"),
    "oid beyond 64 bits": (
        lambda d: _at(d, _inside_interval(d, "HIST "), lambda s: "HIST 123456789012345678901234567890"),
        "number"),
    "over-long line": (_overlong, "longer than 1024 bytes"),
    "a NUL byte": (_nul_byte, "not printable"),
    "bad kind": (lambda d: _replace_line(d, "STEP prep ", lambda s: s.replace("STEP prep ", "STEP prepx ")),
                 "no step kind prepx"),
    "bad kind in LASTSTEP": (
        lambda d: _at(d, _inside_interval(d, "LASTSTEP "), lambda s: s.rsplit(" ", 1)[0] + " nokind"),
        "no step kind nokind"),
    "attribute missing": (
        lambda d: _replace_line(d, "STEP measure ", lambda s: s.rsplit(" ", 1)[0]),
        "attributes but measure has"),
    "string over its length": (
        lambda d: _replace_line(d, "STEP receive ", lambda s: s.split(" source=")[0] + " source=" + "a" * 17),
        "longer than its str16"),
    "u8 out of range": (
        lambda d: _replace_line(d, "STEP qc ", lambda s: s.replace(" pass=0", " pass=256").replace(" pass=1", " pass=256")),
        "out of range"),
    "two spaces": (lambda d: _replace_line(d, "STATE ", lambda s: s.replace(" ", "  ", 1)), "empty token"),
    "bad state": (lambda d: _replace_line(d, "STATE ", lambda s: s.rsplit(" ", 1)[0] + " lost"), "no state lost"),
    "read outside the intervals": (
        # between two intervals (the short log's first opens with the database's files)
        lambda d: _replace_line(d, "MARK 2 1 ", lambda s: "HIST 1\n" + s), "outside the intervals"),
    "bad type": (lambda d: _replace_line(d, "ADDATTR ", lambda s: s.rsplit(" ", 1)[0] + " str300"),
                 "out of range"),
    "split of an unknown attribute": (
        lambda d: _replace_line(d, "SPLIT ", lambda s: s.replace("=temp", "=tmp")), "has no attribute tmp"),
    "END totals": (lambda d: _replace_line(d, "END ", lambda s: "END 1 2 3"), "END totals"),
    "marker out of place": (lambda d: _replace_line(d, "MARK 1 7 ", lambda s: "MARK 1 8 BASELINE"),
                            "marker out of place"),
    "kind name over the dictionary's field": (
        lambda d: _replace_line(d, "ADDKIND ", lambda s: "ADDKIND " + "k" * 25, 2),
        "name longer than 24 characters"),
    "material name over 24 characters": (
        lambda d: _replace_line(d, "MAT ", lambda s: "MAT " + "m" * 25 + " sample", 5),
        "a material name longer than 24 characters"),
    "not a log": (lambda d: (b"LABFLOW2 1 seed=1\n" + d, 1), "not a LABFLOW1 version 1 log"),
}


@pytest.mark.parametrize("name", list(CORRUPTIONS))
def test_a_malformed_log_stops_at_its_line(san_exe, short_log, san_env, tmp_path, name):
    log, data, _ = short_log
    mutate, message = CORRUPTIONS[name]
    bad, lineno = mutate(data)
    assert bad != data
    path = tmp_path / "bad.log"
    path.write_bytes(bad)
    proc, _, _ = _replay(san_exe, path, tmp_path, "HAND", env=san_env)
    assert not SANITIZER_REPORT.search(proc.stderr), proc.stderr
    assert proc.returncode == 1, proc.stderr
    assert f"bad.log: line {lineno}: " in proc.stderr, proc.stderr
    assert message in proc.stderr, proc.stderr


@pytest.mark.parametrize("system", PERSISTENT)
def test_a_malformed_log_on_a_persistent_system(san_exe, short_log, san_env, tmp_path, system):
    """The same stop on the file databases, the error inside a measured interval."""
    log, data, _ = short_log
    i = _inside_interval(data, "STEPMATS ")
    bad, lineno = _at(data, i, lambda s: "STEPMATS 99999999")
    path = tmp_path / "bad.log"
    path.write_bytes(bad)
    proc, _, js = _replay(san_exe, path, tmp_path, system, env=san_env)
    assert not SANITIZER_REPORT.search(proc.stderr), proc.stderr
    assert proc.returncode == 1
    assert f"line {lineno}: no step 99999999" in proc.stderr
    rows = json.loads(js.read_text())["benchmarks"]
    assert rows[0].get("error_occurred") is None and rows[1].get("error_occurred") is True


def test_a_huge_queue_request_is_bounded(san_exe, short_log, san_env, tmp_path):
    """QUEUE's n is the log's: 2^64-1 asks for every material of the state, as the model
    answers it, without allocating for n."""
    log, data, _ = short_log
    i = _inside_interval(data, "QUEUE ")
    bad, _ = _at(data, i, lambda s: s.rsplit(" ", 1)[0] + " 18446744073709551615")
    path = tmp_path / "big.log"
    path.write_bytes(bad)
    m = model.Model()
    m.replay(bad.decode().splitlines())
    proc, out, _ = _replay(san_exe, path, tmp_path, "HAND", env=san_env)
    assert not SANITIZER_REPORT.search(proc.stderr), proc.stderr
    assert proc.returncode == 0, proc.stderr
    assert out.read_text() == "".join(line + "\n" for line in m.out)


F32_VALUES = ("-0.0000", "0.1", "-12.3456", "123456789.5", "5.", ".5", "16777215.9375",
              "0.00001", "-7.0625", "99999999999", "1.00000001", "0")


def test_f32_values_round_trip_as_the_model_prints_them(san_exe, short_log, san_env, tmp_path):
    """Every f32 attribute of every step rewritten to values the generator never writes
    (negative zero, inexact decimals, beyond 2^24, more than nine digits): the driver's
    parse and print (a fast path for multiples of 1/16, strtof/printf otherwise) answer what
    the model answers."""
    log, data, _ = short_log
    f32 = {a for _, attrs in gen.INITIAL_SCHEMA for a, t in attrs if t == "f32"} | {"purity"}
    out_lines, i = [], 0
    for line in data.decode("ascii").split("\n"):
        if line.startswith("STEP "):
            t = line.split(" ")
            for j in range(5, len(t)):
                name = t[j].split("=", 1)[0]
                if name in f32:
                    t[j] = f"{name}={F32_VALUES[i % len(F32_VALUES)]}"
                    i += 1
            line = " ".join(t)
        out_lines.append(line)
    bad = "\n".join(out_lines)
    path = tmp_path / "f32.log"
    path.write_text(bad)
    m = model.Model()
    m.replay(bad.splitlines())
    want = "".join(line + "\n" for line in m.out)
    assert "A -0.0000" in want or "=-0.0000" in want
    proc, out, _ = _replay(san_exe, path, tmp_path, "HAND", env=san_env)
    assert not SANITIZER_REPORT.search(proc.stderr), proc.stderr
    assert proc.returncode == 0, proc.stderr
    assert out.read_text() == want


def test_usage_errors(exe, short_log, tmp_path):
    log = short_log[0]
    proc = subprocess.run([str(exe), "--labflow_list"], capture_output=True, text=True)
    assert proc.returncode == 0
    assert {line.split()[0] for line in proc.stdout.splitlines()} >= set(SYSTEMS)
    # the benchmarks' names without a log (a runner asks which systems a binary holds)
    proc = subprocess.run([str(exe), "--benchmark_list_tests=true"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    names = [n.split("/iterations")[0] for n in proc.stdout.split()]
    assert all(f"labflow/{s}/{c}" in names for s in SYSTEMS for c in gen.CUT_NAMES)
    proc = subprocess.run([str(exe), "--labflow_system=LMDB", "--benchmark_list_tests"],
                          capture_output=True, text=True)
    assert [n.split("/iterations")[0] for n in proc.stdout.split()] == \
        [f"labflow/LMDB/{c}" for c in gen.CUT_NAMES]
    proc = subprocess.run([str(exe), f"--labflow_log={log}", "--labflow_system=NOPE"],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "HAND" in proc.stderr
    full = tmp_path / "full"
    full.mkdir()
    (full / "x").write_text("x")
    proc = subprocess.run([str(exe), f"--labflow_log={log}", "--labflow_system=SQLITE",
                           f"--labflow_dir={full}"], capture_output=True, text=True)
    assert proc.returncode == 2 and "not an empty directory" in proc.stderr
    proc = subprocess.run([str(exe), f"--labflow_log={tmp_path / 'none.log'}", "--labflow_system=HAND",
                           f"--labflow_dir={tmp_path / 'd'}"], capture_output=True, text=True)
    assert proc.returncode == 1 and "cannot open" in proc.stderr


@pytest.mark.skipif(not os.environ.get("P2GEN_SOAK"),
                    reason="a soak: set P2GEN_SOAK=1 (P2GEN_SOAK_N mutations, default 200)")
def test_soak_random_mutations_against_the_model(san_exe, short_log, san_env, tmp_path):
    """Random damage to the log (a byte changed, a line dropped, duplicated or cut): the
    sanitized driver never crashes; when it accepts a log the model accepts it and the
    outputs are equal, and a log the model refuses the driver refuses too (the driver may
    refuse more: it is stricter on tokens the generator never writes)."""
    import random
    log, data, _ = short_log
    rng = random.Random(1996)
    lines = data.split(b"\n")
    for i in range(int(os.environ.get("P2GEN_SOAK_N", "200"))):
        ls = list(lines)
        k = rng.randrange(1, len(ls) - 1)
        what = rng.randrange(4)
        if what == 0:
            ln = bytearray(ls[k])
            if ln:
                ln[rng.randrange(len(ln))] = rng.choice(b"0123456789 ,=-.aZ\x00\xff")
            ls[k] = bytes(ln)
        elif what == 1:
            del ls[k]
        elif what == 2:
            ls.insert(k, ls[k])
        else:
            ls[k] = ls[k][:rng.randrange(len(ls[k]) + 1)]
        bad = b"\n".join(ls)
        path = tmp_path / "soak.log"
        path.write_bytes(bad)
        try:
            m = model.Model()
            m.replay(bad.decode("ascii", errors="strict").split("\n")[:-1] if bad.endswith(b"\n")
                     else bad.decode("ascii").split("\n"))
            want = "".join(line + "\n" for line in m.out)
        except (model.LogError, UnicodeDecodeError, ValueError, KeyError, IndexError):
            want = None
        proc, out, _ = _replay(san_exe, path, tmp_path, "HAND", env=san_env)
        assert not SANITIZER_REPORT.search(proc.stderr), (i, proc.stderr)
        assert proc.returncode in (0, 1), (i, proc.returncode, proc.stderr)
        if proc.returncode == 0:
            assert want is not None, (i, "the driver accepted a log the model refuses")
            assert out.read_text() == want, i
        elif want is None:
            assert "line " in proc.stderr, (i, proc.stderr)
