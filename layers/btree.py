import math
from dataclasses import dataclass

from .base import (UNIQUE, ALLOC, CACHE_LINE, ElemField, Layer, ParamSpec, ordered_paths,
                   range_selectivity, unique_errors, unique_validate)

# The default node size, chosen by measurement: 1,000,000 u32 keys inserted in random
# order into btree(key = id, node = N)[array[transient]], then 1,000,000 equality finds in
# another order (one core of a shared two-core machine, two runs each, seconds):
#   node   128: insert 1.21-1.39, find 1.20-1.24     node  1024: 0.56-0.73, 0.57-0.70
#   node   256: insert 0.83-0.87, find 0.87-0.89     node  2048: 0.60-0.69, 0.56-0.69
#   node   512: insert 0.65-0.78, find 0.60-0.74     node  4096: 0.64-0.69, 0.66-0.76
# Up to 1 KiB a bigger node saves levels (each a cache miss on a big tree) faster than its
# binary search and its insert shifts grow; beyond, they cost what the levels save. So
# 1024 bytes (16 cache lines, 62 i64 or 83 u32 keys per leaf with 64-bit links) is the
# default; tests use nodes of about 100 bytes, which split and merge every few changes.
DEFAULT_NODE = 1024
# The fewest entries a node of either kind must hold, so that a node split in two, or
# two nodes merged, still meets the fill rule (at least half full).
MIN_CAPACITY = 3
# How full the cost model takes a node to be (random inserts into nodes split in halves
# leave them ln 2 full on average).
FILL = 0.7
# How many entries ahead of a walk step `_range_next` / `_range_prev` prefetch the element
# (the elements lie where the storage put them, in insertion order: one cache and TLB miss
# per step of a walk in key order). The distance ramps up by two entries a step, so that a
# lookup prefetches nothing and a short walk little; an even number. Measured on a shared
# two-core machine (AMD EPYC, a VM), 1,000,000 104-byte rows inserted in random order into
# btree[array], 100,000-row walks, CPU ns per row, transient / persistent: none 42-50 /
# 50-65, 8 ahead 23-25 / 25-27, 12 ahead 22 / 23, 16 ahead 21 / 23, 24 ahead 20-21 / 25,
# 32 ahead 27-39 (transient), 48 ahead 30-31 (transient). Fewer leave misses unoverlapped;
# more fetch rows a short walk never reads and let fetched lines age out before their step.
PREFETCH_AHEAD = 16
# The deepest tree verify and the ordinary functions accept (each level at least halves
# the entries below the root, so 64 levels would hold more than 2^64 entries).
MAX_HEIGHT = 64


@dataclass(frozen=True)
class Geometry:
    """How one btree instance lays out its nodes (every size in bytes)."""
    node: int          # bytes per node (the `node` parameter)
    key_size: int      # bytes per key copy
    key_align: int     # its alignment
    link: int          # bytes per stored link (the memory's link width / 8)
    header: int        # bytes before the key array
    leaf_cap: int      # (key, reference) entries per leaf
    inner_cap: int     # separators per inner node (children: one more)

    def lines_per_node(self) -> float:
        """Cache lines one node visit reads: the line holding the header and the middle
        key, plus half a line per further halving of the binary search over the node's
        lines (neighbouring lines mostly arrive together: the hardware prefetches)."""
        lines = max(1, math.ceil(self.node / CACHE_LINE))
        return 1 + 0.5 * math.log2(lines)

    def height(self, n: float) -> int:
        """Levels of a tree of n entries, nodes FILL full (the mean of random inserts into
        half-split nodes is ln 2, about 0.7)."""
        per_leaf = max(1.0, FILL * self.leaf_cap)
        fanout = max(2.0, FILL * (self.inner_cap + 1))
        leaves = max(1.0, n / per_leaf)
        return 1 + (math.ceil(math.log(leaves) / math.log(fanout) - 1e-9) if leaves > 1 else 0)

    def layout(self, inner: bool) -> dict:
        """Byte offsets of a node's fields (as the template's structs lay them out): the
        sibling links, the entry count and level, and the arrays."""
        cap = self.inner_cap if inner else self.leaf_cap
        key = _align(self.header, self.key_align)
        ref = _align(key + cap * self.key_size, self.link)
        out = {"prev": 0, "next": self.link, "n": 2 * self.link, "level": 2 * self.link + 2,
               "key": key, "ref": ref}
        if inner:
            out["child"] = ref + cap * self.link
        return out

    @property
    def leaf_min(self) -> int:
        return self.leaf_cap // 2

    @property
    def inner_min(self) -> int:
        return self.inner_cap // 2


def _align(x: int, a: int) -> int:
    return (x + a - 1) // a * a


def key_layout(ftype) -> tuple:
    """(size, alignment) of a key copy of field type `ftype`."""
    if ftype.kind == "char":
        return ftype.length, 1
    if ftype.kind == "composite":   # the key struct: its fields in order, C's padding
        off, align = 0, 1
        for f in ftype.fields:
            s, a = key_layout(f.type)
            off = _align(off, a) + s
            align = max(align, a)
        return _align(off, align), align
    size = ftype.bits // 8
    return size, size


def node_size(header: int, ks: int, ka: int, link: int, cap: int, inner: bool) -> int:
    """The C struct size of a node holding `cap` entries (as the template declares it:
    header, key[cap], ref[cap], and for an inner node child[cap + 1])."""
    align = max(link, ka, 4)
    off = _align(header, ka) + cap * ks
    off = _align(off, link) + cap * link
    if inner:
        off += (cap + 1) * link
    return _align(off, align)


def geometry(inst, node: int = 0) -> Geometry:
    """The node layout of btree instance `inst` (with `node` bytes per node, if given)."""
    from .base import container_links
    key = inst.key_field_obj
    ks, ka = key_layout(key.type)
    link = container_links(inst.container).bits // 8
    header = 2 * link + 4       # prev, next links; uint16_t n, uint16_t level
    node = node or inst.params["node"]

    def cap(inner: bool) -> int:
        c = 0
        while node_size(header, ks, ka, link, c + 1, inner) <= node:
            c += 1
        return c
    return Geometry(node, ks, ka, link, header, cap(False), cap(True))


class BTree(Layer):
    name = "btree"
    narrow_links = True   # child, sibling and element links in the memory's link width
    realm = "ds"
    below = "ds"
    role = "index"
    keeps_order = True
    reverse_walk = True   # _range_last / _range_prev: one descent, then the back links
    # every change may need new nodes: taken from a pool topped up before anything changes
    errors = {"insert": {ALLOC}, "update": {ALLOC}, "reserve": {ALLOC}}
    params = (
        ParamSpec("key", "field", doc="field the tree is ordered by", composite=True),
        ParamSpec("node", "int", DEFAULT_NODE, min=48, max=1 << 16, fuzz=(48, 4096),
                  doc="bytes per node (inner and leaf), from the memory layer; must hold "
                      f"at least {MIN_CAPACITY} entries of the key"),
        UNIQUE,
    )
    doc = ("A B+-tree over the layer below, its nodes blocks of the memory layer: inner nodes "
           "hold (key, reference) separators and child links, leaves hold (key, reference) "
           "entries in order and are linked both ways. Keys are copied into the nodes, so a "
           "search reads few cache lines and no elements; ties are ordered by reference. "
           "Equality and range retrieval in O(log n + k), scans in key order.")

    def op_errors(self, inst, op):
        return unique_errors(self, inst, op)

    def validate(self, inst, ctx):
        unique_validate(inst, ctx)
        if inst.key_field_obj is None:
            return
        g = geometry(inst)
        if min(g.leaf_cap, g.inner_cap) < MIN_CAPACITY:
            need = inst.params["node"]
            while True:
                need += 8
                g2 = geometry(inst, need)
                if min(g2.leaf_cap, g2.inner_cap) >= MIN_CAPACITY:
                    break
            ctx.error(f"btree node of {g.node} bytes holds {g.leaf_cap} entries per leaf "
                      f"and {g.inner_cap} separators per inner node of key "
                      f"'{inst.key_field_obj.name}' ({inst.key_field_obj.type.spelled()}); "
                      f"at least {MIN_CAPACITY} of each are needed: node >= {need}",
                      inst.param_pos("node"))

    def root_fields(self, inst):
        t = inst.tag
        return [ElemField("uint64_t", f"{t}_root", "memory reference of the root node (0: empty)",
                          ref="mem"),
                ElemField("uint64_t", f"{t}_height", "levels of nodes (0: empty, 1: a root leaf)"),
                ElemField("uint64_t", f"{t}_count", "entries in the leaves"),
                ElemField("uint64_t", f"{t}_gen", "changes made to the tree (for the walk hint)"),
                ElemField("uint64_t", f"{t}_spare", "first node of the pool of free nodes",
                          ref="mem"),
                ElemField("uint64_t", f"{t}_nspare", "nodes in the pool")]

    max_height = MAX_HEIGHT
    prefetch_ahead = PREFETCH_AHEAD

    def handle_fields(self, inst):
        # Where the last walk step ended, so the next step goes on from there rather than
        # descending again. Valid while neither this handle (`changes`, which an abort does
        # not roll back) nor the file (`_gen` in the root, which it does) has changed the
        # tree since.
        t = inst.tag
        return [ElemField("uint64_t", f"{t}_hint_leaf", "btree walk hint: the leaf (0: none)"),
                ElemField("uint64_t", f"{t}_hint_ref", "btree walk hint: the element there"),
                ElemField("uint64_t", f"{t}_hint_gen", "btree walk hint: the tree's _gen then"),
                ElemField("uint64_t", f"{t}_hint_changes", "btree walk hint: _changes then"),
                ElemField("uint64_t", f"{t}_changes", "btree: changes made through this handle"),
                ElemField("unsigned", f"{t}_hint_pos", "btree walk hint: the entry's position"),
                ElemField("unsigned", f"{t}_hint_run", "btree walk hint: the walk's steps so far "
                                                       f"(up to {PREFETCH_AHEAD}: how far ahead it prefetches)")]

    def geometry(self, inst) -> Geometry:
        return geometry(inst)

    def block_graphs(self, inst):
        # the tree from its root: every node's sibling links and entries' element
        # references, an inner node's children (followed); the pool from its first node:
        # each free node's `next` (followed; the rest of a free node is never read)
        from .base import BlockGraph
        p, node = inst.p, str(inst.params["node"])
        lf, inn = f"{p}_lf(db, m)", f"{p}_in(db, m)"
        inner = f"{lf}->level != 0"
        return [BlockGraph((f"{inst.tag}_root",), node, (
                    (f"&{lf}->prev", "1", "mem", False),
                    (f"&{lf}->next", "1", "mem", False),
                    (f"({inner} ? {inn}->ref : {lf}->ref)", f"{lf}->n", "elem", False),
                    (f"{inn}->child", f"({inner} ? {lf}->n + 1u : 0u)", "mem", True))),
                BlockGraph((f"{inst.tag}_spare",), node, (
                    (f"&{lf}->next", "1", "mem", True),))]

    def paths(self, inst, query):
        """Costs in cache-line reads (layers/base.py, COST_UNIT): a descent reads `height`
        nodes of `lines_per_node` lines each, and the element it finds one more line. A
        range then reads each element in it once, and a leaf line every few entries: a
        step on (`_range_next`) goes on from where the step before ended (the walk hint),
        without descending again."""
        n = query.n
        g = geometry(inst)
        h = g.height(n)
        descent = h * g.lines_per_node()
        step = 1 + 1 / max(1.0, FILL * min(g.leaf_cap, CACHE_LINE / (g.key_size + g.link)))
        shape = (f"{h} levels of {g.node}-byte nodes ({g.leaf_cap} entries per leaf, "
                 f"{g.inner_cap + 1} children per inner node, {FILL:.0%} full), "
                 f"{g.lines_per_node():.1f} lines per node")
        return ordered_paths(self, inst, query, what=f"btree [{shape}]",
                             eq_cost=descent + 1,
                             range_cost=lambda nb: descent + n * range_selectivity(nb) * step,
                             scan_cost=descent + n * step)
