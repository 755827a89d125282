"""Relationships in traces (issue 38 item 2): OO7's spec built with --trace under ASan/UBSan
runs a seeded program that builds the assembly hierarchy and changes and walks every kind of
relationship (ilist 1:N, refarray 1:1 and M:N: add, remove, set, moves, deletes that unlink,
walks); the trace counts the roles' events; the replay driver (sanitized) replays it on the
spec as written and on OO7 with every ilist a refarray (and other container equations): each
dump, relationships included, equals the original's. An ordered role is refused by --trace."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SAN_QUICK_FLAGS, runtime_obj
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
FLAGS = [*HARNESS_CFLAGS, *SANITIZE_CFLAGS, *SAN_QUICK_FLAGS]

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


# A tiny 1:N relationship walked much more than changed: tune --trace measures the spec's
# ilist against refarray (the costs rank refarray's block ahead for long walks) and picks by
# the measurement.
TINY = """record comp { id: u32; }
record part { id: u32; x: i32; }
container comps of comp = top2ds_qualify[hash(key = id)[array[transient]]];
container parts of part = top2ds_qualify[hash(key = id)[array[transient]]];
relationship has one comps.parts to many parts.owner = ilist;
"""
TINY_MAIN = r"""#include "rel.h"
int main(void)
{
    rel_db *db; rel_ref c[8], r, y; rel_comp k = {0}; rel_part p = {0}; unsigned i, n = 0;
    rel_comps_parts_iter it;
    if (rel_open(&db, ".") != P2_OK) return 1;
    for (i = 0; i < 8; i++) { k.id = i; if (rel_comps_insert(db, &k, &c[i])) return 2; }
    for (i = 0; i < 2000; i++) {
        p.id = i; p.x = (int)i;
        if (rel_parts_insert(db, &p, &r) || rel_comps_parts_add(db, c[i % 8], r)) return 3;
    }
    for (i = 0; i < 400; i++) {
        if (rel_parts_find_id(db, (i * 7919u) % 2000, &r)) return 4;
        if (rel_comps_parts_open(db, &it, c[i % 8])) return 5;
        while (rel_comps_parts_next(&it, &y) == P2_OK) n++;
    }
    return rel_close(db) != P2_OK || n != 400 * 250;
}
"""


def test_tune_with_a_trace_picks_the_relationship_layer_by_measurement(tmp_path, cc):
    d = tmp_path
    (d / "rel.p2").write_text(TINY)
    r = subprocess.run([sys.executable, "-m", "p2gen", "build", "rel.p2", "-o", "out",
                        "--profile", "--trace", "-q"], cwd=d, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    (d / "main.c").write_text(TINY_MAIN)
    r = subprocess.run([cc, "-O1", "-Iout", "main.c", "out/librel.a", "-o", "main"], cwd=d,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert subprocess.run(["./main"], cwd=d, timeout=120).returncode == 0
    r = subprocess.run([sys.executable, "-m", "p2gen", "tune", "rel.p2", "--profile",
                        "rel.profile.json", "--trace", "rel.trace", "--container", "parts",
                        "--top", "1", "--reps", "2", "--seed", "38", "--dry-run"], cwd=d,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    ranking = [l for l in r.stdout.splitlines() if " ms, predicted " in l]
    # the spec's own (ilist) and the planner's first choice (refarray) measured side by side
    assert len(ranking) == 2
    own = next(l for l in ranking if "(the spec's own)" in l)
    other = next(l for l in ranking if l is not own)
    assert "relationship has = refarray" in other and "predicted 1" in other
    # the measured walks decide: the faster one is first, and picked unless within noise
    assert "comps.parts.rel_next" in r.stdout
    first = ranking[0]
    picked = next(l for l in r.stdout.splitlines() if l.startswith("parts: "))
    if first is other and "keeps its equation" not in picked:
        assert "with relationship has = refarray" in picked
        assert "=/*p2gen tune:*/ refarray/*:was  ilist*/;" in r.stdout
    else:
        assert "keeps its equation" in picked
    assert (d / "rel.p2").read_text() == TINY
