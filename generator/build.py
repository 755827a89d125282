"""The pipeline as one call per step: load (parse, check, plan), generate (render and
write), compile (the C compiler, and CFFI for --python)."""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from typing import Optional

from . import runtime as runtime_pkg
from .check import check, check_generated_names
from .ir import CheckedSpec
from .errors import BuildError, EnvError, os_reason
from .parser import parse_file
from .plan import plan
from .render import render

RUNTIME_DIR = os.path.dirname(os.path.abspath(runtime_pkg.__file__))
RUNTIME_FILES = ("p2_runtime.h", "p2_runtime.c")
DEFAULT_CFLAGS = ("-std=c11", "-O2", "-Wall", "-Wextra", "-Werror")


def load(spec_path: str, prefix: Optional[str] = None) -> CheckedSpec:
    """Parse, check and plan a spec file; raises SpecError/SpecErrors on bad input."""
    checked = plan(check(parse_file(spec_path), prefix))
    check_generated_names(checked)
    return checked


@dataclass
class Generated:
    checked: CheckedSpec
    out_dir: str
    header: str
    source: str
    runtime: list = field(default_factory=list)
    seconds: float = 0.0

    @property
    def prefix(self) -> str:
        return self.checked.prefix


def write_if_changed(path: str, text: str) -> None:
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return
    except OSError:
        pass
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def generate(spec_path: str, out_dir: str, prefix: Optional[str] = None,
             line_directives: bool = False) -> Generated:
    """Render the spec's header and source into out_dir, with the runtime beside them.
    line_directives: #line directives point the compiler's messages into the templates."""
    t0 = time.perf_counter()
    checked = load(spec_path, prefix)
    header, source = render(checked, os.path.basename(spec_path), line_directives)
    h = os.path.join(out_dir, f"{checked.prefix}.h")
    c = os.path.join(out_dir, f"{checked.prefix}.c")
    rt = []
    try:
        os.makedirs(out_dir, exist_ok=True)
        write_if_changed(h, header)
        write_if_changed(c, source)
        for name in RUNTIME_FILES:
            dst = os.path.join(out_dir, name)
            with open(os.path.join(RUNTIME_DIR, name), encoding="utf-8") as f:
                write_if_changed(dst, f.read())
            rt.append(dst)
    except OSError as e:
        raise EnvError(f"error: cannot write the generated files into '{out_dir}': "
                       f"{os_reason(e, out_dir)}") from None
    return Generated(checked, out_dir, h, c, rt, time.perf_counter() - t0)


def cc_command(cc: str, what: str = "C compiler", option: str = "--cc or $CC") -> list:
    """`--cc` / $CC as a command (it may carry options: "ccache gcc -m32"), checked to name
    a program that can be run, so a typo is one line rather than a traceback."""
    try:
        cmd = shlex.split(cc)
    except ValueError as e:          # an unbalanced quote
        raise EnvError(f"error: cannot read the {what} command {cc!r}: {e}") from None
    if not cmd:
        raise EnvError(f"error: the {what} command is empty ({option})")
    if shutil.which(cmd[0]) is None:
        raise EnvError(f"error: cannot run the {what} '{cmd[0]}': no such program (or "
                       f"not executable); give one with {option}")
    return cmd


def run_cc(cmd: list, what: str) -> None:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:
        raise EnvError(f"error: {what}: cannot run '{cmd[0]}': {e.strerror or e}") from None
    if proc.returncode != 0:
        raise BuildError(f"{what} failed ({shlex.join(cmd)}):\n{proc.stderr.strip()}")


def compile_objects(gen: Generated, cc: str = "cc", cflags: Optional[list] = None) -> str:
    """Compile the spec and the runtime into lib<prefix>.a in the output directory."""
    flags = list(cflags) if cflags is not None else list(DEFAULT_CFLAGS)
    cc_cmd = cc_command(cc)
    objs = []
    for src in (gen.source, os.path.join(gen.out_dir, "p2_runtime.c")):
        obj = os.path.splitext(src)[0] + ".o"
        run_cc(cc_cmd + flags + ["-fPIC", "-c", src, "-o", obj], f"compiling {os.path.basename(src)}")
        objs.append(obj)
    lib = os.path.join(gen.out_dir, f"lib{gen.prefix}.a")
    try:
        if os.path.lexists(lib):
            os.remove(lib)
    except OSError as e:
        raise EnvError(f"error: cannot replace {lib}: {os_reason(e)}") from None
    ar = shutil.which("ar") or "ar"
    run_cc([ar, "rcs", lib] + objs, "archiving")
    return lib
