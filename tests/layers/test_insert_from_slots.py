"""Inserting a record that lies in the container's own slot block.

`<c>_at` returns a pointer into the slot block, and a user may pass it straight back to
`<c>_insert` (copying an element). When that insert grows the block, the block moves (the
heap's realloc, a file's remap): array storage must copy the record before it grows (its
straight path, which does not grow, copies it once, from where it is, into the new slot).
Checked through the generated C API, under AddressSanitizer, over the heap and a
file, along the append path (growing), and the free list's (a slot reused after a
delete), against the records a plain model expects.
"""
from __future__ import annotations

import shlex
import subprocess

import pytest

from conftest import DEBUG_FLAG, runtime_obj

from p2gen.build import generate
from p2gen.harness import HARNESS_CFLAGS, SANITIZE_CFLAGS

SPEC = """
record item {{ id: u32; tag: char[40]; weight: i64; }}
container items of item = top2ds_qualify[array{cap}[{mem}]]{with_};
"""

DRIVER = r"""
#include <stdio.h>
#include <string.h>
#include HEADER
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define P(name) CAT(PFX, _##name)

int main(int argc, char **argv)
{
    P(db) *db = NULL;
    P(ref) refs[64];
    int n = 0, rc, i;
    if ((rc = P(open)(&db, argc > 1 ? argv[1] : NULL)) != P2_OK) {
        fprintf(stderr, "open: %s\n", P(errmsg)(db));
        return 1;
    }
    for (i = 0; i < 3; i++) {   /* three elements: the block (capacity 4) is not yet full */
        P(item) it;
        memset(&it, 0, sizeof it);
        it.id = (uint32_t)(100 + i);
        snprintf(it.tag, sizeof it.tag, "item-%d", i);
        it.weight = 1000 * (i + 1);
        if (P(items_insert)(db, &it, &refs[n++]) != P2_OK) return 2;
    }
    /* copies of element 0 straight from the slot block: the first fills the block, each
       later one grows it (4 -> 8 -> 16 slots), with the source inside the old block */
    for (i = 0; i < 10; i++) {
        const P(item) *src = P(items_at)(db, refs[0]);
        if (!src || P(items_insert)(db, src, &refs[n++]) != P2_OK) {
            fprintf(stderr, "insert copy %d: %s\n", i, P(errmsg)(db));
            return 3;
        }
    }
    /* the free list's path: a deleted slot reused by a copy of element 2 */
    if (P(items_delete)(db, refs[1]) != P2_OK) return 4;
    {
        const P(item) *src = P(items_at)(db, refs[2]);
        if (!src || P(items_insert)(db, src, &refs[1]) != P2_OK) return 5;
    }
    for (i = 0; i < n; i++) {
        const P(item) *e = P(items_at)(db, refs[i]);
        if (!e) return 6;
        printf("%u %s %lld\n", e->id, e->tag, (long long)e->weight);
    }
    return P(close)(db) == P2_OK ? 0 : 7;
}
"""


@pytest.mark.parametrize("mem", ["transient", "persistent"])
def test_insert_of_an_element_of_the_same_slot_block(cc, san_env, tmp_path, mem):
    prefix = f"ifs_{mem}"
    spec = tmp_path / f"{prefix}.p2"
    with_ = ' with persistent(file = "items.db")' if mem == "persistent" else ""
    spec.write_text(SPEC.format(cap="(capacity = 4)", mem=mem, with_=with_))
    gen = generate(str(spec), str(tmp_path), prefix)
    src = tmp_path / "driver.c"
    src.write_text(DRIVER)
    exe = tmp_path / "driver"
    subprocess.run([*shlex.split(cc), *HARNESS_CFLAGS, *SANITIZE_CFLAGS, DEBUG_FLAG, f"-DPFX={prefix}",
                    f'-DHEADER="{prefix}.h"', "-I", str(tmp_path), "-o", str(exe), str(src),
                    gen.source, runtime_obj(cc, [*HARNESS_CFLAGS, *SANITIZE_CFLAGS, DEBUG_FLAG])],
                   check=True, capture_output=True, text=True)
    db_dir = tmp_path / "db"
    db_dir.mkdir()
    proc = subprocess.run([str(exe), str(db_dir)], capture_output=True, text=True,
                          env=san_env, timeout=120)
    assert "Sanitizer" not in proc.stderr and "runtime error" not in proc.stderr, proc.stderr
    assert proc.returncode == 0, (proc.returncode, proc.stderr)
    # the model: elements 0..2, ten copies of element 0, and slot 1 now a copy of element 2
    want = [(100, "item-0", 1000), (102, "item-2", 3000), (102, "item-2", 3000)]
    want += [(100, "item-0", 1000)] * 10
    got = [tuple(line.split(" ")) for line in proc.stdout.splitlines()]
    assert got == [(str(a), b, str(c)) for a, b, c in want]
