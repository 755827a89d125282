"""The test harness: a generated C program that drives a spec's data managers from line
commands on stdin, using only the public API of <prefix>.h (`p2gen build --harness`).

In the spirit of re2c's skeleton programs, the harness is generated from the same checked
spec as the data managers, so every record, container, key and cursor (with its typed
parameters) has a command; the differential tests (tests/layers/test_differential.py) run it
against a Python model of each container. The command language is documented at the top
of templates/harness.c.j2 and in the generated file.

    gen = generate("tpcb.p2", "out")
    exe = build_harness(gen)                   # out/tpcb_harness, with ASan and UBSan
    run_harness(exe, ["open", "insert accounts 1 2 3 \\"x\\"", "count accounts"])
"""
from __future__ import annotations

import os
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from typing import Iterable, Optional, Sequence, Union

from .toolchain import cc_command, run_cc, runtime_object
from .ir import CheckedSpec, Generated
from .errors import BuildError, EnvError, os_reason
from .model import FieldType
from .cfuncs import FunctionTable, strip_marks
from .render import jinja_env, cursor_view, names

HARNESS_CFLAGS = ("-std=c11", "-O1", "-g", "-Wall", "-Wextra", "-Werror")
SANITIZE_CFLAGS = ("-fsanitize=address,undefined", "-fno-omit-frame-pointer",
                   "-fno-sanitize-recover=all")

def _kind(t: FieldType) -> str:
    """The harness's code for a field type: P2H_I8 .. P2H_F64, P2H_CHAR."""
    return "P2H_CHAR" if t.kind == "char" else f"P2H_{t.name.upper()}"


def _arg(t: FieldType, v: str) -> str:
    """C expression passing hval pointer `v` as an argument of type `t` (see arg_type)."""
    if t.kind == "char":
        return f"{v}->s"
    if t.kind == "float":
        return f"({t.ctype}){v}->d"
    return f"({t.ctype}){v}->{'i' if t.signed else 'u'}"


class _CursorEntry:
    """One row of the harness's cursor table: a user cursor or a container's `all`."""

    def __init__(self, i: int, name: str, cont: int, view, info):
        self.i = i
        self.name = name
        self.cont = cont
        self.p = view.p
        self.t = view.t
        self.params = view.params
        self.info = info


class _ContainerEntry:
    def __init__(self, i: int, info):
        self.i = i
        self.info = info
        self.all = -1


def harness_context(checked: CheckedSpec) -> dict:
    containers = [_ContainerEntry(i, info) for i, info in enumerate(checked.containers)]
    index = {id(c.info): c.i for c in containers}
    cursors: list[_CursorEntry] = []
    for cur in checked.cursors:
        cursors.append(_CursorEntry(len(cursors), cur.name, index[id(cur.container)],
                                    cursor_view(cur, checked), cur))
    for c in containers:
        cur = c.info.all_cursor
        c.all = len(cursors)
        cursors.append(_CursorEntry(len(cursors), f"{c.info.name}.all", c.i,
                                    cursor_view(cur, checked), cur))
    return dict(S=checked, containers=containers, cursors=cursors, kind=_kind, arg=_arg,
                names=names, spec_file=f"{checked.prefix}.p2")


def render_harness(checked: CheckedSpec) -> str:
    """The C source of the harness of a checked, planned spec. The harness's own names
    start with p2h_ / P2H_, so a spec prefix starting with p2h is refused (BuildError)."""
    if checked.prefix.lower().startswith("p2h"):
        raise BuildError(f"cannot build a harness for prefix '{checked.prefix}': names "
                         f"starting with p2h are the harness's own; choose another --prefix")
    return strip_marks(harness_rendering(checked)[0])


def harness_rendering(checked: CheckedSpec) -> tuple:
    """(marked text, table): the harness as rendered, with the table of what it defines
    (cfuncs.FunctionTable: every function, type, macro and variable, through the
    templates' constructs), which the names pass reads."""
    table = FunctionTable(checked.prefix)
    table.section = "harness.c.j2"
    text = jinja_env().get_template("harness.c.j2").render(
        **harness_context(checked), cfunc=table.cfunc, cdecl=table.cdecl,
        cmember=table.cmember)
    return text, table


def harness_paths(gen: Generated) -> tuple[str, str]:
    """(source, executable) paths of the harness of `gen`."""
    base = os.path.join(gen.out_dir, f"{gen.prefix}_harness")
    return base + ".c", base


def write_harness(gen: Generated) -> str:
    """Write <out_dir>/<prefix>_harness.c (only if its text changed); return its path."""
    src, _ = harness_paths(gen)
    text = render_harness(gen.checked)
    try:
        with open(src, encoding="utf-8") as f:
            if f.read() == text:
                return src
    except OSError:
        pass
    try:
        with open(src, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        raise EnvError(f"error: cannot write the harness: {os_reason(e)}") from None
    return src


def build_harness(gen: Generated, cc: str = "cc", sanitize: bool = True,
                  extra_cflags: Sequence[str] = (), jobs: int = 0,
                  library: bool = True) -> str:
    """Compile the harness with the spec's .c and p2_runtime.c (its object cached across
    builds: toolchain.runtime_object) into
    <out_dir>/<prefix>_harness (AddressSanitizer and UBSan unless sanitize=False).
    library=False leaves the spec's .c out: for a harness compiled with <PREFIX>_INLINE
    in extra_cflags, which defines the whole API itself (the link fails if it does not).
    The translation units compile in parallel (`jobs`, default: the CPU count).
    Raises BuildError with the compiler's output on failure. Returns the executable."""
    src, exe = harness_paths(gen)
    write_harness(gen)
    flags = list(HARNESS_CFLAGS) + (list(SANITIZE_CFLAGS) if sanitize else []) + list(extra_cflags)
    cc_cmd = cc_command(cc)
    tag = "san" if sanitize else "plain"
    units = [src, gen.source] if library else [src]
    objs = [os.path.splitext(u)[0] + f".h{tag}.o" for u in units]

    def compile_one(pair):
        unit, obj = pair
        if unit is None:     # the runtime: the same for every spec, compiled once (cached)
            return runtime_object(cc_cmd, flags)
        run_cc(cc_cmd + flags + ["-I", gen.out_dir, "-c", unit, "-o", obj],
               f"compiling {os.path.basename(unit)}")
        return obj

    workers = jobs or min(len(units) + 1, os.cpu_count() or 1)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futs = [pool.submit(compile_one, pair) for pair in zip(units + [None], objs + [None])]
        objs = [fut.result() for fut in futs]
    tmp = exe + ".tmp"
    run_cc(cc_cmd + flags + objs + ["-o", tmp], "linking the harness")
    os.replace(tmp, exe)
    return exe


def sanitizer_env(base: Optional[dict] = None) -> dict:
    """Environment for running a sanitized harness: stop at the first report; leak
    checking off (LeakSanitizer does not work under ptrace, e.g. in some sandboxes)."""
    env = dict(os.environ if base is None else base)
    env.setdefault("ASAN_OPTIONS", "detect_leaks=0:abort_on_error=0:allocator_may_return_null=1")
    env.setdefault("UBSAN_OPTIONS", "halt_on_error=1:print_stacktrace=1")
    return env


def run_harness(exe: str, commands: Union[str, Iterable[str]], cwd: Optional[str] = None,
                env: Optional[dict] = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run the harness on `commands` (lines, or one text); returns the finished process
    (stdout/stderr as text)."""
    text = commands if isinstance(commands, str) else "".join(c + "\n" for c in commands)
    return subprocess.run([os.path.abspath(exe)], input=text, capture_output=True, text=True,
                          errors="surrogateescape", cwd=cwd or tempfile.gettempdir(),
                          env=env if env is not None else sanitizer_env(), timeout=timeout)
