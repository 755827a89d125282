"""`p2gen bench ...`: the benchmarks' commands and their options, a group the compiler's
command line (p2gen.cli) adds under its own. Each command checks its compilers and hands
its options to its benchmark's runner (<benchmark>/run.py: `command`). The help options
(-h) and the width of the help come from the compiler's group, which the contexts of
these commands inherit (p2gen.cli.CONTEXT).
"""
from __future__ import annotations

import os
import sys
import time

import click

from ..errors import EnvError, P2Error, os_reason


def _fail(err: Exception) -> None:
    """The compiler's way (p2gen.cli): the message on stderr, exit status 1."""
    click.echo(str(err), err=True)
    sys.exit(1)


def _run_driver(command, kwargs: dict) -> None:
    """Run a C/C++ benchmark driver's command: its compilers checked first (unless it only
    renders), a P2Error as a one-line message, its status as the exit status."""
    from ..toolchain import cc_command
    try:
        if not kwargs.get("render"):
            cc_command(kwargs["cc"])
            cc_command(kwargs["cxx"], "C++ compiler", "--cxx or $CXX")
        rc = command(**kwargs, say=click.echo)
    except P2Error as e:
        _fail(e)
    sys.exit(rc)


def _run_tuner_bench(command, kwargs: dict) -> None:
    """Run an experiment on `p2gen tune` (bench/tune/): C only, its compiler checked first,
    a P2Error as a one-line message, its status as the exit status."""
    from ..toolchain import cc_command
    kwargs.pop("cxx", None)
    try:
        cc_command(kwargs["cc"])
        rc = command(**kwargs, say=click.echo)
    except P2Error as e:
        _fail(e)
    sys.exit(rc)


# ---------------------------------------------------------------------------------------
# the options the benchmark commands share (each command keeps its own order in --help)

def _out(files: str):
    return click.option("-o", "--out", "out", default="bench/results", show_default=True,
                        type=click.Path(file_okay=False), help=f"Where {files} go.")


def _build_dir(name: str = "", what: str = "Generated code, objects, the binary."):
    """--build-dir, bench/build/<name> by default (tpcb: bench/build)."""
    return click.option("--build-dir", default="bench/build" + (name and "/" + name),
                        show_default=True, type=click.Path(file_okay=False), help=what)


def _filter(example: str):
    return click.option("--filter", metavar="REGEX", help="Only benchmarks matching (Google "
                        f"Benchmark's --benchmark_filter), e.g. '{example}'.")


_db_dir = click.option("--db-dir", type=click.Path(file_okay=False),
                       help="Where database files go (default: a fresh directory in $TMPDIR).")


def _render(what: str, source: str = "a stored Google Benchmark JSON"):
    return click.option("--render", metavar="JSON",
                        type=click.Path(exists=True, dir_okay=False),
                        help=f"Only render {what} from {source}.")


def _plots(what: str = "PNG plots", default: bool = True):
    return click.option("--plots/--no-plots", default=default, show_default=True,
                        help=f"Render {what} (needs matplotlib: pip install 'p2gen[bench]').")


def _compilers(jobs: bool = True):
    """--cc, --cxx and (`jobs`) -j: the compilers a driver is built with, and how many
    compilations run at once."""
    options = [click.option("--cc", default=lambda: os.environ.get("CC", "cc"),
                            show_default="$CC or cc"),
               click.option("--cxx", default=lambda: os.environ.get("CXX", "c++"),
                            show_default="$CXX or c++")]
    if jobs:
        options.append(click.option("-j", "--jobs", type=click.IntRange(1),
                                    help="Parallel compilations (default: CPUs)."))

    def apply(f):
        for option in reversed(options):
            f = option(f)
        return f
    return apply


@click.group()
def bench() -> None:
    """Benchmarks of generated data managers against hand-written and off-the-shelf ones."""


@bench.command("tpcb")
@click.option("--sf", metavar="LIST", help="Scale factors, e.g. 2,4,8 or 2-12 "
              "(default 2,4,8,12; --reference: 2-12).")
@click.option("--accounts", type=click.IntRange(1), metavar="N",
              help="Accounts per branch (default 10000; --reference: TPC-B's 100000).")
@click.option("--txns", type=click.IntRange(1), metavar="N",
              help="Transactions per run (default 50000; --reference: 200000).")
@click.option("--seeds", metavar="LIST", help="Random seeds; the report takes the median "
              "(default 1-5; --reference: 1-5).")
@click.option("--reference", is_flag=True, help="The reference scale: SF 2-12, 100,000 "
              "accounts per branch, 200,000 transactions, seeds 1-5.")
@_out("tpcb.json, tpcb.md and the PNGs")
@_build_dir()
@_filter("IARRAY|HANDC")
@_db_dir
@click.option("--commit-every", type=click.IntRange(0), default=0, show_default=True,
              help="SQLite/LMDB: commit every K transactions (0: one write transaction per run).")
@click.option("--iterations", type=click.IntRange(1), default=1, show_default=True,
              help="Benchmark iterations per system, SF and seed.")
@click.option("--repetitions", type=click.IntRange(1), default=3, show_default=True,
              help="Runs of every system, SF and seed, all in a random order (the report takes "
                   "the median over seeds and runs): load on a shared machine then weighs on "
                   "every system alike.")
@click.option("--lto-rows/--no-lto-rows", default=True, show_default=True,
              help="Besides every variant built as the README tells users to (p2gen build's "
                   "library, cc -O2, no LTO), the same variant built with -flto across generated "
                   "code and driver: a second row, <NAME>-lto.")
@_compilers()
@_render("the table and plots")
@_plots()
@click.option("--metric", type=click.Choice(["wall", "cpu"]), default="wall", show_default=True,
              help="Transaction time: wall clock, or the thread's CPU time (busy machines).")
@click.option("--variant", "variants", multiple=True, metavar="NAME=SPEC",
              help="Also benchmark a spec of your own (containers branches, tellers, accounts, "
                   "histories as in type_equations/tpcb/).")
@click.option("--profile-rows", is_flag=True,
              help="Also every variant generated with --profile (the workload counters), "
                   "<NAME>-prof beside <NAME> in the same run: the report gives their ratio.")
@click.option("--overhead", is_flag=True,
              help="What --profile and --trace cost instead: HASH1 and IARRAY built plainly, "
                   "with --profile (<NAME>-prof) and with --trace (<NAME>-trace) in one binary, "
                   "run in --processes processes (SF 2, 10000 accounts, 500000 transactions, "
                   "seeds 1-3 by default); the report gives each twin's ratio to its plain row "
                   "(median over processes); writes tpcb_overhead.<i>.json and tpcb_overhead.md.")
@click.option("--processes", type=click.IntRange(1), default=3, show_default=True,
              help="--overhead: processes of the benchmark binary (the report's ratios: "
                   "the median over them).")
@click.option("--instructions", is_flag=True,
              help="--overhead: also count each transient row's instructions per transaction "
                   "under valgrind (cachegrind): a count a loaded machine does not move.")
@click.option("--durable", is_flag=True,
              help="The durability comparison instead: journalled variants (a commit "
                   "per transaction, fsync every commit or every 100), SQLite WAL with "
                   "synchronous=FULL and LMDB with sync on, beside HASH1/IARRAY without a journal; "
                   "small fsync-bound default size (SF 2, 10000 accounts, 2000 transactions, "
                   "seeds 1-3); writes tpcb_durable.json and tpcb_durable.md.")
def bench_tpcb(**kwargs):
    """TPC-B: every generated variant vs hand-coded C, SQLite and LMDB (Google Benchmark).

    Builds type_equations/tpcb/*.p2 and bench/tpcb/, runs them on the same random stream,
    checks the TPC-B invariant after every run, writes the JSON, a Markdown table and
    plots after Thomas & Batory (1995). Exit status 1 if a run failed.
    """
    from .tpcb.run import command
    _run_driver(command, kwargs)


@bench.command("range")
@click.option("--rows", type=click.IntRange(2, 2**32 - 1), metavar="N",
              help="Rows in the relation (default 200000; the measurement in bench/RESULTS.md: "
                   "1000000).")
@click.option("--lengths", metavar="LIST", help="Rows per cursor (default 10,1000,100000; "
              "lengths above --rows are not run).")
@click.option("--seed", type=click.IntRange(0), default=1, show_default=True,
              help="Seed of the load order and of the walks' starts.")
@click.option("--min-time", type=click.FloatRange(0.001), default=0.2, show_default=True,
              help="Seconds each benchmark runs at least.")
@click.option("--repetitions", type=click.IntRange(1), default=1, show_default=True,
              help="Runs of every benchmark, interleaved at random with every system kept "
                   "loaded (the table takes the median): load on a shared machine then weighs "
                   "on every system alike.")
@click.option("--load-order", type=click.Choice(["random", "sorted"]), default="random",
              show_default=True, help="Keys inserted in a random order (realistic tree shapes; "
              "elements stored in insertion order), or every system loading in key order "
              "(elements stored in key order: the walks' best case).")
@_out("range.json, range.md and range.png")
@_build_dir("range")
@_filter("BTREE|AVL")
@_db_dir
@_compilers()
@_render("the table (and plot)")
@_plots("a PNG plot", default=False)
def bench_range(**kwargs):
    """Range scans: rows per second of cursors of 10, 1,000 and 100,000 rows through every
    ordered layer (btree, avl, qsort, odlist, iarray; transient and persistent) against
    SQLite (a file and :memory:) and LMDB (Google Benchmark).

    Builds bench/range/*.p2 as the README tells users to and bench/range/ into one
    binary, checks that every walk returns the rows asked in key order, writes the JSON
    and a Markdown table with the ratios to AVL and SQLite. Exit status 1 if a run failed.
    """
    from .range.run import command
    _run_driver(command, kwargs)


@bench.command("social")
@click.option("--users", type=click.IntRange(2, 2**31), default=10000, show_default=True)
@click.option("--follows", type=click.IntRange(0, 4096), default=50, show_default=True,
              help="Followees per user.")
@click.option("--posts", type=click.IntRange(0), default=50, show_default=True,
              help="Posts per user on average.")
@click.option("--k", "ks", default="10,50", show_default=True, metavar="LIST",
              help="Feed lengths.")
@click.option("--seed", type=click.IntRange(0), default=1, show_default=True)
@click.option("--min-time", type=click.FloatRange(0.001), default=0.5, show_default=True,
              help="Seconds each benchmark runs at least.")
@click.option("--processes", type=click.IntRange(1), default=3, show_default=True,
              help="Runs of the binary; the report takes the medians over them.")
@_out("social.*.json and social.md")
@_build_dir("social")
@_compilers()
def bench_social(**kwargs):
    """The feed of a social graph: the k newest posts of the users one follows,
    p2gen's merge of ordered roles against SQLite's join over an index on posts(user, time)
    (Google Benchmark, both in one process, medians over several processes). Exit status 1
    if the systems' answers differ or the feed is not 3x faster than SQLite.
    """
    from .social.run import command
    _run_driver(command, kwargs)


@bench.command("tune-topk")
@click.option("--workloads", "workloads_n", type=click.IntRange(1), default=4, show_default=True,
              help="Synthetic workloads, alternately TPC-B's accounts and a relation walked "
                   "by key range (n, the mix, key order and density drawn from --seed).")
@click.option("--sample", type=click.IntRange(0), default=6, show_default=True,
              help="Candidates measured beside the model's top 5, drawn at random from the "
                   "rest of each workload's space.")
@click.option("--reps", type=click.IntRange(1), default=3, show_default=True,
              help="Processes per workload (the candidates in a new random order each).")
@click.option("--seed", type=click.IntRange(0), default=38, show_default=True)
@click.option("--full", is_flag=True, help="Also n = 30,000 among the sizes (default 1,000 "
              "and 10,000); give --workloads 20 --sample 15 --reps 5 for the figures in RESULTS.")
@_out("tune_topk.json and tune_topk.md")
@_compilers()
def bench_tune_topk(**kwargs):
    """Whether the measured best equation is in the model's top k (k = 1, 3, 5): per
    synthetic workload, the model's top 5 and a random sample of the rest of the space
    measured as `p2gen tune` measures (one binary, separate processes, random order).
    """
    from .tune.topk import command
    _run_tuner_bench(command, kwargs)


@bench.command("tune")
@click.option("--all", "everything", is_flag=True, help="Every synthetic mix {point, range, "
              "scan, insert, key update, delete} x n {1e3, 1e5} x keys {dense, sparse, "
              "sequential} and every range spec (default: a quick set of 8 workloads).")
@click.option("--big", is_flag=True, help="Also n = 1e6 and TPC-B at SF 12 (with --all: "
              "every mix at 1e6).")
@click.option("--exhaustive", is_flag=True, help="Measure every equation of each relevant "
              "space as the ground truth (slow), kept in --truth-file and reused (default: "
              "the model's top k, --sample others, the pick and the spec's own).")
@click.option("--only", metavar="REGEX", help="Only the workloads whose name matches, "
              "e.g. 'tpcb|point/1e3'.")
@click.option("--top", type=click.IntRange(1, 50), default=5, show_default=True,
              help="The tuner's --top (and the model's top k the targets count).")
@click.option("--reps", type=click.IntRange(1, 100), default=5, show_default=True,
              help="The tuner's --reps.")
@click.option("--truth-reps", type=click.IntRange(1), default=5, show_default=True,
              help="Processes measuring the ground truth (the candidates in a new random "
                   "order each, after one untimed warm-up run).")
@click.option("--sample", type=click.IntRange(0), default=4, show_default=True,
              help="Without --exhaustive: equations outside the model's top k measured in "
                   "the ground truth, drawn at random.")
@click.option("--seed", type=click.IntRange(0), default=38, show_default=True)
@click.option("--truth-file", type=click.Path(dir_okay=False),
              help="The cached exhaustive ground truth (default: OUT/tune_truth.json).")
@_out("tune.json, tune.md and the workloads' specs and profiles (tune-workloads/)")
@_compilers()
def bench_tune(**kwargs):
    """Whether `p2gen tune` picks well: per workload (TPC-B's accounts, the range specs,
    synthetic mixes), the tuner's pick as it would write it back, its time, its measured
    time over the best's (the ground truth: a sample, or with --exhaustive every equation
    of the relevant space), the model's rank of the best; the issue's targets printed met
    or not (exit status 0 either way; 1 on an error).
    """
    from .tune.proof import command
    _run_tuner_bench(command, kwargs)


@bench.command("oo7")
@click.option("--size", type=click.Choice(["tiny", "small", "medium", "large"]),
              help="Database size (default small; --reference: medium).")
@click.option("--fanout", metavar="LIST", help="Connections per atomic part, e.g. 3 or 3,6,9 "
              "(default 3; --reference: 3,6,9).")
@click.option("--seed", type=click.IntRange(0), default=1, show_default=True,
              help="Random seed of the generator and of the operations' draws.")
@click.option("--reference", is_flag=True, help="The report's medium database at fanouts 3, 6, 9.")
@_out("oo7.json, oo7.md and the PNGs")
@_build_dir("oo7")
@_filter("HAND|SQLITE/persistent")
@click.option("--ops", metavar="LIST", help="Only these operations, e.g. T1,T6,Q1 (default: all).")
@click.option("--hot-runs", type=click.IntRange(1), default=3, show_default=True,
              help="Hot runs after each cold run (their mean is the hot time).")
@click.option("--hot-batch-us", type=click.IntRange(0), default=200, show_default=True,
              help="A read-only operation's hot run repeats it back to back for about this "
                   "many microseconds, timed as one span and reported per repetition (0: "
                   "once): a microsecond operation timed alone measures the clock.")
@click.option("--hot-rounds", type=click.IntRange(0), default=4, show_default=True,
              help="After the main run, this many more processes run T6, T7, Q1 and Q2 hot "
                   "once more for every generated variant and HAND; their hot time is the "
                   "median over all of them (one process alone moved ratios by 1.3-1.7x).")
@_db_dir
@click.option("--lto-rows/--no-lto-rows", default=True, show_default=True,
              help="Besides every variant built as the README tells users to (p2gen build's "
                   "library, -O2 with <PREFIX>_INLINE, no LTO), each hash variant built with "
                   "-flto across generated code and driver: a second row, <NAME>-lto.")
@_compilers()
@click.option("--readahead", type=click.Choice(["default", "random"]), default="default",
              show_default=True, help="Readahead in the cold and warm processes: the "
              "device's default, or advised off (random), so that major faults count the "
              "pages an operation touches rather than the device's readahead window.")
@_render("the tables and plots")
@_plots()
@click.option("--update-runs", type=click.IntRange(1),
              help="Hot runs of each update operation, in a row, each its own transaction "
                   "(default 1; --durable: 100).")
@click.option("--durable", is_flag=True,
              help="The durability comparison: the update operations (T2a-T3c, SM1, SM2) run "
                   "100 times in a row, hot, on the journalled variants (page journal, record "
                   "log), SQLite WAL and LMDB with sync on, each committing per run and per 100 "
                   "runs, and without durability; writes oo7_durable.{json,md}.")
@click.option("--pointers", is_flag=True,
              help="Hardware vs software pointers: the HASH/ILIST equation over every memory "
                   "of type_equations/oo7/ (offsets, raw addresses of a mapped file) and HAND, "
                   "and each mapped variant with 5, 20, 50 and 100% of its file relocated by "
                   "force at every open (P2_MAPPED_RELOCATE); T1 unless --ops; the open timed "
                   "apart; writes oo7_pointers.{json,md}.")
@click.option("--server", is_flag=True,
              help="OO7 on a page server, as QuickStore ran it over EXODUS: the HASH/ILIST "
                   "equation on a local file, over pageserver (an nbdkit started here) and over "
                   "objserver with malloc storage (a redis-server started here), T1, T6 and Q1 "
                   "cold (a fresh open) and hot, with the servers' request counters; small "
                   "unless --size; writes oo7_server.{json,md} and oo7_server.png.")
@click.option("--pages", type=click.IntRange(2), metavar="N",
              help="With --server: the client buffer in pages (default 50; the object cache "
                   "holds 35 records a page); 4096 holds the small database's T1 working set, "
                   "so its hot runs send no request.")
@click.option("--processes", type=click.IntRange(1), metavar="N",
              help="With --server: processes, each on fresh engines (default 1); the report "
                   "takes the medians, and the medians of each process's own ratios.")
def bench_oo7(**kwargs):
    """OO7: every generated variant of type_equations/oo7/ vs hand-written C++, SQLite and LMDB.

    Builds the variants and bench/oo7/ into one Google Benchmark binary, builds each
    system's database once, runs every operation cold and warm (each in a fresh process:
    cold after dropping the files from the page cache, proved with mincore; warm with
    them cached) and hot (repeated in one open), with page faults, bytes read and
    written and file sizes per run, checks that every system returns the same counts,
    writes the JSON, a Markdown table and plots. Exit status 1 if a run failed or counts differ.
    """
    from .oo7.run import command
    _run_driver(command, kwargs)


@bench.command("acob")
@click.option("--objects", type=click.IntRange(10), default=1500, show_default=True, metavar="N",
              help="Complex objects per set (a multiple of 5; the paper's 1,500: the counts of "
                   "acob.md §6.1 hold for it).")
@click.option("--sets", type=click.IntRange(1, 26), default=2, show_default=True, metavar="K",
              help="Sets built one after the other (the paper's 5: --full).")
@click.option("--full", is_flag=True, help="The paper's database: 5 sets of 1,500 objects.")
@click.option("-f", "--clustering", "f", multiple=True, type=click.IntRange(0, 100), metavar="PCT",
              help="Clustering factor in percent (repeatable; default 30; the paper: 10 30 50 70 90).")
@click.option("-B", "--buffer", "buffers", multiple=True, type=click.IntRange(2), metavar="PAGES",
              help="Client buffer in pages (repeatable; default 50, the paper's; the object "
                   "cache holds 35 records a page): each a build of the server specs.")
@click.option("--cost", type=click.Choice(["native", "1990"]), default="native", show_default=True,
              help="native: today's engines as they are; 1990: a delay per request (client-side, "
                   "P2_SERVER_DELAY_NBD_US / _REDIS_US / _NFS_US), calibrated first so that a "
                   "request in the scan costs Table 1's reply cost at 1/50: a page 363 µs, an "
                   "object 164 µs (the paper's 17.9 : 8.2 ms), and an NFS page 200 µs (its ≈ 10 ms).")
@click.option("--region", type=click.IntRange(1), default=5, show_default=True, metavar="PAGES",
              help="Clustering region in pages (odd: 1, 5, 9).")
@click.option("--smear", is_flag=True, help="Smear a quarter of the objects (acob.md §2.3).")
@click.option("--seed", type=click.IntRange(0), default=1990, show_default=True,
              help="The one seed of the generation and of the random queries, for every system.")
@click.option("--repetitions", type=click.IntRange(1), default=3, show_default=True,
              help="Processes per clustering factor, in a random order, each on fresh engines "
                   "(the report takes the median time).")
@click.option("--system", "systems", multiple=True,
              type=click.Choice(["LOCAL", "PAGESERVER", "OBJSERVER", "HYBRID", "FILESERVER"]),
              help="Only these systems (repeatable; default LOCAL, PAGESERVER, OBJSERVER, "
                   "HYBRID: HYBRID is the page server with ship = ranges; FILESERVER, the page "
                   "server over NFS-Ganesha in a private network namespace, needs root and "
                   "is run only when asked).")
@click.option("--nfs-writes", type=click.Choice(["sync", "unstable"]), default="sync", show_default=True,
              help="FILESERVER's writes: sync, every NFS WRITE FILE_SYNC (the paper's); unstable, "
                   "UNSTABLE writes and a COMMIT per commit.")
@click.option("--targets", is_flag=True,
              help="Also the issue's target rows: each set's random read hot (once to warm the "
                   "client buffer, then timed with it kept: give -B 310 or more so that the page "
                   "server holds a set) against LOCAL, and (native costs) a cold fault in the "
                   "scan against one raw libnbd read of a page (acob/RAWNBD/read), and the page "
                   "server's scan over nbdkit's 1 ms delay filter, one request at a time against "
                   "P2_SERVER_READAHEAD=16 (pairs of processes).")
@_out("acob.json and acob.md")
@_build_dir("acob")
@_render("the report", "a stored acob.json")
@_compilers()
def bench_acob(**kwargs):
    """ACOB: a local file, a page server (nbdkit) and an object server (Redis), after
    DeWitt, Futtersack, Maier and Velez (1990).

    Starts nbdkit (memory plugin) and redis-server on free loopback ports, builds
    type_equations/acob/*.p2 with their URIs and bench/acob/ into one Google Benchmark
    binary, and runs per clustering factor: build, scan, random read and random update of
    every set on every system, each query and set from a cold client buffer. Prints and
    checks the counts (records read by the walks, root ids, updates, the servers' pages and
    objects fetched and written, checksums before and after the updates) across systems,
    writes acob.json and acob.md (counts beside the spec's reference model and the paper,
    median times, ratios). Exit status 1 if a run failed or counts differ.
    """
    from .acob.run import command
    _run_driver(command, kwargs)


@bench.command("python")
@click.option("--rows", type=click.IntRange(10), default=10000, show_default=True,
              help="Accounts (rows) per run.")
@click.option("--reps", type=click.IntRange(1), default=3, show_default=True,
              help="Repetitions (a fresh store each); the report takes the median.")
@click.option("--system", "systems", multiple=True,
              type=click.Choice(["P2", "dict", "sqlite-mem", "sqlite-file", "lmdb"]),
              help="Only these systems (repeatable; default: all, lmdb if installed).")
@click.option("--workload", "workloads", multiple=True,
              type=click.Choice(["tpcb", "oo7", "social"]),
              help="Only these workloads (repeatable; default: all). tpcb: accounts, "
              "branches and a cursor; oo7: OO7's build, traversals T1/T2 and query Q1; "
              "social: users, follows and posts, the feed of the people one follows.")
@click.option("--oo7-size", type=click.Choice(["tiny", "small"]), default="small",
              show_default=True, help="OO7 database size: tiny (50 composite parts of 10 "
              "atomic parts), small (500 of 20); 3 connections per atomic part.")
@click.option("--social-size", type=click.Choice(["tiny", "small", "medium"]), default="small",
              show_default=True, help="Social graph: tiny (200 users, 10 followees, 5 posts "
              "each), small (2,000, 50, 20), medium (10,000, 50, 50).")
@_out("python.json, python.md and python.png")
@_build_dir("python", "The generated module and extension.")
@_render("the table and plot", "a stored python.json")
@_plots("a PNG plot")
def bench_python(**kwargs):
    """Per-operation cost from Python: the generated module vs dict, sqlite3, lmdb.

    Builds bench/python/tpcb_py.p2 with --python and times insert, find, update, delete,
    scans (with and without a predicate) and a relationship traversal against a dict of
    tuples, sqlite3 (:memory: and a file) and the lmdb binding; builds
    bench/python/oo7_py.p2 and times OO7's build, T1, T2 and Q1 against plain Python
    objects and sqlite3. Every phase's counts are checked. Writes python.json,
    python.md (medians, ratios, the targets) and python.png. Exit status 1 if a check
    failed.
    """
    from .python.run import command
    try:
        rc = command(**kwargs, say=click.echo)
    except P2Error as e:
        _fail(e)
    sys.exit(rc)


@bench.command("labflow")
@click.option("--gen", "gen", is_flag=True,
              help="Only generate the benchmark log (to -o FILE, '-' for stdout).")
@click.option("--memory", metavar="SIZE",
              help="The memory budget X (e.g. 8M, 32M as in the paper, 256M, 1G): the "
                   "intervals start where the database reaches 0.5X, 1X and 2X, and each "
                   "replay runs under a memory limit of X. [default: 32M; --gen: 8M; "
                   "--reference: 256M]")
@click.option("--reference", is_flag=True, help="The reference size: X = 256M.")
@click.option("--seed", type=click.IntRange(0, 2**64 - 1), default=1996, show_default=True,
              help="Seed of the simulation's splitmix64 generator.")
@click.option("-o", "--out", "out", type=click.Path(allow_dash=True),
              help="--gen: where the log goes ('-': stdout; default "
                   "bench/results/labflow1-<seed>-<X bytes>.log). Otherwise the directory "
                   "for labflow.json, labflow.md, labflow.png and each system's query "
                   "output (default bench/results).")
@_build_dir("labflow", "The log, generated code, the binary.")
@click.option("--system", "systems", multiple=True, metavar="NAME",
              help="Only this system (repeatable), e.g. SEGMENTED, SQLITE.")
@click.option("--cap/--no-cap", default=True, show_default=True,
              help="Run each replay under a cgroup memory limit of X (when the machine "
                   "allows one; otherwise the run says so and goes uncapped).")
@click.option("--deadline", type=click.FloatRange(1), default=300, show_default=True,
              metavar="SECONDS", help="A replay still running after this long is not "
              "continued (a run that thrashes, as the paper did not continue its): the "
              "intervals it measured are reported, the rest 'n/a (not continued)'.")
@_compilers(jobs=False)
@_plots("a PNG plot")
def bench_labflow(gen, memory, reference, seed, out, build_dir, systems, cap, deadline, cc, cxx,
                  plots):
    """LabFlow-1: a laboratory's workflow history (Bonner, Shrufi, Rozen 1996).

    Generates the benchmark log (the seeded simulation of two production lines: the
    update-only build phase, and at 0.5X, 1X and 2X of the memory budget an interval of
    10,000 requests plus two reports between measurement markers, with a schema change of
    each kind in every interval; the same seed and budget give the same bytes; format in
    p2gen/bench/labflow/gen.py), builds every variant of type_equations/labflow/ the way
    the README tells users to with the peers (hand-written C++ in the heap, SQLite with
    the journal off, LMDB with WRITEMAP|NOSYNC) into one Google Benchmark binary, replays
    the log on each in a fresh process under a memory limit of X, checks that every system
    wrote the same query output (and the reference model's, for logs it can replay), and
    writes per interval elapsed, user and system CPU, major faults, file sizes and commit
    times as labflow.json, labflow.md and labflow.png. Exit status 1 if a replay failed
    (other than by the memory limit) or outputs differ.
    """
    if memory is None:
        memory = "256M" if reference else ("8M" if gen else "32M")
    from .labflow import gen as lf
    try:
        x = lf.parse_size(memory)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--memory")
    if not gen:
        from ..toolchain import cc_command
        from .labflow.run import command
        try:
            cc_command(cc)
            cc_command(cxx, "C++ compiler", "--cxx or $CXX")
            rc = command(memory=memory, seed=seed, out=out or "bench/results",
                         build_dir=build_dir, cc=cc, cxx=cxx, systems=systems, cap=cap,
                         plots=plots, deadline=deadline, say=click.echo)
        except P2Error as e:
            _fail(e)
        sys.exit(rc)
    if out is None:
        out = os.path.join("bench", "results", f"labflow1-{seed}-{x}.log")
    t0 = time.monotonic()
    try:
        if out == "-":
            s = lf.generate(sys.stdout.buffer, seed=seed, memory=x)
            sys.stdout.buffer.flush()
        else:
            if os.path.dirname(out):
                os.makedirs(os.path.dirname(out), exist_ok=True)
            tmp = out + ".tmp"
            with open(tmp, "wb") as f:
                s = lf.generate(f, seed=seed, memory=x)
            os.replace(tmp, out)
    except OSError as e:
        if out != "-" and os.path.exists(out + ".tmp"):
            os.unlink(out + ".tmp")
        _fail(EnvError(f"cannot write the log {out}: {os_reason(e, out)}"))
    say = (lambda m: click.echo(m, err=True)) if out == "-" else click.echo
    say(f"{out}: {s.lines:,} lines, {s.requests:,} requests, {s.materials:,} materials, "
        f"{s.steps:,} steps, {s.involves:,} involves rows ({time.monotonic() - t0:.1f} s)")
    for name, (line, est) in zip(lf.CUT_NAMES, s.cuts):
        say(f"  interval at {name}: line {line:,}, estimated database {est / 2**20:.2f} MiB")
    say(f"  sha256 {s.sha256}")
