"""A covering subset of spec files, for the tests that take every committed spec through
the same check (render it, compile it, parse its declarations): by default they run over
`covering(specs)`, which still holds every feature any of the specs has, and over all of
them with P2GEN_FULL=1.

A spec's features, read from its parse alone (no check, no render: cheap at collection):
every layer of its equations (containers' and relationships'), each layer parameter it
sets (and the value, where the value names an option rather than a field), every field
type of its records (`ref`, `text`, `char[N]` as one shape, each integer and float width),
a field default, a composite key, the kinds of cursor (filtered, ordered, descending), of
relationship end (one, many, ordered, descending) and of find. The subset is chosen
greedily (the spec adding most features not yet held, the smaller file on a tie, then the
name), so every process collecting the tests chooses the same one."""
from __future__ import annotations

import functools
import os
from pathlib import Path

FULL = os.environ.get("P2GEN_FULL", "") not in ("", "0")


def features(path) -> frozenset:
    return _features(str(path))


@functools.lru_cache(maxsize=None)
def _features(path: str) -> frozenset:
    from p2gen.parser import parse
    spec = parse(Path(path).read_text(), str(path))
    out = set()
    fields = {f.name for r in spec.records for f in r.fields}

    def layers(app, where):
        for layer in app.chain():
            out.add(f"{where} layer {layer.name}")
            params(layer.name, layer.params)

    def params(layer, ps):
        for p in ps:
            out.add(f"param {layer}.{p.name}")
            v = p.value
            if v.kind == "names":
                out.add("composite key")
            elif v.kind in ("name", "bool") and v.value not in fields:
                out.add(f"param {layer}.{p.name}={v.value}")

    for r in spec.records:
        for f in r.fields:
            t = f.type
            out.add("field " + ("ref" if t.target is not None else
                                "char[N]" if t.kind == "char" else t.name))
            if f.default is not None:
                out.add(f"field default {f.default.kind}")
    for c in spec.containers:
        layers(c.equation, "container")
        for w in c.with_args:
            params(w.layer, w.params)
    for rel in spec.relationships:
        layers(rel.equation, "relationship")
        for end in (rel.left, rel.right):
            out.add("role " + ("many" if end.many else "one")
                    + (" ordered" if end.order_by else "")
                    + (" descending" if end.descending else ""))
    for cur in spec.cursors:
        out.add("cursor" + (" where" if cur.where else "") + (" order_by" if cur.order_by else "")
                + (" descending" if cur.descending else ""))
    for find in spec.finds:
        out.add("find composite" if find.composite else "find")
    return frozenset(out)


def covering(specs) -> list:
    """The specs to run by default: all of them with P2GEN_FULL=1, else a subset holding
    every feature of the whole set (in the order given)."""
    specs = list(specs)
    if FULL:
        return specs
    feats = {s: features(s) for s in specs}
    todo = set().union(*feats.values()) if feats else set()
    chosen = set()
    while todo:
        best = min((s for s in specs if s not in chosen),
                   key=lambda s: (-len(feats[s] & todo), Path(s).stat().st_size, str(s)))
        chosen.add(best)
        todo -= feats[best]
    return [s for s in specs if s in chosen]
