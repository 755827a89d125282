"""Access-path selection: for every cursor (and every find, which is a cursor too), ask each
ds layer of the container what serving its predicate would cost, pick the cheapest path that
also delivers the requested order, and keep the rest of the predicate as a residual filter.

The result is data (`Plan`) that the renderer turns into C and `p2gen explain` prints.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Optional

from .ir import CheckedSpec, ContainerInfo, CursorInfo
from .errors import SpecError
from .layers.base import COST_UNIT, PathOption
from .model import And, Compare, Const, Expr, FieldRef, ParamRef, chain_terms, expr_text, operand_text

DEFAULT_SIZE_ESTIMATE = 10_000
FLIP = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


@dataclass(eq=False)
class Conjunct:
    """`field op value` with value a constant or a cursor parameter (normalised so the
    field is on the left)."""
    field: str
    op: str
    value: object      # ParamRef or Const
    expr: Compare      # the original comparison

    @property
    def value_text(self) -> str:
        return operand_text(self.value)

    @property
    def text(self) -> str:
        return f"{self.field} {self.op} {self.value_text}"


@dataclass
class Query:
    n: float
    conjuncts: list           # Conjunct
    order_by: Optional[str]

    def conjuncts_on(self, name: Optional[str]) -> list:
        return [c for c in self.conjuncts if c.field == name] if name else []


@dataclass
class Candidate:
    option: Optional[PathOption]
    layer: object
    note: str


@dataclass
class Plan:
    path: PathOption
    residual: list            # Expr conjuncts not guaranteed by the path
    candidates: list = field(default_factory=list)   # Candidate, for explain

    @property
    def residual_text(self) -> str:
        return " and ".join(expr_text(e, top=False) for e in self.residual) or "(none)"


# ---------------------------------------------------------------------------
def conjuncts_of(e: Optional[Expr]) -> list:
    return [] if e is None else chain_terms(e, And)


def simple_conjunct(e: Expr) -> Optional[Conjunct]:
    if not isinstance(e, Compare):
        return None
    l, r = e.left, e.right
    if isinstance(l, FieldRef) and isinstance(r, (ParamRef, Const)):
        return Conjunct(l.name, e.op, r, e)
    if isinstance(r, FieldRef) and isinstance(l, (ParamRef, Const)):
        return Conjunct(r.name, FLIP[e.op], l, e)
    return None


def size_estimate(info: ContainerInfo) -> float:
    cap = info.storage.params.get("capacity")
    return float(max(cap or 0, DEFAULT_SIZE_ESTIMATE))


def reverse_walk_layers() -> list:
    """The registered layers that walk their key order backwards (`reverse_walk`)."""
    from .layers import LAYERS
    return [n for n, l in LAYERS.items() if l.realm == "ds" and l.reverse_walk]


def _no_reverse_walk(cur: CursorInfo, candidates: list) -> str:
    """Why no path of `cur`'s container serves its `order by f desc`, and what would."""
    info, f = cur.container, cur.order_by
    ordered = [c.layer for c in candidates
               if c.option is not None and c.option.ordered_by == f]
    why = "no layer keeps elements in that order"
    if ordered:
        names = ", ".join(dict.fromkeys(li.layer.name for li in ordered))
        why = f"{names} keeps {f} order but cannot walk it backwards"
    layers = reverse_walk_layers()
    serve = (f"; add {', '.join(layers[:-1])}{' or ' if len(layers) > 1 else ''}{layers[-1]} "
             f"with key = {f}" if layers else "")
    return (f"cursor '{cur.name}' asks for order by '{f}' desc, but no layer of container "
            f"'{info.name}' ({info.equation_text()}) walks {f} order backwards ({why})"
            f"{serve}")


def plan_cursor(cur: CursorInfo, source: str) -> Plan:
    info = cur.container
    all_conj = conjuncts_of(cur.predicate)
    simple = [c for c in (simple_conjunct(e) for e in all_conj) if c is not None]
    query = Query(size_estimate(info), simple, cur.order_by)
    options: list[PathOption] = []
    candidates: list[Candidate] = []
    for li in info.ds:
        opts = li.layer.paths(li, query)
        if not opts:
            candidates.append(Candidate(None, li, li.layer.not_applicable(li, query)
                                        or "offers no access path"))
        for o in opts:
            # a field an equality prefix of a composite key fixes is in order too
            if cur.order_by and o.ordered_by != cur.order_by and cur.order_by not in o.fixed:
                candidates.append(Candidate(o, li, f"not in {cur.order_by} order"))
                continue
            if cur.descending:
                # an equality path yields equal keys only: in either order. A range
                # (or ordered scan) must be walked backwards by its layer.
                if o.kind == "range" and not li.layer.reverse_walk:
                    candidates.append(Candidate(o, li, f"{li.layer.name} has no reverse walk "
                                                       f"for order by {cur.order_by} desc"))
                    continue
                if o.kind == "range":
                    o = dataclasses.replace(o, descending=True)
            options.append(o)
            candidates.append(Candidate(o, li, ""))
    if not options and cur.descending:
        raise SpecError(_no_reverse_walk(cur, candidates),
                        cur.direction_pos or cur.pos, source)
    if not options:
        raise SpecError(
            f"cursor '{cur.name}' asks for order by '{cur.order_by}', but no layer of "
            f"container '{info.name}' ({info.equation_text()}) keeps elements in that order; "
            f"add avl, odlist or qsort with key = {cur.order_by}",
            cur.pos, source)
    # cheapest first; ties go to the outermost layer, then to the path that guarantees more
    order = {id(li): i for i, li in enumerate(info.ds)}
    best = min(options, key=lambda o: (round(o.cost, 6), order[id(o.layer)], -len(o.consumed)))
    consumed = {id(c.expr) for c in best.consumed}
    residual = [e for e in all_conj if id(e) not in consumed]
    return Plan(best, residual, candidates)


def plan(checked: CheckedSpec) -> CheckedSpec:
    """The checked spec with a Plan for every cursor of every container (user cursors,
    finds, all) in `plans`: a copy; the checker's result is left as it was."""
    plans = {cur: plan_cursor(cur, checked.spec.source)
             for info in checked.containers for cur in info.cursors}
    return dataclasses.replace(checked, plans=plans)


def path_kind_text(path: PathOption) -> str:
    """`range`, `eq`, `scan`; `range, descending` for a range walked backwards."""
    return f"{path.kind}, descending" if path.descending else path.kind


def explain(checked: CheckedSpec, include_finds: bool = True, beside=None) -> str:
    """beside(cursor) -> lines: what to say beside each access path (`explain --profile`)."""
    lines = []
    for fi in checked.files:
        # what the mem layers over a file (a journal) do to it, as each one says
        for li in fi.mems:
            said = li.layer.explain_file(li)
            if said:
                lines.append(f"file {fi.path}: {said}; "
                             f"containers {', '.join(c.name for c in fi.containers)}")
    if lines:
        lines.append("")
    for info in checked.containers:
        lines.append(f"container {info.name} = {info.equation_text()}")
        if any(not c.synthetic == "all" and (c.synthetic != "find" or include_finds)
               for c in info.cursors):
            cap = info.storage.params.get("capacity")
            why = (f"its storage's capacity" if cap and cap >= DEFAULT_SIZE_ESTIMATE
                   else f"the planner's default")
            lines.append(f"  sizes assumed: {size_estimate(info):,.0f} elements ({why}); "
                         f"costs in {COST_UNIT} (estimated)")
        for cur in info.cursors:
            if cur.synthetic == "all" or (cur.synthetic == "find" and not include_finds):
                continue
            head = (f"  find {info.p}_find_{cur.name[5:]}" if cur.synthetic == "find"
                    else f"  cursor {cur.name}")
            where = f" where {expr_text(cur.where)}" if cur.where is not None else ""
            order = f" order by {cur.order_by}" if cur.order_by else ""
            if cur.descending:
                order += " desc"
            lines.append(f"{head}{where}{order}")
            if cur.synthetic == "find":
                declared = {k.name: k for k, _ in info.declared_finds}
                layered = {k.name for k in info.layer_keys()}
                key = cur.name[5:]
                if key in declared:
                    k = declared[key]
                    by = f"({', '.join(k.names)})" if hasattr(k, "names") else key
                    lines.append(f"    declared: find {info.name} by {by} (it exists whatever "
                                 f"the equation; " + ("a layer is keyed on it)" if key in layered
                                 else "no layer is keyed on it)"))
            p = checked.plans[cur]
            lines.append(f"    chosen: {p.path.layer.describe()} {path_kind_text(p.path)}: "
                         f"{p.path.why} (cost {p.path.cost:.1f} {COST_UNIT})")
            lines += beside(cur) if beside else []
            for c, why in cur.folded:
                lines.append(f"    folded: {expr_text(c)} ({why})")
            lines.append(f"    residual filter: {p.residual_text}")
            others = [c for c in p.candidates if c.option is not p.path]
            if others:
                lines.append("    also considered:")
                for c in others:
                    if c.option is None:
                        lines.append(f"      {c.layer.describe()}: {c.note}")
                    else:
                        note = f" — {c.note}" if c.note else ""
                        lines.append(f"      {c.layer.describe()} {path_kind_text(c.option)}: "
                                     f"{c.option.why} (cost {c.option.cost:.1f} {COST_UNIT}){note}")
        lines.append("")
    for ri in checked.relationships:
        lines.append(f"{ri.text()}  ({ri.kind})")
        for role in ri.roles:
            what = "many" if role.many else "one"
            lines.append(f"  {role.container.name}.{role.name} ({what} "
                         f"{role.partner.container.name}): {ri.layer.role_cost(role)}")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
