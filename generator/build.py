"""The pipeline as one call per step: load (parse, check, plan), generate (render and
write), compile (the C compiler, and CFFI for --python)."""
from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass, field
from typing import Optional

from .check import check, check_generated_names
from .ir import CheckedSpec
from .errors import EnvError, os_reason
from .parser import parse_file
from .plan import plan
from .render import render
# the toolbox lives in toolchain.py; these names stay importable from here
from .toolchain import (DEFAULT_CFLAGS, RUNTIME_DIR, RUNTIME_FILES, cc_command,  # noqa: F401
                        copy_runtime, run_cc, runtime_object_in, write_if_changed)


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
        rt = copy_runtime(out_dir)
    except OSError as e:
        raise EnvError(f"error: cannot write the generated files into '{out_dir}': "
                       f"{os_reason(e, out_dir)}") from None
    return Generated(checked, out_dir, h, c, rt, time.perf_counter() - t0)


def compile_objects(gen: Generated, cc: str = "cc", cflags: Optional[list] = None) -> str:
    """Compile the spec and the runtime into lib<prefix>.a in the output directory."""
    flags = list(cflags) if cflags is not None else list(DEFAULT_CFLAGS)
    cc_cmd = cc_command(cc)
    obj = os.path.splitext(gen.source)[0] + ".o"
    run_cc(cc_cmd + flags + ["-fPIC", "-c", gen.source, "-o", obj],
           f"compiling {os.path.basename(gen.source)}")
    # the runtime is the same for every spec: compiled once per compiler and flags
    objs = [obj, runtime_object_in(gen.out_dir, cc_cmd, flags + ["-fPIC"])]
    lib = os.path.join(gen.out_dir, f"lib{gen.prefix}.a")
    try:
        if os.path.lexists(lib):
            os.remove(lib)
    except OSError as e:
        raise EnvError(f"error: cannot replace {lib}: {os_reason(e)}") from None
    ar = shutil.which("ar") or "ar"
    run_cc([ar, "rcs", lib] + objs, "archiving")
    return lib
