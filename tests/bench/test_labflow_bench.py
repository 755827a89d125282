"""`p2gen bench labflow`: every variant of type_equations/labflow/ built as users build it
and replayed beside the peers answers every query of the log exactly as the Python reference
model does, holds the same records (one digest across systems) and the same after a close
and reopen; the runner reports a replay the memory limit killed as "n/a (OOM)" and one past
its deadline as "n/a (not continued)", neither as a failure; the generator's byte model is
checked against the reference variant's file."""
from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from p2gen.bench.labflow import gen, run as lr, sources
from p2gen.cli import main

SMALL = "256K"          # three intervals back to back (the empty database is past 2X)


def _why_not() -> str | None:
    import shutil
    if not shutil.which("c++") or not shutil.which("cc"):
        return "no C/C++ compiler"
    missing = sources.missing_headers()
    return f"{', '.join(missing)} not installed" if missing else None


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    why = _why_not()
    if why:
        pytest.skip(why)
    d = tmp_path_factory.mktemp("labflow_build")
    exe = lr.build(str(d))
    return d, exe


def test_the_variants_are_the_spec_directory():
    names = [v.name for v in lr.default_variants()]
    assert names == ["ALL-TRANSIENT", "HIST-ILIST", "ONE-FILE", "ONE-FILE-ILIST",
                     "QUEUE-ODLIST", "SEGMENTED", "SIZECLASS"]
    by = {v.name: v for v in lr.default_variants()}
    assert not by["ALL-TRANSIENT"].persistent and by["ALL-TRANSIENT"].files == ()
    assert by["SEGMENTED"].files == ("labflow_hot.db", "labflow_cold.db")
    assert by["ONE-FILE"].files == ("labflow.db",)
    assert by["HIST-ILIST"].hist_ilist and not by["SEGMENTED"].hist_ilist
    # each segmented variant has a one-file twin with the same indexes (the 2X target)
    for seg, one in lr.SEGMENT_TWINS:
        assert by[seg].files == ("labflow_hot.db", "labflow_cold.db") and by[one].files == ("labflow.db",)
        assert by[seg].hist_ilist == by[one].hist_ilist


def test_every_system_answers_as_the_model(built, tmp_path):
    d, exe = built
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["bench", "labflow", "--memory", SMALL, "--no-cap",
                                       "--no-plots", "--build-dir", str(d), "-o", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads((out / "labflow.json").read_text())
    assert data["problems"] == []
    assert data["context"]["oracle"] == "model"
    systems = [r["system"] for r in data["replays"]]
    assert set(systems) == {v.name for v in lr.default_variants()} | set(sources.PEER_SOURCES)
    model_out = Path(data["context"]["log"]).with_suffix(".model.out").read_bytes()
    assert model_out.count(b"\n") > 1000
    digests = set()
    for r in data["replays"]:
        assert r["rc"] == 0, r
        assert Path(r["out_path"]).read_bytes() == model_out, r["system"]
        digests.add(r["digest"])
        persistent = r["system"] not in ("ALL-TRANSIENT", "HAND")
        assert (r["reopened"] == r["digest"]) if persistent else r["reopened"] == "", r
    assert len(digests) == 1 and "" not in digests
    rows = data["rows"]
    assert {(r["system"], r["cut"]) for r in rows} == {(s, c) for s in systems
                                                      for c in gen.CUT_NAMES}
    for r in rows:
        assert r["requests"] == gen.INTERVAL_REQUESTS and r["elapsed_s"] > 0, r
        assert r["user_s"] + r["sys_s"] <= r["elapsed_s"] * 1.05 + 0.02, r   # one thread
        if r["system"] in ("SEGMENTED", "ONE-FILE", "SIZECLASS", "SQLITE"):
            assert r["file_bytes"] > 0 and r["alloc_bytes"] > 0
    # the reference variant's file never shrinks across the cut points
    seg = [next(r for r in rows if r["system"] == "SEGMENTED" and r["cut"] == c)["file_bytes"]
           for c in gen.CUT_NAMES]
    assert seg == sorted(seg)
    md = (out / "labflow.md").read_text()
    assert "| SEGMENTED |" in md and "SQLite / SEGMENTED" in md
    twins = next(l for l in md.splitlines() if "against one file with the same indexes" in l)
    assert "SEGMENTED" in twins and "ONE-FILE-ILIST" in twins


def test_a_replay_past_its_deadline_is_not_continued(built, tmp_path):
    d, exe = built
    log = lr.ensure_log(str(d), gen.DEFAULT_SEED, gen.parse_size(SMALL), lambda m: None)
    r = lr.replay(exe, "SEGMENTED", log, tmp_path, None, 1e-9, lambda m: None)
    assert r.rc == 4 and r.not_continued and "deadline" in r.error
    md = lr.render_table(lr.load_rows([r]), [r], dict(seed=1, memory=1 << 20, cap="uncapped"))
    assert "| SEGMENTED | n/a (not continued) | n/a (not continued) | n/a (not continued) |" in md


def test_a_replay_the_memory_limit_kills_is_reported_as_oom(built, tmp_path):
    d, exe = built
    notes = []
    cap = lr.MemoryCap.make(1 << 20, notes.append)
    if cap is None:
        pytest.skip(f"no memory cgroup here: {notes}")
    try:
        log = lr.ensure_log(str(d), gen.DEFAULT_SEED, gen.parse_size("4M"), lambda m: None)
        cap.set_limit(cap.baseline([str(exe), "--labflow_list"]) + (1 << 20))
        r = lr.replay(exe, "HAND", log, tmp_path, cap, 600, lambda m: None)
    finally:
        cap.remove()
    assert r.rc != 0 and r.oom and "OOM" in r.error
    md = lr.render_table(lr.load_rows([r]), [r], dict(seed=1, memory=1 << 20, cap="capped"))
    assert "| HAND | n/a (OOM) |" in md


def test_the_reference_variants_files_are_the_byte_models(built, tmp_path):
    """labflow1.md §6: the reference variant's size at the cut points within 10 % of 0.5X,
    1X and 2X. The generator places the cut points with its byte model of that variant's
    files (bench/labflow/filesize.py), which follows the persistent runtime's allocator:
    the replayed files measure what it estimated, to the byte."""
    d, exe = built
    memory = gen.parse_size("4M")
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["bench", "labflow", "--memory", "4M", "--no-cap",
                                       "--no-plots", "--system", "SEGMENTED",
                                       "--build-dir", str(d), "-o", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads((out / "labflow.json").read_text())
    rows = {r["cut"]: r for r in data["rows"] if r["system"] == "SEGMENTED"}
    summary = gen.generate(io.BytesIO(), gen.DEFAULT_SEED, memory)
    for (name, (a, b)), (_, estimate) in zip(zip(gen.CUT_NAMES, gen.CUT_FACTORS), summary.cuts):
        measured = rows[name]["cut_file_bytes"]
        assert measured == estimate, (name, measured, estimate)
        assert abs(measured / (memory * a / b) - 1) <= 0.10, (name, measured)
    assert "within the spec's 10 %" in (out / "labflow.md").read_text()
