"""`p2gen bench tpcb --profile-rows`: each paper variant also generated with --profile
(<NAME>-prof, its own prefix) into the same binary, and the report's table of the counters'
cost (the ratio of the medians, side by side in one run)."""
from __future__ import annotations

from p2gen.bench.tpcb.run import P2_SYSTEMS, all_variants, profile_overhead


def test_profile_rows_are_twins_of_the_plain_variants():
    plain = all_variants(False)
    both = all_variants(False, profile_rows=True)
    twins = [v for v in both if v.profile]
    assert both[:len(plain)] == plain and not any(v.profile for v in plain)
    assert {(v.name, v.mem) for v in twins} == {(s + "-prof", m) for s in P2_SYSTEMS
                                                for m in ("persistent", "transient")}
    for v in twins:
        base = next(p for p in plain if p.name + "-prof" == v.name and p.mem == v.mem)
        assert v.spec == base.spec and v.prefix == base.prefix + "_prof"


def test_profile_overhead_table():
    summary = {("HASH1", "persistent", 2): {"time": 200.0},
               ("HASH1-prof", "persistent", 2): {"time": 210.0},
               ("AVL", "transient", 2): {"time": 300.0}}
    lines = profile_overhead(summary)
    assert "| HASH1 | persistent | 2 | 200.0 | 210.0 | 1.050 |" in lines
    assert not any(l.startswith("| AVL") for l in lines)
    assert profile_overhead({("AVL", "transient", 2): {"time": 1.0}}) == []
