"""`p2gen recover`: the recovery program of a spec (templates/recover_main.c.j2).

It opens the database files of a spec in a directory even if they were not closed
cleanly, rebuilds what is derived from what is stored (each layer's `_rebuild`, see
layers/README.md), reports what could not be kept, runs the integrity check and marks the
files clean only if it passes. Exit codes: 0 recovered, 1 problems remain (files left
marked not closed cleanly), 2 cannot open (a missing file, or a refusal other than the
unclean mark: another spec's file, a corrupt header, a damaged journal).

The spec's C is rendered for recovery (Renderer(recover=True)): plain files open through
p2_seg_open_recover and the layers' `_rebuild` functions are emitted; the program includes
it. Built once per spec text, prefix, compiler, flags and p2gen sources, in a cache
directory (like `p2gen verify`).
"""
from __future__ import annotations

import hashlib
import os
import subprocess
from typing import Optional, Sequence

from .build import load
from .toolchain import cache_dir as user_cache_dir, cc_command, copy_runtime, run_cc, runtime_object, write_if_changed
from .errors import EnvError, os_reason
from .render import Renderer
from .verify import SANITIZE_CFLAGS, VERIFY_CFLAGS, _sources_digest


def build_recoverer(spec: str, cache_dir: Optional[str] = None, prefix: Optional[str] = None,
                    cc: str = "cc", sanitize: bool = False,
                    extra_cflags: Sequence[str] = ()) -> str:
    """Generate and compile the recovery program of `spec`; returns the executable.
    Raises SpecError/BuildError on a bad spec or a failed compile."""
    flags = list(VERIFY_CFLAGS) + (list(SANITIZE_CFLAGS) if sanitize else []) + list(extra_cflags)
    with open(spec, "rb") as f:
        text = f.read()
    key = hashlib.sha256(b"\0".join([
        b"recover", text, os.path.basename(spec).encode(), (prefix or "").encode(),
        cc.encode(), " ".join(flags).encode(), _sources_digest().encode()])).hexdigest()[:20]
    out = os.path.join(cache_dir or user_cache_dir("recover"), key)
    exe = os.path.join(out, "recoverer")
    if os.path.exists(exe):
        return exe
    checked = load(spec, prefix)
    r = Renderer(checked, os.path.basename(spec), recover=True)
    header, source = r.render()
    p = checked.prefix
    src = os.path.join(out, f"{p}_recover.c")
    tmp = f"{exe}.{os.getpid()}.tmp"
    try:
        os.makedirs(out, exist_ok=True)
        write_if_changed(os.path.join(out, f"{p}.h"), header)
        write_if_changed(os.path.join(out, f"{p}.c"), source)
        copy_runtime(out)
        write_if_changed(src, r.recover_main())
        cc_cmd = cc_command(cc)
        run_cc(cc_cmd + flags + ["-I", out, src, runtime_object(cc_cmd, flags), "-o", tmp],
               f"compiling the recovery program of {p}")
        os.replace(tmp, exe)
    except OSError as e:
        raise EnvError(f"error: cannot write the recovery program into '{out}': "
                       f"{os_reason(e)}") from None
    return exe


def run_recoverer(exe: str, db_dir: str, env: Optional[dict] = None,
                  timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([exe, db_dir], capture_output=True, text=True, errors="replace",
                          env=env, timeout=timeout)
