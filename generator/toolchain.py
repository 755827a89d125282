"""The toolchain: the C compiler as a command, where the runtime is, the user's cache, and
writing files safely. No pass of the compiler is imported here, so every module (the
pipeline, the checker, the generated programs' builders, the benchmarks) may use it
without pulling in the pipeline.

The runtime (p2_runtime.c) is the same text for every spec, so it is compiled once per
compiler and flags and the object reused by every later build, test and benchmark:

    obj = runtime_object(cc_command("cc"), ["-std=c11", "-O2", "-fPIC"])

The object lives in the user's cache directory ($P2GEN_CACHE_DIR, else
$XDG_CACHE_HOME/p2gen, else ~/.cache/p2gen), named by a hash of the runtime's text, the
compiler (its path and `--version`) and the flags, and is written under a temporary name
and renamed, so builds running at the same time share it safely. Any other source that
several builds compile alike (the tests' OO7 programs) is cached so too: cached_object.
"""
from __future__ import annotations

import functools
import hashlib
import os
import shlex
import shutil
import subprocess
import tempfile
from typing import Mapping, Optional, Sequence

from . import runtime as runtime_pkg
from .errors import BuildError, EnvError, os_reason

try:
    import fcntl
except ImportError:         # no flock: concurrent builds may compile an object twice
    fcntl = None

RUNTIME_DIR = os.path.dirname(os.path.abspath(runtime_pkg.__file__))
RUNTIME_FILES = ("p2_runtime.h", "p2_runtime.c")
DEFAULT_CFLAGS = ("-std=c11", "-O2", "-Wall", "-Wextra", "-Werror")


def _file_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


_FILE_MODE = _file_mode()    # what open(path, "w") would give a new file


# -- files -------------------------------------------------------------------------------

def write_atomic(path: str, data) -> None:
    """Write `data` (str or bytes) to `path` through a temporary file in the same directory
    and a rename: a reader (or a concurrent writer of the same text) never sees half."""
    d = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=d)
    try:
        os.fchmod(fd, _FILE_MODE)
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_if_changed(path: str, text: str) -> None:
    """Write `text` to `path` unless it already holds exactly that (keeps mtimes, so make
    and the caches see nothing new)."""
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return
    except OSError:
        pass
    write_atomic(path, text)


def cache_dir(kind: str) -> str:
    """The user's cache directory for `kind` (verify, recover, runtime, ...)."""
    base = os.environ.get("P2GEN_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "p2gen")
    return os.path.join(base, kind)


# -- the runtime -------------------------------------------------------------------------

def runtime_text(name: str = "p2_runtime.c") -> str:
    """The text of one of the runtime files users get beside their generated code."""
    with open(os.path.join(RUNTIME_DIR, name), encoding="utf-8") as f:
        return f.read()


def copy_runtime(out_dir: str) -> list:
    """Write the runtime files into out_dir (only where changed); their paths."""
    paths = []
    for name in RUNTIME_FILES:
        dst = os.path.join(out_dir, name)
        write_if_changed(dst, runtime_text(name))
        paths.append(dst)
    return paths


# -- the amalgamation --------------------------------------------------------------------

# The runtime's parts (runtime/src/, in a checkout) in the order p2_runtime.c concatenates
# them: each may use what the ones before it define.
RUNTIME_PARTS = ("head.c", "fault.c", "errors.c", "crc.c", "segment.c", "write_audit.c",
                 "segment_open.c", "segment_recover.c", "journal.c", "record_log.c",
                 "journal_open.c", "verify.c", "refset.c", "backend.c", "pageserver.c",
                 "pagelog.c", "objserver.c")
RUNTIME_SRC = os.path.join(RUNTIME_DIR, "src")


def _fence(text: str) -> str:
    return f"/{'*' * 14} {text} ".ljust(88, "*") + "/\n"


def amalgamate(src_dir: str = RUNTIME_SRC) -> str:
    """p2_runtime.c as it ships: the parts concatenated, each fenced by its name."""
    out = []
    for name in RUNTIME_PARTS:
        with open(os.path.join(src_dir, name), encoding="utf-8") as f:
            text = f.read()
        if name == "head.c":       # the head comment opens the file, unfenced
            out.append(text)
            continue
        out.append("\n" + _fence(f"Begin file {name}") + text + _fence(f"End of {name}"))
    return "".join(out)


# -- the compiler ------------------------------------------------------------------------

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
    """Run a compiler (or ar) command; BuildError with its output if it fails."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:
        raise EnvError(f"error: {what}: cannot run '{cmd[0]}': {e.strerror or e}") from None
    if proc.returncode != 0:
        raise BuildError(f"{what} failed ({shlex.join(cmd)}):\n{proc.stderr.strip()}")


@functools.lru_cache(maxsize=None)
def _compiler_identity(cmd: tuple) -> str:
    """What names a compiler for the cache: its resolved path, its options and the first
    line of its `--version` (a changed compiler, a new object)."""
    path = os.path.realpath(shutil.which(cmd[0]) or cmd[0])
    try:
        proc = subprocess.run(list(cmd) + ["--version"], capture_output=True, text=True,
                              timeout=60)
        version = proc.stdout.splitlines()[0] if proc.stdout else proc.stderr.strip()
    except (OSError, subprocess.SubprocessError):
        version = "?"
    try:
        stamp = str(os.stat(path).st_mtime_ns)
    except OSError:
        stamp = "?"
    return "\0".join([path, stamp, shlex.join(cmd[1:]), version])


def _runtime_flags(flags: Sequence[str], runtime_text_: str = "") -> list:
    """The flags that matter to the runtime's object, so that builds differing only in
    what the runtime never sees share one object: `-I DIR` / `-IDIR` (where a spec's header
    is; the runtime includes none), a `-D<NAME>_INLINE` the runtime's text never names (a
    generated header's switch), and every `-O`/`-g` level but the last (the compiler's
    rule: the last one given wins)."""
    out, skip = [], False
    for f in flags:
        if skip:
            skip = False
            continue
        if f == "-I":
            skip = True
            continue
        if f.startswith("-I"):
            continue
        if f.startswith("-D"):
            name = f[2:].split("=", 1)[0]
            if name.endswith("_INLINE") and name not in runtime_text_:
                continue
        out.append(f)
    def level(f):      # "-O" or "-g" for an optimisation or debug level, else None
        if f.startswith("-O"):
            return "-O"
        return "-g" if f in ("-g", "-g0", "-g1", "-g2", "-g3") else None
    last = {level(f): i for i, f in enumerate(out)}
    return [f for i, f in enumerate(out) if level(f) is None or last[level(f)] == i]


def _unwritable(main: str, root: str, e: OSError) -> EnvError:
    return EnvError(f"error: cannot write {main}'s object into the cache '{root}': "
                    f"{os_reason(e)} (set P2GEN_CACHE_DIR to a writable directory)")


def cached_object(cc_cmd: Sequence[str], flags: Sequence[str], main: str,
                  files: Mapping[str, str], cache: Optional[str] = None) -> str:
    """`files[main]` (a C or C++ source: its suffix tells the compiler) compiled with
    `cc_cmd` and `flags` (`-c` is added): the path of the object in the cache, compiled now
    only if no earlier build made the same one. `files` maps relative paths to texts: the
    source and every file it includes but the system's, laid out as the source includes
    them (`"oo7/oo7_p2.cc"` beside `"oo7/oo7.h"` and `"p2_variant.h"` for
    `#include "../p2_variant.h"`; a quoted include found nowhere beside its includer is
    looked for at the top of them). They are written to a directory of the cache and the
    source compiled there, with no include directory of the caller's (`-I` is refused):
    the key (their paths and texts, the compiler, the flags) is all the object depends
    on, and it names the same files whoever compiled it."""
    flags = list(flags)
    if any(f.startswith("-I") for f in flags):
        raise ValueError("cached_object: the included files go in `files`, not through -I")
    key = hashlib.sha256("\0".join([main, *(x for item in sorted(files.items()) for x in item),
                                    _compiler_identity(tuple(cc_cmd)),
                                    shlex.join(flags)]).encode("utf-8")).hexdigest()[:24]
    root = cache or cache_dir("objects")
    stem = os.path.splitext(os.path.basename(main))[0]
    obj = os.path.join(root, f"{stem}-{key}.o")
    if os.path.exists(obj):
        return obj
    src_dir = os.path.join(root, f"src-{key}")
    try:
        os.makedirs(src_dir, exist_ok=True)
        lock = open(os.path.join(src_dir, ".lock"), "a")
    except OSError as e:
        raise _unwritable(main, root, e) from None
    with lock:
        # one compile of it at a time: a build wanting the object another is compiling
        # waits for it rather than compiling it too
        if fcntl is not None:
            fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(obj):
            return obj
        try:
            for rel, text in files.items():
                path = os.path.join(src_dir, rel)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                write_if_changed(path, text)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".o", dir=root)
            os.close(fd)
        except OSError as e:
            raise _unwritable(main, root, e) from None
        try:
            run_cc(list(cc_cmd) + flags + ["-iquote", src_dir, "-c",
                                           os.path.join(src_dir, main), "-o", tmp],
                   f"compiling {main}")
            os.replace(tmp, obj)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    return obj


def runtime_object(cc_cmd: Sequence[str], flags: Sequence[str],
                   cache: Optional[str] = None) -> str:
    """The runtime compiled with `cc_cmd` and `flags` (`-c` is added): the path of the
    object in the cache (cached_object, in its own directory `runtime`), compiled now only
    if no earlier build made the same one."""
    c_text, h_text = runtime_text("p2_runtime.c"), runtime_text("p2_runtime.h")
    return cached_object(cc_cmd, _runtime_flags(flags, c_text + h_text), "p2_runtime.c",
                         {"p2_runtime.c": c_text, "p2_runtime.h": h_text},
                         cache or cache_dir("runtime"))


def runtime_object_in(out_dir: str, cc_cmd: Sequence[str], flags: Sequence[str],
                      name: str = "p2_runtime.o") -> str:
    """The runtime's object (from the cache) copied to out_dir/name, beside the spec's:
    what a user links is in the output directory, as if compiled there."""
    src = runtime_object(cc_cmd, flags)
    dst = os.path.join(out_dir, name)
    try:
        with open(src, "rb") as f:
            data = f.read()
        try:
            with open(dst, "rb") as f:
                if f.read() == data:
                    return dst
        except OSError:
            pass
        write_atomic(dst, data)
    except OSError as e:
        raise EnvError(f"error: cannot write '{dst}': {os_reason(e)}") from None
    return dst


if __name__ == "__main__":      # python -m p2gen.toolchain amalgamate
    import sys
    if sys.argv[1:] != ["amalgamate"]:
        sys.exit("usage: python -m p2gen.toolchain amalgamate")
    write_if_changed(os.path.join(RUNTIME_DIR, "p2_runtime.c"), amalgamate())
