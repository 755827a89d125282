"""`p2gen tune`, step 2: the candidates of a container, sized from its profile, ranked by
the planner's costs extended to the workload.

A candidate is a stack of the relevant space (tune_space.Space) with the parameters that
matter and are cheap to choose: a hash's buckets sized to the profile's largest count (and
`fn = identity` beside the default hash on an integer key), an iarray's capacity and
max_key from the key's range (iarray is left out where the keys are negative or sparse:
its slot block would be mostly empty), the other storages' capacity from the largest count
(no growth while loading), and `slots = packed | line` of the slot storages.

Its predicted cost is, per operation the profile counted, count x the cost of that
operation through the candidate at the profile's n (cache-line reads, layers/base.py
COST_UNIT): a find or cursor walk costs its path through the layer plan.plan_cursor
chooses (by the planner's own costs, as the generated code does), priced with the real n
rather than the planner's default (a walk's rows after the first cheaper on a btree, whose
walk prefetches, and a sorted array, whose rows are consecutive: ROW_COST); an insert or delete
pays every ds layer's maintenance (an
ordered layer its descent, a hash its bucket, a btree its descent through nodes of its
`node` bytes and the shift of half a leaf, odlist and qsort their shift); an update that
changes a key pays it on the layers keyed on a key field; get/at/other updates read or
write one element.

Layout: an element's bytes (the record, each layer's links in the file's link width, the
relationships' fields; a malloc block rounded up by the file's `alloc` classes; line slots
whole lines) set what a scan pays: a walk of every element (`all`, or a planned scan path)
reads bytes / 64 lines per element, streamed over an array or iarray (STREAMED). Relationships (the workload's `relationships`: per relationship its walks,
rows, adds and removes) pay their layer's costs (`rel_costs`): an ilist walk chases one
dependent line per member; a refarray reads its block of references (independent loads of
the members) but searches it to remove.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Optional

from .check import check
from .errors import P2Error
from .layers import LAYERS
from .layers.base import container_links, log2n
from .parser import parse
from .plan import Query, conjuncts_of, simple_conjunct, size_estimate
from .tune_space import Space, Stack, _decl_span

HASH_LOAD = 1.0           # elements per bucket the sizing aims at
STORAGE = "storage"       # Candidate.params' key of the storage's parameters
IARRAY_SPARSE = 4         # key range / n above which iarray's slot block is mostly empty
BTREE_NODES = (256, 1024, 4096)   # a btree's node sizes tried (bytes; 1024 its default)
LINE = 64                 # bytes per cache line


@dataclass
class Candidate:
    """One equation of the container: `params` per layer (beside the stack's key)."""
    stack: Stack
    params: dict = field(default_factory=dict)     # index position or STORAGE -> {param: text}
    equation: str = ""
    cost: float = 0.0                              # predicted, COST_UNIT
    per_op: dict = field(default_factory=dict)     # op -> predicted cost (count x cost)
    current: bool = False                          # the spec's own equation
    canonical: str = ""                            # as the checker prints it (dedup)
    find_keys: frozenset = frozenset()             # the keys with a find function

    edits: str = ""                                # the spec's other lines it changes, in words

    @property
    def label(self) -> str:
        """The equation, and the edits beyond the declaration (file options, relationships)."""
        return f"{self.equation} (with {self.edits})" if self.edits else self.equation


def _layer_text(name: str, given: list) -> str:
    return f"{name}({', '.join(given)})" if given else name


def equation_of(space: Space, cand: Candidate) -> str:
    """The candidate's equation: the spec's tops and memory around its indexes and storage,
    each with its key and the sized parameters."""
    parts = space.tops + _layer_texts(cand) + space.mems_of(cand.stack.file_opts)
    text = parts[-1]
    for p in reversed(parts[:-1]):
        text = f"{p}[{text}]"
    return text


def _has_param(layer: str, name: str) -> bool:
    return any(p.name == name for p in LAYERS[layer].params)


def _pow2_at_least(n: float) -> int:
    return 1 << max(4, math.ceil(math.log2(max(n, 1))))


def _key_stats(cprof: dict, key: str) -> dict:
    return cprof.get("keys", {}).get(key, {})


def sized_variants(space: Space, stack: Stack, cprof: dict) -> list:
    """The candidates of one stack: its parameters sized from the profile; [] if the
    profile rules it out (iarray over negative or sparse keys)."""
    n = max(int(cprof.get("count_max", 0)), 1)
    variants: list = [{}]
    for i, ix in enumerate(stack.indexes):
        if ix.layer != "hash":
            continue
        sized = {"buckets": str(_pow2_at_least(n / HASH_LOAD))}
        f = space.info.record.field(ix.key[0]) if len(ix.key) == 1 else None
        choices = [sized]
        if f is not None and f.type.kind == "int" and f.type.target is None:
            choices.append({**sized, "fn": "identity"})
        variants = [{**v, i: c} for v in variants for c in choices]
    for i, ix in enumerate(stack.indexes):      # the node sizes the checker allows (Cards)
        if ix.layer == "btree":
            variants = [{**v, i: {"node": str(b)}} for v in variants for b in BTREE_NODES]
    if stack.storage == "iarray":
        ks = _key_stats(cprof, stack.storage_key)
        lo, hi = ks.get("min"), ks.get("max")
        if not isinstance(lo, int) or not isinstance(hi, int) or lo < 0 or \
                hi + 1 > IARRAY_SPARSE * n + 1024:
            return []
        cap = max(hi + 1, 16)
        max_key = min(2 * hi + 65536, 2 ** 32 - 3)
        for v in variants:
            v[STORAGE] = {"capacity": str(cap), "max_key": str(max_key)}
    elif _has_param(stack.storage, "capacity"):     # room for the largest count: no growth
        for v in variants:
            v[STORAGE] = {"capacity": str(_pow2_at_least(n))}
    if _has_param(stack.storage, "slots"):
        variants = [{**v, STORAGE: {**v.get(STORAGE, {}), "slots": s}}
                    for v in variants for s in ("packed", "line")]
    return [Candidate(stack, v) for v in variants]


# -- costs ---------------------------------------------------------------------------------

def _path_cost(li, cur, n: float, dense: frozenset = frozenset(), lines: float = 1.0,
               planner_n: Optional[float] = None) -> tuple:
    """(what `cur` costs at `n` elements through layer `li`, what the planner thinks it
    costs): the path the planner takes there, its cheapest by its own costs at its own
    size estimate (`planner_n`: plan.size_estimate) that honours the order asked for,
    priced at the real n with what the planner's costs leave out (a scan's element lines,
    ROW_COST, a hash's chains); (inf, inf): none. A candidate's cost of `cur` is then
    that of the layer plan.plan_cursor chooses by the planner's costs (`Workload.cost`),
    not the cheapest by these: the generated code walks the planner's choice."""
    simple = [c for c in (simple_conjunct(e) for e in conjuncts_of(cur.predicate)) if c]
    real = li.layer.paths(li, Query(n, simple, cur.order_by))
    planned = li.layer.paths(li, Query(planner_n or n, simple, cur.order_by))
    best = (math.inf, math.inf)
    for o, p in zip(real, planned):
        if cur.order_by and o.ordered_by != cur.order_by and cur.order_by not in o.fixed:
            continue
        if cur.descending and o.kind == "range" and not li.layer.reverse_walk:
            continue
        cost = o.cost * lines if o.kind == "scan" else o.cost
        if li.layer.name in ROW_COST and o.kind in ("range", "scan"):
            cost = _walk_rows(li, cost, n)
        cost = _hash_chain(li, cost, n, dense) if o.kind == "eq" else cost
        if round(p.cost, 6) < round(best[1], 6):
            best = (cost, p.cost)
    return best


# The rows of a walk after the first, in line reads (the planner's layer costs, shared,
# count each row one, as an avl's successor is: a dependent read). A btree walk prefetches
# each row's element PREFETCH_AHEAD entries ahead (layers/btree.py): its reads overlap,
# about 0.45 of a dependent read (21 against 42-50 ns a row measured there; bench
# tune-topk: 4.6 against 10 ns an avl row at n = 10,000). A sorted array's (qsort's) rows
# are consecutive elements, streamed: about 2 ns a row there, 0.2. Without these the model
# put avl first on range walks that a btree or qsort ran 1.5-2.9x faster.
ROW_COST = {"btree": 0.45, "qsort": 0.2}


def _descent(li, n: float) -> float:
    """Lines a walk reads before its first row: a btree's descent, a sorted array's binary
    search of its key column (as layers/btree.py and layers/qsort.py cost them)."""
    if li.layer.name == "btree":
        g = li.layer.geometry(li)
        return g.height(n) * g.lines_per_node()
    key = li.key_field_obj
    per_line = max(1, 64 // max(1, key.type.bits // 8)) if key is not None else 1
    return 0.9 * log2n(n / per_line)


def _walk_rows(li, cost: float, n: float) -> float:
    """A walk's cost with its rows after the first at ROW_COST of a line each."""
    rows = cost - _descent(li, n)
    return cost if rows <= 1 else cost - (rows - 1) * (1 - ROW_COST[li.layer.name])


def _hash_chain(li, cost: float, n: float, dense: frozenset = frozenset()) -> float:
    """A hash that does not grow walks chains of n / buckets elements; the identity hash
    of dense integer keys (`dense`: their range about n) fills one bucket each, in key
    order, with no hash to compute: half a line less."""
    if li.layer.name != "hash":
        return cost
    if li.params.get("fn") == "identity" and li.key_field_obj is not None and \
            li.key_field_obj.name in dense:
        cost -= 0.5
    if li.params.get("grow", True):
        return cost
    return cost + max(0.0, n / li.params["buckets"] / 2 - 0.5)


# A cache line moved by memmove costs about a twelfth of a line read one dependent read at
# a time (the unit of the costs): 0.7-0.9 ns against 8.5-25 ns, arrays of 112 KB and 1.1 MB,
# on the 2-core EPYC VM of bench/RESULTS.md.
SHIFT_LINE = 1 / 12


def _element_lines(info, li) -> float:
    """Cache lines of one element of a sorted array: its record's fields and its key in
    the key column."""
    size = sum(f.type.bits // 8 if f.type.kind != "char" else f.type.length
               for f in info.record.fields)
    key = li.key_field_obj
    return (size + (key.type.bits // 8 if key is not None and key.type.kind != "char" else 8)) / 64


def _maintenance(li, info, n: float, in_order: bool = False) -> float:
    """The cost of linking (or unlinking) one element in layer `li`; `in_order`: an insert
    whose key comes after every key there (the profile saw the inserts arrive in key
    order), which a sorted array appends: a binary search, nothing shifted."""
    name = li.layer.name
    if name == "qsort":
        search = 1 + log2n(n)
        if in_order:
            return search
        # the shift: half the elements and their keys moved by one memmove, whose lines
        # stream (SHIFT_LINE of a line read each), not n / 2 elements read one by one
        return search + n / 2 * _element_lines(info, li) * SHIFT_LINE
    if name == "odlist":
        return 1 + n / 2                 # the walk
    key = li.key_field_obj
    if key is None or name in ("iarray",):
        return 1.0
    if name == "hash":
        return _hash_chain(li, 2.0, n)
    if name == "avl":
        return 1 + log2n(n)
    if name == "btree":                 # the descent, then half a leaf shifted
        g = li.layer.geometry(li)
        return g.height(n) * g.lines_per_node() + 1 + g.node / (2 * LINE)
    return 2.0


def _ctype_bytes(ctype: str) -> int:
    t = str(ctype)
    if t.startswith("p2_text"):
        return 8 if t == "p2_text32" else 16
    m = re.search(r"(\d+)_t$", t)
    return int(m.group(1)) // 8 if m else 8


def _fields_bytes(fields) -> int:
    return sum(_ctype_bytes(f.ctype) for f in fields)


def element_bytes(li, info) -> int:
    """The bytes layer `li` adds to each element of `info`; the storage adds the record's
    and the relationships' (their role fields in this container)."""
    out = _fields_bytes(li.layer.elem_fields(li))
    if li is info.storage:
        out += sum(f.type.bits for f in info.record.fields) // 8
        out += sum(_fields_bytes(r.rel.layer.role_fields(r)) for r in info.roles)
    return out


# A scan of the storage in place (its `scan` path, or the `all` walk) reads the elements
# in address order: over a contiguous block (array, iarray) the hardware streams the
# lines, about STREAMED of a dependent line read each (scan/1e5: 3.0 ns a row of 104 bytes
# over an array, where a find through a hash reads its line in 45-50 ns; qsort's rows,
# ROW_COST, 0.2); malloc's blocks, reached through its element list, a dependent read each
# still. Line slots start each element on a line of its own: whole lines (5.2-6.5 ns a
# row there). Without this a btree's walk (ROW_COST) looked cheaper than the array's scan
# the planner takes, and the scan mix at 1e5 ranked its best 7th-9th.
STREAMED = {"array": 0.15, "iarray": 0.15}


def stored_lines(info, lines: float) -> float:
    """What visiting one element of `lines` lines costs in a scan of `info`'s storage."""
    st = info.storage
    if st.params.get("slots") == "line":
        lines = math.ceil(lines)
    return lines * STREAMED.get(st.layer.name, 1.0)


def block_bytes(size: int, info) -> int:
    """A malloc element's block from the file's allocator: pow2 (up to 2048 bytes) or the
    16-byte granule (`alloc = exact`)."""
    if info.storage.layer.name != "malloc" or info.file is None:
        return size
    if info.mem.params.get("alloc", "pow2") == "exact" or size > 2048:
        return -(-size // 16) * 16
    return 1 << max(4, math.ceil(math.log2(max(size, 1))))


# Cost of one relationship operation through each rel layer, in cache-line reads: an
# ilist walk step reads the next member (a dependent load: its link is in it), adding or
# removing rewrites the owner's and the neighbours' links; a refarray walk reads its block
# (width / 64 a member) and then each member, loads that do not wait on one another (half
# a dependent one), adds at the block's end (amortised growth) and searches it to remove.
def rel_costs(layer: str, width: int, k: float) -> dict:
    if layer == "ilist":
        return {"row": 1.0, "add": 3.0, "remove": 3.0}
    if layer == "refarray":
        return {"row": 0.5 + width / LINE, "add": 2.0, "remove": 1.0 + k / 2 * width / LINE}
    return {"row": 1.0, "add": 2.0, "remove": 2.0}


@dataclass
class Card:
    """What one layer instance contributes to a candidate's cost: its path cost for each
    find and walk it serves (op -> cost of one), the cost of linking an element into it
    (or unlinking it: maint; at an insert: insert), and whether it is keyed on a key field (a key update relinks it)."""
    paths: dict
    maint: float
    keyed: bool
    insert: float               # linking at an insert (cheaper than maint where keys come in order)
    bytes: int = 0          # what the layer adds to an element (the storage: the whole)
    scan: float = 0.0       # the storage: lines one element's visit reads in a walk of all
    planned: dict = field(default_factory=dict)   # op -> the planner's own cost of its path


class Workload:
    """The profile's view the costs need: n, the counts, the dense integer keys, the key
    fields of the spec's finds."""

    def __init__(self, space: Space, cprof: dict):
        self.cprof = cprof
        self.n = float(max(cprof.get("count_max", 0), 2))
        self.ops = cprof.get("ops", {})
        self.dense = frozenset(k for k, ks in cprof.get("keys", {}).items()
                               if isinstance(ks.get("min"), int) and isinstance(ks.get("max"), int)
                               and ks["max"] - ks["min"] + 1 <= 2 * self.n)
        self.key_fields = set()
        for k in space.info.keys():
            self.key_fields.update(getattr(k, "names", None) or (k.name,))
        self.finds = {k: ks["finds"] for k, ks in cprof.get("keys", {}).items() if ks.get("finds")}
        # the spec's cursors: a generated one (`all`: every element, whatever the
        # equation) is not planned and costs the same walk on every candidate
        declared = {c.name for c in space.info.cursors if not c.synthetic}
        self.walks = {c: cs["walks"] for c, cs in cprof.get("cursors", {}).items()
                      if cs.get("walks") and c in declared}
        # a generated cursor (`all`) visits every element: its rows pay the layout
        self.scan_rows = sum(cs.get("rows", 0) for c, cs in cprof.get("cursors", {}).items()
                             if c not in declared)
        self.rels = {r: v for r, v in cprof.get("relationships", {}).items()
                     if isinstance(v, dict)}

    def card(self, li, info) -> Card:
        """Layer `li` of checked container `info`, alone (a scan path pays the lines of
        the element as laid out with this layer and the storage)."""
        lines = max(1.0, (element_bytes(li, info) + (0 if li is info.storage else
                                                      element_bytes(info.storage, info))) / LINE)
        if li is info.storage:
            lines = stored_lines(info, lines)
        paths, planned = {}, {}
        curs = [(f"find_{key}", info.finds.get(key)) for key in self.finds]
        curs += [(f"walk_{name}", next((c for c in info.cursors if c.name == name and
                                        not c.synthetic), None)) for name in self.walks]
        for op, cur in curs:
            if cur is not None:
                c, p = _path_cost(li, cur, self.n, self.dense, lines, size_estimate(info))
                if c < math.inf:
                    paths[op], planned[op] = c, p
        k = li.key_field_obj
        keyed = k is not None and bool(set(getattr(k, "names", None) or (k.name,))
                                       & self.key_fields)
        ordered = k is not None and self.cprof.get("keys", {}).get(k.name, {}).get("in_order") is True
        card = Card(paths, _maintenance(li, info, self.n), keyed,
                    _maintenance(li, info, self.n, in_order=ordered), element_bytes(li, info),
                    planned=planned)
        if li is info.storage:
            card.scan = stored_lines(info, block_bytes(card.bytes, info) / LINE)
            for role in info.roles:
                self._rel_paths(card.paths, role.rel)
        return card

    def _rel_paths(self, paths: dict, ri) -> None:
        """The cost of one of each operation of the workload on relationship `ri` (its
        block in the width of the links of the container that holds many)."""
        counts = self.rels.get(ri.name)
        if not counts:
            return
        many = ri.left if ri.left.many else ri.right
        k = counts.get("rows", 0) / max(counts.get("walks", 0), 1)
        c = rel_costs(ri.layer.name, container_links(many.container).bits // 8, k)
        for op, what in (("walks", None), ("rows", "row"), ("adds", "add"),
                         ("removes", "remove")):
            if what and counts.get(op):
                paths[f"rel_{ri.name}_{op}"] = c[what]

    def cost(self, cand: Candidate, cards: list) -> Candidate:
        """Fill cand.per_op and .cost from its layers' cards (inf: an operation no layer
        serves)."""
        ops = self.ops
        link_all = sum(c.maint for c in cards)
        keyed = sum(c.maint for c in cards if c.keyed)
        per = {"insert": ops.get("insert", 0) * sum(c.insert for c in cards),
               "delete": ops.get("delete", 0) * link_all,
               "update_key": ops.get("update_key", 0) * (1 + 2 * keyed),
               "update_other": ops.get("update_other", 0) * 1.0,
               "get": ops.get("get", 0) * 1.0,
               "at": ops.get("at", 0) * 1.0}
        for op, count in [*((f"find_{k}", v) for k, v in self.finds.items()),
                          *((f"walk_{c}", v) for c, v in self.walks.items())]:
            # the layer the planner takes (cheapest by its costs; a tie: the outermost)
            taken = min(((round(c.planned[op], 6), i, c.paths[op])
                         for i, c in enumerate(cards) if op in c.paths), default=None)
            per[op] = count * (taken[2] if taken else math.inf)
        storage = cards[-1]
        row = storage.scan + sum(c.bytes for c in cards[:-1]) / LINE
        per["walk_all"] = self.scan_rows * row
        for op in {op for c in cards for op in c.paths if op.startswith("rel_")}:
            rel, what = op[4:].rsplit("_", 1)
            per[op] = self.rels[rel].get(what, 0) * min(c.paths[op] for c in cards
                                                         if op in c.paths)
        cand.per_op = {k: v for k, v in per.items() if v}
        cand.cost = sum(cand.per_op.values())
        return cand


def predicted(space: Space, cand: Candidate, cprof: dict,
              equation: Optional[str] = None) -> Candidate:
    """Fill cand.equation (`equation`, else the stack's with its parameters), .canonical,
    .find_keys, .per_op and .cost, from the whole candidate checked (raises P2Error if
    the checker refuses it)."""
    cand.equation = equation or equation_of(space, cand)
    checked = check(parse(candidate_text(space, cand), space.path))
    info = checked.container(space.name)
    cand.canonical = info.equation_text()
    cand.find_keys = frozenset(k.name for k in info.keys())
    w = Workload(space, cprof)
    return w.cost(cand, [w.card(li, info) for li in info.ds])


def candidate_text(space: Space, cand: Candidate) -> str:
    """The spec with the candidate's equation (the spec's own: its text as it is)."""
    return space.source if cand.current else space.spec_text(cand.equation, cand.stack)


def current_candidate(space: Space, cprof: dict) -> Candidate:
    """The spec's own equation (as written, its `with` folded onto one line), costed the
    same way."""
    start, end = _decl_span(space.source, space.info.decl)
    written = space.source[start:end - 1].split("=", 1)[1]
    cand = Candidate(Stack((), "", None), current=True)
    return predicted(space, cand, cprof, " ".join(written.split()))


class Cards:
    """Each layer's card from the spec with that layer alone over the storage (an index)
    or the storage alone, checked once per layer text: a candidate's cost is then its
    layers' cards combined, without checking it whole (the space's legality is predicted
    the same way, tune_space)."""

    def __init__(self, space: Space, w: Workload):
        self.space, self.w = space, w
        self._cache: dict = {}

    def _alone(self, parts: list, which: int, st: Stack) -> Card:
        """`st`: the file's options and (the storage's card) the relationships' layers."""
        key = (tuple(parts), which, st.file_opts, st.rels)
        if key not in self._cache:
            sp = self.space
            layers = sp.tops + parts + sp.mems_of(st.file_opts)
            text = layers[-1]
            for p in reversed(layers[:-1]):
                text = f"{p}[{text}]"
            info = check(parse(sp.spec_text(text, st), sp.path)).container(sp.name)
            self._cache[key] = self.w.card(info.ds[which], info)
        return self._cache[key]

    def of(self, cand: Candidate) -> list:
        layers = _layer_texts(cand)
        storage, st = layers[-1], cand.stack
        index_st = Stack((), "", None, st.file_opts)
        return [self._alone([t, storage], 0, index_st) for t in layers[:-1]] + \
            [self._alone([storage], -1, Stack((), "", None, st.file_opts, st.rels))]


def _layer_texts(cand: Candidate) -> list:
    """The candidate's ds layers as written, outermost first (the storage last)."""
    out = []
    for i, ix in enumerate(cand.stack.indexes):
        key = ix.key[0] if len(ix.key) == 1 else "(" + ", ".join(ix.key) + ")"
        given = [f"key = {key}"] + (["unique = true"] if ix.unique else [])
        given += [f"{k} = {v}" for k, v in cand.params.get(i, {}).items()]
        out.append(_layer_text(ix.layer, given))
    st = cand.stack
    given = [f"key = {st.storage_key}"] if st.storage_key else []
    given += [f"{k} = {v}" for k, v in cand.params.get(STORAGE, {}).items()]
    out.append(_layer_text(st.storage, given))
    return out


def ranked(space: Space, cprof: dict, find_keys: Optional[frozenset] = None) -> list:
    """Every candidate of the container's relevant space (legality predicted: tune_space)
    with the find functions `find_keys` (if given: another set is another API), cheapest
    first (ties: the order of the space). A layer the checker refuses alone drops the
    candidates it is in. A candidate that edits other lines (the file's options, a
    relationship's layer) is kept only where the costs see it gain on the same candidate
    without them: with nothing in the workload for them to change (no scans, no counts of
    that relationship) they would only crowd the top k with ties."""
    w = Workload(space, cprof)
    cards = Cards(space, w)
    declared = {k.name for k, _ in space.info.declared_finds}
    out, cost_of = [], {}
    for st in space.enumerate():
        keys = frozenset({"_".join(ix.key) for ix in st.indexes} | declared
                         | ({st.storage_key} if st.storage_key else set()))
        if find_keys is not None and keys != find_keys:
            continue
        for cand in sized_variants(space, st, cprof):
            try:
                layer_cards = cards.of(cand)
            except P2Error:
                continue
            cand.equation = equation_of(space, cand)
            cand.edits = space.describe_edits(st)
            cand.find_keys = keys
            w.cost(cand, layer_cards)
            if cand.cost < math.inf:
                out.append(cand)
                cost_of[_twin(cand)] = cand.cost

    def gains(c: Candidate) -> bool:
        """Cheaper than each twin with one kind of edit left out."""
        st = c.stack
        return all(c.cost < cost_of.get(_twin(c, **drop), math.inf) * (1 - 1e-9)
                   for drop, edited in (({"file_opts": ()}, st.file_opts), ({"rels": ()}, st.rels))
                   if edited)
    out = [c for c in out if gains(c)]
    out.sort(key=lambda c: c.cost)
    return out


def _twin(cand: Candidate, **stack) -> tuple:
    """A candidate's identity, with the stack's attributes `stack` given instead."""
    st = cand.stack
    return (st.indexes, st.storage, st.storage_key, stack.get("file_opts", st.file_opts),
            stack.get("rels", st.rels), repr(sorted(cand.params.items(), key=str)))


DISTINCT_ERROR = 0.065 * 2   # the profile's distinct estimate: HyperLogLog, 256 registers


def unique_would_open(space: Space, cprof: dict) -> list:
    """Notes for the evidence: each key of interest the spec does not declare unique whose
    profiled inserts looked distinct (the distinct estimate within twice its standard error
    of the inserts, every key a non-negative integer in a dense range), so that declaring
    `unique = true` on it would open iarray(key = K) to tuning. Semantics are the spec's:
    tune never makes a key unique itself."""
    out = []
    n = max(int(cprof.get("count_max", 0)), 1)
    for key in space.keys:
        if len(key) != 1 or key in space.unique:
            continue
        f = space.info.record.field(key[0])
        if f is None or f.type.kind != "int" or f.type.target is not None:
            continue
        ks = _key_stats(cprof, key[0])
        inserts, distinct = ks.get("inserts", 0), ks.get("distinct", 0)
        lo, hi = ks.get("min"), ks.get("max")
        if not inserts or not isinstance(lo, int) or not isinstance(hi, int) or lo < 0 or \
                hi + 1 > IARRAY_SPARSE * n + 1024:
            continue
        if abs(distinct - inserts) <= DISTINCT_ERROR * inserts:
            out.append(f"the profile saw {inserts:,} inserts and about {distinct:,} distinct "
                       f"{key[0]} (HyperLogLog, +-6.5%), from {lo:,} to {hi:,}: declaring "
                       f"`unique = true` on {key[0]} would let tune try iarray(key = {key[0]})")
    return out
