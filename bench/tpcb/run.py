"""`p2gen bench tpcb`: the TPC-B head-to-head benchmark.

Build: every spec of type_equations/tpcb/ (AVL, QSORT, HASH0, HASH1, IARRAY, BTREE, each over
persistent and transient memory) is generated with its own prefix; the one driver source
bench/tpcb/tpcb_driver.cc is compiled once per variant against the generated header, and
linked with the reference systems (bench/tpcb/tpcb_refs.cc: BASELINE, hand-coded C, SQLite,
LMDB; bench/tpcb/tpcb_peers.cc: std::unordered_map, Boost.MultiIndex hashed_unique and
ordered_unique on the heap and in a Boost.Interprocess mapped file) and
bench/tpcb/tpcb_main.cc into one Google Benchmark binary. Every variant is built as the
README tells users to (the default rows) and with -flto (rows <NAME>-lto): see build().
Run: the binary writes Google Benchmark JSON; a progress line per finished benchmark.
Report: medians over seeds -> a Markdown table (time per 200,000 transactions and speedup
against SQLite at the same durability setting, per scale factor), the issue's target
ratios, ns per transaction with the ratios to hand-coded C and the C++ peers and issue
10's targets, and three PNG plots after the reference paper's figures (matplotlib, optional
dependency `p2gen[bench]`).

Durability (`p2gen bench tpcb --durable`): the same binary also holds journalled
variants (type_equations/tpcb/*_journal*.p2: a commit per TPC-B transaction, the journal
synced every commit or every 100) and durable references (SQLite WAL with
synchronous=FULL, LMDB with sync on, a transaction per TPC-B transaction or per 100);
they are registered only with --tpcb_durable=1, so the default figures are unchanged.
`--durable` runs them with the no-durability HASH1 and IARRAY persistent variants at a
small, fsync-bound size and writes tpcb_durable.{json,md}: ms per transaction and the
issue's two durability targets.
"""
from __future__ import annotations

import os
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from ..common import (checked_sources, command_lines, command_outputs, compile_and_link,
                      driver_cxxflags, fmt_ms as _fmt_ms, fmt_x, generate_variants, host_text,
                      image_lines, ints as _ints, load_benchmarks, load_text, LTO_SUFFIX, numbers,
                      plot_files, problems_lines, ratio as _ratio, results_written, run_benchmarks,
                      say_report, source_steps, targets_table, users_build_steps, write_report)
from ...errors import BuildError
from .. import BENCH_DIR, spec_dir

SOURCE_DIR = BENCH_DIR / "tpcb"
SPEC_DIR = spec_dir("tpcb")

# (benchmark name, spec file stem) in the order of the paper, then the B+-tree index
STRUCTURES = (("AVL", "avl"), ("QSORT", "qsort"), ("HASH0", "hash0"), ("HASH1", "hash1"),
              ("IARRAY", "iarray"), ("BTREE", "btree"))
MEMS = ("persistent", "transient")
P2_SYSTEMS = tuple(name for name, _ in STRUCTURES)
REFERENCES = (("BASELINE", "none"), ("HANDC", "persistent"), ("HANDC", "transient"),
              ("STD-UMAP", "transient"), ("BOOST-HASHED", "persistent"), ("BOOST-HASHED", "transient"),
              ("BOOST-ORDERED", "persistent"), ("BOOST-ORDERED", "transient"),
              ("SQLITE", "persistent"), ("SQLITE", "transient"), ("LMDB", "persistent"))
# the C++ containers beside hand-coded C (bench/tpcb/tpcb_peers.cc)
PEERS = ("STD-UMAP", "BOOST-HASHED", "BOOST-ORDERED")
LIBS = ("-lbenchmark", "-lpthread", "-lsqlite3", "-llmdb")

# durability: (benchmark name, spec file stem, what it is); registered by the
# binary only with --tpcb_durable=1
DURABLE_VARIANTS = (
    ("HASH1+JNS", "hash1_journal_nosync", "HASH1, journal(sync = false): commit per txn, never fsync'd (nosync)"),
    ("HASH1+J100", "hash1_journal100", "HASH1, journal(group = 100): commit per txn, journal fsync'd every 100"),
    ("IARRAY+J100", "iarray_journal100", "IARRAY, journal(group = 100): commit per txn, journal fsync'd every 100"),
    ("HASH1+J", "hash1_journal", "HASH1, journal(group = 1): commit and fsync per txn"),
    ("IARRAY+J", "iarray_journal", "IARRAY, journal(group = 1): commit and fsync per txn"),
    ("HASH1+WNS", "hash1_wal_nosync", "HASH1, wal(sync = false): record log, commit per txn, never fsync'd (nosync)"),
    ("HASH1+W100", "hash1_wal100", "HASH1, wal(group = 100): record log, commit per txn, log fsync'd every 100"),
    ("IARRAY+W100", "iarray_wal100", "IARRAY, wal(group = 100): record log, commit per txn, log fsync'd every 100"),
    ("HASH1+W", "hash1_wal", "HASH1, wal(group = 1): record log, commit and fsync per txn"),
    ("IARRAY+W", "iarray_wal", "IARRAY, wal(group = 1): record log, commit and fsync per txn"),
)
DURABLE_REFERENCES = (
    ("SQLITE-WAL100", "SQLite file, WAL, synchronous=FULL: one transaction (and WAL fsync) per 100 txns"),
    ("LMDB-SYNC100", "LMDB, sync on: one write transaction (and its syncs) per 100 txns"),
    ("SQLITE-WAL", "SQLite file, WAL, synchronous=FULL: one transaction (and WAL fsync) per txn"),
    ("LMDB-SYNC", "LMDB, sync on: one write transaction (and its syncs) per txn"),
)
# the no-durability variants the durable ones are compared with
DURABLE_PLAIN = (("HASH1", "HASH1 persistent, no journal: no atomicity, no durability"),
                 ("IARRAY", "IARRAY persistent, no journal: no atomicity, no durability"))
# fsync-bound: a few thousand transactions per run (a multiple of 100: no incomplete group)
DURABLE_DEFAULT = dict(sfs=(2,), accounts=10000, txns=2000, seeds=(1, 2, 3))

# quick default: about two minutes on two cores, build included
DEFAULT = dict(sfs=(2, 4, 8, 12), accounts=10000, txns=50000, seeds=(1, 2, 3, 4, 5))
# the reference experiment: SF 2..12, TPC-B's 100,000 accounts per branch, 200,000
# transactions, several seeds (the paper took the median of 25)
REFERENCE = dict(sfs=tuple(range(2, 13)), accounts=100000, txns=200000, seeds=(1, 2, 3, 4, 5))


# ---------------------------------------------------------------------------------------
# build

@dataclass
class Variant:
    name: str          # AVL, ... (or a user's name); the LTO build's is <name>-lto
    mem: str           # persistent | transient
    spec: str          # spec file
    prefix: str        # C prefix of the generated code
    lto: bool = False  # built with -flto (a second row) instead of as the README says
    profile: bool = False   # generated with --profile (the workload counters): <name>-prof
    trace: bool = False     # generated with --trace (the operation log): <name>-trace

    @property
    def persistent(self) -> bool:
        return self.mem == "persistent"


def lto_twin(v: Variant) -> Variant:
    """The same spec built with -flto across generated code and driver: its own prefix
    (both builds are linked into one binary) and name <NAME>-lto."""
    return Variant(v.name + LTO_SUFFIX, v.mem, v.spec, v.prefix + "_lto", lto=True)


PROFILE_SUFFIX = "-prof"


def profile_twin(v: Variant) -> Variant:
    """The same spec generated with `p2gen build --profile` and built the users' way: its
    own prefix and name <NAME>-prof, beside the plain one in the same binary, so that the
    counters' cost is a ratio measured side by side (report: profile_overhead)."""
    return Variant(v.name + PROFILE_SUFFIX, v.mem, v.spec, v.prefix + "_prof", profile=True)


TRACE_SUFFIX = "-trace"


def trace_twin(v: Variant) -> Variant:
    """The same spec generated with `p2gen build --trace`, as profile_twin: <NAME>-trace."""
    return Variant(v.name + TRACE_SUFFIX, v.mem, v.spec, v.prefix + "_trace", trace=True)


def default_variants(lto: bool = True) -> list[Variant]:
    """Every variant the binary holds: the ten of the paper and the two BTREE ones built as
    the README tells users to (`p2gen build`'s lib<prefix>.a, the driver compiled -O2
    without LTO), then (lto) the same twelve built with -flto, then the journalled ones (the binary registers those only
    with --tpcb_durable=1; fsync-bound, built the users' way only)."""
    plain = [Variant(name, mem, str(SPEC_DIR / f"{stem}_{mem}.p2"), f"tpcb_{stem}_{mem}")
             for name, stem in STRUCTURES for mem in MEMS]
    return plain + ([lto_twin(v) for v in plain] if lto else []) + durable_variants()


def durable_variants() -> list[Variant]:
    return [Variant(name, "persistent", str(SPEC_DIR / f"{stem}.p2"), f"tpcb_{stem}")
            for name, stem, _ in DURABLE_VARIANTS]


def all_variants(lto_rows: bool, extra=(), profile_rows: bool = False) -> list[Variant]:
    """The defaults and the user's --variant specs, each also built with -flto (lto_rows)
    and (profile_rows) generated with --profile."""
    xs = [extra_variant(v) for v in extra or ()]
    out = default_variants(lto_rows) + xs + ([lto_twin(v) for v in xs] if lto_rows else [])
    if profile_rows:
        out += [profile_twin(v) for v in default_variants(False) + xs
                if v.name in P2_SYSTEMS or v in xs]
    return out


def extra_variant(text: str) -> Variant:
    """NAME=SPEC: a user's spec with containers branches/tellers/accounts/histories."""
    from ...build import load
    if "=" not in text:
        raise BuildError(f"--variant wants NAME=SPEC, got {text!r}")
    name, spec = text.split("=", 1)
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", name):
        raise BuildError(f"--variant: bad name {name!r} (letters, digits, _)")
    checked = load(spec, None)
    mems = {c.persistent for c in checked.containers}
    mem = "persistent" if True in mems else "transient"
    return Variant(name.upper(), mem, spec, f"tpcb_x_{name.lower()}")


DRIVER_SOURCES = ("tpcb.h", "tpcb_driver.cc", "tpcb_refs.cc", "tpcb_peers.cc", "tpcb_main.cc")


def driver_sources(source_dir: Optional[str] = None) -> Path:
    """The directory of the C/C++ drivers (package data beside this module), checked."""
    return checked_sources(Path(source_dir) if source_dir else SOURCE_DIR, DRIVER_SOURCES, "tpcb")


def build(build_dir: str, *, cc: str = "cc", cxx: str = "c++", opt: str = "-O2",
          jobs: Optional[int] = None, variants: Optional[list] = None,
          source_dir: Optional[str] = None, gen_opt: Optional[str] = None,
          say: Callable[[str], None] = lambda m: None) -> Path:
    """Generate every variant, compile it, the drivers and the references; link the
    benchmark binary build_dir/tpcb_bench and return its path.

    A variant is built one of two ways, both linked into the one binary:
    - as the README's "A spec, built and used" tells users to: the generated .c and the
      runtime compiled exactly as `p2gen build` compiles them (build.DEFAULT_CFLAGS +
      -fPIC) into lib<prefix>.a, the driver (the user's program) compiled `-O2` without
      LTO, with <PREFIX>_INLINE defined (the API compiled into the program) and linked
      against the archive: `cc -O2 -DX_INLINE -Igenerated app.c generated/libX.a`;
    - Variant.lto: the generated .c and the driver compiled with -flto, LTO at link.
    The runtime is compiled once, the users' way, and serves both (its symbols are not
    prefixed; it is off the transactions' hot paths)."""
    src = driver_sources(source_dir)
    variants = variants if variants is not None else default_variants()
    bdir, gen_dir, obj_dir, gens = generate_variants(build_dir, variants, say)
    cxxflags = driver_cxxflags(opt)                         # the user's program: -O2, no LTO
    tpcb_h = src / "tpcb.h"
    tasks, archives = users_build_steps(
        gen_dir, obj_dir,
        [(v.prefix, g, [f"-DP2_VARIANT={v.prefix}", f'-DP2_HEADER="{v.prefix}.h"', f'-DP2_NAME="{v.name}"',
                        f'-DP2_MEM="{v.mem}"', f"-DP2_PERSISTENT={1 if v.persistent else 0}",
                        f"-DP2_UPPER={v.prefix.upper()}", f"-DP2_RANK={10 + rank}"], v.lto)
         for rank, (v, g) in enumerate(gens)],
        cc=cc, cxx=cxx, cxxflags=cxxflags, driver=src / "tpcb_driver.cc", driver_deps=[tpcb_h],
        include_dirs=[src], opt=opt, gen_opt=gen_opt)
    tasks += source_steps(src, ("tpcb_refs.cc", "tpcb_peers.cc", "tpcb_main.cc"), obj_dir, cxx=cxx,
                          cxxflags=cxxflags, deps=[tpcb_h])
    return compile_and_link(bdir, "tpcb_bench", tasks, archives, LIBS, cxx=cxx, opt=opt,
                            lto=any(v.lto for v in variants), jobs=jobs, say=say,
                            hint="install the libraries: apt-get install libbenchmark-dev "
                                 "libsqlite3-dev liblmdb-dev libboost-dev")


# ---------------------------------------------------------------------------------------
# run

@dataclass
class Options:
    sfs: tuple = DEFAULT["sfs"]
    accounts: int = DEFAULT["accounts"]
    txns: int = DEFAULT["txns"]
    seeds: tuple = DEFAULT["seeds"]
    filter: Optional[str] = None
    dir: Optional[str] = None
    commit_every: int = 0
    iterations: int = 1
    # > 1: every benchmark run that many times, all runs in a random order (Google
    # Benchmark's random interleaving), so that a shared machine's load drifting over the
    # run weighs on every system alike; the report takes the median over seeds and runs
    repetitions: int = 1
    extra: tuple = ()          # more flags for the binary (e.g. --tpcb_inject_fault=1)

    def args(self) -> list:
        a = [f"--tpcb_sf={','.join(map(str, self.sfs))}", f"--tpcb_accounts={self.accounts}",
             f"--tpcb_txns={self.txns}", f"--tpcb_seeds={','.join(map(str, self.seeds))}",
             f"--tpcb_commit_every={self.commit_every}", f"--tpcb_iterations={self.iterations}"]
        if self.repetitions > 1:
            a += [f"--benchmark_repetitions={self.repetitions}",
                  "--benchmark_enable_random_interleaving=true"]
        if self.dir:
            a.append(f"--tpcb_dir={self.dir}")
        if self.filter:
            a.append(f"--benchmark_filter={self.filter}")
        return a + list(self.extra)


def run(exe: str, opts: Options, json_out: str,
        say: Callable[[str], None] = lambda m: None, env: Optional[dict] = None,
        cwd: Optional[str] = None) -> int:
    """Run the benchmark binary; Google Benchmark JSON goes to json_out. Prints one
    progress line per finished benchmark. Returns the binary's exit status (3: a run
    failed its invariant or errored); env, cwd: its environment and working directory."""
    def describe(m, vals, error):
        name, mem, sf, seed, _ = m.groups()
        info = error if vals is None else \
            f"txn {vals.get('txn_ms', '?')} ms, load {vals.get('load_ms', '?')} ms"
        return f"{name:<8} {mem:<10} sf={sf:<3} seed={seed:<3} {info}"

    return run_benchmarks([os.path.abspath(exe)] + opts.args(), json_out, "tpcb", RUN_LINE,
                          describe, say, runs_each=opts.repetitions, env=env, cwd=cwd)


# a run's console line (not the aggregates of repetitions: their names end _mean, _median, ...)
RUN_LINE = re.compile(r"^tpcb/(\S+?)/(\S+?)/sf:(\d+)/seed:(\d+)(?:/iterations:\d+)?(?:/manual_time)?\s+(.*)$")


# ---------------------------------------------------------------------------------------
# results

@dataclass
class Row:
    system: str
    mem: str
    sf: int
    seed: int
    counters: dict = field(default_factory=dict)
    error: Optional[str] = None

    def get(self, k: str, default=None):
        return self.counters.get(k, default)


NAME = re.compile(r"^tpcb/([^/]+)/([^/]+)/sf:(\d+)/seed:(\d+)")


def load_rows(json_path: str) -> tuple[dict, list]:
    context, runs = load_benchmarks(json_path, NAME)
    return context, [Row(m.group(1), m.group(2), int(m.group(3)), int(m.group(4)), numbers(b, bools=True), err)
                     for m, b, err in runs]


def failures(rows: list) -> list:
    return [f"{r.system}/{r.mem} sf={r.sf} seed={r.seed}: {r.error}" for r in rows if r.error]


def consistency(rows: list) -> list:
    """Every data system must compute the same results on the same random stream."""
    out = []
    by = {}
    for r in rows:
        if r.error or r.system == "BASELINE" or "result_sum" not in r.counters:
            continue
        by.setdefault((r.sf, r.seed), []).append(r)
    for (sf, seed), rs in sorted(by.items()):
        vals = {r.counters["result_sum"] for r in rs}
        if len(vals) > 1:
            out.append(f"sf={sf} seed={seed}: results differ: " +
                       ", ".join(f"{r.system}/{r.mem}={r.counters['result_sum']:.0f}" for r in rs))
    return out


METRICS = {"wall": "ms_per_200k", "cpu": "cpu_ms_per_200k"}


def summarize(rows: list, metric: str = "wall") -> dict:
    """(system, mem, sf) -> medians over seeds of the interesting counters."""
    groups = {}
    for r in rows:
        if r.error:
            continue
        groups.setdefault((r.system, r.mem, r.sf), []).append(r)
    out = {}
    for key, rs in groups.items():
        med = {}
        for k in ("ms_per_200k", "txn_ms", "txn_cpu_ms", "load_ms", "us_per_txn", "peak_rss_MB",
                  "file_alloc_MB", "file_MB", "raw_MB", "rss_ratio", "file_ratio", "txns",
                  "heap_MB", "heap_ratio", "written_KB_per_txn", "disk_KB_per_txn",
                  "writes_per_txn", "faults_per_txn"):
            vals = [r.counters[k] for r in rs if k in r.counters]
            if vals:
                med[k] = statistics.median(vals)
        vals = [r.counters["txn_cpu_ms"] / r.counters["txns"] * 200000 for r in rs
                if "txn_cpu_ms" in r.counters and r.counters.get("txns")]
        if vals:
            med["cpu_ms_per_200k"] = statistics.median(vals)
        med["time"] = med.get(METRICS[metric], med.get("ms_per_200k"))
        med["seeds"] = len(rs)
        out[key] = med
    return out


def _systems(summary: dict) -> list:
    order = {("BASELINE", "none"): 0, ("HANDC", "persistent"): 1, ("HANDC", "transient"): 2,
             ("STD-UMAP", "transient"): 3}
    for i, p in enumerate(PEERS[1:]):
        order[(p, "persistent")] = 4 + 2 * i
        order[(p, "transient")] = 5 + 2 * i
    for i, s in enumerate(P2_SYSTEMS):
        for j, name in enumerate((s, s + LTO_SUFFIX)):
            order[(name, "persistent")] = 10 + 4 * i + 2 * j
            order[(name, "transient")] = 11 + 4 * i + 2 * j
    order.update({("SQLITE", "persistent"): 90, ("SQLITE", "transient"): 91, ("LMDB", "persistent"): 92})
    keys = {(s, m) for s, m, _ in summary}
    return sorted(keys, key=lambda k: (order.get(k, 50), k))


def _sfs(summary: dict) -> list:
    return sorted({sf for _, _, sf in summary})


def _t(summary, system, mem, sf) -> Optional[float]:
    v = summary.get((system, mem, sf))
    return v.get("time") if v else None


def render_table(summary: dict, context: Optional[dict] = None, metric: str = "wall") -> str:
    """Markdown: per durability setting, time per 200,000 transactions (median over seeds)
    and speedup against SQLite at the same setting, per scale factor; then the targets."""
    context = context or {}
    sfs = _sfs(summary)
    systems = _systems(summary)
    lines = []
    what = "wall-clock" if metric == "wall" else "thread CPU"
    lines.append(f"Time per 200,000 transactions in ms ({what}, median over seeds; load excluded) "
                 "and speedup against SQLite at the same durability setting (×).")
    lines.append("")
    for mem in ("persistent", "transient"):
        rows = [(s, m) for s, m in systems if m in (mem, "none") and
                not (s == "HANDC" and m != mem)]
        if not any(m == mem for _, m in rows):
            continue
        sq = "SQLITE"
        lines.append(f"**{mem}** (reference: SQLite {'file, journal_mode=OFF, synchronous=OFF' if mem == 'persistent' else ':memory:'})")
        lines.append("")
        lines.append("| system | " + " | ".join(f"SF {sf}" for sf in sfs) + " |")
        lines.append("|---|" + "---:|" * len(sfs))
        for s, m in rows:
            cells = []
            for sf in sfs:
                t = _t(summary, s, m, sf)
                ref = _t(summary, sq, mem, sf)
                if t is None:
                    cells.append("—")
                elif ref is not None and s != sq:
                    cells.append(f"{_fmt_ms(t)} ({ref / t:.1f}×)")
                else:
                    cells.append(_fmt_ms(t))
            label = f"{s}" + ("" if m in (mem, "none") else f" ({m})")
            if m == "none":
                label += " (no data)"
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
        lines.append("")
    # load times
    lines.append("Load time in ms (median; a fresh database of SF branches, 10·SF tellers, A·SF accounts):")
    lines.append("")
    lines.append("| system | " + " | ".join(f"SF {sf}" for sf in sfs) + " |")
    lines.append("|---|" + "---:|" * len(sfs))
    for s, m in systems:
        if s == "BASELINE":
            continue
        cells = [_fmt_ms(summary.get((s, m, sf), {}).get("load_ms")) for sf in sfs]
        lines.append(f"| {s} {m} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(render_memory(summary))
    lines.append(render_targets(summary))
    lines.append(render_peers(summary, metric))
    lines.append(render_targets10(summary))
    return "\n".join(lines)


def _ns(summary, system, mem, sf) -> Optional[float]:
    """ns per transaction (median over seeds) from the time per 200,000 transactions."""
    t = _t(summary, system, mem, sf)
    return None if t is None else t * 1e6 / 200000


def _x(a, b) -> str:
    return fmt_x(_ratio(a, b))


def render_peers(summary: dict, metric: str = "wall") -> str:
    """Zero-cost layering: at the largest scale factor, ns per transaction of every system built as
    the README tells users to, its ratio to hand-coded C and to the C++ containers on the
    same memory, and the same variant built with -flto."""
    sfs = _sfs(summary)
    if not sfs:
        return ""
    top = sfs[-1]
    what = "wall-clock" if metric == "wall" else "thread CPU"
    out = [f"ns per transaction at SF {top} ({what}, median over seeds), built as the README tells "
           "users to (`p2gen build`'s library, the program compiled `-O2`, no LTO), and its ratio "
           "(time / time, lower is faster) to hand-coded C and to the C++ containers on the same "
           "memory; the last columns: the same variant built with `-flto`.", ""]
    out.append("| system | memory | ns/txn | × hand-coded C | × std::unordered_map | "
               "× Boost hashed_unique | × Boost ordered_unique | -flto ns/txn | as built / -flto |")
    out.append("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for s, mem in _systems(summary):
        if s in ("BASELINE",) or s.endswith(LTO_SUFFIX):
            continue
        t = _ns(summary, s, mem, top)
        if t is None:
            continue
        lto = _ns(summary, s + LTO_SUFFIX, mem, top)
        cells = [s, mem, f"{t:,.0f}", _x(t, _ns(summary, "HANDC", mem, top)),
                 _x(t, _ns(summary, "STD-UMAP", mem, top)),
                 _x(t, _ns(summary, "BOOST-HASHED", mem, top)),
                 _x(t, _ns(summary, "BOOST-ORDERED", mem, top)),
                 "—" if lto is None else f"{lto:,.0f}", _x(t, lto)]
        out.append("| " + " | ".join(cells) + " |")
    out.append("")
    return "\n".join(out)


def targets10(summary: dict) -> list:
    """[(target, ratio or None, met)]: the zero-cost layering targets at the largest scale factor, for
    the variants built as the README says."""
    sfs = _sfs(summary)
    if not sfs:
        return []
    top = sfs[-1]
    t = lambda s, m: _t(summary, s, m, top)   # noqa: E731
    out = []

    def row(name, r, limit):
        out.append((f"{name}, SF {top} (≤ {limit:g}×)", r, r is not None and r <= limit))
    for mem in MEMS:
        row(f"IARRAY {mem} / hand-coded C {mem}", _ratio(t("IARRAY", mem), t("HANDC", mem)), 1.15)
    row("HASH1 transient / std::unordered_map (heap)", _ratio(t("HASH1", "transient"), t("STD-UMAP", "transient")), 1.0)
    row("HASH1 persistent / Boost hashed_unique in a managed_mapped_file",
        _ratio(t("HASH1", "persistent"), t("BOOST-HASHED", "persistent")), 1.0)
    for mem in MEMS:
        row(f"AVL {mem} / Boost ordered_unique {mem}", _ratio(t("AVL", mem), t("BOOST-ORDERED", mem)), 1.0)
    for s in P2_SYSTEMS:
        for mem in MEMS:
            a, b = t(s, mem), t(s + LTO_SUFFIX, mem)
            r = None if a is None or b is None or not a or not b else max(a / b, b / a)
            row(f"{s} {mem}: as built and -flto within (slower / faster)", r, 1.1)
    return out


def render_targets10(summary: dict) -> str:
    rows = targets10(summary)
    if not rows:
        return ""
    return targets_table("Targets of zero-cost layering as users build it (ratios of medians, measured side "
                         "by side in one run; the variants built as the README says):", rows)


def render_memory(summary: dict) -> str:
    sfs = _sfs(summary)
    if not sfs:
        return ""
    top = sfs[-1]
    out = [f"Memory at SF {top} (median): raw = 100 bytes per branch/teller/account record + 50 "
           "per history record; peak RSS = growth of the process's peak resident set during load "
           "and run; heap = bytes malloc handed out and not got back after the run; file = "
           "allocated blocks of the database files.", ""]
    out.append("| system | raw MB | peak RSS MB (× raw) | heap MB (× raw) | file MB (× raw) |")
    out.append("|---|---:|---:|---:|---:|")
    for s, mem in _systems(summary):
        v = summary.get((s, mem, top))
        if not v or s == "BASELINE":
            continue
        raw = v.get("raw_MB", 0.0)

        def cell(mb, ratio):
            return f"{v.get(mb, 0.0):,.1f} ({v.get(ratio, 0.0):.2f}×)"
        fcell = cell("file_alloc_MB", "file_ratio") if mem == "persistent" else "—"
        out.append(f"| {s} {mem} | {raw:,.1f} | {cell('peak_rss_MB', 'rss_ratio')} | "
                   f"{cell('heap_MB', 'heap_ratio')} | {fcell} |")
    out.append("")
    return "\n".join(out)


def render_targets(summary: dict) -> str:
    sfs = _sfs(summary)
    if not sfs:
        return ""
    top = sfs[-1]
    out = []

    def row(name, val, ok):
        out.append((name, val, val is not None and ok(val)))

    for sf in sfs:
        r = _ratio(_t(summary, "IARRAY", "transient", sf), _t(summary, "HANDC", "transient", sf))
        row(f"IARRAY / hand-coded C, transient, SF {sf} (≤ 1.15×)", r, lambda v: v <= 1.15)
    for mem in MEMS:
        for s in P2_SYSTEMS:
            r = _ratio(_t(summary, "SQLITE", mem, top), _t(summary, s, mem, top))
            row(f"{s} {mem} speedup over SQLite {mem}, SF {top} (≥ 10×)", r, lambda v: v >= 10)
    for mem in MEMS:
        r = _ratio(_t(summary, "HASH0", mem, top), _t(summary, "HASH1", mem, top))
        row(f"HASH0 / HASH1 {mem}, SF {top} (> 1: HASH1 faster)", r, lambda v: v > 1)
    for s in P2_SYSTEMS:
        r = _ratio(_t(summary, s, "persistent", top), _t(summary, s, "transient", top))
        row(f"{s} persistent / transient, SF {top} (≤ 1.15×)", r, lambda v: v <= 1.15)
    for s, mem in _systems(summary):
        v = summary.get((s, mem, top))
        if not v or s == "BASELINE":
            continue
        ratio = max(v.get("rss_ratio", 0.0), v.get("file_ratio", 0.0), v.get("heap_ratio", 0.0))
        row(f"{s} {mem}: memory / raw record bytes, SF {top} (≤ 1.5×)", ratio, lambda x: x <= 1.5)
    return targets_table(f"Targets of the TPC-B reproduction (ratios of medians; largest scale factor run: "
                         f"SF {top}):", out, align="---")


PLOT_STYLE = {"BASELINE": ("k", ":"), "HANDC": ("0.4", "--"), "STD-UMAP": ("tab:pink", "--"),
              "BOOST-HASHED": ("tab:cyan", "--"), "BOOST-ORDERED": ("tab:gray", "-."), "SQLITE": ("tab:red", "-"),
              "LMDB": ("tab:brown", "-"), "AVL": ("tab:blue", "-"), "QSORT": ("tab:orange", "-"),
              "HASH0": ("tab:green", "-"), "HASH1": ("tab:olive", "-"), "IARRAY": ("tab:purple", "-"),
              "BTREE": ("navy", "-")}
MARKERS = {"persistent": "o", "transient": "s", "none": "x"}


def render_plots(summary: dict, out_dir: str, context: Optional[dict] = None,
                 metric: str = "wall") -> list:
    """fig1 (persistent) and fig2 (transient): time per 200,000 transactions and speedup
    against SQLite vs SF; fig3: P2 persistent vs transient. Returns the PNG paths."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    context = context or {}
    sfs = _sfs(summary)
    systems = _systems(summary)
    sub = f"A = {context.get('tpcb_accounts', '?')} accounts/branch, " \
          f"{context.get('tpcb_txns', '?')} transactions/run, median of {context.get('tpcb_seeds', '?')}"
    ylabel = "ms per 200,000 transactions" + (" (thread CPU)" if metric == "cpu" else "")
    paths = []
    for fig_no, mem in ((1, "persistent"), (2, "transient")):
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.8))
        for s, m in systems:
            if m not in (mem, "none") or (s == "HANDC" and m != mem) or s.endswith(LTO_SUFFIX):
                continue   # (the -flto rows are in the tables)
            xs = [sf for sf in sfs if _t(summary, s, m, sf) is not None]
            if not xs:
                continue
            color, ls = PLOT_STYLE.get(s, (None, "-"))
            ys = [_t(summary, s, m, sf) for sf in xs]
            ax1.plot(xs, ys, color=color, linestyle=ls, marker=MARKERS.get(m, "o"), label=s)
            if s not in ("SQLITE", "BASELINE"):
                sp = [(sf, _ratio(_t(summary, "SQLITE", mem, sf), _t(summary, s, m, sf))) for sf in xs]
                sp = [(x, y) for x, y in sp if y is not None]
                if sp:
                    ax2.plot([x for x, _ in sp], [y for _, y in sp], color=color, linestyle=ls,
                             marker=MARKERS.get(m, "o"), label=s)
        ax1.set_yscale("log")
        ax1.set_xticks(sfs)
        ax2.set_xticks(sfs)
        ax1.set_xlabel("scale factor (relation size)")
        ax1.set_ylabel(ylabel)
        ax1.set_title(f"Total time, {mem} databases")
        ax1.grid(True, which="both", alpha=0.3)
        ax1.legend(fontsize=8)
        ax2.set_yscale("log")
        ax2.set_xlabel("scale factor (relation size)")
        ax2.set_ylabel(f"speedup over SQLite ({'file' if mem == 'persistent' else ':memory:'})")
        ax2.set_title(f"Speedup relative to SQLite, {mem}")
        ax2.grid(True, which="both", alpha=0.3)
        ax2.legend(fontsize=8)
        fig.suptitle(f"Figure {fig_no}: TPC-B, {mem} ({sub})", fontsize=10)
        fig.tight_layout()
        p = os.path.join(out_dir, f"fig{fig_no}_{mem}.png")
        fig.savefig(p, dpi=110)
        plt.close(fig)
        paths.append(p)
    # figure 3: persistent vs transient, P2 structures
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.8))
    for s in P2_SYSTEMS + ("HANDC", "SQLITE"):
        xs = [sf for sf in sfs if _t(summary, s, "persistent", sf) is not None
              and _t(summary, s, "transient", sf) is not None]
        if not xs:
            continue
        color, ls = PLOT_STYLE.get(s, (None, "-"))
        ax1.plot(xs, [_t(summary, s, "persistent", sf) for sf in xs], color=color, linestyle=ls,
                 marker="o", label=f"{s} persistent")
        ax1.plot(xs, [_t(summary, s, "transient", sf) for sf in xs], color=color, linestyle=":",
                 marker="s", label=f"{s} transient")
        ax2.plot(xs, [_t(summary, s, "persistent", sf) / _t(summary, s, "transient", sf) for sf in xs],
                 color=color, linestyle=ls, marker="o", label=s)
    ax1.set_yscale("log")
    ax1.set_xticks(sfs)
    ax2.set_xticks(sfs)
    ax1.set_xlabel("scale factor (relation size)")
    ax1.set_ylabel(ylabel)
    ax1.set_title("Total time, persistent and transient")
    ax1.grid(True, which="both", alpha=0.3)
    ax1.legend(fontsize=7, ncol=2)
    ax2.axhline(1.0, color="k", linewidth=0.8)
    ax2.axhline(1.15, color="k", linewidth=0.8, linestyle="--")
    ax2.set_xlabel("scale factor (relation size)")
    ax2.set_ylabel("time persistent / time transient")
    ax2.set_title("Persistent relative to transient")
    ax2.grid(True, alpha=0.3)
    ax2.legend(fontsize=8)
    fig.suptitle(f"Figure 3: TPC-B, persistent vs transient ({sub})", fontsize=10)
    fig.tight_layout()
    p = os.path.join(out_dir, "fig3_persistent_vs_transient.png")
    fig.savefig(p, dpi=110)
    plt.close(fig)
    paths.append(p)
    return paths


def _runs_note(rows: list) -> str:
    """", each run N times in a random order" when the benchmarks were repeated
    (--repetitions): the medians are then over seeds and runs."""
    per = {}
    for r in rows:
        per[(r.system, r.mem, r.sf, r.seed)] = per.get((r.system, r.mem, r.sf, r.seed), 0) + 1
    n = max(per.values(), default=1)
    return f", each run {n} times in a random order (medians over seeds and runs)" if n > 1 else ""


def report(json_path: str, out_dir: str, *, plots: bool = True, metric: str = "wall",
           command: Optional[str] = None) -> tuple[str, list, list]:
    """Read the JSON, write out_dir/tpcb.md (and the PNGs). Returns (markdown, pngs,
    problems) where problems are failed runs and inconsistent results."""
    context, rows = load_rows(json_path)
    problems = failures(rows) + consistency(rows)
    summary = summarize(rows, metric)
    md = ["# TPC-B: generated data managers vs hand-coded C, SQLite and LMDB", ""] + command_lines(command)
    md += [f"Configuration: SF {context.get('tpcb_sf', '?')}, {context.get('tpcb_accounts', '?')} "
           f"accounts per branch, {context.get('tpcb_txns', '?')} transactions per run, seeds "
           f"{context.get('tpcb_seeds', '?')}{_runs_note(rows)}; {host_text(context, mhz=True)}.", ""]
    md.append(render_table(summary, context, metric))
    md += profile_overhead(summary)
    md += problems_lines(problems)
    pngs = plot_files(out_dir, lambda: render_plots(summary, out_dir, context, metric)) if plots else []
    if plots:
        md += image_lines(pngs)
    return write_report(out_dir, "tpcb.md", md), pngs, problems


def profile_overhead(summary: dict) -> list:
    """Markdown lines: per variant built both plainly and with --profile (<NAME>-prof, the
    same binary and run, repetitions interleaved at random), the median time of each and
    their ratio; [] when the run has no -prof rows."""
    rows = []
    for (system, mem, sf), med in sorted(summary.items()):
        if not system.endswith(PROFILE_SUFFIX):
            continue
        plain = summary.get((system[:-len(PROFILE_SUFFIX)], mem, sf))
        if plain and plain.get("time") and med.get("time"):
            rows.append(f"| {system[:-len(PROFILE_SUFFIX)]} | {mem} | {sf} | "
                        f"{plain['time']:.1f} | {med['time']:.1f} | {med['time'] / plain['time']:.3f} |")
    if not rows:
        return []
    return ["", "## The workload counters' cost (`p2gen build --profile`)", "",
            "Each variant generated with `--profile` (counters on, the profile written at "
            "close) beside the same spec without, in one binary and one run; ms per 200,000 "
            "transactions, medians over seeds and repetitions.", "",
            "| system | memory | SF | plain | --profile | ratio |", "|---|---|---|---|---|---|",
            *rows, ""]


# ---------------------------------------------------------------------------------------
# durability: journalled variants vs SQLite WAL / LMDB sync

def durable_filter() -> str:
    """--benchmark_filter for the durable set: every durable system plus the no-durability
    persistent variants they are compared with."""
    names = ([n for n, _, _ in DURABLE_VARIANTS] + [n for n, _ in DURABLE_REFERENCES] +
             [n for n, _ in DURABLE_PLAIN])
    return "^tpcb/(" + "|".join(n.replace("+", r"\+") for n in names) + ")/persistent/"


def durable_names(opts: "Options") -> set:
    names = ([n for n, _, _ in DURABLE_VARIANTS] + [n for n, _ in DURABLE_REFERENCES] +
             [n for n, _ in DURABLE_PLAIN])
    return {f"tpcb/{n}/persistent/sf:{sf}/seed:{seed}"
            for n in names for sf in opts.sfs for seed in opts.seeds}


def _durable_rows() -> list:
    """(name, description, no-durability counterpart or None, SQLite WAL of the same
    grouping or None), in table order."""
    out = [(n, what, None, None) for n, what in DURABLE_PLAIN]
    for n, _, what in DURABLE_VARIANTS:
        base = n.split("+")[0]
        grouping = n.split("+")[1]          # J / W (page journal / record log), then 100, NS
        sq = ("SQLITE-WAL100" if grouping.endswith("100") else
              "SQLITE-WAL" if grouping in ("J", "W") else None)
        out.append((n, what, base, sq))
    for n, what in DURABLE_REFERENCES:
        out.append((n, what, None, "SQLITE-WAL100" if n.endswith("100") else "SQLITE-WAL"))
    return out


def _per_txn(summary: dict, system: str, sf: int, metric: str) -> Optional[float]:
    """ms per transaction (median over seeds): wall clock or thread CPU."""
    v = summary.get((system, "persistent", sf))
    if not v:
        return None
    if metric == "cpu":
        return v["txn_cpu_ms"] / v["txns"] if v.get("txns") and "txn_cpu_ms" in v else None
    return v["us_per_txn"] / 1e3 if "us_per_txn" in v else None


def _fmt_txn(ms: Optional[float]) -> str:
    """ms with two significant digits past the leading zeros (0.72, 0.027, 0.000086)."""
    if ms is None:
        return "—"
    if ms >= 0.1:
        return f"{ms:.2f}"
    digits = 2
    x = ms
    while x < 0.1 and digits < 9:
        x *= 10
        digits += 1
    return f"{ms:.{digits}f}"


def render_durable(summary: dict, context: Optional[dict] = None, metric: str = "wall") -> str:
    """Markdown: per scale factor, ms per transaction of every durable system and of the
    no-durability variants, the speedup over SQLite WAL at the same grouping, the cost over
    no durability, what each writes; then the durability targets."""
    context = context or {}
    sfs = _sfs(summary)
    other = "thread CPU" if metric == "wall" else "wall-clock"
    lines = [f"ms per TPC-B transaction ({'wall-clock' if metric == 'wall' else 'thread CPU'}, "
             f"median over seeds; load excluded; {other} in the next column); speedup over SQLite "
             "WAL committing as often (×); cost over the same structure without a journal (×); "
             "per transaction in the timed region: KB passed to write system calls, KB sent to "
             "storage, write system calls, page faults. Every transaction is one atomic, durable "
             "commit in the durable rows, except nosync (never fsync'd).", ""]
    for sf in sfs:
        lines.append(f"**SF {sf}**")
        lines.append("")
        lines.append(f"| system | what | ms/txn | {other} ms/txn | txn/s | speedup over SQLite WAL | "
                     "× no journal | written KB/txn | disk KB/txn | writes/txn | faults/txn |")
        lines.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for name, what, base, sq in _durable_rows():
            t = _per_txn(summary, name, sf, metric)
            if t is None:
                continue
            t2 = _per_txn(summary, name, sf, "cpu" if metric == "wall" else "wall")
            v = summary[(name, "persistent", sf)]
            sqt = _per_txn(summary, sq, sf, metric) if sq and sq != name else None
            bt_ = _per_txn(summary, base, sf, metric) if base else None
            cells = [name, what, _fmt_txn(t), _fmt_txn(t2), f"{1e3 / t:,.0f}" if t > 0 else "—",
                     f"{sqt / t:.2f}×" if sqt and t > 0 else "—",
                     f"{t / bt_:,.0f}×" if bt_ and bt_ > 0 else "—",
                     f"{v.get('written_KB_per_txn', 0.0):.1f}", f"{v.get('disk_KB_per_txn', 0.0):.1f}",
                     f"{v.get('writes_per_txn', 0.0):.2f}", f"{v.get('faults_per_txn', 0.0):.2f}"]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    lines.append(render_durable_targets(summary, metric))
    return "\n".join(lines)


def durable_targets(summary: dict, metric: str = "wall") -> list:
    """[(target, ratio or None, met)] at the largest scale factor run."""
    sfs = _sfs(summary)
    if not sfs:
        return []
    top = sfs[-1]
    t = lambda s: _per_txn(summary, s, top, metric)   # noqa: E731
    out = []
    for s in ("HASH1", "IARRAY"):
        r = _ratio(t(f"{s}+J"), t("SQLITE-WAL"))
        out.append((f"{s}+J / SQLITE-WAL, one transaction per commit, fsync on, SF {top} "
                    "(≤ 1: at least as fast)", r, r is not None and r <= 1))
    for s in ("HASH1", "IARRAY"):
        r = _ratio(t(f"{s}+J100"), t(s))
        out.append((f"{s}+J100 / {s} without a journal, group commit of 100, SF {top} (≤ 3×)",
                    r, r is not None and r <= 3))
    # the record log's (wal): the bytes a transaction writes, not pages
    for s in ("HASH1", "IARRAY"):
        r = _ratio(t(f"{s}+W"), t("SQLITE-WAL"))
        out.append((f"{s}+W / SQLITE-WAL, one transaction per commit, fsync on, SF {top} (≤ 0.8×)",
                    r, r is not None and r <= 0.8))
        r = _ratio(t("SQLITE-WAL100"), t(f"{s}+W100"))
        out.append((f"SQLITE-WAL100 / {s}+W100, group commit of 100, SF {top} (≥ 5×: faster)",
                    r, r is not None and r >= 5))
        r = _ratio(t("LMDB-SYNC100"), t(f"{s}+W100"))
        out.append((f"LMDB-SYNC100 / {s}+W100, group commit of 100, SF {top} (≥ 2×: faster)",
                    r, r is not None and r >= 2))
    r = _ratio(t("HASH1+WNS"), t("HASH1"))
    out.append((f"HASH1+WNS / HASH1 without a journal, nosync, SF {top} (≤ 10×)",
                r, r is not None and r <= 10))
    return out


def render_durable_targets(summary: dict, metric: str = "wall") -> str:
    rows = durable_targets(summary, metric)
    if not rows:
        return ""
    return targets_table("Targets of durability (ratios of medians, measured side by side in one run):",
                         rows, lambda r: fmt_x(r, ",.2f"))


def report_durable(json_path: str, out_dir: str, *, metric: str = "wall",
                   command: Optional[str] = None) -> tuple[str, list]:
    """Read the JSON of a --durable run, write out_dir/tpcb_durable.md. Returns (markdown,
    problems)."""
    context, rows = load_rows(json_path)
    problems = failures(rows) + consistency(rows)
    summary = summarize(rows, metric)
    md = ["# TPC-B with durability: journalled data managers vs SQLite WAL and LMDB sync", ""]
    md += command_lines(command)
    md += [f"Configuration: SF {context.get('tpcb_sf', '?')}, {context.get('tpcb_accounts', '?')} "
           f"accounts per branch, {context.get('tpcb_txns', '?')} transactions per run, seeds "
           f"{context.get('tpcb_seeds', '?')}; database files in {context.get('tpcb_dir', '?')}; "
           f"{host_text(context)}; load average at start {load_text(context)}.", ""]
    md.append(render_durable(summary, context, metric))
    md += problems_lines(problems)
    return write_report(out_dir, "tpcb_durable.md", md), problems


# ---------------------------------------------------------------------------------------
# the command (cli.py holds only the click declaration)

def command(*, sf, accounts, txns, seeds, reference, out, build_dir, filter, db_dir,
            commit_every, iterations, lto_rows, repetitions=1, cc, cxx, jobs, render, plots, metric, variants,
            durable=False, profile_rows=False, overhead=False, processes=3, instructions=False,
            say=print) -> int:
    """`p2gen bench tpcb`: build, run, report. Returns the exit status."""
    out, json_path, cmdline = command_outputs(out, "tpcb.json")
    if overhead:
        from .overhead import command as overhead_command
        return overhead_command(sf=sf, accounts=accounts, txns=txns, seeds=seeds,
                                repetitions=repetitions, processes=processes, out=out,
                                build_dir=build_dir, db_dir=db_dir, cc=cc, cxx=cxx, jobs=jobs,
                                cmdline=cmdline, count_instructions=instructions, say=say)
    if durable:
        return durable_command(sf=sf, accounts=accounts, txns=txns, seeds=seeds,
                               reference=reference, out=out, build_dir=build_dir, filter=filter,
                               db_dir=db_dir, iterations=iterations, repetitions=repetitions,
                               lto_rows=lto_rows, cc=cc, cxx=cxx,
                               jobs=jobs, render=render, metric=metric, variants=variants,
                               cmdline=cmdline, say=say)
    if render:
        return say_report(say, *report(render, out, plots=plots, metric=metric, command=cmdline)[::2])
    base = REFERENCE if reference else DEFAULT
    opts = Options(sfs=_ints(sf, "--sf") or base["sfs"], accounts=accounts or base["accounts"],
                   txns=txns or base["txns"], seeds=_ints(seeds, "--seeds") or base["seeds"],
                   filter=filter, dir=db_dir, commit_every=commit_every, iterations=iterations,
                   repetitions=repetitions)
    bdir = build_dir or os.path.join("bench", "build")
    exe = build(bdir, cc=cc, cxx=cxx, jobs=jobs,
                variants=all_variants(lto_rows, variants, profile_rows), say=say)
    # the -prof rows write a profile at every close, each spec its own <spec>.profile.json
    # in the build dir (the later sessions numbered beside it: merged), not in the user's
    env = {"P2GEN_PROFILE_DIR": os.path.abspath(bdir), **os.environ} if profile_rows else None
    rc = run(str(exe), opts, json_path, say=say, env=env)
    if not results_written(exe, rc, json_path, say):
        return 1
    text, pngs, problems = report(json_path, out, plots=plots, metric=metric, command=cmdline)
    return say_report(say, text, problems, [json_path, os.path.join(out, "tpcb.md"), *pngs], rc)


def durable_command(*, sf, accounts, txns, seeds, reference, out, build_dir, filter, db_dir,
                    iterations, lto_rows, repetitions=1, cc, cxx, jobs, render, metric, variants, cmdline,
                    say=print) -> int:
    """`p2gen bench tpcb --durable`: the same binary, only the durable systems and the
    no-durability HASH1 / IARRAY persistent variants, at DURABLE_DEFAULT's fsync-bound
    size; writes tpcb_durable.{json,md}."""
    if reference:
        raise BuildError("--durable runs at its own small size (fsync per transaction); "
                         "give --sf/--accounts/--txns/--seeds instead of --reference")
    json_path = os.path.join(out, "tpcb_durable.json")
    if render:
        return say_report(say, *report_durable(render, out, metric=metric, command=cmdline))
    base = DURABLE_DEFAULT
    opts = Options(sfs=_ints(sf, "--sf") or base["sfs"], accounts=accounts or base["accounts"],
                   txns=txns or base["txns"], seeds=_ints(seeds, "--seeds") or base["seeds"],
                   filter=filter or durable_filter(), dir=db_dir, iterations=iterations,
                   repetitions=repetitions, extra=("--tpcb_durable=1",))
    exe = build(build_dir or os.path.join("bench", "build"), cc=cc, cxx=cxx, jobs=jobs,
                variants=all_variants(lto_rows, variants), say=say)
    rc = run(str(exe), opts, json_path, say=say)
    if not results_written(exe, rc, json_path, say):
        return 1
    text, problems = report_durable(json_path, out, metric=metric, command=cmdline)
    return say_report(say, text, problems, [json_path, os.path.join(out, "tpcb_durable.md")], rc)
