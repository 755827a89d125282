"""Workload capture, `p2gen build --profile` (issue 38 item 2): the counts in the profile the
generated API writes at close are what the program did. A C program of random operations
(compiled with -Werror under ASan/UBSan) and a Python script over the module built with
--profile, each against a Python model of the same operations: every operation's count
(updates split by whether a key field changed), cursor walks and rows, the largest and final
count, each key's min, max, order and distinct estimate. -D<PREFIX>_PROFILE=0 writes nothing;
$P2GEN_PROFILE moves the file; a profile of another spec or a damaged one is refused in one
line; a build without --profile has none of it."""
from __future__ import annotations

import importlib
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import QUICK_PY_CFLAGS, SAN_QUICK_FLAGS, runtime_obj
from p2gen.build import generate
from p2gen.harness import HARNESS_CFLAGS, SANITIZE_CFLAGS, sanitizer_env
from p2gen.profile import ProfileError, load_profile

SPEC = """record account { id: u32; owner: char[8]; branch: u16; balance: i64; }
record hist { aid: u32; delta: i64; }
container accounts of account
    = top2ds_qualify[hash(key = id, buckets = 16)[avl(key = (branch, id))[array(capacity = 8)[transient]]]];
container history of hist = top2ds_qualify[array(capacity = 8)[transient]];
find accounts by owner;
cursor rich on accounts where balance > $min;
"""


class Model:
    """The operations as data, the C (or Python) that does them, and what the profile of
    that run must say."""

    def __init__(self, seed: int, n_ops: int):
        rng = random.Random(seed)
        self.live = {}                       # index -> [id, owner, branch, balance]
        self.ops = []
        self.count = {"insert": 0, "get": 0, "at": 0, "update_key": 0, "update_other": 0,
                      "delete": 0, "upsert": 0, "insert_many": 0, "cursor_update": 0,
                      "cursor_delete": 0}
        self.finds = {"id": 0, "branch_id": 0, "owner": 0}
        self.walks = self.rows = 0
        self.inserted = {"id": [], "branch_id": [], "owner": []}
        self.count_max = 0
        self.hist = 0
        nxt = 0
        for _ in range(n_ops):
            kind = rng.choice(["ins"] * 5 + ["find", "findo", "setb", "setid", "upd", "del",
                                             "walk", "at", "get", "hist"])
            if kind != "ins" and not self.live:
                kind = "ins"
            if kind == "ins":
                rec = [rng.randrange(10_000) if rng.random() < .3 else nxt * 3,
                       f"o{rng.randrange(30)}", rng.randrange(4), rng.randrange(-500, 500)]
                self.ops.append(("ins", nxt, list(rec)))
                self.live[nxt] = rec
                self.count["insert"] += 1
                self.inserted["id"].append(rec[0])
                self.inserted["branch_id"].append((rec[2], rec[0]))
                self.inserted["owner"].append(rec[1])
                self.count_max = max(self.count_max, len(self.live))
                nxt += 1
                continue
            i = rng.choice(sorted(self.live))
            rec = self.live[i]
            if kind == "find":
                self.ops.append(("find", rng.choice([rec[0], rng.randrange(10_000)])))
                self.finds["id"] += 1
            elif kind == "findo":
                self.ops.append(("findo", f"o{rng.randrange(35)}"))
                self.finds["owner"] += 1
            elif kind == "setb":
                self.ops.append(("setb", i, rng.randrange(-500, 500)))
                rec[3] = self.ops[-1][2]
                self.count["update_other"] += 1
            elif kind == "setid":
                v = rng.choice([rec[0], rng.randrange(10_000)])
                self.ops.append(("setid", i, v))
                self.count["update_key" if v != rec[0] else "update_other"] += 1
                rec[0] = v
            elif kind == "upd":
                new = [rec[0], rec[1] if rng.random() < .5 else f"o{rng.randrange(30)}",
                       rec[2], rng.randrange(-500, 500)]
                self.ops.append(("upd", i, list(new)))
                self.count["update_key" if new[:3] != rec[:3] else "update_other"] += 1
                self.live[i] = new
            elif kind == "del":
                self.ops.append(("del", i))
                del self.live[i]
                self.count["delete"] += 1
            elif kind == "walk":
                m = rng.randrange(-500, 500)
                self.ops.append(("walk", m))
                self.walks += 1
                self.rows += sum(1 for r in self.live.values() if r[3] > m)
            elif kind == "at":
                self.ops.append(("at", i))
                self.count["at"] += 1
            elif kind == "get":
                self.ops.append(("get", i))
                self.count["get"] += 1
            else:
                self.ops.append(("hist", rec[0]))
                self.hist += 1
        self.n_refs = nxt

    def c_program(self) -> str:
        out = ['#include <stdio.h>', '#include "pf.h"',
               f"static pf_ref refs[{max(self.n_refs, 1)}];",
               "int main(void)", "{", "    pf_db *db; pf_ref r; pf_account a; pf_hist h;",
               "    pf_rich_cursor k; int rc = 0;",
               "    if (pf_open(&db, \".\") != P2_OK) return 1;"]
        chk = "if ((rc = {}) != P2_OK && rc != P2_NOTFOUND) goto fail;"
        for op in self.ops:
            if op[0] in ("ins", "upd"):
                i, (id_, owner, branch, bal) = op[1], op[2]
                out.append(f'    a = (pf_account){{ .id = {id_}, .owner = "{owner}", .branch = {branch}, '
                           f'.balance = {bal} }};')
                call = (f"pf_accounts_insert(db, &a, &refs[{i}])" if op[0] == "ins"
                        else f"pf_accounts_update(db, &refs[{i}], &a)")
                out.append("    " + chk.format(call))
            elif op[0] == "find":
                out.append("    " + chk.format(f"pf_accounts_find_id(db, {op[1]}, &r)"))
            elif op[0] == "findo":
                out.append("    " + chk.format(f'pf_accounts_find_owner(db, "{op[1]}", &r)'))
            elif op[0] == "setb":
                out.append("    " + chk.format(f"pf_accounts_set_balance(db, refs[{op[1]}], {op[2]})"))
            elif op[0] == "setid":
                out.append("    " + chk.format(f"pf_accounts_set_id(db, refs[{op[1]}], {op[2]})"))
            elif op[0] == "del":
                out.append("    " + chk.format(f"pf_accounts_delete(db, refs[{op[1]}])"))
            elif op[0] == "walk":
                out.append(f"    " + chk.format(f"pf_rich_open(db, &k, {op[1]})"))
                out.append("    while (pf_rich_next(&k) == P2_OK) ;")
            elif op[0] == "at":
                out.append(f"    if (!pf_accounts_at(db, refs[{op[1]}])) goto fail;")
            elif op[0] == "get":
                out.append("    " + chk.format(f"pf_accounts_get(db, refs[{op[1]}], &a)"))
            else:
                out.append(f"    h = (pf_hist){{ .aid = {op[1]}, .delta = 1 }};")
                out.append("    " + chk.format("pf_history_insert(db, &h, &r)"))
        out += ["    return pf_close(db) != P2_OK;",
                "fail:", '    printf("failed: %d %s\\n", rc, pf_errmsg(db));', "    return 1;", "}", ""]
        return "\n".join(out)

    def check(self, prof: dict) -> None:
        acc = prof["containers"]["accounts"]
        assert acc["ops"] == self.count
        assert acc["count_final"] == len(self.live)
        assert acc["count_max"] == self.count_max
        assert acc["cursors"]["rich"] == {"walks": self.walks, "rows": self.rows}
        for key, vals in self.inserted.items():
            got = acc["keys"][key]
            assert got["finds"] == self.finds[key], key
            assert got["inserts"] == len(vals), key
            in_order = all(a <= b for a, b in zip(vals, vals[1:]))
            if key == "id":
                assert (got["min"], got["max"]) == (min(vals), max(vals))
                assert got["out_of_order"] == sum(1 for a, b in zip(vals, vals[1:]) if b < a)
            if key != "owner":      # a char[8] key orders by its bytes, as Python's str here
                assert got["in_order"] == in_order, key
            true = len(set(vals))
            assert abs(got["distinct"] - true) <= max(2, 0.2 * true), (key, got["distinct"], true)
        h = prof["containers"]["history"]
        assert h["ops"]["insert"] == self.hist and h["count_final"] == self.hist
        assert h["keys"] == {}


def build_c(tmp_path: Path, cc: str, model: Model, extra=()) -> Path:
    spec = tmp_path / "pf.p2"
    spec.write_text(SPEC)
    generate(str(spec), str(tmp_path), "pf", profile=True)
    (tmp_path / "main.c").write_text(model.c_program())
    flags = [*HARNESS_CFLAGS, *SANITIZE_CFLAGS, *SAN_QUICK_FLAGS]
    exe = tmp_path / "main"
    r = subprocess.run([cc, *flags, *extra, "-I", str(tmp_path), str(tmp_path / "main.c"),
                        str(tmp_path / "pf.c"), runtime_obj(cc, flags), "-o", str(exe)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-4000:]
    return exe


def run(exe: Path, cwd: Path, **env) -> None:
    r = subprocess.run([str(exe)], cwd=cwd, capture_output=True, text=True, timeout=300,
                       env={**sanitizer_env(), **env})
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-4000:])


@pytest.mark.parametrize("seed", [1, 2])
def test_c_profile_counts_what_the_program_did(tmp_path, cc, seed):
    model = Model(seed, 1500)
    exe = build_c(tmp_path, cc, model)
    run(exe, tmp_path)
    prof = load_profile(str(tmp_path / "pf.profile.json"), str(tmp_path / "pf.p2"))
    assert prof["spec"] == "pf.p2" and prof["prefix"] == "pf"
    model.check(prof)


def test_profile_path_from_the_environment_and_compiled_out(tmp_path, cc):
    model = Model(3, 200)
    exe = build_c(tmp_path, cc, model)
    run(exe, tmp_path, P2GEN_PROFILE=str(tmp_path / "elsewhere.json"))
    assert not (tmp_path / "pf.profile.json").exists()
    model.check(load_profile(str(tmp_path / "elsewhere.json"), str(tmp_path / "pf.p2")))
    off = tmp_path / "off"
    off.mkdir()
    exe = build_c(off, cc, model, extra=["-DPF_PROFILE=0"])
    run(exe, off)
    assert not (off / "pf.profile.json").exists()
    assert not [s for s in subprocess.run(["nm", str(exe)], capture_output=True, text=True)
                .stdout.split() if "__prof" in s]


def test_sessions_accumulate_and_a_foreign_one_is_refused(tmp_path, cc):
    """Each close writes a new file beside the earlier sessions' and load_profile merges them:
    two runs of the program count everything twice; a profile of another spec beside them is
    refused by name; P2GEN_PROFILE_RESET=1 starts afresh."""
    model = Model(5, 400)
    exe = build_c(tmp_path, cc, model)
    run(exe, tmp_path)
    once = load_profile(str(tmp_path / "pf.profile.json"), str(tmp_path / "pf.p2"))
    model.check(once)
    run(exe, tmp_path)
    assert (tmp_path / "pf.profile.1.json").exists()
    twice = load_profile(str(tmp_path / "pf.profile.json"), str(tmp_path / "pf.p2"))
    assert twice["sessions"] == 2 and once["sessions"] == 1
    a1, a2 = once["containers"]["accounts"], twice["containers"]["accounts"]
    assert a2["ops"] == {op: 2 * n for op, n in a1["ops"].items()}
    assert a2["cursors"]["rich"] == {k: 2 * v for k, v in a1["cursors"]["rich"].items()}
    assert (a2["count_max"], a2["count_final"]) == (a1["count_max"], a1["count_final"])
    for name, k1 in a1["keys"].items():
        k2 = a2["keys"][name]
        assert (k2["finds"], k2["inserts"]) == (2 * k1["finds"], 2 * k1["inserts"])
        assert (k2["min"], k2["max"], k2["hll"]) == (k1["min"], k1["max"], k1["hll"])
        # the same keys twice: the registers as they were, Python's estimate the C's
        assert k2["distinct"] == k1["distinct"]
        assert k2["in_order"] == (k1["in_order"] and k1["out_of_order"] == 0)
    # a third file of another spec (another version of this one) beside them: refused
    foreign = json.loads((tmp_path / "pf.profile.1.json").read_text())
    foreign["spec_sha256"] = "0" * 64
    (tmp_path / "pf.profile.2.json").write_text(json.dumps(foreign))
    with pytest.raises(ProfileError, match=r"pf.profile.2.json' beside .*another spec.*"
                                           r"remove .*pf.profile\*.json"):
        load_profile(str(tmp_path / "pf.profile.json"), str(tmp_path / "pf.p2"))
    run(exe, tmp_path, P2GEN_PROFILE_RESET="1")
    assert sorted(p.name for p in tmp_path.glob("pf.profile*.json")) == ["pf.profile.json"]
    model.check(load_profile(str(tmp_path / "pf.profile.json"), str(tmp_path / "pf.p2")))


def test_without_profile_nothing_is_rendered(tmp_path):
    spec = tmp_path / "pf.p2"
    spec.write_text(SPEC)
    gen = generate(str(spec), str(tmp_path / "plain"), "pf")
    assert "PROFILE" not in Path(gen.source).read_text()
    gen = generate(str(spec), str(tmp_path / "prof"), "pf", profile=True)
    text = (tmp_path / "prof" / "pf.c").read_text()
    assert "#ifndef PF_PROFILE\n#define PF_PROFILE 1\n#endif" in text
    assert (tmp_path / "prof" / "pf.h").read_text() == (tmp_path / "plain" / "pf.h").read_text()


def test_foreign_or_damaged_profiles_are_refused(tmp_path):
    good = {"format": 1, "spec": "pf.p2", "spec_sha256": "0" * 64, "containers": {}}
    spec = tmp_path / "pf.p2"
    spec.write_text(SPEC)
    p = tmp_path / "p.json"
    p.write_text(json.dumps(good))
    with pytest.raises(ProfileError, match="written by another spec than .*pf.p2"):
        load_profile(str(p), str(spec))
    p.write_text(json.dumps(good)[:-7])
    with pytest.raises(ProfileError, match="damaged or truncated"):
        load_profile(str(p), str(spec))
    p.write_text("[1, 2]")
    with pytest.raises(ProfileError, match="not a p2gen profile"):
        load_profile(str(p), str(spec))
    with pytest.raises(ProfileError, match="cannot read profile"):
        load_profile(str(tmp_path / "none.json"), str(spec))


def test_python_profile_counts_what_the_script_did(tmp_path, monkeypatch):
    from p2gen.pybind import build_python
    model = Model(4, 600)
    spec = tmp_path / "pfpy.p2"
    spec.write_text(SPEC)
    gen = generate(str(spec), str(tmp_path / "out"), profile=True)
    build_python(gen, extra_cflags=QUICK_PY_CFLAGS)
    sys.path.insert(0, gen.out_dir)
    try:
        mod = importlib.import_module("pfpy")
    finally:
        sys.path.remove(gen.out_dir)
    monkeypatch.chdir(tmp_path)
    db = mod.open()
    refs = {}
    for op in model.ops:
        if op[0] == "ins":
            id_, owner, branch, bal = op[2]
            refs[op[1]] = db.accounts.insert(id=id_, owner=owner, branch=branch, balance=bal).ref
        elif op[0] == "upd":
            id_, owner, branch, bal = op[2]
            db.accounts.update(refs[op[1]], id=id_, owner=owner, branch=branch, balance=bal)
        elif op[0] == "find":
            db.accounts.find(id=op[1])
        elif op[0] == "findo":
            db.accounts.find(owner=op[1])
        elif op[0] == "setb":
            db.accounts.update(refs[op[1]], balance=op[2])
        elif op[0] == "setid":
            db.accounts.update(refs[op[1]], id=op[2])
        elif op[0] == "del":
            db.accounts.delete(refs[op[1]])
        elif op[0] == "walk":
            list(db.rich(min=op[1]))
        elif op[0] == "at":
            db.accounts.at(refs[op[1]])
        elif op[0] == "get":
            db.accounts.at(refs[op[1]])
        else:
            db.history.insert(aid=op[1], delta=1)
    db.close()
    prof = load_profile(str(tmp_path / "pfpy.profile.json"), str(spec))
    acc = prof["containers"]["accounts"]
    # Python's calls into C, as the binding makes them: every insert, find, delete, walk and
    # row is one C call each; an update of some fields is one C update (of the whole record)
    assert acc["ops"]["insert"] == model.count["insert"]
    assert acc["ops"]["delete"] == model.count["delete"]
    assert acc["cursors"]["rich"] == {"walks": model.walks, "rows": model.rows}
    assert acc["keys"]["id"]["finds"] == model.finds["id"]
    assert acc["keys"]["owner"]["finds"] == model.finds["owner"]
    assert acc["ops"]["update_key"] == model.count["update_key"]
    assert acc["ops"]["update_other"] == model.count["update_other"]
    assert acc["count_final"] == len(model.live) and acc["count_max"] == model.count_max
    assert prof["containers"]["history"]["ops"]["insert"] == model.hist


def test_cli_build_profile(tmp_path):
    from click.testing import CliRunner
    from p2gen.cli import main
    spec = tmp_path / "pf.p2"
    spec.write_text(SPEC)
    r = CliRunner().invoke(main, ["build", str(spec), "-o", str(tmp_path / "g"), "--profile",
                                  "--no-compile", "-q"])
    assert r.exit_code == 0, r.output
    assert "pf__prof_write(db)" in (tmp_path / "g" / "pf.c").read_text()
    r = CliRunner().invoke(main, ["build", "--help"])
    assert "--profile" in r.output and "P2GEN_PROFILE" in r.output
