"""`p2gen tune --trace T`: the candidates measured by replaying the user's trace exactly
(trace_replay) instead of a workload synthesised from the profile (tune_workload).

The candidates (prefixes t0, t1, ...: t0 the spec's own) are linked into one replay driver;
each replays the whole trace once untimed first, in a process of its own, and one too slow
is stopped and not repeated, as on the synthesised workload (tune_measure.warm_up_runs);
each repetition is then a process of its own replaying the whole trace on every other
candidate in a random order. The replay's statistics become tune_measure's: per candidate, per operation
the ns per operation of each run and the trace's count of it, so that tune_run picks, bands
and writes the evidence exactly as for the synthesised workload. The container's own
operations keep the replay's names (insert, set, result: the replay's bookkeeping of a
reference given back), its finds are named by their key (find_id); the cursors' and the
database's (commits) and the relationships' roles' are named `<unit>.<op>`. Other
containers' operations are left out: the same code for every candidate, they would add only
their noise. The trace's relationship operations also feed the ranking
(`relationship_counts`), so that a relationship's layer is a candidate where the workload
uses it.
"""
from __future__ import annotations

import os
import random
from typing import Callable, Optional

from .trace import key_order
from .trace_replay import build_driver, run_driver
from .tune_measure import Measured, warm_up_runs


def relationship_counts(trace, checked) -> dict:
    """The trace's relationship operations as the costs read them (tune_rank.Workload's
    `relationships`): per relationship its walks (opens), rows (steps), adds (adds and sets)
    and removes, both roles together."""
    by_role = trace.op_counts(checked)
    out: dict = {}
    for ri in checked.relationships:
        c = out.setdefault(ri.name, {"walks": 0, "rows": 0, "adds": 0, "removes": 0})
        for role in ri.roles:
            ops = by_role.get(f"{role.container.name}.{role.name}", {})
            c["walks"] += ops.get("rel_open", 0)
            c["rows"] += ops.get("rel_next", 0)
            c["adds"] += ops.get("rel_add", 0) + ops.get("rel_set", 0)
            c["removes"] += ops.get("rel_remove", 0)
    return {r: c for r, c in out.items() if any(c.values())}


def op_name(container: str, keys: list, unit: str, op: str) -> str:
    if op.startswith("find#") and op[5:].isdigit() and int(op[5:]) < len(keys):
        op = f"find_{keys[int(op[5:])]}"
    return op if unit == container else f"{unit}.{op}"


def measure_trace(spec_path: str, trace_path: str, specs: list, container: str, reps: int,
                  build_dir: str, cc: str = "cc", seed: Optional[int] = None,
                  progress: Callable[[str], None] = lambda m: None) -> tuple:
    """specs: [(prefix, spec text)], the spec's own first. Each candidate replays the trace
    once untimed first, in a process of its own, and one too slow is not repeated (the
    warm-up and limit of the synthesised workload's: tune_measure.warm_up_runs); the rest
    `reps` times, each a process replaying them in a new random order. (tune_measure.Measured
    by candidate index, {operation: the trace's count}, {index: why too slow})."""
    os.makedirs(build_dir, exist_ok=True)
    cands = []
    for prefix, text in specs:
        path = os.path.join(build_dir, f"{prefix}.p2")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        cands.append((path, prefix))
    progress(f"building {len(specs)} candidates into one replay driver")
    checked, exe = build_driver(spec_path, build_dir, cc=cc, candidates=cands)
    trace_path = os.path.abspath(trace_path)
    keys = [k.name for k in key_order(checked.container(container))]
    others = {c.name for c in checked.containers} - {container}
    prefixes = [prefix for prefix, _ in specs]

    def replay(i: int, limit: float) -> Optional[float]:
        """The replay's own time (the driver's: not its start nor its reading of the trace,
        the same for every candidate), None if stopped at `limit` seconds of the process."""
        runs = run_driver(exe, trace_path, 1, only=[prefixes[i]], timeout=limit)
        return None if runs is None else runs[0]["total_ns"] / 1e9
    # the model's first first: a fast candidate sets the too-slow limit early
    slow = warm_up_runs(replay, list(range(1, len(specs))) + [0], progress=progress)
    rng = random.Random(seed)
    out, counts = Measured(), {}
    for rep in range(reps):
        order = [i for i in range(len(specs)) if i not in slow]
        rng.shuffle(order)
        progress(f"replaying the trace, rep {rep + 1}/{reps}")
        for run in run_driver(exe, trace_path, 1, only=[prefixes[i] for i in order]):
            i = prefixes.index(run["prefix"])
            for unit, op, count, ns in run["ops"]:
                if unit in others:
                    continue
                name = op_name(container, keys, unit, op)
                out.ns.setdefault(i, {}).setdefault(name, []).append(ns / max(count, 1))
                out.runs.setdefault(i, {})[name] = count
                counts[name] = count
    return out, counts, slow
