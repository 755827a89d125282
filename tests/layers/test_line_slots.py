"""`iarray(slots = line)` and `array(slots = line)`: each slot padded to whole 64-byte cache
lines, the storage's own word (iarray's valid flag, array's free-list word) and the record
first in it, the other layers' links after the record.

With packed slots (the default) some slots straddle lines, and `_at` reads the storage's
word and the record's fields on two lines:
- an iarray account of TPC-B (112 bytes) starts 48 bytes into a line for one slot in four,
  and a keyed access then waits on two cache misses (bench/RESULTS.md, "On an AMD EPYC
  host");
- an array element under a hash index has the hash link first, then the free-list word,
  then the record (120 bytes here, at eight offsets into a line): what OO7's T6 pays on
  every part it reaches (bench/RESULTS.md, "OO7 T6 taken apart on the AMD host").
With `slots = line` every slot starts on a line of a line-aligned block.

Checked through the generated C API under ASan/UBSan, over the heap and a file, for both
storages (the array with a hash index over it, so that the record is not its only field):
- `_at` of consecutive slots lie a whole number of lines apart, each record at the same
  offset into its line (right after the storage's word), in a block large enough to be
  line-aligned (a file's large block; a heap block of 4 MiB and up);
- inserts, updates that change the key (an iarray element moves to another slot), deletes,
  growth and, for the file, a close and reopen and `_verify`, leave exactly what a model
  expects;
- a file made with packed slots is refused by a program with line slots (the layout is
  part of the spec's fingerprint), and left as it was;
- the fingerprint says "record first" only where the order differs from the usual one.
"""
from __future__ import annotations

import random
import shlex
import subprocess

import pytest

from conftest import DEBUG_FLAG, runtime_obj

from p2gen.build import generate
from p2gen.check import check, fingerprint_text
from p2gen.harness import HARNESS_CFLAGS, SANITIZE_CFLAGS
from p2gen.parser import parse

RECORD = "record item {{ id: u32; grp: u32; balance: i64; filler: char[84]; }}\n"
SPECS = {
    "iarray": RECORD + "container items of item = top2ds_qualify[iarray(key = id, capacity = {cap}, "
                       "max_key = 65535{slots})[{mem}]]{with_};\n",
    "array": RECORD + "container items of item = top2ds_qualify[hash(key = id, buckets = 64)"
                      "[array(capacity = {cap}{slots})[{mem}]]]{with_};\n",
}

DRIVER = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include HEADER
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define P(name) CAT(PFX, _##name)

/* stdin: "ins id grp bal" | "upd id newid bal" | "del id" | "geom slot" | "reopen" | "dump"
   | "verify"; stdout: one line per command. Elements are found by key (items_lookup_id:
   the container is keyed by id), so the driver serves either storage. */
int main(int argc, char **argv)
{
    P(db) *db = NULL;
    char op[16];
    const char *dir = argc > 1 ? argv[1] : NULL;
    if (P(open)(&db, dir) != P2_OK) {
        printf("err open %s\n", P(errmsg)(db));
        P(close)(db);              /* a refused open still frees its handle */
        return 1;
    }
    while (scanf("%15s", op) == 1) {
        if (!strcmp(op, "ins")) {
            unsigned id, grp; long long bal; P(item) it; P(ref) ref;
            if (scanf("%u %u %lld", &id, &grp, &bal) != 3) return 2;
            if (P(items_lookup_id)(db, id, NULL)) { printf("rc dup\n"); continue; }
            memset(&it, 0, sizeof it);
            it.id = id; it.grp = grp; it.balance = bal;
            snprintf(it.filler, sizeof it.filler, "f%u", id);
            printf("rc %d\n", P(items_insert)(db, &it, &ref));
        } else if (!strcmp(op, "upd")) {
            unsigned id, nid; long long bal; P(ref) ref;
            if (scanf("%u %u %lld", &id, &nid, &bal) != 3) return 2;
            const P(item) *cur = P(items_lookup_id)(db, id, &ref);
            if (!cur) { printf("rc missing\n"); continue; }
            if (nid != id && P(items_lookup_id)(db, nid, NULL)) { printf("rc dup\n"); continue; }
            P(item) it = *cur;
            it.id = nid; it.balance = bal;
            snprintf(it.filler, sizeof it.filler, "f%u", nid);
            printf("rc %d\n", P(items_update)(db, &ref, &it));
        } else if (!strcmp(op, "del")) {
            unsigned id; P(ref) ref;
            if (scanf("%u", &id) != 1) return 2;
            if (!P(items_lookup_id)(db, id, &ref)) { printf("rc missing\n"); continue; }
            printf("rc %d\n", P(items_delete)(db, ref));
        } else if (!strcmp(op, "geom")) {   /* the line offset of _at(slot), _at(slot + 1) - _at(slot) */
            unsigned slot;                   /* (an iarray's slot is its key) */
            if (scanf("%u", &slot) != 1) return 2;
            const P(item) *a = P(items_at)(db, (P(ref))slot), *b = P(items_at)(db, (P(ref))slot + 1);
            if (!a || !b) { printf("geom missing\n"); continue; }
            printf("geom %u %lld\n", (unsigned)((uintptr_t)a % 64u),
                   (long long)((const char *)b - (const char *)a));
        } else if (!strcmp(op, "reopen")) {
            if (P(close)(db) != P2_OK) return 3;
            db = NULL;
            if (P(open)(&db, dir) != P2_OK) {
                printf("err open %s\n", P(errmsg)(db));
                P(close)(db);
                return 1;
            }
            printf("reopened\n");
        } else if (!strcmp(op, "verify")) {
            char report[512];
            uint64_t problems = 0;
            int rc = P(verify)(db, report, sizeof report, &problems);
            printf("verify %d %llu\n", rc, (unsigned long long)problems);
        } else if (!strcmp(op, "dump")) {
            const P(item) *e;
            P(ref) ref;
            P(items_all_cursor) c;
            unsigned n = 0;
            if (P(items_all_open)(db, &c) != P2_OK) return 4;
            while (P(items_all_next)(&c) == P2_OK) {
                ref = P(items_all_ref)(&c);
                e = P(items_at)(db, ref);
                printf("rec %u %u %lld %s\n", e->id, e->grp, (long long)e->balance, e->filler);
                n++;
            }
            printf("end %u\n", n);
        } else {
            return 5;
        }
    }
    return P(close)(db) == P2_OK ? 0 : 6;
}
"""


def build(cc, tmp_path, storage, mem, slots, prefix, cap=4):
    """Generate SPECS[storage] and compile DRIVER with it."""
    spec = tmp_path / f"{prefix}.p2"
    with_ = ' with persistent(file = "items.db")' if mem == "persistent" else ""
    spec.write_text(SPECS[storage].format(cap=cap, slots=", slots = line" if slots == "line" else "",
                                         mem=mem, with_=with_))
    out = tmp_path / prefix
    out.mkdir()
    gen = generate(str(spec), str(out), prefix)
    src = tmp_path / f"{prefix}_driver.c"
    src.write_text(DRIVER)
    exe = out / "driver"
    proc = subprocess.run([*shlex.split(cc), *HARNESS_CFLAGS, *SANITIZE_CFLAGS, DEBUG_FLAG, f"-DPFX={prefix}",
                           f'-DHEADER="{prefix}.h"', "-I", str(out), "-o", str(exe), str(src),
                           gen.source, runtime_obj(cc, [*HARNESS_CFLAGS, *SANITIZE_CFLAGS, DEBUG_FLAG])],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return str(exe)


def database_dir(tmp_path, mem):
    """The directory the driver opens: a fresh one for a file, None for the heap."""
    if mem != "persistent":
        return None
    d = tmp_path / "db"
    d.mkdir()
    return d


def run(exe, db_dir, cmds):
    proc = subprocess.run([exe] + ([str(db_dir)] if db_dir else []), input="\n".join(cmds) + "\n",
                          capture_output=True, text=True, timeout=300,
                          env={"ASAN_OPTIONS": "detect_leaks=1", "UBSAN_OPTIONS": "halt_on_error=1"})
    assert "Sanitizer" not in proc.stderr and "runtime error" not in proc.stderr, proc.stderr[-3000:]
    assert proc.returncode == 0, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    return proc.stdout.splitlines()


def session(rng, model, n, keys):
    """Random inserts, key-moving updates and deletes, with the model's expected answers."""
    cmds, want = [], []
    for _ in range(n):
        r = rng.random()
        k = rng.randrange(keys)
        if r < 0.5:
            cmds.append(f"ins {k} {k % 7} {rng.randint(-9, 9)}")
            want.append("rc 0" if k not in model else "rc -dup")
            model.setdefault(k, (k % 7, int(cmds[-1].split()[3])))
        elif r < 0.75 and model:
            old = rng.choice(sorted(model))
            new, bal = rng.randrange(keys), rng.randint(-9, 9)
            cmds.append(f"upd {old} {new} {bal}")
            if new != old and new in model:
                want.append("rc -dup")
            else:
                grp, _ = model.pop(old)
                model[new] = (grp, bal)
                want.append("rc 0")
        else:
            cmds.append(f"del {k}")
            want.append("rc 0" if model.pop(k, None) is not None else "rc -notfound")
    return cmds, want


def check_answers(out, want):
    for got, exp in zip(out, want):
        if exp == "rc 0":
            assert got == "rc 0", (got, exp)
        else:
            assert got.startswith("rc ") and got != "rc 0", (got, exp)


def dump_matches(out, model):
    """The first dump in out (its rec lines up to its end line) holds exactly the model."""
    i = out.index(next(line for line in out if line.startswith("end ")))
    recs = sorted(tuple(line.split()[1:]) for line in out[:i] if line.startswith("rec "))
    assert recs == sorted((str(k), str(g), str(b), f"f{k}") for k, (g, b) in model.items())
    assert out[i] == f"end {len(model)}"


STORAGES = ["iarray", "array"]


@pytest.mark.parametrize("storage", STORAGES)
@pytest.mark.parametrize("mem", ["transient", "persistent"])
def test_line_slots_lie_on_lines_and_keep_what_the_model_expects(cc, tmp_path, storage, mem):
    exe = build(cc, tmp_path, storage, mem, "line", f"ls_{storage}_{mem}")
    db_dir = database_dir(tmp_path, mem)
    rng = random.Random(7)
    model: dict = {}
    cmds, want = session(rng, model, 600, 300)     # grows the block from 4 slots to 256-512
    out = run(exe, db_dir, cmds + ["dump"] + (["verify", "reopen", "dump", "verify"] if db_dir else []))
    check_answers(out, want)
    dump_matches(out[len(cmds):], model)
    if db_dir:
        assert out[-1] == "verify 0 0" and "reopened" in out
        dump_matches(out[out.index("reopened"):], model)

    # geometry: a block large enough to be line-aligned (file: over 2048 bytes; heap: 4 MiB
    # and up, 40,000 slots of 128 bytes), consecutive slots a line multiple apart, every
    # record at the same offset into its line (inserted in key order, an array's slot is
    # its key too)
    n = 40000 if mem == "transient" else 64
    cmds = [f"ins {k} 1 {k}" for k in range(n)] + ["geom 0", f"geom {n // 2}", f"geom {n - 2}"]
    if db_dir:
        (db_dir / "items.db").unlink()
    out = run(exe, db_dir, cmds)
    geoms = [line for line in out if line.startswith("geom ")]
    assert len(geoms) == 3 and len(set(geoms)) == 1, geoms
    offset, stride = map(int, geoms[0].split()[1:])
    assert stride == 128, geoms     # 112 (iarray) or 120 bytes (array, hash link) in two lines
    assert offset == 8, geoms       # the record right after the storage's 8-byte-aligned word


@pytest.mark.parametrize("storage, size, offsets", [("iarray", 112, 4), ("array", 120, 8)])
@pytest.mark.parametrize("mem", ["transient", "persistent"])
def test_packed_slots_are_the_elements_size_apart(cc, tmp_path, storage, size, offsets, mem):
    """The default: no padding, so slots start at several offsets into a line."""
    exe = build(cc, tmp_path, storage, mem, "packed", f"lp_{storage}_{mem}")
    db_dir = database_dir(tmp_path, mem)
    out = run(exe, db_dir, [f"ins {k} 1 {k}" for k in range(10)] + [f"geom {k}" for k in range(8)])
    geoms = [tuple(map(int, line.split()[1:])) for line in out if line.startswith("geom ")]
    assert {s for _, s in geoms} == {size}
    assert len({o for o, _ in geoms}) == offsets


@pytest.mark.parametrize("storage", STORAGES)
def test_a_packed_file_is_refused_by_a_line_program(cc, tmp_path, storage):
    packed = build(cc, tmp_path, storage, "persistent", "packed", f"rp_{storage}_packed")
    line = build(cc, tmp_path, storage, "persistent", "line", f"rp_{storage}_line")
    db_dir = tmp_path / "db"
    db_dir.mkdir()
    run(packed, db_dir, [f"ins {k} 2 {k}" for k in range(20)])
    before = (db_dir / "items.db").read_bytes()
    proc = subprocess.run([line, str(db_dir)], input="dump\n", capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 1 and proc.stdout.startswith("err open "), proc.stdout
    assert "items.db" in proc.stdout and "different spec or equation" in proc.stdout, proc.stdout
    assert (db_dir / "items.db").read_bytes() == before
    out = run(packed, db_dir, ["dump"])
    assert out[-1] == "end 20"


def _fingerprint_lines(text):
    """The lines the fingerprint of the spec's one file hashes."""
    checked = check(parse(text, "fp.p2"))
    return fingerprint_text(checked.files[0], checked.relationships).splitlines()


@pytest.mark.parametrize("storage, other, leads", [
    ("array(slots = line)", True, True),       # a hash link after the record
    ("array(slots = line)", False, False),     # the storage alone: the usual order
    ("iarray(key = id, slots = line)", True, True),
    ("iarray(key = id, slots = line)", False, False),   # TPC-B's IARRAY files keep theirs
    ("array", True, False),
])
def test_the_fingerprint_says_record_first_only_where_the_order_changes(storage, other, leads):
    eq = f"hash(key = grp)[{storage}[persistent]]" if other else f"{storage}[persistent]"
    text = ("record item { id: u32; grp: u32; }\n"
            f'container items of item = top2ds_qualify[{eq}] with persistent(file = "a.db");\n')
    parts = _fingerprint_lines(text)
    assert ("items: storage fields and record first" in parts) == leads, parts
