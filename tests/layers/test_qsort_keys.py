"""qsort's key column (the copy of every element's key its binary search reads) agrees
with the elements, for every key type qsort accepts.

One qsort container per key type (signed and unsigned ints of every width, f32 and f64
with NaN of both signs, -0.0 and infinities, char[5] up to full length), capacity 1 so
that every few inserts grow the slots and the column, in two persistent files (64-bit
and 32-bit links), driven through the command harness by seeded random inserts, deletes,
key updates (through <C>_set_<key> and <C>_update; an update between equal keys of other
bytes, 0.0 to -0.0 or one NaN to another, keeps the element in place and must still copy
the bytes), other-field updates and reserves, in several processes with reopens.

Checked: `verify ok` (the generated integrity check compares the column with the
elements byte for byte) at the end of every process, every keyed find against a Python
model (found exactly when an element with an equal key exists), the walk of every
container in key order with the model's elements. tests/runtime/test_verify.py corrupts the
column of a file and expects the check to report it.
"""
from __future__ import annotations

import math
import random
import re
import struct
from pathlib import Path

import pytest

from p2gen.harness import run_harness

KEYS = {   # key field: (type, values drawn, few enough that equal keys are common)
    "k8": ("i8", [-128, -3, -1, 0, 1, 5, 127]),
    "ku8": ("u8", [0, 1, 7, 200, 255]),
    "k16": ("i16", [-32768, -7, 0, 3, 32767]),
    "ku16": ("u16", [0, 9, 513, 65535]),
    "k32": ("i32", [-2147483648, -1, 0, 42, 2147483647]),
    "ku32": ("u32", [0, 1, 65536, 4294967295]),
    "k64": ("i64", [-(1 << 63), -5, 0, 5, (1 << 63) - 1]),
    "ku64": ("u64", [0, 2, 1 << 40, (1 << 64) - 1]),
    "kf": ("f32", ["nan", "-nan", "-0.0", "0.0", "-inf", "inf", "0.5", "-1.25"]),
    "kd": ("f64", ["nan", "-nan", "-0.0", "0.0", "-inf", "inf", "1e300", "-2.5"]),
    "ks": ("char[5]", ['""', '"a"', '"ab"', '"b"', '"abcde"', '"abcdd"', '"\\x7f"']),
}
KEYS = {k: (t, [str(v) for v in vals]) for k, (t, vals) in KEYS.items()}
FIELDS = ["id", *KEYS, "pay"]
SEGMENTS = 4
OPS = 160   # per container


def spec_text() -> str:
    fields = "; ".join(f"{k}: {t}" for k, (t, _) in KEYS.items())
    out = [f"record item {{ id: u32; {fields}; pay: u32; }}"]
    for k in KEYS:
        # a container over 32-bit links for a few key types, the rest over 64-bit
        links, file = (("offset32", "qk32.db") if k in ("k16", "kf", "ks")
                       else ("offset64", "qk.db"))
        out.append(f"container q_{k} of item = top2ds_qualify[qsort[persistent]]\n"
                   f"    with qsort(key = {k}, capacity = 1), "
                   f"persistent(file = \"{file}\", links = {links});")
    return "\n".join(out) + "\n"


# --- values as the harness reads and prints them, and the generated comparisons ---
def fnum(text: str, t: str) -> float:
    x = float(text.replace("-nan", "nan"))
    return struct.unpack("<f", struct.pack("<f", x))[0] if t == "f32" else x


def unescape(tok: str) -> bytes:
    assert tok[0] == '"' and tok[-1] == '"', tok
    body, out, i = tok[1:-1], bytearray(), 0
    while i < len(body):
        if body[i] == "\\" and body[i + 1] == "x":
            out.append(int(body[i + 2:i + 4], 16))
            i += 4
        elif body[i] == "\\":
            out.append(ord(body[i + 1]))
            i += 2
        else:
            out.append(ord(body[i]))
            i += 1
    return bytes(out).split(b"\0")[0]


def sort_key(field: str, text: str):
    """An orderable value that compares as the generated __cmp_<field> does: NaN after
    every number and equal to every NaN, -0.0 equal to 0.0, strings as unsigned bytes up
    to their end."""
    t = KEYS[field][0]
    if t.startswith("f"):
        x = fnum(text, t)
        return (1, 0.0) if math.isnan(x) else (0, x + 0.0)
    if t.startswith("char"):
        return unescape(text)
    return int(text)


def records(lines: list) -> list:
    return [ln.split()[1:] for ln in lines]


def test_key_column_agrees_with_elements(harness_builder, san_env, tmp_path):
    built = harness_builder(spec_text(), "qkeys")
    rng = random.Random(20261124)
    model = {k: {} for k in KEYS}     # container -> id -> record (list of value texts)
    next_id = 1

    def new_record():
        nonlocal next_id
        rec = [str(next_id)] + [rng.choice(v) for _, v in KEYS.values()] + [str(rng.randrange(1000))]
        next_id += 1
        return rec

    expected: list = []   # per process: its commands and a check of each answer
    for seg in range(SEGMENTS):
        cmds = [f"open {tmp_path}"]
        checks = [("open", lambda ans: ans == ["ok"])]
        for step in range(OPS):
            for k in KEYS:
                m = model[k]
                ki = FIELDS.index(k)
                r = rng.random()
                if r < 0.45 or not m:
                    rec = new_record()
                    m[rec[0]] = rec
                    cmds.append(f"insert q_{k} " + " ".join(rec))
                    checks.append(("insert", lambda ans: ans == ["ok"]))
                elif r < 0.6:
                    rid = rng.choice(list(m))
                    del m[rid]
                    cmds.append(f"delete q_{k} id {rid}")
                    checks.append(("delete", lambda ans, rid=rid: len(ans) == 2 and ans[1] == "ok"
                                   and ans[0].split()[1] == rid))
                elif r < 0.8:   # a key update: through set_<key> or a whole-record update
                    rid = rng.choice(list(m))
                    v = rng.choice(KEYS[k][1])
                    m[rid][ki] = v
                    verb = rng.choice(["set", "update"])
                    cmds.append(f"{verb} q_{k} id {rid} {k} {v}")
                    checks.append((verb, lambda ans: len(ans) == 2 and ans[1] == "ok"))
                elif r < 0.85:  # another field: the element stays where it is
                    rid = rng.choice(list(m))
                    v = str(rng.randrange(1000))
                    m[rid][-1] = v
                    cmds.append(f"set q_{k} id {rid} pay {v}")
                    checks.append(("set", lambda ans: len(ans) == 2 and ans[1] == "ok"))
                elif r < 0.87:
                    cmds.append(f"reserve q_{k} {len(m) + rng.randrange(1, 40)}")
                    checks.append(("reserve", lambda ans: ans == ["ok"]))
                else:           # a keyed find: found exactly when an equal key is there
                    # (not of NaN: the harness's own check of a found element compares
                    # with C's ==, under which a NaN found for NaN is "another" value)
                    v = rng.choice([x for x in KEYS[k][1] if "nan" not in x])
                    want = sort_key(k, v)
                    present = any(sort_key(k, x[ki]) == want for x in m.values())

                    def found(ans, k=k, ki=ki, want=want, present=present):
                        if not present:
                            return ans == ["notfound"]
                        return (len(ans) == 1 and ans[0].startswith("rec ")
                                and sort_key(k, ans[0].split()[1:][ki]) == want)
                    cmds.append(f"find q_{k} {k} {v}")
                    checks.append(("find", found))
            if seg == 1 and step == OPS // 2:   # a reopen inside the process too
                cmds += ["close", f"open {tmp_path}"]
                checks += [("close", lambda ans: ans == ["ok"]), ("open", lambda ans: ans == ["ok"])]
        for k in KEYS:
            ki = FIELDS.index(k)
            ids = sorted(model[k])
            snap = {rid: list(rec) for rid, rec in model[k].items()}

            def walk(ans, k=k, ki=ki, ids=ids, snap=snap):
                recs = records(ans[:-1])
                keys = [sort_key(k, x[ki]) for x in recs]
                return (ans[-1] == f"end {len(ids)}" and sorted(x[0] for x in recs) == ids
                        and all(a <= b for a, b in zip(keys, keys[1:]))
                        and all(x == snap[x[0]] or _same_values(x, snap[x[0]]) for x in recs))
            cmds.append(f"all q_{k}")
            checks.append(("all", walk))
        cmds.append("verify")
        checks.append(("verify", lambda ans: ans == ["verify ok"]))
        expected.append((cmds, checks))

    for seg, (cmds, checks) in enumerate(expected):
        proc = run_harness(built.exe, cmds, cwd=str(tmp_path), env=san_env, timeout=300)
        assert proc.returncode == 0 and "runtime error" not in proc.stderr, proc.stderr[-3000:]
        groups = _answers(proc.stdout.splitlines(), [c for c, _ in checks])
        assert len(groups) == len(checks), (len(groups), len(checks), proc.stdout[-2000:])
        for cmd, (what, check), ans in zip(cmds, checks, groups):
            assert check(ans), f"process {seg + 1}: {cmd!r} answered {ans}"


def _same_values(got: list, want: list) -> bool:
    """A record as printed against the model's texts (floats and strings as values)."""
    for f, g, w in zip(FIELDS, got, want):
        if f in KEYS and KEYS[f][0].startswith("f"):
            t = KEYS[f][0]
            a, b = fnum(g, t), fnum(w, t)
            if not ((math.isnan(a) and math.isnan(b)) or
                    (a == b and math.copysign(1, a) == math.copysign(1, b))):
                return False
        elif f in KEYS and KEYS[f][0].startswith("char"):
            if unescape(g) != unescape(w):
                return False
        elif g != w:
            return False
    return True


END = re.compile(r"^(ok|notfound|none|end \d+|verify .*|err .*)$")


def _answers(lines: list, verbs: list) -> list:
    """Split the harness's output into one group of lines per command: a command's answer
    ends with its status line (rec lines of a find or walk, del/upd before ok)."""
    out, i = [], 0
    for verb in verbs:
        group = []
        while i < len(lines):
            ln = lines[i]
            i += 1
            group.append(ln)
            if verb == "find" and ln.startswith("rec "):
                break
            if END.match(ln):
                break
        out.append(group)
    return out


GROW_SPEC = """record item { id: u32; k: u32; pay: u32; }
container q of item = top2ds_qualify[qsort[persistent]]
    with qsort(key = k, capacity = 1), persistent(file = "g.db");
"""
GROW_N = 20000      # slots: 32,768 after the last doubling
BRK_AT = 40         # the header's end of the allocated area (runtime/p2_runtime.h)


def test_slot_block_grows_in_place(harness_builder, san_env, tmp_path):
    """The key column lies in the slot block, so the block, the last of its file, grows
    in place at every doubling: after GROW_N inserts into a qsort of one slot, the file's
    allocated area is the header, the roots and that block (slots and column), not also
    free blocks earlier growths left behind (a column in a block of its own left 94 KB
    here). The elements and the column verify, and survive a reopen."""
    built = harness_builder(GROW_SPEC, "qgrow")
    cmds = [f"open {tmp_path}"]
    cmds += [f"insert q {i} {i} {i % 7}" for i in range(GROW_N)]
    cmds += ["verify", "close", f"open {tmp_path}", "find q k 12345", "verify", "close"]
    proc = run_harness(built.exe, cmds, cwd=str(tmp_path), env=san_env, timeout=300)
    assert proc.returncode == 0 and "runtime error" not in proc.stderr, proc.stderr[-3000:]
    out = proc.stdout.splitlines()
    assert out.count("verify ok") == 2, out[-10:]
    assert "rec 12345 12345 4" in out, out[-10:]
    data = (tmp_path / "g.db").read_bytes()
    brk = int.from_bytes(data[BRK_AT:BRK_AT + 8], "little")
    block = 32768 * (12 + 4)      # slots of a 12-byte element, then 4-byte keys
    # the 4096-byte header, a page of roots, the block: nothing left behind
    assert block < brk <= block + 16 * 1024, (brk, block)
    # and the file, grown by a small step past what was in use (1/32 of its size, a
    # 64 KiB granule at least, rounded up to granules), tracks the block too
    assert len(data) <= brk + max(brk // 32, 64 * 1024) + 64 * 1024, (len(data), brk)
