"""The btree layer driven directly (tests/c/btree_driver.c): thousands of random inserts,
deletes, key updates and cursor deletes on nodes of a few entries each, so that leaves and
inner nodes split, merge and refill all the time; after every operation the integrity
check runs and the tree is walked forwards and backwards (range_first / range_next,
range_last / range_prev: the reverse walk the contract offers for descending cursors)
from random bounds against the driver's own model. One build per memory, under ASan and
UBSan; the persistent one closes and reopens in a fresh process on the same file. The
differential matrix (test_differential.py) covers btree through the public API too."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import DEBUG_FLAG, compile_to_asm, has_prefetch, runtime_obj
from p2gen.build import load
from p2gen.harness import HARNESS_CFLAGS, SANITIZE_CFLAGS
from p2gen.render import Renderer

ROOT = Path(__file__).resolve().parents[2]
DRIVER = ROOT / "tests" / "c" / "btree_driver.c"
RUNTIME = ROOT / "runtime"

SPEC = """record item {{ id: u32; grp: i32; score: i64; name: char[6]; ratio: f64; }}
container c of item
    = top2ds_qualify[hash(key = id, buckets = 4)[btree(key = score, node = {node})[array(capacity = 4)[{mem}]]]];
cursor r on c where score >= $lo and score < $hi;
"""
# the driver calls these static functions itself: keep them in the rendered source
KEEP = ("tb_c__btree_range_first", "tb_c__btree_range_next", "tb_c__btree_range_last",
        "tb_c__btree_range_prev", "tb_c__btree_lf", "tb_c__btree_in",
        "tb_c__persistent_mref_get")

# (memory, node size, how the driver reads a stored link as a memory reference)
MEMS = {
    "transient": ("transient", 112, "(x)"),
    # 32-bit links: more entries per node of the same size
    "offset32": ('persistent(file = "tb.db", links = offset32)', 112, "tb_c__persistent_mref_get(x)"),
}


class _Keeping(Renderer):
    def tool_roots(self) -> set:
        return super().tool_roots() | set(KEEP)


def build_driver(tmp: Path, cc: str, mem: str, node: int, link: str) -> Path:
    spec = tmp / "tb.p2"
    spec.write_text(SPEC.format(mem=mem, node=node))
    checked = load(str(spec), "tb")
    header, source = _Keeping(checked, spec.name).render()
    (tmp / "tb.h").write_text(header)
    (tmp / "tb.c").write_text(source)
    for f in ("p2_runtime.c", "p2_runtime.h"):
        shutil.copy(RUNTIME / f, tmp / f)
    shutil.copy(DRIVER, tmp / "driver.c")
    exe = tmp / "driver"
    cmd = [cc, *HARNESS_CFLAGS, *SANITIZE_CFLAGS, DEBUG_FLAG, f"-DLINK(x)={link}", "-I", str(tmp), str(tmp / "driver.c"),
           runtime_obj(cc, [*HARNESS_CFLAGS, *SANITIZE_CFLAGS, DEBUG_FLAG]), "-o", str(exe), "-lm"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-4000:]
    return exe


@pytest.mark.parametrize("mem", list(MEMS))
def test_btree_random_walks(tmp_path, cc, san_env, mem):
    text, node, link = MEMS[mem]
    exe = build_driver(tmp_path, cc, text, node, link)
    for seed in ("1", "2"):
        r = subprocess.run([str(exe), "2500", seed], cwd=tmp_path, env=san_env,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0 and r.stdout.startswith("ok"), (r.stdout + r.stderr)[-4000:]


PREFETCH_SPEC = """record item {{ id: u32; score: i64; pad: char[40]; }}
container c of item = top2ds_qualify[btree(key = score)[array[transient]]];
cursor walk on c where score >= $lo and score <= $hi order by score {order};
"""
@pytest.mark.parametrize("order", ["asc", "desc"])
def test_btree_walk_prefetch_survives_compilation(tmp_path, cc, order):
    """A walk step asks for the elements ahead of it (layers/btree.c.j2, walk prefetch):
    compiled as users compile (-O2), a cursor's step in either direction still holds the
    prefetch instruction. An optimiser can remove a prefetch the code shapes wrongly, and
    nothing else would notice: the walk gives the same rows at one memory latency each."""
    spec = tmp_path / "pf.p2"
    spec.write_text(PREFETCH_SPEC.format(order=order))
    source, asm = compile_to_asm(tmp_path, cc, spec)
    fn = "_range_prev" if order == "desc" else "_range_next"
    assert fn in source and "__builtin_prefetch" in source
    assert has_prefetch(asm), f"no prefetch instruction in the -O2 code of {fn} ({cc})"
