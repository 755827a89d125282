"""The pipeline, in the order its passes run:

    parse -> check -> plan -> emit -> names -> write     (then compile)

`emit_spec` runs the passes up to names and returns the planned spec with its emitted
header and source; `load` keeps only the spec (p2gen check, explain), `planned` stops
before the emit (what a benchmark's manifest reads); `generate` writes
what was emitted, with the runtime beside it; `compile_objects` compiles it into
lib<prefix>.a. The toolbox (the compiler, the runtime's files, atomic writes) is
toolchain.py, which no pass imports this module for."""
from __future__ import annotations

import os
import shutil
import time
from typing import Optional

from .check import check
from .errors import EnvError, os_reason
from .ir import CheckedSpec, Generated
from .names import check_generated_names
from .parser import parse_file
from .plan import plan
from .render import Renderer, render
# these names stay importable from here for the programs built on the pipeline
from .toolchain import (DEFAULT_CFLAGS, RUNTIME_DIR, RUNTIME_FILES, cc_command,  # noqa: F401
                        copy_runtime, run_cc, runtime_object_in, write_if_changed)


def emit_spec(spec_path: str, prefix: Optional[str] = None,
              line_directives: bool = False) -> tuple:
    """(checked spec, header, source): parse, check, plan, emit and the names pass, in
    that order. Raises SpecError/SpecErrors on bad input."""
    return _emit(spec_path, prefix, line_directives)[:3]


def _emit(spec_path: str, prefix: Optional[str], line_directives: bool,
          profile: bool = False, trace: bool = False) -> tuple:
    """emit_spec's passes, and what the header declares (render.header_declarations).
    profile: the C counts the workload (`p2gen build --profile`, profile.py); trace: it
    logs every operation (`p2gen build --trace`, trace.py)."""
    checked = plan(check(parse_file(spec_path), prefix))            # parse, check, plan
    checked.profile = profile
    checked.trace = trace
    spec_file = os.path.basename(spec_path)
    renderer = Renderer(checked, spec_file)
    header, source = renderer.render()                               # emit
    check_generated_names(checked, spec_file, renderer.emitted_entries)   # names
    if line_directives:      # the same C with #line marks into the templates
        header, source = render(checked, spec_file, line_directives=True)
    return checked, header, source, renderer.header_declarations


def planned(spec_path: str, prefix: Optional[str] = None) -> CheckedSpec:
    """Parse, check and plan a spec file, and no more: what a benchmark's manifest reads
    of a spec (its containers, memories, files), at about a fiftieth of load's CPU (the
    names pass renders the whole spec); the build that follows runs every pass."""
    return plan(check(parse_file(spec_path), prefix))


def load(spec_path: str, prefix: Optional[str] = None) -> CheckedSpec:
    """Parse, check and plan a spec file, and run the names pass over what it emits;
    raises SpecError/SpecErrors on bad input."""
    return emit_spec(spec_path, prefix)[0]


def generate(spec_path: str, out_dir: str, prefix: Optional[str] = None,
             line_directives: bool = False, profile: bool = False,
             trace: bool = False) -> Generated:
    """The passes, then write: the spec's header and source into out_dir, with the
    runtime beside them. line_directives: #line directives point the compiler's messages
    into the templates."""
    t0 = time.perf_counter()
    checked, header, source, declarations = _emit(spec_path, prefix, line_directives, profile,
                                                  trace)
    h = os.path.join(out_dir, f"{checked.prefix}.h")
    c = os.path.join(out_dir, f"{checked.prefix}.c")
    rt = []
    try:                                                             # write
        os.makedirs(out_dir, exist_ok=True)
        write_if_changed(h, header)
        write_if_changed(c, source)
        rt = copy_runtime(out_dir)
    except OSError as e:
        raise EnvError(f"error: cannot write the generated files into '{out_dir}': "
                       f"{os_reason(e, out_dir)}") from None
    return Generated(checked, out_dir, h, c, rt, time.perf_counter() - t0, declarations)


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
    write_pkg_config(gen)
    return lib


def pkg_config_text(gen: Generated) -> str:
    """<prefix>.pc: pkg-config's description of lib<prefix>.a and its header, relative to
    the file's own directory (${pcfiledir}), so the output directory may move."""
    try:
        from importlib.metadata import version
        ver = version("p2gen")
    except Exception:            # not installed (run from a checkout's path)
        ver = "0"
    spec = "".join(ch if ch.isprintable() else "?"
                   for ch in os.path.basename(gen.checked.spec.path)) or gen.prefix
    p = gen.prefix
    return (f"# {p}.pc -- written by p2gen build beside lib{p}.a. Use:\n"
            f"#   cc app.c $(PKG_CONFIG_PATH=<this directory> pkg-config --cflags --libs {p})\n"
            "prefix=${pcfiledir}\n\n"
            f"Name: {p}\n"
            f"Description: data managers generated by p2gen from {spec}\n"
            f"Version: {ver}\n"
            "Cflags: -I${prefix}\n"
            f"Libs: -L${{prefix}} -l{p}\n")


def write_pkg_config(gen: Generated) -> str:
    path = os.path.join(gen.out_dir, f"{gen.prefix}.pc")
    try:
        write_if_changed(path, pkg_config_text(gen))
    except OSError as e:
        raise EnvError(f"error: cannot write {path}: {os_reason(e, path)}") from None
    return path
