"""`p2gen bench range`: rows per second of range scans through every ordered layer.

Build: every spec of bench/range/ (BTREE, AVL, QSORT, ODLIST, IARRAY, each over
persistent and transient memory: one relation, `record row { k: u32; v: u64; pad: char[88]; }`,
and `cursor walk on rows where k >= $lo and k < $hi order by k`) is generated with its own
prefix and built as the README tells users to (common.users_build_steps: `p2gen build`'s
lib<prefix>.a, the driver bench/range/range_driver.cc compiled -O2 with <PREFIX>_INLINE, no
LTO); the references (bench/range/range_refs.cc: SQLite in a file with journal_mode=OFF and in
:memory:, LMDB) and bench/range/range_main.cc are linked with them into one Google Benchmark
binary, so that every ratio comes from one run on one machine.
Run: each system loads the relation once (keys 0 .. rows-1 in a seeded random order), then
per cursor length walks from random starts; the binary checks every walk's row count,
payload sum and key order. Report: rows per second per system and length, the ratio to AVL
and to SQLite on the same memory, and the target (BTREE ≥ 5× AVL at 100,000-row cursors).
"""
from __future__ import annotations

import os
import re
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from ..common import (checked_sources, command_lines, command_outputs, compile_and_link,
                      driver_cxxflags, fmt_steps, fmt_x, generate_variants, host_text, image_lines,
                      ints, load_benchmarks, load_text, plot_files, problems_lines, ratio as _ratio,
                      results_written, run_benchmarks, say_report, source_steps, targets_table,
                      users_build_steps, write_report)
from .. import BENCH_DIR

SOURCE_DIR = BENCH_DIR / "range"
SPEC_DIR = SOURCE_DIR       # the specs beside the driver, shipped with it

# (benchmark name, spec file stem, how the driver loads the relation: range.h's Load)
STRUCTURES = (("BTREE", "btree", "Random"), ("AVL", "avl", "Random"),
              # a sorted array is the same however filled; random inserts would memmove half of it
              ("QSORT", "qsort", "Sorted"),
              # key order into slots freed at random: the layout random inserts give, without
              # the O(n) walk per insert
              ("ODLIST", "odlist", "Scattered"),
              ("IARRAY", "iarray", "Random"))
MEMS = ("persistent", "transient")
REFERENCES = (("SQLITE", "persistent"), ("SQLITE", "transient"), ("LMDB", "persistent"))
LIBS = ("-lbenchmark", "-lpthread", "-lsqlite3", "-llmdb")
DRIVER_SOURCES = ("range.h", "range_driver.cc", "range_refs.cc", "range_main.cc")

# about a minute on two cores, build included
DEFAULT = dict(rows=200000, lengths=(10, 1000, 100000), min_time=0.2)
TARGET_LENGTH = 100000
TARGET_RATIO = 5.0


@dataclass
class Variant:
    name: str
    mem: str
    spec: str
    prefix: str
    load: str


def default_variants() -> list[Variant]:
    return [Variant(name, mem, str(SPEC_DIR / f"{stem}_{mem}.p2"), f"range_{stem}_{mem}", load)
            for name, stem, load in STRUCTURES for mem in MEMS]


def systems() -> list[tuple]:
    """(name, mem) of every benchmarked system, in table order."""
    return [(name, mem) for mem in MEMS for name, _, _ in STRUCTURES] + list(REFERENCES)


def driver_sources(source_dir: Optional[str] = None) -> Path:
    return checked_sources(Path(source_dir) if source_dir else SOURCE_DIR, DRIVER_SOURCES, "range")


def build(build_dir: str, *, cc: str = "cc", cxx: str = "c++", opt: str = "-O2",
          jobs: Optional[int] = None, variants: Optional[list] = None,
          say: Callable[[str], None] = lambda m: None) -> Path:
    """Generate every variant, build it as users do, compile the references and main, link
    build_dir/range_bench; return its path."""
    src = driver_sources()
    variants = variants if variants is not None else default_variants()
    bdir, gen_dir, obj_dir, gens = generate_variants(build_dir, variants, say)
    cxxflags = driver_cxxflags(opt)                         # the user's program: -O2, no LTO
    steps = [(v.prefix, g, [f"-DP2_VARIANT={v.prefix}", f'-DP2_HEADER="{v.prefix}.h"',
                            f'-DP2_NAME="{v.name}"', f'-DP2_MEM="{v.mem}"', f"-DP2_LOAD={v.load}",
                            f"-DP2_RANK={10 + rank}"])
             for rank, (v, g) in enumerate(gens)]
    tasks, archives = users_build_steps(gen_dir, obj_dir, steps, cc=cc, cxx=cxx, cxxflags=cxxflags,
                                        driver=src / "range_driver.cc", driver_deps=[src / "range.h"],
                                        include_dirs=[src])
    tasks += source_steps(src, ("range_refs.cc", "range_main.cc"), obj_dir, cxx=cxx, cxxflags=cxxflags,
                          deps=[src / "range.h"])
    return compile_and_link(bdir, "range_bench", tasks, archives, LIBS, cxx=cxx, opt=opt, lto=False,
                            hint="install the libraries: apt-get install libbenchmark-dev "
                                 "libsqlite3-dev liblmdb-dev", jobs=jobs, say=say)


# ---------------------------------------------------------------------------------------
# run

@dataclass
class Options:
    rows: int = DEFAULT["rows"]
    lengths: tuple = DEFAULT["lengths"]
    seed: int = 1
    min_time: float = DEFAULT["min_time"]
    load_order: str = "random"
    repetitions: int = 1       # > 1: run interleaved at random, every system kept loaded
    filter: Optional[str] = None
    dir: Optional[str] = None
    extra: tuple = ()          # more flags for the binary (e.g. --range_inject_fault=1)

    def args(self) -> list:
        a = [f"--range_rows={self.rows}", f"--range_lengths={','.join(map(str, self.lengths))}",
             f"--range_seed={self.seed}", f"--range_min_time={self.min_time}",
             f"--range_load_order={self.load_order}"]
        if self.repetitions > 1:
            a += [f"--benchmark_repetitions={self.repetitions}",
                  "--benchmark_enable_random_interleaving=true", "--range_keep_loaded=1"]
        if self.dir:
            a.append(f"--range_dir={self.dir}")
        if self.filter:
            a.append(f"--benchmark_filter={self.filter}")
        return a + list(self.extra)


# a run's console line (not the aggregates of repetitions: their names end _mean, _median, ...)
RUN_LINE = re.compile(r"^range/(\S+?)/(\S+?)/rows:(\d+)(?:/min_time:[\d.]+)?(?:/real_time)?\s+(.*)$")


def run(exe: str, opts: Options, json_out: str, say: Callable[[str], None] = lambda m: None) -> int:
    """Run the binary, Google Benchmark JSON to json_out, a progress line per benchmark.
    Returns its exit status (3: a walk failed its check or a system errored)."""
    def describe(m, vals, error):
        name, mem, length, _ = m.groups()
        info = error if vals is None else f"{vals.get('rows_per_s', '?')} rows/s"
        return f"{name:<7} {mem:<10} rows={length:<7} {info}"

    return run_benchmarks([str(exe)] + opts.args(), json_out, "range", RUN_LINE, describe, say,
                          runs_each=opts.repetitions)


# ---------------------------------------------------------------------------------------
# report

@dataclass
class Row:
    system: str
    mem: str
    length: int
    rows_per_s: Optional[float]
    rows: Optional[float]
    load_ms: Optional[float]
    error: Optional[str]


NAME = re.compile(r"^range/([^/]+)/([^/]+)/rows:(\d+)")


def load_rows(json_path: str) -> tuple[dict, list]:
    """(context, rows): one Row per iteration run (aggregates of repetitions are skipped)."""
    context, runs = load_benchmarks(json_path, NAME, key="run_name")
    return context, [Row(m.group(1), m.group(2), int(m.group(3)), b.get("rows_per_s"), b.get("rows"),
                         b.get("load_ms"), err) for m, b, err in runs]


def problems(context: dict, rows: list) -> list:
    """Failed runs, walks that did not return the rows asked, systems or lengths missing."""
    out = []
    for r in rows:
        if r.error:
            out.append(f"{r.system}/{r.mem} rows={r.length}: {r.error}")
        elif r.rows is None or round(r.rows) != r.length or abs(r.rows - r.length) > 1e-9:
            out.append(f"{r.system}/{r.mem} rows={r.length}: walked {r.rows} rows per cursor, "
                       f"asked for {r.length}")
        elif not r.rows_per_s or r.rows_per_s <= 0:
            out.append(f"{r.system}/{r.mem} rows={r.length}: no rate measured")
    return out


def summarize(rows: list) -> dict:
    """(system, mem, length) -> median rows/s over repetitions (runs that failed excluded)."""
    acc: dict = {}
    for r in rows:
        if r.error or not r.rows_per_s:
            continue
        acc.setdefault((r.system, r.mem, r.length), []).append(r.rows_per_s)
    return {k: statistics.median(v) for k, v in acc.items()}


def _lengths(summary: dict) -> list:
    return sorted({k[2] for k in summary})


def _rate(x: Optional[float]) -> str:
    return fmt_steps(x, ((1e9, lambda x: f"{x / 1e9:.2f} G"), (1e6, lambda x: f"{x / 1e6:.1f} M"),
                         (1e3, lambda x: f"{x / 1e3:.1f} k"), (None, "{:.0f}")))


def _x(r: Optional[float]) -> str:
    return fmt_x(r, ",.2f")


def render_table(summary: dict) -> str:
    """Markdown: per memory, a row per system, per cursor length rows/s, × AVL and × SQLite
    on the same memory (LMDB's and SQLite's rows: against SQLite persistent)."""
    lens = _lengths(summary)
    if not lens:
        return "(no results)\n"
    head = "| system | memory | " + " | ".join(f"{n:,} rows: rows/s | × AVL | × SQLite" for n in lens) + " |"
    sep = "|---|---|" + "---:|---:|---:|" * len(lens)
    lines = ["Rows per second of wall time walking one cursor from a random start (M = 10^6); "
             "× AVL and × SQLite: that rate over theirs on the same memory (higher is faster).", "",
             head, sep]
    for name, mem in systems():
        if not any((name, mem, n) in summary for n in lens):
            continue
        cells = [name, mem]
        for n in lens:
            v = summary.get((name, mem, n))
            cells += [_rate(v), _x(_ratio(v, summary.get(("AVL", mem, n)))),
                      _x(_ratio(v, summary.get(("SQLITE", mem, n))))]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    return "\n".join(lines)


def targets(summary: dict) -> list:
    """[(target, ratio or None, met)]: BTREE over AVL at 100,000-row cursors, per memory."""
    out = []
    for mem in MEMS:
        r = _ratio(summary.get(("BTREE", mem, TARGET_LENGTH)), summary.get(("AVL", mem, TARGET_LENGTH)))
        out.append((f"BTREE / AVL rows per second, {mem}, {TARGET_LENGTH:,}-row cursors "
                    f"(≥ {TARGET_RATIO:g}×)", r, r is not None and r >= TARGET_RATIO))
    return out


def render_targets(summary: dict) -> str:
    return targets_table("Target (ratio of rows per second, measured side by side in one run):",
                         targets(summary), _x)


def render_plot(summary: dict, out_dir: str) -> str:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5), sharey=True)
    lens = _lengths(summary)
    for ax, mem in zip(axes, MEMS):
        for name, m in systems():
            pts = [(n, summary[(name, m, n)]) for n in lens if (name, m, n) in summary]
            if m != mem and not (name == "LMDB" and mem == "persistent"):
                continue
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("rows per cursor")
        ax.set_title(mem)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    axes[0].set_ylabel("rows per second")
    fig.suptitle("Range scans: rows per second by cursor length", fontsize=10)
    fig.tight_layout()
    p = os.path.join(out_dir, "range.png")
    fig.savefig(p, dpi=110)
    plt.close(fig)
    return p


def report(json_path: str, out_dir: str, *, plots: bool = False,
           command: Optional[str] = None) -> tuple[str, list]:
    """Read the JSON, write out_dir/range.md (and range.png). Returns (markdown, problems)."""
    context, rows = load_rows(json_path)
    probs = problems(context, rows)
    summary = summarize(rows)
    md = ["# Range scans: ordered layers vs SQLite and LMDB", ""] + command_lines(command)
    counts: dict = {}
    for r in rows:
        counts[(r.system, r.mem, r.length)] = counts.get((r.system, r.mem, r.length), 0) + 1
    reps = max(counts.values(), default=1)
    reps_text = f"; the median of {reps} runs of each, interleaved at random" if reps > 1 else ""
    order = ("in a random order" if context.get("range_load_order", "random") == "random" else
             "in key order (--load-order sorted)")
    md += [f"Configuration: {context.get('range_rows', '?')} rows (~100 bytes each, keys inserted "
           f"{order}), cursors of {context.get('range_lengths', '?')} rows, seed "
           f"{context.get('range_seed', '?')}{reps_text}; {host_text(context)}; load average at start "
           f"{load_text(context)}.", ""]
    if context.get("range_load_order", "random") == "random":
        md += ["QSORT loads in key order (a sorted array is the same however it is filled), ODLIST "
               "in key order into storage slots freed in a random order (the layout random inserts "
               "give it, without walking half the list per insert); SQLite, LMDB and the other "
               "layers insert in the random order.", ""]
    md.append(render_table(summary))
    md.append(render_targets(summary))
    md += problems_lines(probs)
    if plots:
        md += image_lines(plot_files(out_dir, lambda: [render_plot(summary, out_dir)],
                                     "(or leave out --plots)"))[1:]
    return write_report(out_dir, "range.md", md), probs


# ---------------------------------------------------------------------------------------
# the command (cli.py holds only the click declaration)

def command(*, rows, lengths, seed, min_time, load_order, repetitions, out, build_dir, filter, db_dir, cc, cxx, jobs,
            render, plots, say=print) -> int:
    """`p2gen bench range`: build, run, report. Returns the exit status."""
    out, json_path, cmdline = command_outputs(out, "range.json")
    if render:
        return say_report(say, *report(render, out, plots=plots, command=cmdline))
    opts = Options(rows=rows or DEFAULT["rows"], lengths=ints(lengths, "--lengths") or DEFAULT["lengths"],
                   seed=seed, min_time=min_time, load_order=load_order, repetitions=repetitions, filter=filter, dir=db_dir)
    exe = build(build_dir or os.path.join("bench", "build", "range"), cc=cc, cxx=cxx, jobs=jobs, say=say)
    rc = run(str(exe), opts, json_path, say=say)
    if not results_written(exe, rc, json_path, say):
        return 1
    text, probs = report(json_path, out, plots=plots, command=cmdline)
    return say_report(say, text, probs, [json_path, os.path.join(out, "range.md")] +
                      ([os.path.join(out, "range.png")] if plots else []), rc)
