"""Relationships in traces (issue 38 item 2): OO7's spec built with --trace under ASan/UBSan
runs a seeded program that builds the assembly hierarchy and changes and walks every kind of
relationship (ilist 1:N, refarray 1:1 and M:N: add, remove, set, moves, deletes that unlink,
walks); the trace counts the roles' events; the replay driver (sanitized) replays it on the
spec as written and on OO7 with every ilist a refarray (and other container equations): each
dump, relationships included, equals the original's. An ordered role is refused by --trace."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conftest import DEBUG_FLAG, runtime_obj
from p2gen.build import generate
from p2gen.errors import SpecError
from p2gen.harness import HARNESS_CFLAGS, SANITIZE_CFLAGS, sanitizer_env
from p2gen.trace import check_traceable, read_trace
from p2gen.trace_replay import build_driver, dump_source, run_driver

ROOT = Path(__file__).resolve().parents[2]
OO7 = (ROOT / "type_equations" / "oo7" / "hash_ilist_persistent.p2").read_text()
# the other relationship kind (every 1:N ilist as a refarray) and other storages
OTHER = OO7.replace("= ilist;", "= refarray;").replace(
    "hash(key = id, buckets = 16384)[avl(key = build_date)[array[persistent]]]",
    "avl(key = build_date)[hash(key = id)[malloc[persistent]]]")
FLAGS = [*HARNESS_CFLAGS, *SANITIZE_CFLAGS, DEBUG_FLAG]

PROGRAM = r"""
static unsigned seed = SEED;
static unsigned rnd(unsigned n) { seed = seed * 1103515245u + 12345u; return (seed >> 8) % n; }
#define RND(n) rnd(n)
int main(void)
{
    oo7_db *db; oo7_ref mod, man, cplx[4], base[8], comp[16], doc[16], atom[64], conn[96], y;
    unsigned i, k, walked = 0;
    if (oo7_open(&db, ".") != P2_OK) return 1;
    { oo7_module m = {0}; m.id = 1; m.design_root = OO7_NOREF; if (oo7_modules_insert(db, &m, &mod)) return 2; }
    { oo7_manual m = {0}; m.id = 1; if (oo7_manuals_insert(db, &m, &man)) return 2; }
    oo7_modules_set_man(db, mod, man);
    for (i = 0; i < 4; i++) {
        oo7_complex_assembly c = {0}; c.id = (int)i + 1;
        if (oo7_complex_assemblies_insert(db, &c, &cplx[i])) return 2;
        oo7_modules_complex_assemblies_add(db, mod, cplx[i]);
        if (i) oo7_complex_assemblies_sub_complex_add(db, cplx[0], cplx[i]);
    }
    for (i = 0; i < 8; i++) {
        oo7_base_assembly b = {0}; b.id = (int)i + 1;
        if (oo7_base_assemblies_insert(db, &b, &base[i])) return 2;
        oo7_modules_base_assemblies_add(db, mod, base[i]);
        oo7_complex_assemblies_sub_base_add(db, cplx[i % 4], base[i]);
    }
    for (i = 0; i < 16; i++) {
        oo7_composite_part c = {0}; oo7_document d = {0};
        c.id = (int)i + 1; c.root_part = OO7_NOREF; d.id = (int)i + 1;
        snprintf(d.title, sizeof d.title, "doc %u", i);
        if (oo7_composite_parts_insert(db, &c, &comp[i]) || oo7_documents_insert(db, &d, &doc[i])) return 2;
        oo7_composite_parts_set_documentation(db, comp[i], doc[i]);
    }
    for (i = 0; i < 64; i++) {
        oo7_atomic_part a = {0}; a.id = (int)i + 1; a.build_date = (int)RND(100);
        if (oo7_atomic_parts_insert(db, &a, &atom[i])) return 2;
        oo7_composite_parts_parts_add(db, comp[i % 16], atom[i]);
    }
    for (i = 0; i < 96; i++) {
        oo7_connection c = {0}; c.length = (int)i;
        if (oo7_connections_insert(db, &c, &conn[i])) return 2;
        oo7_atomic_parts_to_add(db, atom[RND(64)], conn[i]);
        oo7_atomic_parts_from_add(db, atom[RND(64)], conn[i]);
    }
    for (i = 0; i < N_OPS; i++) {
        k = RND(64);
        switch (RND(11)) {
        case 0: oo7_base_assemblies_components_priv_add(db, base[RND(8)], comp[RND(16)]); break;
        case 1: oo7_base_assemblies_components_shar_add(db, base[RND(8)], comp[RND(16)]); break;
        case 2: oo7_base_assemblies_components_priv_remove(db, base[RND(8)], comp[RND(16)]); break;
        case 3: {
            oo7_composite_parts_parts_iter it;
            if (oo7_composite_parts_parts_open(db, &it, comp[RND(16)]) == P2_OK)
                while (oo7_composite_parts_parts_next(&it, &y) == P2_OK) walked++;
            break;
        }
        case 4: {
            oo7_atomic_parts_to_iter it;
            if (atom[k] != OO7_NOREF && oo7_atomic_parts_to_open(db, &it, atom[k]) == P2_OK)
                while (oo7_atomic_parts_to_next_rec(&it, &y) != NULL) walked++;
            break;
        }
        case 5: if (atom[k] != OO7_NOREF) oo7_atomic_parts_set_part_of(db, atom[k], comp[RND(16)]); break;
        case 6:
            if (atom[k] != OO7_NOREF && oo7_atomic_parts_delete(db, atom[k]) == P2_OK) atom[k] = OO7_NOREF;
            break;
        case 7: oo7_composite_parts_set_documentation(db, comp[RND(16)], doc[RND(16)]); break;
        case 8: {
            oo7_composite_parts_used_in_priv_iter it;
            if (oo7_composite_parts_used_in_priv_open(db, &it, comp[RND(16)]) == P2_OK)
                while (oo7_composite_parts_used_in_priv_next(&it, &y) == P2_OK) walked++;
            break;
        }
        case 9: if (atom[k] != OO7_NOREF) oo7_connections_set_from(db, conn[RND(96)], atom[k]); break;
        default:
            if (atom[k] != OO7_NOREF) oo7_composite_parts_parts_remove(db, comp[RND(16)], atom[k]);
            break;
        }
    }
    printf("walked %u\n", walked);
    { FILE *f = fopen("dump.txt", "w"); oo7__replay_dump(db, f); fclose(f); }
    return oo7_close(db) != P2_OK;
}
"""


@pytest.fixture(scope="module")
def replay_oo7(tmp_path_factory, cc):
    """One sanitized replay driver of OO7's traces, built once: the spec as written and
    OTHER (prefix cand)."""
    d = tmp_path_factory.mktemp("replay-oo7")
    (d / "oo7.p2").write_text(OO7)
    (d / "cand.p2").write_text(OTHER)
    return build_driver(str(d / "oo7.p2"), str(d / "g"), cc=cc, cflags=FLAGS,
                        candidates=[(str(d / "oo7.p2"), None), (str(d / "cand.p2"), "cand")])


def test_oo7_relationships_replay_exactly_on_both_kinds(tmp_path, cc, replay_oo7):
    checked, exe = replay_oo7
    (tmp_path / "oo7.p2").write_text(OO7)
    gen = generate(str(tmp_path / "oo7.p2"), str(tmp_path), "oo7", trace=True)
    main = PROGRAM.replace("SEED", "38u").replace("N_OPS", "600")
    (tmp_path / "main.c").write_text('#include <stdio.h>\n#include "oo7.h"\n'
                                     + dump_source(gen.checked) + main)
    r = subprocess.run([cc, *FLAGS, "-I", str(tmp_path), str(tmp_path / "main.c"),
                        str(tmp_path / "oo7.c"), runtime_obj(cc, FLAGS), "-o",
                        str(tmp_path / "main")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-4000:]
    r = subprocess.run([str(tmp_path / "main")], cwd=tmp_path, capture_output=True, text=True,
                       timeout=300, env=sanitizer_env())
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-4000:])
    assert int(r.stdout.split()[1]) > 50           # the walks saw members
    counts = read_trace(str(tmp_path / "oo7.trace"), checked).op_counts(checked)
    assert counts["composite_parts.parts"]["rel_add"] >= 64
    assert counts["atomic_parts.part_of"]["rel_set"] > 10
    assert counts["base_assemblies.components_priv"]["rel_remove"] > 10
    assert counts["composite_parts.documentation"]["rel_set"] > 16
    assert counts["atomic_parts.to"]["rel_next"] > 10
    original = sorted((tmp_path / "dump.txt").read_text().splitlines())
    roles = {line.split("\t")[0] for line in original if "." in line.split("\t")[0]}
    assert {"composite_parts.parts", "atomic_parts.to", "base_assemblies.components_priv",
            "composite_parts.used_in_priv"} <= roles
    runs = run_driver(exe, str(tmp_path / "oo7.trace"), 1, str(tmp_path / "replayed"),
                      env=sanitizer_env())
    assert sorted(r["prefix"] for r in runs) == ["cand", "oo7"]
    for prefix in ("oo7", "cand"):
        replayed = sorted((tmp_path / f"replayed.{prefix}").read_text().splitlines())
        assert replayed == original, prefix
    ops = {(u, o): c for u, o, c, _ in runs[0]["ops"]}
    assert ops[("composite_parts.parts", "rel_add")] == counts["composite_parts.parts"]["rel_add"]


def test_an_ordered_role_is_refused_by_trace():
    from p2gen.check import check
    from p2gen.parser import parse
    spec = """record o { id: u32; }
record m { id: u32; t: i32; }
container os of o = top2ds[array[transient]];
container ms of m = top2ds[array[transient]];
relationship r one os.ms to many ms.o order by t = ilist;
"""
    with pytest.raises(SpecError, match="order by"):
        check_traceable(check(parse(spec, "o.p2")))
