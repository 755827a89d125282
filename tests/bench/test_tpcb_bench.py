"""The TPC-B benchmark: the driver on a tiny configuration for every variant and
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

from conftest import has_lto_sections
from p2gen.bench.tpcb import run as bt
from p2gen.cli import main

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "tpcb_sample.json"
TINY = bt.Options(sfs=(1, 2), accounts=50, txns=1000, seeds=(7,))


def _have_libs() -> str | None:
    if not shutil.which("c++") or not shutil.which("cc"):
        return "no C/C++ compiler"
    dirs = ["/usr/include", "/usr/local/include"]
    for h in ("benchmark/benchmark.h", "sqlite3.h", "lmdb.h", "boost/multi_index_container.hpp",
              "boost/interprocess/managed_mapped_file.hpp"):
        if not any(os.path.exists(os.path.join(d, h)) for d in dirs):
            return (f"{h} not installed (apt-get install libbenchmark-dev libsqlite3-dev liblmdb-dev "
                    "libboost-dev)")
    return None


# The -flto twins the tests build (all of them would double the build's time): one
# transient and one persistent, each a different structure.
LTO_TWINS = (("HASH1", "transient"), ("IARRAY", "persistent"))


def expected_names(opts: bt.Options) -> set:
    systems = list(bt.REFERENCES) + [(s, m) for s in bt.P2_SYSTEMS for m in bt.MEMS] + \
        [(s + "-lto", m) for s, m in LTO_TWINS]
    return {f"tpcb/{s}/{m}/sf:{sf}/seed:{seed}"
            for s, m in systems for sf in opts.sfs for seed in opts.seeds}


@pytest.fixture(scope="module")
def exe(tmp_path_factory):
    why = _have_libs()
    if why:
        pytest.skip(why)
    d = tmp_path_factory.mktemp("tpcb_build")
    vs = bt.default_variants(lto=False)
    twins = [bt.lto_twin(v) for v in vs if (v.name, v.mem) in LTO_TWINS and not v.lto]
    # -O0 for the drivers, references and peers (Boost, Google Benchmark) and after the
    # users' flags of the generated code (gen_opt): a third of -O2's compile time, and the
    # runs here are tiny. test_users_flags_unless_a_test_asks checks the benchmarks' own
    # build uses the users' flags; `p2gen bench range`'s test builds and runs at -O2
    return bt.build(str(d), opt="-O0", gen_opt="-O0", variants=vs + twins)


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


def test_repetitions_run_every_benchmark_that_often_and_the_report_says_so(exe, tmp_path):
    """--repetitions 2: every benchmark runs twice (in a random order), each run one row;
    progress counts runs, not the aggregates; the medians take both runs; the report says so."""
    out = tmp_path / "tpcb.json"
    opts = bt.Options(sfs=(1,), accounts=50, txns=300, seeds=(3,), dir=str(tmp_path / "db"),
                      filter="HANDC|IARRAY/", repetitions=2)
    assert "--benchmark_enable_random_interleaving=true" in opts.args()
    lines = []
    assert bt.run(str(exe), opts, str(out), say=lines.append) == 0, "\n".join(lines)
    _, rows = bt.load_rows(str(out))
    keys = [(r.system, r.mem) for r in rows]
    assert sorted(set(keys)) == sorted({("HANDC", m) for m in bt.MEMS} | {("IARRAY", m) for m in bt.MEMS})
    assert all(keys.count(k) == 2 for k in set(keys))
    assert sum(1 for l in lines if l.startswith("[")) == len(rows)
    summary = bt.summarize(rows)
    assert summary[("IARRAY", "persistent", 1)]["seeds"] == 2
    md, _, problems = bt.report(str(out), str(tmp_path / "report"), plots=False)
    assert problems == []
    assert "each run 2 times in a random order" in md


def test_durable_set_keeps_the_invariant_and_reports_every_system(exe, tmp_path):
    """`--durable`: the journalled variants commit every transaction, SQLite WAL
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
    assert "Targets of the TPC-B reproduction" in r.output


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
        kind = v.name.split("+")[1]      # J...: the page journal; W...: the record log (wal)
        layer = {"J": "journal", "W": "wal"}[kind[0]]
        assert text.count(f"{layer}[persistent]") == 4, v.spec
        group = "group = 100" if kind.endswith("100") else "group = 1"
        assert text.count(group + ")") == 4, v.spec
        assert ("sync = false" in text) == kind.endswith("NS")
    assert r"HASH1\+J100" in bt.durable_filter()


def test_rows_built_as_users_build_and_with_lto(exe):
    """Zero-cost layering as users build it: a variant's default row is built as the README says (p2gen build's library,
    the program compiled without LTO -- -O2 in `p2gen bench`, -O0 in this build: no LTO bytecode anywhere in it), its -lto row with
    LTO across generated code and driver; both and the C++ peers are in the one binary."""
    if not shutil.which("readelf"):
        pytest.skip("no readelf")
    obj = Path(exe).parent / "obj"
    plain = [obj / "driver_tpcb_hash1_transient.o", obj / "tpcb_hash1_transient.o", obj / "p2_runtime.o"]
    for o in plain:
        assert not has_lto_sections(o), o
    assert (obj / "libtpcb_hash1_transient.a").exists()
    for o in (obj / "driver_tpcb_hash1_transient_lto.o", obj / "tpcb_hash1_transient_lto.o"):
        assert has_lto_sections(o), o
    listed = subprocess.run([str(exe), "--tpcb_list"], capture_output=True, text=True).stdout.splitlines()
    for line in ("HASH1 transient p2", "HASH1-lto transient p2", "IARRAY-lto persistent p2",
                 "STD-UMAP transient reference", "BOOST-HASHED persistent reference",
                 "BOOST-HASHED transient reference", "BOOST-ORDERED persistent reference",
                 "BOOST-ORDERED transient reference"):
        assert line in listed


def test_users_flags_unless_a_test_asks(tmp_path):
    """The benchmarks compile a variant's generated .c with exactly `p2gen build`'s flags;
    the tests' gen_opt comes after them (the later -O wins) and is no benchmark's default."""
    import inspect
    from types import SimpleNamespace

    from p2gen.bench import common
    from p2gen.bench.acob import run as ar
    from p2gen.bench.oo7 import run as bo
    src, hdr = tmp_path / "v.c", tmp_path / "v.h"
    g = SimpleNamespace(source=str(src), header=str(hdr))

    def gen_command(**kw):
        tasks, _ = common.users_build_steps(tmp_path, tmp_path, [("v", g, [])], cc="cc", cxx="c++",
                                            cxxflags=["-O2"], driver=tmp_path / "d.cc", driver_deps=[],
                                            include_dirs=[], **kw)
        return next(cmd for cmd, out, deps, what in tasks if what == "v.c")

    assert gen_command() == ["cc", *common.users_cflags(), "-c", str(src), "-o", str(tmp_path / "v.o")]
    assert gen_command(gen_opt="-O0")[1:-4] == [*common.users_cflags(), "-O0"]
    for build in (bt.build, bo.build, ar.build):
        assert inspect.signature(build).parameters["gen_opt"].default is None


def _with_users_build_rows(data: dict) -> dict:
    """The fixture plus rows for the -lto twins and the C++ peers: copies of existing rows
    with their times scaled, so that the expected ratios are known."""
    extra = []
    for b in data["benchmarks"]:
        for src, dst, k in (("tpcb/HASH1/transient/", "tpcb/HASH1-lto/transient/", 0.5),
                            ("tpcb/HANDC/transient/", "tpcb/STD-UMAP/transient/", 2.0),
                            ("tpcb/AVL/persistent/", "tpcb/BOOST-ORDERED/persistent/", 4.0),
                            ("tpcb/HASH1/persistent/", "tpcb/BOOST-HASHED/persistent/", 1.0)):
            if b["name"].startswith(src):
                c = dict(b)
                c["name"] = dst + b["name"][len(src):]
                for key in ("ms_per_200k", "txn_ms", "us_per_txn"):
                    c[key] = b[key] * k
                extra.append(c)
    return {**data, "benchmarks": data["benchmarks"] + extra}


def test_peer_ratios_and_zero_cost_targets(tmp_path):
    data = _with_users_build_rows(json.loads(FIXTURE.read_text()))
    f = tmp_path / "t.json"
    f.write_text(json.dumps(data))
    context, rows = bt.load_rows(str(f))
    summary = bt.summarize(rows)
    md = bt.render_table(summary, context)
    top = 4
    ns = lambda s, m: summary[(s, m, top)]["time"] * 1e6 / 200000   # noqa: E731
    assert "| system | memory | ns/txn | × hand-coded C | × std::unordered_map |" in md
    h1 = ns("HASH1", "transient")
    row = next(l for l in md.splitlines() if l.startswith("| HASH1 | transient |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[2] == f"{h1:,.0f}"
    assert cells[3] == f"{h1 / ns('HANDC', 'transient'):.2f}×"
    assert cells[4] == f"{h1 / ns('STD-UMAP', 'transient'):.2f}×"
    assert cells[7] == f"{ns('HASH1-lto', 'transient'):,.0f}" and cells[8] == "2.00×"
    # the -lto twin is a row of the per-memory table too, not of the peers table
    assert "| HASH1-lto |" in md and not any(l.startswith("| HASH1-lto | transient |") for l in md.splitlines())
    t = {name: (r, ok) for name, r, ok in bt.targets10(summary)}
    r, ok = t[f"HASH1 transient: as built and -flto within (slower / faster), SF {top} (≤ 1.1×)"]
    assert r == pytest.approx(2.0) and not ok
    r, ok = t[f"AVL persistent / Boost ordered_unique persistent, SF {top} (≤ 1×)"]
    assert r == pytest.approx(0.25) and ok
    r, ok = t[f"HASH1 persistent / Boost hashed_unique in a managed_mapped_file, SF {top} (≤ 1×)"]
    assert r == pytest.approx(1.0) and ok
    assert t[f"HASH1 transient / std::unordered_map (heap), SF {top} (≤ 1×)"][0] == \
        pytest.approx(summary[("HASH1", "transient", top)]["time"] / summary[("STD-UMAP", "transient", top)]["time"])
    assert t[f"AVL transient / Boost ordered_unique transient, SF {top} (≤ 1×)"] == (None, False)
    assert "Targets of zero-cost layering" in md
