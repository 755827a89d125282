"""tune.same_api (issue 38 item 1): a candidate equation is refused when a program written
against the spec would see another API (the table of generated functions) or other
semantics (memory, file, journal, unique keys, purge, declared finds, the Python key), with
a message naming each difference; accepted when only the equation's speed can differ."""
from __future__ import annotations

import pytest

from p2gen.tune import ApiMismatch, load_view, same_api

HEAD = """record account { id: u32; owner: char[8]; branch: u16; balance: i64; }
container accounts of account = %s;
find accounts by id;
find accounts by (branch, id);
cursor rich on accounts where balance > $min;
"""
SPEC = HEAD % "top2ds_qualify[array[transient]]"


def write(tmp_path, name, text):
    p = tmp_path / f"{name}.p2"
    p.write_text(text)
    return p


def verdict(tmp_path, candidate_eq, base=SPEC, tail=""):
    a = write(tmp_path, "spec", base)
    b = write(tmp_path, "cand", (HEAD % candidate_eq) + tail)
    try:
        same_api(a, b)
    except ApiMismatch as e:
        return e.differences
    return []


@pytest.mark.parametrize("eq", [
    "top2ds_qualify[hash(key = id)[array[transient]]]",
    "top2ds_qualify[hash(key = id, buckets = 64)[dlist[array(capacity = 8)[transient]]]]",
    "top2ds_qualify[avl(key = (branch, id))[hash(key = id)[array[transient]]]]",
    "top2ds_qualify[btree(key = id)[array[transient]]]",
    "top2ds_qualify[malloc[transient]]",
])
def test_equations_that_keep_the_api_are_accepted(tmp_path, eq):
    assert verdict(tmp_path, eq) == []


@pytest.mark.parametrize("eq, words", [
    ("top2ds_qualify[avl(key = balance)[array[transient]]]",
     ["function spec_accounts_find_balance is new", "function spec_accounts_lookup_balance is new"]),
    ("top2ds_qualify[hash(key = id, unique = true)[array[transient]]]",
     ["unique keys none -> (id)", "function spec_accounts_upsert is new"]),
    ('top2ds_qualify[array[persistent(file = "a.db")]]',
     ["memory transient -> persistent", "file none -> a.db",
      "references survive a restart no -> yes"]),
    ('top2ds_qualify[array[journal[persistent(file = "a.db")]]]',
     ["memory transient -> journal[persistent]"]),
    ("top2ds_qualify[iarray(key = id)[transient]]", ["unique keys none -> (id)"]),
    ("delflag[top2ds_qualify[array[transient]]]",
     ["deletes wait for a purge no -> yes", "function spec_accounts_purge is new"]),
])
def test_candidates_that_change_api_or_semantics_are_refused(tmp_path, eq, words):
    diff = verdict(tmp_path, eq)
    for w in words:
        assert any(w in d for d in diff), (w, diff)


def test_memory_kind_journal_against_wal(tmp_path):
    base = HEAD % 'top2ds_qualify[array[journal[persistent(file = "a.db")]]]'
    diff = verdict(tmp_path, 'top2ds_qualify[array[wal[persistent(file = "a.db")]]]', base)
    assert "container accounts: memory journal[persistent] -> wal[persistent]" in diff, diff
    assert verdict(tmp_path, 'top2ds_qualify[hash(key = id)[array[journal[persistent(file = "a.db")]]]]',
                   base) == []


def test_a_declared_find_is_held(tmp_path):
    # the candidate drops a declaration: its find goes with it unless a layer is keyed on it
    a = write(tmp_path, "spec", SPEC)
    b = write(tmp_path, "cand", SPEC.replace("find accounts by (branch, id);\n", ""))
    with pytest.raises(ApiMismatch) as e:
        same_api(a, b)
    msg = str(e.value)
    assert msg.startswith("the candidate changes the spec's API or semantics:")
    assert "declared finds (id, (branch, id)) -> (id)" in msg
    assert "function spec_accounts_find_branch_id is gone" in msg


def test_python_key_without_declared_finds(tmp_path):
    # no declaration: the Python key is the equation's first key, so another one differs
    a = write(tmp_path, "spec", "record r { a: u32; b: u32; }\n"
              "container c of r = top2ds[hash(key = a)[avl(key = b)[array[transient]]]];\n")
    b = write(tmp_path, "cand", "record r { a: u32; b: u32; }\n"
              "container c of r = top2ds[avl(key = b)[hash(key = a)[array[transient]]]];\n")
    with pytest.raises(ApiMismatch, match="Python key a -> b"):
        same_api(a, b)


def test_view_reads_the_table_not_the_text(tmp_path):
    v = load_view(write(tmp_path, "spec", SPEC))
    assert v.functions["spec_accounts_find_branch_id"] == (
        "int spec_accounts_find_branch_id(spec_db *db, uint16_t branch, uint32_t id, spec_ref *out);")
    assert v.types["spec_account"].startswith("typedef struct spec_account {")
    assert v.types["spec_rich_cursor"] == ""
    assert v.semantics["accounts"]["declared finds"] == ["id", "(branch, id)"]
