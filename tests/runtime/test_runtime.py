"""Tests of the hand-written C runtime (runtime/p2_runtime.{h,c}).

The C test program tests/runtime/test_seg.c is built with AddressSanitizer and
UBSan and run as a whole; the same binary also has small command-line modes
(open / fill / check / crash / hold) that the tests below use to check, from
Python, how damaged or foreign files are refused.
"""
import os
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from conftest import build_san_program, find_cc, runtime_obj

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = ROOT / "runtime"
TEST_C = ROOT / "tests" / "runtime" / "test_seg.c"

CC = find_cc()    # the `cc` fixture's compiler: the runtime objects cached for it are shared
pytestmark = pytest.mark.skipif(CC is None, reason="no C compiler")

STRICT_FLAGS = ["-std=c11", "-O2", "-Wall", "-Wextra", "-Werror"]

FP = 0x0123456789ABCDEF          # fingerprint used by the tests
HEADER_SIZE = 4096
ROOTS = [("alpha", 100), ("beta", 10000), ("gamma", 16)]   # as in test_seg.c

# Header field offsets (see the layout table in p2_runtime.h).
OFF_MAGIC, OFF_VERSION, OFF_HEADER_SIZE, OFF_PAGE_SIZE, OFF_STATE = 0, 8, 12, 16, 20
OFF_FINGERPRINT, OFF_FILE_SIZE, OFF_BRK = 24, 32, 40
OFF_FREE_SMALL, OFF_FREE_LARGE, OFF_NROOTS, OFF_CHECKSUM = 48, 112, 120, 124
OFF_ROOTS, ROOT_ENTRY = 256, 64


# ---------------------------------------------------------------------------
# fixtures and helpers
# ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def test_seg(tmp_path_factory):
    """Path of the sanitizer-instrumented test_seg binary."""
    out = tmp_path_factory.mktemp("build") / "test_seg"
    return build_san_program(CC, out, [TEST_C], RUNTIME)


@pytest.fixture(scope="module")
def san_env(test_seg, tmp_path_factory):
    """Environment for sanitized runs; leak checking on if LeakSanitizer works here
    (it does not under ptrace, e.g. in some containers)."""
    env = dict(os.environ)
    env["UBSAN_OPTIONS"] = "halt_on_error=1:print_stacktrace=1"
    env["ASAN_OPTIONS"] = "detect_leaks=1:abort_on_error=0"
    probe = tmp_path_factory.mktemp("probe") / "probe.p2"
    res = subprocess.run([str(test_seg), "open", str(probe), "1"], capture_output=True, text=True, env=env)
    if "LeakSanitizer has encountered a fatal error" in res.stderr or "does not work under ptrace" in res.stderr:
        env["ASAN_OPTIONS"] = "detect_leaks=0:abort_on_error=0"
    return env


def run(test_seg, env, *args, check_sanitizers=True):
    res = subprocess.run([str(test_seg), *map(str, args)], capture_output=True, text=True, env=env, timeout=300)
    if check_sanitizers:
        assert "Sanitizer" not in res.stderr and "runtime error" not in res.stderr, res.stderr
    return res


def open_msg(test_seg, env, path, fp=FP, variant=None):
    """Run `test_seg open` and return its one output line: '<CODE> <message>'."""
    args = ["open", path, f"{fp:x}"] + ([variant] if variant else [])
    res = run(test_seg, env, *args)
    return res.stdout.strip()


def make_db(test_seg, env, path):
    res = run(test_seg, env, "fill", path, f"{FP:x}")
    assert res.returncode == 0, res.stdout + res.stderr
    return path.read_bytes()


def header_crc(header: bytes) -> int:
    h = bytearray(header[:HEADER_SIZE])
    h[OFF_CHECKSUM:OFF_CHECKSUM + 4] = b"\0\0\0\0"
    return zlib.crc32(bytes(h))


def patch(path, offset, fmt, value, fix_checksum=True):
    """Overwrite a header field, optionally recomputing the header checksum."""
    data = bytearray(path.read_bytes())
    struct.pack_into("<" + fmt, data, offset, value)
    if fix_checksum:
        struct.pack_into("<I", data, OFF_CHECKSUM, header_crc(data))
    path.write_bytes(bytes(data))
    return bytes(data)


def field(data, offset, fmt):
    return struct.unpack_from("<" + fmt, data, offset)[0]


# ---------------------------------------------------------------------------
# the C test suite and the build
# ---------------------------------------------------------------------------

def test_c_suite_under_sanitizers(test_seg, san_env, tmp_path):
    res = run(test_seg, san_env, tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "all tests passed" in res.stdout


def test_strict_build(tmp_path):
    # at the flags users build with (p2gen build's default): the object the toolchain
    # caches, compiled (with -Werror) by the first build that wanted it
    runtime_obj(CC, STRICT_FLAGS)
    cmd = [CC, *STRICT_FLAGS, "-Wpedantic", "-Wshadow", "-Wconversion", "-c",
           str(RUNTIME / "p2_runtime.c"), "-o", str(tmp_path / "rt.o")]
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


def test_header_is_self_contained_c_and_cpp(tmp_path):
    header = (RUNTIME / "p2_runtime.h").read_text()
    includes = sorted(line.split()[1] for line in header.splitlines() if line.startswith("#include"))
    assert includes == ["<stddef.h>", "<stdint.h>"]
    src = tmp_path / "use.c"
    src.write_text('#include "p2_runtime.h"\n'
                   "int use(p2_seg *s) { return p2_seg_ptr(s, p2_seg_root(s, 0)) != 0 ? P2_OK : P2_EINVAL; }\n")
    res = subprocess.run([CC, "-std=c11", "-Wall", "-Wextra", "-Werror", "-Wpedantic", "-I", str(RUNTIME),
                          "-fsyntax-only", str(src)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx:
        res = subprocess.run([cxx, "-std=c++11", "-Wall", "-Wextra", "-Werror", "-I", str(RUNTIME),
                              "-x", "c++", "-fsyntax-only", str(src)], capture_output=True, text=True)
        assert res.returncode == 0, res.stderr


# ---------------------------------------------------------------------------
# file layout, as seen from outside
# ---------------------------------------------------------------------------

def test_created_file_layout(test_seg, san_env, tmp_path):
    path = tmp_path / "db.p2"
    data = make_db(test_seg, san_env, path)
    assert data[:8] == b"P2GENDB\0"
    assert field(data, OFF_VERSION, "I") == 1
    assert field(data, OFF_HEADER_SIZE, "I") == HEADER_SIZE
    assert field(data, OFF_PAGE_SIZE, "I") == os.sysconf("SC_PAGE_SIZE")
    assert field(data, OFF_STATE, "I") == 0, "closed files are CLEAN"
    assert field(data, OFF_FINGERPRINT, "Q") == FP
    assert field(data, OFF_FILE_SIZE, "Q") == len(data)
    assert len(data) % 65536 == 0
    brk = field(data, OFF_BRK, "Q")
    assert HEADER_SIZE <= brk <= len(data) and brk % 16 == 0
    assert field(data, OFF_CHECKSUM, "I") == header_crc(data)
    assert field(data, OFF_NROOTS, "I") == len(ROOTS)
    for i, (name, size) in enumerate(ROOTS):
        entry = OFF_ROOTS + i * ROOT_ENTRY
        assert data[entry:entry + 48].rstrip(b"\0") == name.encode()
        off, rsize = struct.unpack_from("<QQ", data, entry + 48)
        assert rsize == size and HEADER_SIZE <= off < brk and off % 16 == 0

    # Reopening in another process finds the data; a clean reopen keeps it CLEAN.
    res = run(test_seg, san_env, "check", path, f"{FP:x}")
    assert res.returncode == 0, res.stdout + res.stderr
    assert field(path.read_bytes(), OFF_STATE, "I") == 0


def test_create_missing_and_empty(test_seg, san_env, tmp_path):
    path = tmp_path / "new.p2"
    assert open_msg(test_seg, san_env, path) == "P2_OK created=1"
    assert open_msg(test_seg, san_env, path) == "P2_OK created=0"
    empty = tmp_path / "empty.p2"
    empty.write_bytes(b"")
    # an existing empty file is not a database, and is not made one
    assert open_msg(test_seg, san_env, empty) == f"P2_EFORMAT {empty}: not a p2gen database: empty (0 bytes); remove it to create a new database there"
    assert empty.read_bytes() == b""


def test_cannot_create(test_seg, san_env, tmp_path):
    path = tmp_path / "no" / "such" / "dir.p2"
    out = open_msg(test_seg, san_env, path)
    assert out.startswith(f"P2_EIO {path}: cannot create: ")
    assert not path.exists()


# ---------------------------------------------------------------------------
# refusing damaged or foreign files
# ---------------------------------------------------------------------------

def _refused(test_seg, env, path, expected, fp=FP, variant=None):
    """Open must print exactly `expected` and leave the file byte-for-byte unchanged."""
    before = path.read_bytes()
    assert open_msg(test_seg, env, path, fp=fp, variant=variant) == expected
    assert path.read_bytes() == before


def test_truncated_below_header(test_seg, san_env, tmp_path):
    path = tmp_path / "db.p2"
    make_db(test_seg, san_env, path)
    os.truncate(path, 100)
    _refused(test_seg, san_env, path,
             f"P2_EFORMAT {path}: truncated: file is 100 bytes, smaller than the 4096-byte header")


def test_truncated_to_header(test_seg, san_env, tmp_path):
    path = tmp_path / "db.p2"
    data = make_db(test_seg, san_env, path)
    os.truncate(path, HEADER_SIZE)
    _refused(test_seg, san_env, path,
             f"P2_EFORMAT {path}: truncated: header says {len(data)} bytes, file has {HEADER_SIZE}")


def test_bad_magic(test_seg, san_env, tmp_path):
    path = tmp_path / "db.p2"
    make_db(test_seg, san_env, path)
    data = bytearray(path.read_bytes())
    data[0:8] = b"SQLite f"
    path.write_bytes(bytes(data))
    _refused(test_seg, san_env, path, f"P2_EFORMAT {path}: not a p2gen database (bad magic)")


def test_no_magic_says_the_creation_was_cut_short(test_seg, san_env, tmp_path):
    """Creation stores the magic last, so a file whose creator died while making it has
    none: refused, saying so (a journalled one with nothing committed starts again:
    test_python_journal.py)."""
    path = tmp_path / "db.p2"
    make_db(test_seg, san_env, path)
    data = bytearray(path.read_bytes())
    data[0:8] = bytes(8)
    path.write_bytes(bytes(data))
    _refused(test_seg, san_env, path,
             f"P2_EFORMAT {path}: not a p2gen database (bad magic): its header has no magic, "
             "as a file whose creation was cut short (truncated) has")


def test_foreign_file(test_seg, san_env, tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("hello\n" * 1000)
    _refused(test_seg, san_env, path, f"P2_EFORMAT {path}: not a p2gen database (bad magic)")


def test_other_version(test_seg, san_env, tmp_path):
    path = tmp_path / "db.p2"
    make_db(test_seg, san_env, path)
    patch(path, OFF_VERSION, "I", 2)
    _refused(test_seg, san_env, path, f"P2_EFORMAT {path}: format version 2, this build reads version 1")


@pytest.mark.parametrize("offset", [OFF_BRK, OFF_ROOTS + 3, HEADER_SIZE - 1, 200])
def test_flipped_header_byte(test_seg, san_env, tmp_path, offset):
    path = tmp_path / "db.p2"
    make_db(test_seg, san_env, path)
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x40
    path.write_bytes(bytes(data))
    stored, computed = field(data, OFF_CHECKSUM, "I"), header_crc(data)
    assert stored != computed
    _refused(test_seg, san_env, path,
             f"P2_EFORMAT {path}: header checksum mismatch (stored 0x{stored:08x}, "
             f"computed 0x{computed:08x}): file is corrupt")


def test_flipped_data_byte_is_not_a_header_error(test_seg, san_env, tmp_path):
    # Only the header is checksummed; data pages are the data manager's business.
    path = tmp_path / "db.p2"
    make_db(test_seg, san_env, path)
    data = bytearray(path.read_bytes())
    data[-1] ^= 1
    path.write_bytes(bytes(data))
    assert open_msg(test_seg, san_env, path) == "P2_OK created=0"


def test_other_fingerprint(test_seg, san_env, tmp_path):
    path = tmp_path / "db.p2"
    make_db(test_seg, san_env, path)
    _refused(test_seg, san_env, path,
             f"P2_EMISMATCH {path}: created by a different spec or equation "
             f"(the file was made by a program that did not record its spec; "
             f"fingerprint 0x{FP:016x}, expected 0x{0xfeed:016x})", fp=0xfeed)


@pytest.mark.parametrize("variant, message", [
    ("renamed", 'root 1 is "beta" in the file, the spec expects "BETA"'),
    ("resized", 'root "gamma" is 16 bytes in the file, the spec expects 32'),
    ("fewer", 'the file has 3 roots, the spec 2: root "gamma" is not in the spec'),
    ("more", 'the file has 3 roots, the spec 4: root "delta" is missing from the file'),
])
def test_other_roots(test_seg, san_env, tmp_path, variant, message):
    path = tmp_path / "db.p2"
    make_db(test_seg, san_env, path)
    _refused(test_seg, san_env, path, f"P2_EMISMATCH {path}: {message}", variant=variant)


def test_file_shorter_than_header_says(test_seg, san_env, tmp_path):
    path = tmp_path / "db.p2"
    data = make_db(test_seg, san_env, path)
    os.truncate(path, len(data) - 65536)
    _refused(test_seg, san_env, path,
             f"P2_EFORMAT {path}: truncated: header says {len(data)} bytes, file has {len(data) - 65536}")


@pytest.mark.parametrize("what", ["brk", "root", "free_small", "free_large", "header_size", "state"])
def test_corrupt_header_fields(test_seg, san_env, tmp_path, what):
    path = tmp_path / "db.p2"
    data = make_db(test_seg, san_env, path)
    size, brk = len(data), field(data, OFF_BRK, "Q")
    if what == "brk":
        patch(path, OFF_BRK, "Q", size + 16)
        expected = f"corrupt header: brk {size + 16} is outside the file (4096..{size})"
    elif what == "root":
        patch(path, OFF_ROOTS + 48, "Q", brk)
        expected = f'corrupt header: root "alpha" (offset {brk}, 100 bytes) lies outside the allocated area (4096..{brk})'
    elif what == "free_small":
        patch(path, OFF_FREE_SMALL + 8 * 3, "Q", 8)
        expected = f"corrupt header: free list for 128-byte blocks starts at offset 8, outside the allocated area (4096..{brk})"
    elif what == "free_large":
        patch(path, OFF_FREE_LARGE, "Q", brk)
        expected = f"corrupt header: free list for >= 4096-byte blocks starts at offset {brk}, outside the allocated area (4096..{brk})"
    elif what == "header_size":
        patch(path, OFF_HEADER_SIZE, "I", 8192)
        expected = "corrupt header: header size 8192, expected 4096"
    else:
        patch(path, OFF_STATE, "I", 7)
        expected = "corrupt header: state flag 7"
    _refused(test_seg, san_env, path, f"P2_EFORMAT {path}: {expected}")


NOT_CLOSED = ("was not closed cleanly (a process crashed or is still using it); "
              "refusing to open a possibly half-written file (if no process uses it, "
              "`p2gen recover` rebuilds it)")


def test_left_open_flag(test_seg, san_env, tmp_path):
    path = tmp_path / "db.p2"
    make_db(test_seg, san_env, path)
    patch(path, OFF_STATE, "I", 1)
    _refused(test_seg, san_env, path, f"P2_EFORMAT {path}: {NOT_CLOSED}")


def test_crashed_process(test_seg, san_env, tmp_path):
    path = tmp_path / "db.p2"
    make_db(test_seg, san_env, path)
    res = run(test_seg, san_env, "crash", path, f"{FP:x}")
    assert res.returncode == 0 and "crashing" in res.stdout, res.stdout + res.stderr
    data = path.read_bytes()
    # The OPEN mark reached the file.  The allocation after it changed the
    # header without updating the checksum (only sync and close do), which
    # must not make the file look corrupt: it is reported as not closed.
    assert field(data, OFF_STATE, "I") == 1
    assert field(data, OFF_CHECKSUM, "I") != header_crc(data)
    _refused(test_seg, san_env, path, f"P2_EFORMAT {path}: {NOT_CLOSED}")


def test_flipped_byte_in_open_file(test_seg, san_env, tmp_path):
    # In a file left OPEN the checksum is stale by design: not-closed wins.
    path = tmp_path / "db.p2"
    make_db(test_seg, san_env, path)
    patch(path, OFF_STATE, "I", 1)
    data = bytearray(path.read_bytes())
    data[300] ^= 1
    path.write_bytes(bytes(data))
    _refused(test_seg, san_env, path, f"P2_EFORMAT {path}: {NOT_CLOSED}")


def test_validation_order(test_seg, san_env, tmp_path):
    # Several faults at once: the first in the documented order is reported.
    path = tmp_path / "db.p2"
    make_db(test_seg, san_env, path)
    patch(path, OFF_STATE, "I", 1)
    assert open_msg(test_seg, san_env, path, fp=1).startswith(f"P2_EMISMATCH {path}: created by a different spec")
    patch(path, OFF_VERSION, "I", 9, fix_checksum=False)
    assert open_msg(test_seg, san_env, path, fp=1) == f"P2_EFORMAT {path}: format version 9, this build reads version 1"


def test_busy_across_processes(test_seg, san_env, tmp_path):
    path = tmp_path / "db.p2"
    make_db(test_seg, san_env, path)
    holder = subprocess.Popen([str(test_seg), "hold", str(path), f"{FP:x}"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=san_env)
    try:
        assert holder.stdout.readline().strip() == "ready"
        assert open_msg(test_seg, san_env, path) == f"P2_EBUSY {path}: in use by another process"
    finally:
        out, err = holder.communicate("", timeout=60)
    assert holder.returncode == 0, out + err
    assert open_msg(test_seg, san_env, path) == "P2_OK created=0"
    res = run(test_seg, san_env, "check", path, f"{FP:x}")
    assert res.returncode == 0, res.stdout + res.stderr
