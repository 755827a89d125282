"""`p2gen tune --run 'CMD'`: the candidates measured by the user's own program.

Each candidate (index 0: the spec's own equation) is built as `p2gen build` builds the spec
(its header, source and lib<prefix>.a, with the spec's prefix: the program's calls are the
same) into a directory of its own, named to CMD by $P2GEN_TUNE_DIR. CMD runs in a shell in
the current directory: once per candidate untimed first (where a build step belongs, its
outputs in $P2GEN_TUNE_DIR: `make` then links each candidate's program beside its library),
then `reps` times per candidate, timed, each round the candidates in a new random order.
A candidate's cost is the median wall time of its timed runs (CPU time, the children's user
and system, beside it). CMD's standard output is its answer: a candidate whose output
differs from the spec's own equation's is refused; a CMD that fails is refused in one line
(on the spec's own equation: nothing is tuned).
"""
from __future__ import annotations

import hashlib
import os
import random
import resource
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

from .build import compile_objects, generate
from .errors import BuildError
from .tune_measure import Measured

ENV = "P2GEN_TUNE_DIR"


def build_candidates(spec_name: str, prefix: str, specs: list, work: str, cc: str,
                     jobs: int) -> list:
    """Each candidate's text built into work/<its prefix>/ (generated and compiled into
    lib<prefix>.a, in parallel): their directories."""
    def one(tag_text):
        tag, text = tag_text
        d = os.path.abspath(os.path.join(work, tag))
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, spec_name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        compile_objects(generate(path, d, prefix), cc)
        return d
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(one, specs))


def _run(cmd: str, d: str, timeout: float) -> tuple:
    """CMD once with $P2GEN_TUNE_DIR = d: (status, stdout, stderr, wall ns, CPU ns)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter_ns()
    try:
        p = subprocess.run(cmd, shell=True, capture_output=True, timeout=timeout,
                           env={**os.environ, ENV: d})
    except subprocess.TimeoutExpired:
        return -1, b"", f"timed out after {timeout:.0f} s".encode(), 0, 0
    wall = time.perf_counter_ns() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = ((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)) * 1e9
    return p.returncode, p.stdout, p.stderr, wall, cpu


def _why(cmd: str, status: int, err: bytes) -> str:
    last = err.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
    return f"'{cmd}' failed (status {status}){': ' + last[0] if last[0] else ''}"


def measure_command(cmd: str, dirs: list, reps: int, seed=None, timeout: float = 600,
                    progress: Callable[[str], None] = lambda m: None) -> tuple:
    """(tune_measure.Measured with per candidate 'run': [wall ns per timed run], {index:
    why} of the candidates refused: CMD failed, or its output differed, and {index: median
    CPU ns})."""
    refused = {}
    for i, d in enumerate(dirs):          # untimed: the build, the caches warmed
        progress(f"running the command once on candidate {i} (untimed)")
        status, _, err, _, _ = _run(cmd, d, timeout)
        if status != 0:
            if i == 0:
                raise BuildError(f"error: on the spec's own equation {_why(cmd, status, err)}")
            refused[i] = _why(cmd, status, err)
    rng = random.Random(seed)
    out, answer, cpu = Measured(), {}, {}
    for rep in range(reps):
        order = [i for i in range(len(dirs)) if i not in refused]
        rng.shuffle(order)
        progress(f"timing the command, rep {rep + 1}/{reps}")
        for i in order:
            if i in refused:
                continue
            status, stdout, err, wall, cpu_ns = _run(cmd, dirs[i], timeout)
            if status != 0:
                if i == 0:
                    raise BuildError(f"error: on the spec's own equation "
                                     f"{_why(cmd, status, err)}")
                refused[i] = _why(cmd, status, err)
                continue
            digest = hashlib.sha256(stdout).hexdigest()
            answer.setdefault(i, digest)
            if digest != answer[i]:
                if i == 0:
                    raise BuildError(f"error: '{cmd}' prints something else from run to run on "
                                     f"the spec's own equation: its answers cannot be compared")
                refused[i] = "its output changes from run to run"
            out.ns.setdefault(i, {}).setdefault("run", []).append(float(wall))
            out.runs.setdefault(i, {})["run"] = 1
            cpu.setdefault(i, []).append(cpu_ns)
    if 0 in answer:
        for i, digest in answer.items():
            if i and i not in refused and digest != answer[0]:
                refused[i] = "its output differs from the spec's own equation's"
    for i in refused:
        out.ns.pop(i, None)
    return out, refused, {i: sorted(v)[len(v) // 2] for i, v in cpu.items()}
