"""The OO7 workload of `p2gen bench python`: OO7's hot operations from Python.

The spec bench/python/oo7_py.p2 (a reduced OO7 schema: composite parts owning atomic
parts, each composite's root part, connections between atomic parts with both ends as
relationships) is driven beside what a Python programmer would otherwise write:

    P2            the generated module (records, `find`, `get`, `update`, roles)
    dict          plain Python objects with lists of references (`__slots__` classes),
                  a dict id -> atomic part for lookups
    sqlite-mem    stdlib sqlite3 on :memory: (tables with indexes; the traversals issue
                  SQL per part, the same SQL text each time)
    sqlite-file   the same on a file

The database is OO7's (../shared/specs/oo7.md §2, reduced): composite parts 1..C, atomic
parts (c-1)·N+1 .. c·N of composite c with random build dates, x and y; per atomic part
F outgoing connections inside its composite, the first to the next part of the ring (so
every part is reached from the root), the others to random parts. Seeded: every system
gets the same database and keys.

Operations (one phase each, in this order, on a fresh database each repetition):
oo7_build (every object and link, per object), oo7_parts (each composite's atomic parts
through the one-to-many relationship, per part), oo7_t1 (OO7 T1 within composite parts:
depth-first from each root part along outgoing connections with a visited set, reading
each part, per part visited), oo7_t2 (the same walk swapping x and y of every part
reached, OO7 T2b, per part updated), oo7_q1 (OO7 Q1: atomic parts by random id, per
lookup; after T2 it also checks the updates landed). Each phase's count and a checksum
are checked: a wrong one fails the run.
"""
from __future__ import annotations

import os
import random
from pathlib import Path

from .base import SqliteBase

SPEC = Path(__file__).resolve().parent / "oo7_py.p2"
PREFIX = "p2bench_oo7"

# (composite parts, atomic parts per composite, connections per atomic part)
SIZES = {"tiny": (50, 10, 3), "small": (500, 20, 3)}
DEFAULT_SIZE = "small"

PHASES = ("oo7_build", "oo7_parts", "oo7_t1", "oo7_t2", "oo7_q1")
OPERATIONS = PHASES
SYSTEMS = ("P2", "dict", "sqlite-mem", "sqlite-file")
TITLE = "OO7"   # as run.py names the workload

OP_DOC = {
    "oo7_build": "build the database: every composite part, atomic part, connection and "
                 "relationship link (per object)",
    "oo7_parts": "the atomic parts of every composite part through the one-to-many "
                 "relationship (per part reached)",
    "oo7_t1": "OO7 T1 per composite part: depth-first from the root part along outgoing "
              "connections, a visited set, each part read (per part visited)",
    "oo7_t2": "OO7 T2b: the T1 walk swapping x and y of every part reached (per part "
              "updated)",
    "oo7_q1": "OO7 Q1: an atomic part by a random id (per lookup)",
}


class OO7Workload:
    """The database and the keys every system gets."""

    def __init__(self, size: str = DEFAULT_SIZE, seed: int = 7):
        self.size = size
        comps, per, fan = SIZES[size]
        self.comps, self.per, self.fan = comps, per, fan
        rnd = random.Random(seed)
        self.composites = []    # (id, build_date, root atomic id)
        self.atomics = []       # (id, composite id, build_date, x, y)
        self.connections = []   # (source atomic id, destination atomic id, length)
        for c in range(1, comps + 1):
            first = (c - 1) * per + 1
            self.composites.append((c, rnd.randint(0, 2999), first))
            for i in range(per):
                self.atomics.append((first + i, c, rnd.randint(1000, 1999),
                                     rnd.randint(0, 99999), rnd.randint(0, 99999)))
            for i in range(per):
                for j in range(fan):
                    to = (i + 1) % per if j == 0 else rnd.randrange(per)
                    self.connections.append((first + i, first + to, rnd.randint(0, 99999)))
        self.rows = n = len(self.atomics)
        self.q1_keys = [rnd.randint(1, n) for _ in range(n)]
        by_id = {a[0]: a for a in self.atomics}
        self.objects = comps + n + len(self.connections)
        self.sum_date = sum(a[2] for a in self.atomics)
        self.sum_x = sum(a[3] for a in self.atomics)
        self.sum_y = sum(a[4] for a in self.atomics)
        self.q1_sum = sum(by_id[k][4] for k in self.q1_keys)   # x after T2's swap = y
        self.edges = len(self.connections)
        self.expected = {"oo7_build": self.objects, "oo7_parts": n, "oo7_t1": n,
                         "oo7_t2": n, "oo7_q1": n}

    def params(self) -> dict:
        return {"size": self.size, "composite_parts": self.comps,
                "atomic_per_composite": self.per, "connections_per_atomic": self.fan,
                "atomic_parts": self.rows, "connections": self.edges,
                "q1_lookups": len(self.q1_keys)}


def _check(n: int, ok: bool) -> int:
    return n if ok else -1


class OO7System:
    """T1 and T2 over a system's _walk(update) -> (parts, edges, sum of x), Q1 over a
    lookup; no link phase."""

    def link(self, w):
        pass

    def oo7_t1(self, w):
        n, edges, s = self._walk(False)
        return n, _check(n, edges == w.edges and s == w.sum_x)

    def oo7_t2(self, w):
        n, edges, s = self._walk(True)
        return n, _check(n, edges == w.edges and s == w.sum_x)

    @staticmethod
    def _q1(lookup, w):
        """Q1 over lookup(id) -> an atomic part with .x, or None."""
        n = s = 0
        for k in w.q1_keys:
            a = lookup(k)
            if a is not None:
                n += 1
                s += a.x
        return len(w.q1_keys), _check(n, s == w.q1_sum)


class P2OO7(OO7System):
    name = "P2"

    def __init__(self, module, tmp: str):
        self.mod = module
        self.tmp = tmp
        os.makedirs(tmp, exist_ok=True)

    def open(self, w):
        self.db = self.mod.open(self.tmp)

    def close(self):
        self.db.close()

    def oo7_build(self, w):
        db = self.db
        ins_a, ins_c, ins_k = (db.atomic_parts.insert, db.composite_parts.insert,
                               db.connections.insert)
        parts, out, inc = db.composite_parts.parts.add, db.atomic_parts.out.add, \
            db.atomic_parts.inc.add
        atom = {}
        for i, c, date, x, y in w.atomics:
            atom[i] = ins_a(id=i, build_date=date, x=x, y=y)
        for c, date, root in w.composites:
            comp = ins_c(id=c, build_date=date, root_part=atom[root].ref)
            first = (c - 1) * w.per + 1
            for i in range(first, first + w.per):
                parts(comp, atom[i])
        for src, dst, length in w.connections:
            k = ins_k(length=length)
            out(atom[src], k)
            inc(atom[dst], k)
        n = len(db.atomic_parts) + len(db.composite_parts) + len(db.connections)
        return w.objects, n

    def oo7_parts(self, w):
        parts = self.db.composite_parts.parts
        n = s = 0
        for comp in self.db.composite_parts:
            for a in parts(comp):
                n += 1
                s += a.build_date
        return n, _check(n, s == w.sum_date)

    def _walk(self, update: bool):
        db = self.db
        get = db.atomic_parts.at        # by reference
        upd = db.atomic_parts.update          # the record just read: one crossing into C
        out = db.atomic_parts.out.refs
        dst = db.connections.dst.ref
        n = edges = s = 0
        for comp in db.composite_parts:
            root = comp.root_part
            seen = {root}
            stack = [root]
            while stack:
                r = stack.pop()
                a = get(r)
                n += 1
                s += a.x
                if update:
                    upd(a, x=a.y, y=a.x)
                for k in out(r):
                    edges += 1
                    b = dst(k)
                    if b not in seen:
                        seen.add(b)
                        stack.append(b)
        return n, edges, s

    def oo7_q1(self, w):
        return self._q1(self.db.atomic_parts.find, w)


class AtomicPart:
    __slots__ = ("id", "build_date", "x", "y", "part_of", "to", "from_")

    def __init__(self, id, build_date, x, y):
        self.id, self.build_date, self.x, self.y = id, build_date, x, y
        self.part_of = None
        self.to = []       # outgoing connections
        self.from_ = []    # incoming connections


class Connection:
    __slots__ = ("length", "src", "dst")

    def __init__(self, length, src, dst):
        self.length, self.src, self.dst = length, src, dst


class CompositePart:
    __slots__ = ("id", "build_date", "root_part", "parts")

    def __init__(self, id, build_date):
        self.id, self.build_date = id, build_date
        self.root_part = None
        self.parts = []


class DictOO7(OO7System):
    """Plain Python objects with lists of references, a dict id -> atomic part, a list
    of composite parts: what a Python programmer would write."""
    name = "dict"

    def open(self, w):
        self.comps, self.atoms = [], {}

    def close(self):
        self.comps = self.atoms = None

    def oo7_build(self, w):
        atoms, comps = self.atoms, self.comps
        nconn = 0
        for i, c, date, x, y in w.atomics:
            atoms[i] = AtomicPart(i, date, x, y)
        for c, date, root in w.composites:
            comp = CompositePart(c, date)
            comp.root_part = atoms[root]
            first = (c - 1) * w.per + 1
            for i in range(first, first + w.per):
                a = atoms[i]
                a.part_of = comp
                comp.parts.append(a)
            comps.append(comp)
        for src, dst, length in w.connections:
            a, b = atoms[src], atoms[dst]
            k = Connection(length, a, b)
            a.to.append(k)
            b.from_.append(k)
            nconn += 1
        return w.objects, len(atoms) + len(comps) + nconn

    def oo7_parts(self, w):
        n = s = 0
        for comp in self.comps:
            for a in comp.parts:
                n += 1
                s += a.build_date
        return n, _check(n, s == w.sum_date)

    def _walk(self, update: bool):
        n = edges = s = 0
        for comp in self.comps:
            root = comp.root_part
            seen = {root.id}
            stack = [root]
            while stack:
                a = stack.pop()
                n += 1
                s += a.x
                if update:
                    a.x, a.y = a.y, a.x
                for k in a.to:
                    edges += 1
                    b = k.dst
                    if b.id not in seen:
                        seen.add(b.id)
                        stack.append(b)
        return n, edges, s

    def oo7_q1(self, w):
        return self._q1(self.atoms.get, w)


class SqliteOO7(SqliteBase, OO7System):
    """stdlib sqlite3: a table per class with indexes on the relationships' foreign keys;
    the traversals query per part, each statement one SQL text (prepared once by the
    connection's cache). The build and T2 are one transaction each."""

    def open(self, w):
        ex = self.connect().execute
        ex("CREATE TABLE composite_part (id INTEGER PRIMARY KEY, build_date INTEGER, "
           "root_part INTEGER)")
        ex("CREATE TABLE atomic_part (id INTEGER PRIMARY KEY, part_of INTEGER, "
           "build_date INTEGER, x INTEGER, y INTEGER)")
        ex("CREATE INDEX atomic_part_of ON atomic_part(part_of)")
        ex("CREATE TABLE connection (id INTEGER PRIMARY KEY, src INTEGER, dst INTEGER, "
           "length INTEGER)")
        ex("CREATE INDEX connection_src ON connection(src)")
        ex("CREATE INDEX connection_dst ON connection(dst)")
        self.conn.commit()
        self.cur = self.conn.cursor()

    def _count(self, table):
        return self.cur.execute(f"SELECT count(*) FROM {table}").fetchone()[0]

    def oo7_build(self, w):
        ex = self.cur.execute
        for row in w.atomics:
            ex("INSERT INTO atomic_part VALUES (?, ?, ?, ?, ?)", row)
        for row in w.composites:
            ex("INSERT INTO composite_part VALUES (?, ?, ?)", row)
        for row in w.connections:
            ex("INSERT INTO connection (src, dst, length) VALUES (?, ?, ?)", row)
        self.conn.commit()
        return w.objects, sum(self._count(t) for t in
                              ("atomic_part", "composite_part", "connection"))

    def oo7_parts(self, w):
        ex = self.cur.execute
        n = s = 0
        comps = self.conn.execute("SELECT id FROM composite_part").fetchall()
        for (c,) in comps:
            for _, date in ex("SELECT id, build_date FROM atomic_part WHERE part_of = ?",
                              (c,)):
                n += 1
                s += date
        return n, _check(n, s == w.sum_date)

    def _walk(self, update: bool):
        ex = self.cur.execute
        n = edges = s = 0
        comps = self.conn.execute("SELECT id, root_part FROM composite_part").fetchall()
        for _, root in comps:
            seen = {root}
            stack = [root]
            while stack:
                a = stack.pop()
                _, x, y = ex("SELECT id, x, y FROM atomic_part WHERE id = ?", (a,)).fetchone()
                n += 1
                s += x
                if update:
                    ex("UPDATE atomic_part SET x = ?, y = ? WHERE id = ?", (y, x, a))
                for (b,) in ex("SELECT dst FROM connection WHERE src = ?", (a,)).fetchall():
                    edges += 1
                    if b not in seen:
                        seen.add(b)
                        stack.append(b)
        if update:
            self.conn.commit()
        return n, edges, s

    def oo7_q1(self, w):
        ex = self.cur.execute
        n = s = 0
        for k in w.q1_keys:
            r = ex("SELECT id, part_of, build_date, x, y FROM atomic_part WHERE id = ?",
                   (k,)).fetchone()
            if r is not None:
                n += 1
                s += r[3]
        return len(w.q1_keys), _check(n, s == w.q1_sum)


def make_systems(module, tmp: str, only=None) -> list:
    systems = [P2OO7(module, os.path.join(tmp, "p2oo7")), DictOO7(),
               SqliteOO7(":memory:"), SqliteOO7(os.path.join(tmp, "oo7.sqlite"))]
    if only:
        systems = [s for s in systems if s.name in only]
    return systems
