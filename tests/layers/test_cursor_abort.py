"""What an abort does to open cursors and role iterators (issue 34): it closes every one of
the handle's, and each then answers P2_ECLOSED from _next (NULL from _next_rec and _get).

Before, nothing told a cursor: it went on from an element, a leaf or a member the abort had
taken back. The issue's case: 200 rows committed, thousands more inserted, a btree cursor
in `order by` walked over 1,500 rows (the newest, by their keys), abort, _next -- a read
outside the mapping in the btree's locate (the abort unmaps the pages the transaction
added). The random sequences of tests/layers/test_differential.py hold cursors of every layer
across aborts and commits (`hold_group`); these tests are the plain C programs of the
issue, over the generated API, and the role iterators and a transient container's cursor
(the harness drives neither)."""
from __future__ import annotations

import subprocess

import pytest

from conftest import build_san_program
from p2gen.build import generate

BTREE_SPEC = """record r { id: i32; d: i32; }
container c of r = top2ds_qualify[btree(key = d)[malloc[MEM[persistent(file = "c.db")]]]];
cursor q on c where d >= $p order by d;
"""

BTREE_MAIN = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "s.h"
#define CHECK(x) do { if (!(x)) { printf("FAIL line %d: %s (%s)\n", __LINE__, #x, s_errmsg(db)); return 1; } } while (0)
int main(int argc, char **argv)
{
    s_db *db = NULL;
    s_q_cursor q, q2;
    s_c_all_cursor a;
    s_r rec = { 0, 0 };
    int grow = argc > 2 ? atoi(argv[2]) : 30000;
    CHECK(s_open(&db, argv[1]) == P2_OK);
    for (int i = 0; i < 200; i++) { s_r r = { i, i }; CHECK(s_c_insert(db, &r, NULL) == P2_OK); }
    CHECK(s_commit(db) == P2_OK);
    /* growth: keys below the committed ones, so the walk meets the new rows first */
    for (int i = 200; i < 200 + grow; i++) { s_r r = { i, -i }; CHECK(s_c_insert(db, &r, NULL) == P2_OK); }
    CHECK(s_q_open(db, &q, -1000000) == P2_OK);
    for (int i = 0; i < 1500; i++) CHECK(s_q_next(&q) == P2_OK);
    CHECK(s_c_all_open(db, &a) == P2_OK);
    CHECK(s_c_all_next(&a) == P2_OK);
    CHECK(s_abort(db) == P2_OK);
    /* closed: every call says so, none reads an element */
    CHECK(s_q_next(&q) == P2_ECLOSED);
    CHECK(strstr(s_errmsg(db), "closed by an abort") != NULL);
    CHECK(s_q_next(&q) == P2_ECLOSED);
    CHECK(s_q_next_rec(&q) == NULL);
    CHECK(s_q_get(&q) == NULL);
    CHECK(s_q_ref(&q) == S_NOREF);
    CHECK(s_q_update(&q, &rec) == P2_ECLOSED);
    CHECK(s_q_delete(&q) == P2_ECLOSED);
    CHECK(s_c_all_next_rec(&a) == NULL);
    CHECK(s_c_all_get(&a) == NULL);
    CHECK(s_c_all_next(&a) == P2_ECLOSED);
    s_q_close(&q);
    s_c_all_close(&a);
    /* opened again, it walks what the abort left: the committed rows, in order */
    CHECK(s_q_open(db, &q, -1000000) == P2_OK);
    for (int i = 0; i < 200; i++) { const s_r *e = s_q_next_rec(&q); CHECK(e && e->d == i); }
    CHECK(s_q_next(&q) == P2_END);
    /* begin and commit leave an open cursor open: it goes on with its walk */
    CHECK(s_q_open(db, &q2, 0) == P2_OK);
    CHECK(s_q_next(&q2) == P2_OK);
    CHECK(s_begin(db) == P2_OK);
    { s_r r = { 1000, 1000 }; CHECK(s_c_insert(db, &r, NULL) == P2_OK); }
    CHECK(s_commit(db) == P2_OK);
    { const s_r *e = s_q_next_rec(&q2); CHECK(e && e->d == 1); }
    /* an abort of nothing closes it all the same (the rule has no exception to state) */
    CHECK(s_abort(db) == P2_OK);
    CHECK(s_q_next(&q2) == P2_ECLOSED);
    s_q_close(&q2);
    CHECK(s_close(db) == P2_OK);
    puts("ok");
    return 0;
}
"""

REL_SPEC = """record own { id: i32; }
record mem { id: i32; }
container owners of own = top2ds_qualify[hash(key = id)[array[MEM[persistent(file = "r.db")]]]];
container members of mem = top2ds_qualify[hash(key = id)[malloc[MEM[persistent(file = "r.db")]]]];
container scratch of mem = top2ds_qualify[array(capacity = 2)[transient]];
relationship parts one owners.parts to many members.part_of = ilist;
relationship outs one owners.outs to many members.out_of = refarray;
"""

REL_MAIN = r"""
#include <stdio.h>
#include <string.h>
#include "s.h"
#define CHECK(x) do { if (!(x)) { printf("FAIL line %d: %s (%s)\n", __LINE__, #x, s_errmsg(db)); return 1; } } while (0)
int main(int argc, char **argv)
{
    s_db *db = NULL;
    s_owners_parts_iter ip, ip2;
    s_owners_outs_iter io;
    s_scratch_all_cursor sc;
    s_ref o, m, y;
    (void)argc;
    CHECK(s_open(&db, argv[1]) == P2_OK);
    { s_own r = { 1 }; CHECK(s_owners_insert(db, &r, &o) == P2_OK); }
    for (int i = 0; i < 10; i++) {
        s_mem r = { i };
        CHECK(s_members_insert(db, &r, &m) == P2_OK);
        CHECK(s_owners_parts_add(db, o, m) == P2_OK);
        CHECK(s_owners_outs_add(db, o, m) == P2_OK);
    }
    CHECK(s_commit(db) == P2_OK);
    /* growth: members the abort takes back, after the committed ones in both lists: the
       walks below step past the committed members into them */
    for (int i = 10; i < 3000; i++) {
        s_mem r = { i };
        CHECK(s_members_insert(db, &r, &m) == P2_OK);
        CHECK(s_owners_parts_add(db, o, m) == P2_OK);
        CHECK(s_owners_outs_add(db, o, m) == P2_OK);
    }
    for (int i = 0; i < 3; i++) { s_mem r = { i }; CHECK(s_scratch_insert(db, &r, NULL) == P2_OK); }
    CHECK(s_owners_parts_open(db, &ip, o) == P2_OK);
    CHECK(s_owners_outs_open(db, &io, o) == P2_OK);
    for (int i = 0; i < 15; i++) {
        CHECK(s_owners_parts_next(&ip, &y) == P2_OK);
        CHECK(s_owners_outs_next_rec(&io, &y) != NULL);
    }
    CHECK(s_scratch_all_open(db, &sc) == P2_OK);
    CHECK(s_scratch_all_next(&sc) == P2_OK);
    CHECK(s_abort(db) == P2_OK);
    y = 12345;
    CHECK(s_owners_parts_next(&ip, &y) == P2_ECLOSED);
    CHECK(y == 12345);
    CHECK(strstr(s_errmsg(db), "closed by an abort") != NULL);
    CHECK(s_owners_parts_next_rec(&ip, &y) == NULL);
    CHECK(s_owners_outs_next(&io, &y) == P2_ECLOSED);
    CHECK(s_owners_outs_next_rec(&io, &y) == NULL);
    CHECK(y == 12345);
    /* a transient container's cursor too: the abort left its elements, but the rule is
       one for every cursor */
    CHECK(s_scratch_all_next(&sc) == P2_ECLOSED);
    CHECK(s_scratch_all_get(&sc) == NULL);
    s_scratch_all_close(&sc);
    CHECK(s_scratch_count(db) == 3);
    /* opened again: what the abort left */
    {
        int n = 0;
        CHECK(s_owners_parts_open(db, &ip, o) == P2_OK);
        while (s_owners_parts_next(&ip, &y) == P2_OK) n++;
        CHECK(n == 10);
        n = 0;
        CHECK(s_owners_outs_open(db, &io, o) == P2_OK);
        while (s_owners_outs_next_rec(&io, &y) != NULL) n++;
        CHECK(n == 10);
    }
    /* a commit leaves an open iterator open */
    CHECK(s_owners_parts_open(db, &ip2, o) == P2_OK);
    CHECK(s_owners_parts_next(&ip2, &y) == P2_OK);
    CHECK(s_commit(db) == P2_OK);
    CHECK(s_owners_parts_next(&ip2, &y) == P2_OK);
    CHECK(s_close(db) == P2_OK);
    puts("ok");
    return 0;
}
"""


def build_and_run(cc, san_env, tmp_path, spec: str, main: str, mem: str, args=()) -> str:
    out = tmp_path / "out"
    spec_file = tmp_path / "s.p2"
    spec_file.write_text(spec.replace("MEM", mem))
    gen = generate(str(spec_file), str(out), "s")
    (tmp_path / "main.c").write_text(main)
    exe = build_san_program(cc, tmp_path / "main", [tmp_path / "main.c", gen.source], out)
    db_dir = tmp_path / "db"
    db_dir.mkdir()
    proc = subprocess.run([str(exe), str(db_dir), *args], capture_output=True, text=True,
                          env=san_env, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", \
        f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr[-3000:]}"
    return proc.stdout


@pytest.mark.parametrize("mem", ["journal", "wal"])
def test_a_btree_cursor_after_an_abort_is_closed(mem, cc, san_env, tmp_path):
    """The issue's sequence (before: SIGSEGV in the btree's locate, on a leaf the abort
    unmapped); then every call of the closed cursor, reopening, and commit."""
    build_and_run(cc, san_env, tmp_path, BTREE_SPEC, BTREE_MAIN, mem)


@pytest.mark.parametrize("mem", ["journal", "wal"])
def test_role_iterators_and_transient_cursors_after_an_abort_are_closed(mem, cc, san_env,
                                                                         tmp_path):
    """ilist and refarray iterators opened before an abort that took back members (and
    grew the lists and the file), and a cursor over a transient container."""
    build_and_run(cc, san_env, tmp_path, REL_SPEC, REL_MAIN, mem)
