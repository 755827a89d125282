"""`p2gen bench tpcb --overhead`: the report's ratios are each process's twin over its plain
row, the median over processes, with the issue's targets; the traced API compiles into a
C++ program (the benchmark's drivers are C++). No timing here: stored numbers only."""
from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from p2gen.bench.tpcb import overhead as ov
from p2gen.bench.tpcb import run as bt
from p2gen.build import generate


def _process_json(path, times: dict) -> str:
    """A Google Benchmark JSON of one process: {(system, mem): [ms per 200k, one per run]}."""
    benches = []
    for (system, mem), runs in times.items():
        for t in runs:
            benches.append({"name": f"tpcb/{system}/{mem}/sf:2/seed:1/iterations:1/manual_time",
                            "run_type": "iteration", "ms_per_200k": t, "txns": 200000,
                            "txn_cpu_ms": t / 2, "result_sum": 5.0})
    path.write_text(json.dumps({"context": {"tpcb_sf": "2", "tpcb_accounts": "10000",
                                            "tpcb_txns": "200000", "tpcb_seeds": "1"},
                                "benchmarks": benches}))
    return str(path)


def test_ratios_are_per_process_then_the_median_and_targets_judge_them(tmp_path):
    # process 1 ran slow throughout (load): its ratios, not its times, are what count
    p1 = _process_json(tmp_path / "a.json", {("IARRAY", "persistent"): [10, 12, 11],
                                              ("IARRAY-prof", "persistent"): [11, 11, 11],
                                              ("IARRAY-trace", "persistent"): [20, 22, 24]})
    p2 = _process_json(tmp_path / "b.json", {("IARRAY", "persistent"): [20, 20, 20],
                                              ("IARRAY-prof", "persistent"): [21, 21, 21],
                                              ("IARRAY-trace", "persistent"): [26, 26, 26]})
    p3 = _process_json(tmp_path / "c.json", {("IARRAY", "persistent"): [5],
                                              ("IARRAY-prof", "persistent"): [6],
                                              ("IARRAY-trace", "persistent"): [8]})
    text, problems = ov.report([p1, p2, p3], str(tmp_path / "out"))
    assert problems == []
    sums = ov.per_process([p1, p2, p3], "wall")[0]
    assert ov.ratios(sums, "IARRAY", "persistent", 2, bt.PROFILE_SUFFIX) == \
        pytest.approx([1.0, 1.05, 1.2])
    assert ov.ratios(sums, "IARRAY", "persistent", 2, bt.TRACE_SUFFIX) == \
        pytest.approx([2.0, 1.3, 1.6])
    # the profile's median 1.05 meets ≤ 1.10; the trace's 1.6 misses ≤ 1.5
    assert "| IARRAY persistent SF 2: --profile / plain (≤ 1.1×) | 1.05× | yes |" in text
    assert "| IARRAY persistent SF 2: --trace / plain (≤ 1.5×) | 1.60× | no |" in text
    assert "1.600 (1.30-2.00)" in text
    assert (tmp_path / "out" / "tpcb_overhead.md").read_text() == text


def test_instruction_counts_are_reported_beside_the_plain_rows(tmp_path):
    p1 = _process_json(tmp_path / "a.json", {("IARRAY", "transient"): [10],
                                              ("IARRAY-prof", "transient"): [11]})
    counts = {"IARRAY": 187.2, "IARRAY-prof": 198.2, "IARRAY-trace": 624.8, "HASH1": None}
    text, _ = ov.report([p1], str(tmp_path), counts=counts)
    assert "| IARRAY | 187 | 198 | 1.059 | 625 | 3.338 |" in text
    assert "| HASH1 | — | — | — | — | — |" in text


def test_the_overhead_build_holds_each_structure_three_ways():
    vs = ov.variants()
    assert {(v.name, v.mem) for v in vs} == {
        (n + s, m) for n, _ in ov.SYSTEMS for s in ("", "-prof", "-trace") for m in bt.MEMS}
    assert all(v.trace == v.name.endswith("-trace") and v.profile == v.name.endswith("-prof")
               for v in vs)
    assert len({v.prefix for v in vs}) == len(vs)


def test_the_traced_api_compiles_into_a_cpp_program(tmp_path):
    cxx = shutil.which("c++")
    if not cxx:
        pytest.skip("no C++ compiler")
    v = bt.trace_twin(ov.variants()[0])
    g = generate(v.spec, str(tmp_path), v.prefix, trace=True)
    src = tmp_path / "app.cc"
    src.write_text(f'#include "{v.prefix}.h"\nint main() {{ return 0; }}\n')
    r = subprocess.run([cxx, "-std=c++17", "-fsyntax-only", "-Wall", "-Wextra", "-Werror",
                        f"-D{v.prefix.upper()}_INLINE", f"-I{g.out_dir}", str(src)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]


SPEC = """record row { id: u32; v: i64; }
container rows of row = top2ds_qualify[hash(key = id, buckets = 8)[array(capacity = 8)[transient]]];
"""
MAIN = """#include "ov.h"
int main(void)
{
    ov_db *db; ov_row r = { 7, 1 }; ov_ref ref;
    if (ov_open(&db, ".") != P2_OK || ov_rows_insert(db, &r, &ref) != P2_OK) return 1;
    return ov_close(db) == P2_OK ? 0 : 1;
}
"""


def test_the_runs_write_profiles_and_traces_into_the_build_dir_not_the_cwd(tmp_path, cc,
                                                                            monkeypatch):
    # a program built with --profile and --trace, run as command() runs the benchmark
    # binary (isolated: env and cwd) from the user's directory with a relative build dir
    from conftest import runtime_obj
    from p2gen.harness import HARNESS_CFLAGS
    (tmp_path / "ov.p2").write_text(SPEC)
    gen = generate(str(tmp_path / "ov.p2"), str(tmp_path / "gen"), "ov", profile=True, trace=True)
    (tmp_path / "main.c").write_text(MAIN)
    exe = tmp_path / "main"
    r = subprocess.run([cc, *HARNESS_CFLAGS, "-I", gen.out_dir, str(tmp_path / "main.c"),
                        gen.source, runtime_obj(cc, HARNESS_CFLAGS), "-o", str(exe)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    user = tmp_path / "user"
    (user / "build").mkdir(parents=True)
    monkeypatch.chdir(user)
    before = dict(os.environ)
    where = ov.isolated("build")
    assert dict(os.environ) == before            # the caller's environment is left alone
    r = subprocess.run([str(exe)], capture_output=True, text=True, **where)
    assert r.returncode == 0, r.stderr
    assert os.listdir(user) == ["build"]
    assert sorted(os.listdir(user / "build")) == ["ov.profile.json", "tpcb_overhead.trace"]
    if shutil.which("valgrind"):         # and the instruction counts' runs (--instructions)
        for f in os.listdir(user / "build"):
            os.remove(user / "build" / f)
        opts = bt.Options(sfs=(2,), accounts=10, txns=10, seeds=(1,))
        assert ov.instructions(str(exe), opts, "X", txns=1, **where) is None   # not TPC-B
        assert os.listdir(user) == ["build"]
        assert sorted(os.listdir(user / "build")) == ["ov.profile.json", "tpcb_overhead.trace"]
