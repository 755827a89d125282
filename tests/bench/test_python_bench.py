"""`p2gen bench python` at a tiny size: the shape of python.json / python.md and
that every phase's counts were checked (not the timings)."""
import json
import os
import shutil

import pytest
from click.testing import CliRunner

from p2gen.bench.python import oo7, social
from p2gen.bench.python import run as bench_python
from p2gen.cli import main

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("pybench_build")
    return str(d), bench_python.build_module(str(d))


@pytest.fixture(scope="module")
def built_oo7(built):
    """The OO7 module, where `p2gen bench python` builds it (build_dir/oo7)."""
    build_dir, _ = built
    return bench_python.build_module(os.path.join(build_dir, "oo7"), oo7.SPEC,
                                     prefix=oo7.PREFIX)


def test_bench_python_cli_tiny(tmp_path, built, built_oo7):
    build_dir, _ = built
    out = tmp_path / "res"
    r = CliRunner().invoke(main, ["bench", "python", "--rows", "50", "--reps", "2", "-o",
                                  str(out), "--build-dir", build_dir, "--no-plots",
                                  "--oo7-size", "tiny", "--social-size", "tiny"])
    assert r.exit_code == 0, r.output
    doc = json.loads((out / "python.json").read_text())
    ctx = doc["context"]
    assert ctx["rows"] == 50 and ctx["failures"] == []
    assert ctx["workloads"] == ["tpcb", "oo7", "social"]
    assert ctx["social"]["users"] == 200 and ctx["social"]["posts"] == 1000
    assert ctx["oo7"]["size"] == "tiny" and ctx["oo7"]["atomic_parts"] == 500
    systems = {b["system"] for b in doc["benchmarks"]}
    assert {"P2", "dict", "sqlite-mem", "sqlite-file"} <= systems
    med = [b for b in doc["benchmarks"] if b.get("aggregate_name") == "median"]
    for s in systems:
        ops = {b["operation"] for b in med if b["system"] == s and b["workload"] == "tpcb"}
        want = set(bench_python.OPERATIONS) - (set(bench_python.P2_ONLY) if s != "P2" else set()) \
            - ({"traverse"} if s == "lmdb" else set())
        assert ops == want, (s, ops)
        ops = {b["operation"] for b in med if b["system"] == s and b["workload"] == "oo7"}
        assert ops == (set() if s == "lmdb" else set(oo7.OPERATIONS)), (s, ops)
        ops = {b["operation"] for b in med if b["system"] == s and b["workload"] == "social"}
        assert ops == (set(social.OPERATIONS) if s in social.SYSTEMS else set()), (s, ops)
    # the OO7 counts: every part reached by the traversals, every object built
    w = oo7.OO7Workload("tiny")
    for b in med:
        if b["workload"] == "oo7":
            assert b["checked"] == w.expected[b["operation"]], b
    assert w.expected["oo7_t1"] == 500 and w.expected["oo7_build"] == 50 + 500 + 1500
    for b in doc["benchmarks"]:
        assert b["time_unit"] == "ns" and b["real_time"] > 0
        assert b["checked"] == b["expected"], b       # every phase's count checked
    its = [b for b in doc["benchmarks"] if b["run_type"] == "iteration"]
    assert len(its) == 2 * len(med)
    md = (out / "python.md").read_text()
    for op in bench_python.OPERATIONS + oo7.OPERATIONS + social.OPERATIONS:
        assert f"| {op} |" in md
    assert "## Social graph" in md and "the feed from Python no slower" in md
    assert "## OO7" in md and "## Targets" in md
    assert "sqlite-mem / P2" in md and "## Targets" in md
    # --render reproduces the table from the JSON alone
    out2 = tmp_path / "res2"
    r = CliRunner().invoke(main, ["bench", "python", "--render", str(out / "python.json"),
                                  "-o", str(out2), "--no-plots"])
    assert r.exit_code == 0, r.output
    assert (out2 / "python.md").read_text() == md


def test_bench_python_wrong_count_fails(tmp_path, built, monkeypatch):
    """A system whose counts are wrong fails the run (exit status 1, the check named)."""
    build_dir, module = built

    def bad_find(self, w):
        return w.rows, w.rows - 1
    monkeypatch.setattr(bench_python.DictSystem, "find", bad_find)
    monkeypatch.setattr(bench_python, "build_module", lambda *a, **k: module)
    msgs = []
    rc = bench_python.command(rows=20, reps=1, out=str(tmp_path), build_dir=build_dir,
                              systems=("P2", "dict"), plots=False, say=msgs.append,
                              workloads=("tpcb",))
    assert rc == 1
    assert any("FAILED CHECK: dict find" in m for m in msgs), msgs


@pytest.mark.parametrize("system, op", [("sqlite-mem", "oo7_t1"), ("P2", "oo7_t2"),
                                        ("dict", "oo7_build")])
def test_bench_python_oo7_wrong_count_fails(tmp_path, built, built_oo7, monkeypatch,
                                            system, op):
    """In the OO7 workload too a wrong count fails the run: a traversal that misses
    an edge, an update traversal that writes nothing (Q1 after it sees the old x), a
    build that loses an object."""
    build_dir, _ = built
    cls = {"P2": oo7.P2OO7, "dict": oo7.DictOO7, "sqlite-mem": oo7.SqliteOO7}[system]
    if op == "oo7_t1":
        def bad(self, w):
            n, edges, s = self._walk(False)
            return n, oo7._check(n, edges - 1 == w.edges and s == w.sum_x)
        failing = "oo7_t1"
    elif op == "oo7_t2":
        def bad(self, w):
            n, edges, s = self._walk(False)          # reads, writes nothing
            return n, oo7._check(n, edges == w.edges and s == w.sum_x)
        failing = "oo7_q1"
    else:
        real = cls.oo7_build

        def bad(self, w):
            n, counted = real(self, w)
            self.atoms.popitem()
            return n, counted - 1
        failing = "oo7_build"
    monkeypatch.setattr(cls, op, bad)
    monkeypatch.setattr(bench_python, "build_module", lambda *a, **k: built_oo7)
    msgs = []
    rc = bench_python.command(rows=20, reps=1, out=str(tmp_path), build_dir=build_dir,
                              systems=(system,), plots=False, say=msgs.append,
                              workloads=("oo7",), oo7_size="tiny")
    assert rc == 1
    assert any(f"FAILED CHECK: {system} {failing}" in m for m in msgs), msgs
    doc = json.loads((tmp_path / "python.json").read_text())
    assert doc["context"]["workloads"] == ["oo7"]
    assert {b["system"] for b in doc["benchmarks"]} == {system}


def test_bench_python_social_wrong_feed_fails(tmp_path, built, monkeypatch):
    """The social workload's answers are checked against the reference: a feed that drops
    its last row fails the run."""
    build_dir, _ = built
    real = social.SqliteSocial.social_feed

    def short(self, w):
        n, s = real(self, w)
        return n, s - 1
    monkeypatch.setattr(social.SqliteSocial, "social_feed", short)
    rc = bench_python.command(rows=50, reps=1, out=str(tmp_path / "res"), build_dir=build_dir,
                              systems=("sqlite-mem",), plots=False, say=lambda m: None,
                              workloads=("social",), social_size="tiny")
    assert rc == 1
    doc = json.loads((tmp_path / "res" / "python.json").read_text())
    assert any("sqlite-mem social_feed" in f for f in doc["context"]["failures"])
