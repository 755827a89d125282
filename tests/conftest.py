"""Shared fixtures. Keep this small and generic: anything specific to one test file
belongs in that file.

- `cc`: the C compiler (tests needing one are skipped without it).
- `san_env`: environment for running sanitizer-instrumented programs.
- `harness_builder`: build(spec_text, prefix, sanitize=True, extra_cflags=(), opt=None,
  strict=False, library=True) -> Built(exe, gen, strict), a sanitized harness of a spec
  (p2gen.harness; DEBUG_FLAG after its flags; `opt` after those, SAN_QUICK_OPT when
  sanitized unless given; library=False: the spec's C not linked, for a harness with
  <PREFIX>_INLINE), and with strict=True the spec's
  C and the harness also compiled as plain objects at STRICT_CFLAGS; cached across runs in
  .pytest_cache by the spec text, the flags and every source the generated code depends on
  (set P2GEN_TEST_NO_CACHE=1 to rebuild).
- `cache_lock(path)`: what builds into a cache shared by pytest-xdist's workers holds it.
- `object_cache_root(config)`: the toolchain's object cache (p2gen.toolchain.cached_object)
  in .pytest_cache, for sources several files compile alike (tests/oo7kit.py).
- `build_san_program(cc, exe, sources, ...)`: a sanitized program of a test's own (a driver
  over a spec's API) at san_quick_flags(), linked with the runtime's cached object
  (runtime_obj) rather than compiling p2_runtime.c into it.

scripts/test.sh runs the suite on every core (pytest-xdist, `--dist loadgroup`): the worker
processes share the build caches in .pytest_cache, so an entry is built under a lock by one
of them and reused by the others, and the caches are pruned once, before any worker starts.
Each test file runs on one worker (its module fixtures build once), except SPREAD_FILES
(test by test; those over a memory on a server together, on one worker).
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TESTS = Path(__file__).resolve().parent

# The tests are arranged like the code: compiler/ (parse, check, plan, emit, the command
# line, packaging), layers/ (the layer library through generated code), runtime/ (the
# hand-written C: files, journal, record log, verify, recover), bindings/ (the Python
# module), bench/ (the benchmarks' drivers and reports) and tune/ (profiles, the tuner).
# Helpers shared across them (model.py, crashkit.py, oo7kit.py, this file) and data (c/,
# specs/, golden/, fixtures/, fuzz/) stay here. Every directory is importable by name, since a test may use another's
# spec or helpers (test_python_differential.py draws test_differential.py's matrix).
TEST_DIRS = ("compiler", "layers", "runtime", "bindings", "bench", "tune")
for _d in (TESTS, *(TESTS / d for d in TEST_DIRS)):
    if str(_d) not in sys.path:
        sys.path.insert(0, str(_d))

CACHE_KEEP = 24   # harness builds kept in .pytest_cache
OBJECT_KEEP = 160        # objects kept in the object cache (about 2 MB each): a few OO7 builds
EXE_KEEP = 4             # programs linked from them kept (about 25 MB each)

# The sanitized programs the tests build carry no debug information (-g0, after any -g):
# under ASan a third less compile time, and a sanitizer report still names the functions
# on its stack. P2GEN_TEST_DEBUG=1 builds them with -g (files and lines in reports).
DEBUG_FLAG = "-g" if os.environ.get("P2GEN_TEST_DEBUG") == "1" else "-g0"

# The differential matrix's harnesses (~80,000 lines of C per spec) are compiled under
# ASan/UBSan at -O0 (SAN_QUICK_OPT: about half the CPU of -O1). Warnings that need the
# optimiser (-Wmaybe-uninitialized and the like) are then caught by one plain compile of
# each matrix spec's C and harness at STRICT_CFLAGS (strict=True): -O1 without sanitizers
# costs about a third of the sanitized -O1 build.
SAN_QUICK_OPT = "-O0"
# The same, for the sanitized programs built by p2gen's own functions (build_verifier,
# build_recoverer: extra flags after theirs), in the harness builder's order: their
# runtime object is the matrix's.
SAN_QUICK_FLAGS = (DEBUG_FLAG, SAN_QUICK_OPT)
# The Python modules tests build to check behaviour are compiled at -O0 without debug
# information (after Python's own CFLAGS: -O3 -g, about four times the compile time); the
# modules that stand for a user's build (test_python.py's bank, test_python_wheel.py, the
# benchmarks') keep Python's flags.
QUICK_PY_CFLAGS = ("-O0", "-g0")
STRICT_CFLAGS = ("-std=c11", "-O1", "-g0", "-Wall", "-Wextra", "-Werror")

# Files whose tests pytest-xdist hands out one by one: many tests sharing session fixtures
# whose builds are cached across processes (a second worker waits for the first one's build
# and reuses it). Every other file's tests stay together on one worker.
SPREAD_FILES = {"test_differential.py"}

# The order files are handed to the workers (--dist loadgroup): the files that build the
# largest programs (OO7's and TPC-B's variants, LabFlow-1, Python modules and a fresh
# virtual environment, the killed children) first, so none of them starts last while the
# other worker idles; then the other files, most tests first; the spread tests last, one
# by one, as the filler that keeps both workers busy to the end.
LONG_FILES = ("test_oo7_generated.py", "test_crash.py", "test_python_wheel.py",
              "test_labflow_replay.py", "test_python.py", "test_tpcb_bench.py",
              "test_oo7_bench.py", "test_labflow_bench.py", "test_labflow.py",
              "test_python_reentry.py", "test_links.py", "test_filesafety.py",
              "test_mapped.py", "test_python_journal.py", "test_header_truth.py")

# Everything the generated C (and the harness) is made from.
SOURCE_GLOBS = ("generator/**/*.py", "generator/templates/*.j2", "layers/*.py",
                "layers/*.j2", "runtime/*.c", "runtime/*.h")


def find_cc():
    return os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")


def runtime_obj(cc: str, flags) -> str:
    """p2_runtime.c compiled with `flags` (`-c` added): the object cached by the toolchain
    (p2gen.toolchain.runtime_object, keyed by its text, the compiler and the flags), so a test
    that links the runtime into a program of its own compiles it once, not at every build."""
    import shlex
    from p2gen.toolchain import runtime_object
    return runtime_object(shlex.split(cc), list(flags))


def san_quick_flags(*defines) -> list:
    """The flags of a sanitized program a test builds of its own (a driver over a spec's
    API, a C test of the runtime): the harness's, ASan/UBSan, `defines` (what the runtime
    reads too: -DP2_FAULT_INJECT, -DP2_WRITE_AUDIT), then SAN_QUICK_FLAGS, in the harness
    builder's order (harness_builder(..., extra_cflags=defines, opt=SAN_QUICK_OPT)), so
    that all of them link one cached runtime object per `defines`."""
    from p2gen.harness import HARNESS_CFLAGS, SANITIZE_CFLAGS
    return [*HARNESS_CFLAGS, *SANITIZE_CFLAGS, *defines, *SAN_QUICK_FLAGS]


def build_san_program(cc: str, exe, sources, include_dir=None, defines=(),
                      program_flags=(), libs=()) -> Path:
    """`sources` (a test's driver, a spec's generated C) compiled at
    san_quick_flags(*defines) and linked with the runtime's cached object of the same
    flags (runtime_obj) into `exe`: the runtime is compiled once for every such program,
    not into each. `program_flags` (-DPREFIX=..., say) reach the sources only; `libs`
    (-lm) come last. A compiler error fails the test with the command and its message."""
    import shlex
    flags = san_quick_flags(*defines)
    cmd = [*shlex.split(cc), *flags, *program_flags,
           *(["-I", str(include_dir)] if include_dir is not None else []),
           *map(str, sources), runtime_obj(cc, flags), "-o", str(exe), *libs]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, f"{shlex.join(cmd)}\n{proc.stderr}"
    return Path(exe)


def has_lto_sections(obj) -> bool:
    """Whether an object file holds GCC LTO bytecode (.gnu.lto_* sections): the benchmarks'
    default rows must be built without (as users build), their -lto rows with. Needs readelf."""
    out = subprocess.run(["readelf", "-S", "-W", str(obj)], capture_output=True, text=True).stdout
    return ".gnu.lto_" in out


# what a compiler writes for __builtin_prefetch, by architecture
PREFETCH_INSN = {"x86_64": r"\bprefetch\w*\s", "amd64": r"\bprefetch\w*\s",
                 "aarch64": r"\bprfm\s", "arm64": r"\bprfm\s"}


def run_clean(exe, cmds, cwd):
    """Run the harness on cmds in cwd: (the process, its output lines), failing the test on
    any sanitizer report or a line the harness marks as its own bug."""
    from p2gen.harness import run_harness
    proc = run_harness(exe, cmds, cwd=str(cwd))
    assert "Sanitizer" not in proc.stderr and "runtime error" not in proc.stderr, proc.stderr
    out = proc.stdout.splitlines()
    assert not any(line.startswith("bug") for line in out), out
    return proc, out


def compile_to_asm(tmp_path: Path, cc: str, spec: Path, fn: str = "") -> tuple:
    """(generated source, assembly) of a spec's C compiled as users compile it (-O2), or
    only function `fn`'s part of the assembly. Skips where no prefetch instruction is
    known: what these checks look for (an optimiser can drop a prefetch the code shapes
    wrongly, and nothing else would notice: the results stay the same, only slower)."""
    import platform
    if PREFETCH_INSN.get(platform.machine().lower()) is None:
        pytest.skip(f"no prefetch instruction known for {platform.machine()}")
    from p2gen.build import load
    from p2gen.render import Renderer
    checked = load(str(spec), spec.stem)
    header, source = Renderer(checked, spec.name).render()
    (tmp_path / f"{spec.stem}.h").write_text(header)
    (tmp_path / f"{spec.stem}.c").write_text(source)
    shutil.copy(ROOT / "runtime" / "p2_runtime.h", tmp_path / "p2_runtime.h")
    out = tmp_path / f"{spec.stem}.s"
    r = subprocess.run([cc, "-std=c11", "-O2", "-S", "-I", str(tmp_path),
                        str(tmp_path / f"{spec.stem}.c"), "-o", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-4000:]
    asm = out.read_text()
    if fn:
        m = re.search(rf"^{re.escape(fn)}:\n(.*?)^\s*\.size\s+{re.escape(fn)},", asm,
                      re.S | re.M)
        assert m, f"{fn} not in the assembly"
        asm = m.group(1)
    return source, asm


def has_prefetch(asm: str) -> bool:
    import platform
    return re.search(PREFETCH_INSN[platform.machine().lower()], asm) is not None


def sources_digest() -> str:
    h = hashlib.sha256()
    for pattern in SOURCE_GLOBS:
        for path in sorted(ROOT.glob(pattern)):
            h.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


@contextmanager
def cache_lock(path):
    """Hold an exclusive lock on the directory `path` (its file .lock) against other threads
    and processes: pytest-xdist's workers build into the same caches in .pytest_cache."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    with open(path / ".lock", "a") as f:     # flock: one open file per holder, so threads too
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def harness_cache_root(config):
    """.pytest_cache/d/p2gen-harness, or None (no cache plugin, or P2GEN_TEST_NO_CACHE=1)."""
    cache = getattr(config, "cache", None)
    if cache is None or os.environ.get("P2GEN_TEST_NO_CACHE") == "1":
        return None
    return Path(cache.mkdir("p2gen-harness"))


def object_cache_root(config):
    """.pytest_cache/d/p2gen-objects: the toolchain's object cache (p2gen.toolchain.
    cached_object) for sources several test files compile alike (tests/oo7kit.py), and the
    programs linked from them (exe/); None as for harness_cache_root."""
    cache = getattr(config, "cache", None)
    if cache is None or os.environ.get("P2GEN_TEST_NO_CACHE") == "1":
        return None
    return Path(cache.mkdir("p2gen-objects"))


def prune_objects(root: Path) -> None:
    """Keep the OBJECT_KEEP most recently used objects (with their sources' copies) and
    EXE_KEEP programs of the object cache."""
    objs = sorted(root.glob("*.o"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in objs[OBJECT_KEEP:]:
        old.unlink(missing_ok=True)
    kept = {p.stem.rsplit("-", 1)[-1] for p in objs[:OBJECT_KEEP]}
    for src in root.glob("src-*"):
        if src.name[len("src-"):] not in kept:
            shutil.rmtree(src, ignore_errors=True)
    exes = sorted((root / "exe").glob("*"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in exes[EXE_KEEP:]:
        old.unlink(missing_ok=True)


def pytest_sessionstart(session):
    """Keep the harness and object caches small (the most recently used entries only), once per run and
    before any test: in the only process, or in pytest-xdist's controller before it starts
    its workers. A run uses more entries than are kept, so a worker pruning would delete
    builds another worker of the same run still runs."""
    if hasattr(session.config, "workerinput"):
        return
    objects = object_cache_root(session.config)
    if objects is not None:
        prune_objects(objects)
    root = harness_cache_root(session.config)
    if root is None:
        return
    entries = sorted((d for d in root.iterdir() if d.is_dir()),
                     key=lambda d: d.stat().st_mtime, reverse=True)
    for old in entries[CACHE_KEEP:]:
        shutil.rmtree(old, ignore_errors=True)


# P2GEN_TEST_CPU_LOG=FILE: each test's CPU time (its process and the children it waited for,
# user + system) and wall time appended to FILE, one line per test: what the suite's budget
# is spent on. A session fixture's build counts to the first test that asks for it.
_CPU_LOG = os.environ.get("P2GEN_TEST_CPU_LOG")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    t0 = os.times() if _CPU_LOG else None
    yield
    if t0 is not None:
        t1 = os.times()
        cpu = sum(t1[:4]) - sum(t0[:4])
        with open(_CPU_LOG, "a") as f:
            f.write(f"{cpu:.2f}\t{t1.elapsed - t0.elapsed:.2f}\t{item.nodeid}\n")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadgroup`: a file's tests on one worker, SPREAD_FILES' test by test (their
    tests over a memory on a server as one group).
    (pytest-xdist's own xdist_group markers are lost under pytest 9: it renames node ids
    through an attribute pytest no longer reads.)"""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    from p2gen.layers import LAYERS
    # a spread test over a memory on a server (its id names the layer): these share one
    # worker, whose process serves them and builds their spec (it names its port)
    servers = [re.escape(n) for n, layer in LAYERS.items() if getattr(layer, "file_is_uri", False)]
    on_server = re.compile(r"[\[-](%s)[\]-]" % "|".join(servers)) if servers else None

    class FileScheduling(LoadScopeScheduling):
        _ordered = False

        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            if Path(path).name not in SPREAD_FILES:
                return path
            server = on_server.search(nodeid) if on_server else None
            return f"{path}::{server.group(1)}" if server else nodeid

        def _assign_work_unit(self, node) -> None:
            if not self._ordered:       # once, before the first unit is handed out
                self._ordered = True
                units = sorted(enumerate(self.workqueue.items()),
                               key=lambda iu: scope_rank(iu[1][0], len(iu[1][1]), iu[0]))
                self.workqueue.clear()
                self.workqueue.update(unit for _i, unit in units)
            super()._assign_work_unit(node)

    return FileScheduling(config, log)


def scope_rank(scope: str, tests: int, position: int) -> tuple:
    """Where a unit of work (a file, or a spread test) stands in the workers' queue:
    LONG_FILES in their order, then every other file and then the spread tests, each
    most tests first (the spread files' groups on a server are several tests)."""
    name = Path(scope.split("::", 1)[0]).name
    if name in LONG_FILES and "::" not in scope:
        return (0, LONG_FILES.index(name), position)
    return (2 if name in SPREAD_FILES else 1, -tests, position)


def python_module(tmp_path_factory, name: str, spec_text: str, cflags=QUICK_PY_CFLAGS):
    """Generate a spec's data manager (`<name>.p2`, prefix `name`) in a fresh directory,
    build its Python module (`p2gen build --python`, with `cflags` after Python's) and
    import it."""
    import importlib
    import textwrap
    from p2gen.build import generate
    from p2gen.pybind import build_python
    root = tmp_path_factory.mktemp(name)
    spec = root / f"{name}.p2"
    spec.write_text(textwrap.dedent(spec_text))
    gen = generate(str(spec), str(root / "out"))
    build_python(gen, extra_cflags=list(cflags))
    sys.path.insert(0, gen.out_dir)
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(gen.out_dir)


@pytest.fixture(scope="session")
def cc():
    compiler = find_cc()
    if compiler is None:
        pytest.skip("no C compiler")
    return compiler


@pytest.fixture(scope="session")
def san_env():
    from p2gen.harness import sanitizer_env
    return sanitizer_env()


@dataclass
class Built:
    exe: str
    gen: object            # p2gen.build.Generated (gen.checked is the planned spec)
    strict: tuple = ()     # the flags of the plain compile of its C (strict=True), else ()

    @property
    def checked(self):
        return self.gen.checked


def compile_strictly(cc: str, units, include_dir: str) -> None:
    """Compile C files as plain objects (no sanitizers) at STRICT_CFLAGS, to /dev/null:
    BuildError with the compiler's message on any warning."""
    from p2gen.toolchain import cc_command, run_cc
    cmd = cc_command(cc) + list(STRICT_CFLAGS) + ["-I", str(include_dir)]
    for unit in units:
        run_cc(cmd + ["-c", str(unit), "-o", os.devnull],
               f"compiling {os.path.basename(str(unit))} without sanitizers at -O1")


@pytest.fixture(scope="session")
def harness_builder(request, tmp_path_factory, cc):
    """build(spec_text, prefix, sanitize=True, extra_cflags=(), opt=None, strict=False,
    library=True) -> Built. Safe across threads and processes; the same spec text and flags are built
    once per run (and reused across runs while no source changes). A sanitized harness is
    compiled at SAN_QUICK_OPT unless `opt` says otherwise (one runtime object for all)."""
    from p2gen.build import generate, write_if_changed
    from p2gen.harness import build_harness, harness_paths

    cache_root = harness_cache_root(request.config) or Path(tmp_path_factory.mktemp("harness"))

    def build(spec_text: str, prefix: str, sanitize: bool = True,
              extra_cflags: tuple = (), opt: str = None, strict: bool = False,
              library: bool = True) -> Built:
        digest = sources_digest()   # per build: other work may change sources meanwhile
        if opt is None and sanitize:
            opt = SAN_QUICK_OPT
        extra_cflags = tuple(extra_cflags) + (DEBUG_FLAG,) + ((opt,) if opt else ())
        key = hashlib.sha256(f"{digest}\0{cc}\0{prefix}\0{sanitize}\0{extra_cflags}\0"
                             f"{library}\0{spec_text}".encode())
        out = cache_root / key.hexdigest()[:24]
        with cache_lock(out):
            spec = out / f"{prefix}.p2"
            write_if_changed(str(spec), spec_text)   # others may be reading it
            gen = generate(str(spec), str(out), prefix)
            done = out / ".built"
            exe = str(out / f"{prefix}_harness")
            if not (done.exists() and os.path.exists(exe)):
                exe = build_harness(gen, cc=cc, sanitize=sanitize, extra_cflags=extra_cflags,
                                    library=library)
                done.write_text("ok\n")
            flags = ()
            if strict:
                strict_done = out / ".strict"
                if not strict_done.exists():
                    compile_strictly(cc, [gen.source, harness_paths(gen)[0]], gen.out_dir)
                    strict_done.write_text("ok\n")
                flags = STRICT_CFLAGS
            os.utime(out)   # recently used: kept by the pruning at the next run's start
            return Built(exe, gen, flags)

    return build
