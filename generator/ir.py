"""The intermediate representation: a spec as the checker leaves it.

`check()` turns a parsed `Spec` (model.py) into a `CheckedSpec`: every container's equation
is a chain of `LayerInstance`s with resolved parameters (outermost first, the memory layer
last), every cursor a `CursorInfo` with typed run-time parameters, every relationship a
`RelInfo` with its two `RoleInfo`s, every database file a `FileInfo`. The planner
(plan.py) returns a copy whose `plans` maps each cursor to its access path; the renderer,
the Python binding, the harness, verify and recover read these forms and never change them.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

from .layers.base import Layer
from .model import CompositeKey, Container, Expr, Field, LayerApp, Pos, Record, Relationship, Spec


# ---------------------------------------------------------------------------
@dataclass(eq=False)
class LayerInstance:
    layer: Layer
    app: LayerApp
    container: "ContainerInfo"
    params: dict = field(default_factory=dict)
    param_positions: dict = field(default_factory=dict)
    tag: str = ""          # name used for the fields it adds: `hash`, or `hash2` if repeated
    below: Optional["LayerInstance"] = None
    key_field_obj: Optional[Field] = None

    @property
    def name(self) -> str:
        return self.layer.name

    # The checked forms point at each other (container <-> layers <-> roles <-> partner
    # roles): short reprs keep a failing test's report (and a debugger) from walking the
    # whole graph.
    def __repr__(self) -> str:
        return f"LayerInstance({self.container.name}.{self.tag})"

    @property
    def pos(self) -> Pos:
        return self.app.pos

    @property
    def p(self) -> str:
        """C prefix of this layer's functions, e.g. `tpcb_accounts__hash`."""
        return f"{self.container.p}__{self.tag}"

    def param_pos(self, name: str) -> Pos:
        return self.param_positions.get(name, self.app.pos)

    def params_text(self) -> str:
        quiet = {ps.name: ps.default for ps in self.layer.params if not ps.show_default}
        shown = {k: v for k, v in sorted(self.params.items())
                 if k != "reserve" and not (k in quiet and quiet[k] == v)}
        return ", ".join(f"{k}={show_value(v)}" for k, v in shown.items())

    def describe(self) -> str:
        t = self.params_text()
        return f"{self.name}({t})" if t else self.name


def show_value(v: Any) -> str:
    """A parameter value as the spec language writes it."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return v
    if isinstance(v, tuple):   # a composite key
        return "(" + ", ".join(v) + ")"
    return repr(v)


@dataclass(eq=False)
class ContainerInfo:
    decl: Container
    spec_prefix: str
    record: Record
    chain: list = field(default_factory=list)   # LayerInstance, outermost first
    cursors: list = field(default_factory=list)  # CursorInfo, user cursors then synthetic
    finds: dict = field(default_factory=dict)    # field name -> synthetic CursorInfo
    declared_finds: list = field(default_factory=list)   # [(key, Pos)]: `find c by k;`
    all_cursor: Any = None                       # synthetic cursor over every element
    roles: list = field(default_factory=list)    # RoleInfo: the relationships it is in
    referenced: bool = False                     # some `ref` field or role points here
    ref_target: bool = False                     # some `ref` field points here

    @property
    def name(self) -> str:
        return self.decl.name

    def __repr__(self) -> str:
        return f"ContainerInfo({self.name} = {self.equation_text()})"

    @property
    def p(self) -> str:
        return f"{self.spec_prefix}_{self.name}"

    @property
    def tops(self) -> list:
        return [li for li in self.chain if li.layer.realm == "top"]

    @property
    def ds(self) -> list:
        """ds layers outermost first; the storage layer is last."""
        return [li for li in self.chain if li.layer.realm == "ds"]

    @property
    def indexes(self) -> list:
        return [li for li in self.chain if li.layer.role == "index"]

    @property
    def storage(self) -> LayerInstance:
        return self.ds[-1]

    @property
    def mem(self) -> LayerInstance:
        """The bottom mem layer: it owns the memory (the functions layers above call)."""
        return self.chain[-1]

    @property
    def mems(self) -> list:
        """The mem layers, outermost first: those over a file (a journal), then `mem`."""
        return [li for li in self.chain if li.layer.realm == "mem"]

    def mem_param(self, attr: str, default: Any = None) -> Any:
        """The value of the bottom mem layer's parameter that its signature names by `attr`
        (layers/base.py, MemLayer: "file_param", "reserve_param", ...), else `default`."""
        name = getattr(self.mem.layer, attr, None)
        return self.mem.params.get(name, default) if name else default

    @property
    def mirrors(self) -> list:
        """The layers that copy root fields into the handle (`Layer.mirrors_root`): the
        pipeline calls `<container>__refresh` wherever the memory changed behind them."""
        return [li for li in self.chain if li.layer.mirrors_root(li)]

    @property
    def persistent(self) -> bool:
        """Do the container's references survive a restart (its memory is a file)?"""
        return self.mem.layer.survives_restart

    @property
    def file(self) -> Optional[str]:
        """The file the container lives in, or None (its memory is not a file)."""
        return self.mem_param("file_param")

    @property
    def qualifies(self) -> bool:
        return any(li.layer.qualifies for li in self.tops)

    @property
    def purger(self) -> Optional[LayerInstance]:
        """The layer whose deletes only mark elements until <container>_purge removes them
        (a top layer that defers deletes; the checker allows at most one), or None."""
        return next((li for li in self.tops if li.layer.defers_delete), None)

    @property
    def purges(self) -> bool:
        """Are deletes marks until a purge (so the API has <container>_purge)?"""
        return self.purger is not None

    def equation_text(self) -> str:
        text = ""
        for li in reversed(self.chain):
            # the parameters of mem layers in or over a file (its name, a journal's options)
            # are not part of an equation's meaning (nor of a file's fingerprint): the same
            # file may be reopened with other options
            d = li.name if self._in_file(li) else li.describe()
            text = f"{d}[{text}]" if text else d
        return text

    def _in_file(self, li: LayerInstance) -> bool:
        return li.layer.realm == "mem" and self.file is not None

    @property
    def text_fields(self) -> list:
        return [f for f in self.record.fields if f.type.kind == "text"]

    @property
    def ref_fields(self) -> list:
        return [f for f in self.record.fields if f.type.target is not None]

    @property
    def reordering(self) -> list:
        """The roles of this container's elements as members of an ordered collection (the
        one-role whose partner is `order by` a field of this record): an update of that
        field moves the element in its owner's collection."""
        return [r for r in self.roles if not r.many and r.partner.order is not None]

    @property
    def order_fields(self) -> set:
        return {r.partner.order.name for r in self.reordering}

    @property
    def has_hooks(self) -> bool:
        """Does the public API run per-element hooks (links, texts, reference checks)?"""
        return bool(self.roles or self.text_fields or self.ref_fields)

    @property
    def owns_heap(self) -> bool:
        """Does a transient close have to free per-element blocks (texts, vectors)?"""
        return not self.persistent and (bool(self.text_fields)
                                         or any(r.heap for r in self.roles))

    @property
    def unique_index(self) -> Optional[LayerInstance]:
        """The outermost index layer with `unique = true`, whose key <container>_upsert
        looks elements up by, or None (no upsert)."""
        return next((li for li in self.ds if li.params.get("unique")), None)

    def layer_keys(self) -> list:
        """The keys some layer organises elements by (a `Field`, or a `CompositeKey`), in
        equation order, without repeats (by name)."""
        out = {}
        for li in self.ds:
            k = li.key_field_obj
            if k is not None and k.name not in out:
                out[k.name] = k
        return list(out.values())

    def keys(self) -> list:
        """The keys with a find function: the layers' (`layer_keys`), then those the spec
        declares (`find c by k;`) that no layer is keyed on (a scan serves them)."""
        out = self.layer_keys()
        have = {k.name for k in out}
        return out + [k for k, _ in self.declared_finds if k.name not in have]

    def field_keys(self) -> list[str]:
        """The keys of one field each (`key_fields` without the composite keys)."""
        return [k.name for k in self.keys() if not isinstance(k, CompositeKey)]

    def composite_keys(self) -> list:
        """The composite keys (`CompositeKey`), in equation order."""
        return [k for k in self.keys() if isinstance(k, CompositeKey)]

    def key_columns(self) -> list[str]:
        """The record fields that are part of some layer's key (alone or in a composite
        key): setting one goes through update, which relinks."""
        out = []
        for k in self.layer_keys():
            for n in (k.names if isinstance(k, CompositeKey) else (k.name,)):
                if n not in out:
                    out.append(n)
        return out

    def key_fields(self) -> list[str]:
        """Fields some layer organises elements by, in equation order, without repeats."""
        out = []
        for li in self.ds:
            k = li.layer.key_field(li)
            if k and k not in out:
                out.append(k)
        return out


@dataclass(eq=False)
class CursorInfo:
    name: str
    container: ContainerInfo
    where: Optional[Expr]
    order_by: Optional[str]
    params: list          # [(name, FieldType)] in order of first appearance
    pos: Optional[Pos]
    synthetic: Optional[str] = None   # None (user cursor), 'find' or 'all'
    # `order by ... desc`: the walk goes from the largest key down (the path's layer walks
    # in reverse: `_range_last` / `_range_prev`). `direction_pos`: where `desc` was written.
    descending: bool = False
    direction_pos: Optional[Pos] = None
    # The where-clause with the comparisons of a field against constants that others in
    # the same conjunction (disjunction) already imply (cover) left out, as the checker
    # folded them (check.fold_where); None when nothing was folded. `folded` lists what
    # was left out: [(the Compare as written, why, in words)].
    folded_where: Optional[Expr] = None
    folded: list = field(default_factory=list)

    @property
    def predicate(self) -> Optional[Expr]:
        """The predicate the generated code tests: the where-clause, folded."""
        return self.folded_where if self.folded else self.where

    @property
    def p(self) -> str:
        """C prefix of the public cursor API."""
        if self.synthetic == "find":
            return f"{self.container.p}__{self.name}"   # internal: finds are functions
        if self.synthetic == "all":
            return f"{self.container.p}_all"            # public: <spec>_<container>_all_*
        return f"{self.container.spec_prefix}_{self.name}"


@dataclass(eq=False)
class RoleInfo:
    """One end of a relationship: the role `name` that elements of `container` play.
    `many`: the role holds a collection of partners (else a single reference)."""
    rel: "RelInfo"
    container: ContainerInfo
    name: str
    many: bool
    pos: Pos
    partner: Optional["RoleInfo"] = None
    # `order by FIELD [desc]`: a collection kept in the order of a field of its members
    # (the partner's record), walked in that order; None: the order members were added
    order: Optional[Field] = None
    descending: bool = False

    def __repr__(self) -> str:
        return f"RoleInfo({self.container.name}.{self.name}, {'many' if self.many else 'one'})"

    @property
    def p(self) -> str:
        """Public prefix: `<spec>_<container>_<role>`."""
        return f"{self.container.p}_{self.name}"

    @property
    def ip(self) -> str:
        """Prefix of the relationship layer's internal functions for this role."""
        return f"{self.container.p}__{self.rel.name}_{self.name}"

    @property
    def heap(self) -> bool:
        """Does this role keep a separately allocated block per element?"""
        return self.rel.layer.role_owns_block(self)


@dataclass(eq=False)
class RelInfo:
    decl: Relationship
    layer: Layer
    params: dict
    left: RoleInfo = None
    right: RoleInfo = None

    @property
    def name(self) -> str:
        return self.decl.name

    def __repr__(self) -> str:
        return f"RelInfo({self.name})"

    @property
    def kind(self) -> str:
        """'1:1', '1:N' or 'M:N' (N:1 is normalised to 1:N)."""
        many = (self.left.many, self.right.many)
        return {(False, False): "1:1", (True, True): "M:N"}.get(many, "1:N")

    @property
    def roles(self) -> list:
        return [self.left, self.right]

    def text(self) -> str:
        d = self.decl
        mult = lambda e: "many" if e.many else "one"
        params = ", ".join(f"{k}={show_value(v)}" for k, v in sorted(self.params.items()))
        layer = f"{self.layer.name}({params})" if params else self.layer.name
        order = lambda e: (f" order by {e.order_by.name}{' desc' if e.descending else ''}"
                           if e.order_by is not None else "")
        return (f"relationship {d.name} {mult(d.left)} {d.left.container}.{d.left.role}"
                f"{order(d.left)} to {mult(d.right)} {d.right.container}.{d.right.role}"
                f"{order(d.right)} = {layer}")




@dataclass(eq=False)
class FileInfo:
    path: str
    containers: list
    reserve: int
    fingerprint: int = 0
    # the mem layers of the file, outermost first (those over it, e.g. a journal, then the
    # file's own layer): the same in every container of the file (the checker sees to it)
    mems: list = field(default_factory=list)
    verify_open: bool = True         # walk it with verify at open (its layer's verify_open_param)
    alloc: str = "pow2"              # the allocator's size classes (its layer's alloc_param)

    @property
    def nroots(self) -> int:
        """Roots of the file's header: one per container, and with exact size classes the
        allocator's class table (runtime/p2_runtime.h, section alloc)."""
        return len(self.containers) + (self.alloc == "exact")

    @property
    def transactions(self) -> Optional[LayerInstance]:
        """The mem layer that gives this file transactions (MemLayer.transactions), or None."""
        return next((li for li in self.mems if li.layer.transactions), None)


@dataclass(eq=False)
class CheckedSpec:
    spec: Spec
    prefix: str
    records: list
    containers: list
    cursors: list          # user cursors, in file order
    files: list            # FileInfo, in order of first use
    relationships: list = field(default_factory=list)   # RelInfo, in file order
    # The planner's output (plan.py): CursorInfo -> Plan, for every cursor of every
    # container. Empty as the checker returns it; `plan()` returns a planned copy.
    plans: Mapping = field(default_factory=dict)
    # `p2gen build --profile`: the generated C counts the workload (profile.py)
    profile: bool = False
    # `p2gen build --trace`: the generated C logs every public operation (trace.py)
    trace: bool = False

    def container(self, name: str) -> Optional[ContainerInfo]:
        return next((c for c in self.containers if c.name == name), None)


# ---------------------------------------------------------------------------
# What the pipeline writes (build.generate)
# ---------------------------------------------------------------------------
@dataclass
class Generated:
    checked: CheckedSpec
    out_dir: str
    header: str
    source: str
    runtime: list = field(default_factory=list)
    seconds: float = 0.0
    # what the header declares, as the table of generated functions records it
    # (render.header_declarations; the CFFI declarations: pybind.cdef)
    declarations: Optional[list] = None

    @property
    def prefix(self) -> str:
        return self.checked.prefix
