"""What the benchmark commands (`p2gen bench tpcb|oo7|range|labflow|python`) share:
compiling with stamps (a step reruns only when its command or an input changed), compiling in
parallel, the two ways a generated variant is built (zero-cost layering: as the README tells users
to, p2gen build's lib<prefix>.a and the program compiled -O2 with <PREFIX>_INLINE, no LTO;
and with -flto, a second row <NAME>-lto), linking one Google Benchmark binary, running it and
loading its JSON, medians and ratios, integer-list options, number formats and the pieces
of the Markdown reports (targets tables, problems, plots, the written file)."""
from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Iterable, Optional, Sequence

from ..errors import BuildError


def is_gcc(cc: str) -> bool:
    try:
        out = subprocess.run(shlex.split(cc) + ["--version"], capture_output=True, text=True).stdout
    except OSError:
        return False
    return "clang" not in out.lower()


# the name of a variant's second row, built with -flto across generated code and driver
LTO_SUFFIX = "-lto"


def users_cflags() -> list:
    """The generated .c and the runtime compiled exactly as `p2gen build` compiles them
    (its compile_objects: build.DEFAULT_CFLAGS + -fPIC) into lib<prefix>.a."""
    from ..build import DEFAULT_CFLAGS
    return list(DEFAULT_CFLAGS) + ["-fPIC"]


def lto_cflags(opt: str) -> list:
    """The generated .c of a variant's -lto row: LTO bytecode, optimised at link."""
    return ["-std=c11", opt, "-flto"]


def inline_define(prefix: str) -> str:
    """What the README's C example defines before including a generated header: the API
    compiled into the user's file as static inline functions."""
    return f"-D{prefix.upper()}_INLINE"


# the C++ headers of bench/ the drivers share (package data of p2gen.bench): flags, main(),
# SQLite and LMDB helpers, the head of a generated variant's driver, the random stream
SHARED_HEADERS = ("flags.h", "bench_main.h", "sqlite_util.h", "lmdb_util.h", "p2_variant.h",
                  "splitmix64.h")


def shared_headers(src: Path) -> list:
    """The shared headers beside benchmark directory src (in its parent), as paths."""
    return [src.parent / h for h in SHARED_HEADERS]


def checked_sources(src: Path, files: Sequence[str], bench: str) -> Path:
    """The directory of benchmark `bench`'s C/C++ drivers (package data beside its run.py:
    bench/tpcb/ ships as p2gen.bench.tpcb), checked to hold `files` and the shared headers
    in its parent."""
    for f in tuple(files) + tuple("../" + h for h in SHARED_HEADERS):
        if not (src / f).exists():
            raise BuildError(f"benchmark source {(src / f).resolve()} not found: the p2gen package "
                             f"ships bench/{bench}/ as p2gen.bench.{bench}; reinstall p2gen")
    return src


class Builder:
    """Runs compile steps, skipping those whose command and inputs are unchanged since the
    last run (a .stamp file beside each output); counts the steps it really ran."""

    def __init__(self, build_dir: Path, say: Callable[[str], None]):
        self.dir = build_dir
        self.say = say
        self.built = 0

    def stamp(self, cmd: list, deps: Iterable[Path]) -> str:
        h = hashlib.sha256(" ".join(cmd).encode())
        for d in deps:
            h.update(str(d).encode())
            h.update(Path(d).read_bytes())
        return h.hexdigest()

    def compile(self, cmd: list, out: Path, deps: Iterable[Path], what: str) -> Path:
        deps = list(deps)
        stamp_file = out.with_suffix(out.suffix + ".stamp")
        st = self.stamp(cmd, deps)
        if out.exists() and stamp_file.exists() and stamp_file.read_text() == st:
            return out
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise BuildError(f"compiling {what} failed ({shlex.join(cmd)}):\n{proc.stderr.strip()}")
        stamp_file.write_text(st)
        self.built += 1
        return out

    def compile_all(self, tasks: Sequence[tuple], jobs: Optional[int] = None) -> list:
        """tasks: (cmd, out, deps, what) tuples; compiled in parallel; the outputs in order."""
        with ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 2) as pool:
            return list(pool.map(lambda t: self.compile(*t), tasks))

    def archive_all(self, archives: Sequence[tuple], objs: Sequence[Path],
                    jobs: Optional[int] = None) -> list:
        """archives: (lib<prefix>.a, its member objects) made with `ar rcs` as p2gen build
        makes them. Returns what to link: objs that are no archive's member, then the
        archives (the users' link line: app.o libX.a)."""
        ar = shutil.which("ar") or "ar"
        self.compile_all([([ar, "rcs", str(lib)] + [str(m) for m in members], lib, members, lib.name)
                          for lib, members in archives], jobs)
        members = {m for _, ms in archives for m in ms}
        return [o for o in objs if o not in members] + [a for a, _ in archives]

    def link(self, exe: Path, objs: Sequence[Path], libs: Sequence[str], *, cxx: str, opt: str,
             lto: bool, hint: str = "") -> Path:
        """Link objs into exe (LTO across every object when lto), unless up to date;
        the stamp is exe's name + .stamp beside it."""
        cmd = shlex.split(cxx) + [opt] + (["-flto=auto" if is_gcc(cxx) else "-flto"] if lto else []) \
            + ["-o", str(exe)] + [str(o) for o in objs] + list(libs)
        st = self.stamp(cmd, objs)
        stamp_file = exe.parent / (exe.name + ".stamp")
        if not (exe.exists() and stamp_file.exists() and stamp_file.read_text() == st):
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                extra = f"\n({hint})" if hint and "cannot find -l" in proc.stderr else ""
                raise BuildError(f"linking failed ({shlex.join(cmd)}):\n{proc.stderr.strip()}{extra}")
            stamp_file.write_text(st)
            self.built += 1
        return exe


def ints(text: Optional[str], what: str) -> Optional[tuple]:
    """"2-5,8" -> (2, 3, 4, 5, 8); None stays None."""
    if text is None:
        return None
    out = []
    for part in re.split(r"[,\s]+", text.strip()):
        if not part:
            continue
        m = re.fullmatch(r"(\d+)(?:-|\.\.)(\d+)", part)
        if m:
            out.extend(range(int(m.group(1)), int(m.group(2)) + 1))
        elif part.isdigit():
            out.append(int(part))
        else:
            raise BuildError(f"{what}: not a list of integers or ranges (a-b): {text!r}")
    if not out:
        raise BuildError(f"{what}: empty list")
    return tuple(out)


def fmt_ms(x: Optional[float]) -> str:
    return fmt_steps(x, ((100, "{:,.0f}"), (10, "{:.1f}"), (None, "{:.2f}")))


def run_benchmarks(args: Sequence[str], json_out: str, family: str, line_re: "re.Pattern",
                   describe: Callable[["re.Match", Optional[dict], str], str],
                   say: Callable[[str], None] = lambda m: None, runs_each: int = 1,
                   env: Optional[dict] = None, cwd: Optional[str] = None) -> int:
    """Run a Google Benchmark binary (`args`: it and its flags) with JSON to json_out,
    saying one progress line per finished benchmark: `line_re` picks the console lines of
    benchmarks (names starting `family/`), `describe(match, counters, error)` says what one
    finished with (counters None and error set when it errored). Lines on stderr that
    report a failure are passed on; runs_each: the runs of every listed benchmark
    (--benchmark_repetitions); env, cwd: the binary's environment and working directory.
    Returns the binary's exit status."""
    json_out = os.path.abspath(json_out)
    listed = subprocess.run(list(args) + ["--benchmark_list_tests=true"], capture_output=True,
                            text=True, env=env, cwd=cwd)
    if listed.returncode != 0:
        raise BuildError(f"{args[0]} --benchmark_list_tests failed:\n{listed.stderr.strip()}")
    total = runs_each * sum(1 for line in listed.stdout.splitlines() if line.startswith(family + "/"))
    os.makedirs(os.path.dirname(os.path.abspath(json_out)), exist_ok=True)
    cmd = list(args) + [f"--benchmark_out={json_out}", "--benchmark_out_format=json",
                        "--benchmark_format=console", "--benchmark_color=false"]
    say(f"running {total} benchmarks: {shlex.join(cmd)}")
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            bufsize=1, env=env, cwd=cwd)

    def pump_err():
        for line in proc.stderr:
            line = line.rstrip("\n")
            if "FAIL" in line or "ERROR" in line.upper():
                say(line)

    th = threading.Thread(target=pump_err, daemon=True)
    th.start()
    done = 0
    for line in proc.stdout:
        m = line_re.match(line.strip())
        if not m:
            continue
        done += 1
        rest = line.strip().split(None, 1)[1] if " " in line.strip() else ""
        if "ERROR OCCURRED" in rest:
            info = describe(m, None, rest.strip())
        else:
            info = describe(m, dict(re.findall(r"(\w+)=(\S+)", rest)), "")
        say(f"[{done:>{len(str(total))}}/{total}] {time.perf_counter() - t0:6.1f}s  {info}")
    rc = proc.wait()
    th.join(timeout=5)
    return rc


def driver_cxxflags(opt: str) -> list:
    """The C++ drivers and references (the user's program): `opt`, no LTO."""
    return ["-std=c++17", opt, "-Wall", "-Wextra"]


def generate_variants(build_dir: str, variants: Sequence, say: Callable[[str], None],
                      manifest: Optional[tuple] = None) -> tuple:
    """Make build_dir/gen and build_dir/obj, generate every variant (its .spec as its
    .prefix) into gen; manifest (file name, JSON-able value) is written into build_dir.
    Returns (build_dir resolved, gen_dir, obj_dir, [(variant, generated)])."""
    from ..build import generate
    bdir = Path(build_dir).resolve()
    gen_dir, obj_dir = bdir / "gen", bdir / "obj"
    gen_dir.mkdir(parents=True, exist_ok=True)
    obj_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    gens = [(v, generate(v.spec, str(gen_dir), v.prefix, profile=getattr(v, "profile", False),
                         trace=getattr(v, "trace", False)))
            for v in variants]
    if gens:
        say(f"generated {len(gens)} data managers in {time.perf_counter() - t0:.1f} s")
    if manifest:
        (bdir / manifest[0]).write_text(json.dumps(manifest[1], indent=1))
    return bdir, gen_dir, obj_dir, gens


def users_build_steps(gen_dir: Path, obj_dir: Path, variants: Sequence[tuple], *, cc: str,
                      cxx: str, cxxflags: Sequence[str], driver: Path, driver_deps: Sequence[Path],
                      include_dirs: Sequence[Path], opt: str = "-O2",
                      gen_opt: Optional[str] = None) -> tuple[list, list]:
    """The compile steps that build generated variants as the README tells users to: the
    runtime and each variant's generated .c compiled as `p2gen build` compiles them into
    lib<prefix>.a, and the one driver source (the user's program) compiled once per variant
    with cxxflags, <PREFIX>_INLINE and the variant's own -D definitions. A variant marked
    lto instead has its .c compiled with lto_cflags(opt) (no archive: its object takes part
    in link-time optimisation) and its driver with -flto. The runtime is compiled once, the
    users' way, and serves both (its symbols are not prefixed; it is off the hot paths):
    its object is the toolchain's, cached per compiler and flags (runtime_object_in), as
    `p2gen build` gets it, copied into obj_dir.

    variants: (prefix, generated (build.generate's result), driver defines[, lto]) per
    variant; none: no steps. gen_opt (tests only: their runs are tiny) comes after the
    users' flags of the generated .c; the benchmarks never pass it. Returns (tasks for Builder.compile_all, archives for
    Builder.archive_all)."""
    if not variants:
        return [], []
    from ..toolchain import cc_command, runtime_object_in
    user_cflags = users_cflags()
    runtime_o = Path(runtime_object_in(str(obj_dir), cc_command(cc), user_cflags))
    tasks, archives = [], []
    incs = [f"-I{d}" for d in include_dirs] + [f"-I{gen_dir}"]
    for prefix, g, defs, *lto in variants:
        lto = bool(lto and lto[0])
        c_src, obj = Path(g.source), obj_dir / f"{prefix}.o"
        gen_cflags = lto_cflags(opt) if lto else user_cflags + ([gen_opt] if gen_opt else [])
        tasks.append((shlex.split(cc) + gen_cflags + ["-c", str(c_src), "-o", str(obj)],
                      obj, [c_src, Path(g.header)], c_src.name))
        if not lto:
            archives.append((obj_dir / f"lib{prefix}.a", [obj, runtime_o]))
        out = obj_dir / f"driver_{prefix}.o"
        tasks.append((shlex.split(cxx) + list(cxxflags) + (["-flto"] if lto else []) + list(defs) +
                      [inline_define(prefix)] + incs + ["-c", str(driver), "-o", str(out)],
                      # <PREFIX>_INLINE: the header includes the generated .c (and the runtime's header)
                      out, [driver, *driver_deps, *shared_headers(driver.parent), Path(g.header), c_src,
                            gen_dir / "p2_runtime.h"],
                      f"{driver.name} for {prefix}"))
    if not archives:          # every variant -lto: the runtime linked from its own archive
        archives.append((obj_dir / "libp2_runtime.a", [runtime_o]))
    return tasks, archives


def source_steps(src: Path, files: Sequence[str], obj_dir: Path, *, cxx: str,
                 cxxflags: Sequence[str], deps: Sequence[Path]) -> list:
    """A compile step per C++ source of src that is no variant's driver (references, main):
    obj_dir/<stem>.o, rebuilt when it, one of deps or a shared header changes."""
    tasks = []
    for f in files:
        out = obj_dir / (Path(f).stem + ".o")
        tasks.append((shlex.split(cxx) + list(cxxflags) + [f"-I{src}", "-c", str(src / f), "-o", str(out)],
                      out, [src / f, *deps, *shared_headers(src)], f))
    return tasks


def present_sources(src: Path, files: Sequence[str], say: Callable[[str], None],
                    what: str = "its system is left out") -> list:
    """The files of src that exist; each missing one is said (`<path> not found: <what>`)."""
    out = []
    for f in files:
        if (src / f).exists():
            out.append(f)
        else:
            say(f"{src / f} not found: {what}")
    return out


def compile_and_link(bdir: Path, exe_name: str, tasks: Sequence[tuple], archives: Sequence[tuple],
                     libs: Sequence[str], *, cxx: str, opt: str, lto: bool, hint: str,
                     jobs: Optional[int], say: Callable[[str], None]) -> Path:
    """Compile tasks in parallel, archive, link bdir/exe_name (objects first, then the
    archives: the users' link line app.o libX.a; LTO variants' objects take part in
    link-time optimisation, the rest is linked as is); says what it built. Returns exe."""
    b = Builder(bdir, say)
    t1 = time.perf_counter()
    objs = b.compile_all(tasks, jobs)
    link_objs = b.archive_all(archives, objs, jobs)
    exe = b.link(bdir / exe_name, link_objs, list(libs), cxx=cxx, opt=opt, lto=lto, hint=hint)
    say(f"built {exe} ({b.built} steps, {len(tasks) + len(archives) - b.built + 1} up to date) in "
        f"{time.perf_counter() - t1:.1f} s")
    return exe


# ---------------------------------------------------------------------------------------
# Google Benchmark's JSON, medians and ratios

def load_benchmarks(json_path: str, name: "re.Pattern", key: str = "name") -> tuple[dict, list]:
    """(context, [(match, entry, error)]): the iteration runs (not the aggregates of
    repetitions) of a Google Benchmark JSON file whose `key` (name or run_name) `name`
    matches; error is the run's error message or None."""
    with open(json_path, encoding="utf-8") as f:
        data = json.load(f)
    out = []
    for b in data.get("benchmarks", []):
        m = name.match(b.get(key, b.get("name", "")))
        if not m or b.get("run_type", "iteration") != "iteration":
            continue
        out.append((m, b, b.get("error_message") if b.get("error_occurred") else None))
    return data.get("context", {}), out


def numbers(entry: dict, bools: bool = False) -> dict:
    """A benchmark entry's numeric fields (its counters and times); bools: True and False too."""
    return {k: v for k, v in entry.items()
            if isinstance(v, (int, float)) and (bools or not isinstance(v, bool))}


def median_of(rows: Iterable, key: str) -> Optional[float]:
    """The median of row.get(key) over rows that have it, else None."""
    vals = [r.get(key) for r in rows if r.get(key) is not None]
    return statistics.median(vals) if vals else None


def ratio(a: Optional[float], b: Optional[float]) -> Optional[float]:
    """a / b, None when either is missing or b is 0."""
    if a is None or b is None or b == 0:
        return None
    return a / b


def fmt_x(r: Optional[float], spec: str = ".2f") -> str:
    """A ratio: `1.23×`, `—` for none."""
    return "—" if r is None else f"{r:{spec}}×"


def fmt_steps(x: Optional[float], steps: Sequence[tuple], none: str = "—") -> str:
    """x written by the first (bound, format) of steps with x >= bound, or the last step
    (its bound None) when x reaches none; format: a str.format template of x, or a
    callable; `none` for None."""
    if x is None:
        return none
    for bound, fmt in steps:
        if bound is None or x >= bound:
            return fmt(x) if callable(fmt) else fmt.format(x)
    raise ValueError(f"{x!r} below every step and no last step")


# ---------------------------------------------------------------------------------------
# the Markdown reports

def command_lines(command: Optional[str]) -> list:
    """The report's `Command: ...` paragraph, if the command line is known."""
    return [f"Command: `{command}`", ""] if command else []


def host_text(context: dict, mhz: bool = False) -> str:
    """`host H, N CPUs` (`at M MHz` with mhz) from a Google Benchmark context."""
    return (f"host {context.get('host_name', '?')}, {context.get('num_cpus', '?')} CPUs" +
            (f" at {context.get('mhz_per_cpu', '?')} MHz" if mhz else ""))


def load_text(context: dict, spec: str = ".2f") -> str:
    """The load averages of a context, `?` when there are none."""
    load = context.get("load_avg")
    return (", ".join(f"{x:{spec}}" for x in load) if isinstance(load, list) else "") or "?"


def targets_table(intro: str, rows: Sequence[tuple], fmt: Callable = fmt_x,
                  align: str = "---:") -> str:
    """A Markdown table of targets: rows (name, measured ratio or None, met)."""
    out = [intro, "", "| target | measured | met |", f"|---|{align}|:-:|"]
    for name, r, ok in rows:
        out.append(f"| {name} | {'—' if r is None else fmt(r)} | "
                   f"{'—' if r is None else ('yes' if ok else 'no')} |")
    out.append("")
    return "\n".join(out)


def bullets(title: str, items: Sequence[str]) -> list:
    """`title`, a list of items, a blank line; nothing without items."""
    return [title, ""] + [f"- {i}" for i in items] + [""] if items else []


def problems_lines(problems: Sequence[str]) -> list:
    return bullets("**Problems:**", problems)


def plot_files(out_dir: str, render: Callable[[], list], hint: str = "(or pass --no-plots)") -> list:
    """render()'s PNG paths (written into out_dir, made first), matplotlib checked first
    (BuildError naming the extra)."""
    os.makedirs(out_dir, exist_ok=True)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise BuildError(f"plots need matplotlib: pip install 'p2gen[bench]' {hint}")
    return render()


def image_lines(pngs: Sequence[str]) -> list:
    """Markdown images of PNGs beside the report, framed by blank lines."""
    return [""] + [f"![{Path(p).stem}]({Path(p).name})" for p in pngs] + [""]


def write_report(out_dir: str, name: str, md: Sequence[str]) -> str:
    """Join the lines, write out_dir/name (made if need be); returns the text."""
    text = "\n".join(md)
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, name), "w", encoding="utf-8") as f:
        f.write(text)
    return text


# ---------------------------------------------------------------------------------------
# the commands (`p2gen bench ...`): what they say

def command_line() -> Optional[str]:
    """The `p2gen ...` command line that is running, for the reports (None elsewhere)."""
    return "p2gen " + shlex.join(sys.argv[1:]) if sys.argv and sys.argv[0].endswith("p2gen") else None


def command_outputs(out: Optional[str], json_name: str) -> tuple:
    """(the output directory: out or bench/results, the JSON's path in it, command_line())."""
    out = out or "bench/results"
    return out, os.path.join(out, json_name), command_line()


def results_written(exe, rc: int, json_path: str, say: Callable[[str], None]) -> bool:
    """Whether the benchmark binary exe (exit status rc) wrote json_path; says so if not."""
    if os.path.exists(json_path):
        return True
    say(f"no results written ({exe} exited with {rc})")
    return False


def say_report(say: Callable[[str], None], text: str, problems: Sequence[str],
               wrote: Optional[Sequence[str]] = None, rc: int = 0) -> int:
    """Say a report, after a blank line and followed by the files written when it ends a
    run (wrote), then its problems; the command's exit status (1: a problem or rc != 0)."""
    if wrote is not None:
        say("")
    say(text)
    if wrote:
        say("wrote " + ", ".join(wrote))
    for p in problems:
        say(f"PROBLEM: {p}")
    return 1 if (rc != 0 or problems) else 0
