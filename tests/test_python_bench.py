"""`p2gen bench python` at a tiny size: the shape of python.json / python.md and
that every phase's counts were checked (not the timings)."""
import json
import shutil

import pytest
from click.testing import CliRunner

from p2gen.bench.python import run as bench_python
from p2gen.cli import main

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    d = tmp_path_factory.mktemp("pybench_build")
    return str(d), bench_python.build_module(str(d))


def test_bench_python_cli_tiny(tmp_path, built):
    build_dir, _ = built
    out = tmp_path / "res"
    r = CliRunner().invoke(main, ["bench", "python", "--rows", "50", "--reps", "2", "-o",
                                  str(out), "--build-dir", build_dir, "--no-plots"])
    assert r.exit_code == 0, r.output
    doc = json.loads((out / "python.json").read_text())
    assert doc["context"]["rows"] == 50 and doc["context"]["failures"] == []
    systems = {b["system"] for b in doc["benchmarks"]}
    assert {"P2", "dict", "sqlite-mem", "sqlite-file"} <= systems
    med = [b for b in doc["benchmarks"] if b.get("aggregate_name") == "median"]
    for s in systems:
        ops = {b["operation"] for b in med if b["system"] == s}
        want = set(bench_python.OPERATIONS) - ({"to_numpy"} if s != "P2" else set()) \
            - ({"traverse"} if s == "lmdb" else set())
        assert ops == want, (s, ops)
    for b in doc["benchmarks"]:
        assert b["time_unit"] == "ns" and b["real_time"] > 0
        assert b["checked"] == b["expected"], b       # every phase's count checked
    its = [b for b in doc["benchmarks"] if b["run_type"] == "iteration"]
    assert len(its) == 2 * len(med)
    md = (out / "python.md").read_text()
    for op in bench_python.OPERATIONS:
        assert f"| {op} |" in md
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
                              systems=("P2", "dict"), plots=False, say=msgs.append)
    assert rc == 1
    assert any("FAILED CHECK: dict find" in m for m in msgs), msgs
