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


def _measured(tmp_path, cc, text: str, container: str, n: int, keys: dict, cursors: dict):
    """The spec `text`'s container loaded with n rows and its cursors walked, one
    candidate, one run: (the workload, tune_measure.Measured)."""
    spec = tmp_path / "wl.p2"
    spec.write_text(text)
    checked = load(str(spec))
    info = checked.container(container)
    ops = dict.fromkeys(("insert_many", "get", "at", "update_key", "update_other", "delete",
                         "upsert", "cursor_update", "cursor_delete"), 0)
    cprof = {"count_max": n, "count_final": n, "ops": {**ops, "insert": n}, "keys": keys,
             "cursors": cursors}
    workload = Synthesised(info, cprof, checked.cursors, budget=2_000, min_runs=10)
    workload.stable_refs["t0"] = info.storage.layer.stable_refs
    exe = build_binary([("t0", text)], workload, str(tmp_path / "build"), cc=cc, jobs=1)
    return workload, measure(exe, 1, 1, str(tmp_path / "run"), seed=1)


def test_inserts_and_a_walk_only(tmp_path, cc):
    workload, m = _measured(tmp_path, cc, SPEC, "history", 500, {},
                            {"all_of": {"walks": 1, "rows": 500}})
    res = results(m, workload.profile_counts())
    assert set(res[0].ns) == {"insert", "walk_all_of"} and res[0].median > 0


RANGE = """record row { k: u32; v: u64; }
container rows of row = top2ds_qualify[btree(key = k)[array[transient]]];
cursor walk on rows where k >= $lo and k < $hi order by k;
"""


def test_a_range_walk_spans_the_profiles_rows_per_walk(tmp_path, cc):
    # `k >= $lo and k < $hi` with both bounds from one row's k walked nothing; the upper
    # bound now lies the key span of 100 rows above the lower (sparse keys: 0..50n)
    workload, m = _measured(tmp_path, cc, RANGE, "rows", 1000,
                            {"k": {"finds": 0, "inserts": 1000, "min": 0, "max": 50_000,
                                   "distinct": 1000, "in_order": False, "out_of_order": 500}},
                            {"walk": {"walks": 40, "rows": 4000}})
    (inserted, walked), = m.checks[0]
    walks = workload.runs["walk_walk"]
    assert inserted == 1000 and walks == 40
    assert 0.8 * walks * 100 < walked <= walks * 101     # a walk from a row near the end is cut
