"""What the record log keeps for an abort: each byte a transaction writes once, however
often it is written (through the runtime's API, under ASan/UBSan), and the generated code
aborting a transaction that set the same indexed field 10,000 times."""
from __future__ import annotations

import shlex
import subprocess

import pytest

from conftest import DEBUG_FLAG, runtime_obj
from p2gen.build import RUNTIME_DIR
from p2gen.harness import HARNESS_CFLAGS, SANITIZE_CFLAGS, sanitizer_env
from test_wal import SPEC, as_rows, load, name, rows, run

PROGRAM = r"""
#include "p2_runtime.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(c) do { if (!(c)) { printf("fail %s line %d: %s\n", #c, __LINE__, err.msg); \
                                  return 1; } } while (0)

static p2_seg seg;
static p2_err err;

static int open_it(const char *path)
{
    p2_journal_opts o = {0, 1, UINT64_C(1) << 30, 1, 0, 0};   /* nosync, record log */
    return p2_seg_open_journal(&seg, path, 42, 0, NULL, NULL, 0, &o, NULL, &err);
}

/* write v at [at, at + n), announced first, as the generated code does */
static void put(uint64_t at, uint64_t n, unsigned char v)
{
    p2_seg_will_write(&seg, seg.base + at, n);
    memset(seg.base + at, v, (size_t)n);
}

int main(int argc, char **argv)
{
    (void)argc;
    CHECK(open_it(argv[1]) == P2_OK);
    uint64_t ps = seg.pgsize, size = 3 * ps;
    p2_off blk = p2_seg_alloc(&seg, size, &err);
    CHECK(blk != 0);
    unsigned char *orig = malloc((size_t)size);
    for (uint64_t i = 0; i < size; i++)
        seg.base[blk + i] = orig[i] = (unsigned char)(i * 7 + 3);
    CHECK(p2_seg_commit(&seg, &err) == P2_OK);
    CHECK(seg.nundo == 0 && seg.undo_len == 0);

    /* the bytes the writes below cover: an 8-byte field, a 64-byte record around it,
     * 40 bytes across a page boundary, two ranges that overlap each other */
    uint64_t cross = 2 * ps - blk % ps - 20;              /* 20 bytes before a page boundary */
    uint64_t touched = 64 + 40 + 48;
    for (int r = 0; r < 2; r++) {
        for (int i = 0; i < 10000; i++) {
            put(blk + 8, 8, (unsigned char)i);                  /* the same field */
            if (i % 100 == 0)
                put(blk, 64, (unsigned char)(i + 1));            /* the whole record */
            put(blk + 8 + (uint64_t)(i % 7), 5, (unsigned char)(i + 2));
            put(blk + cross, 40, (unsigned char)(i + 3));        /* across the boundary */
            put(blk + 1000 + (uint64_t)(i % 17), 31, (unsigned char)(i + 4));
        }
        /* each byte once, with a 16-byte header per entry; without the dedup, 50,000
         * writes of 5 to 64 bytes would keep more than 1 MB */
        printf("undo %llu bytes in %llu entries\n", (unsigned long long)seg.undo_len,
               (unsigned long long)seg.nundo);
        CHECK(seg.undo_len <= touched + 16 * 8 + 8 * 8);
        CHECK(seg.nundo <= 8);
        if (r == 0) {
            CHECK(p2_seg_abort(&seg, &err) == P2_OK);
            CHECK(memcmp(seg.base + blk, orig, (size_t)size) == 0);   /* every byte back */
            CHECK(seg.nundo == 0 && seg.undo_len == 0);
        }
    }
    unsigned char *want = malloc((size_t)size);
    memcpy(want, seg.base + blk, (size_t)size);
    uint64_t before = seg.log_end;
    CHECK(p2_seg_commit(&seg, &err) == P2_OK);
    /* the commit logs the bytes changed once too (merged ranges, 16 bytes of header each,
     * the commit record) */
    printf("logged %llu bytes\n", (unsigned long long)(seg.log_end - before));
    CHECK(seg.log_end - before <= touched + 200);
    CHECK(p2_seg_close_unclean(&seg, &err) == P2_OK);            /* the log replays it */
    CHECK(open_it(argv[1]) == P2_OK);
    CHECK(memcmp(seg.base + blk, want, (size_t)size) == 0);
    CHECK(p2_seg_close(&seg, &err) == P2_OK);
    free(orig);
    free(want);
    printf("ok\n");
    return 0;
}
"""


@pytest.fixture(scope="module")
def undo_exe(cc, tmp_path_factory):
    d = tmp_path_factory.mktemp("walundo")
    (d / "undo.c").write_text(PROGRAM)
    exe = d / "undo"
    cmd = [*shlex.split(cc), *HARNESS_CFLAGS, *SANITIZE_CFLAGS, DEBUG_FLAG, "-I", RUNTIME_DIR,
           str(d / "undo.c"), runtime_obj(cc, [*HARNESS_CFLAGS, *SANITIZE_CFLAGS, DEBUG_FLAG]), "-o", str(exe)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return str(exe)


def test_a_byte_written_many_times_is_kept_once(undo_exe, tmp_path):
    proc = subprocess.run([undo_exe, str(tmp_path / "u.db")], capture_output=True, text=True,
                          env=sanitizer_env())
    assert proc.returncode == 0 and proc.stdout.endswith("ok\n"), proc.stdout + proc.stderr


def test_the_same_indexed_field_set_10000_times_aborts_and_commits(harness_builder, tmp_path):
    """`v` is an AVL key: each set re-links the element in the tree (the same few nodes'
    links, over and over), then the abort restores the committed tree and values."""
    exe = harness_builder(SPEC, "wl").exe
    sets = [f"set items id {k} v {(i * 37) % 101 - 50}" for i in range(10000)
            for k in (i % 20,)]
    proc, out = run(exe, load(20) + sets + ["abort", "all items"] + sets[:5001]
                    + ["commit", "close"], tmp_path)
    start = next(i for i, line in enumerate(out) if line.startswith("rec "))
    got, _ = rows(out, start)
    assert got == as_rows({k: (k, name(k)) for k in range(20)})
    proc, out = run(exe, ["open", "all items", "close"], tmp_path)
    got, _ = rows(out, 1)
    want = {k: (k, name(k)) for k in range(20)}
    for i in range(5001):
        want[i % 20] = ((i * 37) % 101 - 50, name(i % 20))
    assert got == as_rows(want)
