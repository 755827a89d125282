"""The TPC-B benchmark (issue 3): the driver on a tiny configuration for every variant and
reference (the invariant holds, the JSON holds every benchmark, a violated invariant fails
the run loudly), and the table/plot rendering on a stored JSON fixture."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from p2gen import bench_tpcb as bt
from p2gen.cli import main

FIXTURE = Path(__file__).parent / "fixtures" / "tpcb_sample.json"
TINY = bt.Options(sfs=(1, 2), accounts=50, txns=1000, seeds=(7,))


def _have_libs() -> str | None:
    if not shutil.which("c++") or not shutil.which("cc"):
        return "no C/C++ compiler"
    dirs = ["/usr/include", "/usr/local/include"]
    for h in ("benchmark/benchmark.h", "sqlite3.h", "lmdb.h"):
        if not any(os.path.exists(os.path.join(d, h)) for d in dirs):
            return f"{h} not installed (apt-get install libbenchmark-dev libsqlite3-dev liblmdb-dev)"
    return None


def expected_names(opts: bt.Options) -> set:
    systems = list(bt.REFERENCES) + [(s, m) for s in bt.P2_SYSTEMS for m in bt.MEMS]
    return {f"tpcb/{s}/{m}/sf:{sf}/seed:{seed}"
            for s, m in systems for sf in opts.sfs for seed in opts.seeds}


@pytest.fixture(scope="module")
def exe(tmp_path_factory):
    why = _have_libs()
    if why:
        pytest.skip(why)
    d = tmp_path_factory.mktemp("tpcb_build")
    return bt.build(str(d), lto=False)


def test_every_variant_and_reference_keeps_the_invariant(exe, tmp_path):
    out = tmp_path / "tpcb.json"
    opts = bt.Options(**{**TINY.__dict__, "dir": str(tmp_path / "db")})
    lines = []
    rc = bt.run(str(exe), opts, str(out), say=lines.append)
    assert rc == 0, "\n".join(lines)
    context, rows = bt.load_rows(str(out))
    names = {f"tpcb/{r.system}/{r.mem}/sf:{r.sf}/seed:{r.seed}" for r in rows}
    assert names == expected_names(opts)
    assert bt.failures(rows) == []
    assert bt.consistency(rows) == []     # every system computed the same balances
    for r in rows:
        assert r.get("txns") == opts.txns
        assert r.get("ms_per_200k") is not None and r.get("load_ms") is not None
        if r.system != "BASELINE":
            assert r.get("result_sum") != 0
    assert context["tpcb_accounts"] == "50"
    # progress: one line per benchmark
    assert sum(1 for l in lines if l.startswith("[")) == len(expected_names(opts))
    assert not any((tmp_path / "db").iterdir())   # every run's files were removed


def test_durable_set_keeps_the_invariant_and_reports_every_system(exe, tmp_path):
    """`--durable` (issue 5): the journalled variants commit every transaction, SQLite WAL
    and LMDB sync commit every transaction or every 100; the invariant holds after the run
    and after close + reopen, every durable system and the no-durability HASH1 / IARRAY
    rows are present, and the report has the table and the two targets."""
    out = tmp_path / "tpcb_durable.json"
    opts = bt.Options(sfs=(1,), accounts=50, txns=200, seeds=(3,), dir=str(tmp_path / "db"),
                      filter=bt.durable_filter(), extra=("--tpcb_durable=1",))
    lines = []
    rc = bt.run(str(exe), opts, str(out), say=lines.append)
    assert rc == 0, "\n".join(lines)
    _, rows = bt.load_rows(str(out))
    names = {f"tpcb/{r.system}/{r.mem}/sf:{r.sf}/seed:{r.seed}" for r in rows}
    assert names == bt.durable_names(opts)
    assert len(names) == len(bt.DURABLE_VARIANTS) + len(bt.DURABLE_REFERENCES) + len(bt.DURABLE_PLAIN)
    assert bt.failures(rows) == []
    assert bt.consistency(rows) == []     # the same balances as without durability
    for r in rows:
        assert r.get("txns") == 200 and r.get("result_sum") != 0
        if r.system in ("HASH1+J", "IARRAY+J", "HASH1+J100", "SQLITE-WAL", "LMDB-SYNC"):
            assert r.get("written_KB_per_txn") > 0.1, r.system   # something went to a file per txn
    assert not any((tmp_path / "db").iterdir())
    text, problems = bt.report_durable(str(out), str(tmp_path))
    assert problems == []
    for n in [n for n, _, _ in bt.DURABLE_VARIANTS] + [n for n, _ in bt.DURABLE_REFERENCES]:
        assert f"| {n} | " in text
    assert "HASH1+J / SQLITE-WAL" in text and "HASH1+J100 / HASH1 without a journal" in text
    assert (tmp_path / "tpcb_durable.md").read_text() == text
    # the default run never includes the durable systems
    listed = subprocess.run([str(exe), "--tpcb_list"], capture_output=True, text=True).stdout
    assert "durable" not in listed and "SQLITE-WAL" not in listed
    listed = subprocess.run([str(exe), "--tpcb_list", "--tpcb_durable=1"], capture_output=True,
                            text=True).stdout
    assert "HASH1+J100 persistent p2 durable" in listed and "LMDB-SYNC reference" not in listed
    assert "LMDB-SYNC persistent reference durable" in listed


def test_a_violated_invariant_fails_loudly(exe, tmp_path):
    out = tmp_path / "tpcb.json"
    opts = bt.Options(sfs=(2,), accounts=20, txns=300, seeds=(1,), dir=str(tmp_path / "db"),
                      filter="IARRAY/persistent|HASH0/transient|SQLITE/transient|LMDB|HANDC/transient",
                      extra=("--tpcb_inject_fault=1",))
    lines = []
    rc = bt.run(str(exe), opts, str(out), say=lines.append)
    assert rc == 3
    _, rows = bt.load_rows(str(out))
    assert len(rows) == 5 and all(r.error for r in rows)
    assert all("history holds 301 records, expected 300" in r.error for r in rows)
    assert any("TPC-B FAILURE" in l for l in lines)


def test_render_table_and_targets_from_fixture(tmp_path):
    context, rows = bt.load_rows(str(FIXTURE))
    summary = bt.summarize(rows)
    md = bt.render_table(summary, context)
    assert "| system | SF 2 | SF 4 |" in md
    assert "**persistent**" in md and "**transient**" in md
    iarray = summary[("IARRAY", "transient", 4)]["time"]
    sqlite = summary[("SQLITE", "transient", 4)]["time"]
    assert f"({sqlite / iarray:.1f}×)" in md
    for target in ("IARRAY / hand-coded C, transient, SF 4", "HASH0 / HASH1 persistent, SF 4",
                   "AVL persistent / transient, SF 4", "HASH1 transient speedup over SQLite transient",
                   "memory / raw record bytes"):
        assert target in md
    # medians over the two seeds
    vals = sorted(r.get("ms_per_200k") for r in rows if (r.system, r.mem, r.sf) == ("AVL", "transient", 2))
    assert summary[("AVL", "transient", 2)]["time"] == pytest.approx(sum(vals) / 2)
    cpu = bt.summarize(rows, "cpu")[("AVL", "transient", 2)]
    assert cpu["time"] == cpu["cpu_ms_per_200k"]


def test_report_writes_markdown_and_three_pngs(tmp_path):
    pytest.importorskip("matplotlib")
    text, pngs, problems = bt.report(str(FIXTURE), str(tmp_path), plots=True)
    assert problems == []
    assert [Path(p).name for p in pngs] == ["fig1_persistent.png", "fig2_transient.png",
                                            "fig3_persistent_vs_transient.png"]
    for p in pngs:
        assert Path(p).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "tpcb.md").read_text() == text
    assert "![fig3_persistent_vs_transient](fig3_persistent_vs_transient.png)" in text


def test_problems_are_reported(tmp_path):
    data = json.loads(FIXTURE.read_text())
    b0 = next(b for b in data["benchmarks"] if b["name"].startswith("tpcb/QSORT/transient/sf:2/seed:1"))
    b0["result_sum"] += 1
    b1 = next(b for b in data["benchmarks"] if b["name"].startswith("tpcb/AVL/persistent/sf:4/seed:2"))
    b1["error_occurred"] = True
    b1["error_message"] = "TPC-B invariant violated: sums differ"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    r = CliRunner().invoke(main, ["bench", "tpcb", "--render", str(bad), "--out", str(tmp_path / "o"),
                                  "--no-plots"])
    assert r.exit_code == 1
    assert "PROBLEM: AVL/persistent sf=4 seed=2: TPC-B invariant violated" in r.output
    assert "PROBLEM: sf=2 seed=1: results differ" in r.output
    assert (tmp_path / "o" / "tpcb.md").exists()


def test_cli_render_only(tmp_path):
    r = CliRunner().invoke(main, ["bench", "tpcb", "--render", str(FIXTURE), "--out", str(tmp_path),
                                  "--no-plots"])
    assert r.exit_code == 0, r.output
    assert "Targets of issue 3" in r.output


def test_list_parsing():
    assert bt._ints("2-5,8", "--sf") == (2, 3, 4, 5, 8)
    assert bt._ints("2..4", "--sf") == (2, 3, 4)
    with pytest.raises(bt.BuildError):
        bt._ints("two", "--sf")
    assert bt.REFERENCE["sfs"] == tuple(range(2, 13))
    assert bt.REFERENCE["accounts"] == 100000 and bt.REFERENCE["txns"] == 200000
    assert bt.DURABLE_DEFAULT["txns"] % 100 == 0     # no incomplete group of 100 commits


def test_durable_specs_are_journalled():
    for v in bt.durable_variants():
        text = "\n".join(l for l in Path(v.spec).read_text().splitlines() if not l.startswith("//"))
        assert text.count("journal[persistent]") == 4, v.spec
        group = "group = 100" if v.name.endswith("J100") else "group = 1"
        assert text.count(group + ")") == 4, v.spec
        assert ("sync = false" in text) == v.name.endswith("JNS")
    assert r"HASH1\+J100" in bt.durable_filter()
