"""`p2gen bench tpcb --overhead`: what `p2gen build --profile` and `--trace` cost a program.

Per structure (HASH1 and IARRAY: the tightest TPC-B loops p2gen has, where a counter or an
event weighs most) and memory, the spec is built three ways as users build it, each its own
prefix in one Google Benchmark binary: plain, with --profile (`<NAME>-prof`, the counters on,
the profile written at close) and with --trace (`<NAME>-trace`, every operation logged to a
file). The binary runs in several processes (`--processes`), each running every row
`--repetitions` times in a random order; per process the median time of each row, the
ratio of each twin to its plain row from the same process, and the report takes the median
of those ratios over the processes (and gives their range): one process on a shared
machine can move a ratio by 1.3x, a process's load weighs on all its rows alike.
Writes tpcb_overhead.<i>.json (one per process) and tpcb_overhead.md.
"""
from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
from typing import Callable, Optional

from ..common import (command_lines, host_text, ints as _ints, load_text, problems_lines,
                      results_written, say_report, targets_table, write_report)
from .run import (MEMS, PROFILE_SUFFIX, SPEC_DIR, TRACE_SUFFIX, Options, Variant, build,
                  consistency, failures, load_rows, profile_twin, run, summarize, trace_twin)

SYSTEMS = (("HASH1", "hash1"), ("IARRAY", "iarray"))
TWINS = ((PROFILE_SUFFIX, "--profile", 1.10), (TRACE_SUFFIX, "--trace", 1.5))
# SF 2 at the default's 10,000 accounts per branch; 500,000 transactions make a run of
# 10-20 ms, long enough for a counter's nanosecond to show above the timer
DEFAULT = dict(sfs=(2,), accounts=10000, txns=500000, seeds=(1, 2, 3))


def variants() -> list:
    plain = [Variant(name, mem, str(SPEC_DIR / f"{stem}_{mem}.p2"), f"tpcb_{stem}_{mem}")
             for name, stem in SYSTEMS for mem in MEMS]
    return plain + [profile_twin(v) for v in plain] + [trace_twin(v) for v in plain]


def row_filter() -> str:
    names = "|".join(f"{n}({PROFILE_SUFFIX}|{TRACE_SUFFIX})?" for n, _ in SYSTEMS)
    return f"^tpcb/({names})/"


def per_process(json_paths: list, metric: str) -> tuple:
    """([summary per process], problems, context of the first): summary as run.summarize."""
    sums, problems, context = [], [], {}
    for i, path in enumerate(json_paths):
        ctx, rows = load_rows(path)
        context = context or ctx
        problems += [f"process {i + 1}: {p}" for p in failures(rows) + consistency(rows)]
        sums.append(summarize(rows, metric))
    return sums, problems, context


def ratios(sums: list, system: str, mem: str, sf: int, suffix: str) -> list:
    """The twin's time over the plain row's, one per process that ran both."""
    out = []
    for s in sums:
        a, b = s.get((system, mem, sf)), s.get((system + suffix, mem, sf))
        if a and b and a.get("time") and b.get("time"):
            out.append(b["time"] / a["time"])
    return out


def _ns(sums: list, key: tuple) -> Optional[float]:
    """ns per transaction: the median over processes of each one's median."""
    vals = [s[key]["time"] * 1e6 / 200000 for s in sums if s.get(key, {}).get("time")]
    return statistics.median(vals) if vals else None


def render(sums_wall: list, sums_cpu: list) -> tuple:
    """(Markdown lines of the table, target rows)."""
    lines = ["| system | memory | SF | plain ns/txn | " +
             " | ".join(f"{flag} ns/txn | ratio (range) | cpu ratio" for _, flag, _ in TWINS) + " |",
             "|---|---|---|---:|" + "---:|---:|---:|" * len(TWINS)]
    targets = []
    keys = sorted({k for s in sums_wall for k in s if k[0] in {n for n, _ in SYSTEMS}})
    for system, mem, sf in keys:
        plain = _ns(sums_wall, (system, mem, sf))
        cells = [system, mem, str(sf), "—" if plain is None else f"{plain:,.1f}"]
        for suffix, flag, limit in TWINS:
            twin = _ns(sums_wall, (system + suffix, mem, sf))
            rs = ratios(sums_wall, system, mem, sf, suffix)
            rc = ratios(sums_cpu, system, mem, sf, suffix)
            med = statistics.median(rs) if rs else None
            cells += ["—" if twin is None else f"{twin:,.1f}",
                      "—" if med is None else f"{med:.3f} ({min(rs):.2f}-{max(rs):.2f})",
                      f"{statistics.median(rc):.3f}" if rc else "—"]
            targets.append((f"{system} {mem} SF {sf}: {flag} / plain (≤ {limit:g}×)", med,
                            med is not None and med <= limit))
        lines.append("| " + " | ".join(cells) + " |")
    return lines, targets


def isolated(build_dir: str) -> dict:
    """run()'s env and cwd for every run of the benchmark binary: the build directory is its
    working directory and where the -prof rows' profiles and the -trace rows' trace go
    (P2GEN_PROFILE_DIR, P2GEN_TRACE), never the user's current directory; the caller's
    environment is left as it was. The traced rows run one after another, each open
    starting the one file again; each close of a -prof row starts its profile afresh."""
    bdir = os.path.abspath(build_dir)
    env = dict(os.environ, P2GEN_PROFILE_DIR=bdir, P2GEN_PROFILE_RESET="1",
               P2GEN_TRACE=os.path.join(bdir, "tpcb_overhead.trace"))
    env.pop("P2GEN_PROFILE", None)      # one path for every spec's profile: not here
    return {"env": env, "cwd": bdir}


def instructions(exe: str, opts: Options, system: str, txns: int = 100000,
                 env: Optional[dict] = None, cwd: Optional[str] = None) -> Optional[float]:
    """User-space instructions per transaction of `system` on transient memory under
    valgrind's cachegrind (a count, not a time: the same on a loaded machine), by the
    difference between runs of txns and 3 * txns transactions (the load and the checks
    cancel). None without valgrind or if a run failed; env, cwd: as run()'s (isolated).
    Transient only: a persistent variant's file reserves more address space than valgrind
    gives."""
    if not shutil.which("valgrind"):
        return None
    counts = []
    for n in (txns, 3 * txns):
        args = Options(sfs=opts.sfs[:1], accounts=opts.accounts, txns=n, seeds=opts.seeds[:1],
                       filter=f"^tpcb/{system}/transient/").args()
        r = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no",
                            "--cachegrind-out-file=/dev/null", os.path.abspath(exe), *args],
                           capture_output=True, text=True, env=env, cwd=cwd)
        m = re.search(r"I\s+refs:\s+([\d,]+)", r.stderr)
        if r.returncode != 0 or not m:
            return None
        counts.append(int(m.group(1).replace(",", "")))
    if counts[1] <= counts[0]:          # no transaction ran (a row not in the binary)
        return None
    return (counts[1] - counts[0]) / (2 * txns)


def render_instructions(counts: dict) -> list:
    """Markdown lines: per structure the instructions of a transaction plain, with
    --profile and with --trace, and the ratios."""
    lines = ["Instructions per transaction (user space, transient memory, cachegrind: "
             "counted, not timed), and the ratio to the plain row:", "",
             "| system | plain | --profile | ratio | --trace | ratio |", "|---|---:|---:|---:|---:|---:|"]
    for name, _ in SYSTEMS:
        plain = counts.get(name)
        cells = [name, "—" if plain is None else f"{plain:,.0f}"]
        for suffix, _, _ in TWINS:
            v = counts.get(name + suffix)
            cells += ["—" if v is None else f"{v:,.0f}",
                      "—" if v is None or not plain else f"{v / plain:.3f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return lines + [""]


def report(json_paths: list, out_dir: str, command: Optional[str] = None,
           counts: Optional[dict] = None) -> tuple:
    sums_wall, problems, context = per_process(json_paths, "wall")
    sums_cpu, _, _ = per_process(json_paths, "cpu")
    table, targets = render(sums_wall, sums_cpu)
    md = ["# What `p2gen build --profile` and `--trace` cost on TPC-B", ""] + command_lines(command)
    md += [f"Configuration: SF {context.get('tpcb_sf', '?')}, {context.get('tpcb_accounts', '?')} "
           f"accounts per branch, {context.get('tpcb_txns', '?')} transactions per run, seeds "
           f"{context.get('tpcb_seeds', '?')}, {len(json_paths)} processes, each running every row "
           f"in a random order; {host_text(context, mhz=True)}; load average at the first "
           f"process's start {load_text(context)}.", "",
           "ns per transaction (wall clock): the median over processes of each process's median "
           "over seeds and repetitions; a ratio: the twin's time over the plain row's in the same "
           "process, the median over processes (their range in brackets); cpu ratio: the same of "
           "the thread's CPU time (the trace's writes included).", ""]
    md += table + [""]
    if counts:
        md += render_instructions(counts)
    md.append(targets_table("Targets:", targets))
    md += problems_lines(problems)
    return write_report(out_dir, "tpcb_overhead.md", md), problems


def command(*, sf, accounts, txns, seeds, repetitions, processes, out, build_dir, db_dir, cc,
            cxx, jobs, cmdline, count_instructions: bool = False,
            say: Callable[[str], None] = print) -> int:
    opts = Options(sfs=_ints(sf, "--sf") or DEFAULT["sfs"], accounts=accounts or DEFAULT["accounts"],
                   txns=txns or DEFAULT["txns"], seeds=_ints(seeds, "--seeds") or DEFAULT["seeds"],
                   filter=row_filter(), dir=db_dir and os.path.abspath(db_dir),
                   repetitions=repetitions)
    bdir = build_dir or os.path.join("bench", "build", "overhead")
    exe = os.path.abspath(build(bdir, cc=cc, cxx=cxx, jobs=jobs, variants=variants(), say=say))
    where = isolated(bdir)
    paths, rc = [], 0
    for i in range(processes):
        path = os.path.abspath(os.path.join(out, f"tpcb_overhead.{i}.json"))
        say(f"process {i + 1} of {processes}")
        rc = run(exe, opts, path, say=say, **where) or rc
        if not results_written(exe, rc, path, say):
            return 1
        paths.append(path)
    counts = {}
    if count_instructions:
        for v in variants():
            if v.mem == "transient":
                say(f"counting {v.name}'s instructions under valgrind")
                counts[v.name] = instructions(exe, opts, v.name, **where)
    text, problems = report(paths, out, cmdline, counts)
    return say_report(say, text, problems, paths + [os.path.join(out, "tpcb_overhead.md")], rc)
