"""The checker: names, types, realms and layer parameters.

Turns a parsed `Spec` into a `CheckedSpec` in which every container's equation is a list of
`LayerInstance`s with resolved parameters, every cursor knows its typed run-time
parameters, and nothing later can fail on user input. All errors found are reported
together, each at its line and column.
"""
from __future__ import annotations

import difflib
import hashlib
import math
import posixpath
import re
from typing import Optional

from . import layers as layer_library
from .cnames import C_KEYWORDS   # C11 and GNU keywords: one list
from .errors import SpecError, SpecErrors
from .ir import (CheckedSpec, ContainerInfo, CursorInfo, FileInfo, LayerInstance, RelInfo,
                 RoleInfo, show_value)
from .layers.base import MAX_RESERVE, Layer, MemLayer
from .model import (INT_TYPES, And, Compare, CompositeKey, CompositeType, Const, Container, Cursor, Expr, Field, FieldRef,
                    FieldType, LayerApp, Not, Or, ParamRef, Pos, Record, Relationship, Spec,
                    expr_text)

# The longest file name a mem layer in a file accepts, in bytes: the runtime keeps paths in
# PATH_MAX (4096) byte buffers, with the NUL.
MAX_FILE_NAME = 4095

# The largest record (the sum of its fields' sizes), in bytes. Records are C structs
# copied by value; longer strings belong in `text` fields.
MAX_RECORD_BYTES = 1 << 16

FORMAT_VERSION = 1  # bump when generated layouts change meaning; part of the fingerprint

# Role names that would collide with the generated API of the container.
RESERVED_ROLES = {"insert", "get", "at", "update", "delete", "reserve", "count", "purge",
                  "all", "ref"}


# ---------------------------------------------------------------------------
# The checker
# ---------------------------------------------------------------------------
class Checker:
    def __init__(self, spec: Spec, prefix: str):
        self.spec = spec
        self.prefix = prefix
        self.errors: list[SpecError] = []

    def error(self, message: str, pos: Optional[Pos]) -> None:
        self.errors.append(SpecError(message, pos, self.spec.source))

    def fail_if_errors(self) -> None:
        if len(self.errors) == 1:
            raise self.errors[0]
        if self.errors:
            raise SpecErrors(self.errors)

    # -- names -----------------------------------------------------------------
    def check_identifier(self, name: str, what: str, pos: Pos) -> None:
        if name in C_KEYWORDS:
            self.error(f"{what} name '{name}' is a C keyword; choose another name", pos)
        elif name.startswith("_"):
            self.error(f"{what} name '{name}' starts with '_', which is reserved for "
                       f"the fields layers add", pos)

    # -- sizes the generated C can hold ---------------------------------------------------
    # A record is a C struct that the generated code, the harness and the Python binding
    # copy by value (on the stack too): its size is bounded, and so is every char[N].
    def check_record_sizes(self) -> None:
        for rec in self.spec.records:
            total = 0
            for f in rec.fields:
                size = f.type.bits // 8 if f.type.kind != "char" else f.type.length
                if f.type.kind == "char" and f.type.length > MAX_RECORD_BYTES:
                    self.error(f"field '{f.name}': char[{f.type.length}] is longer than "
                               f"{MAX_RECORD_BYTES} bytes, the most a record holds; use "
                               f"text for long strings", f.pos)
                    return
                total += max(size, 0)
            if total > MAX_RECORD_BYTES:
                self.error(f"record '{rec.name}' is {total} bytes long, more than "
                           f"{MAX_RECORD_BYTES} bytes, the most a record holds; use text "
                           f"for long strings", rec.pos)

    def check_names(self) -> None:
        seen: dict[str, tuple[str, Pos]] = {}
        decls = ([("record", r.name, r.pos) for r in self.spec.records]
                 + [("container", c.name, c.pos) for c in self.spec.containers]
                 + [("cursor", k.name, k.pos) for k in self.spec.cursors]
                 + [("relationship", r.name, r.pos) for r in self.spec.relationships])
        for kind, name, pos in sorted(decls, key=lambda d: (d[2].line, d[2].col)):
            self.check_identifier(name, kind, pos)
            if name in seen:
                k0, p0 = seen[name]
                self.error(f"{kind} '{name}' is already declared as a {k0} at line {p0.line}",
                           pos)
            else:
                seen[name] = (kind, pos)
        for rec in self.spec.records:
            if not rec.fields:
                self.error(f"record '{rec.name}' has no fields", rec.pos)
            names: dict[str, Pos] = {}
            for f in rec.fields:
                self.check_identifier(f.name, "field", f.pos)
                if f.name in names:
                    self.error(f"field '{f.name}' is declared twice in record '{rec.name}' "
                               f"(first at line {names[f.name].line})", f.pos)
                names[f.name] = f.pos
                if f.type.kind == "char" and f.type.length <= 0:
                    self.error(f"field '{f.name}': char[N] needs N >= 1", f.pos)
                if f.default is not None:
                    self.check_default(rec, f)

    def check_default(self, rec, f) -> None:
        """`name: type = value`: a value of the field's type (an int in range, a number for
        a float, a string that fits a char[N] or any for a text, `none` for a ref)."""
        d, t = f.default, f.type
        where = f"default of field '{f.name}' of record '{rec.name}'"
        if t.target is not None:
            if not (d.kind == "name" and d.value == "none"):
                self.error(f"{where}: a ref field's default can only be none", d.pos)
        elif t.kind == "int":
            bits, signed = INT_TYPES[t.name][1:]
            lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
            if d.kind != "int":
                self.error(f"{where}: expected an integer for {t.spelled()}, found "
                           f"{_default_words(d)}", d.pos)
            elif not lo <= d.value <= hi:
                self.error(f"{where}: {d.value} is out of range for {t.spelled()} "
                           f"({lo} .. {hi})", d.pos)
        elif t.kind == "float":
            if d.kind not in ("int", "float"):
                self.error(f"{where}: expected a number for {t.spelled()}, found "
                           f"{_default_words(d)}", d.pos)
        elif d.kind != "string":
            self.error(f"{where}: expected a string for {t.spelled()}, found "
                       f"{_default_words(d)}", d.pos)
        elif t.kind == "char":
            data = d.value.encode("utf-8")
            nul = b"\0" in data
            if len(data) > t.length or nul:
                self.error(f"{where}: \"{d.value}\" does not fit char[{t.length}] "
                           f"({len(data)} bytes{', a NUL' if nul else ''})", d.pos)

    # -- equations ---------------------------------------------------------------
    def check_container(self, decl: Container) -> Optional[ContainerInfo]:
        rec = self.spec.record(decl.record)
        if rec is None:
            known = [r.name for r in self.spec.records]
            self.error(f"container '{decl.name}' is of record '{decl.record}', which is not "
                       f"declared{_suggest(decl.record, known)}", decl.record_pos)
            return None
        info = ContainerInfo(decl, self.prefix, rec)
        apps = decl.equation.chain()
        ok = True
        expected = "top"
        above: Optional[LayerApp] = None
        tags: dict[str, int] = {}
        for app in apps:
            layer = layer_library.get(app.name)
            if layer is None:
                self.error(f"unknown layer '{app.name}'"
                           f"{_suggest(app.name, list(layer_library.LAYERS))}", app.pos)
                return None
            if layer.realm != expected:
                if above is None:
                    self.error(f"the outermost layer of container '{decl.name}' must be of "
                               f"realm 'top' (e.g. top2ds_qualify), got '{app.name}' "
                               f"(realm '{layer.realm}')", app.pos)
                else:
                    self.error(f"layer '{above.name}' needs a layer of realm '{expected}' "
                               f"below it, got '{app.name}' (realm '{layer.realm}')", app.pos)
                ok = False
                break
            tags[app.name] = tags.get(app.name, 0) + 1
            tag = app.name if tags[app.name] == 1 else f"{app.name}{tags[app.name]}"
            info.chain.append(LayerInstance(layer, app, info, tag=tag))
            if layer.below is None:
                if app.below is not None:
                    self.error(f"layer '{app.name}' (realm '{layer.realm}') is a bottom layer "
                               f"and takes nothing below it, got '{app.below.name}'",
                               app.below.pos)
                    ok = False
                break
            if app.below is None:
                self.error(f"layer '{app.name}' needs a layer of realm '{layer.below}' below "
                           f"it, got nothing", app.pos)
                ok = False
                break
            expected = layer.below
            above = app
        if not ok:
            return None
        for upper, lower in zip(info.chain, info.chain[1:]):
            upper.below = lower
        if not self.check_deferred_deletes(info):
            return None
        self.attach_params(info)
        for li in info.chain:
            self.resolve_params(li, rec)
        self.check_key_names(info)
        for li in info.chain:
            if all(p.name in li.params for p in li.layer.params):  # else already reported
                li.layer.validate(li, self)
        self.check_mem_requirements(info)
        self.check_link_width(info)
        # index layers need storage whose references stay put
        storage = info.storage
        if not storage.layer.stable_refs:
            for li in info.indexes:
                self.error(f"layer '{li.name}' cannot sit above '{storage.name}': "
                           f"{storage.name} moves elements to keep them sorted, so the "
                           f"references an index holds would go stale; use array, iarray or "
                           f"malloc storage under an index", li.pos)
        return info

    def check_mem_requirements(self, info: ContainerInfo) -> None:
        """What a mem layer needs of the mem layer below it (its `requires_below`): a
        journal, for one, a memory in a file."""
        self.check_server_log(info)
        for li in info.mems:
            layer, below = li.layer, li.below
            if below is None or not layer.requires_below:
                continue
            missing = [a for a in layer.requires_below if not getattr(below.layer, a, None)]
            if not missing:
                continue
            would = [n for n, other in layer_library.LAYERS.items()
                     if isinstance(other, MemLayer)
                     and all(getattr(other, a, None) for a in layer.requires_below)]
            does, without = layer.requires_why
            self.error(f"layer '{layer.name}' {does}: it needs "
                       f"{' or '.join(repr(n) for n in would) or 'a memory layer that does not exist'} "
                       f"below it, got '{below.name}' ({below.name} memory {without})",
                       below.pos)

    def check_server_log(self, info: ContainerInfo) -> None:
        """A server memory with a log export (`pageserver(log = ...)`): the log is what a
        journal or wal over it commits through, so one goes with the other."""
        mem = info.mem
        param = mem.layer.log_param
        if param is None:
            return
        txn = next((li for li in info.mems if li.layer.transactions), None)
        log = mem.params.get(param)
        if txn is not None and not log:
            self.error(f"layer '{txn.name}' over '{mem.name}' keeps its log on a second export: "
                       f"give it as {mem.name}({param} = \"nbd://HOST:PORT/EXPORT\")", mem.pos)
        elif txn is None and log:
            self.error(f"{mem.name}({param} = ...) is the log of a journal or wal over it: "
                       f"put one above '{mem.name}' (e.g. journal[{mem.name}]) or drop the "
                       f"parameter", mem.param_pos(param))
        elif txn is not None and txn.params.get("group", 1) != 1:
            self.error(f"{txn.name}(group = {txn.params['group']}) over '{mem.name}': every "
                       f"commit on a page server is flushed and written back by itself "
                       f"(group = 1)", txn.param_pos("group"))

    def check_link_width(self, info: ContainerInfo) -> None:
        """A memory whose links are narrower than 64 bits (persistent(links = offset32))
        holds only layers that store their references in that width (`narrow_links`); the
        record's ref fields and text handles narrow with it (narrow_records)."""
        mem = info.mem
        bits = mem.layer.link_bits(mem)
        if bits >= 64:
            return
        param = mem.layer.links_param
        said = f"{mem.name}({param} = {mem.params.get(param)})"
        for li in info.chain:
            if li.layer.realm != "mem" and not li.layer.narrow_links:
                self.error(f"layer '{li.name}' of container '{info.name}' stores its links "
                           f"in 64 bits and cannot sit over {said}, whose references are "
                           f"{bits}-bit; use {mem.name}({param} = offset64) or layers that "
                           f"store {bits}-bit links ({self._narrow_layers()})",
                           li.pos)

    def narrow_records(self, infos: list) -> None:
        """Over 32-bit links a record's ref fields and text handles are stored in 32 bits
        too (model.FieldType.narrowed: a ref is its slot number, a text handle the block's
        offset >> 3 and a 32-bit length). A record is one C struct, so the containers that
        hold it must agree on the width when it has such fields. Done before cursors and
        relationships are checked, so that everything sees the stored type."""
        for rec in self.spec.records:
            users = [i for i in infos if i.record.name == rec.name]
            widths = {i.mem.layer.link_bits(i.mem) for i in users}
            fields = [f for f in rec.fields if f.type.target is not None or f.type.kind == "text"]
            if not fields or not widths or min(widths) >= 64:
                continue
            if len(widths) > 1:
                names = ", ".join(f"'{i.name}' ({i.mem.layer.link_bits(i.mem)}-bit)" for i in users)
                self.error(f"record '{rec.name}' has {'a ref field' if fields[0].type.target else 'a text field'} "
                           f"('{fields[0].name}'), stored as wide as its memory's links, and is held "
                           f"by containers over links of different widths: {names}; use one record "
                           f"per width or one link width", rec.pos)
                continue
            for f in fields:
                f.type = f.type.narrowed()

    @staticmethod
    def _narrow_layers() -> str:
        names = [n for n, l in layer_library.LAYERS.items()
                 if l.realm in ("ds", "top", "rel") and l.narrow_links]
        return ", ".join(names) if names else "none yet"

    def check_deferred_deletes(self, info: ContainerInfo) -> bool:
        """A layer that defers deletes (delflag: delete marks, purge removes through the
        layer below) needs the layers below it to remove for real: over another such layer
        its purge would only mark again, and each layer's count of marked elements would
        go wrong. So at most one per equation."""
        deferring = [li for li in info.chain if li.layer.defers_delete]
        for li in deferring[1:]:
            above = deferring[0]
            self.error(f"layer '{li.name}' defers deletes (marks elements; purge removes "
                       f"them through the layer below) and so does '{above.name}' above it "
                       f"in container '{info.name}': the purge of '{above.name}' would only "
                       f"mark them again here; use one such layer per equation", li.pos)
        return len(deferring) <= 1

    def attach_params(self, info: ContainerInfo) -> None:
        for li in info.chain:
            for p in li.app.params:
                self._add_param(li, p)
        for args in info.decl.with_args:
            matches = [li for li in info.chain if li.name == args.layer]
            if not matches:
                self.error(f"'with' gives parameters to layer '{args.layer}', which is not in "
                           f"the equation of container '{info.name}' ({info.decl.equation.text()})",
                           args.pos)
                continue
            if len(matches) > 1:
                self.error(f"layer '{args.layer}' appears {len(matches)} times in the equation "
                           f"of container '{info.name}'; give each its parameters inline, "
                           f"e.g. {args.layer}(key = ...)[...]", args.pos)
                continue
            for p in args.params:
                self._add_param(matches[0], p)

    def _add_param(self, li: LayerInstance, p) -> None:
        if p.name in li.param_positions:
            prev = li.param_positions[p.name]
            self.error(f"parameter '{p.name}' of layer '{li.name}' is given twice "
                       f"(first at line {prev.line}, column {prev.col})", p.pos)
            return
        li.param_positions[p.name] = p.pos
        li.params[p.name] = p.value

    def resolve_params(self, li: LayerInstance, rec: Record) -> None:
        specs = {ps.name: ps for ps in li.layer.params}
        raw = li.params
        li.params = {}
        for name, value in raw.items():
            ps = specs.get(name)
            if ps is None:
                takes = ", ".join(specs) if specs else "no parameters"
                self.error(f"layer '{li.name}' has no parameter '{name}'"
                           f"{_suggest(name, list(specs))}; it takes {takes}",
                           li.param_positions[name])
                continue
            v = self.convert_param(li, ps, value, rec)
            if v is not None:
                li.params[name] = v
        for ps in li.layer.params:
            if ps.name in li.params or ps.name in raw:
                continue
            if ps.required:
                self.error(f"layer '{li.name}' in container '{li.container.name}' needs "
                           f"parameter '{ps.name}' ({ps.doc})", li.pos)
            else:
                li.params[ps.name] = ps.default
        k = li.params.get("key")
        if isinstance(k, tuple):
            li.key_field_obj = composite_key(li.container, rec, k, li.param_pos("key"))
        elif li.layer.key_field(li) is not None:
            li.key_field_obj = rec.field(li.layer.key_field(li))

    def convert_param(self, li: LayerInstance, ps, value, rec: Record):
        where = f"parameter '{ps.name}' of layer '{li.name}'"
        if ps.kind == "field" and value.kind == "names":
            return self.convert_composite_key(li, ps, value, rec)
        if ps.kind == "field":
            if value.kind != "name":
                self.error(f"{where} must be a field name of record '{rec.name}'", value.pos)
                return None
            f = rec.field(value.value)
            if f is None:
                self.error(f"{where}: '{value.value}' is not a field of record '{rec.name}'"
                           f"{_suggest(value.value, [x.name for x in rec.fields])}", value.pos)
                return None
            if f.type.kind not in ps.field_kinds:
                self.error(f"{where}: field '{f.name}' is {f.type.spelled()}; this layer needs "
                           f"a key of kind {' or '.join(ps.field_kinds)}", value.pos)
                return None
            return f.name
        if ps.kind == "int":
            if value.kind != "int":
                self.error(f"{where} must be an integer, got {value.kind} {value.value!r}",
                           value.pos)
                return None
            if ps.min is not None and value.value < ps.min:
                self.error(f"{where} must be at least {ps.min}, got {value.value}", value.pos)
                return None
            if ps.max is not None and value.value > ps.max:
                self.error(f"{where} must be at most {ps.max}, got {value.value}", value.pos)
                return None
            return value.value
        if ps.kind == "str":
            if value.kind != "string":
                self.error(f"{where} must be a string in double quotes", value.pos)
                return None
            return value.value
        if ps.kind == "bool":
            if value.kind != "bool":
                self.error(f"{where} must be true or false", value.pos)
                return None
            return value.value
        if ps.kind == "choice":
            if value.kind != "name" or value.value not in ps.choices:
                self.error(f"{where} must be one of {', '.join(ps.choices)}, got "
                           f"{value.value!r}", value.pos)
                return None
            return value.value
        raise AssertionError(ps.kind)

    def check_key_names(self, info: ContainerInfo) -> None:
        """Two keys of one container with one name must be one key: (a, b_c) and (a_b, c)
        would both be `a_b_c` (one find, one key struct)."""
        seen: dict = {}
        for li in info.ds:
            k = li.key_field_obj
            if not isinstance(k, CompositeKey):
                continue
            other = seen.setdefault(k.name, k)
            if other.names != k.names:
                self.error(f"composite keys {other.text()} and {k.text()} of container "
                           f"'{info.name}' are both named '{k.name}' (the fields joined by "
                           f"'_'): rename a field", li.param_pos("key"))

    def convert_composite_key(self, li: LayerInstance, ps, value, rec: Record):
        """`key = (a, b)`: two or more distinct integer or char[N] fields of the record, on
        a layer whose key may be composite; the names as a tuple, else None (reported)."""
        where = f"parameter '{ps.name}' of layer '{li.name}'"
        if not ps.composite:
            takes = [n for n, l in layer_library.LAYERS.items()
                     if any(p.composite for p in l.params)]
            self.error(f"{where} must be one field name of record '{rec.name}': layer "
                       f"'{li.name}' takes no composite key (layers that do: "
                       f"{', '.join(takes)})", value.pos)
            return None
        names = value.value
        if len(names) < 2:
            self.error(f"{where}: a composite key needs two or more fields; write "
                       f"{ps.name} = {names[0]} for one", value.pos)
            return None
        ok = self.check_key_fields(where, rec, names, value.parts, True, value.pos)
        return tuple(names) if ok else None

    def check_key_fields(self, where: str, rec: Record, names, positions, composite: bool,
                         pos) -> bool:
        """The fields a key names, for a layer's `key = (a, b)` and for `find c by …`
        alike: each a field of `rec`, none twice; a composite key's of integer and char[N]
        fields and not named (joined by '_') like a field, a lone field not text. Each
        fault reported at the name it concerns (`pos`: the whole key's); True when none."""
        ok = True
        for i, (n, at) in enumerate(zip(names, positions)):
            f = rec.field(n)
            if f is None:
                self.error(f"{where}: '{n}' is not a field of record '{rec.name}'"
                           f"{_suggest(n, [x.name for x in rec.fields])}", at)
                ok = False
            elif n in names[:i]:
                self.error(f"{where}: field '{n}' appears twice in the composite key "
                           f"({', '.join(names)})", at)
                ok = False
            elif composite and f.type.kind not in ("int", "char"):
                self.error(f"{where}: field '{n}' is {f.type.spelled()}; a composite key "
                           f"is made of integer and char[N] fields", at)
                ok = False
            elif f.type.kind == "text":
                self.error(f"{where}: field '{n}' is text; a find takes an integer, float, "
                           f"char[N] or ref field", at)
                ok = False
        joined = "_".join(names)
        if ok and composite and rec.field(joined) is not None:
            self.error(f"{where}: the composite key ({', '.join(names)}) is named "
                       f"'{joined}' (its find function is find_{joined}), which is already a "
                       f"field of record '{rec.name}'", pos)
            ok = False
        return ok

    # -- declared finds -------------------------------------------------------------
    def check_find(self, fd, containers: dict) -> None:
        """`find c by k;` / `find c by (a, b);`: fields of c's record that a find can take
        (integer, float, char[N] or ref; a composite key of integer and char[N] fields),
        declared once. Kept on the container (ContainerInfo.declared_finds): its find then
        exists whatever the equation."""
        info = containers.get(fd.container)
        if info is None:
            if self.spec.container(fd.container) is None:
                self.error(f"find: container '{fd.container}' is not declared"
                           f"{_suggest(fd.container, list(containers))}", fd.container_pos)
            return
        rec = info.record
        names = fd.names
        if fd.composite and len(names) < 2:
            self.error(f"find on '{fd.container}': a composite key needs two or more fields; "
                       f"write `find {fd.container} by {names[0]};` for one", fd.name_pos[0])
            return
        if not self.check_key_fields(f"find on '{fd.container}'", rec, names, fd.name_pos,
                                     fd.composite, fd.pos):
            return
        if fd.composite:
            key = composite_key(info, rec, names, fd.pos)
        else:
            key = rec.field(names[0])
        for k0, p0 in info.declared_finds:
            if k0.name == key.name:
                shown = [f"({', '.join(k.names)})" if isinstance(k, CompositeKey) else k.name
                         for k in (k0, key)]
                if shown[0] != shown[1]:
                    self.error(f"finds {shown[0]} and {shown[1]} of container "
                               f"'{info.name}' are both named '{key.name}' (the fields joined "
                               f"by '_'): rename a field", fd.pos)
                else:
                    self.error(f"find on '{fd.container}' by {key.name} is already declared "
                               f"at line {p0.line}", fd.pos)
                return
        for lk in info.layer_keys():
            if lk.name == key.name and isinstance(lk, CompositeKey) != fd.composite \
                    or (isinstance(lk, CompositeKey) and fd.composite and lk.name == key.name
                        and lk.names != key.names):
                self.error(f"find on '{fd.container}' by {key.name}: the equation has a "
                           f"different key of that name", fd.pos)
                return
        info.declared_finds.append((key, fd.pos))

    # -- cursors -----------------------------------------------------------------
    def check_cursor(self, k: Cursor, containers: dict) -> Optional[CursorInfo]:
        info = containers.get(k.container)
        if info is None:
            if self.spec.container(k.container) is None:
                self.error(f"cursor '{k.name}' is on container '{k.container}', which is not "
                           f"declared{_suggest(k.container, list(containers))}", k.container_pos)
            return None
        rec = info.record
        params: dict[str, tuple[FieldType, Pos]] = {}
        errors_before = len(self.errors)
        if k.where is not None:
            self.check_expr(k.where, rec, params, k.name)
            if not info.qualifies:
                self.error(f"cursor '{k.name}' has a where-clause, but the equation of "
                           f"container '{info.name}' has no qualifying layer: use "
                           f"top2ds_qualify or put qualify above top2ds", k.pos)
        order = None
        if k.order_by is not None:
            f = rec.field(k.order_by.name)
            if f is None:
                self.error(f"cursor '{k.name}': cannot order by '{k.order_by.name}': not a "
                           f"field of record '{rec.name}'"
                           f"{_suggest(k.order_by.name, [x.name for x in rec.fields])}",
                           k.order_by.pos)
            elif f.type.kind == "text":
                self.error(f"cursor '{k.name}': cannot order by '{f.name}': it is text "
                           f"(variable-length)", k.order_by.pos)
            else:
                order = f.name
        ci = CursorInfo(k.name, info, k.where, order,
                        [(n, t) for n, (t, _) in params.items()], k.pos,
                        descending=k.descending and order is not None,
                        direction_pos=k.direction_pos)
        if k.where is not None and len(self.errors) == errors_before:
            self.fold_cursor(ci, rec)
        return ci

    def fold_cursor(self, ci: CursorInfo, rec: Record) -> None:
        """Decide the comparisons of one number field against constants that meet in one
        conjunction (or disjunction) of the cursor's where-clause, as C compilers do (gcc
        refuses `d == 1 && d == 2`, "and of mutually exclusive equal-tests is always 0",
        and `d != 1 || d != 2` under -Werror): comparisons that can never hold together
        are an error, and so are comparisons one of which always holds; a comparison the
        others already imply (cover) is folded away (`ci.folded`). Comparisons whose field's
        type alone decides them (`u8 >= 0`) stay as the renderer folds them."""
        where = ci.where
        while True:
            # folding away a comparison may leave one alone in its chain, which then
            # joins the chain around it: fold again until nothing changes
            before, errors = len(ci.folded), len(self.errors)
            for kind, members, root in _where_chains(where):
                groups: dict = {}
                for leaf, neg in members:
                    term = _const_term(leaf, rec)
                    if term is not None:
                        groups.setdefault(term[0].name, []).append((leaf, neg, term))
                for group in groups.values():
                    if len(group) > 1:
                        self._fold_group(ci, kind, group, root)
            if len(ci.folded) == before or len(self.errors) > errors:
                break
            where = _without(ci.where, {id(c) for c, _why in ci.folded})
        ci.folded_where = where if ci.folded else None

    def _fold_group(self, ci: CursorInfo, kind: type, group: list, root: bool) -> None:
        f = group[0][2][0]
        t = f.type
        full = [_domain(t)]
        sets = [_term_set(term, neg, t) for _leaf, neg, term in group]
        texts = [_member_text(leaf, neg) for leaf, neg, _term in group]
        conj = kind is And
        # the comparisons the type alone does not decide
        live = [i for i, s in enumerate(sets) if (s if conj else s != full)]
        combine = _intersect if conj else _unite
        acc = None
        for n, i in enumerate(live):
            acc = sets[i] if acc is None else combine(acc, sets[i])
            if (not acc) if conj else acc == full:
                core = _core(live[:n + 1], i, sets, combine, conj, full)
                joined = _joined([texts[j] for j in core], " and " if conj else " or ")
                if conj:
                    what = ("so the cursor never yields an element" if root
                            else "so this part of the where-clause is always false")
                    self.error(f"cursor '{ci.name}': {joined} can never hold together: no "
                               f"{t.spelled()} value of field '{f.name}' satisfies all of "
                               f"them, {what}; drop or correct one", group[i][0].pos)
                else:
                    what = ("so the where-clause always holds" if root
                            else "so this part of the where-clause always holds")
                    self.error(f"cursor '{ci.name}': {joined}: every {t.spelled()} value of "
                               f"field '{f.name}' satisfies one of them, {what}; drop or "
                               f"correct one", group[i][0].pos)
                return
        # implied (conjunction) or covered (disjunction) by the others: folded away, the
        # later of two alike first. The others of member i: every member before it (none
        # folded yet: `before`) and those after it that stay (`after`), so each member
        # costs one combination however long the chain.
        n = len(group)
        before = [None] * n
        for i in range(1, n):
            before[i] = sets[0] if i == 1 else combine(before[i - 1], sets[i - 1])
        after, kept = None, set(range(n))
        for i in reversed(range(n)):
            parts = [x for x in (before[i], after) if x is not None]
            rest = _combine_all(parts, combine) if parts else None
            if rest is not None and (_subset(rest, sets[i]) if conj
                                     else _subset(sets[i], rest)):
                need = _core_for(sorted(kept - {i}), i, sets, combine, conj)
                by = _joined([texts[j] for j in need], " and " if conj else " or ")
                why = f"implied by {by}" if conj else f"covered by {by}"
                ci.folded.append((group[i][0], why))
                kept.discard(i)
            else:
                after = sets[i] if after is None else combine(after, sets[i])

    def check_expr(self, e: Expr, rec: Record, params: dict, cname: str) -> None:
        # the comparisons left to right, without recursion (however the tree is shaped)
        todo = [e]
        while todo:
            e = todo.pop()
            if isinstance(e, (And, Or)):
                todo += (e.right, e.left)
            elif isinstance(e, Not):
                todo.append(e.operand)
            else:
                self.check_compare(e, rec, params, cname)

    def check_compare(self, c: Compare, rec: Record, params: dict, cname: str) -> None:
        fields = []
        for side in (c.left, c.right):
            if isinstance(side, FieldRef):
                f = rec.field(side.name)
                if f is None:
                    self.error(f"cursor '{cname}': '{side.name}' is not a field of record "
                               f"'{rec.name}'{_suggest(side.name, [x.name for x in rec.fields])}",
                               side.pos)
                    return
                if f.type.kind == "text":
                    self.error(f"cursor '{cname}': field '{f.name}' is text (variable-length); "
                               f"predicates compare fixed-size fields only", side.pos)
                    return
                fields.append(f)
        if not fields:
            self.error(f"cursor '{cname}': a comparison must involve a field of record "
                       f"'{rec.name}'", c.pos)
            return
        ftype = fields[0].type
        if len(fields) == 2:
            a, b = fields[0].type, fields[1].type
            if (a.kind == "char") != (b.kind == "char"):
                self.error(f"cursor '{cname}': cannot compare {fields[0].name} "
                           f"({a.spelled()}) with {fields[1].name} ({b.spelled()})", c.pos)
            elif a.kind == "int" and b.kind == "int" and a.signed != b.signed:
                def sign(f):
                    return f"{'signed' if f.type.signed else 'unsigned'} {f.name} ({f.type.spelled()})"
                self.error(f"cursor '{cname}': comparing {sign(fields[0])} with "
                           f"{sign(fields[1])} is ambiguous in C; compare fields of "
                           f"the same signedness", c.pos)
            return
        for side in (c.left, c.right):
            if isinstance(side, ParamRef):
                self.check_identifier(side.name, "parameter", side.pos)
                prev = params.get(side.name)
                if prev is not None and prev[0] != ftype:
                    self.error(f"cursor '{cname}': parameter ${side.name} is compared with a "
                               f"{ftype.spelled()} field here but a {prev[0].spelled()} field "
                               f"at line {prev[1].line}", side.pos)
                elif prev is None:
                    params[side.name] = (ftype, side.pos)
            elif isinstance(side, Const):
                self.check_const(side, fields[0], cname)

    def check_const(self, k: Const, f: Field, cname: str) -> None:
        t = f.type
        if t.kind == "char":
            if k.kind != "string":
                self.error(f"cursor '{cname}': field '{f.name}' is {t.spelled()}; compare it "
                           f"with a string", k.pos)
            elif len(_spec_bytes(k.value)) > t.length:
                self.error(f"cursor '{cname}': string of {len(_spec_bytes(k.value))} bytes can "
                           f"never equal field '{f.name}' ({t.spelled()})", k.pos)
            return
        if k.kind == "string":
            self.error(f"cursor '{cname}': field '{f.name}' is {t.spelled()}; cannot compare "
                       f"it with a string", k.pos)
        elif t.kind == "float" and k.kind == "float" and not math.isfinite(k.value):
            self.error(f"cursor '{cname}': {k.value} is not a finite number (field '{f.name}' "
                       f"is {t.spelled()}); write the bound you mean", k.pos)
        elif t.kind == "int":
            if k.kind != "int":
                self.error(f"cursor '{cname}': field '{f.name}' is {t.spelled()}; compare it "
                           f"with an integer, got {k.value}", k.pos)
            elif not (t.min_value <= k.value <= t.max_value):
                self.error(f"cursor '{cname}': {k.value} is out of range for field "
                           f"'{f.name}' ({t.spelled()}: {t.min_value} .. {t.max_value})", k.pos)

    # -- whole spec ----------------------------------------------------------------
    def run(self) -> CheckedSpec:
        self.check_names()
        self.check_record_sizes()
        containers: dict[str, ContainerInfo] = {}
        for decl in self.spec.containers:
            if decl.name in containers:
                continue
            info = self.check_container(decl)
            if info is not None:
                containers[decl.name] = info
        self.narrow_records(list(containers.values()))
        cursors = []
        seen = set()
        for k in self.spec.cursors:
            if k.name.endswith("_all") and k.name[:-4] in containers:
                self.error(f"cursor name '{k.name}' is taken by the cursor over every element "
                           f"of container '{k.name[:-4]}'", k.pos)
                continue
            if k.name in seen:
                continue
            seen.add(k.name)
            ci = self.check_cursor(k, containers)
            if ci is not None:
                cursors.append(ci)
                ci.container.cursors.append(ci)
        for fd in self.spec.finds:
            self.check_find(fd, containers)
        self.normalise_file_names(list(containers.values()))
        files = self.group_files(list(containers.values()))
        self.check_reserves(files)
        for info in containers.values():
            self.check_ref_fields(info, containers)
        rels = []
        for decl in self.spec.relationships:
            ri = self.check_relationship(decl, containers)
            if ri is not None:
                rels.append(ri)
        self.check_spec_text(list(containers.values()))
        self.fail_if_errors()
        checked = CheckedSpec(self.spec, self.prefix, self.spec.records,
                              list(containers.values()), cursors, files, rels)
        for info in checked.containers:
            add_synthetic_cursors(info)
        for fi in files:
            fi.fingerprint = fingerprint(fi, rels)
        return checked

    # -- spec text that reaches C ------------------------------------------------------
    # Strings (file names, string constants) are spelled into the generated C by
    # render.c_text, which can spell any bytes; what it cannot spell is a lone surrogate
    # that stands for no byte (only a str given to parse() can hold one). A file name is
    # also handed to open(2): no NUL inside, and it must fit the path buffers.
    def check_spec_text(self, containers: list) -> None:
        def each_const(e):
            if isinstance(e, (And, Or)):
                yield from each_const(e.left)
                yield from each_const(e.right)
            elif isinstance(e, Not):
                yield from each_const(e.operand)
            elif isinstance(e, Compare):
                yield from (o for o in (e.left, e.right) if isinstance(o, Const))

        def encodable(text: str, what: str, pos: Pos) -> Optional[bytes]:
            try:
                return text.encode("utf-8", "surrogateescape")
            except UnicodeEncodeError as err:
                self.error(f"{what}: character {err.object[err.start]!r} is a lone surrogate, "
                           f"which stands for no byte; strings must be UTF-8 text", pos)
                return None

        for k in self.spec.cursors:
            for c in (each_const(k.where) if k.where is not None else ()):
                if c.kind == "string":
                    encodable(c.value, f"cursor '{k.name}': string constant", c.pos)
        for info in containers:
            for li in info.chain:
                for name, value in li.params.items():
                    if not isinstance(value, str):
                        continue
                    what = f"container '{info.name}', layer {li.name}: parameter '{name}'"
                    b = encodable(value, what, li.param_pos(name))
                    if b is None or not (isinstance(li.layer, MemLayer)
                                         and name == li.layer.file_param):
                        continue
                    if b"\0" in b:
                        self.error(f"{what}: a file name cannot hold a NUL character",
                                   li.param_pos(name))
                    elif len(b) > MAX_FILE_NAME:
                        self.error(f"{what}: the file name is {len(b)} bytes long, at most "
                                   f"{MAX_FILE_NAME} allowed (PATH_MAX)", li.param_pos(name))

    # -- references and relationships ---------------------------------------------
    # References between elements are storage references: they must stay put, and mean the
    # same after a reopen (one memory for both ends).
    def _stable(self, what: str, dst: ContainerInfo, pos: Pos) -> bool:
        st = dst.storage
        if st.layer.stable_refs:
            return True
        self.error(f"{what} points into container '{dst.name}', whose storage "
                   f"'{st.name}' moves elements to keep them sorted, so a reference "
                   f"would go stale; use array, iarray or malloc storage there", pos)
        return False

    def _same_memory(self, what: str, a: ContainerInfo, b: ContainerInfo, pos: Pos) -> bool:
        if a.persistent == b.persistent and (not a.persistent or a.file == b.file):
            return True

        def where(c):
            return f"file \"{c.file}\"" if c.persistent else f"{c.mem.name} memory"
        heap = next((c for c in (a, b) if not c.persistent), a)
        self.error(f"{what} links container '{a.name}' ({where(a)}) with '{b.name}' "
                   f"({where(b)}): a reference only means something inside one memory; put "
                   f"both in the same file, or both in {where(heap)}", pos)
        return False

    def check_ref_fields(self, info: ContainerInfo, containers: dict) -> None:
        for f in info.ref_fields:
            dst = containers.get(f.type.target)
            if dst is None:
                if self.spec.container(f.type.target) is None:
                    self.error(f"field '{f.name}' of record '{info.record.name}' is a ref to "
                               f"container '{f.type.target}', which is not declared"
                               f"{_suggest(f.type.target, list(containers))}", f.pos)
                continue
            what = f"field '{f.name}' (ref {dst.name}) of container '{info.name}'"
            stable = self._stable(what, dst, f.pos)
            if self._same_memory(what, info, dst, f.pos) and stable:
                dst.referenced = dst.ref_target = True

    def check_relationship(self, decl: Relationship, containers: dict) -> Optional[RelInfo]:
        ends = []
        for end in (decl.left, decl.right):
            info = containers.get(end.container)
            if info is None:
                if self.spec.container(end.container) is None:
                    self.error(f"relationship '{decl.name}': container '{end.container}' is "
                               f"not declared{_suggest(end.container, list(containers))}",
                               end.container_pos)
                return None
            ends.append(info)
        app = decl.equation
        layer = layer_library.get(app.name)
        if layer is None:
            self.error(f"unknown layer '{app.name}'"
                       f"{_suggest(app.name, list(layer_library.LAYERS))}", app.pos)
            return None
        if layer.realm != "rel":
            rel_layers = ", ".join(n for n, l in layer_library.LAYERS.items() if l.realm == "rel")
            self.error(f"relationship '{decl.name}' is stored by a layer of realm 'rel' "
                       f"({rel_layers}), got '{app.name}' (realm '{layer.realm}')", app.pos)
            return None
        if app.below is not None:
            self.error(f"layer '{app.name}' (realm 'rel') takes nothing below it: it keeps "
                       f"its links in the elements and the containers' memory, got "
                       f"'{app.below.name}'", app.below.pos)
            return None
        params = self.rel_params(decl, layer)
        ri = RelInfo(decl, layer, params)
        # each end's role holds the other end's elements
        ri.left = RoleInfo(ri, ends[0], decl.left.role, decl.right.many, decl.left.role_pos)
        ri.right = RoleInfo(ri, ends[1], decl.right.role, decl.left.many, decl.right.role_pos)
        ri.left.partner, ri.right.partner = ri.right, ri.left
        ok = True
        for role in ri.roles:
            info = role.container
            self.check_identifier(role.name, "role", role.pos)
            clash = None
            if info.record.field(role.name) is not None:
                clash = f"a field of record '{info.record.name}'"
            elif any(r.name == role.name for r in info.roles):
                other = next(r for r in info.roles if r.name == role.name)
                clash = f"already a role of '{info.name}' in relationship '{other.rel.name}'"
            elif role.name in RESERVED_ROLES or role.name.startswith(("find_", "set_", "get_")):
                clash = f"taken by the generated API of container '{info.name}'"
            if clash:
                self.error(f"relationship '{decl.name}': role '{role.name}' of container "
                           f"'{info.name}' is {clash}", role.pos)
                ok = False
        for role, end in ((ri.left, decl.left), (ri.right, decl.right)):
            ok = self.check_role_order(decl, layer, role, end) and ok
        if ri.left.container is ri.right.container and ri.left.name == ri.right.name:
            self.error(f"relationship '{decl.name}': both ends are role '{ri.left.name}' of "
                       f"container '{ri.left.container.name}'; a relationship of a container "
                       f"with itself needs two roles (e.g. kids and parent)", decl.right.role_pos)
            ok = False
        for info in dict.fromkeys(ends):
            bits = info.mem.layer.link_bits(info.mem)
            if bits < 64 and not layer.narrow_links:
                param = info.mem.layer.links_param
                self.error(f"relationship '{decl.name}': layer '{layer.name}' stores its "
                           f"links in 64 bits and container '{info.name}' is over "
                           f"{info.mem.name}({param} = {info.mem.params.get(param)}), whose "
                           f"references are {bits}-bit; use layers that store {bits}-bit "
                           f"links ({self._narrow_layers()}) or "
                           f"{info.mem.name}({param} = offset64)", app.pos)
                ok = False
                break
        why = layer.unsupported(ri)
        if why:
            self.error(f"relationship '{decl.name}' is {ri.kind}: {why}", app.pos)
            ok = False
        what = f"relationship '{decl.name}'"
        ok = self._same_memory(what, ends[0], ends[1], decl.pos) and ok
        for end in dict.fromkeys(ends):   # each container once (a self-relationship)
            ok = self._stable(what, end, decl.pos) and ok
        if not ok:
            return None
        for role in ri.roles:
            role.container.roles.append(role)
            role.container.referenced = True
        return ri

    def check_role_order(self, decl: Relationship, layer: Layer, role: RoleInfo, end) -> bool:
        """`order by FIELD [desc]` on a role: a collection, a number field of its members'
        record, a layer that keeps members in order (RelLayer.orders)."""
        if end.order_by is None:
            return True
        what = f"relationship '{decl.name}': role '{role.name}' of container '{role.container.name}'"
        if not role.many:
            self.error(f"{what} holds one element of '{role.partner.container.name}': only a "
                       f"collection (a role whose other end is 'many') can be ordered",
                       end.order_by.pos)
            return False
        rec = role.partner.container.record
        f = rec.field(end.order_by.name)
        if f is None:
            names = [x.name for x in rec.fields]
            self.error(f"{what}: record '{rec.name}' (its members) has no field "
                       f"'{end.order_by.name}'{_suggest(end.order_by.name, names)}",
                       end.order_by.pos)
            return False
        if f.type.kind not in ("int", "float") or f.type.target is not None:
            self.error(f"{what}: cannot be ordered by field '{f.name}' of type "
                       f"{f.type.spelled()}: ordered roles take a number field (an integer or a "
                       f"float)", end.order_by.pos)
            return False
        if not layer.orders:
            ordered = ", ".join(n for n, l in layer_library.LAYERS.items()
                                if l.realm == "rel" and l.orders)
            self.error(f"{what}: layer '{layer.name}' keeps members in the order they were "
                       f"added; an ordered role needs {ordered}", end.order_by.pos)
            return False
        role.order, role.descending = f, end.descending
        return True

    def rel_params(self, decl: Relationship, layer: Layer) -> dict:
        specs = {ps.name: ps for ps in layer.params}
        out = {}
        for p in decl.equation.params:
            ps = specs.get(p.name)
            if ps is None:
                takes = ", ".join(specs) if specs else "no parameters"
                self.error(f"layer '{layer.name}' has no parameter '{p.name}'"
                           f"{_suggest(p.name, list(specs))}; it takes {takes}", p.pos)
                continue
            if p.name in out:
                self.error(f"parameter '{p.name}' of layer '{layer.name}' is given twice",
                           p.pos)
                continue
            v = p.value
            if ps.kind != "int" or v.kind != "int":
                self.error(f"parameter '{p.name}' of layer '{layer.name}' must be an "
                           f"integer", v.pos)
                continue
            if (ps.min is not None and v.value < ps.min) or (ps.max is not None and v.value > ps.max):
                self.error(f"parameter '{p.name}' of layer '{layer.name}' must be in "
                           f"{ps.min} .. {ps.max}, got {v.value}", v.pos)
                continue
            out[p.name] = v.value
        for ps in layer.params:
            out.setdefault(ps.name, ps.default)
        return out

    def normalise_file_names(self, containers: list) -> None:
        """Each persistent file under one spelling: `"./x.db"`, `"x.db"` and `"d/../x.db"`
        are one file (normalised as os.path.normpath does, without looking at the file
        system), so containers naming it either way share it rather than opening it twice.
        Refuses names the runtime uses for itself: the files a mem layer keeps beside a
        data file (its `side_files`: `<file>-journal` is the journal of <file>), so no data
        file may end in such a suffix."""
        side = {suffix: what for layer in layer_library.LAYERS.values()
                if isinstance(layer, MemLayer) for suffix, what in layer.side_files.items()}
        for info in containers:
            param = info.mem.layer.file_param
            if param is None or not info.mem.params.get(param) or info.mem.layer.file_is_uri:
                continue
            path = info.mem.params[param]
            norm = posixpath.normpath(path)
            pos = info.mem.param_pos(param)
            suffix = next((x for x in side if norm.endswith(x)), None)
            if posixpath.basename(norm) in ("", ".", "..") or path.endswith("/"):
                self.error(f"file \"{path}\" of container '{info.name}' names a directory; "
                           f"{info.mem.name}({param} = ...) is the path of a file", pos)
            elif suffix is not None:
                what = side[suffix]
                self.error(f"file \"{path}\" of container '{info.name}' ends in "
                           f"\"{suffix}\", which names the {what} of a file (the {what} "
                           f"of \"{norm[:-len(suffix)]}\" is \"{norm}\"); choose another "
                           f"name", pos)
            info.mem.params[param] = norm

    def check_reserves(self, files: list) -> None:
        """Every file reserves its `reserve` bytes of address space when the database opens:
        together they must fit (each one alone is bounded by the parameter's maximum)."""
        total = 0
        for fi in files:
            total += fi.reserve
            if total > MAX_RESERVE:
                big = max(fi.containers, key=lambda c: c.mem_param("reserve_param", 0))
                param = big.mem.layer.reserve_param
                self.error(f"the files up to \"{fi.path}\" reserve {total} bytes of address "
                           f"space together, more than the {MAX_RESERVE} (64 TiB) a spec's files "
                           f"may; lower {big.mem.name}({param} = ...)", big.mem.param_pos(param))
                return

    def group_files(self, containers: list) -> list:
        files: dict[str, FileInfo] = {}
        for info in containers:
            path = info.file
            if path is None:
                continue
            if len(info.name) >= 48:
                self.error(f"container '{info.name}' is stored in file \"{path}\", whose "
                           f"header keeps names of at most 47 characters", info.decl.pos)
            fi = files.get(path)
            alloc = info.mem_param("alloc_param", "pow2")
            if fi is not None and fi.nroots == 60:
                also = (" beside the allocator's class table (alloc = exact)"
                        if fi.alloc == "exact" else "")
                self.error(f"file \"{path}\" already holds {len(fi.containers)} containers"
                           f"{also}, the most one file header has room for; put "
                           f"'{info.name}' in another file", info.decl.pos)
                continue
            # the mem layers over the file act on the whole file, opened once: every
            # container of the file must have the same ones, with the same parameters
            over = info.mems[:-1]
            if fi is not None and _mem_stack(fi.mems[:-1]) != _mem_stack(over):
                first = fi.containers[0]
                mine, theirs = dict(_mem_stack(fi.mems[:-1])), dict(_mem_stack(over))
                name = next(n for n in list(mine) + list(theirs)
                            if mine.get(n) != theirs.get(n))
                def says(p):
                    return f"no {name}" if p is None else f"{name}(" + ", ".join(
                        f"{k} = {show_value(v)}" for k, v in p) + ")"
                self.error(f"containers '{first.name}' and '{info.name}' share file \"{path}\" "
                           f"but not its {name}: '{first.name}' has {says(mine.get(name))}, "
                           f"'{info.name}' has {says(theirs.get(name))}; a memory layer over a "
                           f"file acts on the whole file", info.decl.pos)
                continue
            # one memory layer owns the file: its format (what a reference in it is) and
            # its open are that layer's
            if fi is not None and fi.mems[-1].name != info.mem.name:
                first = fi.containers[0]
                self.error(f"containers '{first.name}' and '{info.name}' share file \"{path}\" "
                           f"but not its memory layer: '{first.name}' is in {fi.mems[-1].name}, "
                           f"'{info.name}' in {info.mem.name}; one memory layer owns a file",
                           info.mem.pos)
                continue
            # one file, one link width: a reference stored by one container's layers may
            # point at another container's elements (relationships, ref fields)
            if fi is not None and fi.containers[0].mem.layer.link_bits(fi.containers[0].mem) \
                    != info.mem.layer.link_bits(info.mem):
                param = info.mem.layer.links_param
                self.shared_file_differs(fi.containers[0], info, path, "link width", param,
                                         fi.containers[0].mem.params.get(param),
                                         info.mem.params.get(param))
                continue
            # one file, one allocator: every block of it comes from the same free lists
            if fi is not None and fi.alloc != alloc:
                self.shared_file_differs(fi.containers[0], info, path, "allocator",
                                         info.mem.layer.alloc_param, fi.alloc, alloc,
                                         "; one file, one set of size classes")
                continue
            reserve = info.mem_param("reserve_param", 1 << 36)
            verify_open = info.mem_param("verify_open_param", True)
            if fi is None:
                files[path] = FileInfo(path, [info], reserve, mems=list(info.mems),
                                       verify_open=verify_open, alloc=alloc)
            else:
                fi.containers.append(info)
                fi.reserve = max(fi.reserve, reserve)
                # the safe side: checked if any container of the file asks for it
                fi.verify_open = fi.verify_open or verify_open
        # the spec's <prefix>_begin, _commit and _abort are written by the one mem layer that
        # gives its files transactions: two such layers would both write them
        first = None
        for fi in files.values():
            t = fi.transactions
            if t is None:
                continue
            first = first or t
            if t.name != first.name:
                other = first.name
                self.error(f"file \"{fi.path}\" gets transactions from layer '{t.name}' and "
                           f"another file from '{other}': a spec's transactions (begin, commit, "
                           f"abort) come from one kind of memory layer", t.pos)
                break
        self.check_spanning_servers([fi for fi in files.values() if fi.transactions is not None])
        return list(files.values())

    def shared_file_differs(self, first, info, path: str, what: str, param: str, theirs,
                            mine, why: str = "") -> None:
        """Containers `first` and `info` share file `path` but `what` of it (their memory
        layers' `param`: `theirs` and `mine`) differs: one error, at info's `param`."""
        self.error(f"containers '{first.name}' and '{info.name}' share file \"{path}\" "
                   f"but not its {what}: '{first.name}' has {first.mem.name}({param} = "
                   f"{theirs}), '{info.name}' has {info.mem.name}({param} = {mine}){why}",
                   info.mem.param_pos(param))

    def check_spanning_servers(self, tfiles: list) -> None:
        """A layer whose transactions span the spec's files (`wal`, spans_files) decides at
        open, from every file's log, how far each may replay (p2_wal_resolve, which reads
        local logs): a page server's commit is its own log export's, which that cannot read,
        so such a layer spans files only where none of them is on a server."""
        if len(tfiles) < 2:
            return
        for fi in tfiles:
            t, mem = fi.transactions, fi.mems[-1]
            if t.layer.spans_files and mem.layer.log_param is not None:
                others = ", ".join(f'"{o.path}"' for o in tfiles if o is not fi)
                self.error(f"layer '{t.name}' over '{mem.name}' (\"{fi.path}\") would commit "
                           f"together with the spec's other logged files ({others}): a "
                           f"transaction over several files is resolved from their logs at open, "
                           f"which a page server's log export cannot take part in; keep the "
                           f"spec's logged containers on one {mem.name} file, or use journal "
                           f"(each file's commits atomic by themselves)", t.pos)
                return


# ---------------------------------------------------------------------------
# Comparisons of a field against constants, decided together (Checker.fold_cursor)
# ---------------------------------------------------------------------------
# A value set of a field is a sorted list of disjoint closed intervals (lo, hi) of keys:
# an integer's values, or a float's places in its order (_float_key, _domain).


def _where_chains(where: Expr):
    """(kind, members, root) per chain of the where-clause: a run of `and`s (kind And) or
    `or`s (kind Or) read through `not`s as C compilers fold it (`not (a or b)` is
    `not a and not b`); members are its comparisons as (Compare, negated). `root`: the
    chain is the whole where-clause."""
    out = []

    def walk(e, neg: bool, chain: Optional[list], kind: Optional[type]) -> None:
        if isinstance(e, Not):
            walk(e.operand, not neg, chain, kind)
            return
        if isinstance(e, Compare):
            chain.append((e, neg))
            return
        own = And if isinstance(e, And) != neg else Or
        if own is not kind:
            chain = []
            out.append((own, chain, kind is None))
        for side in (e.left, e.right):
            walk(side, neg, chain, own)

    top: list = []
    walk(where, False, top, None)
    if top:   # the where-clause is one comparison (under `not`s): a chain of one
        out.append((And, top, True))
    return out


def _const_term(c: Compare, rec: Record):
    """(field, op, key) of `field op constant` on an integer or floating-point field
    (field on the left; key: the constant's place in the field's order, _float_key),
    else None."""
    l, r, op = c.left, c.right, c.op
    if isinstance(l, Const):
        l, r, op = r, l, {"<": ">", "<=": ">=", ">": "<", ">=": "<="}.get(op, op)
    if not (isinstance(l, FieldRef) and isinstance(r, Const)) or r.kind == "string" \
            or isinstance(r.value, bool):
        return None
    f = rec.field(l.name)
    if f is None:
        return None
    t = f.type
    if t.kind == "int":
        if r.kind != "int" or not t.min_value <= r.value <= t.max_value:
            return None
        return f, op, int(r.value)
    if t.kind == "float":
        key = _float_key(float(r.value), t.bits)
        return None if key is None else (f, op, key)
    return None


def _float_key(x: float, bits: int) -> Optional[int]:
    """An integer that orders the values of a `bits`-wide float as C compares them (both
    zeros alike), the value rounded to that width as the generated C casts it; None for
    NaN or a value the width cannot hold."""
    import struct
    if math.isnan(x):
        return None
    try:
        raw = struct.unpack("<i" if bits == 32 else "<q",
                            struct.pack("<f" if bits == 32 else "<d", x))[0]
    except OverflowError:
        return None
    mask = (1 << (bits - 1)) - 1
    return raw if raw >= 0 else -(raw & mask)


def _domain(t: FieldType) -> tuple:
    """The values of a field's type as keys: an integer's values; for a float every
    value from -inf to +inf, then NaN (one key past +inf)."""
    if t.kind == "int":
        return t.min_value, t.max_value
    inf = _float_key(math.inf, t.bits)
    return -inf, inf + 1


def _term_set(term, neg: bool, t: FieldType) -> list:
    """The values of the field's type (as keys) that satisfy `field op value`, or (`neg`)
    do not: a NaN satisfies only `!=` (and the negation of the others)."""
    _f, op, v = term
    lo, hi = _domain(t)
    top = hi if t.kind == "int" else hi - 1     # the largest ordered value (not NaN)
    spans = {"==": [(v, v)], "!=": [(lo, v - 1), (v + 1, hi)], "<": [(lo, v - 1)],
             "<=": [(lo, v)], ">": [(v + 1, top)], ">=": [(v, top)]}[op]
    spans = [(a, b) for a, b in spans if a <= b]
    if neg:
        spans = _complement(spans, lo, hi)
    return spans


def _complement(spans: list, lo: int, hi: int) -> list:
    out, at = [], lo
    for a, b in spans:
        if a > at:
            out.append((at, a - 1))
        at = b + 1
    if at <= hi:
        out.append((at, hi))
    return out


def _intersect(a: list, b: list) -> list:
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if lo <= hi:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def _unite(a: list, b: list) -> list:
    out: list = []
    for lo, hi in sorted(a + b):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def _subset(a: list, b: list) -> bool:
    return _intersect(a, b) == _unite(a, [])


def _combine_all(sets: list, combine) -> list:
    acc = sets[0]
    for s in sets[1:]:
        acc = combine(acc, s)
    return acc


# Naming the comparisons that make a verdict: a pair when one does, else a part of them
# none of which can be left out (found by leaving each out in turn, for a few), else all.
CORE_SEARCH = 24


def _core(members: list, last: int, sets: list, combine, conj: bool, full: list) -> list:
    """A smallest-by-deletion part of `members` (indexes into sets, `last` among them,
    kept) that is still empty (conj) or still everything (not conj)."""
    for j in members:
        if j != last:
            acc = combine(sets[j], sets[last])
            if (not acc) if conj else acc == full:
                return [j, last]
    core = list(members)
    if len(core) > CORE_SEARCH:
        return core
    for j in list(core):
        if j == last:
            continue
        trial = [x for x in core if x != j]
        acc = _combine_all([sets[x] for x in trial], combine)
        if (not acc) if conj else acc == full:
            core = trial
    return core


def _core_for(others: list, i: int, sets: list, combine, conj: bool) -> list:
    """A smallest-by-deletion part of `others` that still implies (conj) or covers (not
    conj) member i."""
    for j in others:
        if _subset(sets[j], sets[i]) if conj else _subset(sets[i], sets[j]):
            return [j]
    core = list(others)
    if len(core) > CORE_SEARCH:
        return core
    for j in list(core):
        trial = [x for x in core if x != j]
        if not trial:
            continue
        acc = _combine_all([sets[x] for x in trial], combine)
        if _subset(acc, sets[i]) if conj else _subset(sets[i], acc):
            core = trial
    return core


def _joined(texts: list, sep: str) -> str:
    """The comparisons' texts joined by `sep`; a long list shortened in the middle."""
    if len(texts) > 8:
        texts = texts[:3] + [f"... ({len(texts) - 5} more) ..."] + texts[-2:]
    return sep.join(texts)


def _member_text(c: Compare, neg: bool) -> str:
    text = expr_text(c)
    return f"not ({text})" if neg else text


def _without(e: Expr, drop: set) -> Optional[Expr]:
    """`e` without the comparisons whose ids are in `drop` (each taken out of the chain
    it is a member of); None when nothing is left."""
    if isinstance(e, Compare):
        return None if id(e) in drop else e
    if isinstance(e, Not):
        inner = _without(e.operand, drop)
        if inner is e.operand or inner is None:
            return e if inner is not None else None
        return Not(inner, e.pos)
    left, right = _without(e.left, drop), _without(e.right, drop)
    if left is None or right is None:
        return right if left is None else left
    if left is e.left and right is e.right:
        return e
    return type(e)(left, right, e.pos)


def _mem_stack(mems: list) -> list:
    """Mem layer instances as comparable (name, sorted parameters) pairs."""
    return [(li.name, tuple(sorted(li.params.items()))) for li in mems]


def add_synthetic_cursors(info: ContainerInfo) -> None:
    """Finds are cursors too: `find_<key>` is a cursor `key == $key`, planned like any other;
    `all` visits every element (used by bindings and purge)."""
    for k in info.keys():
        key = k.name
        pos = Pos("<find>", 0, 0)
        # a composite key: every field equal to its own parameter (a and b == $a and $b)
        fields = k.fields if isinstance(k, CompositeKey) else (k,)
        where = None
        for f in fields:
            c = Compare("==", FieldRef(f.name, pos), ParamRef(f.name, pos), pos)
            where = c if where is None else And(where, c, pos)
        ci = CursorInfo(f"find_{key}", info, where, None, [(f.name, f.type) for f in fields],
                        None, synthetic="find")
        info.finds[key] = ci
        info.cursors.append(ci)
    info.all_cursor = CursorInfo("all", info, None, None, [], None, synthetic="all")
    info.cursors.append(info.all_cursor)


def composite_key(info: ContainerInfo, rec: Record, names: tuple, pos: Pos) -> CompositeKey:
    """The key object of `key = (a, b)` in container `info` (checked fields)."""
    name = "_".join(names)
    t = CompositeType(f"{info.p}__key_{name}", tuple(rec.field(n) for n in names))
    return CompositeKey(name, t, pos)


def fingerprint(fi: FileInfo, rels: list = ()) -> int:
    """64 bits of SHA-256 over everything that fixes the layout of the file's contents."""
    digest = hashlib.sha256(fingerprint_text(fi, rels).encode()).digest()
    return int.from_bytes(digest[:8], "little")


def fingerprint_text(fi: FileInfo, rels: list = ()) -> str:
    """What the fingerprint hashes: one line per thing that fixes the file's layout."""
    parts = [f"p2gen-format {FORMAT_VERSION}"]
    for info in fi.containers:
        fields = ",".join(f"{f.name}:{f.type.spelled()}" for f in info.record.fields)
        parts.append(f"{info.name} of {info.record.name}{{{fields}}} = {info.equation_text()}")
    # relationships add link fields to the elements of the file's containers
    parts += [ri.text() for ri in rels if ri.left.container in fi.containers]
    # a storage that leads its elements (slots = line) puts the record before the other
    # layers' and the relationships' fields; without such fields the order is the usual one
    # (and so is the fingerprint)
    for info in fi.containers:
        st = info.storage
        others = info.roles or any(li.layer.elem_fields(li) for li in info.chain if li is not st)
        if st.layer.leads_element(st) and others:
            parts.append(f"{info.name}: storage fields and record first")
    # a layer whose element or root fields changed since its first layout (Layer.layout);
    # files without such a layer keep the fingerprint they had
    layouts = sorted({(li.layer.name, li.layer.layout) for info in fi.containers
                      for li in info.chain if li.layer.layout != 1})
    layouts += sorted({(ri.layer.name, ri.layer.layout) for ri in rels
                       if ri.left.container in fi.containers and ri.layer.layout != 1})
    parts += [f"layout {name} {v}" for name, v in layouts]
    # narrower links change every link field (64-bit files keep the fingerprint they had)
    mem = fi.containers[0].mem
    bits = mem.layer.link_bits(mem)
    if bits != 64:
        parts.append(f"links {bits}")
    # exact size classes add the allocator's class table as a root (pow2 files keep theirs)
    if fi.alloc != "pow2":
        parts.append(f"alloc {fi.alloc}")
    return "\n".join(parts)


def _spec_bytes(text: str) -> bytes:
    """The bytes a spec string stands for, as render.c_text spells them (a lone surrogate
    that stands for no byte counts as one byte here; check_spec_text refuses it)."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace")


def _suggest(name: str, choices: list) -> str:
    close = difflib.get_close_matches(name, choices, n=1)
    return f"; did you mean '{close[0]}'?" if close else ""


def spec_prefix(path: str) -> str:
    stem = re.sub(r"\.p2$", "", path.replace("\\", "/").rsplit("/", 1)[-1])
    ident = re.sub(r"[^A-Za-z0-9_]", "_", stem) or "spec"
    if ident[0].isdigit():
        ident = "s" + ident
    return ident


def check(spec: Spec, prefix: Optional[str] = None) -> CheckedSpec:
    prefix = prefix or spec_prefix(spec.path)
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", prefix) or prefix in C_KEYWORDS:
        raise SpecError(f"prefix '{prefix}' is not a valid C identifier")
    return Checker(spec, prefix).run()


def _default_words(d) -> str:
    """A default's value in an error message."""
    if d.kind == "string":
        return f'"{d.value}"'
    if d.kind == "names":
        return "(" + ", ".join(d.value) + ")"
    return str(d.value).lower() if d.kind == "bool" else str(d.value)
