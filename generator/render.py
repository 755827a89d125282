"""Rendering: a checked, planned spec becomes one C header and one C source.

The source is assembled container by container, layer by layer from the bottom (memory)
up to the top, each section rendered by that layer's template in layers/ and fenced by a
banner naming the layer and the equation. Rendering is deterministic: same spec, same bytes.
"""
from __future__ import annotations

import functools
import os
import zlib
from dataclasses import dataclass
from typing import Optional

import jinja2

from .plan import chain_terms, expr_text
from .check import CheckedSpec, ContainerInfo, CursorInfo, LayerInstance
from .model import And, Compare, Const, Expr, FieldRef, FieldType, Not, ParamRef

def _template_dirs() -> list[str]:
    from . import layers as layer_pkg
    from . import templates as tmpl_pkg
    return [os.path.dirname(layer_pkg.__file__), os.path.dirname(tmpl_pkg.__file__)]


@functools.lru_cache(maxsize=None)
def _env() -> jinja2.Environment:
    """One environment per process: Jinja2 compiles each template once (rendering a spec
    then takes milliseconds, not the half second recompiling every template cost)."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(_template_dirs()),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
        autoescape=False)
    env.filters["cstr"] = c_string
    # a 32-bit tag derived from a name (e.g. per-container magic numbers), never 0
    env.filters["tag32"] = lambda s: (zlib.crc32(str(s).encode()) | 1)
    return env


# ---------------------------------------------------------------------------
# C spelling of values and predicates
# ---------------------------------------------------------------------------
def c_string(s: str) -> str:
    out = []
    for b in s.encode():
        ch = chr(b)
        if ch in '"\\':
            out.append("\\" + ch)
        elif 32 <= b < 127 and ch != "?":
            out.append(ch)
        else:
            out.append(f"\\{b:03o}")
    return '"' + "".join(out) + '"'


def c_int(v: int, t: FieldType) -> str:
    if t.signed:
        if v == t.min_value and t.bits == 64:
            return "(INT64_MIN)"
        return f"(({t.ctype}){v}{'LL' if t.bits == 64 else ''})"
    return f"(({t.ctype}){v}u{'LL' if t.bits == 64 else ''})"


def c_const(k: Const, t: FieldType) -> str:
    if t.kind == "char":
        return f"((const char[{t.length}]){{{c_string(k.value)}}})"
    if t.kind == "int":
        return c_int(int(k.value), t)
    return f"(({t.ctype}){float(k.value)!r})"


def arg_type(t: FieldType) -> str:
    if t.target is not None:
        return "uint64_t "
    return "const char *" if t.kind == "char" else f"{t.ctype} "


def param_field_decl(name: str, t: FieldType) -> str:
    if t.kind == "char":
        return f"char _p_{name}[{t.length}];"
    return f"{t.ctype} _p_{name};"


class PredicateC:
    """Spells a predicate as a C expression over element `e` and cursor `k`."""

    def __init__(self, spec_prefix: str, record):
        self.sp = spec_prefix
        self.record = record

    def operand(self, o, t: FieldType) -> str:
        if isinstance(o, FieldRef):
            return f"e->rec.{o.name}"
        if isinstance(o, ParamRef):
            return f"k->_p_{o.name}"
        return c_const(o, t)

    def compare(self, c: Compare) -> str:
        ft = None
        for side in (c.left, c.right):
            if isinstance(side, FieldRef):
                ft = self.record.field(side.name).type
                break
        if ft.kind == "char":
            def length(o):
                if isinstance(o, FieldRef):
                    return self.record.field(o.name).type.length
                return ft.length
            a = self.operand(c.left, ft)
            b = self.operand(c.right, ft)
            return (f"(p2_fixstr_cmp({a}, {length(c.left)}, {b}, {length(c.right)}) "
                    f"{c.op} 0)")
        return f"({self.operand(c.left, ft)} {c.op} {self.operand(c.right, ft)})"

    def expr(self, e: Expr) -> str:
        if isinstance(e, Compare):
            return self.compare(e)
        if isinstance(e, Not):
            return f"!{self.expr(e.operand)}"
        op = "&&" if isinstance(e, And) else "||"
        return "(" + f" {op} ".join(self.expr(t) for t in chain_terms(e, type(e))) + ")"

    def conjunction(self, es: list) -> Optional[str]:
        if not es:
            return None
        return " && ".join(self.expr(e) for e in es)


# ---------------------------------------------------------------------------
# Render-time views of cursors
# ---------------------------------------------------------------------------
@dataclass
class CursorView:
    """What a top layer template needs to emit one cursor's code."""
    info: CursorInfo
    t: str                 # C struct type
    p: str                 # public prefix (user cursors), internal prefix (synthetic)
    tp: str                # prefix of this cursor's functions inside a top layer: `<T.p>_<name>`
    params: list           # [(name, FieldType)]
    first_c: str           # C expression: first candidate reference (uses k)
    advance_c: str         # C expression: next candidate after `ref` (uses k, ref)
    stop_c: Optional[str]  # C expression on e: past the end of the range
    residual_c: Optional[str]
    comment: str

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def synthetic(self) -> Optional[str]:
        return self.info.synthetic


def _key_value_c(conj, t: FieldType) -> str:
    if isinstance(conj.value, ParamRef):
        return f"k->_p_{conj.value.name}"
    return c_const(conj.value, t)


def cursor_view(cur: CursorInfo, checked: CheckedSpec) -> CursorView:
    info = cur.container
    pred = PredicateC(checked.prefix, info.record)
    path = cur.plan.path
    P = path.layer.p
    t = f"{cur.p}_cursor"
    stop = None
    if path.kind == "scan":
        first = f"{P}_scan_first(k->_db)"
        adv = f"{P}_scan_next(k->_db, ref)"
    elif path.kind == "eq":
        kt = path.layer.key_field_obj.type
        v = _key_value_c(path.eq, kt)
        first = f"{P}_eq_first(k->_db, {v})"
        adv = f"{P}_eq_next(k->_db, ref, {v})"
    else:  # range, in key order
        key = path.layer.key_field_obj
        kt = key.type
        if path.lo is not None:
            lo = _key_value_c(path.lo, kt)
            incl = "1" if path.lo.op in (">=", "==") else "0"
            first = f"{P}_range_first(k->_db, 1, {lo}, {incl})"
        else:
            zero = '""' if kt.kind == "char" else "0"
            first = f"{P}_range_first(k->_db, 0, {zero}, 1)"
        adv = f"{P}_range_next(k->_db, ref)"
        if path.hi is not None:
            hi = _key_value_c(path.hi, kt)
            cmp = f"{info.p}__cmp_{key.name}(e->rec.{key.name}, {hi})"
            stop = f"{cmp} {'>' if path.hi.op in ('<=', '==') else '>='} 0"
    residual = pred.conjunction(cur.plan.residual)
    comment = f"path: {path.layer.describe()} {path.kind} ({path.why}); residual: " \
              f"{cur.plan.residual_text}"
    return CursorView(cur, t, cur.p, "", cur.params, first, adv, stop, residual, comment)


def names(checked: CheckedSpec, info: ContainerInfo) -> dict:
    """C type names every template of a container uses."""
    return {"DB": f"{checked.prefix}_db", "E": f"{info.p}_elem", "ROOT": f"{info.p}_root",
            "R": f"{checked.prefix}_{info.record.name}", "NIL": "P2_NIL"}


# ---------------------------------------------------------------------------
class Renderer:
    def __init__(self, checked: CheckedSpec, spec_file: str):
        self.checked = checked
        self.spec_file = spec_file
        self.env = _env()

    def views(self, info: ContainerInfo) -> list:
        return [cursor_view(c, self.checked) for c in info.cursors]

    def layer_section(self, li: LayerInstance, info: ContainerInfo, cursors: list) -> str:
        tmpl = self.env.get_template(li.layer.template)
        return tmpl.render(L=li, B=li.below, C=info, S=self.checked, M=info.mem,
                           St=info.storage, D=info.ds[0], cursors=cursors,
                           key=li.key_field_obj, seg=self.seg_index(info),
                           **names(self.checked, info),
                           arg_type=arg_type, c_const=c_const)

    def files(self) -> list:
        out = []
        for idx, fi in enumerate(self.checked.files):
            out.append({"index": idx, "path": fi.path, "reserve": fi.reserve,
                        "fingerprint": f"0x{fi.fingerprint:016x}u",
                        "containers": fi.containers, "journal": fi.journal})
        return out

    def seg_index(self, info: ContainerInfo) -> int:
        for idx, fi in enumerate(self.checked.files):
            if info in fi.containers:
                return idx
        return -1

    def role_names(self, role) -> dict:
        """What a relationship template needs to reach one end's elements."""
        info = role.container
        return {"E": names(self.checked, info)["E"], "elem": f"{info.storage.p}_elem",
                "M": info.mem.p, "T": info.chain[0].p, "St": info.storage.p}

    def rel_section(self, ri) -> str:
        tmpl = self.env.get_template(ri.layer.template)
        return tmpl.render(REL=ri, rn=self.role_names, S=self.checked,
                           DB=f"{self.checked.prefix}_db")

    def render(self) -> tuple[str, str]:
        checked = self.checked
        containers = []
        for info in checked.containers:
            views = self.views(info)
            sections = []
            for li in reversed(info.chain):
                sections.append((li, self.layer_section(li, info, views)))
            containers.append({"info": info, "views": views, "sections": sections,
                               "seg": self.seg_index(info)})
        rels = [{"info": ri, "text": self.rel_section(ri)} for ri in checked.relationships]
        ctx = dict(S=checked, spec_file=self.spec_file, containers=containers, rels=rels,
                   files=self.files(), arg_type=arg_type, param_field_decl=param_field_decl,
                   c_string=c_string, where_text=expr_text, names=names,
                   rn=self.role_names, hooked=[c for c in containers
                                           if c["info"].has_hooks or c["info"].referenced])
        header = self.env.get_template("spec.h.j2").render(**ctx)
        source = self.env.get_template("spec.c.j2").render(**ctx)
        return header, source


def render(checked: CheckedSpec, spec_file: str) -> tuple[str, str]:
    return Renderer(checked, spec_file).render()


def metadata(checked: CheckedSpec) -> dict:
    """A JSON-able description of the generated API (used by the Python bindings)."""
    def ftype(t: FieldType):
        return {"kind": t.kind, "type": t.name, "length": t.length, "ctype": t.ctype}
    return {
        "prefix": checked.prefix,
        "records": {r.name: [{"name": f.name, **ftype(f.type)} for f in r.fields]
                    for r in checked.records},
        "containers": [{
            "name": c.name, "record": c.record.name, "equation": c.equation_text(),
            "keys": c.key_fields(), "persistent": c.persistent, "file": c.file,
            "delflag": c.has_layer("delflag"),
        } for c in checked.containers],
        "cursors": [{
            "name": k.name, "container": k.container.name,
            "params": [{"name": n, **ftype(t)} for n, t in k.params],
            "order_by": k.order_by,
        } for k in checked.cursors],
    }
