"""The reference model of ACOB (acob.md §6.1): the database, generation, walks and client
caches of §1-§4 as counts only, with LRU buffers -- the process the spec states, here
drawing from the same splitmix64 stream, in the same order, as the driver
(bench/acob/acob_main.cc), so that its walk counts are the driver's exactly and its
requests those of an LRU buffer where the runtime's is a clock.

Per set: a page is slot // 35 of the set's physical order (5 objects, 35 records); a
record is (object k, place j): root 0, interior 1-2, leaves 3-6.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

MASK = (1 << 64) - 1


class Rng:
    """splitmix64; rnd(n) = next() % n, as the driver's"""

    def __init__(self, seed: int):
        self.s = seed & MASK

    def next(self) -> int:
        self.s = (self.s + 0x9E3779B97F4A7C15) & MASK
        z = self.s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    def rnd(self, n: int) -> int:
        return self.next() % n


@dataclass
class Set:
    phys: list      # phys[7k + j]: the slot of record j of object k
    comp: list      # comp[8k + l]: the object link l of object k's leaves names


def generate(r: Rng, n: int, f: int, region: int, smear: bool) -> Set:
    phys = list(range(n * 7))
    comp = [0] * (n * 8)
    pages, half = n // 5, (region - 1) // 2
    for k in range(n):
        p = k // 5
        lo, hi = max(0, p - half), min(pages - 1, p + half)
        first, near = lo * 5, (hi - lo + 1) * 5 - 1
        for l in range(8):
            if r.rnd(100) < f:
                c = first + r.rnd(near)
                if c >= k:
                    c += 1
            else:
                c = r.rnd(n)
            comp[k * 8 + l] = c
    if smear:
        ids = list(range(n))
        for i in range(n // 4):
            j = i + r.rnd(n - i)
            ids[i], ids[j] = ids[j], ids[i]
            x = ids[i]
            for j in range(1, 7):
                if r.rnd(4) != 0:
                    continue
                y = r.rnd(n - 1)
                if y >= x:
                    y += 1
                j2 = 1 + r.rnd(2) if j < 3 else 3 + r.rnd(4)
                a, b = x * 7 + j, y * 7 + j2
                phys[a], phys[b] = phys[b], phys[a]
    return Set(phys, comp)


class Lru:
    """A client cache of `cap` units (pages or records), LRU, write-back: reads counts
    misses, writes counts dirty units written back (at eviction and at commit), rewrites
    those written back before in the same query and set. With `steal=False` a dirty unit
    is never evicted before the commit (the least recently used clean one goes; with none
    clean the cache grows): p2gen's object server, whose server holds committed states
    only so that several clients can run optimistic transactions (issue 36, item 5); the
    paper's object server, single-user, wrote dirty objects back at eviction."""

    def __init__(self, cap: int, steal: bool = True):
        self.cap, self.steal, self.units = cap, steal, OrderedDict()
        self.reads = self.writes = self.rewrites = 0
        self.written: set = set()

    def touch(self, u, dirty: bool = False) -> None:
        if u in self.units:
            self.units.move_to_end(u)
            self.units[u] |= dirty
            return
        self.reads += 1
        if len(self.units) >= self.cap:
            if self.steal:
                v, d = self.units.popitem(last=False)
                if d:
                    self.write(v)
            else:
                clean = next((v for v, d in self.units.items() if not d), None)
                if clean is not None:
                    del self.units[clean]
        self.units[u] = dirty

    def write(self, u) -> None:
        self.writes += 1
        if u in self.written:
            self.rewrites += 1
        self.written.add(u)

    def commit(self) -> None:
        for u, d in self.units.items():
            if d:
                self.write(u)
                self.units[u] = False


@dataclass
class Counts:
    walk: int = 0
    roots: int = 0
    updates: int = 0
    page_reads: int = 0
    page_writes: int = 0
    page_rewrites: int = 0
    obj_reads: int = 0
    obj_writes: int = 0
    obj_rewrites: int = 0


@dataclass
class Model:
    objects: int = 1500
    sets: int = 5
    f: int = 30
    region: int = 5
    smear: bool = False
    seed: int = 1990
    queries: int = 0
    pages: int = 50             # the page buffer, B
    records: int = 1750         # the object cache, B * 35
    obj_steal: bool = True      # the paper's object server; False: p2gen's (no steal)
    db: list = field(default_factory=list)

    def __post_init__(self):
        self.queries = self.queries or self.objects // 5
        r = Rng(self.seed)
        self.db = [generate(r, self.objects, self.f, self.region, self.smear) for _ in range(self.sets)]

    def step(self, step: str) -> list:
        """Counts per set of one step (scan, read, update), each set from cold caches."""
        out = []
        rng = Rng(self.seed)
        for s in self.db:
            c, pb, oc = Counts(), Lru(self.pages), Lru(self.records, steal=self.obj_steal)

            def read(k, j, dirty=False):
                slot = s.phys[k * 7 + j]
                pb.touch(slot // 35, dirty)
                oc.touch(slot, dirty)
                c.walk += 1

            if step == "scan":
                for k in range(self.objects):
                    c.roots += 1
                    for j in range(7):          # breadth-first: 0, 1, 2, 3, 4, 5, 6
                        read(k, j)
            else:
                update = step == "update"

                def visit(k, j, depth):
                    read(k, j)
                    if depth == 6:
                        if update:
                            read_dirty(k, j)
                        return
                    for side in (0, 1):
                        if rng.rnd(10) < 8:
                            if j < 3:
                                visit(k, 2 * j + 1 + side, depth + 1)
                            else:
                                visit(s.comp[k * 8 + (j - 3) * 2 + side], 0, depth + 1)

                def read_dirty(k, j):
                    slot = s.phys[k * 7 + j]
                    pb.touch(slot // 35, True)
                    oc.touch(slot, True)
                    c.updates += 1

                for _ in range(self.queries):
                    k = rng.rnd(self.objects)
                    c.roots += 1
                    visit(k, 0, 0)
            pb.commit()
            oc.commit()
            c.page_reads, c.page_writes, c.page_rewrites = pb.reads, pb.writes, pb.rewrites
            c.obj_reads, c.obj_writes, c.obj_rewrites = oc.reads, oc.writes, oc.rewrites
            out.append(c)
        return out
