"""Operation traces and their exact replay (`p2gen build --trace`, p2gen.trace and
p2gen.trace_replay; issue 38 item 2). A seeded random C program (inserts, inserts in bulk,
setters of key, plain, char and text fields, updates, deletes, finds by plain, char and
composite keys, cursor walks that update, delete and ask for references, commits and
aborts) runs against the spec built with --trace, under ASan/UBSan, and dumps its database;
the trace's reader counts what it did; the replay driver (also sanitized) replays the trace
on a fresh database of the spec built without --trace and dumps it: the same contents.
A damaged, truncated or foreign trace is refused in one line by the reader and by the
driver; without --trace the C is unchanged."""
from __future__ import annotations

import importlib
import os
import random
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import QUICK_PY_CFLAGS, SAN_QUICK_FLAGS, runtime_obj
from p2gen.build import generate
from p2gen.cli import main
from p2gen.harness import HARNESS_CFLAGS, SANITIZE_CFLAGS, sanitizer_env
from p2gen.trace import END, HEAD, LAYOUT, OP_NAMES, REST, WORD, ZEROS, TraceError, read_trace
from p2gen.trace_replay import build_driver, dump_source, measure_candidates, run_driver

SPEC = """record account { id: u32; owner: char[8]; branch: u16; balance: i64; note: text; }
record hist { aid: u32; delta: i64; acc: ref accounts; }
container accounts of account
    = top2ds_qualify[hash(key = id, buckets = 16)[avl(key = (branch, id))[array(capacity = 8)[journal[persistent]]]]]
    with persistent(file = "tr.db");
container history of hist = top2ds_qualify[array(capacity = 8)[journal[persistent]]]
    with persistent(file = "tr.db");
find accounts by owner;
cursor rich on accounts where balance > $min;
cursor byowner on accounts where owner == $o;
"""
FLAGS = [*HARNESS_CFLAGS, *SANITIZE_CFLAGS, *SAN_QUICK_FLAGS]


def program(seed: int, n_ops: int) -> tuple:
    """A random program's C, and how many calls of each (unit, op) it makes that the
    trace must hold (those that always reach the log: on a live reference, or none)."""
    rng = random.Random(seed)
    out = ['#include <stdio.h>', '#include <string.h>', '#include "tr.h"']
    body = ["int main(void)", "{", "    tr_db *db; tr_ref r, refs[64]; tr_account a, many[3];",
            "    tr_hist h; tr_rich_cursor k; tr_byowner_cursor b; int i, rc = 0;",
            "    const tr_account *p;",
            "    (void)many; (void)h; (void)k; (void)b; (void)p; (void)r; (void)a;",
            "    for (i = 0; i < 64; i++) refs[i] = TR_NOREF;",
            "    if (tr_open(&db, \".\") != P2_OK) return 1;"]
    expect = {}

    def count(unit, op, n=1):
        expect[(unit, op)] = expect.get((unit, op), 0) + n

    def rec(i):
        return (f"a = (tr_account){{ .id = {rng.randrange(200)}, .owner = \"o{rng.randrange(20)}\", "
                f".branch = {rng.randrange(4)}, .balance = {rng.randrange(-500, 500)} }};")

    for _ in range(n_ops):
        i = rng.randrange(64)
        kind = rng.choice(["ins"] * 6 + ["many", "setb", "setid", "seto", "note", "upd", "del",
                                         "get", "at", "find", "findo", "findc", "walk", "owners",
                                         "commit", "abort", "hist", "reserve"])
        if kind == "ins":
            body += ["    " + rec(i), f"    if (tr_accounts_insert(db, &a, &refs[{i}]) != P2_OK) refs[{i}] = TR_NOREF;"]
            count("accounts", "insert")
        elif kind == "many":
            for m in range(3):
                body.append("    " + rec(i).replace("a = ", f"many[{m}] = "))
            body.append("    tr_accounts_insert_many(db, many, 3, NULL);")
            count("accounts", "insert_many")
            count("accounts", "insert", 3)
        elif kind in ("setb", "setid", "seto", "note", "upd", "del", "get", "at"):
            call = {"setb": f"tr_accounts_set_balance(db, refs[{i}], {rng.randrange(-500, 500)})",
                    "setid": f"tr_accounts_set_id(db, refs[{i}], {rng.randrange(200)})",
                    "seto": f"tr_accounts_set_owner(db, refs[{i}], \"o{rng.randrange(20)}\")",
                    "note": f"tr_accounts_set_note(db, refs[{i}], \"n{i}xyz\", {rng.randrange(6)})",
                    "upd": f"tr_accounts_update(db, &refs[{i}], &a)",
                    "del": f"tr_accounts_delete(db, refs[{i}])",
                    "get": f"tr_accounts_get(db, refs[{i}], &a)",
                    "at": f"(void)tr_accounts_at(db, refs[{i}])"}[kind]
            if kind == "upd":
                body.append("    " + rec(i))
            body.append(f"    {call};")
            if kind == "del":
                body.append(f"    refs[{i}] = TR_NOREF;")
        elif kind == "find":
            body.append(f"    if (tr_accounts_find_id(db, {rng.randrange(200)}, &r) == P2_OK) refs[{i}] = r;")
            count("accounts", "find")
        elif kind == "findo":
            body.append(f"    if ((p = tr_accounts_lookup_owner(db, \"o{rng.randrange(25)}\", &r)) != NULL) refs[{i}] = r;")
            count("accounts", "find")
        elif kind == "findc":
            body.append(f"    if (tr_accounts_find_branch_id(db, {rng.randrange(4)}, {rng.randrange(200)}, &r) == P2_OK) refs[{i}] = r;")
            count("accounts", "find")
        elif kind == "walk":
            # a walk that changes what it walks: raises some, deletes some, keeps a reference
            body += [f"    tr_rich_open(db, &k, {rng.randrange(-500, 500)});",
                     "    for (i = 0; (p = tr_rich_next_rec(&k)) != NULL; i++) {",
                     "        a = *p;",
                     "        if (i % 3 == 0) { a.balance += 7; tr_rich_update(&k, &a); }",
                     "        else if (i % 5 == 1) tr_rich_delete(&k);",
                     f"        else if (i % 4 == 2) refs[{rng.randrange(64)}] = tr_rich_ref(&k);",
                     "    }", "    tr_rich_close(&k);"]
            count("rich", "cursor_open")
        elif kind == "owners":
            body += [f"    tr_byowner_open(db, &b, \"o{rng.randrange(20)}\");",
                     "    while (tr_byowner_next(&b) == P2_OK) ;", "    tr_byowner_close(&b);"]
            count("byowner", "cursor_open")
        elif kind == "commit":
            body.append("    if ((rc = tr_commit(db)) != P2_OK) goto fail;")
            count("(database)", "commit")
        elif kind == "abort":
            body.append("    tr_abort(db);")
            count("(database)", "abort")
        elif kind == "hist":
            body += [f"    h = (tr_hist){{ .aid = {i}, .delta = 1, .acc = refs[{rng.randrange(64)}] }};",
                     "    tr_history_insert(db, &h, &r);"]
            count("history", "insert")
        else:
            body.append(f"    tr_accounts_reserve(db, {rng.randrange(100)});")
            count("accounts", "reserve")
    body += ["    tr_commit(db);", '    { FILE *f = fopen("dump.txt", "w"); tr__replay_dump(db, f); fclose(f); }',
             "    return tr_close(db) != P2_OK;",
             "fail:", '    printf("failed: %d %s\\n", rc, tr_errmsg(db));', "    return 1;", "}", ""]
    count("(database)", "commit")
    return "\n".join(out) + "\n", "\n".join(body), expect


# the same API over other structures: references differ from the original's
OTHER = SPEC.replace(
    "hash(key = id, buckets = 16)[avl(key = (branch, id))[array(capacity = 8)",
    "avl(key = id)[hash(key = (branch, id))[malloc")


@pytest.fixture(scope="module")
def replay_exe(tmp_path_factory, cc):
    """One sanitized replay driver, built once, of two candidates: the spec as written (no
    --trace) and the same API over other structures (prefix cand)."""
    d = tmp_path_factory.mktemp("replay")
    (d / "tr.p2").write_text(SPEC)
    (d / "cand.p2").write_text(OTHER)
    assert OTHER != SPEC
    checked, exe = build_driver(str(d / "tr.p2"), str(d / "g"), cc=cc, cflags=FLAGS,
                                candidates=[(str(d / "tr.p2"), None), (str(d / "cand.p2"), "cand")])
    return checked, exe


def run_traced(tmp_path: Path, cc: str, seed: int, n_ops: int) -> tuple:
    spec = tmp_path / "tr.p2"
    spec.write_text(SPEC)
    gen = generate(str(spec), str(tmp_path), "tr", trace=True)
    head, body, expect = program(seed, n_ops)
    (tmp_path / "main.c").write_text(head + dump_source(gen.checked) + body)
    exe = tmp_path / "main"
    r = subprocess.run([cc, *FLAGS, "-I", str(tmp_path), str(tmp_path / "main.c"),
                        str(tmp_path / "tr.c"), runtime_obj(cc, FLAGS), "-o", str(exe)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-4000:]
    r = subprocess.run([str(exe)], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                       env=sanitizer_env())
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-4000:])
    return gen.checked, expect


@pytest.mark.parametrize("seed", [1, 2])
def test_replay_gives_the_same_database(tmp_path, cc, replay_exe, seed):
    checked, expect = run_traced(tmp_path, cc, seed, 700)
    trace = read_trace(str(tmp_path / "tr.trace"), checked)
    assert trace.counts_at_open == [0, 0]
    counts = trace.op_counts(checked)
    for (unit, op), n in expect.items():
        if (unit, op) == ("history", "insert"):    # one naming no account is refused first
            assert 0 < counts[unit][op] <= n
        else:
            assert counts[unit][op] >= n if op == "insert" else counts[unit][op] == n, (unit, op)
    assert counts["rich"]["cursor_update"] and counts["rich"]["cursor_delete"]
    assert counts["accounts"]["set_text"] and counts["accounts"]["set"]
    # an insert's record on file without its trailing zeros (the note's handle: none yet),
    # which both readers put back (the replayed databases below are the original's)
    data = (tmp_path / "tr.trace").read_bytes()
    at = next(o for o in trace.origins if OP_NAMES[data[o]] == "insert_done") + 2

    def varint():
        nonlocal at
        v = shift = 0
        while data[at] & 0x80:
            v |= (data[at] & 0x7F) << shift
            at, shift = at + 1, shift + 7
        at += 1
        return v | data[at - 1] << shift
    _word, kept, zeros = varint(), varint(), varint()
    assert zeros >= 8 and kept + zeros == 40, (kept, zeros)
    runs = run_driver(replay_exe[1], str(tmp_path / "tr.trace"), 1, str(tmp_path / "replayed"),
                      env=sanitizer_env())
    assert sorted(r["prefix"] for r in runs) == ["cand", "tr"]
    original = sorted((tmp_path / "dump.txt").read_text().splitlines())
    assert len(original) > 20 and any("\t3:n" in line for line in original)
    assert any("\t->" in line for line in original)       # histories pointing at accounts
    for prefix in ("tr", "cand"):        # the spec as written, and another equation
        replayed = sorted((tmp_path / f"replayed.{prefix}").read_text().splitlines())
        assert replayed == original, prefix
    ops = {(u, o): c for u, o, c, _ in runs[0]["ops"]}
    assert ops[("accounts", "insert")] == counts["accounts"]["insert"]
    assert ops[("(database)", "abort")] == counts["(database)"]["abort"]


def test_trace_path_from_the_environment_and_compiled_out(tmp_path, cc):
    spec = tmp_path / "tr.p2"
    spec.write_text(SPEC)
    gen = generate(str(spec), str(tmp_path), "tr", trace=True)
    head, body, _ = program(5, 40)
    (tmp_path / "main.c").write_text(head + dump_source(gen.checked) + body)
    for extra, env, where in (([], {"P2GEN_TRACE": str(tmp_path / "t.bin")}, "t.bin"),
                              (["-DTR_TRACE=0"], {}, None)):
        exe = tmp_path / "main"
        r = subprocess.run([cc, *HARNESS_CFLAGS, *extra, "-I", str(tmp_path), str(tmp_path / "main.c"),
                            str(tmp_path / "tr.c"), runtime_obj(cc, HARNESS_CFLAGS), "-o", str(exe)],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr[-3000:]
        r = subprocess.run([str(exe)], cwd=tmp_path, env={**os.environ, **env})
        assert r.returncode == 0
        assert not (tmp_path / "tr.trace").exists()
        if where:
            assert read_trace(str(tmp_path / where), gen.checked).events
    assert "__trace" not in subprocess.run(["nm", str(exe)], capture_output=True, text=True).stdout


def test_without_trace_nothing_is_rendered(tmp_path):
    spec = tmp_path / "tr.p2"
    spec.write_text(SPEC)
    plain = generate(str(spec), str(tmp_path / "plain"), "tr")
    traced = generate(str(spec), str(tmp_path / "traced"), "tr", trace=True)
    assert "TRACE" not in Path(plain.source).read_text()
    assert "#ifndef TR_TRACE\n#define TR_TRACE 1\n#endif" in Path(traced.source).read_text()
    assert Path(plain.header).read_text() == Path(traced.header).read_text()
    # and byte-identical to a build that never heard of traces (the profile's own switch)
    again = generate(str(spec), str(tmp_path / "again"), "tr", trace=False, profile=False)
    assert Path(again.source).read_text() == Path(plain.source).read_text()


def test_foreign_damaged_or_truncated_traces_are_refused(tmp_path, cc, replay_exe):
    checked, exe = replay_exe
    run_traced(tmp_path, cc, 3, 60)
    data = (tmp_path / "tr.trace").read_bytes()
    bad = tmp_path / "bad.trace"

    def drive():      # each run in a directory of its own (the driver makes tr.0 there)
        return subprocess.run([exe, str(bad), tempfile.mkdtemp(dir=tmp_path), "1"],
                              capture_output=True, text=True, env=sanitizer_env())

    def refused(blob: bytes, match: str, driver: str) -> None:
        bad.write_bytes(blob)
        with pytest.raises(TraceError, match=match):
            read_trace(str(bad), checked)
        r = drive()
        assert r.returncode == 1 and driver in r.stderr and "ERROR" not in r.stderr, r.stderr

    refused(data[:-3], "truncated", "truncated")
    # cut on an event's boundary (its events can be two bytes): no end mark
    tr = read_trace(str(tmp_path / "tr.trace"), checked)
    refused(data[:tr.origins[-1]], "truncated: no end mark", "truncated: no end mark")
    foreign = data[:16] + b"0" * 64 + data[80:]
    refused(foreign, "another API than", "another API")
    refused(b"hello", "not a p2gen trace", "not a p2gen trace")
    for fmt in (2, 3):      # format 3 wrote a record's trailing zeros: refused, not misread
        older = data[:8] + struct.pack("<I", fmt) + data[12:]
        refused(older, f"of format {fmt} \\(an older p2gen's\\), this p2gen reads format 4",
                "another format")
    # the last event with a rest claiming 8 bytes more than its operation takes (its
    # length, one varint byte, just before the rest)
    # (not a find read from a find_found with its result: the two share the file's bytes;
    # nor a record's, whose zeros' count comes between)
    i = max(j for j, e in enumerate(tr.events) if LAYOUT[e[0]] & REST and
            (j + 1 == len(tr.origins) or tr.origins[j + 1] != tr.origins[j]) and
            not LAYOUT[OP_NAMES[data[tr.origins[j]]]] & ZEROS)
    rest = tr.events[i][4] - (8 if LAYOUT[tr.events[i][0]] & WORD else 0)
    end = tr.origins[i + 1] if i + 1 < len(tr.origins) else len(data) - len(END)
    assert rest < 120 and data[end - rest - 1] == rest
    ev = bytearray(data)
    ev[end - rest - 1] = rest + 8
    ev[end:end] = b"\0" * 8
    bad.write_bytes(bytes(ev))
    read_trace(str(bad), checked)          # its lengths add up: the reader cannot tell
    r = drive()
    assert r.returncode == 1 and "its operation takes" in r.stderr, r.stderr
    # that length as a varint of ten bytes whose last holds more than bit 63: both readers
    # refuse it (a 64-bit word cannot hold it), neither wraps it to a small length
    long = bytes([0x80 | rest] + [0x80] * 8 + [0x02])
    refused(data[:end - rest - 1] + long + data[end - rest:], "longer than 64 bits",
            "longer than 64 bits")
    ev = bytearray(data)
    ev[tr.origins[0]] = 99
    refused(bytes(ev), "unknown operation 99", "is not one of this spec's")
    # the header's size of the first container's record (after the counts at the open) is
    # not what its records' events hold, their trailing zeros put back: both readers refuse
    # it, and a size no record has
    sizes = HEAD.size + 8 * len(checked.containers)
    ev = bytearray(data)
    ev[sizes] ^= 0x40
    refused(bytes(ev), "the record of the event at byte .* zeros, not",
            "the record of the event at byte")
    ev[sizes + 2] = 0x7f
    refused(bytes(ev), "its header gives a record of", "its header gives a record of")


def test_python_trace_and_cli_replay(tmp_path, monkeypatch):
    from p2gen.pybind import build_python
    spec = tmp_path / "trpy.p2"
    spec.write_text(SPEC.replace('"tr.db"', '"trpy.db"'))
    gen = generate(str(spec), str(tmp_path / "out"), trace=True)
    build_python(gen, extra_cflags=QUICK_PY_CFLAGS)
    sys.path.insert(0, gen.out_dir)
    try:
        mod = importlib.import_module("trpy")
    finally:
        sys.path.remove(gen.out_dir)
    monkeypatch.chdir(tmp_path)
    db = mod.open()
    for i in range(50):
        db.accounts.insert(id=i, owner=f"o{i % 7}", branch=i % 3, balance=i * 10, note="")
    for i in range(0, 50, 3):
        db.accounts.update(db.accounts.find(id=i), balance=-i)
    walked = len(list(db.rich(min=100)))
    db.commit()
    db.close()
    checked = gen.checked
    counts = read_trace(str(tmp_path / "trpy.trace"), checked).op_counts(checked)
    assert counts["accounts"]["insert"] == 50 and counts["accounts"]["find"] == 17
    assert counts["rich"]["cursor_next"] >= walked
    r = CliRunner().invoke(main, ["replay", str(spec), "--trace", str(tmp_path / "trpy.trace"),
                                  "--reps", "1", "-o", str(tmp_path / "rb")])
    assert r.exit_code == 0, r.output
    assert "accounts" in r.output and "insert" in r.output and "ns/op" in r.output
    # the trace's identity is the API: another equation of it (what tune writes back)
    # replays it; a spec of another API (a record's field more) refuses it
    other = tmp_path / "other.p2"
    other.write_text(OTHER.replace('"tr.db"', '"trpy.db"'))
    r = CliRunner().invoke(main, ["replay", str(other), "--trace", str(tmp_path / "trpy.trace"),
                                  "--reps", "1", "-o", str(tmp_path / "ro")])
    assert r.exit_code == 0 and "accounts" in r.output, r.output
    other.write_text(SPEC.replace("balance: i64;", "balance: i64; flag: u8;"))
    r = CliRunner().invoke(main, ["replay", str(other), "--trace", str(tmp_path / "trpy.trace")])
    assert r.exit_code == 1 and "another API" in r.output
    # two candidates in one driver, measured side by side (what the tuner does)
    cand = tmp_path / "cand.p2"
    cand.write_text(OTHER.replace('"tr.db"', '"trpy.db"'))
    res = measure_candidates(str(spec), str(tmp_path / "trpy.trace"),
                             [(str(spec), None), (str(cand), "cand")], reps=2)
    assert sorted(res) == ["cand", "trpy"]
    for summary in res.values():
        assert summary["ops"][("accounts", "insert")]["count"] == 50
        assert summary["ops"][("rich", "cursor_open")]["count"] == 1
        assert summary["total_ns"] > 0
