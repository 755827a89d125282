"""`p2gen bench social`: the feed of a social graph, p2gen against SQLite in C.

Build: bench/social/feed.p2 (users; follows, M:N over refarray; posts, 1:N over ilist with
`order by time desc`) is generated and built as the README tells users to
(common.users_build_steps: lib<prefix>.a, the driver bench/social/social_bench.cc compiled
-O2 with FEED_INLINE), linked with SQLite and Google Benchmark into one binary.
Run: the binary loads the same users, follows and posts into both systems (SQLite in
:memory:, index on posts(user, time)), checks that both give the same rows for 500 users,
then times, side by side, the feed (k newest posts of the users one follows: p2gen's
<role>_top, a heap merge of the followees' ordered roles; SQLite's join ORDER BY time DESC
LIMIT k) and one user's k newest posts. It is run in several processes (--processes); the
report takes per benchmark the median over them of the CPU time per operation, and the ratio
SQLite / p2gen of those medians. Target: the feed ≥ 3× faster than SQLite's join.
"""
from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
from pathlib import Path
from typing import Callable, Optional

from ..common import (command_outputs, compile_and_link, driver_cxxflags, generate_variants,
                      say_report, users_build_steps, write_report)
from .. import BENCH_DIR

SOURCE_DIR = BENCH_DIR / "social"
LIBS = ("-lbenchmark", "-lpthread", "-lsqlite3")
TARGET = 3.0
NAME = re.compile(r"^social/(feed|posts)/(P2GEN|SQLITE)/k:(\d+)")


class _Variant:
    name, spec, prefix = "P2GEN", str(SOURCE_DIR / "feed.p2"), "feed"


def build(build_dir: str, *, cc: str = "cc", cxx: str = "c++", opt: str = "-O2",
          jobs: Optional[int] = None, say: Callable[[str], None] = lambda m: None) -> Path:
    bdir, gen_dir, obj_dir, gens = generate_variants(build_dir, [_Variant()], say)
    (v, g), = gens
    tasks, archives = users_build_steps(gen_dir, obj_dir, [(v.prefix, g, [])], cc=cc, cxx=cxx,
                                        cxxflags=driver_cxxflags(opt),
                                        driver=SOURCE_DIR / "social_bench.cc", driver_deps=[],
                                        include_dirs=[SOURCE_DIR])
    return compile_and_link(bdir, "social_bench", tasks, archives, LIBS, cxx=cxx, opt=opt,
                            lto=False, hint="install the libraries: apt-get install "
                            "libbenchmark-dev libsqlite3-dev", jobs=jobs, say=say)


def run(exe: str, args: list, json_dir: str, processes: int,
        say: Callable[[str], None] = lambda m: None) -> tuple[int, list]:
    """Run the binary `processes` times, one JSON each; (exit status, JSON paths)."""
    paths = []
    for i in range(processes):
        path = os.path.join(json_dir, f"social.{i}.json")
        cmd = [exe, *args, f"--benchmark_out={path}", "--benchmark_out_format=json"]
        say(f"[{i + 1}/{processes}] {' '.join(cmd)}")
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            say(proc.stderr.strip())
            return proc.returncode, paths
        paths.append(path)
    return 0, paths


def summarize(paths: list) -> tuple[dict, dict]:
    """(context of the first run, {(what, system, k): median CPU µs per operation})."""
    per: dict = {}
    context = {}
    for p in paths:
        data = json.loads(Path(p).read_text())
        context = context or data.get("context", {})
        for b in data["benchmarks"]:
            m = NAME.match(b["name"])
            if m and b.get("run_type", "iteration") == "iteration" and "error_occurred" not in b:
                us = b["cpu_time"] * {"ns": 1e-3, "us": 1.0, "ms": 1e3}[b.get("time_unit", "ns")]
                per.setdefault((m[1], m[2], int(m[3])), []).append(us)
    return context, {k: statistics.median(v) for k, v in per.items()}


def report(paths: list, out: str, command: Optional[str]) -> tuple[str, list]:
    context, med = summarize(paths)
    md = ["# Social graph: the feed (p2gen bench social)", "",
          f"{context.get('social_users', '?')} users, {context.get('social_follows', '?')} "
          f"followees each, {context.get('social_posts', '?')} posts per user on average; "
          f"SQLite :memory: with an index on posts(user, time). CPU µs per operation, median "
          f"of {len(paths)} processes; both systems in each process, same users, same k.", "",
          "| operation | k | p2gen µs | SQLite µs | SQLite / p2gen |", "|---|---:|---:|---:|---:|"]
    problems = []
    for what in ("feed", "posts"):
        for k in sorted({k for (w, _s, k) in med if w == what}):
            a, b = med.get((what, "P2GEN", k)), med.get((what, "SQLITE", k))
            r = b / a if a and b else None
            md.append(f"| {what} | {k} | {a:.2f} | {b:.2f} | {r:.1f}× |" if r else
                      f"| {what} | {k} | — | — | — |")
            if what == "feed" and (r is None or r < TARGET):
                problems.append(f"feed k={k}: SQLite / p2gen {r and round(r, 2)}, target ≥ {TARGET}")
    md += ["", f"Target: the feed ≥ {TARGET:.0f}× faster than SQLite's join: "
           f"{'met' if not problems else 'NOT met'}."]
    if command:
        md += ["", f"Command: `{command}`"]
    return write_report(out, "social.md", md), problems


def command(*, users, follows, posts, ks, seed, min_time, processes, out, build_dir, cc, cxx,
            jobs, say=print) -> int:
    """`p2gen bench social`: build, run, report. Returns the exit status."""
    out, _json, cmdline = command_outputs(out, "social.json")
    exe = build(build_dir or os.path.join("bench", "build", "social"), cc=cc, cxx=cxx,
                jobs=jobs, say=say)
    args = [f"--social_users={users}", f"--social_follows={follows}", f"--social_posts={posts}",
            f"--social_k={ks}", f"--social_seed={seed}", f"--benchmark_min_time={min_time}"]
    os.makedirs(out, exist_ok=True)
    rc, paths = run(str(exe), args, out, processes, say)
    if rc != 0 or not paths:
        say(f"{exe} exited with {rc}" + (" (the systems' answers differ)" if rc == 3 else ""))
        return 1
    text, probs = report(paths, out, cmdline)
    return say_report(say, text, probs, paths + [os.path.join(out, "social.md")], rc)
