"""The OO7 benchmark: the binary on the tiny database for HAND, SQLite and every generated
variant of type_equations/oo7/ (every operation hot, and cold and warm in a fresh process
for the persistent systems, the same count from every system, the counters of each run),
the fresh process alone (a cold run proved cold), the Markdown tables and plots, and a
wrong count turning into an error row (so the comparison can fail)."""
from __future__ import annotations

import ctypes
import json
import mmap
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import has_lto_sections
from p2gen.bench.oo7 import run as bo
from p2gen.cli import main

TINY_PRIV = 81 * 3          # tiny: 3^4 base assemblies, 3 private parts each
TINY_PARTS = TINY_PRIV * 10  # 10 atomic parts per composite part


def _have_libs() -> str | None:
    if not shutil.which("c++") or not shutil.which("cc"):
        return "no C/C++ compiler"
    dirs = ["/usr/include", "/usr/local/include"]
    for h in ("benchmark/benchmark.h", "sqlite3.h", "lmdb.h"):
        if not any(os.path.exists(os.path.join(d, h)) for d in dirs):
            return f"{h} not installed (apt-get install libbenchmark-dev libsqlite3-dev liblmdb-dev)"
    for f in bo.REQUIRED + bo.REFERENCE_SOURCES:
        if not (bo.SOURCE_DIR / f).exists():
            return f"bench/oo7/{f} missing"
    return None


def _fstype(path: Path) -> str:
    """The type of the file system holding path (/proc/self/mountinfo), or "?"."""
    best, kind = "", "?"
    p = str(path.resolve())
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return kind
    for line in lines:
        left, _, right = line.partition(" - ")
        mount = left.split()[4].replace("\\040", " ")
        if (p == mount or p.startswith(mount.rstrip("/") + "/")) and len(mount) >= len(best):
            best, kind = mount, right.split()[0]
    return kind


def _resident_pages(fd: int, length: int) -> int:
    """Pages of the file behind fd in the page cache (mincore through a mapping of our own)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                          ctypes.c_long]
    addr = libc.mmap(None, length, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
    if addr in (None, ctypes.c_void_p(-1).value):
        raise OSError(ctypes.get_errno(), "mmap")
    pages = (length + mmap.PAGESIZE - 1) // mmap.PAGESIZE
    vec = (ctypes.c_ubyte * pages)()
    try:
        if libc.mincore(ctypes.c_void_p(addr), ctypes.c_size_t(length), vec) != 0:
            raise OSError(ctypes.get_errno(), "mincore")
    finally:
        libc.munmap(ctypes.c_void_p(addr), ctypes.c_size_t(length))
    return sum(b & 1 for b in vec)


def _cannot_evict(d: Path):
    """None if the file system of d drops a clean file from the page cache on posix_fadvise
    DONTNEED (the cold runs' drop: measured with a probe file and mincore), else why not
    (tmpfs keeps its files in the page cache, so no run on it can be cold)."""
    probe = d / "evict_probe"
    data = os.urandom(64 * mmap.PAGESIZE)
    with open(probe, "wb") as f:
        f.write(data)
        f.flush()
        os.fdatasync(f.fileno())
    fd = os.open(probe, os.O_RDONLY)
    try:
        os.read(fd, len(data))
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        left = _resident_pages(fd, len(data))
    finally:
        os.close(fd)
        probe.unlink()
    if left == 0:
        return None
    return (f"{d} is on {_fstype(d)}, which kept {left} of 64 clean pages in the page cache "
            "after posix_fadvise DONTNEED: no run there can be cold")


@pytest.fixture(scope="module")
def exe(tmp_path_factory):
    why = _have_libs()
    if why:
        pytest.skip(why)
    d = tmp_path_factory.mktemp("oo7_build")
    # every variant built the users' way, and one -lto twin (all of them would add half
    # again to the build); -O0 for the drivers (each includes its variant's C, inline),
    # peers and after the users' flags of the generated code (gen_opt): the runs here are
    # on the tiny database (test_tpcb_bench checks the benchmarks' own flags)
    vs = bo.default_variants()
    twins = [bo.lto_twin(v) for v in vs if (v.name, v.mem) == LTO_TWIN]
    return bo.build(str(d), opt="-O0", gen_opt="-O0", variants=vs + twins)


LTO_TWIN = ("HASH/ILIST", "transient")


@pytest.fixture(scope="module")
def tiny_run(exe, tmp_path_factory):
    d = tmp_path_factory.mktemp("oo7_tiny")
    out = d / "oo7.json"
    opts = bo.Options(size="tiny", fanouts=(3,), dir=str(d / "db"), hot_runs=2)
    lines = []
    rc = bo.run(str(exe), opts, str(out), say=lines.append)
    return d, out, rc, lines


def test_every_system_runs_every_op_with_the_same_counts(tiny_run):
    d, out, rc, lines = tiny_run
    assert rc == 0, "\n".join(lines)
    why = _cannot_evict(d)
    evicts = why is not None
    context, rows = bo.load_rows(str(out))
    systems = [tuple(s.rsplit("/", 1)) for s in context["oo7_systems"].split(",")]
    assert ("HAND", "transient") in systems
    assert ("SQLITE", "persistent") in systems and ("SQLITE", "transient") in systems
    variants = bo.default_variants() if (bo.SOURCE_DIR / bo.P2_DRIVER).exists() else []
    for v in variants:
        assert (v.name, v.mem) in systems
    if variants:
        assert (LTO_TWIN[0] + "-lto", LTO_TWIN[1]) in systems
    got = {(r.system, r.mem, r.op, r.phase) for r in rows}
    persistent = {(r.system, r.mem) for r in rows if r.persistent}
    assert ("SQLITE", "persistent") in persistent and ("HAND", "transient") not in persistent
    for v in variants:
        assert ((v.name, v.mem) in persistent) == (v.mem == "persistent")
    for s, m in systems:
        for op in bo.OPS:
            assert (s, m, op, "hot") in got, (s, m, op)
            for phase in bo.FRESH:   # a transient system has nothing to be cold or warm
                assert ((s, m, op, phase) in got) == ((s, m) in persistent), (s, m, op, phase)
    assert bo.failures(rows) == []
    assert bo.consistency(rows) == []
    assert bo.missing(rows) == []
    counts = {r.op: r.get("count") for r in rows}
    assert counts["T1"] == TINY_PARTS and counts["T2b"] == TINY_PARTS
    assert counts["T2c"] == 4 * TINY_PARTS and counts["T3c"] == 4 * TINY_PARTS
    assert counts["T6"] == TINY_PRIV and counts["T2a"] == TINY_PRIV and counts["CU"] == TINY_PRIV
    assert counts["Q1"] == 10 and counts["Q7"] == 500 and counts["Q8"] == 500
    assert counts["SM1"] == 5 and counts["SM2"] == 5
    assert counts["T5do"] == counts["T5undo"] > 0
    for r in rows:
        assert r.ms is not None and r.ms >= 0
        assert r.get("build_s") is not None and r.get("db_MB", 0) > 0 and r.get("raw_MB", 0) > 0
        if r.op == "T1":
            assert r.get("connections") == 3 * TINY_PARTS
        assert r.get("major_faults") is not None and r.get("minor_faults") is not None
        if r.phase == "hot":
            # a read-only operation's hot run is a batch of ~200 µs (--oo7_hot_batch_us):
            # the hot time is the mean of every repetition of the two runs; Q1's ten
            # lookups take microseconds in every system, so it repeats
            assert r.get("runs") == (1 if r.op in bo.UPDATES else 2 * r.get("hot_reps"))
            if r.op in bo.UPDATES:
                assert r.get("hot_reps") == 1, (r.system, r.op)
            elif r.op == "Q1":
                assert r.get("hot_reps") > 1, (r.system, r.op)
            assert (r.get("cold_ms") is not None) == r.persistent
            assert (r.get("warm_ms") is not None) == r.persistent
        if r.persistent:
            assert r.get("file_MB", 0) > 0 and r.get("alloc_MB", 0) > 0
        if r.phase in bo.FRESH:
            # the fresh process read the files' residency before its open and after its run
            assert 0 <= r.get("resident_pct") <= 100 and 0 <= r.get("resident_after_pct") <= 100
        if r.phase == "cold":
            assert r.get("cold_proved") == (0 if evicts else 1), (r.system, r.op, why)
        if r.phase == "warm":   # every page cached, none mapped: minor faults only
            assert r.get("resident_pct") >= 99 and r.get("major_faults") == 0, (r.system, r.op)
            if r.op in ("T2a", "T2b", "T2c") and r.get("write_bytes") is not None:
                assert r.get("write_bytes") > 0, (r.system, r.op, r.phase)   # a commit writes
            if r.op in ("T1", "T6", "Q1", "Q5") and r.get("write_bytes") is not None:
                assert r.get("write_bytes") == 0, (r.system, r.op, r.phase)  # a read does not
    # one progress line per benchmark, and the database files are gone
    assert sum(1 for l in lines if l.startswith("[")) == len(rows)
    assert not (d / "db").exists() or not any((d / "db").iterdir())


def test_report_writes_tables_and_plots(tiny_run, tmp_path):
    pytest.importorskip("matplotlib")
    _, out, rc, _ = tiny_run
    text, pngs, problems = bo.report(str(out), str(tmp_path), plots=True)
    assert problems == []
    assert (tmp_path / "oo7.md").read_text() == text
    assert "### tiny, fanout 3" in text
    assert "| op | count | HAND transient |" in text
    assert f"| T1 | {TINY_PARTS:,} | n/a / n/a / " in text   # HAND first: transient
    assert "Hot time relative to HAND transient" in text
    assert "2 hot runs, each a read-only operation repeated back to back for about 200 µs" in text
    assert "| system | build s | DB MB | raw MB | DB / raw | file MB | allocated MB |" in text
    for op in bo.OPS:
        assert f"\n| {op} |" in text
    assert "| op | system | cold ms | warm ms | hot ms | cached before cold |" in text
    for op in bo.PROTOCOL_OPS:
        assert f"\n| {op} | HAND transient | n/a | n/a | " in text
        assert f"\n| {op} | SQLITE persistent | " in text
    assert [Path(p).name for p in pngs] == ["oo7_hot_tiny_f3.png", "oo7_cold_hot_tiny_f3.png"]
    for p in pngs:
        assert Path(p).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"({Path(p).name})" in text


def test_a_wrong_count_is_an_error_row(exe, tmp_path):
    out = tmp_path / "oo7.json"
    opts = bo.Options(size="tiny", fanouts=(3,), dir=str(tmp_path / "db"), ops="T1,Q2",
                      filter="HAND|SQLITE", extra=("--oo7_inject_fault=SQLITE/Q2",))
    lines = []
    rc = bo.run(str(exe), opts, str(out), say=lines.append)
    assert rc == 3
    _, rows = bo.load_rows(str(out))
    bad = [r for r in rows if r.error]
    assert {(r.system, r.mem, r.op, r.phase) for r in bad} == {
        ("SQLITE", "persistent", "Q2", p) for p in bo.PHASES} | {("SQLITE", "transient", "Q2", "hot")}
    hand_q2 = next(r.get("count") for r in rows if (r.system, r.op) == ("HAND", "Q2"))
    for r in bad:
        assert f"Q2 returned {hand_q2 + 1:.0f}, HAND/transient returned {hand_q2:.0f}" in r.error
    assert all(not r.error for r in rows if r.op == "T1")
    assert any("OO7 FAILURE" in l for l in lines)
    # the reference system itself wrong: the spec's exact result catches it
    rc = bo.run(str(exe), bo.Options(size="tiny", dir=str(tmp_path / "db"), ops="T6",
                                     filter="HAND", extra=("--oo7_inject_fault=HAND",)),
                str(out), say=lines.append)
    assert rc == 3
    _, rows = bo.load_rows(str(out))
    assert rows and all(f"spec's exact result is {TINY_PRIV}" in r.error for r in rows)
    r = CliRunner().invoke(main, ["bench", "oo7", "--render", str(out), "--out", str(tmp_path / "o"),
                                  "--no-plots"])
    assert r.exit_code == 1
    assert "PROBLEM: HAND/transient tiny_f3 T6 hot:" in r.output


def test_differing_counts_and_missing_rows_are_problems(tiny_run, tmp_path):
    _, out, _, _ = tiny_run
    data = json.loads(out.read_text())
    b = next(b for b in data["benchmarks"] if b["name"].startswith("OO7/SQLITE/transient/tiny_f3/Q5/hot"))
    b["count"] += 1
    data["benchmarks"] = [b for b in data["benchmarks"]
                          if not b["name"].startswith(("OO7/HAND/transient/tiny_f3/T1/hot",
                                                       "OO7/SQLITE/persistent/tiny_f3/T6/warm"))]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    r = CliRunner().invoke(main, ["bench", "oo7", "--render", str(bad), "--out", str(tmp_path / "o"),
                                  "--no-plots"])
    assert r.exit_code == 1
    assert "PROBLEM: tiny_f3 Q5: counts differ" in r.output
    assert "PROBLEM: HAND/transient tiny_f3 T1: no hot run" in r.output
    assert "PROBLEM: SQLITE/persistent tiny_f3 T6: no warm run" in r.output
    assert "HAND/transient tiny_f3 T1: no cold run" not in r.output   # transient: none expected
    r = CliRunner().invoke(main, ["bench", "oo7", "--render", str(out), "--out", str(tmp_path / "o2"),
                                  "--no-plots"])
    assert r.exit_code == 0, r.output


def test_names_and_options():
    m = bo.NAME.match("OO7/HASH/ILIST/persistent/small_f6/T3c/cold/iterations:1/manual_time")
    assert m and m.groups() == ("HASH/ILIST", "persistent", "small", "6", "T3c", "cold")
    assert bo.Options(size="medium", fanouts=(3, 6, 9)).args()[:2] == ["--oo7_size=medium",
                                                                      "--oo7_fanout=3,6,9"]
    assert bo.REFERENCE == dict(size="medium", fanouts=(3, 6, 9))
    assert bo.DEFAULT == dict(size="small", fanouts=(3,))
    assert bo.fmt_ms(0.00042) == "0.00042" and bo.fmt_ms(12.34) == "12.3"
    m = bo.NAME.match("OO7/HASH/ILIST-lto/transient/small_f3/Q1/hot/iterations:1/manual_time")
    assert m and m.groups()[:2] == ("HASH/ILIST-lto", "transient")
    m = bo.NAME.match("OO7/SQLITE/persistent/medium_f3/T2b/warm/iterations:1/manual_time")
    assert m and m.groups()[4:] == ("T2b", "warm")
    # by default every hash variant but the journalled one gets an -lto twin right after it
    vs = bo.default_variants(lto_rows=True)
    twins = [v for v in vs if v.lto]
    assert twins and all(v.name.startswith("HASH") and v.name.endswith("-lto") and not v.journal
                         for v in twins)
    for t in twins:
        plain = vs[vs.index(t) - 1]
        assert (plain.name + "-lto", plain.mem, plain.spec, plain.prefix + "_lto") == \
            (t.name, t.mem, t.spec, t.prefix) and not plain.lto
    assert not any(v.lto for v in bo.default_variants())


def test_rows_built_as_users_build_and_with_lto(exe):
    """Zero-cost layering as users build it: a variant's default row is built as the README says (p2gen build's library,
    the driver compiled without LTO and with <PREFIX>_INLINE: no LTO bytecode anywhere in
    it), its -lto row with LTO across generated code and driver."""
    if not shutil.which("readelf"):
        pytest.skip("no readelf")
    if not (bo.SOURCE_DIR / bo.P2_DRIVER).exists():
        pytest.skip("no generated variants")
    obj = Path(exe).parent / "obj"
    for o in ("driver_oo7_hash_ilist_transient.o", "oo7_hash_ilist_transient.o", "p2_runtime.o",
              "driver_oo7_noindex_ilist_persistent.o"):
        assert not has_lto_sections(obj / o), o
    assert (obj / "liboo7_hash_ilist_transient.a").exists()
    for o in ("driver_oo7_hash_ilist_transient_lto.o", "oo7_hash_ilist_transient_lto.o"):
        assert has_lto_sections(obj / o), o


def test_hot10_ratios_to_hand_and_lto():
    """The zero-cost layering table: T6, T7, Q1, Q2 hot of each generated variant against HAND (target
    ≤ 1.5×) and against its own -lto build."""
    cfg = ("small", 3)
    summary = {}
    for op, hand, p2, lto in (("T6", 0.010, 0.012, 0.010), ("T7", 0.002, 0.005, 0.004),
                              ("Q1", 0.004, 0.006, 0.003), ("Q2", 0.100, 0.120, None),
                              ("Q7", 1.0, 9.0, 9.0)):
        summary[("HAND", "transient") + cfg + (op,)] = {"hot": hand, "cold": 2 * hand}
        summary[("SQLITE", "persistent") + cfg + (op,)] = {"hot": 50 * hand, "cold": 90 * hand}
        summary[("HASH/ILIST", "transient") + cfg + (op,)] = {"hot": p2, "cold": 2 * p2}
        summary[("NOINDEX/ILIST", "persistent") + cfg + (op,)] = {"hot": 3 * p2, "cold": 4 * p2}
        if lto is not None:
            summary[("HASH/ILIST-lto", "transient") + cfg + (op,)] = {"hot": lto, "cold": 2 * lto}
    rows = {(s, m, op): r for s, m, op, *r in bo.hot10(summary, *cfg, ("HAND", "transient"))}
    assert {k[0] for k in rows} == {"HASH/ILIST", "NOINDEX/ILIST"}
    assert {k[2] for k in rows} == set(bo.HOT10)
    t, r, lt, lr, ab = rows[("HASH/ILIST", "transient", "T7")]
    assert (t, lt) == (0.005, 0.004)
    assert r == pytest.approx(2.5) and lr == pytest.approx(2.0) and ab == pytest.approx(1.25)
    assert rows[("HASH/ILIST", "transient", "Q2")][2:] == [None, None, None]
    md = bo.render_table(summary, {"oo7_systems": "HAND/transient,HASH/ILIST/transient,"
                                   "HASH/ILIST-lto/transient,NOINDEX/ILIST/persistent,SQLITE/persistent"})
    assert "| system | op | hot µs | × HAND | ≤ 1.5× | -flto hot µs | -flto × HAND | as built / -flto |" in md
    assert "| HASH/ILIST transient | T6 | 12.0 | 1.20× | yes | 10.0 | 1.00× | 1.20× |" in md
    assert "| HASH/ILIST transient | T7 | 5.00 | 2.50× | no | 4.00 | 2.00× | 1.25× |" in md
    assert "| HASH/ILIST transient | Q2 | 120 | 1.20× | yes | — | — | — |" in md
    assert "| NOINDEX/ILIST persistent | Q1 | 18.0 | 4.50× | no | — | — | — |" in md
    assert "| HASH/ILIST-lto transient | T6 |" not in md and "| SQLITE persistent | T6 |" not in md


def test_hot_rounds_filter_names_the_zero_cost_rows_only():
    """A round runs the zero-cost table's operations hot for HAND and every generated variant
    that ran them, named exactly (a system name is matched literally), and nothing else."""
    def row(system, mem, op, phase="hot", error=None):
        return bo.Row(system, mem, "tiny", 3, op, phase, {"hot_ms": 1.0}, error)
    rows = [row("HAND", "transient", "T6"), row("HASH/ILIST-lto", "transient", "T6"),
            row("HASH/ILIST", "persistent", "Q1"), row("HASH/ILIST", "persistent", "Q1", "cold"),
            row("SQLITE", "persistent", "T6"), row("LMDB", "persistent", "Q1"),
            row("NOINDEX/ILIST", "persistent", "T1"), row("A.B", "transient", "T6", error="x")]
    assert bo.hot_rounds_filter(rows) == (
        "^OO7/(HAND/transient/tiny_f3|HASH/ILIST-lto/transient/tiny_f3|"
        "HASH/ILIST/persistent/tiny_f3)/(T6|Q1)/hot(/|$)", "T6,Q1")
    assert bo._gb_escape("A.B(c)|d*+?[x]{2}^$\\") == "A\\.B\\(c\\)\\|d\\*\\+\\?\\[x\\]\\{2\\}\\^\\$\\\\"
    assert bo.hot_rounds_filter([row("HAND", "transient", "T1"), row("SQLITE", "persistent", "Q1")]) is None


def test_hot_rounds_add_processes_and_the_tables_take_their_median(exe, tmp_path):
    """`rounds` more processes run T6, T7, Q1, Q2 hot; their rows join the main run's, the
    context says how many, and the tables' hot time of those operations is the median over
    the main run and the rounds (other operations and systems keep their one row)."""
    out = tmp_path / "oo7.json"
    opts = bo.Options(size="tiny", fanouts=(3,), dir=str(tmp_path / "db"), ops="T1,T6,Q1",
                      filter="HAND|HASH/ILIST/transient|SQLITE/transient", hot_runs=1)
    assert bo.run(str(exe), opts, str(out)) == 0
    lines = []
    assert bo.run_hot_rounds(str(exe), opts, str(out), 2, say=lines.append) == 0
    assert sum(l.startswith("round ") for l in lines) == 2
    context, rows = bo.load_rows(str(out))
    assert context["p2gen_hot_rounds"] == 2
    hot = {}
    for r in rows:
        if r.phase == "hot":
            hot.setdefault((r.system, r.mem, r.op), []).append(r.ms)
    for key in (("HAND", "transient", "T6"), ("HAND", "transient", "Q1"),
                ("HASH/ILIST", "transient", "T6"), ("HASH/ILIST", "transient", "Q1")):
        assert len(hot[key]) == 3, key
    assert len(hot[("HAND", "transient", "T1")]) == 1
    assert len(hot[("SQLITE", "transient", "T6")]) == 1
    summary = bo.summarize(rows)
    t6 = hot[("HASH/ILIST", "transient", "T6")]
    assert summary[("HASH/ILIST", "transient", "tiny", 3, "T6")]["hot"] == sorted(t6)[1]
    text, _, problems = bo.report(str(out), str(tmp_path / "o"), plots=False)
    assert problems == []
    assert "T6, T7, Q1 and Q2 hot also in 2 more processes" in text
    assert "(hot, the median over 3 processes: the main run and 2 rounds)" in text
    assert bo.run_hot_rounds(str(exe), opts, str(out), 0) == 0   # none asked: nothing changes
    assert len(bo.load_rows(str(out))[1]) == len(rows)


COLD_SYSTEM = "HASH/ILIST/persistent"   # a persistent variant without a journal


def test_a_cold_run_in_a_fresh_process_is_proved_cold(exe, tmp_path):
    """The binary's fresh process alone (--oo7_one) on the tiny database of one persistent
    variant: the counters are there; cold starts with none of the file cached (mincore)
    and takes major faults, warm with all of it cached and takes none; an update writes."""
    if COLD_SYSTEM not in {f"{v.name}/{v.mem}" for v in bo.default_variants()}:
        pytest.skip(f"no variant {COLD_SYSTEM} in type_equations/oo7/")
    why = _cannot_evict(tmp_path)
    if why:
        pytest.skip(why)
    db = tmp_path / "db"
    base = [str(exe), "--oo7_size=tiny", "--oo7_fanout=3", f"--oo7_system={COLD_SYSTEM}", f"--oo7_dir={db}"]
    subprocess.run(base + ["--oo7_one=build"], check=True, timeout=120)

    def one(temp: str, op: str, *more: str) -> dict:
        p = subprocess.run(base + [f"--oo7_one={temp}", f"--oo7_ops={op}", *more], capture_output=True,
                           text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout)

    cold, warm, update = one("cold", "T1"), one("warm", "T1"), one("cold", "T2a")
    for r in (cold, warm, update):
        assert {"count", "seconds", "major_faults", "minor_faults", "read_bytes", "write_bytes",
                "resident_pct", "resident_after_pct", "restore_count", "file_bytes",
                "alloc_bytes"} <= r.keys()
        assert r["file_bytes"] > 0 and r["alloc_bytes"] > 0
    assert cold["count"] == warm["count"] == TINY_PARTS and cold["extra"] == 3 * TINY_PARTS
    assert cold["resident_pct"] == 0 and cold["resident_after_pct"] > 0
    assert cold["major_faults"] > 0
    assert warm["resident_pct"] == 100 and warm["major_faults"] == 0 and warm["minor_faults"] > 0
    assert update["count"] == TINY_PRIV and update["restore_count"] == TINY_PRIV
    if update["write_bytes"] >= 0:   # -1: no /proc/self/io
        assert update["write_bytes"] > 0 and cold["write_bytes"] == 0
    # readahead advised off: the same run reads page by page, a fault each
    random = one("cold", "T1", "--oo7_readahead=random")
    assert random["count"] == TINY_PARTS and random["readahead_advised"] >= 1
    assert random["major_faults"] > cold["major_faults"] and random["resident_pct"] == 0


def test_the_fresh_process_never_makes_a_database(exe, tmp_path):
    """A cold run where there is no database is refused, and creates none."""
    empty = tmp_path / "empty"
    empty.mkdir()
    p = subprocess.run([str(exe), "--oo7_size=tiny", "--oo7_one=cold", f"--oo7_system={COLD_SYSTEM}",
                        f"--oo7_dir={empty}", "--oo7_ops=T1"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and "no database of" in p.stderr
    assert list(empty.iterdir()) == []
    p = subprocess.run([str(exe), "--oo7_one=cold", "--oo7_system=HAND/transient", f"--oo7_dir={empty}",
                        "--oo7_ops=T1"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and "keeps no files" in p.stderr


def test_transient_is_na_and_not_cold_is_flagged():
    """The report: a transient system's cold and warm are n/a, never a number; a cold run
    whose files stayed cached is marked and listed."""
    def row(system, mem, phase, **c):
        return bo.Row(system, mem, "small", 3, "T1", phase,
                      dict(count=10, persistent=int(mem == "persistent"), major_faults=0,
                           minor_faults=5, **c))
    rows = [row("HAND", "transient", "hot", hot_ms=1.0),
            row("P", "persistent", "cold", cold_ms=9.0, resident_pct=100.0, cold_proved=0,
                resident_after_pct=100.0, read_bytes=0, write_bytes=0, file_MB=1.0, alloc_MB=1.0),
            row("P", "persistent", "warm", warm_ms=3.0, resident_pct=100.0, resident_after_pct=100.0,
                read_bytes=0, write_bytes=0, file_MB=1.0, alloc_MB=1.0),
            row("P", "persistent", "hot", hot_ms=2.0, file_MB=1.0, alloc_MB=1.0)]
    assert bo.missing(rows) == []
    assert bo.missing(rows[:2]) == ["P/persistent small_f3 T1: no hot run",
                                    "P/persistent small_f3 T1: no warm run"]
    assert bo.not_cold(rows) == ["P/persistent small_f3 T1: not cold, 100% of the files' pages "
                                 "were cached before the open"]
    md = bo.render_table(bo.summarize(rows), {"oo7_systems": "HAND/transient,P/persistent"})
    assert "| T1 | 10 | n/a / n/a / 1.00 | 9.00† / 3.00 / 2.00 |" in md
    assert "† not cold" in md
    assert "| T1 | HAND transient | n/a | n/a | 1.00 | n/a | n/a | n/a / n/a / 0 | n/a / n/a / 5 | n/a | n/a / n/a |" in md
    assert "| T1 | P persistent | 9.00† | 3.00 | 2.00 | 100% | 100% | 0 / 0 / 0 | 5 / 5 / 5 | 0 | 0 / 0 |" in md
    assert "| HAND transient | " in md and "| n/a | n/a |" in md   # no files: no file sizes


def test_durable_systems_run_updates_in_a_row(exe, tmp_path):
    """The durable comparison's driver side: the systems that group commits by 100 are
    registered only with --oo7_durable=1; --oo7_update_runs=N runs each update operation N
    times in a row (SM1 in rounds of new ids, SM2 after a row of SM1s), every count right,
    the database as built after each row (the driver's verify), and the report's tables."""
    listed = subprocess.run([exe, "--oo7_list"], capture_output=True, text=True, check=True).stdout
    durable = subprocess.run([exe, "--oo7_list", "--oo7_durable=1"], capture_output=True, text=True,
                             check=True).stdout
    for name in ("LMDB-SYNC100", "SQLITE-WAL100"):
        assert f"{name} persistent" not in listed and f"{name} persistent" in durable
    for name in ("LMDB", "LMDB-SYNC", "SQLITE-WAL"):
        assert f"{name} persistent" in listed
    out = tmp_path / "oo7_durable.json"
    opts = bo.Options(size="tiny", fanouts=(3,), dir=str(tmp_path / "db"), update_runs=5, durable=True,
                      ops="T2a,T3b,SM1,SM2",
                      filter="^OO7/(HASH/ILIST/JOURNAL|SQLITE-WAL100|LMDB-SYNC|LMDB-SYNC100)/persistent/.*/hot")
    assert "--oo7_update_runs=5" in opts.args() and "--oo7_durable=1" in opts.args()
    lines = []
    assert bo.run(exe, opts, str(out), say=lines.append) == 0, "\n".join(lines)
    context, rows = bo.load_rows(str(out))
    assert context["oo7_update_runs"] == "5" and context["oo7_durable"] == "1"
    systems = {r.system for r in rows}
    assert {"SQLITE-WAL100", "LMDB-SYNC", "LMDB-SYNC100"} <= systems
    assert bo.failures(rows) == [] and bo.consistency(rows) == [] and bo.missing_hot(rows) == []
    assert all(r.phase == "hot" and r.get("runs") == 5 for r in rows)
    counts = {(r.system, r.op): r.get("count") for r in rows}
    for s in systems:
        assert counts[(s, "T2a")] == TINY_PRIV and counts[(s, "T3b")] == TINY_PARTS
        assert counts[(s, "SM1")] == 5 and counts[(s, "SM2")] == 5
    text, problems = bo.report_durable(str(out), str(tmp_path))
    assert problems == []
    assert "| op | " in text and "| SM1 |" in text and "LMDB-SYNC100" in text
    assert "LMDB sync / record log, per 100" not in text   # no record log in this run
    assert (tmp_path / "oo7_durable.md").read_text() == text


def test_durable_manifest_and_filter():
    import re
    vs = bo.durable_variants()
    assert {(v.name, v.mem, v.journal, v.durable_only) for v in vs} == {
        ("HASH/ILIST/JOURNAL100", "persistent", True, True), ("HASH/ILIST/WAL100", "persistent", True, True)}
    assert not any(v.durable_only for v in bo.default_variants())
    f = re.compile(bo.durable_filter())
    for name in ("HASH/ILIST", "HASH/ILIST/WAL100", "SQLITE-WAL100", "LMDB-SYNC", "LMDB"):
        assert f.search(f"OO7/{name}/persistent/small_f3/T2a/hot")
    assert not f.search("OO7/HASH/ILIST/WAL/persistent/small_f3/T2a/cold")
    assert not f.search("OO7/HASH/ILIST-lto/persistent/small_f3/T2a/hot")
    assert not f.search("OO7/HAND/transient/small_f3/T2a/hot")


def test_pointers_report_states_the_narrow_links_target(tmp_path):
    """`--pointers` report: a <NAME>/OFFSET32 row's cold T1 pages and file against <NAME>'s,
    with the targets (≤ 0.75× the pages, ≤ 0.8× the file) and whether they are met."""
    def bench(system, phase, faults, alloc):
        return {"name": f"OO7/{system}/persistent/medium_f3/T1/{phase}/iterations:1/manual_time",
                "run_type": "iteration", "count": 437400, "cold_ms": 100.0, "cold_open_ms": 1.0,
                "hot_ms": 20.0, "major_faults": faults, "open_major_faults": 0, "alloc_MB": alloc}
    for pages, size, verdict in ((5763, 37.0, "met"), (8000, 37.0, "missed"), (5763, 45.0, "missed")):
        data = {"context": {}, "benchmarks": [
            bench("HASH/ILIST", "cold", 8785, 49.5), bench("HASH/ILIST", "hot", 0, 49.5),
            bench("HASH/ILIST/OFFSET32", "cold", pages, size), bench("HASH/ILIST/OFFSET32", "hot", 0, size)]}
        path = tmp_path / "p.json"
        path.write_text(json.dumps(data))
        text, problems = bo.report_pointers(str(path), str(tmp_path))
        assert problems == []
        note = next(l for l in text.splitlines() if l.startswith("- HASH/ILIST/OFFSET32: cold T1"))
        assert f"major faults {pages / 8785:.2f}× HASH/ILIST, file {size / 49.5:.2f}×" in note, note
        assert note.rstrip(")").split(": ")[-1].startswith(verdict), note
