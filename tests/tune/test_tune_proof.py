"""`p2gen bench tune` (issue 38 item 5), on a tiny configuration: one synthetic workload
(point finds on 1,000 rows, the provisional equation an array scanned), the tuner's top 1,
one process each. The report's structure (its tables, the targets each met or not with
their numbers, the JSON's fields), and that the pick it reports is the declaration that
`p2gen tune --dry-run` writes for the same spec and profile (the array is ~80x slower
than the model's first: the pick is not a matter of noise). Timings are not checked. The
workloads' list (no compiler) is checked apart: the quick set, --all and --big."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from p2gen.bench.tune.proof import MIXES, _truth_id, cases

TINY = ["--only", "point/1e3", "--top", "1", "--reps", "1", "--truth-reps", "1",
        "--sample", "1", "--seed", "38"]


def p2gen(*args, cwd):
    return subprocess.run([sys.executable, "-m", "p2gen", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=600)


@pytest.fixture(scope="module")
def report(tmp_path_factory, cc):
    d = tmp_path_factory.mktemp("tune-proof")
    r = p2gen("bench", "tune", *TINY, "--cc", cc, "-j", "2", "-o", "out", cwd=d)
    assert r.returncode == 0, r.stderr + r.stdout
    return d, json.loads((d / "out" / "tune.json").read_text()), \
        (d / "out" / "tune.md").read_text()


def test_the_report_has_its_tables_and_the_targets_with_numbers(report):
    _, data, md = report
    (w,) = data["workloads"]
    assert w["name"] == "point/1e3/dense" and w["truth"] == "sample" and w["space"] >= 3
    # the model's top 1, one other, the pick and the spec's own (the pick is the top 1)
    assert len(w["measured"]) == 3 and w["pick"] in w["measured"] and w["own"] in w["measured"]
    assert w["best"] == min(w["measured"], key=w["measured"].get)
    assert w["pick_over_best"] == pytest.approx(w["measured"][w["pick"]] /
                                                w["measured"][w["best"]], rel=1e-3)
    assert w["best_rank"] >= 1 and w["tuner_seconds"] > 0 and not w["kept"]
    targets = [t["target"] for t in data["targets"]]
    assert len(targets) == 6 and all(isinstance(t["met"], bool) and t["measured"]
                                     for t in data["targets"])
    assert "<= 60 s per container, builds included" in targets
    for head in ("## Targets", "| target | met | measured |", "## Per workload",
                 "| workload | space | truth | pick (tune writes back) | pick / best | band |"):
        assert head in md
    row = next(line for line in md.splitlines() if line.startswith("| point/1e3/dense |"))
    assert row.count("|") == 10 and f"`{w['pick']}`" in row


def test_the_pick_is_what_tune_dry_run_writes_back(report):
    d, data, _ = report
    (w,) = data["workloads"]
    r = p2gen("tune", w["spec"], "--profile", w["profile"], "--dry-run", "-q", "--top", "1",
              "--reps", "1", cwd=d)
    assert r.returncode == 0, r.stderr
    added = [line[1:] for line in r.stdout.splitlines()
             if line.startswith("+container accounts of")]
    assert added == [w["written"]] and w["written"].startswith("container accounts of")


def test_a_cached_exhaustive_ground_truth_is_read_not_measured_again(report, cc):
    # the tiny run's medians planted as an exhaustive truth, 1000x: the report must show
    # them as they are (a measurement would give the real ones)
    d, data, _ = report
    (w,) = data["workloads"]
    case = next(c for c in cases() if c.name == w["name"])
    planted = {k: v * 1000 for k, v in w["measured"].items()}
    (d / "truth.json").write_text(json.dumps({_truth_id(case, 1): {
        "workload": case.name, "exhaustive": True, "space": w["space"], "reps": 1,
        "band": 0.5, "medians": planted}}))
    r = p2gen("bench", "tune", *TINY, "--cc", cc, "-j", "2", "-o", "again", "--truth-file",
              "truth.json", cwd=d)
    assert r.returncode == 0, r.stderr + r.stdout
    (again,) = json.loads((d / "again" / "tune.json").read_text())["workloads"]
    assert again["truth"] == "exhaustive (cached)" and again["band"] == 0.5
    assert again["measured"] == planted


def test_the_workloads():
    quick = cases()
    assert [c.name for c in quick][:2] == ["tpcb/sf2", "range-spec/btree"]
    assert len(quick) == 2 + len(MIXES) and all("/1e3/" in c.name for c in quick[2:])
    everything = cases(everything=True)
    assert len(everything) == 1 + 5 + len(MIXES) * 2 * 3
    assert len({c.name for c in everything}) == len(everything)
    big = cases(everything=True, big=True)
    assert {"tpcb/sf12", "scan/1e6/sparse"} <= {c.name for c in big}
    sf2 = quick[0].profile
    assert sf2["count_max"] == 200_000 and sf2["keys"]["id"]["in_order"]
