"""The synthesised workload (tune_workload.Synthesised) of a container the profile saw only
inserts and a walk on (TPC-B's histories: the invariant check's walk over an append-only
log, in a profile whose sessions accumulate) compiles under -Werror and runs: one
candidate, one repetition, small n."""
from __future__ import annotations

from p2gen.build import load
from p2gen.tune_measure import build_binary, measure, results
from p2gen.tune_workload import Synthesised

SPEC = """record hist { aid: u32; delta: i64; }
container history of hist = top2ds_qualify[array(capacity = 64)[transient]];
cursor all_of on history;
"""


def test_inserts_and_a_walk_only(tmp_path, cc):
    spec = tmp_path / "wl.p2"
    spec.write_text(SPEC)
    checked = load(str(spec))
    info = checked.container("history")
    ops = dict.fromkeys(("insert_many", "get", "at", "update_key", "update_other", "delete",
                         "upsert", "cursor_update", "cursor_delete"), 0)
    cprof = {"count_max": 500, "count_final": 500, "ops": {**ops, "insert": 500}, "keys": {},
             "cursors": {"all_of": {"walks": 1, "rows": 500}}}
    workload = Synthesised(info, cprof, checked.cursors, budget=2_000, min_runs=10)
    workload.stable_refs["t0"] = info.storage.layer.stable_refs
    exe = build_binary([("t0", SPEC)], workload, str(tmp_path / "build"), cc=cc, jobs=1)
    res = results(measure(exe, 1, 1, str(tmp_path / "run"), seed=1), workload.profile_counts())
    assert set(res[0].ns) == {"insert", "walk_all_of"} and res[0].median > 0
