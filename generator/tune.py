"""The foundations of choosing equations (`p2gen tune`): what must not change when an equation does.

A candidate equation may replace a container's equation only if a program written against
the spec as it stands compiles and behaves the same against the candidate: the same public
API and the same semantics. `same_api(a, b)` says whether two specs (the user's and a
candidate) agree, and refuses with a message that names every difference:

- the public API, from the table of generated functions (cfuncs: the header's entries as
  the templates declared them, not the C text): every function's name and declaration, the
  record types' definitions, the names of the other types and macros (a cursor's struct
  may hold other fields under another equation: a program names it, it does not read it);
- the semantics per container: its record, the memory it lives in (transient, persistent,
  mapped, a server; the file's name; a journal or a write-ahead log over it: the mem
  layers' names, not their tuning parameters), its unique keys, whether deletes wait for a
  purge, and the finds the spec declares.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional, Union

from .errors import P2Error
from .ir import CheckedSpec, ContainerInfo
from .model import CompositeKey
from .pybind import _primary_key


class ApiMismatch(P2Error):
    """A candidate's public API or semantics differ from the spec's (one line per difference)."""

    def __init__(self, differences: list):
        self.differences = differences
        super().__init__("the candidate changes the spec's API or semantics:\n  "
                         + "\n  ".join(differences))


@dataclass
class ApiView:
    """What a program written against a spec depends on (`api_view`)."""
    prefix: str
    functions: dict     # name -> its declaration (api text)
    types: dict         # name -> its definition for record types, "" for other types
    macros: set
    semantics: dict     # container -> {aspect: value}


def _key_text(k) -> str:
    return f"({', '.join(k.names)})" if isinstance(k, CompositeKey) else k.name


def container_semantics(info: ContainerInfo) -> dict:
    """What an equation must hold as written for `info`: record, memory, unique keys,
    deferred deletes and the declared finds."""
    mems = [li.name for li in info.mems]
    return {
        "record": info.record.name,
        "memory": "[".join(mems) + "]" * (len(mems) - 1),
        "file": info.file,
        "references survive a restart": info.persistent,
        # `unique = true`, or a layer that holds one element per key (iarray's slots)
        "unique keys": sorted({_key_text(li.key_field_obj) for li in info.ds
                               if (li.params.get("unique") or li.layer.unique_key)
                               and li.key_field_obj is not None}),
        "deletes wait for a purge": info.purges,
        "declared finds": [_key_text(k) for k, _ in info.declared_finds],
        # the Python container's key (c[k], get, in): pybind's rule
        "Python key": _primary_key(info) if info.keys() else None,
    }


def api_view(checked: CheckedSpec, declarations: list) -> ApiView:
    """The view of a rendered spec: `declarations` is the header's table of generated
    functions (build.emit's fourth value, Generated.declarations)."""
    records = {f"{checked.prefix}_{r.name}" for r in checked.records}
    functions, types, macros = {}, {}, set()
    for e in declarations:
        if not e.public:
            continue
        if e.kind == "function":
            functions[e.name] = e.api
        elif e.kind == "type":
            types[e.name] = e.api if e.name in records else ""
        else:
            macros.add(e.name)
    return ApiView(checked.prefix, functions, types, macros,
                   {info.name: container_semantics(info) for info in checked.containers})


def load_view(spec: Union[str, os.PathLike], prefix: Optional[str] = None) -> ApiView:
    """Parse, check, plan and render a spec file; its ApiView."""
    from .build import _emit
    checked, _h, _c, declarations = _emit(os.fspath(spec), prefix, False)
    return api_view(checked, declarations)


def differences(a: ApiView, b: ApiView) -> list:
    """Each way `b` (the candidate) differs from `a` (the spec), in words; [] if none."""
    out = []
    for c in a.semantics:
        if c not in b.semantics:
            out.append(f"container {c}: missing")
            continue
        sa, sb = a.semantics[c], b.semantics[c]
        for aspect in sa:
            if sa[aspect] != sb[aspect]:
                out.append(f"container {c}: {aspect} {_show(sa[aspect])} -> {_show(sb[aspect])}")
    out += [f"container {c}: not in the spec" for c in b.semantics if c not in a.semantics]
    for name in a.functions:
        if name not in b.functions:
            out.append(f"function {name} is gone")
        elif a.functions[name] != b.functions[name]:
            out.append(f"function {name} is declared differently: {a.functions[name]!r} -> "
                       f"{b.functions[name]!r}")
    out += [f"function {n} is new (the candidate adds it)" for n in b.functions
            if n not in a.functions]
    for name in a.types:
        if name not in b.types:
            out.append(f"type {name} is gone")
        elif a.types[name] != b.types[name]:
            out.append(f"type {name} is defined differently")
    out += [f"type {n} is new (the candidate adds it)" for n in b.types if n not in a.types]
    out += [f"macro {n} is gone" for n in sorted(a.macros - b.macros)]
    out += [f"macro {n} is new (the candidate adds it)" for n in sorted(b.macros - a.macros)]
    return out


def _show(v) -> str:
    if isinstance(v, list):
        return "(" + ", ".join(v) + ")" if v else "none"
    if v is None:
        return "none"
    if isinstance(v, bool):
        return "yes" if v else "no"
    return str(v)


def same_api(spec_a, spec_b, prefix: Optional[str] = None) -> None:
    """Refuse candidate `spec_b` (a path or an ApiView) unless its public API and semantics
    are those of `spec_a`: ApiMismatch listing every difference. Both are rendered with one
    prefix (`prefix`, else spec_a's), so a candidate's file name does not matter."""
    a = spec_a if isinstance(spec_a, ApiView) else load_view(spec_a, prefix)
    b = spec_b if isinstance(spec_b, ApiView) else load_view(spec_b, prefix or a.prefix)
    diff = differences(a, b)
    if diff:
        raise ApiMismatch(diff)
