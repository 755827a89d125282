"""`p2gen bench oo7`: the OO7 benchmark (Carey, DeWitt, Naughton 1993; the workload is
spelled out in the project's OO7 spec).

Build: every spec of type_equations/oo7/ (the manifest: each *.p2 there is one variant) is
generated with its own prefix; bench/oo7/oo7_p2.cc is compiled once per variant against
the generated header (when both exist), and linked with the shared generator
(oo7_common.cc), the hand-written pointer implementation (oo7_hand.cc: HAND), the SQLite
mapping (oo7_sqlite.cc: SQLITE persistent and transient, SQLITE-WAL), the LMDB mapping
(oo7_lmdb.cc: LMDB without sync, LMDB-SYNC) and oo7_main.cc into one Google
Benchmark binary. Every variant is built as the README tells users to (the default rows:
p2gen build's lib<prefix>.a, the driver compiled -O2 with <PREFIX>_INLINE, no LTO) and
the hash variants also with -flto (rows <NAME>-lto): see build().
Run: the binary builds each system's database once per (size, fanout), checks its
counts, and runs every operation at three temperatures: cold and warm once each in a fresh
process of the binary (persistent systems: the files dropped from the page cache, proved
by mincore, or cached but not mapped), hot the mean of the next runs in its own open; with
page faults, bytes written and file sizes as counters; it compares every count across
systems; Google Benchmark JSON. Then HOT_ROUNDS more processes of the binary run the
zero-cost table's operations hot again (run_hot_rounds), their rows added to the JSON.
Report: a Markdown table per size/fanout (one row per operation: cold / warm / hot median
ms per system, hot time relative to HAND), the cold / warm / hot table of PROTOCOL_OPS
(times, major and minor faults, resident fraction, KB read and written), the zero-cost
layering table of the hot pointer-chasing
operations (T6, T7, Q1, Q2) against HAND and as built vs -flto, the build time / database
and file size table, and PNG
plots (matplotlib, optional dependency `p2gen[bench]`).
Durability (`--durable`): the update operations T2a-T3c, SM1 and SM2, each run 100 times
in a row (hot, every run one transaction, so a system grouping commits by 100 pays one
commit per 100 runs), on DURABLE_SYSTEMS: the page journal and the record log syncing
every commit or every 100 (type_equations/oo7/durable/, built by --durable only and, like
SQLITE-WAL100 and LMDB-SYNC100, registered by the binary only with --oo7_durable=1), SQLite
WAL and LMDB with sync on, and the same data without durability; oo7_durable.{json,md}.
"""
from __future__ import annotations

import json
import os
import re
import statistics
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Optional

from ..common import (bullets, checked_sources, command_lines, command_outputs, compile_and_link,
                      driver_cxxflags, fmt_steps, generate_variants, host_text, image_lines, ints,
                      load_benchmarks, load_text, LTO_SUFFIX, median_of, numbers, plot_files,
                      present_sources, problems_lines, ratio as _ratio, results_written,
                      run_benchmarks, say_report, source_steps, users_build_steps, write_report)
from ...errors import BuildError
from .. import BENCH_DIR, spec_dir

SOURCE_DIR = BENCH_DIR / "oo7"
SPEC_DIR = spec_dir("oo7")
# the durable comparison's own variants (a journal grouping commits by 100): built by
# --durable only, registered by the binary only with --oo7_durable=1
DURABLE_SPEC_DIR = SPEC_DIR / "durable"

# the sources every binary links (oo7_hand.cc, oo7_sqlite.cc and oo7_lmdb.cc are the reference systems)
REQUIRED = ("oo7.h", "oo7_common.cc", "oo7_main.cc")
REFERENCE_SOURCES = ("oo7_hand.cc", "oo7_sqlite.cc", "oo7_lmdb.cc")
P2_DRIVER = "oo7_p2.cc"
LIBS = ("-lbenchmark", "-lpthread", "-lsqlite3", "-llmdb")
LIB_HINT = "install the libraries: apt-get install libbenchmark-dev libsqlite3-dev liblmdb-dev"

# operations in the order of the spec's tables (oo7_main.cc runs them in this order)
OPS = ("T1", "T2a", "T2b", "T2c", "T3a", "T3b", "T3c", "T4", "T5do", "T5undo", "T6", "T7",
       "T8", "T9", "Q1", "Q2", "Q3", "Q4", "Q5", "Q6", "Q7", "Q8", "SM1", "SM2", "CU")
# the update operations: each run is restored, so every one of them also has hot runs
UPDATES = ("T2a", "T2b", "T2c", "T3a", "T3b", "T3c", "T5do", "T5undo", "SM1", "SM2", "CU")
# the temperatures (oo7_main.cc): cold and warm in a fresh process, for persistent systems
# only (a transient system has nothing to be cold or warm: "n/a"); hot in the same open
PHASES = ("cold", "warm", "hot")
FRESH = ("cold", "warm")
# the operations of the cold / warm / hot table (faults, bytes written): clustered and
# scattered reads, the three update densities, the manual, the random lookups
PROTOCOL_OPS = ("T1", "T6", "T2a", "T2b", "T2c", "Q1", "Q5", "T8", "T9")
SIZES = ("tiny", "small", "medium", "large")
# zero-cost layering: the hot pointer-chasing operations and their target, ≤ 1.5× HAND built the
# users' way (the reference systems are not generated: no row of their own)
HOT10 = ("T6", "T7", "Q1", "Q2")
TARGET10 = 1.5
# Their hot runs last microseconds, so one process decides a ratio: a slow spell of the host
# or a process whose memory happened to lay out badly moved a ratio by 1.3-1.7x from one run
# to the next. After the main run, HOT_ROUNDS more processes of the binary run them hot once
# more, each for every generated variant and HAND; the hot time is the median over all.
HOT_ROUNDS = 4
REFERENCE_SYSTEMS = ("HAND", "SQLITE", "SQLITE-WAL", "SQLITE-WAL100", "LMDB", "LMDB-SYNC", "LMDB-SYNC100")

# quick default: small, fanout 3 (a minute or two on two cores, build included)
DEFAULT = dict(size="small", fanouts=(3,))
# the reference experiment: the report's medium database at every fanout
REFERENCE = dict(size="medium", fanouts=(3, 6, 9))

# The durable comparison (`--durable`): the update operations, each run DURABLE_UPDATE_RUNS
# times in a row (hot, each run one transaction), on the journalled variants, the durable
# references committing per run and per 100 runs, and the same data without durability.
DURABLE_OPS = ("T2a", "T2b", "T2c", "T3a", "T3b", "T3c", "SM1", "SM2")
DURABLE_UPDATE_RUNS = 100
DURABLE_SYSTEMS = (
    ("HASH/ILIST", "generated, no journal: no atomicity, no durability"),
    ("HASH/ILIST/JOURNAL", "page journal, journal(group = 1): a commit and fsync per run"),
    ("HASH/ILIST/JOURNAL100", "page journal(group = 100): a commit per run, fsync'd every 100"),
    ("HASH/ILIST/WAL", "record log, wal(group = 1): a commit and fsync per run"),
    ("HASH/ILIST/WAL100", "record log, wal(group = 100): a commit per run, fsync'd every 100"),
    ("SQLITE-WAL", "SQLite, journal_mode=WAL, synchronous=FULL: a transaction (and WAL fsync) per run"),
    ("SQLITE-WAL100", "the same, a transaction per 100 runs"),
    ("LMDB-SYNC", "LMDB, sync on: a write transaction (and its syncs) per run"),
    ("LMDB-SYNC100", "the same, a write transaction per 100 runs"),
    ("SQLITE", "SQLite, journal_mode=OFF, synchronous=OFF: no durability"),
    ("LMDB", "LMDB, MDB_WRITEMAP | MDB_NOSYNC: no durability"),
)
# (slower, faster, what): the ratio slower / faster of hot times (above 1: `faster` wins)
DURABLE_RATIOS = (
    ("SQLITE-WAL", "HASH/ILIST/WAL", "SQLite WAL / record log, per run"),
    ("LMDB-SYNC", "HASH/ILIST/WAL", "LMDB sync / record log, per run"),
    ("HASH/ILIST/JOURNAL", "HASH/ILIST/WAL", "page journal / record log, per run"),
    ("SQLITE-WAL100", "HASH/ILIST/WAL100", "SQLite WAL / record log, per 100"),
    ("LMDB-SYNC100", "HASH/ILIST/WAL100", "LMDB sync / record log, per 100"),
    ("HASH/ILIST/JOURNAL100", "HASH/ILIST/WAL100", "page journal / record log, per 100"),
)


# ---------------------------------------------------------------------------------------
# build

@dataclass
class Variant:
    name: str          # what tables call it: the spec's stem without _persistent/_transient,
                       # upper case, '_' -> '/' (hash_ilist_persistent.p2: HASH/ILIST)
    mem: str           # persistent | transient
    spec: str          # spec file
    prefix: str        # C prefix of the generated code
    journal: bool = False   # its file is journalled: the driver commits (-DP2_JOURNAL=1)
    lto: bool = False       # built with -flto (a second row) instead of as the README says
    files: tuple = ()       # the files its database occupies (the spec's, and their
                            # journals): what cold runs drop from the page cache
    durable_only: bool = False   # measured in the durable comparison only (--durable)
    open_env: tuple = ()    # (NAME, VALUE): set in the environment around every open of
                            # this variant (forced relocation of a mapped file: --pointers)

    @property
    def persistent(self) -> bool:
        return self.mem == "persistent"


def variant_from_spec(spec: Path, durable_only: bool = False) -> Variant:
    """One manifest entry: type_equations/oo7/hash_ilist_persistent.p2 -> HASH/ILIST,
    persistent (the memory comes from the spec's containers), prefix oo7_hash_ilist_persistent."""
    from ...build import planned
    checked = planned(str(spec))
    mem = "persistent" if any(c.persistent for c in checked.containers) else "transient"
    stem = spec.stem
    base = re.sub(r"_(persistent|transient)$", "", stem)
    prefix = "oo7_" + re.sub(r"[^A-Za-z0-9_]", "_", stem).lower()
    journal = any(f.transactions for f in checked.files)   # the driver commits
    # each data file, and the files its mem layers keep beside it (a journal's)
    files = tuple(n for f in checked.files
                  for n in (f.path, *(f.path + x for li in f.mems for x in li.layer.side_files)))
    return Variant(base.upper().replace("_", "/"), mem, str(spec), prefix, journal,
                   files=files if mem == "persistent" else (), durable_only=durable_only)


def lto_twin(v: Variant) -> Variant:
    """The same spec built with -flto across generated code and driver: its own prefix
    (both builds are linked into one binary) and name <NAME>-lto."""
    return Variant(v.name + LTO_SUFFIX, v.mem, v.spec, v.prefix + "_lto", v.journal, lto=True,
                   files=v.files, durable_only=v.durable_only)


def wants_lto_twin(v: Variant) -> bool:
    """Which variants get an -lto row by default: the plain hash-indexed ones (HASH/ILIST,
    HASH/REFARRAY: a twin for every variant would add half again to the run). A variant
    named for a third choice (a journal, a layout, a link representation:
    HASH/ILIST/CLUSTERED) measures that choice, not the build; the journalled one's time
    is its commit."""
    return (v.name.startswith("HASH") and len(v.name.split("/")) == 2 and not v.journal
            and not v.lto)


def durable_variants(spec_dir: Optional[Path] = None) -> list[Variant]:
    """The durable comparison's own variants: every *.p2 of type_equations/oo7/durable/
    (HASH/ILIST/JOURNAL100, HASH/ILIST/WAL100: commits grouped by 100), built the users'
    way; the binary registers them only with --oo7_durable=1."""
    d = Path(spec_dir) if spec_dir else DURABLE_SPEC_DIR
    return [variant_from_spec(p, durable_only=True) for p in sorted(d.glob("*.p2"))] if d.is_dir() else []


def driver_sources(source_dir: Optional[str] = None) -> Path:
    """The directory of the C++ drivers (package data beside this module), checked."""
    return checked_sources(Path(source_dir) if source_dir else SOURCE_DIR, REQUIRED, "oo7")


def default_variants(spec_dir: Optional[Path] = None, lto_rows: bool = False) -> list[Variant]:
    """The manifest: every *.p2 of type_equations/oo7/ (none: HAND and SQLITE only), each
    built as the README tells users to; with lto_rows, each hash variant followed by its
    -flto twin (wants_lto_twin)."""
    d = Path(spec_dir) if spec_dir else SPEC_DIR
    if not d.is_dir():
        return []
    out = []
    for p in sorted(d.glob("*.p2")):
        v = variant_from_spec(p)
        out.append(v)
        if lto_rows and wants_lto_twin(v):
            out.append(lto_twin(v))
    return out


def build(build_dir: str, *, cc: str = "cc", cxx: str = "c++", opt: str = "-O2",
          jobs: Optional[int] = None, variants: Optional[list] = None,
          source_dir: Optional[str] = None, gen_opt: Optional[str] = None,
          say: Callable[[str], None] = lambda m: None) -> Path:
    """Generate every variant, compile it, its oo7_p2.cc driver, the shared sources and
    the reference systems; link build_dir/oo7_bench and return its path.

    A variant is built one of two ways, both linked into the one binary:
    - as the README's "A spec, built and used" tells users to: the generated .c and the
      runtime compiled as `p2gen build` compiles them into lib<prefix>.a, the driver (the
      user's program) compiled `opt` without LTO, with <PREFIX>_INLINE defined (the API
      compiled into the program), linked against the archive;
    - Variant.lto: the generated .c and the driver compiled with -flto, LTO at link.
    The runtime is compiled once, the users' way, and serves both."""
    src = driver_sources(source_dir)
    variants = list(variants) if variants is not None else default_variants()
    if variants and not (src / P2_DRIVER).exists():
        say(f"{src / P2_DRIVER} not found: the {len(variants)} generated variants are left out")
        variants = []
    bdir, gen_dir, obj_dir, gens = generate_variants(build_dir, variants, say, (
        "oo7_variants.json",
        [dict(name=v.name, mem=v.mem, spec=v.spec, prefix=v.prefix, lto=v.lto, files=list(v.files),
              durable_only=v.durable_only, open_env=list(v.open_env)) for v in variants]))
    cxxflags = driver_cxxflags(opt)                         # the user's program: no LTO
    oo7_h = src / "oo7.h"
    steps = []
    for rank, (v, g) in enumerate(gens):
        header = Path(g.header).read_text()
        defs = [f"-DP2_VARIANT={v.prefix}", f'-DP2_HEADER="{v.prefix}.h"', f'-DP2_NAME="{v.name}"',
                f'-DP2_MEM="{v.mem}"', f"-DP2_PERSISTENT={1 if v.persistent else 0}",
                f"-DP2_RANK={20 + rank}", f"-DP2_JOURNAL={1 if v.journal else 0}",
                f"-DP2_DURABLE_ONLY={1 if v.durable_only else 0}",
                # the files cold runs drop from the page cache and sizes count
                "-DP2_FILES=" + ",".join(json.dumps(f) for f in (v.files or ("oo7.db",))),
                # Q1 and T7 find an atomic part by id in one call where the spec keys
                # atomic_parts by id (lookup_id), else through the atom_by_id cursor
                f"-DP2_LOOKUP_ATOM_ID={int(f'{v.prefix}_atomic_parts_lookup_id(' in header)}"]
        if v.open_env:
            defs += [f"-DP2_OPEN_ENV={json.dumps(v.open_env[0])}",
                     f"-DP2_OPEN_ENV_VALUE={json.dumps(v.open_env[1])}"]
        steps.append((v.prefix, g, defs, v.lto))
    tasks, archives = users_build_steps(gen_dir, obj_dir, steps, cc=cc, cxx=cxx, cxxflags=cxxflags,
                                        driver=src / P2_DRIVER, driver_deps=[oo7_h],
                                        include_dirs=[src], opt=opt, gen_opt=gen_opt)
    sources = ["oo7_common.cc", "oo7_main.cc"] + present_sources(src, REFERENCE_SOURCES, say)
    tasks += source_steps(src, sources, obj_dir, cxx=cxx, cxxflags=cxxflags,
                          deps=[oo7_h])
    return compile_and_link(bdir, "oo7_bench", tasks, archives, LIBS, cxx=cxx, opt=opt,
                            lto=any(v.lto for v in variants), hint=LIB_HINT, jobs=jobs, say=say)


def _batch_note(context: dict) -> str:
    """The configuration line's words on batched hot runs (--oo7_hot_batch_us), if any."""
    us = context.get("oo7_hot_batch_us")
    if us in (None, "0"):
        return ""
    return (f", each a read-only operation repeated back to back for about {us} µs "
            "(timed as one span, reported per repetition)")


def _rounds_note(context: dict) -> str:
    """The configuration line's words for the rounds (run_hot_rounds), "" if none ran."""
    n = context.get("p2gen_hot_rounds")
    if not n:
        return ""
    return (f"; {', '.join(HOT10[:-1])} and {HOT10[-1]} hot also in {n} more processes, one "
            f"after the other (rounds), their hot time the median over the {n + 1}")


# ---------------------------------------------------------------------------------------
# run

@dataclass
class Options:
    size: str = DEFAULT["size"]
    fanouts: tuple = DEFAULT["fanouts"]
    seed: int = 1
    hot_runs: int = 3
    hot_batch_us: int = 200         # a read-only hot run repeats its operation for about this long
    update_runs: int = 1            # hot runs of an update operation, in a row (durable: 100)
    durable: bool = False           # also the durable-only systems (--oo7_durable=1)
    ops: Optional[str] = None       # "T1,Q1": only these
    filter: Optional[str] = None    # Google Benchmark's --benchmark_filter
    dir: Optional[str] = None
    extra: tuple = ()               # more flags for the binary (e.g. --oo7_inject_fault=SQLITE)
    readahead: Optional[str] = None  # "random": cold and warm runs advise readahead off
    repetitions: int = 1            # Google Benchmark's repetitions (tables take medians)

    def args(self) -> list:
        a = [f"--oo7_size={self.size}", f"--oo7_fanout={','.join(map(str, self.fanouts))}",
             f"--oo7_seed={self.seed}", f"--oo7_hot_runs={self.hot_runs}",
             f"--oo7_hot_batch_us={self.hot_batch_us}"]
        if self.update_runs != 1:
            a.append(f"--oo7_update_runs={self.update_runs}")
        if self.durable:
            a.append("--oo7_durable=1")
        if self.ops:
            a.append(f"--oo7_ops={self.ops}")
        if self.dir:
            a.append(f"--oo7_dir={self.dir}")
        if self.filter:
            a.append(f"--benchmark_filter={self.filter}")
        if self.readahead:
            a.append(f"--oo7_readahead={self.readahead}")
        if self.repetitions > 1:
            a.append(f"--benchmark_repetitions={self.repetitions}")
        return a + list(self.extra)


# OO7/<system>/<mem>/<size>_f<fanout>/<op>/<cold|warm|hot>[/iterations:N/manual_time]; the
# system name may hold a '/', so the fixed words anchor the match
NAME = re.compile(r"^OO7/(.+)/(persistent|transient)/([a-z]+)_f(\d+)/([A-Za-z0-9]+)/(cold|warm|hot)(?:/|$)")


def run(exe: str, opts: Options, json_out: str,
        say: Callable[[str], None] = lambda m: None) -> int:
    """Run the benchmark binary; Google Benchmark JSON goes to json_out. One progress line
    per finished benchmark. Returns the binary's exit status (3: a count mismatched or a
    system failed)."""
    def describe(m, vals, error):
        system, mem, size, fanout, op, phase = m.groups()
        if vals is None:
            info = error
        else:
            ms = vals.get(f"{phase}_ms", "?")
            info = (f"{ms} ms, count {vals.get('count', '?')}, faults "
                    f"{vals.get('major_faults', '?')} major {vals.get('minor_faults', '?')} minor")
        return f"{system + '/' + mem:<22} {size}_f{fanout:<3} {op:<6} {phase:<4} {info}"

    return run_benchmarks([str(exe)] + opts.args(), json_out, "OO7", NAME, describe, say)


def _gb_escape(text: str) -> str:
    """text matched literally by a Google Benchmark filter (an ECMAScript regex)."""
    return re.sub(r"([.^$|()\[\]{}*+?\\])", r"\\\1", text)


def hot_rounds_filter(rows: list) -> Optional[tuple[str, str]]:
    """What a round runs: (its filter, its --oo7_ops) -- the hot rows of HOT10 of every
    system and configuration whose row the main run wrote, but the reference systems other
    than HAND (they are in no ratio of the zero-cost table); None when no such row ran."""
    hot = [r for r in rows if r.op in HOT10 and r.phase == "hot" and not r.error
           and (r.system == "HAND" or r.system not in REFERENCE_SYSTEMS)]
    names = sorted({f"{r.system}/{r.mem}/{r.size}_f{r.fanout}" for r in hot})
    ops = [op for op in HOT10 if any(r.op == op for r in hot)]
    if not hot:
        return None
    return ("^OO7/(" + "|".join(_gb_escape(n) for n in names) + ")/(" + "|".join(ops) + ")/hot(/|$)",
            ",".join(ops))


def run_hot_rounds(exe: str, opts: Options, json_path: str, rounds: int,
                   say: Callable[[str], None] = lambda m: None) -> int:
    """`rounds` more processes of the binary, each running the zero-cost table's operations
    hot (hot_rounds_filter) once more; their rows join json_path's, so that the tables
    take the median over the main run and the rounds, and its context records how many
    rounds ran (p2gen_hot_rounds). Returns the first nonzero exit status of a round."""
    what = hot_rounds_filter(load_rows(json_path)[1])
    if rounds <= 0 or what is None:
        return 0
    flt, ops = what
    with open(json_path, encoding="utf-8") as f:
        data = json.load(f)
    rc = 0
    for k in range(1, rounds + 1):
        say(f"round {k} of {rounds}: {ops} hot, in a fresh process")
        part = f"{json_path}.round{k}"
        rk = run(exe, replace(opts, filter=flt, ops=ops), part, say=say)
        rc = rc or rk
        if os.path.exists(part):
            with open(part, encoding="utf-8") as f:
                data["benchmarks"].extend(json.load(f).get("benchmarks", []))
            os.remove(part)
    data.setdefault("context", {})["p2gen_hot_rounds"] = rounds
    with open(json_path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1)
    return rc


# ---------------------------------------------------------------------------------------
# results

@dataclass
class Row:
    system: str
    mem: str
    size: str
    fanout: int
    op: str
    phase: str                     # cold | warm | hot
    counters: dict = field(default_factory=dict)
    error: Optional[str] = None

    def get(self, k: str, default=None):
        return self.counters.get(k, default)

    @property
    def config(self) -> tuple:
        return (self.size, self.fanout)

    @property
    def ms(self) -> Optional[float]:
        return self.get(f"{self.phase}_ms")

    @property
    def persistent(self) -> bool:
        """It keeps its database in files (the binary's counter; the name's word else)."""
        p = self.get("persistent")
        return bool(p) if p is not None else self.mem == "persistent"


def load_rows(json_path: str) -> tuple[dict, list]:
    context, runs = load_benchmarks(json_path, NAME)
    rows = []
    for m, b, err in runs:
        system, mem, size, fanout, op, phase = m.groups()
        rows.append(Row(system, mem, size, int(fanout), op, phase, numbers(b), err))
    return context, rows


def failures(rows: list) -> list:
    return [f"{r.system}/{r.mem} {r.size}_f{r.fanout} {r.op} {r.phase}: {r.error}"
            for r in rows if r.error]


def consistency(rows: list) -> list:
    """Every system must return the same count for the same operation and configuration,
    cold and hot alike."""
    out = []
    by = {}
    for r in rows:
        if r.error or "count" not in r.counters:
            continue
        by.setdefault((r.size, r.fanout, r.op), []).append(r)
    for (size, fanout, op), rs in sorted(by.items(), key=lambda kv: (kv[0][0], kv[0][1], _op_index(kv[0][2]))):
        vals = {r.counters["count"] for r in rs}
        if len(vals) > 1:
            out.append(f"{size}_f{fanout} {op}: counts differ: " +
                       ", ".join(f"{r.system}/{r.mem} {r.phase}={r.counters['count']:.0f}" for r in rs))
    return out


def missing(rows: list) -> list:
    """Every system that ran at a size and fanout must have run every operation run there:
    its hot row, and a persistent system its cold and warm rows too."""
    out = []
    seen = {(r.system, r.mem, r.size, r.fanout, r.op, r.phase) for r in rows}
    keeps_files = {(r.system, r.mem) for r in rows if r.persistent}
    ops, systems = {}, {}
    for (s, m, size, f, op, _) in seen:
        ops.setdefault((size, f), set()).add(op)
        systems.setdefault((size, f), set()).add((s, m))
    for cfg, sms in systems.items():
        for s, m in sms:
            for op in ops[cfg]:
                for phase in PHASES if (s, m) in keeps_files else ("hot",):
                    if (s, m) + cfg + (op, phase) not in seen:
                        out.append(f"{s}/{m} {cfg[0]}_f{cfg[1]} {op}: no {phase} run")
    return sorted(set(out))


def not_cold(rows: list) -> list:
    """The cold runs that were not cold: more of the files stayed in the page cache than the
    binary allows (cold_proved = 0), e.g. on a file system that ignores DONTNEED."""
    return [f"{r.system}/{r.mem} {r.size}_f{r.fanout} {r.op}: not cold, "
            f"{r.get('resident_pct', 0):.0f}% of the files' pages were cached before the open"
            for r in rows if r.phase == "cold" and not r.error and r.get("cold_proved") == 0]


def _op_index(op: str) -> int:
    return OPS.index(op) if op in OPS else len(OPS)


# the per-run counters the summary keeps, by phase: its key -> the binary's counter
USAGE = (("major", "major_faults"), ("minor", "minor_faults"), ("read", "read_bytes"),
         ("written", "write_bytes"))


def summarize(rows: list) -> dict:
    """(system, mem, size, fanout, op) -> medians over repeated rows: {"cold", "warm",
    "hot": ms; "count"; "major", "minor", "read", "written": {phase: faults or bytes per run};
    "resident_pct", "resident_after_pct": of the cold run; "not_cold": True if a cold run
    was not proved cold; "persistent"}; (system, mem, size, fanout, None) -> build and
    file-size counters."""
    groups = {}
    for r in rows:
        if r.error:
            continue
        groups.setdefault((r.system, r.mem, r.size, r.fanout, r.op), []).append(r)
    out = {}
    med = median_of

    for key, rs in groups.items():
        v = {"persistent": any(r.persistent for r in rs)}
        for k, counter in USAGE:
            v[k] = {}
        for phase in PHASES:
            ps = [r for r in rs if r.phase == phase]
            ms = [r.ms for r in ps if r.ms is not None]
            if ms:
                v[phase] = statistics.median(ms)
            for k, counter in USAGE:
                x = med(ps, counter)
                if x is not None:
                    v[k][phase] = x
        counts = [r.get("count") for r in rs if r.get("count") is not None]
        if counts:
            v["count"] = statistics.median(counts)
        cold = [r for r in rs if r.phase == "cold"]
        for k in ("resident_pct", "resident_after_pct"):
            x = med(cold, k)
            if x is not None:
                v[k] = x
        v["not_cold"] = any(r.get("cold_proved") == 0 for r in cold)
        for k in ("connections", "pairs"):
            x = med(rs, k)
            if x is not None:
                v[k] = x
        out[key] = v
        bkey = key[:4] + (None,)
        b = out.setdefault(bkey, {})
        b["persistent"] = b.get("persistent", False) or v["persistent"]
        for k in ("build_s", "db_MB", "raw_MB", "size_ratio"):
            vals = [r.get(k) for r in rs if r.get(k) is not None]
            if vals and k not in b:
                b[k] = statistics.median(vals)
        # the files as built: the read-only operations' rows (an update leaves the file as
        # large as it grew)
        for k in ("file_MB", "alloc_MB"):
            vals = [r.get(k) for r in rs if r.get(k) is not None and r.op not in UPDATES]
            if vals and k not in b:
                b[k] = statistics.median(vals)
    return out


def _systems(summary: dict, context: Optional[dict] = None) -> list:
    """(system, mem) in the binary's order (HAND first, then by registration rank)."""
    keys = {(k[0], k[1]) for k in summary}
    order = {}
    for i, item in enumerate((context or {}).get("oo7_systems", "").split(",")):
        if "/" in item:
            s, m = item.rsplit("/", 1)
            order[(s, m)] = i
    return sorted(keys, key=lambda k: (k[0] != "HAND", order.get(k, 1000), k))


def _configs(summary: dict) -> list:
    return sorted({(k[2], k[3]) for k in summary}, key=lambda c: (SIZES.index(c[0]) if c[0] in SIZES else 9, c[1]))


def fmt_ms(x: Optional[float]) -> str:
    """Milliseconds with three significant digits (OO7's operations span 1 µs to seconds)."""
    return fmt_steps(x, ((1000, "{:,.0f}"), (100, "{:.0f}"), (10, "{:.1f}"), (1, "{:.2f}"),
                         (0.01, "{:.3f}"), (None, "{:.2g}")))


def _sig(x: float) -> str:
    """Three significant digits, thousands separated."""
    return fmt_steps(x, ((100, "{:,.0f}"), (10, "{:.1f}"), (1, "{:.2f}"), (None, "{:.3g}")))


def _fmt_ratio(r: Optional[float]) -> str:
    return fmt_steps(r, ((100, "{:,.0f}×"), (10, "{:.1f}×"), (None, "{:.2f}×")))


NA = "n/a"   # a transient system's cold and warm: there are no files to be cold or warm


def _keeps_files(v: dict, mem: str) -> bool:
    """A summary entry's system keeps files (summarize says; else the name's word)."""
    return v.get("persistent", mem == "persistent")


def _phase_cells(v: dict, mem: str, fmt: Callable, get: Callable) -> list:
    """cold, warm, hot cells of one (system, operation): n/a for the fresh temperatures of
    a transient system, — where nothing was measured."""
    cells = []
    for phase in PHASES:
        if phase in FRESH and not _keeps_files(v, mem):
            cells.append(NA)
        else:
            x = get(phase)
            cells.append("—" if x is None else fmt(x))
    return cells


def _count(x: float) -> str:
    return f"{x:,.0f}" if x >= 10 else f"{x:.3g}"


def readahead_note(context: dict) -> str:
    """What a major fault can read on the machine that ran (the device's readahead)."""
    kb = context.get("oo7_read_ahead_kb")
    try:
        kb = int(kb)
    except (TypeError, ValueError):
        kb = -1
    device = ("The readahead of the database's device is unknown." if kb < 0 else
              f"The database's device reads ahead up to {kb:,} KB per miss (read_ahead_kb).")
    if context.get("oo7_readahead") == "random":
        return (device + " The fresh processes advised it off (--oo7_readahead=random: "
                "MADV_RANDOM on the data managers' mappings, POSIX_FADV_RANDOM on their "
                "descriptors): a cold run reads about the pages it touches.")
    return (device + " The data managers keep the kernel's default advice: one major fault "
            "can bring in many pages, so compare the bytes a cold run read more than its "
            "faults (the binary's --oo7_readahead=random turns readahead off).")


def render_table(summary: dict, context: Optional[dict] = None) -> str:
    """Markdown, per size and fanout: one row per operation, per system cold / warm / hot
    median ms, then hot time relative to HAND; the cold / warm / hot protocol table
    (PROTOCOL_OPS: times, page faults, resident fraction, bytes written per commit); the
    zero-cost layering table; then the build time, database and file size table."""
    context = context or {}
    systems = _systems(summary, context)
    ref = next(((s, m) for s, m in systems if s == "HAND"), systems[0] if systems else None)
    lines = []
    for size, fanout in _configs(summary):
        lines.append(f"### {size}, fanout {fanout}")
        lines.append("")
        lines.append("Time in ms, **cold / warm / hot**, and the count every system returned. Cold: "
                     "a fresh process, the files dropped from the page cache; warm: a fresh "
                     "process, the files in the page cache but not mapped; hot: the mean of the "
                     f"runs in the same open. A transient system has no files: its cold and warm "
                     f"are {NA}. Update operations are restored after every run.")
        lines.append("")
        lines.append("| op | count | " + " | ".join(f"{s} {m}" for s, m in systems) + " |")
        lines.append("|---|---:|" + "---:|" * len(systems))
        ops = sorted({k[4] for k in summary if k[2:4] == (size, fanout) and k[4]}, key=_op_index)
        flagged = False
        for op in ops:
            cells = []
            count = None
            for s, m in systems:
                v = summary.get((s, m, size, fanout, op))
                if not v:
                    cells.append("—")
                    continue
                if count is None:
                    count = v.get("count")
                c = _phase_cells(v, m, fmt_ms, v.get)
                if v.get("not_cold"):
                    c[0] += "†"
                    flagged = True
                cells.append(" / ".join(c))
            lines.append(f"| {op} | {'—' if count is None else f'{count:,.0f}'} | " + " | ".join(cells) + " |")
        lines.append("")
        if flagged:
            lines.append("† not cold: more than 1% of the files' pages were still in the page cache "
                         "when the fresh process opened them (a file system that ignores "
                         "posix_fadvise DONTNEED, such as tmpfs); the time is not a cold one.")
            lines.append("")
        others = [k for k in systems if k != ref]
        if ref and others:
            lines.append(f"Hot time relative to {ref[0]} {ref[1]}: above 1 is slower.")
            lines.append("")
            lines.append("| op | " + " | ".join(f"{s} {m}" for s, m in others) + " |")
            lines.append("|---|" + "---:|" * len(others))
            for op in ops:
                rv = summary.get(ref + (size, fanout, op), {}).get("hot")
                cells = [_fmt_ratio(_ratio(summary.get((s, m, size, fanout, op), {}).get("hot"), rv))
                         for s, m in others]
                lines.append(f"| {op} | " + " | ".join(cells) + " |")
            lines.append("")
        lines.append(render_protocol(summary, size, fanout, systems, context))
        lines.append(render_hot10(summary, size, fanout, systems, ref,
                                  rounds=int(context.get("p2gen_hot_rounds") or 0)))
        lines.append("Build and size: build = generating and loading the whole database (s); "
                     "DB = the files of a persistent system (allocated), the heap in use of a transient one; "
                     "raw = what the objects hold (attributes, 8 bytes per reference, texts); "
                     "file = the files' apparent size (st_size) and what they occupy on disk (st_blocks: "
                     "a file grown by ftruncate has holes).")
        lines.append("")
        lines.append("| system | build s | DB MB | raw MB | DB / raw | file MB | allocated MB |")
        lines.append("|---|---:|---:|---:|---:|---:|---:|")
        for s, m in systems:
            b = summary.get((s, m, size, fanout, None))
            if not b:
                continue
            files = [(_sig(b[k]) if k in b else "—") if _keeps_files(b, m) else NA
                     for k in ("file_MB", "alloc_MB")]
            lines.append(f"| {s} {m} | {_sig(b.get('build_s', 0))} | {_sig(b.get('db_MB', 0))} | "
                         f"{_sig(b.get('raw_MB', 0))} | {b.get('size_ratio', 0):.2f}× | "
                         f"{files[0]} | {files[1]} |")
        lines.append("")
    return "\n".join(lines)


def _pct(x: Optional[float]) -> str:
    if x is None:
        return "—"
    return f"{x:.0f}%" if x >= 1 or x == 0 else f"{x:.2g}%"


def render_protocol(summary: dict, size: str, fanout: int, systems: list,
                    context: Optional[dict] = None) -> str:
    """The cold / warm / hot table of PROTOCOL_OPS: per operation and system the three
    times, the share of the files cached before the cold run (its proof) and after it (what
    the run and its open read, readahead included), major and minor page faults per run,
    the KB the cold run read from storage (read_bytes) and the KB one commit writes
    (write_bytes, measured on clean files: cold and warm)."""
    rows = []
    for op in PROTOCOL_OPS:
        for s, m in systems:
            v = summary.get((s, m, size, fanout, op))
            if v:
                rows.append((op, s, m, v))
    if not rows:
        return ""
    lines = ["Cold / warm / hot: per run, ms; the share of the files' pages in the page cache "
             "before the cold run's open (mincore: 0% proves it cold) and after its run (cached "
             "after: what the open and the run read, readahead included); major and minor page "
             "faults (getrusage; SQLite reads with pread, so its misses are no faults); KB the "
             "cold run read from storage (/proc/self/io read_bytes); KB written per commit = "
             "write_bytes (pages made dirty, journal included), on files that start clean "
             "(cold / warm). " + readahead_note(context or {}), "",
             "| op | system | cold ms | warm ms | hot ms | cached before cold | cached after cold "
             "| major faults c / w / h | minor faults c / w / h | KB read cold | KB written c / w |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for op, s, m, v in rows:
        times = _phase_cells(v, m, fmt_ms, v.get)
        if v.get("not_cold"):
            times[0] += "†"
        major = " / ".join(_phase_cells(v, m, _count, v.get("major", {}).get))
        minor = " / ".join(_phase_cells(v, m, _count, v.get("minor", {}).get))
        if _keeps_files(v, m):
            cached, read = (_pct(v.get(k)) for k in ("resident_pct", "resident_after_pct"))
            rb = v.get("read", {}).get("cold")
            per = "—" if rb is None else _sig(rb / 1024)
            wb = v.get("written", {})
            written = " / ".join("—" if wb.get(p) is None else _sig(wb[p] / 1024) for p in FRESH)
        else:
            cached = read = per = NA
            written = f"{NA} / {NA}"
        lines.append(f"| {op} | {s} {m} | " + " | ".join(times) +
                     f" | {cached} | {read} | {major} | {minor} | {per} | {written} |")
    lines.append("")
    return "\n".join(lines)


def hot10(summary: dict, size: str, fanout: int, ref: tuple) -> list:
    """The zero-cost layering rows at one size/fanout: (system, mem, op, hot ms, its ratio to ref,
    the -lto twin's hot ms, its ratio to ref, as built / -lto) for every generated
    variant built the users' way and every operation of HOT10; None where not measured."""
    rv = {op: summary.get(ref + (size, fanout, op), {}).get("hot") for op in HOT10}
    out = []
    for s, m in sorted({(k[0], k[1]) for k in summary if k[2:4] == (size, fanout)}):
        if s in REFERENCE_SYSTEMS or s.endswith(LTO_SUFFIX):
            continue
        for op in HOT10:
            t = summary.get((s, m, size, fanout, op), {}).get("hot")
            if t is None:
                continue
            lt = summary.get((s + LTO_SUFFIX, m, size, fanout, op), {}).get("hot")
            out.append((s, m, op, t, _ratio(t, rv[op]), lt, _ratio(lt, rv[op]), _ratio(t, lt)))
    return out


def render_hot10(summary: dict, size: str, fanout: int, systems: list, ref: Optional[tuple],
                 rounds: int = 0) -> str:
    """The zero-cost layering table: T6, T7, Q1, Q2 hot per generated variant, built as the README
    tells users to, against HAND (target ≤ 1.5×), and the same variant built with -flto;
    `rounds`: how many more processes ran them (run_hot_rounds)."""
    if not ref:
        return ""
    rows = hot10(summary, size, fanout, ref)
    if not rows:
        return ""
    order = {k: i for i, k in enumerate(systems)}
    rows.sort(key=lambda r: (order.get((r[0], r[1]), 1000), HOT10.index(r[2])))
    per = (f"hot, the median over {rounds + 1} processes: the main run and {rounds} rounds"
           if rounds else "hot")
    lines = [f"Zero-cost layering, the hot pointer-chasing operations: µs per run ({per}) of every generated "
             f"variant built as the README tells users to (`p2gen build`'s library, the program "
             f"compiled -O2 with `<PREFIX>_INLINE`, no LTO), its ratio to {ref[0]} {ref[1]} "
             f"(target ≤ {TARGET10:g}×), and the same variant built with `-flto` (hash variants).", "",
             f"| system | op | hot µs | × {ref[0]} | ≤ {TARGET10:g}× | -flto hot µs | -flto × {ref[0]} "
             "| as built / -flto |",
             "|---|---|---:|---:|:-:|---:|---:|---:|"]
    for s, m, op, t, r, lt, lr, ab in rows:
        met = "—" if r is None else ("yes" if r <= TARGET10 else "no")
        lines.append(f"| {s} {m} | {op} | {_sig(t * 1000)} | {_fmt_ratio(r)} | {met} | "
                     f"{'—' if lt is None else _sig(lt * 1000)} | {_fmt_ratio(lr)} | {_fmt_ratio(ab)} |")
    lines.append("")
    return "\n".join(lines)


PALETTE = ("0.3", "tab:red", "tab:orange", "tab:blue", "tab:green", "tab:purple", "tab:brown",
           "tab:pink", "tab:olive", "tab:cyan", "tab:gray")


def render_plots(summary: dict, out_dir: str, context: Optional[dict] = None) -> list:
    """Per size/fanout: oo7_hot_<size>_f<fanout>.png (hot time per operation per system,
    log scale) and oo7_cold_hot_<size>_f<fanout>.png (cold, warm and hot time per
    operation and system). Returns the PNG paths."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    systems = _systems(summary, context)
    paths = []
    for size, fanout in _configs(summary):
        ops = sorted({k[4] for k in summary if k[2:4] == (size, fanout) and k[4]}, key=_op_index)
        hot_ops = ops
        width = 0.8 / max(1, len(systems))
        # figure 1: hot time per operation
        fig, ax = plt.subplots(figsize=(max(8, 0.55 * len(hot_ops) * max(1, len(systems)) ** 0.5 + 4), 4.8))
        for i, (s, m) in enumerate(systems):
            xs, ys = [], []
            for j, op in enumerate(hot_ops):
                v = summary.get((s, m, size, fanout, op), {}).get("hot")
                if v:
                    xs.append(j - 0.4 + width * (i + 0.5))
                    ys.append(v)
            if xs:
                ax.bar(xs, ys, width=width, color=PALETTE[i % len(PALETTE)], label=f"{s} {m}")
        ax.set_yscale("log")
        ax.set_xticks(range(len(hot_ops)))
        ax.set_xticklabels(hot_ops)
        ax.set_ylabel("hot time per run, ms (log)")
        ax.set_title(f"OO7 {size}, fanout {fanout}: hot runs (mean of the runs after the cold one)")
        ax.grid(True, axis="y", which="both", alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        p = os.path.join(out_dir, f"oo7_hot_{size}_f{fanout}.png")
        fig.savefig(p, dpi=110)
        plt.close(fig)
        paths.append(p)
        # figure 2: cold, warm, hot, one panel per system
        n = max(1, len(systems))
        fig, axes = plt.subplots(n, 1, figsize=(max(8, 0.45 * len(ops) + 3), 2.6 * n), squeeze=False)
        for i, (s, m) in enumerate(systems):
            ax = axes[i][0]
            xs = range(len(ops))
            for j, (phase, color) in enumerate(zip(PHASES, ("tab:blue", "tab:green", "tab:orange"))):
                ys = [summary.get((s, m, size, fanout, op), {}).get(phase) for op in ops]
                ax.bar([x - 0.27 + 0.27 * j for x, y in zip(xs, ys) if y], [y for y in ys if y],
                       width=0.27, color=color, label=phase)
            ax.set_yscale("log")
            ax.set_xticks(list(xs))
            ax.set_xticklabels(ops, fontsize=8)
            ax.set_ylabel("ms (log)")
            ax.set_title(f"{s} {m}", fontsize=9)
            ax.grid(True, axis="y", which="both", alpha=0.3)
            if i == 0:
                ax.legend(fontsize=8)
        fig.suptitle(f"OO7 {size}, fanout {fanout}: cold, warm and hot per operation", fontsize=10)
        fig.tight_layout()
        p = os.path.join(out_dir, f"oo7_cold_hot_{size}_f{fanout}.png")
        fig.savefig(p, dpi=110)
        plt.close(fig)
        paths.append(p)
    return paths


def report(json_path: str, out_dir: str, *, plots: bool = True,
           command: Optional[str] = None) -> tuple[str, list, list]:
    """Read the JSON, write out_dir/oo7.md (and the PNGs). Returns (markdown, pngs,
    problems): failed runs, counts that differ, missing cold or hot rows."""
    context, rows = load_rows(json_path)
    problems = failures(rows) + consistency(rows) + missing(rows)
    notes = not_cold(rows)
    summary = summarize(rows)
    md = ["# OO7: generated data managers vs hand-written pointers and SQLite", ""] + command_lines(command)
    md.append(f"Configuration: size {context.get('oo7_size', '?')}, fanout "
              f"{context.get('oo7_fanout', '?')}, seed {context.get('oo7_seed', '?')}, "
              f"{context.get('oo7_hot_runs', '?')} hot runs{_batch_note(context)}{_rounds_note(context)}; "
              f"{host_text(context, mhz=True)}. "
              "Cold and warm (persistent systems): the driver closes the database and runs the "
              "operation once in a fresh process of the benchmark binary, which first drops the "
              "files from the page cache (fdatasync, posix_fadvise DONTNEED; mincore proves it) "
              "for cold, or reads them into it and flushes them from the CPU caches for warm, "
              "then opens them; hot: the mean of the runs in the driver's open after one "
              "untimed run. The data managers keep the kernel's default readahead, so one major "
              "fault may read many pages: the share of the files a cold run read is the column "
              "to compare. Every run is one transaction, commit included; median over repeated rows.")
    md.append("")
    md.append(render_table(summary, context))
    md += bullets("**Not cold** (flagged †; the file system kept the files cached):", notes)
    md += problems_lines(problems)
    pngs = plot_files(out_dir, lambda: render_plots(summary, out_dir, context)) if plots else []
    if plots:
        md += image_lines(pngs)
    return write_report(out_dir, "oo7.md", md), pngs, problems


# ---------------------------------------------------------------------------------------
# the durable comparison

def durable_filter() -> str:
    """--benchmark_filter of the durable comparison: DURABLE_SYSTEMS' hot runs (the names
    hold only letters, digits, '/' and '-': no escaping)."""
    return "^OO7/(" + "|".join(n for n, _ in DURABLE_SYSTEMS) + ")/persistent/.*/hot"


def missing_hot(rows: list) -> list:
    """A durable run has hot rows only: every system that ran at a size and fanout must
    have one for every operation run there."""
    seen = {(r.system, r.mem, r.size, r.fanout, r.op) for r in rows if r.phase == "hot"}
    ops, systems = {}, {}
    for (s, m, size, f, op) in seen:
        ops.setdefault((size, f), set()).add(op)
        systems.setdefault((size, f), set()).add((s, m))
    return sorted(f"{s}/{m} {cfg[0]}_f{cfg[1]} {op}: no hot run"
                  for cfg, sms in systems.items() for s, m in sms for op in ops[cfg]
                  if (s, m) + cfg + (op,) not in seen)


def render_durable(summary: dict, context: Optional[dict] = None) -> str:
    """Per size/fanout: hot ms per run of every durable system and operation, KB written
    per run, and the ratios of DURABLE_RATIOS."""
    context = context or {}
    runs = context.get("oo7_update_runs", "?")
    lines = []
    for size, fanout in _configs(summary):
        here = {k[0] for k in summary if k[1] == "persistent" and k[2:4] == (size, fanout)}
        names = [n for n, _ in DURABLE_SYSTEMS if n in here] + \
                sorted(n for n in here if n not in {d for d, _ in DURABLE_SYSTEMS})
        ops = sorted({k[4] for k in summary if k[2:4] == (size, fanout) and k[4]}, key=_op_index)
        if not names or not ops:
            continue

        def v(n, op):
            return summary.get((n, "persistent", size, fanout, op), {})

        lines += [f"## {size}, fanout {fanout}", "",
                  f"Hot ms per run: the mean of {runs} runs in a row, each run one transaction "
                  "(the operation and its commit); the systems committing per 100 make one "
                  "commit (and fsync) per 100 runs.", "",
                  "| op | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
        for op in ops:
            lines.append(f"| {op} | " + " | ".join(fmt_ms(v(n, op).get("hot")) for n in names) + " |")
        lines += ["", "KB written per run: write_bytes of /proc/self/io over the runs, divided by "
                  "the runs (the pages a run makes dirty in the page cache, journal and log "
                  "included; a page dirtied again before it was written back is not counted "
                  "again, so a group of 100 shares its pages).", "",
                  "| op | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
        for op in ops:
            cells = []
            for n in names:
                w = v(n, op).get("written", {}).get("hot")
                cells.append("—" if w is None else _sig(w / 1024))
            lines.append(f"| {op} | " + " | ".join(cells) + " |")
        ratios = [(a, b, what) for a, b, what in DURABLE_RATIOS if a in here and b in here]
        if ratios:
            lines += ["", "Ratios of hot times (above 1: the second system is faster):", "",
                      "| op | " + " | ".join(what for _, _, what in ratios) + " |",
                      "|---|" + "---:|" * len(ratios)]
            for op in ops:
                lines.append(f"| {op} | " + " | ".join(
                    _fmt_ratio(_ratio(v(a, op).get("hot"), v(b, op).get("hot"))) for a, b, _ in ratios) + " |")
        lines.append("")
    described = [f"- `{n}`: {what}" for n, what in DURABLE_SYSTEMS]
    return "\n".join(["Systems:", ""] + described + [""] + lines)


def report_durable(json_path: str, out_dir: str, *, command: Optional[str] = None) -> tuple[str, list]:
    """Read the JSON of a --durable run, write out_dir/oo7_durable.md. Returns (markdown,
    problems): failed runs, counts that differ, missing hot rows."""
    context, rows = load_rows(json_path)
    problems = failures(rows) + consistency(rows) + missing_hot(rows)
    summary = summarize(rows)
    md = ["# OO7 durable updates: record log, page journal, SQLite WAL, LMDB", ""] + command_lines(command)
    md += [f"Configuration: size {context.get('oo7_size', '?')}, fanout {context.get('oo7_fanout', '?')}, "
           f"seed {context.get('oo7_seed', '?')}, {context.get('oo7_update_runs', '?')} runs in a row per "
           f"operation; {host_text(context)}, load average {load_text(context, '.1f')}. SM1 runs make new parts each (rounds), the "
           "SM2s that restore follow the row untimed; SM2's row deletes what a row of untimed SM1s "
           "made before it.", ""]
    md.append(render_durable(summary, context))
    md += problems_lines(problems)
    return write_report(out_dir, "oo7_durable.md", md), problems


def _check_size(size: Optional[str]) -> None:
    if size is not None and size not in SIZES:
        raise BuildError(f"--size: one of {', '.join(SIZES)}, not {size!r}")


def durable_command(*, size, fanout, seed, out, build_dir, filter, ops, update_runs, db_dir,
                    cc, cxx, jobs, render, say=print) -> int:
    """`p2gen bench oo7 --durable`: the variants and references of DURABLE_SYSTEMS, the
    update operations run `update_runs` (100) times in a row, hot; writes
    oo7_durable.{json,md}."""
    _check_size(size)
    out, json_path, cmdline = command_outputs(out, "oo7_durable.json")
    if render:
        return say_report(say, *report_durable(render, out, command=cmdline))
    names = {n for n, _ in DURABLE_SYSTEMS}
    variants = [v for v in default_variants() if v.name in names and v.persistent] + durable_variants()
    opts = Options(size=size or DEFAULT["size"], fanouts=ints(fanout, "--fanout") or DEFAULT["fanouts"],
                   seed=seed, hot_runs=1, update_runs=update_runs or DURABLE_UPDATE_RUNS, durable=True,
                   ops=ops or ",".join(DURABLE_OPS), filter=filter or durable_filter(), dir=db_dir)
    exe = build(build_dir or os.path.join("bench", "build", "oo7"), cc=cc, cxx=cxx, jobs=jobs,
                variants=variants, say=say)
    def write(j):
        text, problems = report_durable(j, out, command=cmdline)
        return text, [os.path.join(out, "oo7_durable.md")], problems
    return _run_and_report(exe, opts, json_path, write, say)


# ---------------------------------------------------------------------------------------
# hardware vs software pointers (`--pointers`): the same equation over each memory and
# link representation of the manifest (HASH/ILIST: offsets; HASH/ILIST/MAPPED: raw
# addresses at the file's recorded base) and HAND, and the mapped variants with the
# relocation of a share of the file forced at every open, as QuickStore measured it (its
# in-memory relocation, QS-CR: +38% on small cold T1 with every page relocated)

RELOC_PCTS = (5, 20, 50, 100)
POINTER_OPS = ("T1",)
POINTER_PREFIX = "HASH/ILIST"   # the variants compared: this equation, every memory
RELOC_TARGET = 1.40             # forced relocation of 100%: cold open + T1 at most +40%
# 32-bit links (<NAME>/OFFSET32 against <NAME>): cold T1 reads at least 25% fewer pages,
# from a file at most 0.8x the size
NARROW_PAGES_TARGET, NARROW_FILE_TARGET = 0.75, 0.80
POINTER_REPETITIONS = 5         # each cold run is one process: medians of this many


def relocating_twins(v: Variant, work: Path) -> list[Variant]:
    """A variant whose file layer can relocate (its signature's `relocate_param`): its
    spec with that parameter on (a copy in `work`), once per share of RELOC_PCTS, each
    opened with the layer's `relocate_env` set to the share (rows <NAME>/RELOC<P>).
    None for a variant whose files' layers cannot relocate."""
    from ...build import planned
    checked = planned(v.spec)
    layers = {c.mem.layer for c in checked.containers if c.persistent and c.mem.layer.relocate_param}
    if not layers:
        return []
    text = Path(v.spec).read_text()
    for layer in layers:
        text = re.sub(rf"\b{layer.name}\((?!\s*\))", f"{layer.name}({layer.relocate_param} = true, ", text)
    work.mkdir(parents=True, exist_ok=True)
    spec = work / (Path(v.spec).stem + "_relocate.p2")
    if not spec.exists() or spec.read_text() != text:
        spec.write_text(text)
    env = next(iter(layers)).relocate_env
    return [Variant(f"{v.name}/RELOC{p}", v.mem, str(spec), f"{v.prefix}_reloc{p}", v.journal,
                    files=v.files, open_env=(env, str(p))) for p in RELOC_PCTS]


def mapped_twin(v: Variant, work: Path) -> Optional[Variant]:
    """A variant over a file layer whose references are offsets (`maps_anywhere`), over the
    registry's layer that maps its file at a fixed address and can relocate it instead
    (<NAME>/MAPPED: the same equation with raw addresses; a copy of the spec in `work`),
    or None."""
    from ...build import planned
    from ...layers import LAYERS
    fixed = next((l for l in LAYERS.values() if l.realm == "mem" and l.relocate_param), None)
    checked = planned(v.spec)
    mems = {c.mem.layer for c in checked.containers if c.persistent}
    if fixed is None or len(mems) != 1 or not next(iter(mems)).maps_anywhere:
        return None
    # a file of narrower links has no raw-address twin: an address is 64 bits, so its
    # twin would be the 64-bit variant's
    if any(c.mem.layer.link_bits(c.mem) < 64 for c in checked.containers if c.persistent):
        return None
    name = next(iter(mems)).name
    text = "".join(line if line.lstrip().startswith("//") else re.sub(rf"\b{name}\b", fixed.name, line)
                   for line in Path(v.spec).read_text().splitlines(keepends=True))
    work.mkdir(parents=True, exist_ok=True)
    stem = Path(v.spec).stem
    spec = work / ((stem.replace(name, fixed.name) if name in stem else f"{stem}_{fixed.name}") + ".p2")
    if not spec.exists() or spec.read_text() != text:
        spec.write_text(text)
    return Variant(f"{v.name}/MAPPED", v.mem, str(spec), f"{v.prefix}_{fixed.name}", v.journal,
                   files=v.files)


def pointer_variants(build_dir: Path) -> list[Variant]:
    """The manifest's persistent, unjournalled POINTER_PREFIX variants; each mapped one
    followed by its relocation rows (relocating_twins); each over offsets that the
    manifest has no <NAME>/MAPPED of followed by that twin (mapped_twin: the clustered
    layout, whose links between elements are addresses when mapped) and its rows."""
    work = build_dir / "pointer_specs"
    manifest = [v for v in default_variants()
                if v.persistent and not v.journal and (v.name == POINTER_PREFIX or v.name.startswith(POINTER_PREFIX + "/"))]
    names = {v.name for v in manifest}
    out = []
    for v in manifest:
        out.append(v)
        twins = relocating_twins(v, work)
        if not twins and v.name + "/MAPPED" not in names:
            m = mapped_twin(v, work)
            if m is not None:
                out.append(m)
                twins = relocating_twins(m, work)
        out += twins
    return out


def report_pointers(json_path: str, out_dir: str, *, command: Optional[str] = None) -> tuple[str, list]:
    """The --pointers tables (oo7_pointers.md): per operation and system the cold run, the
    cold open (where a relocation happens), their sum and its ratio to the system the
    relocation rows come from, major faults of both, and the hot run. Returns (markdown,
    problems)."""
    context, rows = load_rows(json_path)
    problems = failures(rows) + consistency(rows)
    md = ["# OO7: hardware vs software pointers, and relocation", ""] + command_lines(command)
    md += [f"H{host_text(context)[1:]}, load average {load_text(context, '.1f')}. "
           "Cold: one run in a fresh process with the files dropped from the page cache; the open "
           "is timed apart from the run (a relocated mapped file is relocated at open: the pages "
           "holding addresses are read, their addresses moved, in a private copy). "
           "`/RELOC<P>`: P % of the file relocated by force at every open "
           "(`P2_MAPPED_RELOCATE`; 100: the file mapped at another base, every address moved; "
           "less: the addresses in P % of the pages rewritten in place).", ""]

    med = median_of
    by = {}
    for r in rows:
        if not r.error:
            by.setdefault((r.size, r.fanout, r.op), {}).setdefault(r.system, []).append(r)
    for (size, fanout, op), systems in sorted(by.items(), key=lambda kv: (kv[0][0], kv[0][1], _op_index(kv[0][2]))):
        md += [f"## {op}, {size}, fanout {fanout}", "",
               "| system | cold open ms | cold run ms | open + run ms | vs base | open major faults | "
               "run major faults | hot ms |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
        total, notes = {}, []
        for name, rs in systems.items():
            cold = [r for r in rs if r.phase == "cold"]
            o, c = med(cold, "cold_open_ms"), med(cold, "cold_ms")
            total[name] = (o or 0) + c if c is not None else None
        for name, rs in systems.items():
            cold = [r for r in rs if r.phase == "cold"]
            hot = [r for r in rs if r.phase == "hot"]
            base = re.sub(r"/RELOC\d+$", "", name)
            ratio = _ratio(total.get(name), total.get(base)) if base != name else None
            if name.endswith("/RELOC100") and ratio is not None:
                notes.append(f"{name}: cold open + {op} {ratio:.2f}× {base} (target ≤ {RELOC_TARGET:.2f}×: "
                             f"{'met' if ratio <= RELOC_TARGET else 'missed'})")
            wide = name[:-len("/OFFSET32")] if name.endswith("/OFFSET32") else None
            if op == "T1" and wide in systems:
                wcold = [r for r in systems[wide] if r.phase == "cold"]
                pages = _ratio(med(cold, "major_faults"), med(wcold, "major_faults"))
                size = _ratio(med(cold, "alloc_MB"), med(wcold, "alloc_MB"))
                if pages is not None and size is not None:
                    met = pages <= NARROW_PAGES_TARGET and size <= NARROW_FILE_TARGET
                    notes.append(f"{name}: cold {op} major faults {pages:.2f}× {wide}, file {size:.2f}× "
                                 f"(targets ≤ {NARROW_PAGES_TARGET:.2f}× and ≤ {NARROW_FILE_TARGET:.2f}×: "
                                 f"{'met' if met else 'missed'}; pages only count with readahead off)")
            md.append(f"| {name} | {fmt_ms(med(cold, 'cold_open_ms'))} | {fmt_ms(med(cold, 'cold_ms'))} | "
                      f"{fmt_ms(total.get(name))} | {_fmt_ratio(ratio)} | "
                      f"{_sig(med(cold, 'open_major_faults') or 0)} | {_sig(med(cold, 'major_faults') or 0)} | "
                      f"{fmt_ms(med(hot, 'hot_ms'))} |")
        md += [""] + [f"- {n}" for n in notes] + ([""] if notes else [])
    md += problems_lines(problems)
    return write_report(out_dir, "oo7_pointers.md", md), problems


def pointers_command(*, size, fanout, seed, out, build_dir, filter, ops, hot_runs, db_dir,
                     cc, cxx, jobs, render, readahead, hot_batch_us=Options.hot_batch_us,
                     say=print) -> int:
    """`p2gen bench oo7 --pointers`: pointer_variants and HAND, POINTER_OPS (cold, warm,
    hot); writes oo7_pointers.{json,md}."""
    _check_size(size)
    out, json_path, cmdline = command_outputs(out, "oo7_pointers.json")
    if render:
        return say_report(say, *report_pointers(render, out, command=cmdline))
    bdir = Path(build_dir or os.path.join("bench", "build", "oo7"))
    variants = pointer_variants(bdir)
    names = [v.name for v in variants]
    opts = Options(size=size or DEFAULT["size"], fanouts=ints(fanout, "--fanout") or DEFAULT["fanouts"],
                   seed=seed, hot_runs=hot_runs, hot_batch_us=hot_batch_us,
                   ops=ops or ",".join(POINTER_OPS), dir=db_dir,
                   filter=filter or "^OO7/(HAND/transient|(" + "|".join(names) + ")/persistent)/",
                   readahead=None if readahead == "default" else readahead,
                   repetitions=POINTER_REPETITIONS)
    exe = build(str(bdir), cc=cc, cxx=cxx, jobs=jobs, variants=variants, say=say)
    def write(j):
        text, problems = report_pointers(j, out, command=cmdline)
        return text, [os.path.join(out, "oo7_pointers.md")], problems
    return _run_and_report(exe, opts, json_path, write, say)


def _run_and_report(exe, opts, json_path, write, say, hot_rounds: int = 0) -> int:
    """Run the benchmark binary into json_path (and `hot_rounds` rounds of the zero-cost
    table's operations: run_hot_rounds), then write(json_path) -> (text, files written
    besides the JSON, problems); 1 if the run or the report found a problem."""
    t0 = time.perf_counter()
    rc = run(str(exe), opts, json_path, say=say)
    say(f"benchmark ran {time.perf_counter() - t0:.1f} s (exit status {rc})")
    if not results_written(exe, rc, json_path, say):
        return 1
    if hot_rounds:
        t0 = time.perf_counter()
        rr = run_hot_rounds(str(exe), opts, json_path, hot_rounds, say=say)
        say(f"{hot_rounds} rounds ran {time.perf_counter() - t0:.1f} s (exit status {rr})")
        rc = rc or rr
    text, written, problems = write(json_path)
    return say_report(say, text, problems, [json_path, *written], rc)


# ---------------------------------------------------------------------------------------
# the command (cli.py holds only the click declaration)

def command(*, size, fanout, seed, reference, out, build_dir, filter, ops, hot_runs, db_dir,
            lto_rows, cc, cxx, jobs, render, plots, readahead="default", durable=False,
            update_runs=None, pointers=False, hot_batch_us=Options.hot_batch_us,
            hot_rounds=HOT_ROUNDS, server=False, pages=None, processes=None, say=print) -> int:
    """`p2gen bench oo7`: build, run, report (`durable`: the durable comparison,
    durable_command; `pointers`: the pointer comparison, pointers_command; `server`: over
    the page and object servers, server.command). Returns the exit status."""
    if server:
        if reference or durable or pointers:
            raise BuildError("--server runs at its own size (small unless --size): not with "
                             "--reference, --durable or --pointers")
        from . import server as srv
        return srv.command(size=size, fanout=fanout, seed=seed, out=out, build_dir=build_dir,
                           db_dir=db_dir, cc=cc, cxx=cxx, jobs=jobs, render=render,
                           pages=pages or srv.PAGES, repetitions=processes or 1, hot_runs=hot_runs,
                           plots=plots, say=say)
    if pages is not None or processes is not None:
        raise BuildError("--pages and --processes are --server's options")
    if pointers:
        if reference or durable:
            raise BuildError("--pointers runs at its own size (small unless --size): not with "
                             "--reference or --durable")
        return pointers_command(size=size, fanout=fanout, seed=seed, out=out, build_dir=build_dir,
                                filter=filter, ops=ops, hot_runs=hot_runs, db_dir=db_dir, cc=cc,
                                cxx=cxx, jobs=jobs, render=render, readahead=readahead,
                                hot_batch_us=hot_batch_us, say=say)
    if durable:
        if reference:
            raise BuildError("--durable runs at its own size (small unless --size): not with --reference")
        return durable_command(size=size, fanout=fanout, seed=seed, out=out, build_dir=build_dir,
                               filter=filter, ops=ops, update_runs=update_runs, db_dir=db_dir,
                               cc=cc, cxx=cxx, jobs=jobs, render=render, say=say)
    out, json_path, cmdline = command_outputs(out, "oo7.json")
    if render:
        return say_report(say, *report(render, out, plots=plots, command=cmdline)[::2])
    base = REFERENCE if reference else DEFAULT
    _check_size(size)
    opts = Options(size=size or base["size"], fanouts=ints(fanout, "--fanout") or base["fanouts"],
                   seed=seed, hot_runs=hot_runs, hot_batch_us=hot_batch_us, ops=ops,
                   filter=filter, dir=db_dir, update_runs=update_runs or 1,
                   readahead=None if readahead == "default" else readahead)
    exe = build(build_dir or os.path.join("bench", "build", "oo7"), cc=cc, cxx=cxx, jobs=jobs,
                variants=default_variants(lto_rows=lto_rows), say=say)
    def write(j):
        text, pngs, problems = report(j, out, plots=plots, command=cmdline)
        return text, [os.path.join(out, "oo7.md"), *pngs], problems
    return _run_and_report(exe, opts, json_path, write, say, hot_rounds=hot_rounds)
