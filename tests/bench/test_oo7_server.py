"""`p2gen bench oo7 --server` on the tiny database: the HASH/ILIST equation on a local
file, over a page server (nbdkit) and an object server (redis-server), both started by
the command on free loopback ports; T1, T6 and Q1 answer as the local variant does, and
the servers' counters are there and add up (requests >= misses; a hot run reads less than
its cold one)."""
from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner

from p2gen.bench.engines import NBD_MISSING, REDIS_MISSING
from p2gen.bench.oo7 import server as srv
from p2gen.cli import main

pytestmark = pytest.mark.skipif(
    NBD_MISSING or REDIS_MISSING or not shutil.which("c++"),
    reason=NBD_MISSING or REDIS_MISSING or "no C++ compiler")


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    d = tmp_path_factory.mktemp("oo7_server")
    # a buffer that holds the tiny database: the hot runs send no request
    res = CliRunner().invoke(main, ["bench", "oo7", "--server", "--size", "tiny", "--pages", "4096",
                                    "--hot-runs", "3", "-o", str(d / "out"),
                                    "--build-dir", str(d / "build"), "--db-dir", str(d)])
    doc = json.loads((d / "out" / "oo7_server.json").read_text())
    return res, doc, (d / "out" / "oo7_server.md").read_text()


def _rows(doc):
    return {(r["system"], r["op"], r["phase"]): r for r in doc["processes"][0]["rows"]}


def test_answers_agree_with_the_local_variant(result):
    res, doc, _ = result
    assert res.exit_code == 0, res.output
    rows = _rows(doc)
    assert not [r for r in rows.values() if "error" in r]
    for op in srv.OPS:
        for phase in ("cold", "hot"):
            local = rows[("LOCAL", op, phase)]["count"]
            assert local > 0
            for system in ("PAGESERVER", "OBJSERVER"):
                assert rows[(system, op, phase)]["count"] == local, (system, op, phase)
    assert srv.problems(doc["processes"]) == []


def test_server_counters_are_counted_and_consistent(result):
    _, doc, md = result
    rows = _rows(doc)
    assert "stats" not in rows[("LOCAL", "T1", "cold")]
    for system in ("PAGESERVER", "OBJSERVER"):
        for op in srv.OPS:
            cold, hot = rows[(system, op, "cold")]["stats"], rows[(system, op, "hot")]["stats"]
            assert cold["reads"] > 0 and cold["bytes_read"] > 0 and cold["misses"] > 0
            assert cold["reads"] >= cold["misses"] - cold.get("bundled", 0) or system == "OBJSERVER"
            assert hot["reads"] < cold["reads"], (system, op, cold, hot)
    assert "| T1 | cold | PAGESERVER |" in md and "| Q1 | hot | OBJSERVER |" in md


def test_a_wrong_answer_is_a_problem(result):
    _, doc, _ = result
    bad = json.loads(json.dumps(doc["processes"]))
    next(r for r in bad[0]["rows"] if r.get("system") == "PAGESERVER" and r.get("op") == "T6")["count"] += 1
    assert any("answers differ" in p for p in srv.problems(bad))


def test_a_buffer_holding_the_working_set_runs_hot_without_requests(result):
    # --pages 4096: every page T1 touches stays resident, so the hot runs are the local
    # file's code (the target's row: hot T1 on the page server against LOCAL)
    _, doc, md = result
    rows = _rows(doc)
    assert doc["pages"] == 4096 and doc["hot_runs"] == 3
    for op in srv.OPS:
        assert rows[("PAGESERVER", op, "hot")]["stats"]["reads"] == 0, op
        assert rows[("PAGESERVER", op, "cold")]["stats"]["evictions"] == 0, op
    assert "Target: hot T1 on the page server ≤ 1.05× LOCAL:" in md
    assert srv.ratio_to_local(doc["processes"], "PAGESERVER", "T1", "hot") > 0
    assert "![oo7_server](oo7_server.png)" in md
