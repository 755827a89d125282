"""CRC-32C, the record log's checksum: the CPU's instruction and the tables give the same
values (random buffers, lengths and alignments, against a Python reference), and a record
log written by an earlier build (version 1, CRC-32) is still replayed, then restarted in
the new version."""
from __future__ import annotations

import platform
import random
import shlex
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from conftest import DEBUG_FLAG, runtime_obj
from p2gen.build import RUNTIME_DIR
from p2gen.harness import HARNESS_CFLAGS, SANITIZE_CFLAGS, sanitizer_env
from test_wal import (LOG_HDR, REC_COMMIT, REC_RANGE, as_rows, crashed_db, log_transactions, reopen,
                      rows, run)

PROGRAM = r"""
#include "p2_runtime.h"
#include <stdio.h>
#include <stdlib.h>

/* argv: a seed, a count. Prints the implementation, then per buffer: its offset in a
 * block, its length, the bytes' seed, and the CRC-32C of the bytes, whole and in two
 * pieces (continuing a CRC), which must agree. */
int main(int argc, char **argv)
{
    (void)argc;
    unsigned long long x = strtoull(argv[1], NULL, 10) * 0x9e3779b97f4a7c15ull + 1;
    int count = atoi(argv[2]);
    unsigned char *block = malloc(4096 + 64);
    printf("impl %s\n", p2_crc32c_impl());
    printf("check %08x\n", (unsigned)p2_crc32c(0, "123456789", 9));
    for (int i = 0; i < count; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        unsigned off = (unsigned)(x % 16), len = (unsigned)((x >> 8) % (i < count / 2 ? 70 : 4096));
        unsigned long long s = x;
        for (unsigned k = 0; k < len; k++) {
            s ^= s << 13; s ^= s >> 7; s ^= s << 17;
            block[off + k] = (unsigned char)s;
        }
        unsigned cut = len ? (unsigned)((x >> 20) % len) : 0;
        unsigned whole = p2_crc32c(0, block + off, len);
        unsigned parts = p2_crc32c(p2_crc32c(0, block + off, cut), block + off + cut, len - cut);
        printf("%u %u %08x %08x\n", off, len, whole, parts);
        fflush(stdout);
        printf("data");
        for (unsigned k = 0; k < len; k++)
            printf("%02x", block[off + k]);
        printf("\n");
    }
    free(block);
    return 0;
}
"""


def crc32c(data: bytes) -> int:
    """Reference CRC-32C, table-driven."""
    table = []
    for b in range(256):
        c = b
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
        table.append(c)
    crc = 0xFFFFFFFF
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


@pytest.fixture(scope="module")
def crc_exe(cc, tmp_path_factory):
    d = tmp_path_factory.mktemp("crc32c")
    (d / "crc.c").write_text(PROGRAM)
    exe = d / "crc"
    cmd = [*shlex.split(cc), *HARNESS_CFLAGS, *SANITIZE_CFLAGS, DEBUG_FLAG, "-I", RUNTIME_DIR,
           str(d / "crc.c"), runtime_obj(cc, [*HARNESS_CFLAGS, *SANITIZE_CFLAGS, DEBUG_FLAG]), "-o", str(exe)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return str(exe)


def crcs(exe, software: bool, seed: int, count: int):
    env = dict(sanitizer_env())
    env.pop("P2_CRC32C_SOFTWARE", None)
    if software:
        env["P2_CRC32C_SOFTWARE"] = "1"
    proc = subprocess.run([exe, str(seed), str(count)], capture_output=True, text=True,
                          env=env)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def has_crc_instruction() -> bool:
    if platform.machine() not in ("x86_64", "AMD64"):
        return False
    try:
        return "sse4_2" in Path("/proc/cpuinfo").read_text()
    except OSError:
        return False


def test_instruction_and_tables_agree(crc_exe):
    hw = crcs(crc_exe, False, 3, 400)
    sw = crcs(crc_exe, True, 3, 400)
    assert sw[0] == "impl software"
    if has_crc_instruction():
        assert hw[0] == "impl sse4.2"         # else the comparison below proves nothing
    assert hw[1] == sw[1] == "check e3069283"
    assert hw[2:] == sw[2:]
    lines = sw[2:]
    for i in range(0, len(lines), 2):
        off, n, whole, parts = lines[i].split()
        data = bytes.fromhex(lines[i + 1][4:])
        assert len(data) == int(n)
        assert whole == parts == f"{crc32c(data):08x}", (off, n)


def as_version_1(log: bytes) -> bytes:
    """A record log rewritten as an earlier build wrote it: version 1, every record's
    checksum CRC-32 (zlib's), as were the header's."""
    data = bytearray(log)
    struct.pack_into("<I", data, 8, 1)
    base_seq = struct.unpack_from("<Q", data, 24)[0]
    struct.pack_into("<I", data, 60, 0)
    struct.pack_into("<I", data, 60, zlib.crc32(bytes(data[:LOG_HDR])))
    off, seq, chain = LOG_HDR, base_seq + 1, 0
    while off + 16 <= len(data):
        magic = struct.unpack_from("<I", data, off)[0]
        if magic == REC_RANGE:
            where = struct.unpack_from("<Q", data, off + 8)[0]
            n = (where >> 46) + 1
            key = zlib.crc32(struct.pack("<QQ", seq, where))
            crc = zlib.crc32(bytes(data[off + 16:off + 16 + n]), key)
            struct.pack_into("<I", data, off + 4, crc)
            chain = zlib.crc32(struct.pack("<I", crc), chain)
            off += 16 + (n + 7) // 8 * 8
        elif magic == REC_COMMIT:
            assert struct.unpack_from("<Q", data, off + 8)[0] == seq
            struct.pack_into("<I", data, off + 24, chain)
            struct.pack_into("<I", data, off + 4, 0)
            struct.pack_into("<I", data, off + 4, zlib.crc32(bytes(data[off:off + 32])))
            off += 32
            seq, chain = seq + 1, 0
        else:
            break
    return bytes(data)


def test_a_version_1_record_log_is_replayed(harness_builder, tmp_path):
    from test_wal import SPEC
    exe = harness_builder(SPEC, "wl").exe
    src = tmp_path / "src"
    src.mkdir()
    states = crashed_db(exe, src)
    log = (src / "w.db-wal").read_bytes()
    assert struct.unpack_from("<I", log, 8)[0] == 2
    txs = log_transactions(src / "w.db-wal")
    old = as_version_1(log)
    assert old != log and len(log_transactions_bytes(old)) == len(txs)
    # the rewritten log is what this build would refuse as damage if it read it as
    # version 2: the checksums it holds are the other kind
    d = tmp_path / "v1"
    shutil.copytree(src, d)
    (d / "w.db-wal").write_bytes(old)
    proc, out = run(exe, ["open", "all items", "crash"], d)   # crash: the log stays
    assert out[0] == "ok", out[0]
    got, _ = rows(out, 1)
    assert got == as_rows(states[-1])
    assert struct.unpack_from("<I", (d / "w.db-wal").read_bytes(), 8)[0] == 2
    got, _ = reopen(exe, d)
    assert got == as_rows(states[-1])
    # and the same bytes claiming version 2 hold no transaction this build accepts
    d2 = tmp_path / "v1as2"
    shutil.copytree(src, d2)
    fake = bytearray(old)
    struct.pack_into("<I", fake, 8, 2)
    struct.pack_into("<I", fake, 60, 0)
    struct.pack_into("<I", fake, 60, zlib.crc32(bytes(fake[:LOG_HDR])))
    (d2 / "w.db-wal").write_bytes(bytes(fake))
    got, _ = reopen(exe, d2)
    assert got != as_rows(states[-1])


def log_transactions_bytes(data: bytes):
    """log_transactions of a log's bytes."""
    off, start, txs = LOG_HDR, LOG_HDR, []
    while off + 16 <= len(data):
        magic = struct.unpack_from("<I", data, off)[0]
        if magic == REC_RANGE:
            where = struct.unpack_from("<Q", data, off + 8)[0]
            off += 16 + (((where >> 46) + 1) + 7) // 8 * 8
        elif magic == REC_COMMIT:
            off += 32
            txs.append((start, off))
            start = off
        else:
            break
    return txs


def test_a_newer_log_version_is_refused_with_a_message(harness_builder, tmp_path):
    from test_wal import SPEC
    exe = harness_builder(SPEC, "wl").exe
    crashed_db(exe, tmp_path)
    data = bytearray((tmp_path / "w.db-wal").read_bytes())
    struct.pack_into("<I", data, 8, 3)
    struct.pack_into("<I", data, 60, 0)
    struct.pack_into("<I", data, 60, zlib.crc32(bytes(data[:LOG_HDR])))
    (tmp_path / "w.db-wal").write_bytes(bytes(data))
    got, _ = reopen(exe, tmp_path)
    assert isinstance(got, str) and got.startswith("err EFORMAT"), got
    assert "is version 3" in got and "record logs of versions 1 and 2" in got, got
    assert (tmp_path / "w.db-wal").read_bytes() == bytes(data)
