"""Shared fixtures. Keep this small and generic: anything specific to one test file
belongs in that file.

- `cc`: the C compiler (tests needing one are skipped without it).
- `san_env`: environment for running sanitizer-instrumented programs.
- `harness_builder`: build(spec_text, prefix, sanitize=True, extra_cflags=()) -> Built(exe,
  gen), a sanitized harness of a spec (p2gen.harness), cached across runs in .pytest_cache by the spec text and every
  source the generated code depends on (set P2GEN_TEST_NO_CACHE=1 to rebuild).
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(Path(__file__).resolve().parent) not in sys.path:  # lets tests import model.py
    sys.path.insert(0, str(Path(__file__).resolve().parent))

CACHE_KEEP = 24   # harness builds kept in .pytest_cache

# Everything the generated C (and the harness) is made from.
SOURCE_GLOBS = ("generator/**/*.py", "generator/templates/*.j2", "layers/*.py",
                "layers/*.j2", "runtime/*.c", "runtime/*.h")


def find_cc():
    return os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")


def has_lto_sections(obj) -> bool:
    """Whether an object file holds GCC LTO bytecode (.gnu.lto_* sections): the benchmarks'
    default rows must be built without (as users build), their -lto rows with. Needs readelf."""
    out = subprocess.run(["readelf", "-S", "-W", str(obj)], capture_output=True, text=True).stdout
    return ".gnu.lto_" in out


def sources_digest() -> str:
    h = hashlib.sha256()
    for pattern in SOURCE_GLOBS:
        for path in sorted(ROOT.glob(pattern)):
            h.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


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

    @property
    def checked(self):
        return self.gen.checked


@pytest.fixture(scope="session")
def harness_builder(request, tmp_path_factory, cc):
    """build(spec_text, prefix, sanitize=True) -> Built. Thread-safe; the same spec text
    is built once per session (and reused across sessions while no source changes)."""
    from p2gen.build import generate
    from p2gen.harness import build_harness

    no_cache = os.environ.get("P2GEN_TEST_NO_CACHE") == "1"
    cache_root = (Path(tmp_path_factory.mktemp("harness")) if no_cache
                  else Path(request.config.cache.mkdir("p2gen-harness")))
    if not no_cache:  # keep the cache small: the most recently built entries only
        entries = sorted((d for d in cache_root.iterdir() if d.is_dir()),
                         key=lambda d: d.stat().st_mtime, reverse=True)
        for old in entries[CACHE_KEEP:]:
            shutil.rmtree(old, ignore_errors=True)
    lock = threading.Lock()
    locks: dict = {}

    def build(spec_text: str, prefix: str, sanitize: bool = True,
              extra_cflags: tuple = ()) -> Built:
        digest = sources_digest()   # per build: other work may change sources meanwhile
        key = hashlib.sha256(f"{digest}\0{cc}\0{prefix}\0{sanitize}\0{extra_cflags}\0"
                             f"{spec_text}".encode())
        out = cache_root / key.hexdigest()[:24]
        with lock:
            one = locks.setdefault(str(out), threading.Lock())
        with one:
            out.mkdir(parents=True, exist_ok=True)
            spec = out / f"{prefix}.p2"
            spec.write_text(spec_text)
            gen = generate(str(spec), str(out), prefix)
            done = out / ".built"
            exe = str(out / f"{prefix}_harness")
            if not (done.exists() and os.path.exists(exe)):
                exe = build_harness(gen, cc=cc, sanitize=sanitize, extra_cflags=extra_cflags)
                done.write_text("ok\n")
            os.utime(out)   # recently used: kept by the pruning above
            return Built(exe, gen)

    return build
