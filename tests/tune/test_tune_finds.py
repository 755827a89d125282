"""Declared finds (`find c by k;`, issue 38 item 1): `<prefix>_<c>_find_<k>` exists whatever
the equation. A layer keyed on k serves it, else the generated find scans (`p2gen explain`
says which and why). The same C program, compiled under ASan/UBSan against the same spec over
three equations (no index, a hash on one key, a composite avl and a file), answers every find
as a Python model of the rows says; the Python module's `find(k=...)` too; bad declarations
are refused at file:line:col; specs without the declaration generate what they did."""
from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import SAN_QUICK_FLAGS, python_module, runtime_obj
from p2gen.build import generate, load
from p2gen.errors import SpecError
from p2gen.harness import HARNESS_CFLAGS, SANITIZE_CFLAGS, sanitizer_env
from p2gen.parser import parse
from p2gen.check import check
from p2gen.plan import explain

SPEC = """record account {{ id: u32; owner: char[8]; branch: u16; balance: i64; }}
container accounts of account = {eq};
find accounts by id;
find accounts by owner;
find accounts by (branch, id);
"""
EQUATIONS = {
    "scan": "top2ds_qualify[array(capacity = 4)[transient]]",
    "hash": "top2ds_qualify[hash(key = id, buckets = 8)[array(capacity = 4)[transient]]]",
    "avl-file": ('top2ds_qualify[avl(key = (branch, id))[array(capacity = 4)[persistent(file = "f.db")]]]'),
}

N = 300
rng = random.Random(38)
ROWS = [(rng.randrange(200), f"o{rng.randrange(40)}", rng.randrange(5), rng.randrange(-99, 99))
        for _ in range(N)]
DELETED = set(rng.sample(range(N), 60))            # rows deleted before the second round
Q_ID = list(range(0, 210, 3))
Q_OWNER = [f"o{i}" for i in range(0, 45, 2)] + ["longer-than-8"]
Q_BI = [(b, i) for b in range(6) for i in range(0, 210, 17)]

DRIVER = r"""
#include <stdio.h>
#include <string.h>
#include "fs.h"

static const fs_account rows[] = {
%(rows)s
};
static const uint32_t q_id[] = { %(q_id)s };
static const char *q_owner[] = { %(q_owner)s };
static const uint16_t q_b[] = { %(q_b)s };
static const uint32_t q_i[] = { %(q_i)s };
static const int deleted[] = { %(deleted)s };

/* each find's answer: '-' for P2_NOTFOUND, else the row found */
static void show(fs_db *db, int rc, const fs_ref *ref)   /* *ref: read after the call */
{
    const fs_account *a;
    if (rc == P2_NOTFOUND) { printf("-\n"); return; }
    if (rc != P2_OK) { printf("error %%d\n", rc); return; }
    a = fs_accounts_at(db, *ref);
    printf("%%u %%.8s %%u %%lld\n", (unsigned)a->id, a->owner, (unsigned)a->branch, (long long)a->balance);
}

static void round_(fs_db *db)
{
    fs_ref ref;
    size_t i;
    for (i = 0; i < sizeof q_id / sizeof q_id[0]; i++)
        show(db, fs_accounts_find_id(db, q_id[i], &ref), &ref);
    for (i = 0; i < sizeof q_owner / sizeof q_owner[0]; i++)
        show(db, fs_accounts_find_owner(db, q_owner[i], &ref), &ref);
    for (i = 0; i < sizeof q_b / sizeof q_b[0]; i++)
        show(db, fs_accounts_find_branch_id(db, q_b[i], q_i[i], &ref), &ref);
    for (i = 0; i < sizeof q_id / sizeof q_id[0]; i++) {
        const fs_account *a = fs_accounts_lookup_id(db, q_id[i], &ref);
        printf("%%s\n", a && a->id == q_id[i] ? "L" : a ? "bad" : "-");
    }
}

int main(void)
{
    fs_db *db;
    fs_ref refs[sizeof rows / sizeof rows[0]];
    size_t i;
    if (fs_open(&db, ".") != P2_OK) { printf("open: %%s\n", fs_errmsg(db)); return 1; }
    for (i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (fs_accounts_insert(db, &rows[i], &refs[i]) != P2_OK) { printf("insert: %%s\n", fs_errmsg(db)); return 1; }
    round_(db);
    for (i = 0; i < sizeof deleted / sizeof deleted[0]; i++)
        if (fs_accounts_delete(db, refs[deleted[i]]) != P2_OK) { printf("delete: %%s\n", fs_errmsg(db)); return 1; }
    round_(db);
    return fs_close(db) != P2_OK;
}
"""


def driver_text() -> str:
    return DRIVER % {
        "rows": ",\n".join(f'    {{ .id = {i}, .owner = "{o}", .branch = {b}, .balance = {v} }}'
                           for i, o, b, v in ROWS),
        "q_id": ", ".join(map(str, Q_ID)),
        "q_owner": ", ".join(f'"{o}"' for o in Q_OWNER),
        "q_b": ", ".join(str(b) for b, _ in Q_BI),
        "q_i": ", ".join(str(i) for _, i in Q_BI),
        "deleted": ", ".join(map(str, sorted(DELETED))),
    }


def check_output(lines: list) -> None:
    """Every find answered as the rows say: a row with that key, or '-' when none has it."""
    it = iter(lines)
    for live in (set(range(N)), set(range(N)) - DELETED):
        rows = {ROWS[j] for j in live}

        def one(pred):
            got = next(it)
            want = [r for r in rows if pred(r)]
            if not want:
                assert got == "-", got
                return
            i, o, b, v = got.split(" ")
            row = (int(i), o, int(b), int(v))
            assert row in rows and pred(row), (got, want[:3])

        for q in Q_ID:
            one(lambda r: r[0] == q)
        for q in Q_OWNER:
            one(lambda r: r[1] == q)
        for b, i in Q_BI:
            one(lambda r: (r[2], r[0]) == (b, i))
        for q in Q_ID:
            assert next(it) == ("L" if any(r[0] == q for r in rows) else "-")
    assert next(it, None) is None


@pytest.mark.parametrize("variant", list(EQUATIONS))
def test_declared_finds_answer_as_the_model_says(tmp_path, cc, variant):
    spec = tmp_path / "fs.p2"
    spec.write_text(SPEC.format(eq=EQUATIONS[variant]))
    gen = generate(str(spec), str(tmp_path), "fs")
    (tmp_path / "main.c").write_text(driver_text())
    flags = [*HARNESS_CFLAGS, *SANITIZE_CFLAGS, *SAN_QUICK_FLAGS]
    exe = tmp_path / "main"
    r = subprocess.run([cc, *flags, "-I", str(tmp_path), str(tmp_path / "main.c"),
                        str(tmp_path / "fs.c"), runtime_obj(cc, flags), "-o", str(exe), "-lm"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-4000:]
    r = subprocess.run([str(exe)], cwd=tmp_path, capture_output=True, text=True,
                       env=sanitizer_env(), timeout=300)
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-4000:])
    check_output(r.stdout.splitlines())
    assert gen.checked.containers[0].name == "accounts"


def test_explain_says_which_find_scans_and_why(tmp_path):
    spec = tmp_path / "fs.p2"
    spec.write_text(SPEC.format(eq=EQUATIONS["hash"]))
    text = explain(load(str(spec)))
    assert "find accounts by id (it exists whatever the equation; a layer is keyed on it)" in text
    assert "find accounts by owner (it exists whatever the equation; no layer is keyed on it)" in text
    assert "find accounts by (branch, id) (it exists" in text
    by_find = text.split("  find ")
    assert "chosen: hash(" in next(b for b in by_find if b.startswith("fs_accounts_find_id "))
    assert "scan every slot" in next(b for b in by_find if b.startswith("fs_accounts_find_owner "))


def test_python_find_by_declared_keys(tmp_path_factory):
    mod = python_module(tmp_path_factory, "fspy", SPEC.format(eq=EQUATIONS["scan"]))
    with mod.open() as db:
        assert db.accounts.key == "id"       # the first declared find: no index has a key
        for i, o, b, v in ROWS[:50]:
            db.accounts.insert(id=i, owner=o, branch=b, balance=v)
        rows = ROWS[:50]
        for q in range(0, 210, 7):
            got = db.accounts.find(id=q)
            assert (got is None) == (not any(r[0] == q for r in rows))
            if got is not None:
                assert got.id == q
            assert (db.accounts.find(q) is None) == (got is None)
        got = db.accounts.find(owner=rows[3][1])
        assert got.owner == rows[3][1]
        got = db.accounts.find(branch=rows[5][2], id=rows[5][0])
        assert (got.branch, got.id) == (rows[5][2], rows[5][0])
        assert db.accounts.find(owner="nobody") is None


def error_of(text: str) -> SpecError:
    with pytest.raises(SpecError) as e:
        check(parse(text, "bad.p2"))
    return e.value


BASE = "record r { a: u32; b: char[4]; t: text; f: f64; }\ncontainer c of r = top2ds[array[transient]];\n"


@pytest.mark.parametrize("decl, words, col", [
    ("find d by a;", "container 'd' is not declared", 6),
    ("find c by z;", "'z' is not a field of record 'r'", 11),
    ("find c by t;", "field 't' is text", 11),
    ("find c by (a);", "a composite key needs two or more fields", 12),
    ("find c by (a, a);", "field 'a' appears twice", 15),
    ("find c by (a, f);", "field 'f' is f64; a composite key is made of integer and char[N]", 15),
    ("find c by a; find c by a;", "find on 'c' by a is already declared at line 3", 14),
    ("find c bye a;", "expected 'by' in find 'c', found 'bye'", 8),
])
def test_bad_find_declarations_are_refused_where_written(decl, words, col):
    err = error_of(BASE + decl + "\n")
    assert words in err.message, err.message
    assert (err.pos.line, err.pos.col) == (3, col), str(err)


def test_find_is_not_reserved():
    # a field, a container and a cursor may still be called find
    spec = check(parse("record find { find: u32; }\ncontainer by_ of find = top2ds_qualify[array[transient]];\n"
                       "container find2 of find = top2ds[array[transient]];\n"
                       "find find2 by find;\ncursor c on by_ where find == 1;\n"))
    assert [k.name for k in spec.containers[1].keys()] == ["find"]
    assert spec.containers[0].keys() == []


def test_a_declared_find_on_an_indexed_key_is_the_index_find(tmp_path):
    # the same key declared and indexed: one find, served by the index, set_ relinks only
    # for the index's key
    spec = check(parse("record r { a: u32; b: u32; }\n"
                       "container c of r = top2ds[hash(key = a)[array[transient]]];\n"
                       "find c by a; find c by b;\n"))
    info = spec.containers[0]
    assert [k.name for k in info.keys()] == ["a", "b"]
    assert info.key_columns() == ["a"]
