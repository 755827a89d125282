"""`p2gen tune SPEC --profile P`: the steps, in order, per container the profile saw work on.

    enumerate (tune_space, sized: tune_rank) -> rank (tune_rank) -> keep the top k that
    pass same_api (tune) -> build them and the spec's own equation into one binary and
    measure (tune_measure, with the workload of tune_workload) -> pick -> write back
    (tune_write)

The spec's own equation is always measured (candidate t0), unless its untimed warm-up run
shows it too slow (tune_measure.warm_up_runs: over 20x the fastest warm-up, or a cap; on
the synthesised workload or a trace's replay alike), like any candidate: then it is refused, not repeated, and the answers are compared with the
model's first measured. The pick is the candidate with the lowest median cost; the spec
keeps its equation when that is within the noise band of the pick (never rewritten on the
strength of noise).
"""
from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

from .build import load
from .check import check
from .errors import P2Error
from .parser import parse
from .profile import ProfileError, load_profile
from .tune import differences, load_view
from .tune_measure import build_binary, measure, noise_band, results, warm_up
from .tune_rank import candidate_text, current_candidate, ranked, unique_would_open
from .trace import read_trace
from .tune_space import Space
from .tune_command import ENV, build_candidates, measure_command
from .tune_trace import measure_trace, relationship_counts
from .tune_workload import Synthesised
from .tune_write import original_source


@dataclass
class Outcome:
    """What tuning one container found."""
    container: str
    candidates: list            # Candidate: [0] the spec's own, then the top k by prediction
    measured: list              # tune_measure.Result per candidate index
    counts: dict                # the profile's count of each measured operation
    band: float
    n: int
    refused: list = field(default_factory=list)   # (equation, why)
    enumerated: int = 0
    workload: str = "a workload synthesised from the profile"
    cpu: dict = field(default_factory=dict)       # --run: index -> the median CPU ns a run
    notes: list = field(default_factory=list)     # what the spec could declare to open more

    def by_index(self, i: int):
        return next(r for r in self.measured if r.index == i)

    @property
    def best(self):
        return min(self.measured, key=lambda r: r.median)

    @property
    def current(self):
        """The spec's own equation's Result, None if it was too slow to measure."""
        return next((r for r in self.measured if r.index == 0), None)

    @property
    def pick(self):
        """The candidate written back: the best, unless the spec's own is within noise."""
        best, cur = self.best, self.current
        return cur if cur and cur.median <= best.median * (1 + self.band) else best

    @property
    def ties(self) -> list:
        p = self.pick
        return [r for r in self.measured if r is not p and r.median <= p.median * (1 + self.band)]

    def slower_by(self) -> float:
        """How much slower the spec's own equation is than the best (0.25: 25%)."""
        if self.current is None:
            return float("inf")
        return self.current.median / self.best.median - 1 if self.best.median else 0.0


def _say(progress, msg):
    if progress:
        progress(msg)


def api_differences(base, text: str, path: str) -> list:
    """How the spec `text` (written to `path` to be rendered) differs from the spec's API
    and semantics `base` (tune.ApiView): [] if a program sees no difference."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return differences(base, load_view(path, base.prefix))


def tune_container(spec_path: str, source: str, name: str, cprof: dict, top: int, reps: int,
                   cc: str, jobs: int, work: str, progress=None, seed=None,
                   trace: Optional[str] = None, run: Optional[str] = None,
                   rel_counts: Optional[dict] = None) -> Outcome:
    """`rel_counts`: the relationships' operations (a trace's), which the costs read."""
    if rel_counts:
        cprof = {**cprof, "relationships": rel_counts}
    space = Space(source, name, spec_path)
    current = current_candidate(space, cprof)
    cands = ranked(space, cprof, current.find_keys)
    _say(progress, f"{name}: enumerated {len(cands)} candidates with the spec's finds (the "
                   f"relevant space, sized from the profile: n = "
                   f"{int(cprof.get('count_max', 0))})")
    base = load_view(spec_path)
    chosen, refused, seen = [current], [], {(current.canonical, (), ())}
    for cand in cands:
        if len(chosen) > top:
            break
        text = space.spec_text(cand.equation, cand.stack)
        try:         # the whole candidate checked (its legality was predicted) and rendered
            cand.canonical = check(parse(text, spec_path)).container(name).equation_text()
            same = (cand.canonical, cand.stack.file_opts, cand.stack.rels)
            if same in seen:
                continue
            seen.add(same)
            diff = api_differences(base, text, os.path.join(work, f"api-{len(seen)}.p2"))
        except P2Error as e:
            diff = [str(e).splitlines()[0]]
        if diff:
            refused.append((cand.label, diff[0]))
            continue
        chosen.append(cand)
    _say(progress, f"{name}: ranked; measuring the top {len(chosen) - 1} and the spec's own "
                   f"equation ({len(refused)} refused: another API)")
    checked = check(parse(source, spec_path))
    info = checked.container(name)
    workload = Synthesised(info, cprof, checked.cursors)
    specs = []
    for i, cand in enumerate(chosen):
        prefix = f"t{i}"
        specs.append((prefix, candidate_text(space, cand)))
        ci = check(parse(specs[-1][1], spec_path)).container(name)
        workload.stable_refs[prefix] = ci.storage.layer.stable_refs
    cpu = {}
    if run:         # the user's own program, run on each candidate built as `p2gen build` does
        _say(progress, f"{name}: building {len(specs)} candidates, each into a directory")
        dirs = build_candidates(os.path.basename(spec_path), checked.prefix, specs,
                                os.path.join(work, f"run-{name}"), cc, jobs)
        m, failed, cpu = measure_command(run, dirs, reps, seed,
                                         progress=lambda msg: _say(progress, f"{name}: {msg}"))
        refused += [(chosen[i].label, why) for i, why in sorted(failed.items())]
        counts = {"run": 1}
        told = f"the command '{run}' (its wall time a run; ${ENV}: the candidate's build)"
    elif trace:     # the user's own operations, replayed exactly on each candidate
        m, counts, slow = measure_trace(spec_path, trace, specs, name, reps,
                                        os.path.join(work, f"replay-{name}"), cc, seed,
                                        lambda msg: _say(progress, f"{name}: {msg}"))
        refused += [(chosen[i].label, why) for i, why in sorted(slow.items())]
        told = f"the trace {os.path.basename(trace)} replayed exactly"
    else:
        _say(progress, f"{name}: building {len(specs)} candidates into one binary")
        exe = build_binary(specs, workload, os.path.join(work, f"build-{name}"), cc=cc,
                           jobs=jobs, progress=lambda m: _say(progress, f"{name}: {m}"))
        run_dir = os.path.join(work, f"run-{name}")
        # the model's first first: a fast candidate sets the too-slow limit early
        slow = warm_up(exe, list(range(1, len(specs))) + [0], run_dir,
                       progress=lambda msg: _say(progress, f"{name}: {msg}"))
        refused += [(chosen[i].label, why) for i, why in sorted(slow.items())]
        m = measure(exe, len(specs), reps, run_dir, seed=seed, skip=slow,
                    progress=lambda msg: _say(progress, f"{name}: {msg}"))
        counts = workload.profile_counts()
        told = Outcome.workload
    res = results(m, counts)
    if not res:
        raise P2Error(f"{name}: no candidate could be measured: {refused[-1][1]}")
    # candidates whose answers differ from the spec's own equation's (or, if that was too
    # slow, the model's first measured) are refused
    ref_i = min(r.index for r in res)
    ref = m.checks.get(ref_i)
    whose = "the spec's own equation's" if ref_i == 0 else f"{chosen[ref_i].label}'s"
    kept = []
    for r in res:
        if r.index != ref_i and m.checks.get(r.index) != ref:
            refused.append((chosen[r.index].label, f"its answers differ from {whose}"))
            continue
        kept.append(r)
    return Outcome(name, chosen, kept, counts, noise_band(kept), workload.n, refused, len(cands),
                   told, cpu, unique_would_open(space, cprof))


def tune(spec_path: str, profile_path: str, top: int = 5, reps: int = 5,
         containers: Optional[list] = None, cc: str = "cc", jobs: int = 2,
         progress: Optional[Callable[[str], None]] = None, seed=None,
         trace: Optional[str] = None, run: Optional[str] = None) -> tuple:
    """(the spec's text, [Outcome]) for each container the profile saw work on (or the
    ones named); with `trace` (a `build --trace` log of this spec), the candidates measured
    by replaying it rather than on the workload synthesised from the profile; with `run` (a
    shell command), by running it on each candidate's build (tune_command)."""
    t0 = time.perf_counter()
    with open(spec_path, encoding="utf-8") as f:
        source = f.read()
    prof = load_profile(profile_path, spec_path, original_source(source))
    for name, cprof in prof["containers"].items():
        why = _damaged(cprof)
        if why:
            raise ProfileError(f"profile '{profile_path}' is damaged: container {name}: {why}")
    checked = load(spec_path)          # the spec itself is sound (its errors, as build's)
    rel_counts = None
    if trace:          # another API's, damaged: refused before any build
        rel_counts = relationship_counts(read_trace(trace, checked), checked)
    names = containers or [c for c, cp in prof["containers"].items() if _worked(cp)]
    unknown = [c for c in names if c not in prof["containers"]]
    if unknown:
        raise P2Error(f"container {unknown[0]} is not in the profile '{profile_path}' "
                      f"(it has {', '.join(prof['containers'])})")
    out = []
    with tempfile.TemporaryDirectory(prefix="p2gen-tune-") as work:
        for name in names:
            out.append(tune_container(spec_path, source, name, prof["containers"][name], top,
                                      reps, cc, jobs, work, progress, seed, trace, run,
                                      rel_counts))
    _say(progress, f"done in {time.perf_counter() - t0:.1f} s")
    return source, out


def _worked(cprof: dict) -> bool:
    """A container worth tuning: the profile counted finds, walks or changes on it."""
    ops = cprof.get("ops", {})
    finds = sum(k.get("finds", 0) for k in cprof.get("keys", {}).values())
    walks = sum(c.get("walks", 0) for c in cprof.get("cursors", {}).values())
    return bool(finds or walks or any(ops.get(o) for o in ("get", "at", "update_key",
                                                           "update_other", "delete")))


def _damaged(cprof) -> Optional[str]:
    """What a container's entry lacks of what tune reads, or None."""
    def count(v):
        return isinstance(v, int) and not isinstance(v, bool) and v >= 0
    if not isinstance(cprof, dict):
        return "not an object"
    if not count(cprof.get("count_max")):
        return "no count_max"
    for part in ("ops", "keys", "cursors"):
        if not isinstance(cprof.get(part), dict):
            return f"no {part}"
    if not all(count(v) for v in cprof["ops"].values()):
        return "an operation's count is not a count"
    for what, entries, field_ in (("key", cprof["keys"], "finds"),
                                  ("cursor", cprof["cursors"], "walks")):
        for k, v in entries.items():
            if not isinstance(v, dict) or not count(v.get(field_, 0)):
                return f"{what} {k}: no {field_} count"
    return None
