"""What every layer declares about itself: its realm signature, its parameters, the fields
it adds to elements and to the container root, and (for `ds` layers) what retrieving the
elements that satisfy a predicate would cost through it.

A layer is two files side by side in this folder: `<name>.py` (this signature, as a
subclass of `Layer`) and `<name>.c.j2` (the C it contributes, as a Jinja2 template).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Optional

REQUIRED = object()

REALMS = ("mem", "ds", "top", "rel")

# In a layer's `errors`: whatever the container's mem layers return when they cannot
# allocate (their "alloc" codes).
ALLOC = "alloc"


@dataclass(frozen=True)
class ParamSpec:
    """One layer parameter. kind: 'field' (a field of the element record), 'int', 'str',
    'bool', or 'choice' (one of `choices`, written as a bare name)."""
    name: str
    kind: str
    default: Any = REQUIRED
    doc: str = ""
    choices: tuple = ()
    min: Optional[int] = None
    max: Optional[int] = None
    field_kinds: tuple = ("int", "float", "char")  # for kind == 'field'
    # A default computed from the other parameters (by the layer's `validate`, where
    # `default` is None): how `p2gen layers` shows it.
    default_text: str = ""
    # int parameters: the (lo, hi) the spec fuzzer draws valid values from, where the
    # whole range [min, max] would make accepted specs impractical to build or open
    # (tests/fuzz/specgen.py); empty: [min, max]
    fuzz: tuple = ()
    # Is the parameter named where the generated code and messages describe the layer
    # when it has its default value? False for parameters added after files and code were
    # made without them, so that their descriptions stay as they were.
    show_default: bool = True
    # kind 'field': may the value be a composite key, `key = (a, b)` (two or more integer
    # or char[N] fields, ordered lexicographically)? The layer's template then handles a
    # key whose type is a `CompositeType` (layers/README.md, "Composite keys").
    composite: bool = False

    @property
    def fuzz_range(self) -> tuple:
        return self.fuzz or (self.min, self.max)

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    def describe(self) -> str:
        if self.kind == "choice":
            t = "|".join(self.choices)
        elif self.kind == "field":
            t = "field|(field, field, ...)" if self.composite else "field"
        else:
            t = self.kind
        if self.required:
            d = ""
        elif self.default_text:
            d = f" = {self.default_text}"
        elif isinstance(self.default, bool):
            d = f" = {'true' if self.default else 'false'}"
        elif isinstance(self.default, str):
            d = f' = "{self.default}"' if self.kind == "str" else f" = {self.default}"
        else:
            d = f" = {self.default}"
        return f"{self.name}: {t}{d}{'' if not self.required else ' (required)'}"


@dataclass
class ElemField:
    """A field a layer adds to each stored element (named after the layer) or to the root.

    `weak`: a block reference or a capacity. The integrity check follows it only as far as
    the memory layer's bounds allow, so a corrupted value that still lies in bounds may go
    unreported (class O of `p2gen verify --map`); every other field -- links, flags,
    counts -- is one whose corruption the check always reports (class L)."""
    ctype: str
    name: str
    why: str
    weak: bool = False
    # Does the field hold a reference, and to what: "elem" (an element reference of the
    # container's storage; for a relationship's role field, of the partner's), "mem" (a
    # memory reference: a block of the memory layer), or None (no reference: a count, a
    # flag, a key). A field whose type comes from `link_ctype` is an element link unless it
    # says otherwise, so a link a layer declares the usual way needs nothing more; a
    # 64-bit root field holding a reference, and a block reference, say so here. A memory
    # whose references are addresses (`mapped`) relocates exactly these fields
    # (`pointer_map`), so an undeclared reference would be left pointing at the old place
    # (which the integrity check at open then reports).
    ref: Optional[str] = None

    @property
    def refers(self) -> Optional[str]:
        """What the field references ("elem", "mem") or None (see `ref`)."""
        if self.ref is not None:
            return self.ref or None
        return "elem" if isinstance(self.ctype, LinkCType) else None


@dataclass
class SlotMap:
    """The bytes of a storage layer's slot block, beyond the fields of its live elements,
    that the integrity check judges (`p2gen verify --map`): the slots from root field
    `first` (None: slot 0) up to root field `end`. In a slot whose element field `flag` is
    set -- in every slot, if there is no flag -- the element fields `fields`, as
    (field, what) pairs, `field` spelled from the element (`_t_valid`, `rec.id`); in a slot
    whose flag is clear, or in every slot if `fields` is empty, the whole slot (`whole`
    says what it is: it must be all zero). The storage's own element fields are then
    mapped here rather than on the live elements."""
    end: str
    first: Optional[str] = None
    flag: Optional[str] = None
    fields: tuple = ()
    whole: str = ""


@dataclass
class BlockGraph:
    """Blocks of the memory that a layer links among themselves, reached from its root (a
    tree's nodes, a pool of free nodes): where the references in each block lie, for the
    relocation of a memory of addresses (`pointer_map`), which walks them from `starts`.
    C expressions, with `db` in scope and `m` the memory reference of the block at hand
    (already moved):
      starts: root fields holding the memory references the walk starts from;
      size:   bytes of a block (the walk reads no block `_contains` does not accept);
      words:  (address of the first word, number of words, kind, follow): a run of
              references inside the block, of kind "mem" (memory references) or "elem"
              (element references of the container's storage); `follow`: they are memory
              references of more blocks of this graph. A run that would reach past the
              block (a damaged count) is left alone."""
    starts: tuple
    size: str
    words: tuple


@dataclass
class PathOption:
    """One way a ds layer can retrieve the elements satisfying a cursor's predicate.

    kind: 'scan' (every element; `ordered_by` set if it comes out in key order),
          'eq'   (elements whose key equals `eq`),
          'range'(elements in key order from `lo` to `hi`, either bound optional).
    `consumed` are the conjuncts the path guarantees; the rest is the residual filter.
    """
    layer: Any                 # LayerInstance
    kind: str
    cost: float
    why: str
    ordered_by: Optional[str] = None
    eq: Any = None             # Conjunct
    lo: Any = None             # Conjunct with op > or >= (or ==)
    hi: Any = None             # Conjunct with op < or <= (or ==)
    consumed: list = field(default_factory=list)
    # set by the planner for a cursor ordered `desc`: the walk runs from the last element
    # in key order down (`_range_last` / `_range_prev`; the cursor stops at `lo`)
    descending: bool = False
    # A composite key (a, b, c): `prefix` holds the equality conjuncts on its leading
    # fields, in key order (all of them for an equality on the whole key: then `eq` is
    # None and, for a range, `lo` and `hi` too); `lo` and `hi` are then on the next field.
    # `fixed`: the fields the prefix fixes, so a walk is also in their order (trivially).
    prefix: list = field(default_factory=list)
    fixed: tuple = ()


# The unit of every PathOption.cost: cache lines read (an estimate), the cost that dominates
# a lookup in memory. An element read is one line; a hash probe a bucket and the element
# (1.5 with chains of about half an element); a binary-tree or binary-search step one line
# per level; a B-tree node the lines its binary search touches. `p2gen explain` prints
# costs with this unit and the container sizes they assume.
COST_UNIT = "cache-line reads"
CACHE_LINE = 64


def line_slots_param(word: str) -> ParamSpec:
    """`slots = packed | line` of a slot storage (array, iarray), whose per-slot word (its
    free-list word, its valid flag) `word` names. With `line` the storage leads its
    elements (Layer.leads_element: `leads_line_slots`)."""
    return ParamSpec("slots", "choice", "packed", choices=("packed", "line"), show_default=False,
                     doc="packed: slot after slot, each the element's size, the other layers' "
                         f"links first; line: each slot padded to whole 64-byte cache lines, the "
                         f"slot's {word} and the record first, the other layers' links after the "
                         f"record, so that `_at` reads the {word} and the record's first fields on "
                         "one line (packed, some slots put them on two, and an access then waits "
                         "on two cache misses), at the cost of the padding. Lines are lines of "
                         "memory where the block starts on one: a file's slot blocks over 2 KiB "
                         "and the heap's of 4 MiB and up do")


def leads_line_slots(inst) -> bool:
    """Layer.leads_element of a storage with line_slots_param: line slots lead."""
    return inst.params["slots"] == "line"


def log2n(n: float) -> float:
    return math.log2(max(n, 2.0))


class Layer:
    """Base of all layers. Subclasses set the class attributes and override hooks."""
    name: str = ""
    realm: str = ""                  # the realm this layer exports
    below: Optional[str] = None      # the realm it needs below it, or None (bottom layer)
    role: str = ""                   # 'mem' | 'storage' | 'index' | 'top'
    params: tuple = ()
    doc: str = ""
    # storage layers: do element references survive inserts and deletes of other elements?
    stable_refs: bool = True
    # ds layers: does a walk through this layer come out in the order of its key field (so
    # a cursor served by it may `order by` that field)? As its `paths` offer: ordered_by.
    keeps_order: bool = False
    # ds layers that keep order: does the layer offer the reverse walk of its ranges
    # (`_range_last` / `_range_prev`, layers/README.md), so that a cursor may
    # `order by` its key `desc`?
    reverse_walk: bool = False
    # storage layers: can an update put the element at another reference (`_moves`)?
    relocates: bool = False
    # top layers: may cursors declared on the container carry a where-clause?
    qualifies: bool = False
    # top layers: does delete only mark the element, leaving it in every structure below
    # until a purge removes it through the layer below? Such a layer counts on the layers
    # below it to remove for real, so the checker allows at most one per equation.
    defers_delete: bool = False
    # Why the references this layer stores cannot all be found from its declarations
    # (`ElemField.refers`, `reference_blocks`, `role_reference_blocks`), or "": they can.
    # A memory that relocates its references by those declarations (`mapped(relocate =
    # true)`, `pointer_map`) refuses a container with such a layer, giving this reason.
    unmapped_refs: str = ""
    # storage layers: is an element's reference its memory reference (a pointer or a file
    # offset, so references of live elements are spread over the address range) rather
    # than a slot number (0, 1, 2, ... up to the capacity)?
    addressed_refs: bool = False
    # ds layers: does the layer hold at most one element per value of its key field (an
    # insert or update to a key already present is refused with P2_EDUP)?
    unique_key: bool = False
    # ds, top and rel layers: does the layer store every reference it keeps in memory
    # (element links, blocks of element references, memory references in elements) in
    # the link width of the container's mem layer (`LK` in its template: layers/README.md,
    # "Link width")? A layer that does not is refused over a memory whose links are
    # narrower than 64 bits. Layers that keep no such reference per element (slot
    # storage, whose links are 32-bit slot numbers already) say True too.
    narrow_links: bool = False
    # The error codes (P2_* names of p2_runtime.h) this layer's own functions return, beside
    # P2_OK, per operation of the C contract below: "insert", "update", "remove",
    # "reserve"; for top layers also "cursor_update" and "cursor_delete" (what the cursor's
    # own bookkeeping adds); for mem layers "alloc" (_alloc and _realloc). ALLOC in a set
    # stands for the "alloc" codes of the container's mem layers: the layer allocates.
    # The generated header documents, for each function of a container's API, the union
    # over the layers of its equation (generator/render.py, api_errors). Override
    # `op_errors` when the codes depend on the layer's parameters or neighbours.
    errors: dict = {}
    # The version of the layout of the fields this layer adds to elements and roots, and of
    # what they mean. 1 is the first; a layer whose fields change (a new link, a field that
    # means something else) counts up, and every file with the layer in one of its
    # equations then gets another fingerprint (generator/check.py, fingerprint), so a file
    # written with the older layout is refused at open rather than misread.
    layout: int = 1

    @property
    def template(self) -> str:
        return f"{self.name}.c.j2"

    def signature(self) -> str:
        below = f"[{self.below}]" if self.below else ""
        return f"{self.name}: {self.realm}{below}"

    # -- hooks ---------------------------------------------------------------
    def validate(self, inst, ctx) -> None:
        """Extra semantic checks; call ctx.error(message, pos) to report."""

    def elem_fields(self, inst) -> list[ElemField]:
        return []

    def root_fields(self, inst) -> list[ElemField]:
        return []

    def handle_fields(self, inst) -> list[ElemField]:
        """Fields the layer keeps in the database handle (`db-><container>__<name>`):
        state of this open only, zeroed at open, never in a file (a cache, a hint)."""
        return []

    def mirrors_root(self, inst) -> bool:
        """Does the layer keep copies of root fields in the handle (its `handle_fields`),
        which its template's `<L.p>_refresh(db)` reloads from the root? The layer calls it
        itself after each change of those root fields; the pipeline calls every one of a
        container's (`<container>__refresh`) wherever the memory changed behind the layers:
        at open, after an abort, after a relocation moved the root's words."""
        return False

    def reference_blocks(self, inst) -> list[tuple[str, str]]:
        """Blocks of 8-byte references the container root points at, every one of which the
        integrity check reads: (root field holding the block's memory reference, root field
        holding its length in references). For `p2gen verify --map`."""
        return []

    def column_blocks(self, inst) -> list[tuple[str, str, str, str]]:
        """Blocks of fixed-size entries the container root reaches, every byte of which
        the integrity check judges (entries of live elements against the elements, the
        rest must be zero): (C expression of the first entry's address, C expression of
        the number of entries, C expression of one entry's size, what it is), with `db`
        and the container's root `r` in scope, evaluated after the check passed.
        For `p2gen verify --map`."""
        return []

    def leads_element(self, inst) -> bool:
        """Storage layers: do the layer's own element fields and the record come first in the
        element, ahead of the other layers' and the relationships' fields (which then follow
        the record)? The default order puts links first, so that an index reaching an
        element reads its link and the record's first fields together; a storage that pads
        its slots to cache lines (`slots = line`) puts its liveness flag and the record at
        the start of a line instead, so that `_at` and the fields it returns share one."""
        return False

    def slot_map(self, inst) -> Optional[SlotMap]:
        """Storage layers: what of the slot block the integrity check judges (SlotMap)."""
        return None

    def block_graphs(self, inst) -> list:
        """Blocks the layer links among themselves (BlockGraph), whose references a memory
        of addresses relocates by walking them from the root."""
        return []

    def key_field(self, inst) -> Optional[str]:
        """The element field this layer organises elements by, if any; for a composite key
        `key = (a, b)`, its name (`a_b`: the fields joined by '_')."""
        k = inst.params.get("key")
        if isinstance(k, tuple):
            return "_".join(k)
        return k if isinstance(k, str) else None

    def key_bound(self, inst) -> Optional[int]:
        """The largest key this layer accepts (a larger one, or one below 0, is refused
        with P2_ERANGE), or None if it takes any key."""
        return None

    def paths(self, inst, query) -> list[PathOption]:
        """Ways to serve `query` (a generator.plan.Query) through this layer."""
        return []

    def not_applicable(self, inst, query) -> Optional[str]:
        """Why this layer offers no path for the query (for `explain`)."""
        return None

    def op_errors(self, inst, op: str) -> frozenset:
        """The codes this instance's functions for `op` return beside P2_OK (see `errors`)."""
        return frozenset(self.errors.get(op, ()))


# `unique = true` on an index layer: at most one element per key value. An insert, or an
# update to a key another element has, is refused with P2_EDUP before anything changes;
# the container then has <container>_upsert (insert or replace by that key). Not shown
# where it is false, so descriptions and fingerprints of existing equations stay.
UNIQUE = ParamSpec("unique", "bool", False, show_default=False,
                   doc="at most one element per key (insert and update refuse a "
                       "duplicate with P2_EDUP); gives the container an upsert")


def unique_errors(layer, inst, op: str) -> frozenset:
    """A layer with `unique`: its errors, and P2_EDUP for insert and update when on."""
    codes = frozenset(layer.errors.get(op, ()))
    if inst.params.get("unique") and op in ("insert", "update"):
        codes |= {"P2_EDUP"}
    return codes


def unique_validate(inst, ctx) -> None:
    """`unique = true` under a layer that defers deletes (delflag) would keep a deleted
    element's key taken until the purge: refused."""
    if not inst.params.get("unique"):
        return
    purger = inst.container.purger
    if purger is not None:
        ctx.error(f"layer '{inst.name}' of container '{inst.container.name}' has unique = true "
                  f"under '{purger.name}', which only marks deleted elements until a purge: "
                  f"their keys would stay taken; drop one of the two",
                  inst.param_pos("unique"))


def key_prefix(inst, query) -> tuple:
    """For a layer with a composite key (a, b, c): the equality conjuncts on its leading
    fields (a == x and b == y: the longest run from the first field), and the fields of
    the key in order."""
    names = inst.key_field_obj.names
    prefix = []
    for n in names:
        eqs = [c for c in query.conjuncts_on(n) if c.op == "=="]
        if not eqs:
            break
        prefix.append(eqs[0])
    return prefix, names


def composite_eq_path(inst, query, cost: float, what: str) -> list[PathOption]:
    """An equality path on a whole composite key (every field fixed by an equality), as a
    hash table serves it; none if a field is not fixed."""
    prefix, names = key_prefix(inst, query)
    if len(prefix) < len(names):
        return []
    text = " and ".join(c.text for c in prefix)
    return [PathOption(inst, "eq", cost, f"{what}: {text} picks one bucket "
                                         f"(key ({', '.join(names)}))",
                       consumed=list(prefix), prefix=list(prefix), fixed=names)]


def composite_ordered_paths(inst, query, *, eq_cost, range_cost, scan_cost,
                            what: str) -> list[PathOption]:
    """Paths of an ordered layer whose key is composite (a, b, c), kept in lexicographic
    order: equalities on a prefix of the fields (a == x, or a == x and b == y), with a
    range or nothing on the next field, walk one stretch of the order (the next field's
    order within it); a range on the first field alone a longer one; and the full scan
    in (a, b, c) order."""
    prefix, names = key_prefix(inst, query)
    key = inst.key_field_obj.text()
    out = []
    fixed = tuple(c.field for c in prefix)
    if len(prefix) == len(names):
        text = " and ".join(c.text for c in prefix)
        out.append(PathOption(inst, "range", eq_cost, f"{what}: {text} (key {key})",
                              ordered_by=names[-1], consumed=list(prefix),
                              prefix=list(prefix), fixed=fixed))
    else:
        nxt = names[len(prefix)]
        los = [c for c in query.conjuncts_on(nxt) if c.op in (">", ">=")]
        his = [c for c in query.conjuncts_on(nxt) if c.op in ("<", "<=")]
        lo = los[0] if los else None
        hi = his[0] if his else None
        bounds = [b for b in (lo, hi) if b is not None]
        if prefix or bounds:
            parts = [c.text for c in prefix] + [b.text for b in bounds]
            # an equality prefix narrows as an equality on a key does; a range on the
            # first field alone as a range does
            cost = eq_cost if prefix else range_cost(len(bounds))
            walk = f", in {nxt} order" if prefix else ""
            out.append(PathOption(inst, "range", cost,
                                  f"{what}: {' and '.join(parts)} (key {key}{walk})",
                                  ordered_by=nxt, lo=lo, hi=hi,
                                  consumed=list(prefix) + bounds, prefix=list(prefix),
                                  fixed=fixed))
    out.append(PathOption(inst, "range", scan_cost, f"{what}: full scan in {key} order",
                          ordered_by=names[0]))
    return out


def ordered_paths(layer: Layer, inst, query, *, eq_cost, range_cost, scan_cost,
                  what: str) -> list[PathOption]:
    """Paths of a layer that keeps its elements ordered by its key field: equality and
    ranges on the key, and an ordered full scan (which also serves `order by key`)."""
    if inst.key_field_obj is not None and inst.key_field_obj.type.kind == "composite":
        return composite_ordered_paths(inst, query, eq_cost=eq_cost, range_cost=range_cost,
                                       scan_cost=scan_cost, what=what)
    key = layer.key_field(inst)
    out = []
    eqs = [c for c in query.conjuncts_on(key) if c.op == "=="]
    los = [c for c in query.conjuncts_on(key) if c.op in (">", ">=")]
    his = [c for c in query.conjuncts_on(key) if c.op in ("<", "<=")]
    if eqs:
        c = eqs[0]
        out.append(PathOption(inst, "range", eq_cost, f"{what}: {key} == {c.value_text}",
                              ordered_by=key, lo=c, hi=c, consumed=[c]))
    if los or his:
        lo = los[0] if los else None
        hi = his[0] if his else None
        bounds = [b for b in (lo, hi) if b is not None]
        out.append(PathOption(inst, "range", range_cost(len(bounds)),
                              f"{what}: range "
                              + " and ".join(b.text for b in bounds),
                              ordered_by=key, lo=lo, hi=hi, consumed=bounds))
    out.append(PathOption(inst, "range", scan_cost, f"{what}: full scan in {key} order",
                          ordered_by=key))
    return out


# Selectivity guesses used by cost estimates (System R style): one open bound keeps a
# third of the elements, a closed range a quarter.
def range_selectivity(nbounds: int) -> float:
    return 1 / 3 if nbounds == 1 else 1 / 4


# Address space the files of one spec may reserve, each and together: x86-64 and arm64
# (4-level page tables) give a process 128 TiB; half leaves room for everything else.
MAX_RESERVE = 1 << 46


class MemLayer(Layer):
    """A layer of realm 'mem': the memory a container's elements, blocks and root live in.
    The C contract and what these attributes mean to the rest of p2gen are in
    layers/README.md ("The mem contract"). The checker, planner, renderer and tools ask a
    mem layer what it is through the attributes below, never by its name.

    A container's equation ends in a stack of mem layers: the bottom one owns the memory
    (its template writes the memory functions the layers above call through `M`); a mem
    layer over it (`below = "mem"`) acts on the whole file it is stacked on, and adds no
    memory functions of its own."""
    realm = "mem"
    role = "mem"
    # The parameter naming the file this memory is a segment of, or None: the memory is
    # not in a file (the heap). A layer with one is the bottom of a file's memory: every
    # container naming the same file shares one segment (db->seg[seg]), opened once.
    file_param: Optional[str] = None
    # With file_param: the parameter giving the bytes of address space the file's mapping
    # reserves (so it never moves), at most MAX_RESERVE for all files of a spec together;
    # and the parameter saying whether open walks an existing file with <prefix>_verify.
    reserve_param: Optional[str] = None
    verify_open_param: Optional[str] = None
    # Do the references stored in this memory mean the same after a close and a reopen in
    # another process (the root, elements and links are found again where they were)?
    # Only a memory in a file can: such a layer sets file_param too.
    survives_restart: bool = False
    # Does the layer allocate from the runtime's file segment allocator (p2_seg_alloc in
    # db->seg[seg]: 16-byte aligned blocks after the file header, below p2_seg_used)? A
    # layer above may then bound a memory reference by the segment without following it
    # (malloc's _valid); otherwise nothing bounds a reference but what the layer above
    # remembers itself.
    seg_allocator: bool = False
    # With seg_allocator: are the references offsets from the segment base, valid wherever
    # the file is mapped (True), or addresses base + offset, valid only where the file was
    # made (False: the memory's `_off(db, ref)` gives the offset, which is what a layer
    # bounds by the segment)? A layer that maps the file itself (the journal) needs True.
    maps_anywhere: bool = False
    # Does the layer give the files it is stacked on transactions: the spec's
    # <prefix>_begin, _commit and _abort (all files of the spec that have such a layer
    # commit together, each one atomically), and recovery of the last commit at open?
    transactions: bool = False
    # With transactions: is a transaction over several of the spec's files atomic across
    # them (their commits write every file or none; the layer's open then drops what
    # another file lacks), or only per file?
    spans_files: bool = False
    # With transactions: may several handles (processes) open the files at once, each
    # transaction checked at its commit against the others' (optimistic: an object
    # server's), rather than a second open being refused with P2_EBUSY?
    several_clients: bool = False
    # A public function <prefix>_<write_guard>(db) a binding calls before it writes
    # through a path of its own (the fast Python path), or None. The journal's: put its
    # page-fault handler back on top of one the host installed later.
    write_guard: Optional[str] = None
    # Must every write into the file be announced to the runtime (a record log, which logs
    # exactly the announced bytes)? Then the file's own mem layer's `_will_write` forwards
    # each announcement to the segment's write hook instead of compiling to nothing.
    write_intent: bool = False
    # A runtime function `fn(p2_seg *)` the generated API calls on entry to each public
    # function that reaches the memory (an object server's cache unpins what the previous
    # call touched: pointers stay valid until the next call), or None: nothing to call.
    call_enter: Optional[str] = None
    # Does the memory take only storage that gives each element a block of its own
    # (`addressed_refs`: malloc)? An object server's unit is the block: storage keeping a
    # whole container in one (array, iarray, qsort) is refused under it, naming malloc.
    block_per_element: bool = False
    # Files the layer keeps beside the data file F, as {suffix: what}: F + suffix is its
    # `what` (the journal's: {"-journal": "journal"}; runtime/p2_runtime.c names them).
    # The checker refuses a data file whose name ends in any registered layer's suffix.
    side_files: dict = {}
    # What the layer needs of the mem layer directly below it: attributes of that layer's
    # signature that must be true (or set), e.g. ("file_param",): a memory in a file.
    # The checker refuses a stack that breaks this, naming the registered layers that
    # would do and giving `requires_why`: (what the layer does, what goes wrong without).
    requires_below: tuple = ()
    requires_why: tuple = ("", "")
    # The parameter choosing how wide the references stored in this memory are (the link
    # width: `link_bits`), or None: always 64 bits.
    links_param: Optional[str] = None
    # The choice parameter of the file allocator's size classes (`alloc`: pow2 or exact,
    # runtime/p2_runtime.h section alloc), or None: the layer's blocks do not come from
    # the file segment allocator.
    alloc_param: Optional[str] = None
    # The bool parameter that makes an open relocate the file in memory when the address
    # range it records is taken (`mapped`'s `relocate`), or None; and the environment
    # variable that forces relocating P % of the file (1 to 100) in an open with it on, for
    # measurements and tests (the differential matrix runs such a memory with it at 100).
    relocate_param: Optional[str] = None
    relocate_env: Optional[str] = None

    # With file_param: is its value the URI of a server (`pageserver`) rather than a path?
    # Then it is not normalised as a path, nor joined to the directory given to open.
    file_is_uri: bool = False
    # With file_param: is the memory a local file the runtime maps itself (persistent,
    # mapped), which a layer over it may map again its own way (the journal maps it
    # privately)? False for a memory on a server.
    local_file: bool = False
    # With file_is_uri: the parameter naming the second export a journal or wal over this
    # memory keeps its log on (`pageserver(log = ...)`), or None: no transactions over it.
    log_param: Optional[str] = None

    @property
    def logs_below(self) -> bool:
        """May a journal or wal stack on this memory: a local file it maps itself, or a
        server memory whose log goes on another export?"""
        return self.local_file or self.log_param is not None

    @property
    def in_file(self) -> bool:
        return self.file_param is not None

    def link_bits(self, inst) -> int:
        """How many bits each reference the layers above store in this memory takes: 64
        (the reference as it is) or 32 (layers/README.md, "Link width")."""
        return 64

    def link_limit(self, inst) -> Optional[int]:
        """The most bytes the memory may hold with the instance's link width (a memory
        reference must fit its stored form), or None: no limit beyond the reserve."""
        return None

    def explain_file(self, inst) -> Optional[str]:
        """A layer over a file: what `p2gen explain` says it does to the file (one line,
        after `file <path>: `), or None."""
        return None


class Links:
    """How the references a container's layers keep in its memory are stored: the `LK` of
    their templates (layers/README.md, "Link width"). In registers and in the C API a
    reference is a uint64_t; only its stored form narrows. With 64-bit links every
    helper gives back the expression it is handed, so the generated C is what it was
    before link widths were a choice.

    Three kinds of reference, each with its own stored form at 32 bits:
      element references of slot storage (slot numbers; `addressed = False`): as they
        are, P2_NIL as UINT32_MAX (slot counts are below 2^32 - 1);
      element references of addressed storage (memory references) and memory references
        (blocks): the offset >> 3 (the file allocator aligns every block to 16 bytes),
        P2_NIL as UINT32_MAX, 0 (none) as 0.
    """

    def __init__(self, mem, addressed: bool):
        self.bits = mem.layer.link_bits(mem)
        self.mp = mem.p
        self.addressed = addressed

    @property
    def narrow(self) -> bool:
        return self.bits < 64

    @property
    def t(self) -> str:
        """The C type of a stored link."""
        return "uint64_t" if not self.narrow else "uint32_t"

    # what the helpers return: the renderer makes it its type of template-made C (so
    # `*link` prints, where text from a spec could not)
    code = str

    def _wrap(self, fn: str, expr: str) -> str:
        return self.code(expr if not self.narrow else f"{self.mp}_{fn}({expr})")

    def get(self, expr: str) -> str:
        """The element reference stored in link `expr` (P2_NIL where it is none)."""
        return self._wrap("addr_get" if self.addressed else "slot_get", expr)

    def put(self, expr: str) -> str:
        """The stored form of element reference `expr` (P2_NIL allowed)."""
        return self._wrap("addr_put" if self.addressed else "slot_put", expr)

    def mget(self, expr: str) -> str:
        """The memory reference (a block; 0 = none) stored in link `expr`."""
        return self._wrap("mref_get", expr)

    def mput(self, expr: str) -> str:
        """The stored form of memory reference `expr`."""
        return self._wrap("mref_put", expr)


def container_links(info) -> Links:
    """The links of container `info`'s layers (element references of its storage)."""
    return Links(info.mem, info.storage.layer.addressed_refs)


class LinkCType(str):
    """The C type of a stored link, as `link_ctype` gives it: prints as the type itself, and
    tells `ElemField.refers` that a field of this type is an element link."""


def link_ctype(info) -> str:
    """The C type of a link stored in container `info`'s memory (an `ElemField` of this
    type is an element link: `ElemField.refers`)."""
    return LinkCType(container_links(info).t)


class RelLayer(Layer):
    """A layer of realm 'rel': stores one relationship between the elements of two
    containers (or of one, with two roles). It adds link fields to the elements of both
    ends (`role_fields`) and renders, for each role, the functions the public API calls:

      <ip>_init(db, x)          a new element: no partners
      <ip>_unlink(db, x)        x is being deleted: detach it from every partner
      <ip>_free(db, x)          transient close: free what x holds (no partner update)
      many roles:  <ip>_count(db, x), <ip>_add(db, x, y), <ip>_remove(db, x, y),
                   <ip>_iter_open(db, x, &a, &b), <ip>_iter_next(db, &a, &b) -> y or P2_NIL
      one roles:   <ip>_get(db, x) -> y or P2_NIL, <ip>_set(db, x, y) (P2_NIL clears)

    Both directions are kept in step by every call: adding y to x.role also makes x
    y's partner, with the multiplicity of a bag.

    `errors` (as for the other layers) holds, per function, the codes beside P2_OK that
    <ip>_add ("add"), <ip>_remove ("remove") and <ip>_set ("set") return. ALLOC in a set
    stands for the "alloc" codes of the memory layers of the containers whose elements
    hold blocks of this relationship's references (`role_owns_block`), at either end: the
    call may grow them. <ip>_remove fails only when x does not hold y, which the public
    function reports as P2_NOTFOUND, so "remove" can only hold P2_NOTFOUND. Override
    `role_errors` when the codes depend on the role."""
    realm = "rel"
    below = None
    role = "rel"
    kinds: tuple = ("1:1", "1:N", "M:N")
    # may the member a walk of a role (<ip>_iter_next) last handed out be removed from the
    # role, or deleted, before the walk goes on? Otherwise any change to the owner's
    # members during a walk may make it skip or repeat members.
    walk_survives_removal: bool = False
    # can a collection role be kept in the order of a field of its members (`order by`)?
    # Such a layer renders, for an ordered role, <ip>_iter_open_at(db, x, &a, &b, rev,
    # has_lo, lo, has_hi, hi) / <ip>_iter_step(db, &a, &b) and keeps the order under
    # <ip>_reorder(db, y) (y's ordering field changed).
    orders: bool = False

    def unsupported(self, ri) -> Optional[str]:
        if ri.kind not in self.kinds:
            return (f"layer '{self.name}' stores {' and '.join(self.kinds)} relationships "
                    f"only")
        return None

    def role_fields(self, role) -> list[ElemField]:
        return []

    def role_errors(self, role, op: str) -> frozenset:
        """The codes <ip>_<op> of `role` returns beside P2_OK (see `errors`)."""
        return frozenset(self.errors.get(op, ()))

    def role_owns_block(self, role) -> bool:
        return False

    def role_reference_blocks(self, role) -> list[tuple[str, str]]:
        """Blocks of 8-byte references an element of the role points at, all read by the
        integrity check: (element field of the block's memory reference, element field of
        its length). For `p2gen verify --map`."""
        return []

    def role_cost(self, role) -> str:
        """What reaching and changing this role costs, for `explain`."""
        return ""


@dataclass
class PointerMap:
    """Where the addresses stored for one container lie, for a memory whose references are
    addresses (`mapped`), derived from what the container's layers declare for the
    integrity check and the link width (`ElemField.refers`, `reference_blocks`,
    `role_reference_blocks`) and from the record (`ref` fields, `text` handles): never a
    list kept by hand, so a link a layer adds is mapped as soon as it is declared.
      root:   root fields holding an address;
      elem:   members of the element (as `e->...` spells them) holding an address;
      blocks: (root field of a block, root field of its length) -- blocks of element
              references that are addresses (a hash's buckets over addressed storage);
      vecs:   (element field of a block, element field of its length) -- per element
              blocks of addresses (a relationship's references to addressed elements);
      addressed: the container's own element references are addresses (its elements are
              blocks of the memory, reached by following them);
      graphs: (BlockGraph, words that are addresses) -- blocks a layer links among
              themselves (a tree's nodes), walked from root fields.
    `unmapped` names a layer whose references are not all declared (and why), else ""."""
    info: Any
    root: list
    elem: list
    blocks: list
    vecs: list
    addressed: bool
    unmapped: str = ""
    graphs: list = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.root or self.elem or self.blocks or self.vecs or self.graphs)


def _addressed(info) -> bool:
    """Are the element references of container `info` memory references (addresses, in a
    memory of addresses), rather than slot numbers?"""
    return bool(info.storage.layer.addressed_refs)


def pointer_map(info, containers) -> PointerMap:
    """The PointerMap of container `info` in a memory whose memory references are
    addresses; `containers` are the spec's containers (a `ref` field names its target)."""
    by_name = {c.name: c for c in containers}

    def is_addr(kind, target) -> bool:
        return kind == "mem" or (kind == "elem" and _addressed(target))

    root, elem, blocks, vecs, graphs, why = [], [], [], [], [], ""
    for li in info.chain:
        if li.layer.unmapped_refs and not why:
            why = f"layer '{li.name}' of container '{info.name}': {li.layer.unmapped_refs}"
        block_fields = {b for b, _n in li.layer.reference_blocks(li)}
        for f in li.layer.root_fields(li):
            kind = "mem" if f.name in block_fields else f.refers
            if is_addr(kind, info):
                root.append(f.name)
        for f in li.layer.elem_fields(li):
            if is_addr(f.refers, info):
                elem.append(f.name)
        if _addressed(info):
            blocks += list(li.layer.reference_blocks(li))
        for g in li.layer.block_graphs(li):
            graphs.append((g, [w for w in g.words if is_addr(w[2], info)]))
    for role in info.roles:
        partner = role.partner.container
        vec_fields = {b for b, _n in role.rel.layer.role_reference_blocks(role)}
        for f in role.rel.layer.role_fields(role):
            kind = "mem" if f.name in vec_fields else f.refers
            # a role's element link names the partner's elements or, along a list of
            # members (ilist), its own container's: either may be addressed (a word that
            # holds a slot number is never in the range p2_reloc_word moves)
            if is_addr(kind, partner) or is_addr(kind, info):
                elem.append(f.name)
        if _addressed(partner):
            vecs += list(role.rel.layer.role_reference_blocks(role))
    for f in info.record.fields:
        if f.type.kind == "text":
            elem.append(f"rec.{f.name}.mref")
        elif f.type.target in by_name and _addressed(by_name[f.type.target]):
            elem.append(f"rec.{f.name}")
    return PointerMap(info, root, elem, blocks, vecs, _addressed(info), why, graphs)
