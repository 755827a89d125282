"""The relevant equation space of one container, from the layer registry.

Relevant: keys only on what the spec asks for (its finds and the fields its cursors compare
or order by), at most one index per key (one per access path), the top layers (qualify,
delflag) and the memory (transient, persistent, journal or WAL, their file) as written,
and a unique key kept unique. The storage is any storage layer of the registry (one
keyed on a field of interest for a storage that takes a key: iarray, qsort); each index
is any index layer of the registry whose `key` parameter is a field (or a composite key,
where the layer takes one), with `unique = true` where the spec's key is unique. Sizes
(buckets, capacities, a btree's node) are chosen from the profile (tune_rank).

Beyond the declaration, two axes change other lines of the spec:
- the file's options (`links`, `alloc` of the memory layer that owns the file, each a
  choice of its registry entry): per file, so every container of that file gets the same;
  `links` only where no record in the file has a ref or text field (32-bit links narrow
  them: another API);
- the layer of each relationship the container plays a role in: any `rel` layer of the
  registry that stores its kind (1:1, 1:N, M:N).
`Space.spec_text` makes those edits (`Edit`: where, the text written, the text it
replaces), which tune_write writes back reversibly.

Legality is predicted, not checked per candidate: a stack is taken as legal when the
file's options are legal with the spec as written, its storage is legal alone, each of its
indexes is legal over that storage alone, and each relationship's layer is legal over
that storage alone (one check each, cached, each with the file's options), which the tests
compare with the checker's verdict on random stacks.
"""
from __future__ import annotations

import itertools
import json
import random
from dataclasses import dataclass
from typing import Optional

from .check import check
from .errors import P2Error
from .ir import CheckedSpec, ContainerInfo, LayerInstance
from .layers import LAYERS
from .model import CompositeKey, Compare, FieldRef, chain_terms, And
from .parser import parse


@dataclass(frozen=True)
class Index:
    layer: str
    key: tuple          # field names: one, or a composite key
    unique: bool = False

    def text(self) -> str:
        key = self.key[0] if len(self.key) == 1 else "(" + ", ".join(self.key) + ")"
        return f"{self.layer}(key = {key}{', unique = true' if self.unique else ''})"


@dataclass(frozen=True)
class Stack:
    """A candidate: indexes outermost first over a storage (a layer, its key or None), the
    file's options (`file_opts`: (param, value) pairs, the spec's own where empty) and the
    relationships' layers (`rels`: (relationship, layer) pairs where they differ from the
    spec)."""
    indexes: tuple
    storage: str
    storage_key: Optional[str] = None
    file_opts: tuple = ()
    rels: tuple = ()

    def storage_text(self) -> str:
        return f"{self.storage}(key = {self.storage_key})" if self.storage_key else self.storage


def _param_text(li: LayerInstance, name: str) -> str:
    v = li.params[name]
    spec = next(p for p in li.layer.params if p.name == name)
    if isinstance(v, bool):
        return f"{name} = {'true' if v else 'false'}"
    if isinstance(v, tuple):
        return f"{name} = ({', '.join(v)})"
    if spec.kind == "str":
        return f"{name} = {json.dumps(v)}"
    return f"{name} = {v}"


def _written(li: LayerInstance, opts: tuple = ()) -> str:
    """A layer with the parameters the spec gave it (inline or in `with`), those of `opts`
    ((param, value) pairs) set to their value (left out where that is the default and the
    spec did not give it)."""
    given = dict(opts)
    texts = []
    for p in li.layer.params:
        if p.name in given:
            if p.name in li.param_positions or given[p.name] != p.default:
                texts.append(f"{p.name} = {given[p.name]}")
        elif p.name in li.param_positions:
            texts.append(_param_text(li, p.name))
    return li.name + (f"({', '.join(texts)})" if texts else "")


@dataclass(frozen=True)
class Edit:
    """A change of the spec outside the container's declaration: `old` at [start, end)
    becomes `new` (one line each)."""
    start: int
    end: int
    old: str
    new: str


class Space:
    """The relevant space of container `name` of a spec's text (`source`)."""

    def __init__(self, source: str, name: str, path: str = "<spec>"):
        self.source, self.path, self.name = source, path, name
        checked = check(parse(source, path))
        info = checked.container(name)
        if info is None:
            raise P2Error(f"no container '{name}' in {path}")
        self.info = info
        self.tops = [_written(li) for li in info.tops]
        self.mems = [_written(li) for li in info.mems]
        self.keys = self._keys(checked, info)
        self._file_spans: list = []     # the other containers' memory parameters (edits)
        self.file_axes = self._file_axes(checked, info)
        self.rel_axes = self._rel_axes(checked, info)
        self.unique = {tuple(li.key_field_obj.names if isinstance(li.key_field_obj, CompositeKey)
                             else (li.key_field_obj.name,))
                       for li in info.ds if li.params.get("unique") and li.key_field_obj}
        self._legal: dict = {}

    @staticmethod
    def _keys(checked: CheckedSpec, info: ContainerInfo) -> list:
        """The keys the spec asks for: its finds' (a layer's or declared), then the fields
        its cursors compare with a value or order by, in order, without repeats."""
        out = []
        for k in info.keys():
            out.append(tuple(k.names) if isinstance(k, CompositeKey) else (k.name,))
        for cur in checked.cursors:
            if cur.container is not info:
                continue
            terms = chain_terms(cur.where, And) if cur.where is not None else []
            for t in terms:
                if isinstance(t, Compare):
                    for side in (t.left, t.right):
                        if isinstance(side, FieldRef):
                            out.append((side.name,))
            if cur.order_by:
                out.append((cur.order_by,))
        seen, uniq = set(), []
        for k in out:
            if k not in seen:
                seen.add(k)
                uniq.append(k)
        return uniq

    def _file_axes(self, checked: CheckedSpec, info: ContainerInfo) -> list:
        """[(param, (choices...))] of the file's memory layer: `links` (where no record in
        the file has a ref or text field) and `alloc`; [] where the memory is not a file
        or another container's memory parameters are not on one line (not edited)."""
        mem = info.mem
        if info.file is None:
            return []
        sharing = [c for c in checked.containers if c.file == info.file]
        for c in sharing:
            if c is info:
                continue
            span = _mem_args_span(self.source, c)
            if span is None:
                self._file_spans = []
                return []
            self._file_spans.append(span)
        out = []
        for attr in ("links_param", "alloc_param"):
            name = getattr(mem.layer, attr, None)
            if not name:
                continue
            if attr == "links_param" and any(c.ref_fields or c.text_fields for c in sharing):
                continue
            spec = next(p for p in mem.layer.params if p.name == name)
            out.append((name, tuple(spec.choices)))
        return out

    def _rel_axes(self, checked: CheckedSpec, info: ContainerInfo) -> list:
        """[(relationship, (rel layers that store its kind...))] of the relationships the
        container plays a role in, whose layer is written on one line."""
        out = []
        for ri in checked.relationships:
            if info not in (ri.left.container, ri.right.container):
                continue
            if _rel_layer_span(self.source, ri) is None:
                continue
            layers = tuple(n for n, l in LAYERS.items()
                           if l.realm == "rel" and ri.kind in getattr(l, "kinds", ()))
            if len(layers) > 1:
                out.append((ri.name, layers))
        self._rels = {ri.name: ri for ri in checked.relationships}
        return out

    def file_choices(self) -> list:
        """Every combination of the file's options ((param, value) pairs; () the spec's)."""
        if not self.file_axes:
            return [()]
        mem = self.info.mem
        own = tuple((p, str(mem.params[p])) for p, _ in self.file_axes)
        out = [()]
        for combo in itertools.product(*(ch for _, ch in self.file_axes)):
            opts = tuple(zip((p for p, _ in self.file_axes), combo))
            if opts != own:
                out.append(opts)
        return out

    def rel_choices(self) -> list:
        """Every combination of the relationships' layers ((rel, layer) pairs where they
        differ from the spec's; () the spec's)."""
        out = []
        per = [[(r, l) for l in ls] for r, ls in self.rel_axes]
        for combo in itertools.product(*per):
            out.append(tuple((r, l) for r, l in combo if l != self._rels[r].layer.name))
        return out or [()]

    # -- the registry's choices ---------------------------------------------------------------
    def index_choices(self, key: tuple) -> list:
        out = []
        for name, layer in LAYERS.items():
            if layer.realm != "ds" or layer.role != "index":
                continue
            kp = next((p for p in layer.params if p.name == "key" and p.kind == "field"), None)
            if kp is None or (len(key) > 1 and not kp.composite):
                continue
            unique = key in self.unique
            if unique and not any(p.name == "unique" for p in layer.params):
                continue
            out.append(Index(name, key, unique))
        return out

    def storage_choices(self) -> list:
        out = []
        for name, layer in LAYERS.items():
            if layer.realm != "ds" or layer.role != "storage":
                continue
            if any(p.name == "key" and p.kind == "field" for p in layer.params):
                out += [(name, k[0]) for k in self.keys if len(k) == 1]
            else:
                out.append((name, None))
        return out

    # -- equations and specs ---------------------------------------------------------------
    def mems_of(self, file_opts: tuple) -> list:
        """The container's memory layers as written, the file's options set to `file_opts`."""
        if not file_opts:
            return self.mems
        return [_written(li, file_opts) if li is self.info.mem else t
                for li, t in zip(self.info.mems, self.mems)]

    def equation(self, st: Stack) -> str:
        parts = (self.tops + [i.text() for i in st.indexes] + [st.storage_text()]
                 + self.mems_of(st.file_opts))
        text = parts[-1]
        for p in reversed(parts[:-1]):
            text = f"{p}[{text}]"
        return text

    def edits(self, st: Stack) -> list:
        """The changes `st` makes outside the declaration: the file's options in every
        other container of the file, and the relationships' layers; in source order."""
        out = []
        if st.file_opts:
            defaults = {p.name: p.default for p in self.info.mem.layer.params}
            for start, end in self._file_spans:
                old = self.source[start:end]
                out.append(Edit(start, end, old, _set_args(old, st.file_opts, defaults)))
        for rel, layer in st.rels:
            start, end = _rel_layer_span(self.source, self._rels[rel])
            out.append(Edit(start, end, self.source[start:end], f" {layer}"))
        return sorted(out, key=lambda e: e.start)

    def describe_edits(self, st: Stack) -> str:
        """The edits in words ('' if none), for the evidence."""
        words = []
        if st.file_opts:
            words.append(f"file {self.info.file}: " + ", ".join(f"{p} = {v}"
                                                                for p, v in st.file_opts))
        words += [f"relationship {r} = {l}" for r, l in st.rels]
        return "; ".join(words)

    def spec_text(self, equation: str, st: Optional[Stack] = None) -> str:
        """The spec with the container's declaration replaced (its `with` folded inline)
        and the edits of stack `st` (its file's options, its relationships' layers)."""
        start, end = _decl_span(self.source, self.info.decl)
        decl = f"container {self.name} of {self.info.record.name} = {equation};"
        text = self.source
        for e in sorted([Edit(start, end, "", decl)] + (self.edits(st) if st else []),
                        key=lambda e: -e.start):
            text = text[:e.start] + e.new + text[e.end:]
        return text

    def checker_accepts(self, st: Stack) -> bool:
        """The checker's verdict on the whole stack."""
        return self._accepts(self.spec_text(self.equation(st), st))

    def _accepts(self, text: str) -> bool:
        try:
            check(parse(text, self.path))
            return True
        except P2Error:
            return False

    def _alone(self, st: Stack) -> bool:
        if st not in self._legal:
            self._legal[st] = self.checker_accepts(st)
        return self._legal[st]

    def _file_alone(self, file_opts: tuple) -> bool:
        """The file's options with the declaration as written."""
        if file_opts and file_opts not in self._legal:
            parts = self.tops + [_written(li) for li in self.info.ds] + self.mems_of(file_opts)
            eq = parts[-1]
            for p in reversed(parts[:-1]):
                eq = f"{p}[{eq}]"
            self._legal[file_opts] = self._accepts(
                self.spec_text(eq, Stack((), "", None, file_opts)))
        return not file_opts or self._legal[file_opts]

    def predicted_legal(self, st: Stack) -> bool:
        """Legal if the file's options are legal with the spec as written, the storage is
        legal alone, and each index and each relationship's layer is legal over it alone
        (each with the file's options)."""
        fo = st.file_opts
        if not self._file_alone(fo):
            return False
        if not self._alone(Stack((), st.storage, st.storage_key, fo)):
            return False
        return all(self._alone(Stack((i,), st.storage, st.storage_key, fo))
                   for i in st.indexes) and \
            all(self._alone(Stack((), st.storage, st.storage_key, fo, (r,))) for r in st.rels)

    def stacks(self, max_indexes: Optional[int] = None):
        """Every stack of the grammar (legal or not): a storage, then for each key of
        interest no index or one of its index choices (keys the storage is keyed on get
        none), in key order; each with every choice of the file's options and of the
        relationships' layers."""
        files, rels = self.file_choices(), self.rel_choices()
        for storage, skey in self.storage_choices():
            per_key = [[None] + self.index_choices(k) for k in self.keys if (skey,) != k]
            for combo in itertools.product(*per_key):
                idx = tuple(i for i in combo if i is not None)
                if max_indexes is not None and len(idx) > max_indexes:
                    continue
                for fo in files:
                    for rl in rels:
                        yield Stack(idx, storage, skey, fo, rl)

    def enumerate(self, max_indexes: Optional[int] = None) -> list:
        """The relevant space: the stacks predicted legal, whose unique keys stay unique."""
        out = []
        for st in self.stacks(max_indexes):
            keyed = {i.key for i in st.indexes if i.unique}
            if st.storage_key and LAYERS[st.storage].unique_key:
                keyed.add((st.storage_key,))
            if keyed != self.unique:
                continue
            if self.predicted_legal(st):
                out.append(st)
        return out

    def random_stack(self, rng: random.Random) -> Stack:
        storage, skey = rng.choice(self.storage_choices())
        idx = []
        for k in self.keys:
            if (skey,) != k and rng.random() < 0.6:
                choices = self.index_choices(k)
                if choices:
                    idx.append(rng.choice(choices))
        rng.shuffle(idx)
        return Stack(tuple(idx), storage, skey, rng.choice(self.file_choices()),
                     rng.choice(self.rel_choices()))


def _offset(source: str, pos) -> int:
    lines = source.split("\n")
    return sum(len(l) + 1 for l in lines[:pos.line - 1]) + pos.col - 1


def _skip_string(source: str, i: int) -> int:
    """The index after the string that starts at source[i] (a `"`)."""
    i += 1
    while i < len(source) and source[i] != '"':
        i += 2 if source[i] == "\\" else 1
    return i + 1


def _one_line(source: str, span: tuple) -> Optional[tuple]:
    text = source[span[0]:span[1]]
    return span if "\n" not in text and "*/" not in text and "/*" not in text else None


def _mem_args_span(source: str, info: ContainerInfo) -> Optional[tuple]:
    """[start, end) of the parameters written for container `info`'s memory layer (inside
    its parentheses, found from its first parameter's position), or None where they are
    not on one line or were not written."""
    positions = getattr(info.mem, "param_positions", {})
    if not positions:
        return None
    first = min(positions.values(), key=lambda p: (p.line, p.col))
    at = _offset(source, first)
    start = source.rfind("(", 0, at) + 1
    i = start
    while i < len(source) and source[i] != ")":
        i = _skip_string(source, i) if source[i] == '"' else i + 1
    return _one_line(source, (start, i))


def _rel_layer_span(source: str, ri) -> Optional[tuple]:
    """[start, end) of relationship `ri`'s layer as written (after its `=`, before its
    `;`), or None where it is not on one line."""
    at = _offset(source, ri.decl.equation.pos)
    start = source.rfind("=", 0, at) + 1
    i = at
    while i < len(source) and source[i] != ";":
        i = _skip_string(source, i) if source[i] == '"' else i + 1
    return _one_line(source, (start, i))


def _set_args(args: str, opts: tuple, defaults: dict) -> str:
    """A layer's parameter list (text between its parentheses) with `opts` ((param,
    value) pairs) set: a given one replaced, another added at the end unless its value is
    the default (`defaults`: param -> its default)."""
    parts, depth, cur, i = [], 0, "", 0
    while i < len(args):
        c = args[i]
        if c == '"':
            j = _skip_string(args, i)
            cur += args[i:j]
            i = j
            continue
        if c == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            depth += (c == "(") - (c == ")")
            cur += c
        i += 1
    parts.append(cur)
    given = dict(opts)
    kept = []
    for part in parts:
        name = part.split("=", 1)[0].strip()
        if name in given:
            kept.append(f"{part.split('=', 1)[0]}= {given.pop(name)}")
        elif part.strip():
            kept.append(part)
    kept += [f" {k} = {v}" for k, v in given.items() if defaults.get(k) != v]
    return ",".join(kept).lstrip() if not args[:1].isspace() else ",".join(kept)


def _decl_span(source: str, decl) -> tuple:
    """(start, end) of a container's declaration in the source: from its `container`
    keyword to after its `;` (strings and comments skipped)."""
    lines = source.split("\n")
    offset = sum(len(l) + 1 for l in lines[:decl.pos.line - 1]) + decl.pos.col - 1
    start = source.rfind("container", 0, offset)
    i = offset
    while i < len(source):
        c = source[i]
        if c == '"':
            i += 1
            while i < len(source) and source[i] != '"':
                i += 2 if source[i] == "\\" else 1
        elif source.startswith("//", i):
            i = source.find("\n", i)
            i = len(source) if i < 0 else i
        elif source.startswith("/*", i):
            i = source.find("*/", i + 2)
            i = len(source) if i < 0 else i + 1
        elif c == ";":
            return start, i + 1
        i += 1
    raise P2Error("container declaration without ';'")
