"""The p2gen command line: the compiler's commands (build, check, explain, verify, recover, tune,
cmake-dir, layers). The benchmarks' commands and their options (`p2gen bench ...`) are
p2gen.bench.cli, added under this group, whose settings (CONTEXT) they inherit.

The exit statuses are in EXIT_STATUS and VERIFY_STATUS below: the one table, from which
this docstring's table, `p2gen --help` and `p2gen verify --help` are made.
"""
from __future__ import annotations

import os
import sys
import textwrap
import time

import click

from .bench.cli import bench
from .errors import EnvError, P2Error, os_reason

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}

# Exit statuses: every command but verify ...
EXIT_STATUS = [
    (0, "success"),
    (1, "the spec is wrong, or the build failed, or the machine cannot do it (a C compiler "
        "that cannot be run, an output directory that cannot be written): the message on "
        "stderr (a spec error names file, line and column), never a traceback"),
    (2, "the command line itself is wrong (usage errors)"),
]
# ... and verify, whose status says what it found (like fsck's)
VERIFY_STATUS = [
    (0, "the database is consistent"),
    (1, "problems found, printed one a line"),
    (2, "the database cannot be opened (a missing file, or an open refusal, printed), or "
        "the command line itself is wrong"),
    (3, "the spec is wrong, or the checker cannot be built (a compiler error, a C compiler "
        "that cannot be run, a cache directory that cannot be written)"),
    (4, "the checker itself failed (crashed, or could not be run)"),
]
# ... and recover, likewise
RECOVER_STATUS = [
    (0, "recovered: the database verifies and its files are marked closed cleanly"),
    (1, "problems remain, printed; the plain files stay marked not closed cleanly"),
    (2, "the database cannot be opened (a missing file, or a refusal other than the unclean "
        "mark, printed), or the command line itself is wrong"),
    (3, "the spec is wrong, or the program cannot be built"),
    (4, "the recovery program itself failed (crashed, or could not be run)"),
]
# ... and tune
TUNE_STATUS = [
    (0, "tuned (the spec rewritten, or kept where its own equation is within noise of the "
        "best; with --dry-run the diff printed); with --check: every equation tuned is within "
        "the margin of the best found"),
    (1, "the spec, the profile (another spec's, damaged) or a build is wrong: the message on "
        "stderr; the spec is not rewritten"),
    (2, "the command line itself is wrong (usage errors)"),
    (3, "--check: a container's equation is slower than the best found by more than the "
        "margin (each such container named on stdout)"),
]


def _status_text(rows) -> str:
    return "\n".join(textwrap.fill(meaning, 88, initial_indent=f"  {code}  ",
                                   subsequent_indent="     ") for code, meaning in rows)


__doc__ += (f"\nExit status of every command but verify:\n{_status_text(EXIT_STATUS)}\n"
            f"\nExit status of p2gen verify:\n{_status_text(VERIFY_STATUS)}\n"
            f"\nExit status of p2gen recover:\n{_status_text(RECOVER_STATUS)}\n"
            f"\nExit status of p2gen tune:\n{_status_text(TUNE_STATUS)}\n")


def _status_help(rows) -> str:
    """The statuses as a Click help paragraph, one a line (\\b: not rewrapped)."""
    return "\b\nExit status:\n" + _status_text(rows)


def _fail(err: Exception) -> None:
    click.echo(str(err), err=True)
    sys.exit(1)


def _spec_arg():
    return click.argument("spec", type=click.Path(exists=True, dir_okay=False))


def _prefix_opt():
    return click.option("--prefix", metavar="NAME",
                        help="C name prefix of everything generated (default: the spec "
                             "file's name).")


@click.group(context_settings=CONTEXT, epilog=_status_help(EXIT_STATUS)
             + "\n  (p2gen verify: see its --help)")
@click.version_option(package_name="p2gen")
def main() -> None:
    """Compile P2-style type equations into specialised C data managers.

    A spec file declares records, containers whose implementation is a type equation
    such as top2ds_qualify[hash[array[persistent]]], and cursors with predicates.
    """


@main.command(context_settings=CONTEXT)
@_spec_arg()
@click.option("-o", "--out", "out_dir", default="generated", show_default=True,
              type=click.Path(file_okay=False), help="Output directory.")
@_prefix_opt()
@click.option("--python", "python", is_flag=True,
              help="Also build a CFFI extension and a Python module <prefix>.py.")
@click.option("--wheel", is_flag=True,
              help="Also write <prefix>-<version>-<tag>.whl into the output directory (implies "
                   "--python): the module as an installable package that needs only cffi at "
                   "run time, not p2gen, with type stubs (.pyi, py.typed).")
@click.option("--wheel-version", default="0.1.0", show_default=True, metavar="VERSION",
              help="The wheel's version (PEP 440).")
@click.option("--harness", is_flag=True,
              help="Also build <prefix>_harness: a command-line driver of the generated "
                   "API used by the differential tests (with ASan/UBSan).")
@click.option("--cc", default=lambda: os.environ.get("CC", "cc"), show_default="$CC or cc",
              help="C compiler.")
@click.option("--cflags", default=None, metavar="FLAGS",
              help="C flags (default: -std=c11 -O2 -Wall -Wextra -Werror).")
@click.option("--no-compile", is_flag=True, help="Only generate the .h/.c (no C compiler).")
@click.option("--line-directives", is_flag=True,
              help="Write #line directives into the .h/.c so that the C compiler's messages "
                   "name the template line (layers/<layer>.c.j2) that wrote the code.")
@click.option("--profile", is_flag=True,
              help="Count the workload in the generated API (per container: operations, "
                   "cursor walks and rows, sizes, keys' ranges, distinct values and order) and "
                   "write it as <spec>.profile.json at close ($P2GEN_PROFILE: another path; a later "
                   "run's close writes <spec>.profile.1.json beside it, and readers merge them; "
                   "P2GEN_PROFILE_RESET=1 starts afresh); "
                   "-D<PREFIX>_PROFILE=0 compiles the counters out.")
@click.option("--trace", is_flag=True,
              help="Log every public operation with its arguments (a binary trace, buffered, "
                   "written when the buffer fills and at close) to <spec>.trace "
                   "($P2GEN_TRACE: another path), for an exact replay (p2gen replay, p2gen "
                   "explain --trace); -D<PREFIX>_TRACE=0 compiles the log out.")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing on success (and no progress "
              "lines: on a terminal, or with P2GEN_PROGRESS=1, each step prints one on stderr "
              "with the time since the build began).")
def build(spec, out_dir, prefix, python, wheel, wheel_version, harness, cc, cflags, no_compile,
          line_directives, profile, trace, quiet):
    """Generate SPEC's C data managers (and compile them into lib<prefix>.a)."""
    from .build import cc_command, compile_objects, generate
    try:
        if wheel:
            from .package import check_version, wheel_tag
            check_version(wheel_version)      # before the long build
            wheel_tag()
            python = True
        if harness or python or not no_compile:
            cc_command(cc)        # before writing anything
        t_start = time.perf_counter()

        # progress on stderr, a line per step with the time since the build began: on a
        # terminal (as git's and pip's), or with P2GEN_PROGRESS=1; a failed build's stderr
        # elsewhere stays its one message
        progress = not quiet and (os.environ.get("P2GEN_PROGRESS") == "1"
                                  or (os.environ.get("P2GEN_PROGRESS") != "0"
                                      and sys.stderr.isatty()))

        def step(what: str) -> None:
            if progress:
                click.echo(f"p2gen: [{time.perf_counter() - t_start:5.1f} s] {what}", err=True)

        step(f"generating the C of {spec}")
        gen = generate(spec, out_dir, prefix, line_directives, profile=profile, trace=trace)
        if wheel:
            from .package import check_dist_name
            check_dist_name(gen.prefix)       # the package's name, before the long build
        say = (lambda m: None) if quiet else click.echo
        say(f"generated {gen.header} and {gen.source} in {gen.seconds * 1000:.0f} ms")
        if not no_compile:
            t0 = time.perf_counter()
            flags = cflags.split() if cflags is not None else None
            step(f"compiling lib{gen.prefix}.a")
            lib = compile_objects(gen, cc=cc, cflags=flags)
            say(f"compiled {lib} in {time.perf_counter() - t0:.1f} s")
        if harness:
            from .harness import build_harness
            step("building the harness")
            exe = build_harness(gen, cc=cc)
            say(f"built harness {exe}")
        if python:
            from .pybind import build_python
            step("building the Python extension (the whole data manager compiled into it: "
                 "the longest step)")
            mod = build_python(gen, cc=cc)
            step("done")
            say(f"built Python module {mod} (add {os.path.abspath(out_dir)} to sys.path)")
        if wheel:
            from .package import build_wheel
            whl = build_wheel(gen, wheel_version)
            say(f"wrote {whl} (pip install it: the module {gen.prefix} with its types, "
                f"needing cffi, not p2gen)")
    except P2Error as e:
        _fail(e)
    except OSError as e:          # anything the steps above did not name themselves
        _fail(EnvError(f"error: {os_reason(e)}"))


@main.command(context_settings=CONTEXT)
@_spec_arg()
@_prefix_opt()
def check(spec, prefix):
    """Parse and type-check SPEC: print a one-line summary of what it declares, or its
    errors (on stderr, exit status 1)."""
    from .build import load
    try:
        checked = load(spec, prefix)
    except P2Error as e:
        _fail(e)
    n = len(checked.containers)
    rels = f", {len(checked.relationships)} relationships" if checked.relationships else ""
    click.echo(f"{spec}: ok ({len(checked.records)} records, {n} containers, "
               f"{len(checked.cursors)} cursors{rels})")


@main.command(context_settings=CONTEXT)
@_spec_arg()
@_prefix_opt()
@click.option("--no-finds", is_flag=True, help="Only the declared cursors.")
@click.option("--profile", "profile_path", type=click.Path(dir_okay=False), default=None,
              help="A profile of SPEC (p2gen build --profile): beside each path, its count "
                   "and the planner's estimated cost for it.")
@click.option("--trace", "trace_path", type=click.Path(dir_okay=False), default=None,
              help="With --profile: a trace of SPEC (p2gen build --trace), replayed to measure "
                   "each path (ns a call or walk); where the planner's ranking disagrees with "
                   "the measurement, it says so.")
@click.option("--reps", default=3, show_default=True, type=click.IntRange(1, 1000),
              help="With --trace: replays, each in its own process (medians).")
def explain(spec, prefix, no_finds, profile_path, trace_path, reps):
    """Print, per cursor and find, the access path chosen and why."""
    from .build import load
    from .plan import explain as explain_plan
    if trace_path and not profile_path:
        raise click.UsageError("--trace needs --profile (the counts the measurement is set beside)")
    try:
        checked = load(spec, prefix)
        if profile_path:
            from .profile import load_profile
            from .trace_explain import explain_profile
            from .trace_replay import measure
            prof = load_profile(profile_path, spec)
            summary = measure(spec, trace_path, reps) if trace_path else None
            click.echo(explain_profile(checked, prof, summary, include_finds=not no_finds),
                       nl=False)
            return
    except P2Error as e:
        _fail(e)
    click.echo(explain_plan(checked, include_finds=not no_finds), nl=False)


@main.command(context_settings=CONTEXT)
@_spec_arg()
@click.option("--trace", "trace_path", required=True, type=click.Path(dir_okay=False),
              help="A trace written by SPEC built with --trace.")
@click.option("--reps", default=3, show_default=True, type=click.IntRange(1, 1000),
              help="Replays, each in its own process (the medians are reported).")
@click.option("-o", "--out", "out_dir", default=None, type=click.Path(file_okay=False),
              help="Where to build the driver (default: a temporary directory).")
@click.option("--cc", default=lambda: os.environ.get("CC", "cc"), show_default="$CC or cc",
              help="C compiler.")
def replay(spec, trace_path, reps, out_dir, cc):
    """Replay a trace (p2gen build --trace) on SPEC as written, on a fresh database, the same
    calls with the same arguments: print per container, cursor and operation the count
    and the median ns per operation."""
    from .trace_replay import measure
    try:
        res = measure(spec, trace_path, reps, out_dir=out_dir, cc=cc)
    except P2Error as e:
        _fail(e)
    click.echo(f"replay of {trace_path} on {spec}: {res['total_ns'] / 1e6:.2f} ms "
               f"(median of {reps})")
    click.echo(f"  {'unit':<20} {'operation':<14} {'count':>10} {'ns/op':>10} {'ms':>10}")
    for (unit, op), v in res["ops"].items():
        click.echo(f"  {unit:<20} {op:<14} {v['count']:>10} {v['ns_per_op']:>10.1f} "
                   f"{v['count'] * v['ns_per_op'] / 1e6:>10.3f}")


def _db_program_opts(command: str, programs: str, program: str):
    """verify's and recover's shared arguments: SPEC, --dir, --prefix, --build-dir (a cache
    of `programs` under `command`'s name), --sanitize (of `program`), --cc."""
    opts = [
        _spec_arg(),
        click.option("--dir", "db_dir", default=".", show_default=True,
                     type=click.Path(file_okay=False), help="Where the database files are."),
        _prefix_opt(),
        click.option("--build-dir", type=click.Path(file_okay=False),
                     help=f"Cache of {programs} (default: $P2GEN_CACHE_DIR/{command} or "
                          f"~/.cache/p2gen/{command}), one per spec text."),
        click.option("--sanitize", is_flag=True,
                     help=f"Build {program} with ASan and UBSan."),
        click.option("--cc", default=lambda: os.environ.get("CC", "cc"),
                     show_default="$CC or cc", help="C compiler."),
    ]

    def decorate(f):
        for opt in reversed(opts):  # the first listed is the outermost, as stacked above
            f = opt(f)
        return f
    return decorate


@main.command(context_settings=CONTEXT, epilog=_status_help(VERIFY_STATUS))
@_db_program_opts("verify", "built checkers", "the checker")
def verify(spec, db_dir, prefix, build_dir, sanitize, cc):
    """Check the integrity of SPEC's database files in --dir (like SQLite's
    PRAGMA integrity_check): every structure of every container and relationship is
    walked, every reference must be in bounds and name a live element of the right
    container, every index must agree with its storage.

    Prints the problems found, one a line, and exits with a status that says what it
    found (below).
    """
    from .verify import build_verifier, run_verifier
    _build_and_run("the checker", lambda: build_verifier(spec, build_dir, prefix, cc=cc,
                                                         sanitize=sanitize),
                   lambda exe: run_verifier(exe, db_dir))


def _build_and_run(what: str, build, run) -> None:
    """verify's and recover's shared tail: build the per-spec program (status 3 if it
    cannot be), run it (4 if that fails), pass its output and status (0, 1, 2) on."""
    try:
        exe = build()
    except P2Error as e:
        click.echo(str(e), err=True)
        sys.exit(3)
    try:
        proc = run(exe)
    except OSError as e:
        click.echo(f"error: cannot run {what}: {os_reason(e)}", err=True)
        sys.exit(4)
    sys.stdout.write(proc.stdout)
    sys.stderr.write(proc.stderr)
    if proc.returncode not in (0, 1, 2):
        click.echo(f"{what} itself failed (status {proc.returncode})", err=True)
        sys.exit(4)
    sys.exit(proc.returncode)


@main.command(context_settings=CONTEXT, epilog=_status_help(RECOVER_STATUS))
@_db_program_opts("recover", "built recovery programs", "the program")
def recover(spec, db_dir, prefix, build_dir, sanitize, cc):
    """Bring back SPEC's database files in --dir after a crash: a plain persistent file
    that was not closed cleanly (a process killed while it was open) is opened all the
    same; what is derived (counts, free lists, hash chains, trees, lists) is rebuilt from
    the stored elements; relationships and texts are checked and what points at nothing
    is cleared; what could not be saved is reported; then the integrity check runs, and
    only if it passes are the files marked clean (ordinary opens accept them again).

    Journalled files recover by replaying their journal; where an ordinary open refuses
    it (missing, damaged before later commits, ending before the data file), recover
    keeps what it can give and says what was lost. Exit statuses below.
    """
    from .recover import build_recoverer, run_recoverer
    _build_and_run("the recovery program",
                   lambda: build_recoverer(spec, build_dir, prefix, cc=cc, sanitize=sanitize),
                   lambda exe: run_recoverer(exe, db_dir))


@main.command("cmake-dir", context_settings=CONTEXT)
def cmake_dir():
    """Print the directory of p2gen's CMake package (p2genConfig.cmake), for
    cmake -Dp2gen_DIR="$(p2gen cmake-dir)": find_package(p2gen) then gives
    p2gen_add_spec(<target> <spec.p2>), a library target rebuilt when the spec changes."""
    click.echo(os.path.join(os.path.dirname(os.path.abspath(__file__)), "cmake"))


@main.command(context_settings=CONTEXT)
def layers():
    """List the layer library: realms, what each needs below it, parameters."""
    from .layers import LAYERS
    by_realm = {"mem": [], "ds": [], "top": [], "rel": []}
    for layer in LAYERS.values():
        by_realm[layer.realm].append(layer)
    for realm, group in by_realm.items():
        click.echo(f"realm {realm}:")
        for layer in group:
            role = f" ({layer.role})" if layer.role not in ("mem", "top", "rel") else ""
            click.echo(f"  {layer.signature()}{role}")
            click.echo(f"      {layer.doc}")
            for ps in layer.params:
                click.echo(f"      param {ps.describe()} -- {ps.doc}")
        click.echo("")


def _margin(ctx, param, value: str) -> float:
    try:
        v = float(value[:-1]) / 100 if value.endswith("%") else float(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a fraction or a percentage") from None
    if v < 0:
        raise click.BadParameter("must not be negative")
    return v


@main.command(context_settings=CONTEXT, epilog=_status_help(TUNE_STATUS))
@_spec_arg()
@click.option("--profile", "profile", required=True, type=click.Path(dir_okay=False),
              help="The workload: the profile a `p2gen build --profile` of this spec wrote.")
@click.option("--trace", "trace_path", type=click.Path(dir_okay=False),
              help="Measure the candidates by replaying this trace (a `p2gen build --trace` "
                   "log of this spec) exactly, instead of a workload synthesised from the "
                   "profile (which still sizes and ranks them).")
@click.option("--run", "run_cmd", metavar="CMD",
              help="Measure the candidates by running your program: each candidate built "
                   "(header, source, lib<prefix>.a) into its own directory, named to CMD by "
                   "$P2GEN_TUNE_DIR; CMD (a shell command) runs once per candidate untimed "
                   "(build your program there), then --reps times timed, in random order; "
                   "its output must be the same on every candidate.")
@click.option("--top", default=5, show_default=True, type=click.IntRange(1, 50),
              help="Candidates measured (the best by the planner's costs), beside the spec's "
                   "own equation.")
@click.option("--reps", default=5, show_default=True, type=click.IntRange(1, 100),
              help="Runs of the measuring binary (separate processes, random order).")
@click.option("--container", "containers", multiple=True, metavar="NAME",
              help="Tune only this container (repeatable; default: every one the profile "
                   "saw finds, walks or changes on).")
@click.option("--dry-run", is_flag=True, help="Print the unified diff; leave the spec as it is.")
@click.option("--check", "check_only", is_flag=True,
              help="Rewrite nothing; exit 3 if a container's equation is slower than the best "
                   "found by more than --margin.")
@click.option("--margin", default="10%", show_default=True, callback=_margin,
              help="--check's tolerance: a fraction (0.1) or a percentage (10%).")
@click.option("--seed", type=int, default=None, help="Seed of the runs' random orders.")
@click.option("--jobs", default=2, show_default=True, type=click.IntRange(1, 64),
              help="Compilers run at once.")
@click.option("--cc", default=lambda: os.environ.get("CC", "cc"), show_default="$CC or cc",
              help="C compiler.")
@click.option("-q", "--quiet", is_flag=True, help="No progress lines on stderr.")
def tune(spec, profile, trace_path, run_cmd, top, reps, containers, dry_run, check_only, margin,
         seed, jobs, cc, quiet):
    """Find the fastest equation of SPEC's containers for the workload in --profile.

    Per container: enumerate the equations that keep its API and semantics, rank them by the
    planner's costs fed the profile's counts and sizes, build the best --top and the spec's
    own into one binary, run them --reps times on a workload synthesised from the profile
    (or replaying --trace),
    and write the fastest back into SPEC with a comment block of evidence (ties within the
    noise keep the spec's own equation)."""
    from .tune_run import tune as run_tune
    from .tune_write import evidence, machine, rewrite, unified_diff
    from .toolchain import write_atomic

    def progress(msg: str) -> None:
        if not quiet:
            click.echo(f"p2gen tune: {msg}", err=True)
    if trace_path and run_cmd:
        raise click.UsageError("--trace and --run are two ways to measure: give one")
    try:
        source, outcomes = run_tune(spec, profile, top, reps, list(containers) or None, cc, jobs,
                                    progress, seed, trace_path, run_cmd)
        if check_only:
            slow = [o for o in outcomes if o.slower_by() > margin]
            for o in outcomes:
                click.echo(f"{o.container}: the spec's equation is {o.slower_by():+.1%} against "
                           f"the best found (margin {margin:.0%}, noise band {o.band:.1%})"
                           + (": SLOWER" if o in slow else ""))
            sys.exit(3 if slow else 0)
        mach = machine()
        new = rewrite(source, spec, outcomes, reps, mach)
        for o in outcomes:
            what = ("keeps its equation" if o.pick.index == 0 else
                    f"-> {o.candidates[o.pick.index].label}")
            own = (f"takes {o.current.median / o.pick.median:.2f}x the pick's time"
                   if o.current else "is too slow to measure")
            click.echo(f"{o.container}: {what} (the spec's own {own}; noise band "
                       f"{o.band:.1%})")
            if o.pick.index == 0:      # nothing written: the evidence here
                click.echo("".join(f"  {line}\n" for line in evidence(o, reps, mach)), nl=False)
        if dry_run:
            click.echo(unified_diff(source, new, spec), nl=False)
        elif new != source:
            write_atomic(spec, new)
    except P2Error as e:
        _fail(e)
    except OSError as e:
        _fail(EnvError(f"error: {os_reason(e)}"))


# the benchmarks' commands (p2gen bench ...): their own module, under this group
main.add_command(bench)


if __name__ == "__main__":  # pragma: no cover
    main()
