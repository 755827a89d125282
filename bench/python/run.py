"""`p2gen bench python`: what one operation costs from Python.

The spec bench/python/tpcb_py.p2 (TPC-B-like: accounts keyed by a dense id, branches, a
one-to-many relationship branch -> accounts, a cursor with a predicate) is built with
`p2gen build --python` and driven from Python beside the stores a Python user would
otherwise reach for, all in this process, on the same rows and keys:

    P2            the generated module (`db.accounts.insert(...)`, `find`, `update_by`,
                  `delete_by`, iteration, a cursor, a role, `insert_many`, `to_numpy`)
    dict          a dict of tuples (id -> row); branch -> list of ids for the relationship
    sqlite-mem    stdlib sqlite3 on :memory:, the same SQL text each time (cached statements)
    sqlite-file   the same on a file (one transaction per phase)
    lmdb          the `lmdb` PyPI binding (rows packed with struct; one txn per phase)

Operations (one phase each, in this order, per repetition; a fresh store each repetition):
insert (a row), find (by key, a row back), update (set one field of the row with a key),
scan (every row, per row), scan_where (a predicate on a non-key field, per row scanned),
traverse (the accounts of every branch, per account reached), delete (by key). Each
phase's result is checked (rows found, updated, scanned, the predicate's matches, the sum
of balances after the updates, rows left after the deletes): a system whose counts are
wrong fails the run. insert_many loads a freshly opened, empty store, as insert does (not
the one delete emptied, whose freed places come back in the deletes' random order).

The OO7 workload (bench/python/oo7.py, spec bench/python/oo7_py.p2: OO7's build, T1,
T2 and Q1 against plain Python objects and sqlite3) runs after it with the same machinery;
its operations are named oo7_* and every entry says its `workload` (tpcb, oo7 or social).

Output: python.json (Google Benchmark's JSON shape: one entry per repetition and a
`median` aggregate per system and operation, times in ns per operation, counters `rows`,
`checked` and `expected`), python.md (medians and ratios; a table per workload) and
python.png (matplotlib).
"""
from __future__ import annotations

import gc
import importlib.util
import json
import os
import platform
import random
import sqlite3
import statistics
import struct
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Optional

from ...errors import BuildError
from . import oo7, social
from ..common import (fmt_steps, fmt_x, ratio)
from .base import SqliteBase, count_found

SPEC = Path(__file__).resolve().parent / "tpcb_py.p2"
PREFIX = "p2bench_py"

OPERATIONS = ("insert", "find", "find_kw", "get", "update", "delete", "scan", "scan_where",
              "traverse", "insert_many", "to_numpy", "insert_text", "find_text", "get_text",
              "scan_text", "traverse_text")
# the order the phases run in (delete empties the store; insert_many fills a fresh one)
PHASES = ("insert", "find", "find_kw", "get", "update", "scan", "scan_where", "traverse",
          "insert_text", "find_text", "get_text", "scan_text", "traverse_text", "delete",
          "insert_many", "to_numpy")
# phases that start from a store opened afresh (untimed close + open), as insert does: a
# bulk load into the store delete emptied would measure how that store reuses the places
# the deletes freed (in their random order), not the load
FRESH = ("insert_many",)
SYSTEMS = ("P2", "dict", "sqlite-mem", "sqlite-file", "lmdb")
SINGLE_ROW = ("insert", "find", "update", "delete")
# P2's own forms and copies; *_text: the same rows with a text field (container notes)
P2_ONLY = ("find_kw", "get", "to_numpy", "insert_text", "find_text", "get_text", "scan_text",
           "traverse_text")
DEFAULT_ROWS = 10000
ACCOUNTS_PER_BRANCH = 100
FILLER = "x" * 20

OP_DOC = {
    "insert": "insert one row",
    "find": "find a row by key (a record / tuple back)",
    "find_kw": "the same, P2's keyword form `find(id=k)` (P2 only: its forms side by side)",
    "get": "the same, P2's dict form `accounts.get(k)` (P2 only)",
    "update": "set one field of the row with a given key",
    "delete": "delete the row with a given key",
    "scan": "iterate every row (per row)",
    "scan_where": "iterate rows where balance > $min (per row scanned, 10% match)",
    "traverse": "the accounts of every branch (per account reached)",
    "insert_many": "bulk insert, per row (P2: insert_many of a numpy array; sqlite3: "
                   "executemany; dict: update; lmdb: putmulti)",
    "to_numpy": "every row into a numpy structured array, per row (P2 only)",
    "insert_text": "insert, the record with a text field in place of char[20] (P2 only)",
    "find_text": "find(k) of the record with a text field (P2 only)",
    "get_text": "get(k) of the record with a text field (P2 only)",
    "scan_text": "scan of the records with a text field, reading balance (P2 only)",
    "traverse_text": "traverse to the records with a text field (P2 only)",
}


class Workload:
    """The rows and key orders every system gets."""

    def __init__(self, rows: int, seed: int = 1):
        self.rows = rows
        self.branches = max(1, (rows + ACCOUNTS_PER_BRANCH - 1) // ACCOUNTS_PER_BRANCH)
        rnd = random.Random(seed)
        ids = list(range(rows))
        rnd.shuffle(ids)
        self.insert_order = ids
        self.data = [(i, i // ACCOUNTS_PER_BRANCH, i, FILLER) for i in ids]
        self.find_keys = rnd.sample(range(rows), rows)
        self.update_keys = rnd.sample(range(rows), rows)
        self.delete_keys = rnd.sample(range(rows), rows)
        # updates set balance = id + rows; the predicate then matches the top 10%
        self.new_balance = rows
        self.min_balance = rows + rows - rows // 10 - 1
        self.expected = {
            "insert": rows, "find": rows, "find_kw": rows, "get": rows, "update": rows, "delete": rows,
            "scan": rows, "scan_where": rows // 10, "traverse": rows,
            "insert_many": rows, "to_numpy": rows, "insert_text": rows, "find_text": rows,
            "get_text": rows, "scan_text": rows, "traverse_text": rows,
        }
        self.balance_sum = sum(i + rows for i in range(rows))
        self.initial_sum = sum(range(rows))


# ---------------------------------------------------------------------------------------
# The systems: each phase returns (operations done, rows the check counted)
# ---------------------------------------------------------------------------------------
class P2System:
    name = "P2"

    def __init__(self, module, tmp: str):
        self.mod = module
        self.tmp = tmp

    def open(self, w: Workload):
        self.db = self.mod.open(self.tmp)
        import numpy as np
        if getattr(self, "_array_of", None) is not w:     # the rows as an array, once
            self.array = np.zeros(w.rows, dtype=self.db.accounts.dtype)
            for j, name in enumerate(("id", "branch_id", "balance", "filler")):
                self.array[name] = [r[j] if j < 3 else r[j].encode() for r in w.data]
            self._array_of = w
        self.branch = [self.db.branches.insert(id=b, balance=0, filler=FILLER)
                       for b in range(w.branches)]

    def close(self):
        self.db.close()

    def insert(self, w):
        ins = self.db.accounts.insert
        for i, b, bal, fill in w.data:
            ins(id=i, branch_id=b, balance=bal, filler=fill)
        n = len(self.db.accounts)
        # the relationship (untimed: a link per account, made after the phase's timing)
        return w.rows, n

    # the phases of the two record types (accounts; notes, with a text field) whose loops
    # are alike but for the container they run on: one loop, its container looked up first
    def _link(self, w, table: str):
        add = getattr(self.db.branches, table).add
        find = getattr(self.db, table).find
        br = self.branch
        for i in w.insert_order:
            add(br[i // ACCOUNTS_PER_BRANCH], find(i))

    def _scan(self, w, table: str, total: int):
        n = s = 0
        for r in getattr(self.db, table):
            n += 1
            s += r.balance
        return n, (n if s == total else -1)

    def _traverse(self, table: str):
        role = getattr(self.db.branches, table)
        n = 0
        for b in self.branch:
            for a in role(b):
                n += 1
        return n, n

    def link(self, w):
        self._link(w, "accounts")

    def find(self, w):
        return w.rows, count_found(self.db.accounts.find, w.find_keys)

    # the same rows with a text field (notes.body) in place of the char[20]
    def insert_text(self, w):
        ins = self.db.notes.insert
        for i, b, bal, fill in w.data:
            ins(id=i, branch_id=b, balance=bal, body=fill)
        return w.rows, len(self.db.notes)

    def link_text(self, w):
        self._link(w, "notes")

    def find_text(self, w):
        return w.rows, count_found(self.db.notes.find, w.find_keys)

    def get_text(self, w):
        return w.rows, count_found(self.db.notes.get, w.find_keys)

    def scan_text(self, w):
        return self._scan(w, "notes", w.initial_sum)

    def traverse_text(self, w):
        return self._traverse("notes")

    def find_kw(self, w):
        find = self.db.accounts.find
        n = 0
        for k in w.find_keys:
            if find(id=k) is not None:
                n += 1
        return w.rows, n

    def get(self, w):
        return w.rows, count_found(self.db.accounts.get, w.find_keys)

    def update(self, w):
        upd, nb = self.db.accounts.update_by, w.new_balance
        n = 0
        for k in w.update_keys:
            if upd(k, balance=k + nb) is not None:
                n += 1
        return w.rows, n

    def delete(self, w):
        dele = self.db.accounts.delete_by
        for k in w.delete_keys:
            dele(k)
        return w.rows, w.rows - len(self.db.accounts)

    def scan(self, w):
        return self._scan(w, "accounts", w.balance_sum)

    def scan_where(self, w):
        n = 0
        for r in self.db.rich(w.min_balance):
            n += 1
        return w.rows, n

    def insert_many(self, w):
        return w.rows, self.db.accounts.insert_many(self.array) and len(self.db.accounts)

    def to_numpy(self, w):
        a = self.db.accounts.to_numpy()
        return len(a), (len(a) if int(a["balance"].sum()) == w.initial_sum else -1)

    def traverse(self, w):
        return self._traverse("accounts")


class DictSystem:
    name = "dict"

    def open(self, w):
        self.d = {}
        self.by_branch = [[] for _ in range(w.branches)]

    def close(self):
        self.d = self.by_branch = None

    def insert(self, w):
        d = self.d
        for row in w.data:
            d[row[0]] = row
        return w.rows, len(d)

    def link(self, w):
        for i in w.insert_order:
            self.by_branch[i // ACCOUNTS_PER_BRANCH].append(i)

    def find(self, w):
        return w.rows, count_found(self.d.get, w.find_keys)

    def update(self, w):
        d, nb = self.d, w.new_balance
        n = 0
        for k in w.update_keys:
            t = d[k]
            d[k] = (t[0], t[1], k + nb, t[3])
            n += 1
        return w.rows, n

    def insert_many(self, w):
        self.d.update((r[0], r) for r in w.data)
        return w.rows, len(self.d)

    to_numpy = None

    def delete(self, w):
        d, by = self.d, self.by_branch
        for k in w.delete_keys:
            del d[k]
        return w.rows, w.rows - len(d)

    def scan(self, w):
        n = s = 0
        for t in self.d.values():
            n += 1
            s += t[2]
        return n, (n if s == w.balance_sum else -1)

    def scan_where(self, w):
        m = w.min_balance
        n = 0
        for t in self.d.values():
            if t[2] > m:
                n += 1
        return w.rows, n

    def traverse(self, w):
        d = self.d
        n = 0
        for ids in self.by_branch:
            for i in ids:
                d[i]
                n += 1
        return n, n


class SqliteSystem(SqliteBase):
    """stdlib sqlite3; every statement is one SQL text, so the connection's statement cache
    prepares it once. Write phases are one transaction each."""

    def open(self, w):
        self.connect().execute("CREATE TABLE account (id INTEGER PRIMARY KEY, branch_id INTEGER, "
                          "balance INTEGER, filler TEXT)")
        self.conn.execute("CREATE INDEX account_branch ON account(branch_id)")
        self.conn.commit()
        self.cur = self.conn.cursor()

    def _count(self):
        return self.cur.execute("SELECT count(*) FROM account").fetchone()[0]

    def insert(self, w):
        ex = self.cur.execute
        for row in w.data:
            ex("INSERT INTO account VALUES (?, ?, ?, ?)", row)
        self.conn.commit()
        return w.rows, self._count()

    def link(self, w):
        pass   # branch_id is the link (indexed)

    def insert_many(self, w):
        self.cur.executemany("INSERT INTO account VALUES (?, ?, ?, ?)", w.data)
        self.conn.commit()
        return w.rows, self._count()

    to_numpy = None

    def find(self, w):
        ex = self.cur.execute
        n = 0
        for k in w.find_keys:
            if ex("SELECT id, branch_id, balance, filler FROM account WHERE id = ?",
                  (k,)).fetchone() is not None:
                n += 1
        return w.rows, n

    def update(self, w):
        ex, nb = self.cur.execute, w.new_balance
        n = 0
        for k in w.update_keys:
            n += ex("UPDATE account SET balance = ? WHERE id = ?", (k + nb, k)).rowcount
        self.conn.commit()
        return w.rows, n

    def delete(self, w):
        ex = self.cur.execute
        for k in w.delete_keys:
            ex("DELETE FROM account WHERE id = ?", (k,))
        self.conn.commit()
        return w.rows, w.rows - self._count()

    def scan(self, w):
        n = s = 0
        for t in self.conn.execute("SELECT id, branch_id, balance, filler FROM account"):
            n += 1
            s += t[2]
        return n, (n if s == w.balance_sum else -1)

    def scan_where(self, w):
        n = 0
        for t in self.conn.execute("SELECT id, branch_id, balance, filler FROM account "
                                   "WHERE balance > ?", (w.min_balance,)):
            n += 1
        return w.rows, n

    def traverse(self, w):
        ex = self.cur.execute
        n = 0
        for b in range(w.branches):
            for t in ex("SELECT id, branch_id, balance, filler FROM account "
                        "WHERE branch_id = ?", (b,)):
                n += 1
        return n, n


ROW = struct.Struct("<IIq20s")
KEY = struct.Struct(">I")   # big-endian: LMDB's byte order is the id order


class LmdbSystem:
    """The lmdb binding: id -> the row packed with struct; a write transaction per write
    phase, a read transaction per read phase. No relationship (no secondary index)."""
    name = "lmdb"

    def __init__(self, lmdb, path: str):
        self.lmdb = lmdb
        self.path = path

    def open(self, w):
        import shutil
        shutil.rmtree(self.path, ignore_errors=True)
        self.env = self.lmdb.open(self.path, map_size=max(1 << 26, w.rows * 256),
                                  sync=False, metasync=False)

    def close(self):
        self.env.close()

    def _count(self):
        return self.env.stat()["entries"]

    def insert(self, w):
        pk, pr = KEY.pack, ROW.pack
        with self.env.begin(write=True) as txn:
            put = txn.put
            for i, b, bal, fill in w.data:
                put(pk(i), pr(i, b, bal, fill.encode()))
        return w.rows, self._count()

    def link(self, w):
        pass

    def find(self, w):
        pk, up = KEY.pack, ROW.unpack
        n = 0
        with self.env.begin() as txn:
            get = txn.get
            for k in w.find_keys:
                v = get(pk(k))
                if v is not None and up(v):
                    n += 1
        return w.rows, n

    def update(self, w):
        pk, up, pr, nb = KEY.pack, ROW.unpack, ROW.pack, w.new_balance
        n = 0
        with self.env.begin(write=True) as txn:
            get, put = txn.get, txn.put
            for k in w.update_keys:
                key = pk(k)
                i, b, _, fill = up(get(key))
                put(key, pr(i, b, k + nb, fill))
                n += 1
        return w.rows, n

    def delete(self, w):
        pk = KEY.pack
        with self.env.begin(write=True) as txn:
            d = txn.delete
            for k in w.delete_keys:
                d(pk(k))
        return w.rows, w.rows - self._count()

    def scan(self, w):
        up = ROW.unpack
        n = s = 0
        with self.env.begin() as txn:
            for _, v in txn.cursor():
                n += 1
                s += up(v)[2]
        return n, (n if s == w.balance_sum else -1)

    def scan_where(self, w):
        up, m = ROW.unpack, w.min_balance
        n = 0
        with self.env.begin() as txn:
            for _, v in txn.cursor():
                if up(v)[2] > m:
                    n += 1
        return w.rows, n

    traverse = None   # not applicable
    to_numpy = None

    def insert_many(self, w):
        pk, pr = KEY.pack, ROW.pack
        with self.env.begin(write=True) as txn:
            txn.cursor().putmulti([(pk(i), pr(i, b, bal, fill.encode()))
                                   for i, b, bal, fill in w.data])
        return w.rows, self._count()


# ---------------------------------------------------------------------------------------
# Building the P2 module, running, reporting
# ---------------------------------------------------------------------------------------
def build_module(build_dir: str, spec: Path = SPEC, say: Callable[[str], None] = lambda m: None,
                 prefix: str = PREFIX):
    """`p2gen build --python` of the spec into build_dir; the imported module."""
    from ...build import generate
    from ...pybind import build_python
    t0 = time.perf_counter()
    gen = generate(str(spec), build_dir, prefix)
    path = build_python(gen)
    say(f"built {path} in {time.perf_counter() - t0:.1f} s")
    name = prefix
    if name in sys.modules:
        del sys.modules[name]
    s = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(s)
    s.loader.exec_module(mod)
    return mod


def make_systems(module, tmp: str, only=None) -> list:
    systems = [P2System(module, os.path.join(tmp, "p2")), DictSystem(),
               SqliteSystem(":memory:"), SqliteSystem(os.path.join(tmp, "bench.sqlite"))]
    try:
        import lmdb
        systems.append(LmdbSystem(lmdb, os.path.join(tmp, "lmdb")))
    except ImportError:
        pass
    os.makedirs(os.path.join(tmp, "p2"), exist_ok=True)
    if only:
        systems = [s for s in systems if s.name in only]
    return systems


def run(systems: list, w, reps: int, say: Callable[[str], None] = lambda m: None,
        phases: tuple = PHASES, workload: str = "tpcb"):
    """Every phase of every system, `reps` times; the Google-Benchmark-shaped entries and
    the list of failed checks. w is a Workload (phases PHASES), an oo7.OO7Workload
    (phases oo7.PHASES) or a social.SocialWorkload (social.PHASES); each entry names its
    workload."""
    entries, failures = [], []
    times: dict = {}
    # repetition-major: every system runs once per round, so that a busy spell of the
    # (shared) machine falls on all of them rather than on one system's repetitions
    for rep in range(reps):
        for s in systems:
            s.open(w)
            try:
                for op in phases:
                    fn = getattr(s, op, None)     # (the P2-only forms: P2 only)
                    if fn is None:
                        continue
                    if op in FRESH:
                        s.close()
                        s.open(w)
                    gc.collect()
                    gc.disable()
                    try:
                        t0 = time.perf_counter_ns()
                        ops, checked = fn(w)
                        dt = time.perf_counter_ns() - t0
                    finally:
                        gc.enable()
                    if op == "insert":
                        s.link(w)
                    elif op == "insert_text":
                        s.link_text(w)
                    expected = w.expected[op]
                    if checked != expected:
                        failures.append(f"{s.name} {op} (repetition {rep + 1}): counted "
                                        f"{checked}, expected {expected}")
                    ns = dt / max(ops, 1)
                    times.setdefault((s.name, op), []).append(ns)
                    entries.append({
                        "name": f"python/{s.name}/{op}", "family": "python",
                        "workload": workload,
                        "system": s.name, "operation": op, "run_type": "iteration",
                        "repetition_index": rep, "iterations": ops,
                        "real_time": ns, "cpu_time": ns, "time_unit": "ns",
                        "rows": w.rows, "checked": checked, "expected": expected})
            finally:
                s.close()
    for s in systems:
        say(f"{s.name}: " + ", ".join(
            f"{op} {statistics.median(times[(s.name, op)]):,.0f} ns"
            for op in phases if (s.name, op) in times))
    for (sname, op), ts in times.items():
        last = [e for e in entries if e["system"] == sname and e["operation"] == op]
        med = statistics.median(ts)
        entries.append({
            "name": f"python/{sname}/{op}_median", "family": "python",
            "workload": workload, "system": sname,
            "operation": op, "run_type": "aggregate", "aggregate_name": "median",
            "repetitions": len(ts), "iterations": last[-1]["iterations"],
            "real_time": med, "cpu_time": med, "time_unit": "ns", "rows": w.rows,
            "checked": min(e["checked"] for e in last) if all(
                e["checked"] == e["expected"] for e in last) else -1,
            "expected": last[-1]["expected"]})
    return entries, failures


def medians(doc: dict) -> dict:
    """(system, operation) -> median ns per operation, from the JSON."""
    return {(b["system"], b["operation"]): b["real_time"] for b in doc["benchmarks"]
            if b.get("aggregate_name") == "median"}


def _fmt_ns(x: Optional[float]) -> str:
    return fmt_steps(x, ((10000, lambda x: f"{x / 1000:,.1f} µs"), (1000, lambda x: f"{x / 1000:.2f} µs"),
                         (None, "{:.0f} ns")))


def _ratio(a: Optional[float], b: Optional[float]) -> str:
    return fmt_x(ratio(a, b))


def targets(med: dict, rowbytes: int = 0) -> list:
    """The issue's targets that this benchmark measures: (what, value, met)."""
    out = []
    for op in SINGLE_ROW:
        p, q = med.get(("P2", op)), med.get(("sqlite-mem", op))
        if p and q:
            out.append((f"{op}: sqlite3 :memory: / P2 ≥ 3", q / p, q / p >= 3))
    for op in ("scan", "scan_where"):
        p = med.get(("P2", op))
        if p:
            out.append((f"{op}: ns per row ≤ 300", p, p <= 300))
    f = med.get(("P2", "find"))
    for op, form in (("find_kw", "find(id=k)"), ("get", "get(k)")):
        p = med.get(("P2", op))
        if p and f:
            out.append((f"{form} / find(k) ≤ 1.5", p / f, p / f <= 1.5))
    # a record with a text field against the same record without it
    for op, base, what in (("find_text", "find", "find(k)"), ("get_text", "find", "get(k)"),
                           ("scan_text", "scan", "scan"), ("traverse_text", "traverse", "traverse")):
        p, q = med.get(("P2", op)), med.get(("P2", base))
        if p and q:
            out.append((f"{what} with a text field / {base} without ≤ 1.5", p / q, p / q <= 1.5))
    p, d = med.get(("P2", "find")), med.get(("dict", "find"))
    if p and d:
        out.append(("find: P2 / dict ≤ 3", p / d, p / d <= 3))
    p, q = med.get(("P2", "insert_many")), med.get(("P2", "insert"))
    if p and q:
        out.append(("insert: loop of insert / insert_many ≥ 10", q / p, q / p >= 10))
    p = med.get(("P2", "to_numpy"))
    if p and rowbytes:
        gbs = rowbytes / p
        out.append(("to_numpy: GB/s ≥ 1", gbs, gbs >= 1))
    return out


def _ops_table(med: dict, systems: list, ops) -> list:
    """A row per operation: ns per operation per system, sqlite-mem / P2 and P2 / dict."""
    lines = ["| operation | " + " | ".join(systems) + " | sqlite-mem / P2 | P2 / dict |",
             "|---|" + "---:|" * (len(systems) + 2)]
    for op in ops:
        cells = [_fmt_ns(med.get((s, op))) for s in systems]
        lines.append(f"| {op} | " + " | ".join(cells) + " | "
                     f"{_ratio(med.get(('sqlite-mem', op)), med.get(('P2', op)))} | "
                     f"{_ratio(med.get(('P2', op)), med.get(('dict', op)))} |")
    return lines


def _workload_markdown(mod, med: dict, ctx: dict, title: str, about: str,
                       target: Optional[Callable[[dict], list]] = None) -> list:
    """The table of workload module `mod` (oo7 or social: its operations, systems and their
    docs): a heading, `about` (the sizes, filled from its context `p` and `ctx`), the
    table, `target`'s lines, and the operations."""
    systems = [s for s in mod.SYSTEMS if any(k[0] == s and k[1] in mod.OPERATIONS
                                             for k in med)]
    lines = ["", f"## {title}", "", about, ""] + _ops_table(med, systems, mod.OPERATIONS)
    lines += target(med) if target else []
    lines += ["", "Operations: " + "; ".join(f"**{k}** {v}" for k, v in mod.OP_DOC.items())
              + "."]
    return lines


def _oo7_markdown(med: dict, ctx: dict) -> list:
    """The OO7 workload's table (its operations are named oo7_*)."""
    p = ctx["oo7"]
    return _workload_markdown(
        oo7, med, ctx, "OO7",
        f"OO7 {p['size']}: {p['composite_parts']:,} composite parts, "
        f"{p['atomic_parts']:,} atomic parts, {p['connections']:,} connections, "
        f"{p['q1_lookups']:,} Q1 lookups; median of {ctx['repetitions']} repetitions, "
        f"ns per object built, part reached or lookup. Spec: `{p['spec']}`.")


def _social_markdown(med: dict, ctx: dict) -> list:
    """The social-graph workload's table (operations social_*) and its target: the feed
    from Python no slower than sqlite3's join."""
    p = ctx["social"]

    def target(med: dict) -> list:
        a, b = med.get(("P2", "social_feed")), med.get(("sqlite-mem", "social_feed"))
        if not (a and b):
            return []
        return ["", f"Target: the feed from Python no slower than sqlite3's join (:memory:): "
                    f"sqlite-mem / P2 = {b / a:.1f}× — {'met' if b >= a else 'NOT met'}."]
    return _workload_markdown(
        social, med, ctx, "Social graph",
        f"{p['users']:,} users, {p['followees_per_user']} followees each, "
        f"{p['posts']:,} posts, {p['queries']:,} queries, k = {p['k']}; median of "
        f"{ctx['repetitions']} repetitions, ns per object loaded or per query. "
        f"Spec: `{p['spec']}`.", target)


def markdown(doc: dict) -> str:
    med = medians(doc)
    ctx = doc["context"]
    tpcb = any(k[1] in OPERATIONS for k in med)
    lines = [f"# p2gen bench python: per-operation cost from Python", ""]
    if tpcb:
        lines += _tpcb_markdown(med, ctx)
    if any(k[1] in oo7.OPERATIONS for k in med):
        lines += _oo7_markdown(med, ctx)
    if any(k[1] in social.OPERATIONS for k in med):
        lines += _social_markdown(med, ctx)
    lines.append("")
    return "\n".join(lines)


def _tpcb_markdown(med: dict, ctx: dict) -> list:
    """The TPC-B-like workload's table and the targets."""
    systems = [s for s in SYSTEMS if any(k[0] == s and k[1] in OPERATIONS for k in med)]
    lines = [f"{ctx['rows']:,} accounts, median of {ctx['repetitions']} repetitions, "
             f"ns per operation (per row for scans and traversal); Python "
             f"{ctx['python']}, SQLite {ctx['sqlite']}, load average {ctx['load_avg']}. "
             f"Spec: `{ctx['spec']}`.",
             ""] + _ops_table(med, systems, OPERATIONS)
    lines += ["", "Operations: " + "; ".join(f"**{k}** {v}" for k, v in OP_DOC.items()) + ".",
              "", "## Targets", "", "| target | value | met |", "|---|---:|:---:|"]
    for what, value, met in targets(med, ctx.get("record_bytes", 0)):
        lines.append(f"| {what} | {value:,.2f} | {'yes' if met else 'no'} |")
    return lines


def plot(doc: dict, path: str) -> Optional[str]:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    med = medians(doc)
    systems = [s for s in SYSTEMS if any(k[0] == s for k in med)]
    ops = [op for op in OPERATIONS + oo7.OPERATIONS if any(k[1] == op for k in med)]
    fig, ax = plt.subplots(figsize=(10 + 0.6 * max(len(ops) - len(OPERATIONS), 0), 4.5))
    width = 0.8 / max(len(systems), 1)
    for j, s in enumerate(systems):
        xs = [i + (j - (len(systems) - 1) / 2) * width for i in range(len(ops))]
        ys = [med.get((s, op), 0) or 0 for op in ops]
        ax.bar(xs, ys, width, label=s)
    ax.set_xticks(range(len(ops)))
    ax.set_xticklabels(ops, rotation=30, ha="right", fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("ns per operation (median, log)")
    ax.set_title("Per-operation cost from Python")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


WORKLOADS = ("tpcb", "oo7", "social")


def command(rows: int, reps: int, out: str, build_dir: str, systems=None, plots: bool = True,
            render: Optional[str] = None, say: Callable[[str], None] = print,
            workloads=WORKLOADS, oo7_size: str = oo7.DEFAULT_SIZE,
            social_size: str = social.DEFAULT_SIZE) -> int:
    """Run the chosen workloads (tpcb: bench/python/tpcb_py.p2 with `rows` accounts;
    oo7: bench/python/oo7_py.p2 at `oo7_size`), or only render a stored JSON."""
    os.makedirs(out, exist_ok=True)
    workloads = [x for x in WORKLOADS if x in (workloads or WORKLOADS)]
    if render:
        with open(render, encoding="utf-8") as f:
            doc = json.load(f)
        failures = doc["context"].get("failures", [])
    else:
        entries, failures = [], []
        ctx = {"workloads": workloads, "rows": rows, "repetitions": reps,
               "spec": "bench/python/tpcb_py.p2", "operations": {}}
        with tempfile.TemporaryDirectory(prefix="p2bench_py_") as tmp:
            if "tpcb" in workloads:
                module = build_module(build_dir, say=say)
                chosen = make_systems(module, tmp, systems)
                if not chosen:
                    raise BuildError(f"no system to run (systems: {', '.join(SYSTEMS)})")
                e, f = run(chosen, Workload(rows), reps, say)
                entries += e
                failures += f
                ctx["record_bytes"] = module.ffi.sizeof(f"{PREFIX}_account")
                ctx["operations"].update(OP_DOC)
            for name, mod, workload, size in (("oo7", oo7, oo7.OO7Workload, oo7_size),
                                              ("social", social, social.SocialWorkload,
                                               social_size)):
                if name not in workloads:
                    continue
                if systems and not set(systems) & set(mod.SYSTEMS):
                    msg = f"no system runs the {mod.TITLE} workload (systems: " \
                          f"{', '.join(mod.SYSTEMS)})"
                    if not entries:
                        raise BuildError(msg)
                    say(msg)
                    continue
                module = build_module(os.path.join(build_dir, name), mod.SPEC, say, mod.PREFIX)
                w = workload(size)
                e, f = run(mod.make_systems(module, tmp, systems), w, reps, say, mod.PHASES,
                           name)
                entries += e
                failures += f
                ctx[name] = {**w.params(), "spec": "bench/python/" + mod.SPEC.name}
                ctx["operations"].update(mod.OP_DOC)
        doc = {"context": {
            "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "host_name": platform.node(),
            "executable": sys.executable, "python": platform.python_version(),
            "sqlite": sqlite3.sqlite_version, "num_cpus": os.cpu_count(),
            "load_avg": [round(x, 2) for x in os.getloadavg()],
            **ctx, "failures": failures},
            "benchmarks": entries}
        with open(os.path.join(out, "python.json"), "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
    md = markdown(doc)
    with open(os.path.join(out, "python.md"), "w", encoding="utf-8") as f:
        f.write(md)
    say(md)
    if plots:
        png = plot(doc, os.path.join(out, "python.png"))
        say(f"plot: {png}" if png else "no plot: matplotlib is not installed "
            "(pip install 'p2gen[bench]')")
    for msg in failures:
        say(f"FAILED CHECK: {msg}")
    return 1 if failures else 0
