"""`p2gen verify`: the integrity checker of a spec as a small program.

The program (templates/verify_main.c.j2) opens the database files of a spec in a
directory, runs the generated `<prefix>_verify` (templates/verify.c.j2 and every layer's
`_verify`), prints its report and exits 0 (clean), 1 (problems) or 2 (cannot open: a
missing file, or an open refusal, whose message it prints). It is built once per spec
text, prefix, compiler, flags and p2gen sources, in a cache directory, so repeated runs
cost only the run.

    exe = build_verifier("tpcb.p2")                 # cached
    proc = run_verifier(exe, "/var/lib/tpcb")       # proc.returncode 0 / 1 / 2
"""
from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path
from typing import Optional, Sequence

from .build import generate
from .toolchain import RUNTIME_DIR, cache_dir, cc_command, run_cc, runtime_object
from .errors import EnvError, os_reason
from .render import render_verifier  # noqa: F401  (the checker's C: rendered with the spec)

VERIFY_CFLAGS = ("-std=c11", "-O1", "-g", "-Wall", "-Wextra", "-Werror")
SANITIZE_CFLAGS = ("-fsanitize=address,undefined", "-fno-omit-frame-pointer",
                   "-fno-sanitize-recover=all")
_PKG = Path(__file__).resolve().parent


def default_cache_dir() -> str:
    return cache_dir("verify")


def _sources_digest() -> str:
    """Everything the generated C comes from: p2gen's Python, templates, layers, runtime."""
    from . import layers as layer_pkg
    h = hashlib.sha256()
    dirs = [_PKG, _PKG / "templates", Path(os.path.dirname(layer_pkg.__file__)), Path(RUNTIME_DIR)]
    for d in dirs:
        for path in sorted(d.iterdir()):
            if path.suffix in (".py", ".j2", ".c", ".h") and path.is_file():
                h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def build_verifier(spec: str, cache_dir: Optional[str] = None, prefix: Optional[str] = None,
                   cc: str = "cc", sanitize: bool = False,
                   extra_cflags: Sequence[str] = ()) -> str:
    """Generate and compile the checker of `spec` (a file), reusing a previous build of the
    same spec text, prefix, compiler, flags and p2gen sources. Returns the executable.
    Raises SpecError/BuildError on a bad spec or a failed compile."""
    flags = list(VERIFY_CFLAGS) + (list(SANITIZE_CFLAGS) if sanitize else []) + list(extra_cflags)
    cc_cmd = cc_command(cc)
    with open(spec, "rb") as f:
        text = f.read()
    key = hashlib.sha256(b"\0".join([
        text, os.path.basename(spec).encode(), (prefix or "").encode(), cc.encode(),
        " ".join(flags).encode(), _sources_digest().encode()])).hexdigest()[:20]
    out = os.path.join(cache_dir or default_cache_dir(), key)
    stem = os.path.splitext(os.path.basename(spec))[0] if prefix is None else prefix
    exe = os.path.join(out, "verifier")
    if os.path.exists(exe):
        return exe
    gen = generate(spec, out, prefix)
    src = os.path.join(out, f"{gen.prefix}_verifier.c")
    tmp = f"{exe}.{os.getpid()}.tmp"
    try:
        with open(src, "w", encoding="utf-8") as f:
            f.write(render_verifier(gen.checked, os.path.basename(spec)))
        run_cc(cc_cmd + flags + ["-I", out, src, runtime_object(cc_cmd, flags),
                                 "-o", tmp], f"compiling the checker of {stem}")
        os.replace(tmp, exe)
    except OSError as e:
        raise EnvError(f"error: cannot write the checker into '{out}': {os_reason(e)}") from None
    return exe


def run_verifier(exe: str, db_dir: str, *args: str, env: Optional[dict] = None,
                 timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([exe, db_dir, *args], capture_output=True, text=True,
                          errors="replace", env=env, timeout=timeout)
