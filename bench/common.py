"""What the benchmark commands (`p2gen bench tpcb`, `p2gen bench oo7`) share: compiling
with stamps (a step reruns only when its command or an input changed), compiling in
parallel, the two ways a generated variant is built (zero-cost layering: as the README tells users
to, p2gen build's lib<prefix>.a and the program compiled -O2 with <PREFIX>_INLINE, no LTO;
and with -flto, a second row <NAME>-lto), linking one Google Benchmark binary,
integer-list options and the formatting of milliseconds."""
from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import subprocess
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


def checked_sources(src: Path, files: Sequence[str], bench: str) -> Path:
    """The directory of benchmark `bench`'s C/C++ drivers (package data beside its run.py:
    bench/tpcb/ ships as p2gen.bench.tpcb), checked to hold `files` and ../flags.h."""
    for f in tuple(files) + ("../flags.h",):
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
    if x is None:
        return "—"
    if x >= 100:
        return f"{x:,.0f}"
    if x >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


def run_benchmarks(args: Sequence[str], json_out: str, family: str, line_re: "re.Pattern",
                   describe: Callable[["re.Match", Optional[dict], str], str],
                   say: Callable[[str], None] = lambda m: None, runs_each: int = 1) -> int:
    """Run a Google Benchmark binary (`args`: it and its flags) with JSON to json_out,
    saying one progress line per finished benchmark: `line_re` picks the console lines of
    benchmarks (names starting `family/`), `describe(match, counters, error)` says what one
    finished with (counters None and error set when it errored). Lines on stderr that
    report a failure are passed on; runs_each: the runs of every listed benchmark
    (--benchmark_repetitions). Returns the binary's exit status."""
    listed = subprocess.run(list(args) + ["--benchmark_list_tests=true"], capture_output=True,
                            text=True)
    if listed.returncode != 0:
        raise BuildError(f"{args[0]} --benchmark_list_tests failed:\n{listed.stderr.strip()}")
    total = runs_each * sum(1 for line in listed.stdout.splitlines() if line.startswith(family + "/"))
    os.makedirs(os.path.dirname(os.path.abspath(json_out)), exist_ok=True)
    cmd = list(args) + [f"--benchmark_out={json_out}", "--benchmark_out_format=json",
                        "--benchmark_format=console", "--benchmark_color=false"]
    say(f"running {total} benchmarks: {shlex.join(cmd)}")
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            bufsize=1)

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


def users_build_steps(gen_dir: Path, obj_dir: Path, variants: Sequence[tuple], *, cc: str,
                      cxx: str, cxxflags: Sequence[str], driver: Path, driver_deps: Sequence[Path],
                      include_dirs: Sequence[Path]) -> tuple[list, list]:
    """The compile steps that build generated variants as the README tells users to: the
    runtime and each variant's generated .c compiled as `p2gen build` compiles them into
    lib<prefix>.a, and the one driver source (the user's program) compiled once per variant
    with cxxflags, <PREFIX>_INLINE and the variant's own -D definitions.

    variants: (prefix, generated (build.generate's result), driver defines) per variant.
    Returns (tasks for Builder.compile_all, archives for Builder.archive_all)."""
    user_cflags = users_cflags()
    runtime_c, runtime_o = gen_dir / "p2_runtime.c", obj_dir / "p2_runtime.o"
    tasks = [(shlex.split(cc) + user_cflags + ["-c", str(runtime_c), "-o", str(runtime_o)],
              runtime_o, [runtime_c, gen_dir / "p2_runtime.h"], "p2_runtime.c")]
    archives = []
    incs = [f"-I{d}" for d in include_dirs] + [f"-I{gen_dir}"]
    for prefix, g, defs in variants:
        c_src, obj = Path(g.source), obj_dir / f"{prefix}.o"
        tasks.append((shlex.split(cc) + user_cflags + ["-c", str(c_src), "-o", str(obj)],
                      obj, [c_src, Path(g.header)], c_src.name))
        archives.append((obj_dir / f"lib{prefix}.a", [obj, runtime_o]))
        out = obj_dir / f"driver_{prefix}.o"
        tasks.append((shlex.split(cxx) + list(cxxflags) + list(defs) + [inline_define(prefix)] + incs +
                      ["-c", str(driver), "-o", str(out)],
                      # <PREFIX>_INLINE: the header includes the generated .c (and the runtime's header)
                      out, [driver, *driver_deps, Path(g.header), c_src, gen_dir / "p2_runtime.h"],
                      f"driver for {prefix}"))
    return tasks, archives
