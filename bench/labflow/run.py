"""`p2gen bench labflow`: LabFlow-1 (Bonner, Shrufi, Rozen 1996) replayed on every variant of
type_equations/labflow/ and on the peers, each in its own process under a memory budget.

What a run does:
1. generates the benchmark log for the seed and memory budget X (gen.py; cached in the
   build directory by seed and X);
2. builds one Google Benchmark binary: every generated variant the way the README tells
   users to build (lib<prefix>.a, the driver compiled -O2 with <PREFIX>_INLINE, no LTO),
   the driver (labflow_main.cc) and the peers (HAND, SQLITE, LMDB);
3. replays the log once per system, each in a fresh process under a memory limit of X
   (a cgroup memory controller, v2 or v1, when the machine lets us create one: the page
   cache of a mapped file counts against it, as RAM did on the paper's 32 MB machine);
   without one it runs uncapped and says so. A system the limit kills is reported
   "n/a (OOM)", as the paper reported the runs it could not finish;
4. checks that every system wrote the same query output, and that it is the reference
   model's (bench/labflow/model.py) when the log is small enough to replay in Python;
5. writes labflow.json (each system's Google Benchmark output), labflow.md (the table after
   the paper's: per interval, elapsed / user / sys seconds, major faults, file size, commit
   times) and labflow.png.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from ...errors import BuildError
from .. import spec_dir
from ..common import (checked_sources, compile_and_link, driver_cxxflags, generate_variants,
                      present_sources, source_steps, users_build_steps)
from . import gen as lfgen

SOURCE_DIR = Path(__file__).resolve().parent
SPEC_DIR = spec_dir("labflow")
P2_DRIVER = "labflow_p2.cc"
LIB_HINT = ("install Google Benchmark, SQLite and LMDB: apt-get install libbenchmark-dev "
            "libsqlite3-dev liblmdb-dev")

# the variants' names in tables: the spec's stem, upper case, '_' -> '-'
# (segmented.p2: SEGMENTED, all_transient.p2: ALL-TRANSIENT)
REFERENCE_VARIANT = "SEGMENTED"   # the one whose file the cut points are estimated for
# segmented variants and their twins with every container in one file (same indexes):
# the 2X target compares each pair's major faults
SEGMENT_TWINS = (("SEGMENTED", "ONE-FILE"), ("HIST-ILIST", "ONE-FILE-ILIST"))
# the model's Python replay is the oracle up to this many log bytes (about a minute: it
# replays some 10 MB of log a second)
MODEL_MAX_BYTES = 512 << 20
MODEL_TIMEOUT = 900


@dataclass
class Variant:
    name: str
    spec: str
    prefix: str
    persistent: bool
    files: tuple = ()
    hist_ilist: bool = False


def variant_from_spec(spec: Path) -> Variant:
    from ...build import planned
    checked = planned(str(spec))
    persistent = any(c.persistent for c in checked.containers)
    files = tuple(n for f in checked.files
                  for n in (f.path, *(f.path + x for li in f.mems for x in li.layer.side_files)))
    hist_ilist = any(r.name == "history" for r in checked.relationships)
    return Variant(variant_name(spec), str(spec),
                   "labflow_" + re.sub(r"[^A-Za-z0-9_]", "_", spec.stem).lower(),
                   persistent, files if persistent else (), hist_ilist)


def variant_name(spec: Path) -> str:
    return spec.stem.upper().replace("_", "-")


def default_variants(spec_dir: Optional[Path] = None, names: tuple = ()) -> list[Variant]:
    """Every *.p2 of type_equations/labflow/ (or only those named)."""
    d = Path(spec_dir) if spec_dir else SPEC_DIR
    specs = sorted(d.glob("*.p2")) if d.is_dir() else []
    return [variant_from_spec(p) for p in specs if not names or variant_name(p) in names]


def build(build_dir: str, *, cc: str = "cc", cxx: str = "c++", opt: str = "-O2",
          jobs: Optional[int] = None, variants: Optional[list] = None,
          say: Callable[[str], None] = lambda m: None) -> Path:
    """Generate every variant, compile it the users' way with its labflow_p2.cc object,
    the driver and the peers; link build_dir/labflow_bench."""
    from . import sources
    src = checked_sources(SOURCE_DIR, sources.DRIVER_SOURCES + (P2_DRIVER, "labflow.h"),
                          "labflow")
    variants = list(variants) if variants is not None else default_variants()
    bdir, gen_dir, obj_dir, gens = generate_variants(build_dir, variants, say, (
        "labflow_variants.json",
        [dict(name=v.name, spec=v.spec, prefix=v.prefix, persistent=v.persistent,
              files=list(v.files)) for v in variants]))
    cxxflags = driver_cxxflags(opt)
    header = src / "labflow.h"
    tasks, archives = users_build_steps(
        gen_dir, obj_dir,
        [(v.prefix, g,
          [f"-DP2_VARIANT={v.prefix}", f'-DP2_HEADER="{v.prefix}.h"', f'-DP2_NAME="{v.name}"',
           f"-DP2_PERSISTENT={int(v.persistent)}", f"-DP2_HIST_ILIST={int(v.hist_ilist)}",
           "-DP2_FILES=" + ",".join(json.dumps(f) for f in v.files)])
         for v, g in gens],
        cc=cc, cxx=cxx, cxxflags=cxxflags, driver=src / P2_DRIVER, driver_deps=[header],
        include_dirs=[src])
    peers = present_sources(src, list(sources.PEER_SOURCES.values()), say,
                            "its system is left out")
    tasks += source_steps(src, [f for f in sources.DRIVER_SOURCES + tuple(peers) if f.endswith(".cc")],
                          obj_dir, cxx=cxx, cxxflags=cxxflags, deps=[header])
    return compile_and_link(bdir, "labflow_bench", tasks, archives, sources.LIBS, cxx=cxx, opt=opt,
                            lto=False, hint=LIB_HINT, jobs=jobs, say=say)


# ---------------------------------------------------------------------------------------
# memory budget: a cgroup with a memory limit, one per replay

class MemoryCap:
    """A memory-limited cgroup the replays run in, or None when the machine does not let
    us make one (say() tells why). cgroup v2: memory.max under our own cgroup (needs the
    memory controller delegated); v1: memory.limit_in_bytes in the memory hierarchy."""

    def __init__(self, path: Path, version: int, limit: int):
        self.path, self.version, self.limit = path, version, limit

    @staticmethod
    def make(limit: int, say: Callable[[str], None]) -> Optional["MemoryCap"]:
        name = f"p2gen-labflow-{os.getpid()}"
        try:
            lines = Path("/proc/self/cgroup").read_text().splitlines()
        except OSError as e:
            say(f"no memory cap: cannot read /proc/self/cgroup ({e.strerror})")
            return None
        v1 = next((l.split(":", 2)[2] for l in lines if l.split(":")[1:2] == ["memory"]), None)
        v2 = next((l.split(":", 2)[2] for l in lines if l.startswith("0::")), None)
        tries = []
        if v2 is not None:
            for root in (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/unified")):
                if (root / "cgroup.controllers").exists():
                    tries.append((root / v2.lstrip("/") / name, 2))
        if v1 is not None:
            tries.append((Path("/sys/fs/cgroup/memory") / v1.lstrip("/") / name, 1))
        why = "no cgroup memory controller is mounted"
        for path, version in tries:
            knob = "memory.max" if version == 2 else "memory.limit_in_bytes"
            try:
                path.mkdir(exist_ok=True)
                (path / knob).write_text(str(limit))
                if version == 1:
                    try:    # no swap beyond the limit either, where swap accounting exists
                        (path / "memory.memsw.limit_in_bytes").write_text(str(limit))
                    except OSError:
                        pass
                else:
                    try:
                        (path / "memory.swap.max").write_text("0")
                    except OSError:
                        pass
                return MemoryCap(path, version, limit)
            except OSError as e:
                why = f"cannot create a memory cgroup at {path} ({e.strerror})"
                try:
                    path.rmdir()
                except OSError:
                    pass
        say(f"no memory cap: {why}; the replays run uncapped")
        return None

    def set_limit(self, limit: int) -> None:
        knob = "memory.max" if self.version == 2 else "memory.limit_in_bytes"
        if self.version == 1:   # memsw must stay >= the limit: raise it first, lower it last
            try:
                (self.path / "memory.memsw.limit_in_bytes").write_text(str(max(limit, self.limit)))
            except OSError:
                pass
        (self.path / knob).write_text(str(limit))
        if self.version == 1:
            try:
                (self.path / "memory.memsw.limit_in_bytes").write_text(str(limit))
            except OSError:
                pass
        self.limit = limit

    def reset_peak(self) -> None:
        knob = "memory.peak" if self.version == 2 else "memory.max_usage_in_bytes"
        try:
            (self.path / knob).write_text("0")
        except OSError:
            pass

    def baseline(self, cmd: list) -> int:
        """The memory the cgroup is charged while `cmd` runs to its end (the binary started,
        its libraries loaded, nothing replayed): the allowance on top of X."""
        self.reset_peak()
        subprocess.run(cmd, capture_output=True, preexec_fn=self.enter)
        return self.peak() or 0

    def enter(self) -> None:
        """Move the calling process into the cgroup (a child's preexec_fn)."""
        (self.path / "cgroup.procs").write_text(str(os.getpid()))

    def oom_killed(self) -> bool:
        try:
            if self.version == 2:
                ev = (self.path / "memory.events").read_text()
                return int(re.search(r"oom_kill (\d+)", ev).group(1)) > 0
            return int(re.search(r"oom_kill (\d+)",
                                 (self.path / "memory.oom_control").read_text()).group(1)) > 0
        except (OSError, AttributeError):
            return False

    def peak(self) -> Optional[int]:
        knob = "memory.peak" if self.version == 2 else "memory.max_usage_in_bytes"
        try:
            return int((self.path / knob).read_text())
        except (OSError, ValueError):
            return None

    def remove(self) -> None:
        try:
            self.path.rmdir()
        except OSError:
            pass


# ---------------------------------------------------------------------------------------
# run

@dataclass
class Replay:
    system: str
    rc: int
    json_path: str
    out_path: str
    oom: bool = False
    peak: Optional[int] = None
    error: str = ""
    wall_s: float = 0.0
    not_continued: bool = False     # stopped at the deadline (a run that thrashes)
    digest: str = ""            # --labflow_verify's digest of every record after END
    reopened: str = ""          # the same after a close and reopen (persistent systems)


def log_path(build_dir: str, seed: int, memory: int) -> Path:
    return Path(build_dir) / f"labflow1-{seed}-{memory}.log"


def ensure_log(build_dir: str, seed: int, memory: int, say) -> Path:
    p = log_path(build_dir, seed, memory)
    if p.exists() and p.stat().st_size and p.read_bytes()[-1:] == b"\n":
        return p
    p.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    tmp = p.with_suffix(".tmp")
    with open(tmp, "wb") as f:
        s = lfgen.generate(f, seed=seed, memory=memory)
    os.replace(tmp, p)
    say(f"generated the log {p} ({s.lines:,} lines, {p.stat().st_size / 2**20:.1f} MiB) in "
        f"{time.perf_counter() - t0:.1f} s")
    return p


def systems_of(exe: Path) -> list[str]:
    proc = subprocess.run([str(exe), "--benchmark_list_tests=true"], capture_output=True,
                          text=True)
    if proc.returncode != 0:
        raise BuildError(f"{exe} --benchmark_list_tests failed:\n{proc.stderr.strip()}")
    out = []
    for line in proc.stdout.splitlines():
        m = re.match(r"labflow/(.+)/(0\.5X|1X|2X)(/|$)", line.strip())
        if m and m.group(1) not in out:
            out.append(m.group(1))
    return out


def replay(exe: Path, system: str, log: Path, out_dir: Path, cap: Optional[MemoryCap],
           deadline: float, say) -> Replay:
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", system)
    json_path, out_path = out_dir / f"{safe}.json", out_dir / f"{safe}.out"
    db_dir = Path(tempfile.mkdtemp(prefix=f"labflow-{safe}-", dir=out_dir))
    cmd = [str(exe), f"--labflow_system={system}", f"--labflow_log={log}",
           f"--labflow_out={out_path}", f"--labflow_dir={db_dir}",
           # after END: the workload's invariants, a digest of every record, and for a
           # persistent system the same digest after a close and reopen
           "--labflow_verify",
           f"--labflow_deadline={deadline:g}",
           f"--benchmark_out={json_path}", "--benchmark_out_format=json",
           "--benchmark_format=console", "--benchmark_color=false"]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True,
                          preexec_fn=cap.enter if cap else None)
    r = Replay(system, proc.returncode, str(json_path), str(out_path),
               wall_s=time.perf_counter() - t0)
    if proc.returncode == 0 and not load_rows([r]):
        proc.returncode = r.rc = 1      # a replay that measured nothing is a failure
        proc.stderr += "\nno interval was measured (the benchmark JSON has none)"
    if cap:
        r.oom = proc.returncode == -signal.SIGKILL and cap.oom_killed()
        r.peak = cap.peak()
    m = re.search(r"labflow verify: .* digest ([0-9a-f]+)", proc.stderr)
    r.digest = m.group(1) if m else ""
    m = re.search(r"labflow verify: .* reopened digest ([0-9a-f]+)", proc.stderr)
    r.reopened = m.group(1) if m else ""
    r.not_continued = proc.returncode == 4     # the driver's exit status past the deadline
    if proc.returncode != 0:
        r.error = "killed by the memory limit (OOM)" if r.oom else \
            (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
    shutil.rmtree(db_dir, ignore_errors=True)
    return r


def model_output(log: Path, build_dir: str, say) -> Optional[Path]:
    """The reference model's query output for the log (cached beside it), or None when the
    log is too large to replay in Python in reasonable time."""
    out = log.with_suffix(".model.out")
    if out.exists():
        return out
    if log.stat().st_size > MODEL_MAX_BYTES:
        say(f"the log is {log.stat().st_size / 2**20:.0f} MiB: the systems are compared with "
            f"each other only (the Python model checks logs up to {MODEL_MAX_BYTES >> 20} MiB)")
        return None
    from .model import LogError, replay_file
    t0 = time.perf_counter()
    try:
        m = replay_file(log)
    except LogError as e:
        raise BuildError(f"the reference model refused the log {log}: {e}")
    tmp = out.with_suffix(".tmp")
    tmp.write_text("".join(line + "\n" for line in m.out))
    os.replace(tmp, out)
    say(f"reference model replayed the log in {time.perf_counter() - t0:.1f} s")
    return out


def compare_outputs(replays: list, reference: Optional[Path]) -> list[str]:
    """Problems: systems whose query output differs from the model's (or, without the
    model, from the first system's that finished)."""
    done = [r for r in replays if r.rc == 0]
    problems = []
    if not done:
        return problems
    ref_path, ref_name = (reference, "the reference model") if reference else \
        (Path(done[0].out_path), done[0].system)
    want = ref_path.read_bytes()
    digests = {r.digest for r in done}
    if len(digests) > 1:
        problems.append("the digests of every record after END differ: " +
                        ", ".join(f"{r.system} {r.digest or '(none)'}" for r in done))
    for r in done:
        if r.reopened and r.reopened != r.digest:
            problems.append(f"{r.system}: the digest after a reopen differs ({r.reopened} "
                            f"vs {r.digest})")
    for r in done:
        got = Path(r.out_path).read_bytes()
        if got != want:
            gl, wl = got.splitlines(), want.splitlines()
            i = next((k for k, (a, b) in enumerate(zip(gl, wl)) if a != b), min(len(gl), len(wl)))
            problems.append(f"{r.system}: query output differs from {ref_name}'s at line {i + 1} "
                            f"({len(gl):,} lines vs {len(wl):,})")
    return problems


def load_rows(replays: list) -> list[dict]:
    rows = []
    for r in replays:
        if r.rc != 0 and not Path(r.json_path).exists():
            continue
        try:
            data = json.loads(Path(r.json_path).read_text())
        except (OSError, ValueError):
            continue
        for b in data.get("benchmarks", []):
            m = re.match(r"labflow/(.+)/(0\.5X|1X|2X)", b.get("name", ""))
            if not m:
                continue
            row = dict(system=m.group(1), cut=m.group(2), error=b.get("error_message", ""))
            if "real_time" in b and not b.get("error_occurred"):
                unit = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[b.get("time_unit", "ns")]
                row["elapsed_s"] = b["real_time"] * unit
            for k in ("user_s", "sys_s", "majflt", "minflt", "backlog_commit_s",
                      "interval_commit_s", "file_bytes", "alloc_bytes", "cut_file_bytes",
                      "requests"):
                if k in b and "elapsed_s" in row:
                    row[k] = b[k]
            rows.append(row)
    return rows


def _mb(x) -> str:
    return "—" if x is None else f"{x / 2**20:.1f}"


def _s(x) -> str:
    if x is None:
        return "—"
    return f"{x:.3f}" if x < 10 else f"{x:.1f}"


def render_table(rows: list, replays: list, context: dict) -> str:
    cuts = list(lfgen.CUT_NAMES)
    by = {(r["system"], r["cut"]): r for r in rows}
    systems = [r.system for r in replays]
    lines = [
        f"LabFlow-1, seed {context['seed']}, X = {context['memory'] / 2**20:g} MiB "
        f"({context['cap']}); one replay per system, each in a fresh process.",
        "",
        "Per interval (10,000 requests and the two reports, markers 4 to 7): elapsed / user / "
        "sys seconds, major faults, file MiB at marker 11 (apparent / allocated); commit "
        "seconds (backlog at marker 3 / the interval's at marker 10).",
        "",
        "| system | " + " | ".join(cuts) + " |",
        "|---|" + "---|" * len(cuts),
    ]
    for s in systems:
        rep = next(r for r in replays if r.system == s)
        cells = []
        for c in cuts:
            row = by.get((s, c))
            if row is None or "elapsed_s" not in row:
                cells.append("n/a (OOM)" if rep.oom else
                             "n/a (not continued)" if rep.not_continued else
                             "n/a" if rep.rc else "—")
                continue
            cell = (f"{_s(row['elapsed_s'])} / {_s(row.get('user_s'))} / {_s(row.get('sys_s'))}, "
                    f"{int(row.get('majflt', 0)):,} flt")
            if row.get("file_bytes"):
                cell += f", {_mb(row['file_bytes'])} / {_mb(row.get('alloc_bytes'))} MiB"
            cell += (f"; commit {_s(row.get('backlog_commit_s'))} / "
                     f"{_s(row.get('interval_commit_s'))}")
            cells.append(cell)
        lines.append(f"| {s} | " + " | ".join(cells) + " |")
    # ratios the targets name
    lines += ["", "Ratios (elapsed of the interval):", ""]
    sq = {c: by.get(("SQLITE", c), {}).get("elapsed_s") for c in cuts}
    for s in systems:
        if s in ("SQLITE", "LMDB", "HAND"):
            continue
        e = by.get((s, "0.5X"), {}).get("elapsed_s")
        if e and sq["0.5X"]:
            lines.append(f"- {s} at 0.5X: SQLite / {s} = {sq['0.5X'] / e:.1f}×")
    # the spec's check of the log's byte model: the reference variant's files at the cut
    # points within 10 % of 0.5X, 1X and 2X
    sizes = [by.get((REFERENCE_VARIANT, c), {}).get("cut_file_bytes") for c in cuts]
    if all(sizes):
        wanted = [context["memory"] * a / b for a, b in lfgen.CUT_FACTORS]
        ratios = [x / w for x, w in zip(sizes, wanted)]
        lines.append(f"- {REFERENCE_VARIANT}'s files at the cut points (marker 3): "
                     + " / ".join(_mb(x) for x in sizes) + " MiB = "
                     + " / ".join(f"{r:.2f}" for r in ratios) + " × 0.5X / 1X / 2X ("
                     + ("within" if all(abs(r - 1) <= 0.1 for r in ratios) else "not all within")
                     + " the spec's 10 %)")
    # the 2X target: a segmented variant's major faults against its one-file twin's (the
    # same equations, every container in one file)
    pairs = []
    for seg_name, one_name in SEGMENT_TWINS:
        seg = by.get((seg_name, "2X"), {}).get("majflt")
        one = by.get((one_name, "2X"), {}).get("majflt")
        if seg is not None and one is not None:
            pairs.append(f"{seg_name} {int(seg):,}, {one_name} {int(one):,}"
                         + (f" (ratio {seg / one:.2f})" if one else ""))
    if pairs:
        lines.append("- at 2X, major faults of hot/cold files against one file with the same "
                     "indexes: " + "; ".join(pairs))
    return "\n".join(lines) + "\n"


def render_plot(rows: list, replays: list, png: str) -> Optional[str]:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    cuts = list(lfgen.CUT_NAMES)
    systems = [r.system for r in replays]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    by = {(r["system"], r["cut"]): r for r in rows}
    for ax, key, title in ((axes[0], "elapsed_s", "interval elapsed (s)"),
                           (axes[1], "majflt", "major faults")):
        for s in systems:
            ys = [by.get((s, c), {}).get(key) for c in cuts]
            xs = [i for i, y in enumerate(ys) if y is not None]
            if xs:
                ax.plot(xs, [ys[i] for i in xs], marker="o", label=s)
        ax.set_xticks(range(len(cuts)), cuts)
        ax.set_title(title)
        ax.set_yscale("symlog" if key == "majflt" else "log")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)
    return png


def command(*, memory: str, seed: int, out: str, build_dir: str, cc: str, cxx: str,
            systems: tuple = (), cap: bool = True, plots: bool = True, deadline: float = 300,
            say: Callable[[str], None] = print) -> int:
    x = lfgen.parse_size(memory)
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    log = ensure_log(build_dir, seed, x, say)
    # only the generated variants asked for (the peers are cheap to build)
    variants = default_variants(names=tuple(systems))
    exe = build(build_dir, cc=cc, cxx=cxx, variants=variants, say=say)
    available = systems_of(exe)
    chosen = [s for s in available if not systems or s in systems]
    unknown = [s for s in systems if s not in available]
    if unknown:
        raise BuildError(f"no system {', '.join(unknown)}; the binary has {', '.join(available)}")
    mc = MemoryCap.make(x, say) if cap else None
    cap_text = "uncapped"
    if mc:
        base = mc.baseline([str(exe), "--labflow_list"])
        mc.set_limit(x + base)
        cap_text = (f"capped by a cgroup v{mc.version} memory limit of X + {base / 2**20:.1f} MiB, "
                    f"what the binary takes at its start")
        say(f"memory limit: {cap_text}")
    reference = model_output(log, build_dir, say)
    replays = []
    try:
        for s in chosen:
            if mc:
                mc.reset_peak()
            r = replay(exe, s, log, out_dir, mc, deadline, say)
            replays.append(r)
            say(f"{s}: " + (f"done in {r.wall_s:.1f} s" if r.rc == 0 else f"failed: {r.error}") +
                (f" (peak memory {r.peak / 2**20:.1f} MiB)" if r.peak else ""))
    finally:
        if mc:
            mc.remove()
    problems = compare_outputs(replays, reference)
    problems += [f"{r.system}: {r.error}" for r in replays
                 if r.rc != 0 and not r.oom and not r.not_continued]
    rows = load_rows(replays)
    context = dict(seed=seed, memory=x, cap=cap_text, log=str(log),
                   oracle="model" if reference else "first system")
    (out_dir / "labflow.json").write_text(json.dumps(
        dict(context=context, rows=rows,
             replays=[r.__dict__ for r in replays], problems=problems), indent=1))
    md = render_table(rows, replays, context)
    if problems:
        md += "\n## Problems\n\n" + "".join(f"- {p}\n" for p in problems)
    (out_dir / "labflow.md").write_text(md)
    say(md)
    if plots:
        png = render_plot(rows, replays, str(out_dir / "labflow.png"))
        if png:
            say(f"wrote {png}")
    say(f"wrote {out_dir / 'labflow.md'} and {out_dir / 'labflow.json'}")
    return 1 if problems else 0
