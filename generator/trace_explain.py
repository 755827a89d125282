"""`p2gen explain spec.p2 --profile P [--trace T]`: beside each find's and cursor's access
path, what the workload did with it (the profile's count), what the planner estimates it
costs (per call and for the workload) and, from a replay of the trace (trace_replay.py),
what it measured; then, per container, where the planner's ranking of the spec's access
paths disagrees with the measurement.

A disagreement is flagged when the planner has one path cheaper than another while it
measured slower by more than MARGIN: single runs on a loaded machine misrank by up to
1.3-1.7x, the replay's medians over several runs narrow that, and closer results are ties.
"""
from __future__ import annotations

from typing import Optional

from .layers.base import COST_UNIT
from .plan import explain, size_estimate
from .trace import key_order

MARGIN = 1.3


def _find_key(cur) -> str:
    return cur.name[5:]


def _profile_use(prof: dict, info, cur) -> tuple:
    """(calls, what they were in words) of a find or cursor in the profile."""
    c = prof["containers"].get(info.name, {})
    if cur.synthetic == "find":
        n = c.get("keys", {}).get(_find_key(cur), {}).get("finds", 0)
        return n, f"{n:,} calls"
    use = c.get("cursors", {}).get(cur.name, {"walks": 0, "rows": 0})
    return use["walks"], f"{use['walks']:,} walks, {use['rows']:,} rows"


def _measured(summary: Optional[dict], info, cur) -> Optional[float]:
    """Median ns per call (a find) or per walk (a cursor: its open and its steps) in the
    replay, or None (not replayed, or never called)."""
    if summary is None:
        return None
    ops = summary["ops"]
    if cur.synthetic == "find":
        j = [k.name for k in key_order(info)].index(_find_key(cur))   # a find's aux
        v = ops.get((info.name, f"find#{j}"))
        return v["ns_per_op"] if v else None
    opened = ops.get((cur.name, "cursor_open"))
    if not opened:
        return None
    steps = ops.get((cur.name, "cursor_next"), {"count": 0, "ns_per_op": 0.0})
    total = opened["count"] * opened["ns_per_op"] + steps["count"] * steps["ns_per_op"]
    return total / opened["count"]


def _ns(x: float) -> str:
    return f"{x / 1000:.2f} us" if x >= 10_000 else f"{x:.1f} ns"


def explain_profile(checked, prof: dict, summary: Optional[dict] = None,
                    include_finds: bool = True) -> str:
    """The planner's explanation with the workload beside each path, and the misrankings."""

    def note(cur) -> list:
        info = cur.container
        calls, said = _profile_use(prof, info, cur)
        cost = checked.plans[cur].path.cost
        line = (f"    workload: {said}; estimated {cost:.1f} {COST_UNIT} a "
                f"{'call' if cur.synthetic == 'find' else 'walk'}, {calls * cost:,.0f} in all")
        ns = _measured(summary, info, cur)
        if ns is not None:
            line += f"; measured {_ns(ns)} a {'call' if cur.synthetic == 'find' else 'walk'}"
        return [line]

    text = explain(checked, include_finds, beside=note)
    lines = ["", "ranking of each container's access paths, by the planner and measured "
             f"(a disagreement: measured more than {MARGIN}x the other way):"
             if summary is not None else
             "(give --trace too for the measured cost beside the planner's)"]
    if summary is not None:
        for info in checked.containers:
            paths = [cur for cur in info.cursors if cur.synthetic != "all"
                     and (include_finds or cur.synthetic != "find")]
            rows = []
            for cur in paths:
                ns = _measured(summary, info, cur)
                if ns is not None and _profile_use(prof, info, cur)[0]:
                    rows.append((_label(info, cur), checked.plans[cur].path.cost, ns))
            bad = [(a, b) for a in rows for b in rows
                   if a[1] < b[1] and a[2] > b[2] * MARGIN]
            changes = _maintenance(prof, summary, info)
            if len(rows) < 2 and not changes:
                continue
            most = prof["containers"].get(info.name, {}).get("count_max", 0)
            verdict = ("fewer than two paths used: nothing to rank" if len(rows) < 2 else
                       "the planner's order is the measured one" if not bad else
                       f"{len(bad)} disagreement{'s' if len(bad) > 1 else ''}")
            lines.append(f"  container {info.name} (the workload's largest count: {most:,}; "
                         f"the planner assumed {size_estimate(info):,.0f}): {verdict}")
            lines += changes
            for a, b in bad:
                lines.append(f"    MISRANKED: {a[0]} is estimated cheaper than {b[0]} "
                             f"({a[1]:.1f} against {b[1]:.1f} {COST_UNIT}) but measured "
                             f"{a[2] / b[2]:.1f}x slower ({_ns(a[2])} against {_ns(b[2])})")
    return text + "\n".join(lines) + "\n"


# the profile's operations that change a container, and the replay's events that are them
_CHANGES = {"insert": ("insert",), "update": ("update", "set", "set_text"),
            "delete": ("delete",)}


def _maintenance(prof: dict, summary: dict, info) -> list:
    """What the workload's changes cost (the planner does not estimate them): per kind, the
    profile's count and the replay's median ns."""
    ops = prof["containers"].get(info.name, {}).get("ops", {})
    said = []
    for kind, events in _CHANGES.items():
        n = (ops.get("update_key", 0) + ops.get("update_other", 0) if kind == "update"
             else ops.get(kind, 0))
        timed = [summary["ops"][(info.name, e)] for e in events if (info.name, e) in summary["ops"]]
        count = sum(t["count"] for t in timed)
        if n or count:
            ns = sum(t["count"] * t["ns_per_op"] for t in timed) / count if count else None
            said.append(f"{kind} {n:,}" + (f" at {_ns(ns)}" if ns is not None else ""))
    return [f"    changes (not in the planner's costs): {', '.join(said)}"] if said else []


def _label(info, cur) -> str:
    return (f"find {info.name} by {_find_key(cur)}" if cur.synthetic == "find"
            else f"cursor {cur.name}")
