"""What tests/runtime/test_crash.py and tests/runtime/test_corrupt.py share: building the sanitized crash
drivers (tests/c/crash_tpcb.c per TPC-B spec, tests/c/crash_oo7.cc for OO7), cached in
.pytest_cache by the content of every input, and running a child that is killed.

- `tpcb_exe(cache, spec)`: the driver of one tests/specs/tpcb_*.p2 spec (journalled or
  not, as its header says), ASan/UBSan. Same executable for the child that is killed and
  for the opener that checks what it left.
- `oo7_exe(cache, spec)`: crash_oo7.cc + bench/oo7/oo7_common.cc + bench/oo7/oo7_p2.cc
  against a journalled OO7 spec, ASan/UBSan: the conformance binary's objects
  (tests/oo7kit.py), `cache` being their cache.
- `spawn_and_kill(...)`: run a child with its stdout in a file, SIGKILL it at a given
  moment, return its complete output lines.
"""
from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from conftest import DEBUG_FLAG
from p2gen.harness import HARNESS_CFLAGS, SANITIZE_CFLAGS
from p2gen.toolchain import runtime_object

ROOT = Path(__file__).resolve().parent.parent
C_DIR = ROOT / "tests" / "c"
SPECS = ROOT / "tests" / "specs"
OO7 = ROOT / "bench" / "oo7"
SAN = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", DEBUG_FLAG, "-O1"]
CFLAGS = ["-std=c11", "-Wall", "-Wextra", "-Werror"] + SAN
# the runtime's object: the toolchain's cached one with the suite's sanitized harness
# flags (the layer tests and test_oo7_generated.py link the same object)
RUNTIME_FLAGS = [*HARNESS_CFLAGS, *SANITIZE_CFLAGS, DEBUG_FLAG]
KEEP = 40                       # cached objects / executables kept

_lock = threading.Lock()
_built: dict = {}


def cc() -> list:
    return shlex.split(os.environ.get("CC") or shutil.which("cc") or "cc")


def have_compilers() -> bool:
    return bool((os.environ.get("CC") or shutil.which("cc")) and (os.environ.get("CXX") or shutil.which("c++")))


def san_env() -> dict:
    env = dict(os.environ)
    env.setdefault("ASAN_OPTIONS", "detect_leaks=0:abort_on_error=0:allocator_may_return_null=1")
    env.setdefault("UBSAN_OPTIONS", "halt_on_error=1:print_stacktrace=1")
    return env


def cache_dir(request, tmp_path_factory) -> Path:
    """.pytest_cache/d/p2gen-crash, or a temporary directory with P2GEN_TEST_NO_CACHE=1 or
    without pytest's cache plugin."""
    cache = getattr(request.config, "cache", None)
    if cache is None or os.environ.get("P2GEN_TEST_NO_CACHE") == "1":
        return Path(tmp_path_factory.mktemp("p2gen-crash"))
    return Path(cache.mkdir("p2gen-crash"))


def _digest(*parts) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else str(p).encode())
        h.update(b"\0")
    return h.hexdigest()[:32]


def _prune(d: Path) -> None:
    entries = sorted((e for e in d.iterdir() if not e.name.startswith(".")),
                     key=lambda e: e.stat().st_mtime, reverse=True)
    for old in entries[KEEP:]:
        if old.is_file():
            old.unlink(missing_ok=True)


def _generate(spec: Path, prefix: str):
    from p2gen.build import generate
    gen_dir = Path(tempfile.mkdtemp(prefix="p2crash_gen_"))
    return generate(str(spec), str(gen_dir), prefix), gen_dir


def journalled(gen) -> bool:
    return "_JOURNALLED 1" in Path(gen.header).read_text()


def tpcb_exe(cache: Path, spec: Path) -> str:
    """The sanitized crash_tpcb driver of spec (prefix: the spec's stem)."""
    with _lock:
        if str(spec) in _built:
            return _built[str(spec)]
    prefix = spec.stem
    gen, gen_dir = _generate(spec, prefix)
    try:
        j = ["-DP2_JOURNALLED=1"] if journalled(gen) else []
        # the generation directory is a fresh temporary one: keep it out of the key
        cmd = cc() + CFLAGS + [f"-DP2_PREFIX={prefix}", f'-DP2_HEADER="{prefix}.h"'] + j + [
            "-I", "@GEN@", str(C_DIR / "crash_tpcb.c"), f"@GEN@/{prefix}.c",
            runtime_object(cc(), RUNTIME_FLAGS)]     # compiled once (cached)
        inputs = [C_DIR / "crash_tpcb.c", gen.header, gen.source,
                  gen_dir / "p2_runtime.c", gen_dir / "p2_runtime.h"]
        key = _digest(" ".join(cmd), *[Path(i).read_bytes() for i in inputs])
        out = cache / f"crash_{prefix}_{key}"
        if not out.exists():
            real = [c.replace("@GEN@", str(gen_dir)) for c in cmd]
            tmp = cache / f".{out.name}.{os.getpid()}.{threading.get_ident()}.tmp"
            proc = subprocess.run(real + ["-o", str(tmp)], capture_output=True, text=True, timeout=1200)
            if proc.returncode != 0:
                tmp.unlink(missing_ok=True)
                raise AssertionError(f"crash_tpcb for {spec.name} does not compile:\n{proc.stderr[-6000:]}")
            os.replace(tmp, out)
        os.utime(out)
    finally:
        shutil.rmtree(gen_dir, ignore_errors=True)
    _prune(cache)
    with _lock:
        _built[str(spec)] = str(out)
    return str(out)


def oo7_exe(cache: Path, spec: Path) -> str:
    """crash_oo7.cc linked with OO7's shared code and oo7_p2.cc against the journalled spec,
    as `p2gen bench oo7` generates it (its variant's prefix): every object but crash_oo7.cc's
    is the conformance binary's too (tests/oo7kit.py; cache: its object cache)."""
    import oo7kit
    with _lock:
        if str(spec) in _built:
            return _built[str(spec)]
    v = next(v for v in oo7kit.VARIANTS if Path(v.spec).resolve() == spec.resolve())
    gen, gen_dir = _generate(spec, v.prefix)
    try:
        tasks = [(oo7kit.generated_object, cache, gen),
                 (oo7kit.driver_object, cache, OO7 / "oo7_p2.cc", v, gen),
                 (oo7kit.driver_object, cache, C_DIR / "crash_oo7.cc", v, gen),
                 (oo7kit.driver_object, cache, OO7 / "oo7_common.cc")]
        with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
            objs = list(pool.map(lambda t: t[0](*t[1:]), tasks))
        exe = oo7kit.link(cache, "crash_oo7", objs)
    finally:
        shutil.rmtree(gen_dir, ignore_errors=True)
    with _lock:
        _built[str(spec)] = exe
    return exe


def sanitizer_clean(stderr: str) -> bool:
    return "Sanitizer" not in stderr and "runtime error" not in stderr


def spawn_and_kill(cmd: list, env: dict, workdir: Path, *, delay: float,
                   after_line: str | None = None, wait_limit: float = 60.0):
    """Start cmd (stdout and stderr into files: the child never blocks on a pipe), wait
    until its output holds a line starting with after_line (if given), then `delay`
    seconds more, then SIGKILL it. Returns (returncode, complete stdout lines, stderr);
    a partial last line (killed mid-write) is dropped."""
    out_path, err_path = workdir / "child.out", workdir / "child.err"
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env)
    try:
        if after_line is not None:
            end = time.monotonic() + wait_limit
            needle = ("\n" + after_line).encode()
            while time.monotonic() < end and proc.poll() is None:
                if needle in b"\n" + out_path.read_bytes():
                    break
                time.sleep(0.002)
        if delay > 0:
            time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
    text = out_path.read_bytes().decode(errors="replace")
    lines = text.split("\n")[:-1]          # the part after the last newline is incomplete
    return proc.returncode, lines, err_path.read_bytes().decode(errors="replace")


def copy_db(src: Path, dst: Path) -> None:
    """Copy every file of a database directory (data file and journal), nothing else."""
    dst.mkdir(parents=True, exist_ok=True)
    for f in dst.iterdir():
        if f.is_file():
            f.unlink()
    for f in src.iterdir():
        if f.is_file() and not f.name.startswith("child."):
            shutil.copyfile(f, dst / f.name)
