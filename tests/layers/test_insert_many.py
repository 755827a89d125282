"""<container>_insert_many, the C API's bulk load: what it does is checked against the
model in the differential matrix (the harness's `insert_many` command: in order, stopping
at the first error with how many went in); here, that the fetch ahead it exists for
survives compilation, and a large load through it under ASan/UBSan."""
from __future__ import annotations

from conftest import compile_to_asm, has_prefetch
from p2gen.harness import run_harness

HASHED = """record item { id: u32; name: char[12]; v: i64; }
container items of item
    = top2ds_qualify[hash(key = name)[hash(key = v)[iarray(key = id, capacity = 64, max_key = 99999)[transient]]]];
"""
ORDERED = """record item { id: u32; v: i64; }
container items of item = top2ds_qualify[avl(key = id)[array[transient]]];
"""


def test_insert_many_fetches_each_hash_bucket_ahead(tmp_path, cc):
    """Both hash layers' buckets are fetched ahead of the insert that reads them, and the
    -O2 code of insert_many still holds the prefetch (an optimiser may drop a prefetch
    whose code is shaped wrongly; the load would give the same result, only slower)."""
    spec = tmp_path / "im.p2"
    spec.write_text(HASHED)
    source, asm = compile_to_asm(tmp_path, cc, spec, "im_items_insert_many")
    body = source[source.index("int im_items_insert_many("):]
    body = body[:body.index("\n}\n")]
    assert body.count("P2_PREFETCH(") == 2 and "P2_INSERT_AHEAD" in body
    assert has_prefetch(asm)


def test_insert_many_without_a_layer_that_fetches_has_no_prefetch(tmp_path, cc):
    spec = tmp_path / "io.p2"
    spec.write_text(ORDERED)
    source, asm = compile_to_asm(tmp_path, cc, spec, "io_items_insert_many")
    body = source[source.index("int io_items_insert_many("):]
    assert "P2_PREFETCH(" not in body[:body.index("\n}\n")]
    assert not has_prefetch(asm)


def test_a_large_load_past_the_fetch_distance_and_4_mib(harness_builder):
    """Batches of 40 rows (the harness's line holds 256 values), 250 of them into a table
    reserved far past 4 MiB, a duplicate id (iarray's key: unique) stopping the last batch
    halfway: every row before it is there, none after, under ASan/UBSan."""
    exe = harness_builder(HASHED, "iml").exe
    cmds = ["open", "reserve items 200000"]
    n = 0
    for b in range(250):
        rows = [f'{n + k} "n{n + k}" {-(n + k)}' for k in range(40)]
        n += 40
        cmds.append(f"insert_many items 40 {' '.join(rows)}")
    last = [f'{n + k} "n{n + k}" 0' for k in range(20)] + ['5 "dup" 0'] + \
           [f'{n + 20 + k} "m{k}" 0' for k in range(19)]
    cmds += [f"insert_many items 40 {' '.join(last)}", "count items", "find items id 5",
             f"find items id {n + 19}", f"find items id {n + 21}", "verify"]
    proc = run_harness(exe, cmds)
    assert "Sanitizer" not in proc.stderr and "runtime error" not in proc.stderr, proc.stderr
    out = proc.stdout.splitlines()
    assert out[:2] == ["ok", "ok"]
    assert out[2:502] == ["many 40", "ok"] * 250
    assert out[502] == "many 20" and out[503].startswith("err EDUP"), out[502:504]
    assert out[504] == f"count {n + 20}"
    assert out[505].startswith('rec 5 "n5" -5') and out[506].startswith(f"rec {n + 19} ")
    assert out[507:] == ["notfound", "verify ok"], out[505:]
