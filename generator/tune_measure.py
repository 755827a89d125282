"""`p2gen tune`, step 3: build the candidates into one binary and measure them.

Each candidate's spec is generated with its own prefix (t0, t1, ...) into one build
directory and compiled as soon as it is generated, in parallel (`jobs` compilers at once);
the runtime's object comes from the toolchain's cache (compiled once per compiler and
flags); one driver holds every candidate's run function (the workload's `candidate(prefix)`
code) and links them all. The binary runs the candidates named on its command line in that
order, each in its own directory, and prints per phase `<i> phase <op> <runs> <ns>` and
its answers `<i> check <value>`.

`warm_up` runs each candidate once untimed first, each in a process of its own (these VMs
fault never-used memory in slowly; malloc's gap at 1e5 was not that, but heap an earlier
candidate of the same process freed: bench/RESULTS.md),
and stops one that is too slow (`warm_up_runs`, which a trace's replay shares). `measure` then runs the rest `reps` times, in separate
processes, each time in a new random order of the candidates, and keeps per candidate and
operation the ns per operation of each run.
"""
from __future__ import annotations

import os
import random
import shutil
import statistics
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Optional

from .build import generate
from .errors import BuildError, EnvError, os_reason
from .toolchain import DEFAULT_CFLAGS, cc_command, run_cc, runtime_object

# A candidate whose warm-up run takes over SLOW_FACTOR x the fastest warm-up, or over
# SLOW_CAP seconds, is too slow: stopped there, not repeated, never picked (an ordered
# list or array scans at n = 1e5 take minutes over the repetitions; the planner misranks
# by 1.5-3x, not by 20x)
SLOW_FACTOR = 20.0
SLOW_CAP = 60.0

FRAME_HEAD = r"""/* p2gen tune: every candidate of one container, measured side by side. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
"""

FRAME_TOOLS = r"""
typedef struct p2t_out { int i; } p2t_out;
static uint64_t p2t_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
/* A phase runs in P2T_CHUNKS chunks, each timed: the phase's time is its median chunk's
 * ns per operation x its operations, so that a chunk the machine's load preempted (the
 * machine is shared) does not count. */
#define P2T_CHUNKS 9
static double p2t_chunk_ns[P2T_CHUNKS];
static void p2t_chunk(int ch, uint64_t ops, uint64_t ns)
{
    p2t_chunk_ns[ch] = ops ? (double)ns / (double)ops : 0.0;
}
static int p2t_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
static void p2t_phase(p2t_out *o, const char *op, uint64_t runs)
{
    qsort(p2t_chunk_ns, P2T_CHUNKS, sizeof p2t_chunk_ns[0], p2t_cmp);
    printf("%d phase %s %llu %.0f\n", o->i, op, (unsigned long long)runs,
           p2t_chunk_ns[P2T_CHUNKS / 2] * (double)runs);
}
static void p2t_check(p2t_out *o, uint64_t v)
{
    printf("%d check %llu\n", o->i, (unsigned long long)v);
}
"""

FRAME_MAIN = r"""
typedef int (*p2t_run_fn)(const char *dir, p2t_out *o);
static const p2t_run_fn p2t_runs[] = { %(runs)s };

int main(int argc, char **argv)
{
    if (argc < 2 || p2t_setup() != 0) {
        fprintf(stderr, "usage: %%s DIR [CANDIDATE...] (each runs in DIR/c<i>)\n", argv[0]);
        return 2;
    }
    for (int a = 2; a < argc; a++) {
        int i = atoi(argv[a]);
        char dir[4096];
        p2t_out o = { i };
        if (i < 0 || i >= (int)(sizeof p2t_runs / sizeof p2t_runs[0])) return 2;
        snprintf(dir, sizeof dir, "%%s/c%%d", argv[1], i);
        if (p2t_runs[i](dir, &o) != 0) { fprintf(stderr, "candidate %%d failed\n", i); return 1; }
        fflush(stdout);
    }
    return 0;
}
"""


def driver_source(workload, prefixes: list) -> str:
    """The driver's C: the frame, the workload's shared part, each candidate's run."""
    parts = [FRAME_HEAD] + [f'#include "{p}.h"\n' for p in prefixes] + [FRAME_TOOLS]
    parts.append(workload.shared())
    parts += [workload.candidate(p) for p in prefixes]
    parts.append(FRAME_MAIN % {"runs": ", ".join(f"{p}_tune_run" for p in prefixes)})
    return "\n".join(parts)


def build_binary(specs: list, workload, build_dir: str, cc: str = "cc", jobs: int = 2,
                 progress: Callable[[str], None] = lambda m: None) -> str:
    """specs: [(prefix, spec text)]. The driver linked with every candidate: its path."""
    cc_cmd = cc_command(cc)
    flags = list(DEFAULT_CFLAGS)
    try:
        os.makedirs(build_dir, exist_ok=True)
    except OSError as e:
        raise EnvError(f"error: cannot write into '{build_dir}': {os_reason(e)}") from None
    objs, futures = [], []
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        rt = pool.submit(runtime_object, cc_cmd, flags)
        for prefix, text in specs:
            path = os.path.join(build_dir, f"{prefix}.p2")
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            gen = generate(path, build_dir, prefix)
            obj = os.path.join(build_dir, f"{prefix}.o")
            futures.append(pool.submit(run_cc, cc_cmd + flags + ["-c", gen.source, "-o", obj],
                                       f"compiling candidate {prefix}"))
            objs.append(obj)
            progress(f"generated {prefix}; compiling")
        drv = os.path.join(build_dir, "tune_driver.c")
        with open(drv, "w", encoding="utf-8") as f:
            f.write(driver_source(workload, [p for p, _ in specs]))
        drv_obj = os.path.join(build_dir, "tune_driver.o")
        futures.append(pool.submit(run_cc, cc_cmd + flags + ["-I", build_dir, "-c", drv, "-o",
                                                             drv_obj], "compiling the driver"))
        for fu in futures:
            fu.result()
        rt_obj = rt.result()
    exe = os.path.join(build_dir, "tune_driver")
    run_cc(cc_cmd + [drv_obj, *objs, rt_obj, "-o", exe], "linking the driver")
    return exe


@dataclass
class Measured:
    """Per candidate index: op -> [ns per operation, one per run]; its answers per run."""
    ns: dict = field(default_factory=dict)
    checks: dict = field(default_factory=dict)
    runs: dict = field(default_factory=dict)      # i -> op -> operations per run


def run_once(exe: str, work_dir: str, order: list, timeout: float = 600,
             may_stop: bool = False) -> Optional[str]:
    """The driver's output running the candidates `order`; None if `may_stop` and it ran
    over `timeout` seconds (then stopped)."""
    for i in order:
        d = os.path.join(work_dir, f"c{i}")
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
    try:
        proc = subprocess.run([exe, work_dir, *map(str, order)], capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        if may_stop:
            return None
        raise BuildError(f"error: the measuring driver ran over {timeout:g} s") from None
    except (OSError, subprocess.SubprocessError) as e:
        raise BuildError(f"error: the measuring driver could not run: {e}") from None
    if proc.returncode != 0:
        raise BuildError(f"error: the measuring driver failed (status {proc.returncode}): "
                         f"{proc.stderr.strip()[-2000:]}")
    return proc.stdout


def warm_up(exe: str, order: list, work_dir: str, factor: Optional[float] = None,
            cap: Optional[float] = None,
            progress: Callable[[str], None] = lambda m: None) -> dict:
    """One untimed run of each candidate in `order` of this module's driver, each in a
    process of its own (`warm_up_runs`, which says which are too slow)."""
    def run(i: int, limit: float) -> Optional[float]:
        t0 = time.perf_counter()
        if run_once(exe, work_dir, [i], timeout=limit, may_stop=True) is None:
            return None
        return time.perf_counter() - t0
    try:
        return warm_up_runs(run, order, factor, cap, progress)
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)


def warm_up_runs(run: Callable[[int, float], Optional[float]], order: list,
                 factor: Optional[float] = None, cap: Optional[float] = None,
                 progress: Callable[[str], None] = lambda m: None) -> dict:
    """One untimed run of each candidate in `order` (put the likely fastest first: it sets
    the limit early): `run(i, limit)` runs candidate i once in a process of its own and
    gives the seconds it took, or None if it did not end within `limit` seconds (then it
    stopped it). The limit is `factor` x
    the fastest warm-up so far (or `cap` seconds; by default SLOW_FACTOR, SLOW_CAP). {index:
    why} of the candidates too slow: stopped, or over `factor` x the fastest once all have
    run. Shared by the synthesised workload's driver (`warm_up`) and a trace's replay
    (tune_trace)."""
    factor = SLOW_FACTOR if factor is None else factor
    cap = SLOW_CAP if cap is None else cap
    took, slow = {}, {}
    for i in order:
        fastest = min(took.values(), default=None)
        limit = cap if fastest is None else min(cap, factor * fastest)
        progress(f"warming up candidate {i} (one untimed run)")
        s = run(i, limit)
        if s is None:
            over = (f"{factor:g}x the fastest's {fastest:.3f} s" if limit < cap
                    else f"the cap of {cap:g} s")
            slow[i] = f"too slow: its warm-up run was stopped at {limit:.2f} s, over {over}"
        else:
            took[i] = s
    fastest = min(took.values(), default=0.0)
    for i, s in took.items():
        if s > factor * fastest:
            slow[i] = (f"too slow: its warm-up run took {s:.2f} s, over {factor:g}x the "
                       f"fastest's {fastest:.3f} s")
    return {i: f"{why} (not repeated)" for i, why in slow.items()}


def measure(exe: str, n: int, reps: int, work_dir: str, seed: Optional[int] = None,
            progress: Callable[[str], None] = lambda m: None, skip=()) -> Measured:
    """Run the driver `reps` times over candidates 0..n-1 but `skip`, each time in a random
    order."""
    rng = random.Random(seed)
    out = Measured()
    for rep in range(reps):
        order = [i for i in range(n) if i not in skip]
        rng.shuffle(order)
        progress(f"measuring rep {rep + 1}/{reps}")
        text = run_once(exe, work_dir, order)
        checks: dict = {}
        for line in text.splitlines():
            parts = line.split()
            i = int(parts[0])
            if parts[1] == "phase":
                op, runs, ns = parts[2], int(parts[3]), int(parts[4])
                out.ns.setdefault(i, {}).setdefault(op, []).append(ns / max(runs, 1))
                out.runs.setdefault(i, {})[op] = runs
            elif parts[1] == "check":
                checks.setdefault(i, []).append(int(parts[2]))
        for i, c in checks.items():
            out.checks.setdefault(i, []).append(tuple(c))
    shutil.rmtree(work_dir, ignore_errors=True)
    return out


@dataclass
class Result:
    """One candidate's measured cost: per op the median ns per operation, the total
    (profile count x ns, summed) per run, its median and relative spread (max - min over
    the median; from 5 runs on, the fastest and slowest run left out)."""
    index: int
    ns: dict
    totals: list
    median: float
    spread: float


def results(m: Measured, counts: dict) -> list:
    """Per candidate (by index): the workload's cost per run, as the profile counts it."""
    out = []
    for i, per_op in sorted(m.ns.items()):
        reps = min(len(v) for v in per_op.values())
        totals = [sum(counts.get(op, 0) * v[r] for op, v in per_op.items()) for r in range(reps)]
        med = statistics.median(totals)
        kept = sorted(totals)[1:-1] if len(totals) >= 5 else totals   # the extremes trimmed
        spread = (max(kept) - min(kept)) / med if med else 0.0
        out.append(Result(i, {op: statistics.median(v) for op, v in per_op.items()}, totals,
                          med, spread))
    return out


def noise_band(res: list) -> float:
    """The spread across processes: the median of the candidates' relative spreads."""
    return statistics.median(r.spread for r in res) if res else 0.0
