"""The relevant equation space of one container, from the layer registry.

Relevant: keys only on what the spec asks for (its finds and the fields its cursors compare
or order by), at most one index per key (one per access path), the top layers (qualify,
delflag) and the memory (transient, persistent, journal or WAL, their file) as written,
and a unique key kept unique. The storage is any storage layer of the registry (one
keyed on a field of interest for a storage that takes a key: iarray, qsort); each index
is any index layer of the registry whose `key` parameter is a field (or a composite key,
where the layer takes one), with `unique = true` where the spec's key is unique. Other
parameters keep their defaults (sizes from a profile: later).

Legality is predicted, not checked per candidate: a stack is taken as legal when its
storage is legal alone and each of its indexes is legal over that storage alone (one
check each, cached), which the tests compare with the checker's verdict on random stacks.
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
    """A candidate: indexes outermost first over a storage (a layer, its key or None)."""
    indexes: tuple
    storage: str
    storage_key: Optional[str] = None

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


def _written(li: LayerInstance) -> str:
    """A layer with the parameters the spec gave it (inline or in `with`)."""
    given = [n for n in li.layer.params if n.name in li.param_positions]
    return li.name + (f"({', '.join(_param_text(li, p.name) for p in given)})" if given else "")


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
    def equation(self, st: Stack) -> str:
        parts = self.tops + [i.text() for i in st.indexes] + [st.storage_text()] + self.mems
        text = parts[-1]
        for p in reversed(parts[:-1]):
            text = f"{p}[{text}]"
        return text

    def spec_text(self, equation: str) -> str:
        """The spec with the container's declaration replaced (its `with` folded inline)."""
        start, end = _decl_span(self.source, self.info.decl)
        return (self.source[:start] + f"container {self.name} of {self.info.record.name} = "
                f"{equation};" + self.source[end:])

    def checker_accepts(self, st: Stack) -> bool:
        """The checker's verdict on the whole stack."""
        try:
            check(parse(self.spec_text(self.equation(st)), self.path))
            return True
        except P2Error:
            return False

    def _alone(self, indexes: tuple, storage: str, skey: Optional[str]) -> bool:
        k = (indexes, storage, skey)
        if k not in self._legal:
            self._legal[k] = self.checker_accepts(Stack(indexes, storage, skey))
        return self._legal[k]

    def predicted_legal(self, st: Stack) -> bool:
        """Legal if the storage is legal alone and each index is legal over it alone."""
        if not self._alone((), st.storage, st.storage_key):
            return False
        return all(self._alone((i,), st.storage, st.storage_key) for i in st.indexes)

    def stacks(self, max_indexes: Optional[int] = None):
        """Every stack of the grammar (legal or not): a storage, then for each key of
        interest no index or one of its index choices (keys the storage is keyed on get
        none), in key order."""
        for storage, skey in self.storage_choices():
            per_key = [[None] + self.index_choices(k) for k in self.keys if (skey,) != k]
            for combo in itertools.product(*per_key):
                idx = tuple(i for i in combo if i is not None)
                if max_indexes is not None and len(idx) > max_indexes:
                    continue
                yield Stack(idx, storage, skey)

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
        return Stack(tuple(idx), storage, skey)


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
