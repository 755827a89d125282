"""What the OO7 tests share: the sanitized objects of bench/oo7's programs, and running
bench/oo7's conformance checker (oo7_conform) and reading its report ("ok <check> <value>"
/ "FAIL ..." lines, then "N passed, M failed").

The conformance binary (tests/bench/test_oo7_generated.py: every variant, HAND and the
checker) and the crash child (tests/crashkit.py: tests/c/crash_oo7.cc with one journalled
variant) link the same objects: each generated variant's C, bench/oo7/oo7_p2.cc compiled
for that variant, oo7_common.cc. Each is compiled once per session and shared between
pytest-xdist's workers through the toolchain's object cache (p2gen.toolchain.cached_object:
keyed by the texts of the source and of what it includes, the compiler and the flags;
written under a temporary name and renamed) in .pytest_cache/d/p2gen-objects, pruned to
its most recently used entries before a run (tests/conftest.py); the linked programs are
cached beside them (exe/) by the objects they are made of. P2GEN_TEST_NO_CACHE=1: a fresh
directory per session.

The flags: ASan/UBSan at no -O (the sanitized build compiles several times faster, and the
checks still run in about a second (tiny) or three (small) per variant), no debug
information (DEBUG_FLAG), -Werror.
"""
from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from conftest import DEBUG_FLAG, object_cache_root, runtime_obj
from p2gen.bench.oo7 import run as bo
from p2gen.harness import HARNESS_CFLAGS, SANITIZE_CFLAGS
from p2gen.toolchain import cached_object

ROOT = Path(__file__).resolve().parent.parent
OO7 = ROOT / "bench" / "oo7"
SAN = ("-fsanitize=address,undefined", DEBUG_FLAG)
CFLAGS = ("-std=c11", "-Wall", "-Wextra", "-Werror") + SAN
CXXFLAGS = ("-std=c++17", "-Wall", "-Wextra", "-Werror") + SAN
# the runtime's object: the toolchain's cached one with the suite's sanitized harness
# flags, which the layer tests link too
RUNTIME_FLAGS = (*HARNESS_CFLAGS, *SANITIZE_CFLAGS, DEBUG_FLAG)

# every variant `p2gen bench oo7` runs, and `--pointers`' relocation rows: each mapped
# variant's twin whose file is relocated by force at every open of an existing file (the
# build makes the file; the reopen relocates all of it); their specs are copies written
# to a scratch directory
VARIANTS = bo.default_variants() if (OO7 / bo.P2_DRIVER).exists() else []
if VARIANTS:
    VARIANTS += [v for v in bo.pointer_variants(Path(tempfile.gettempdir()) / f"p2gen-oo7-pointers-{os.getuid()}")
                 if v.open_env and v.open_env[1] == "100"]


def cc() -> list:
    return shlex.split(os.environ.get("CC") or shutil.which("cc") or "cc")


def cxx() -> list:
    return shlex.split(os.environ.get("CXX") or shutil.which("c++") or "c++")


def have_compilers() -> bool:
    return bool((os.environ.get("CC") or shutil.which("cc"))
                and (os.environ.get("CXX") or shutil.which("c++")))


def object_cache(config, tmp_path_factory) -> Path:
    """The suite's object cache (conftest.object_cache_root), or a temporary directory
    of this session's, one for all the test files that ask (P2GEN_TEST_NO_CACHE=1, or no
    cache plugin)."""
    root = object_cache_root(config)
    if root is None:
        root = tmp_path_factory.getbasetemp() / "p2gen-objects"
        root.mkdir(exist_ok=True)
    return root


def _texts(paths, under: str = "") -> dict:
    return {f"{under}{Path(p).name}": Path(p).read_text() for p in paths}


def _bench_headers() -> dict:
    """bench/oo7's headers and bench's (oo7_p2.cc includes ../p2_variant.h), laid out as
    the sources include them."""
    return {**_texts(sorted(OO7.glob("*.h")), "oo7/"), **_texts(sorted(OO7.parent.glob("*.h")))}


def _used(obj: str) -> str:
    os.utime(obj)          # recently used: kept by the pruning
    return obj


def generated_object(cache: Path, gen) -> str:
    """A generated variant's C (gen: p2gen.build.Generated)."""
    name = Path(gen.source).name
    return _used(cached_object(cc(), CFLAGS, name,
                               {**_texts([gen.source, gen.header]),
                                "p2_runtime.h": (Path(gen.out_dir) / "p2_runtime.h").read_text()},
                               str(cache)))


def variant_defines(v: bo.Variant, rank: int) -> list:
    """How bench/oo7's drivers are told which variant they are compiled for (its rank:
    where HAND and the others sort it in a report)."""
    defs = [f"-DP2_VARIANT={v.prefix}", f'-DP2_HEADER="{v.prefix}.h"', f'-DP2_NAME="{v.name}"',
            f'-DP2_MEM="{v.mem}"', f"-DP2_PERSISTENT={1 if v.persistent else 0}",
            f"-DP2_RANK={20 + rank}", f"-DP2_JOURNAL={1 if v.journal else 0}"]
    if v.open_env:
        defs += [f'-DP2_OPEN_ENV="{v.open_env[0]}"', f'-DP2_OPEN_ENV_VALUE="{v.open_env[1]}"']
    return defs


def driver_object(cache: Path, source: Path, v: bo.Variant = None, gen=None) -> str:
    """A C++ source compiled beside bench/oo7's (`source`: one of them, or a test's own
    driver such as tests/c/crash_oo7.cc): for variant `v` (generated as `gen`) with its
    defines and header, or for none (oo7_common.cc, HAND, the checker)."""
    files = _bench_headers()
    defs = []
    if v is not None:
        defs = variant_defines(v, VARIANTS.index(v))
        files.update(_texts([gen.header]))      # #include P2_HEADER: at the top
        files["p2_runtime.h"] = (Path(gen.out_dir) / "p2_runtime.h").read_text()
    files[f"oo7/{source.name}"] = source.read_text()
    return _used(cached_object(cxx(), list(CXXFLAGS) + defs, f"oo7/{source.name}", files,
                               str(cache)))


def link(cache: Path, name: str, objs: list, libs=(), runtime: bool = True) -> str:
    """The sanitized program made of objs, `libs` (-l options) and (unless runtime=False)
    the runtime's object, cached by them."""
    objs = sorted(objs + ([runtime_obj(shlex.join(cc()), RUNTIME_FLAGS)] if runtime else []))
    exe_dir = cache / "exe"
    exe_dir.mkdir(exist_ok=True)
    key = hashlib.sha256("\0".join([*objs, *cxx(), *SAN, *libs]).encode()).hexdigest()[:32]
    exe = exe_dir / f"{name}_{key}"
    if not exe.exists():
        tmp = exe_dir / f".{exe.name}.{os.getpid()}.tmp"
        proc = subprocess.run(cxx() + list(SAN) + objs + list(libs) + ["-o", str(tmp)],
                              capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            tmp.unlink(missing_ok=True)
            raise AssertionError(f"linking {name} failed:\n{proc.stderr[-8000:]}")
        os.replace(tmp, exe)
    return _used(str(exe))


def checker(cache: Path, name: str, sources, libs=()) -> str:
    """The sanitized conformance checker linked with bench/oo7's hand-written systems
    `sources` (oo7_conform.cc, oo7_common.cc, HAND's, ...) and no generated variant: their
    objects are test_oo7_generated's, so each is compiled once for the suite."""
    with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
        objs = list(pool.map(lambda src: driver_object(cache, OO7 / src), sources))
    return link(cache, name, objs, libs, runtime=False)


def run(exe: str, env: dict, *args: str) -> tuple[subprocess.CompletedProcess, dict]:
    """Run the checker; the results of its passed checks by name."""
    proc = subprocess.run([exe, *args], capture_output=True, text=True, env=env, timeout=300)
    results = {}
    for line in proc.stdout.splitlines():
        if line.startswith("ok "):
            name, _, value = line[3:].partition(" ")
            results[name] = value
    return proc, results


def assert_all_passed(proc: subprocess.CompletedProcess) -> None:
    failures = [l for l in proc.stdout.splitlines() if l.startswith("FAIL")]
    assert proc.returncode == 0 and not failures, (
        f"{shlex.join(proc.args)}\nexit {proc.returncode}\n" + "\n".join(failures) + "\n"
        + proc.stderr[-4000:])
    assert proc.stdout.rstrip().endswith(" 0 failed")
