"""`p2gen bench tune-topk`: is the measured best equation in the model's top k?

`p2gen tune` measures only the model's top k candidates (its claim: the true best is
among them on >= 95% of workloads). This experiment checks that claim. For N synthetic
workloads over two container shapes -- TPC-B's accounts (point finds by id, balance updates,
inserts and deletes) and a relation walked by key range (cursor walks, finds, inserts,
deletes) -- with n, the mix of operations, key order (sequential or shuffled) and key
density (dense or sparse) drawn from a seeded generator, it
  1. ranks the container's relevant space with the planner's costs fed the workload's
     profile (tune_rank.ranked: what tune does);
  2. measures the model's top TOP (5) and a random sample of the rest (every candidate when
     the space is small), all built into one binary and run `reps` times in separate
     processes, the candidates in a new random order each time (tune_measure: what tune
     does), on the workload synthesised from the profile (tune_workload);
  3. takes the measured best, with every candidate whose median is within the noise band
     of it (a tie: found if any of them is), and reports whether the model ranked it in its
     top k, for k = 1, 3, 5, and how much slower the model's first choice ran.
The sample of the rest is a sample: a better candidate outside it would be missed (the
report says how many of each space were measured). Writes tune_topk.{json,md}.
"""
from __future__ import annotations

import json
import os
import platform
import random
import tempfile
import time
from dataclasses import asdict, dataclass, field
from typing import Callable, Optional

from ...check import check
from ...errors import P2Error
from ...parser import parse
from ...tune_measure import build_binary, measure, noise_band, results
from ...tune_measure import warm_up as warm_up_runs
from ...tune_rank import candidate_text, current_candidate, ranked
from ...tune_space import Space
from ...tune_workload import Synthesised
from ..common import command_outputs, write_report

TOP = 5
KS = (1, 3, 5)

SHAPES = {
    # TPC-B's accounts: found by id, balance updated, rows added and removed
    "tpcb": ("accounts", """record account { id: u32; branch_id: u32; balance: i64; filler: char[84]; }
container accounts of account = top2ds_qualify[hash(key = id)[array[transient]]];
find accounts by id;
"""),
    # a relation walked by key ranges (the shape of `p2gen bench range`), also found by key
    "range": ("rows", """record row { k: u32; v: u64; pad: char[88]; }
container rows of row = top2ds_qualify[btree(key = k)[array[transient]]];
find rows by k;
cursor walk on rows where k >= $lo and k < $hi order by k;
"""),
    # a relation read whole (a walk of every row), found by key now and then
    "scan": ("rows", """record row { k: u32; v: u64; pad: char[88]; }
container rows of row = top2ds_qualify[array[transient]];
find rows by k;
cursor walk on rows;
"""),
}


@dataclass
class Workload:
    shape: str
    n: int
    finds: int
    updates: int          # updates of a non-key field
    key_updates: int
    deletes: int
    walks: int
    rows_per_walk: int
    in_order: bool        # keys inserted in key order
    dense: bool           # keys 0..n-1 (else spread over 0..50n)

    def label(self) -> str:
        mix = [f"{v} {k}" for k, v in (("finds", self.finds), ("updates", self.updates),
                                       ("key updates", self.key_updates),
                                       ("deletes", self.deletes), ("walks", self.walks)) if v]
        walk = f" x {self.rows_per_walk} rows" if self.walks else ""
        return (f"{self.shape}, n={self.n:,}, {', '.join(mix)}{walk}, "
                f"{'sequential' if self.in_order else 'shuffled'} {'dense' if self.dense else 'sparse'} keys")

    def profile(self) -> dict:
        """The container's entry of a profile, as `p2gen build --profile` writes it."""
        key = "id" if self.shape == "tpcb" else "k"
        hi = self.n - 1 if self.dense else 50 * self.n
        cursors = {"all": {"walks": 0, "rows": 0}}
        if self.shape in ("range", "scan"):
            cursors["walk"] = {"walks": self.walks, "rows": self.walks * self.rows_per_walk}
        return {"count_max": self.n, "count_final": self.n - self.deletes,
                "ops": {"insert": self.n, "insert_many": 0, "get": 0, "at": 0,
                        "update_key": self.key_updates, "update_other": self.updates,
                        "delete": self.deletes, "upsert": 0, "cursor_update": 0,
                        "cursor_delete": 0},
                "cursors": cursors,
                "keys": {key: {"finds": self.finds, "inserts": self.n, "min": 0, "max": hi,
                               "distinct": self.n, "in_order": self.in_order,
                               "out_of_order": 0 if self.in_order else self.n // 2}}}


def workloads(count: int, seed: int, sizes=(1000, 10000)) -> list:
    """`count` workloads, half of each shape, the rest of their axes drawn at random."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        shape = ("tpcb", "range")[i % 2]
        n = rng.choice(sizes)
        finds = rng.choice((0, n, 10 * n)) if shape == "range" else rng.choice((n, 10 * n))
        out.append(Workload(
            shape, n, finds=finds,
            updates=rng.choice((0, n, 5 * n)),
            key_updates=rng.choice((0, 0, n // 10)),
            deletes=rng.choice((0, n // 10, n // 2)),
            walks=rng.choice((n // 10, n)) if shape == "range" else 0,
            rows_per_walk=rng.choice((10, 100, 1000)) if shape == "range" else 0,
            in_order=rng.random() < 0.5, dense=rng.random() < 0.5))
    return out


@dataclass
class Outcome:
    workload: str
    space: int                    # distinct candidates ranked
    measured: list                # [(model rank (1-based; 0: outside the top TOP), equation, median ns)]
    band: float
    best: str = ""
    best_rank: int = 0            # the best model rank among the tied best (0: outside the top)
    found: dict = field(default_factory=dict)     # k -> bool
    first_over_best: float = 0.0  # the model's first choice's median over the best's
    seconds: float = 0.0


def choose(space: Space, cprof: dict, sample: int, rng: random.Random) -> tuple:
    """([(model rank or 0, Candidate)] to measure, distinct candidates ranked): the model's
    top TOP (distinct as the checker prints them) and `sample` others at random (all of
    them when that many or fewer remain)."""
    cur = current_candidate(space, cprof)
    cands = ranked(space, cprof, cur.find_keys)
    top, seen = [], set()
    rest = []
    for c in cands:
        if len(top) < TOP:
            try:
                c.canonical = check(parse(space.spec_text(c.equation), space.path)) \
                    .container(space.name).equation_text()
            except P2Error:
                continue
            if c.canonical in seen:
                continue
            seen.add(c.canonical)
            top.append(c)
        else:
            rest.append(c)
    picked = []
    rng.shuffle(rest)
    for c in rest:            # distinct from the top and from each other, checked whole
        if len(picked) >= sample:
            break
        try:
            c.canonical = check(parse(space.spec_text(c.equation), space.path)) \
                .container(space.name).equation_text()
        except P2Error:
            continue
        if c.canonical not in seen:
            seen.add(c.canonical)
            picked.append(c)
    return [(i + 1, c) for i, c in enumerate(top)] + [(0, c) for c in picked], len(cands)


def measure_candidates(source: str, name: str, spec_name: str, cprof: dict, space: Space,
                       cands: list, reps: int, work: str, cc: str, jobs: int, seed: int,
                       say: Callable[[str], None], budget: int = 100_000,
                       min_runs: int = 20_000, warm_up: bool = False) -> tuple:
    """Candidates `cands` of container `name` built into one binary and measured `reps`
    times (separate processes, a new random order each) on the workload synthesised from
    `cprof` (`budget` operations, each phase at least `min_runs`; topk: a tenth of tune's,
    the sample holds the slow candidates tune never measures); `warm_up`: one untimed run
    of each first, as `p2gen tune` does (tune_measure.warm_up: these VMs fault never-used
    memory in slowly; the too slow not repeated). ([tune_measure.Result] of the candidates
    whose answers are cands[0]'s, or if it was too slow the first measured's, the noise
    band)."""
    checked = check(parse(source, spec_name))
    wl = Synthesised(checked.container(name), cprof, checked.cursors, budget=budget,
                     min_runs=min_runs)
    specs = []
    for i, cand in enumerate(cands):
        prefix = f"t{i}"
        specs.append((prefix, candidate_text(space, cand)))
        ci = check(parse(specs[-1][1], spec_name)).container(name)
        wl.stable_refs[prefix] = ci.storage.layer.stable_refs
    exe = build_binary(specs, wl, os.path.join(work, "build"), cc=cc, jobs=jobs)
    slow = {}
    if warm_up:
        say("  warming up (one untimed run each)")
        slow = warm_up_runs(exe, list(range(1, len(specs))) + [0], os.path.join(work, "run"))
    m = measure(exe, len(specs), reps, os.path.join(work, "run"), seed=seed, skip=slow,
                progress=lambda msg: say(f"  {msg}"))
    res = results(m, wl.profile_counts())
    ref = m.checks.get(min((r.index for r in res), default=0))
    res = [r for r in res if m.checks.get(r.index) == ref]      # the same answers only
    return res, noise_band(res)


def run_workload(w: Workload, sample: int, reps: int, work: str, cc: str, jobs: int,
                 rng: random.Random, say: Callable[[str], None]) -> Outcome:
    t0 = time.perf_counter()
    name, source = SHAPES[w.shape]
    cprof = w.profile()
    space = Space(source, name, f"{w.shape}.p2")
    chosen, size = choose(space, cprof, sample, rng)
    say(f"  {len(chosen)} candidates of {size}: building")
    res, band = measure_candidates(source, name, f"{w.shape}.p2", cprof, space,
                                   [c for _, c in chosen], reps, work, cc, jobs,
                                   rng.randrange(1 << 30), say)
    best = min(res, key=lambda r: r.median)
    tied = [r for r in res if r.median <= best.median * (1 + band)]
    ranks = [chosen[r.index][0] for r in tied if chosen[r.index][0]]
    first = next((r for r in res if chosen[r.index][0] == 1), None)
    out = Outcome(w.label(), size,
                  sorted(((chosen[r.index][0], chosen[r.index][1].equation, round(r.median))
                          for r in res), key=lambda x: x[2]),
                  band, chosen[best.index][1].equation, min(ranks, default=0))
    out.found = {k: out.best_rank != 0 and out.best_rank <= k for k in KS}
    out.first_over_best = first.median / best.median if first and best.median else 0.0
    out.seconds = time.perf_counter() - t0
    return out


def render(outs: list, args: dict) -> list:
    n = len(outs)
    md = ["# Is the measured best equation in the model's top k? (`p2gen bench tune-topk`)", "",
          f"{n} workloads (seed {args['seed']}), per workload the model's top {TOP} and "
          f"{args['sample']} others of its space at random, each measured in {args['reps']} "
          f"processes (candidates in a random order each time); {platform.node()}, "
          f"{os.cpu_count()} CPUs, load average at the end "
          f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}.", "",
          "| k | the measured best (or a tie within the noise band) in the model's top k |",
          "|---:|---|"]
    for k in KS:
        hit = sum(o.found[k] for o in outs)
        md.append(f"| {k} | {hit} of {n} ({100 * hit / n:.0f}%) |" if n else f"| {k} | — |")
    md += ["", "| workload | space | measured | band | best (model rank) | model's first: × best |",
           "|---|---:|---:|---:|---|---:|"]
    for o in outs:
        rank = o.best_rank or f"> {TOP}"
        md.append(f"| {o.workload} | {o.space} | {len(o.measured)} | {100 * o.band:.0f}% | "
                  f"`{o.best}` ({rank}) | {o.first_over_best:.2f} |")
    md += ["", "Per workload, every measured candidate (model rank, 0: outside the top "
           f"{TOP}; the workload's median cost in ns):", ""]
    for o in outs:
        md.append(f"- {o.workload}: " + "; ".join(f"{r}: `{e}` {ns:,}" for r, e, ns in o.measured))
    md.append("")
    return md


def command(*, workloads_n: int, sample: int, reps: int, seed: int, full: bool, out: Optional[str],
            cc: str, jobs: int, say: Callable[[str], None] = print) -> int:
    out, json_path, cmdline = command_outputs(out, "tune_topk.json")
    jobs = jobs or os.cpu_count() or 2
    ws = workloads(workloads_n, seed, (1000, 10000, 30000) if full else (1000, 10000))
    rng = random.Random(seed)
    outs = []
    with tempfile.TemporaryDirectory(prefix="p2gen-topk-") as work:
        for i, w in enumerate(ws):
            say(f"[{i + 1}/{len(ws)}] {w.label()}")
            o = run_workload(w, sample, reps, os.path.join(work, f"w{i}"), cc, jobs, rng, say)
            say(f"  best: {o.best} (model rank {o.best_rank or '> %d' % TOP}; band "
                f"{100 * o.band:.0f}%; model's first {o.first_over_best:.2f}x the best; "
                f"{o.seconds:.0f} s)")
            outs.append(o)
    args = {"seed": seed, "sample": sample, "reps": reps}
    os.makedirs(out, exist_ok=True)
    with open(json_path, "w", encoding="utf-8") as f:
        json.dump({"args": args, "command": cmdline, "workloads": [asdict(o) for o in outs]}, f,
                  indent=1)
    text = write_report(out, "tune_topk.md", ([f"Command: `{cmdline}`", ""] if cmdline else [])
                        + render(outs, args))
    say("")
    say(text)
    say(f"wrote {json_path}, {os.path.join(out, 'tune_topk.md')}")
    return 0
