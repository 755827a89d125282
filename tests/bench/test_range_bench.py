"""The range-scan benchmark: the binary on a tiny relation for every ordered layer and
reference (every walk returns exactly the rows asked, in key order, and the JSON and table
have every system and length), a walk of the wrong length fails loudly, and the report
flags a benchmark that walked nothing."""
from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
from click.testing import CliRunner

from p2gen.bench.range import run as br
from p2gen.cli import main

TINY = br.Options(rows=3000, lengths=(10, 1000), min_time=0.01)


def _have_libs() -> str | None:
    if not shutil.which("c++") or not shutil.which("cc"):
        return "no C/C++ compiler"
    dirs = ["/usr/include", "/usr/local/include"]
    for h in ("benchmark/benchmark.h", "sqlite3.h", "lmdb.h"):
        if not any(os.path.exists(os.path.join(d, h)) for d in dirs):
            return f"{h} not installed (apt-get install libbenchmark-dev libsqlite3-dev liblmdb-dev)"
    return None


def expected_names(opts: br.Options) -> set:
    return {f"range/{s}/{m}/rows:{n}" for s, m in br.systems() for n in opts.lengths}


@pytest.fixture(scope="module")
def exe(tmp_path_factory):
    why = _have_libs()
    if why:
        pytest.skip(why)
    return br.build(str(tmp_path_factory.mktemp("range_build")))


def test_every_system_walks_exactly_the_rows_asked(exe, tmp_path):
    out = tmp_path / "range.json"
    opts = br.Options(**{**TINY.__dict__, "dir": str(tmp_path / "db")})
    lines = []
    rc = br.run(str(exe), opts, str(out), say=lines.append)
    assert rc == 0, "\n".join(lines)
    context, rows = br.load_rows(str(out))
    assert {f"range/{r.system}/{r.mem}/rows:{r.length}" for r in rows} == expected_names(opts)
    assert len(rows) == len(expected_names(opts))
    assert br.problems(context, rows) == []
    for r in rows:
        assert r.error is None
        assert r.rows == r.length, (r.system, r.mem)        # counted by the walk, row by row
        assert r.rows_per_s > 0 and r.load_ms > 0
    assert context["range_rows"] == "3000"
    assert sum(1 for l in lines if l.startswith("[")) == len(rows)   # a progress line each
    assert not any((tmp_path / "db").iterdir())     # every system's files were removed
    text, probs = br.report(str(out), str(tmp_path))
    assert probs == []
    assert (tmp_path / "range.md").read_text() == text
    assert "| system | memory | 10 rows: rows/s | × AVL | × SQLite | 1,000 rows: rows/s |" in text
    for s, m in br.systems():
        assert f"| {s} | {m} | " in text
    avl = next(l for l in text.splitlines() if l.startswith("| AVL | transient |"))
    assert avl.split("|")[4].strip() == "1.00×"          # AVL over itself
    # the target's row is there; at these lengths it is not measured
    assert "BTREE / AVL rows per second, persistent, 100,000-row cursors (≥ 5×) | — | — |" in text


def test_a_walk_of_the_wrong_length_fails_loudly(exe, tmp_path):
    """With the fault every walk returns one row more than asked: each benchmark must
    fail, naming the counts, and the binary exit 3."""
    out = tmp_path / "range.json"
    opts = br.Options(rows=500, lengths=(10,), min_time=0.01, dir=str(tmp_path / "db"),
                      filter="BTREE|ODLIST/transient|QSORT/persistent|SQLITE/transient|LMDB",
                      extra=("--range_inject_fault=1",))
    lines = []
    rc = br.run(str(exe), opts, str(out), say=lines.append)
    assert rc == 3
    context, rows = br.load_rows(str(out))
    assert len(rows) == 6 and all(r.error for r in rows)
    assert all("returned 11 rows, expected 10" in r.error for r in rows)
    assert any("RANGE FAILURE" in l for l in lines)
    assert len(br.problems(context, rows)) == 6


def _doc(rates: dict, rows_per_walk=None) -> dict:
    """A Google Benchmark JSON with one run per (system, mem, length) -> rows/s."""
    bs = []
    for (s, m, n), rate in rates.items():
        bs.append({"name": f"range/{s}/{m}/rows:{n}/min_time:0.200/real_time",
                   "run_name": f"range/{s}/{m}/rows:{n}/min_time:0.200/real_time",
                   "run_type": "iteration", "iterations": 10, "real_time": 1.0,
                   "rows_per_s": rate, "rows": (rows_per_walk or {}).get((s, m, n), n),
                   "load_ms": 5.0, "walks": 10})
    return {"context": {"range_rows": "1000000", "range_lengths": "10,100000", "load_avg": [1.0, 0.5, 0.25]},
            "benchmarks": bs}


def test_table_ratios_and_targets(tmp_path):
    rates = {("AVL", "persistent", 100000): 2e7, ("BTREE", "persistent", 100000): 1.2e8,
             ("SQLITE", "persistent", 100000): 1e7, ("AVL", "transient", 100000): 2e7,
             ("BTREE", "transient", 100000): 8e7, ("LMDB", "persistent", 100000): 5e7}
    f = tmp_path / "r.json"
    f.write_text(json.dumps(_doc(rates)))
    text, probs = br.report(str(f), str(tmp_path))
    assert probs == []
    row = next(l for l in text.splitlines() if l.startswith("| BTREE | persistent |"))
    assert [c.strip() for c in row.strip("|").split("|")] == ["BTREE", "persistent", "120.0 M", "6.00×", "12.00×"]
    row = next(l for l in text.splitlines() if l.startswith("| LMDB | persistent |"))
    assert row.split("|")[5].strip() == "5.00×"          # LMDB over SQLite in a file
    assert "| BTREE / AVL rows per second, persistent, 100,000-row cursors (≥ 5×) | 6.00× | yes |" in text
    assert "| BTREE / AVL rows per second, transient, 100,000-row cursors (≥ 5×) | 4.00× | no |" in text
    assert "load average at start 1.00, 0.50, 0.25" in text


def test_report_flags_a_benchmark_that_walked_nothing(tmp_path):
    rates = {("AVL", "persistent", 10): 2e7, ("BTREE", "persistent", 10): 5e7}
    f = tmp_path / "r.json"
    f.write_text(json.dumps(_doc(rates, {("BTREE", "persistent", 10): 0})))
    r = CliRunner().invoke(main, ["bench", "range", "--render", str(f), "-o", str(tmp_path / "o")])
    assert r.exit_code == 1
    assert "PROBLEM: BTREE/persistent rows=10: walked 0 rows per cursor, asked for 10" in r.output
    assert (tmp_path / "o" / "range.md").exists()


def test_cli_builds_runs_and_reports(exe, tmp_path):
    """`p2gen bench range` end to end on the fixture's build directory (up to date: no
    recompilation), a filter, a tiny size, every system loading in key order, two runs of
    each benchmark interleaved."""
    r = CliRunner().invoke(main, ["bench", "range", "--rows", "2000", "--lengths", "10,100",
                                  "--min-time", "0.01", "--load-order", "sorted", "--repetitions", "2", "-o", str(tmp_path / "out"),
                                  "--build-dir", str(exe.parent), "--filter", "BTREE|AVL|SQLITE/persistent",
                                  "--db-dir", str(tmp_path / "db")])
    assert r.exit_code == 0, r.output
    doc = json.loads((tmp_path / "out" / "range.json").read_text())
    runs = [b for b in doc["benchmarks"] if b["run_type"] == "iteration"]
    names = {b["run_name"].split("/min_time")[0] for b in runs}
    assert len(runs) == 2 * len(names)
    assert names == {f"range/{s}/{m}/rows:{n}" for s in ("BTREE", "AVL") for m in br.MEMS
                     for n in (10, 100)} | {"range/SQLITE/persistent/rows:10", "range/SQLITE/persistent/rows:100"}
    assert "0 steps" in r.output                     # the build was up to date
    assert doc["context"]["range_load_order"] == "sorted"
    assert all(b["rows"] == int(b["run_name"].split("rows:")[1].split("/")[0]) for b in runs)
    md = (tmp_path / "out" / "range.md").read_text()
    assert md.startswith("# Range scans") and "keys inserted in key order (--load-order sorted)" in md
    assert "the median of 2 runs of each, interleaved at random" in md


def test_specs_declare_the_range_cursor():
    for v in br.default_variants():
        text = open(v.spec).read()
        assert "cursor walk on rows where k >= $lo and k < $hi order by k;" in text, v.spec
        assert ("persistent(file" in text) == (v.mem == "persistent"), v.spec
        assert f"[{v.name.lower()}" in text or f"{v.name.lower()}[" in text, v.spec
    assert len({v.prefix for v in br.default_variants()}) == len(br.STRUCTURES) * len(br.MEMS)
