"""Workload capture (`p2gen build --profile`): what the templates need to
compile counters into the generated API, and the reader of the profile they write.

With --profile the generated source defines `<PREFIX>_PROFILE` as 1 unless the compiler
was given another value (`-D<PREFIX>_PROFILE=0`: the counters compile to nothing) and, per
container, counts each public operation (updates split by whether a key field changed),
the walks and rows of every cursor, the largest and final element count and, per key, the
inserts' min/max, a distinct estimate (HyperLogLog, 256 registers: about 6.5% standard
error, exact-ish by linear counting while small) and whether they arrived in key order.
`<prefix>_close` writes it as JSON, to `$P2GEN_PROFILE` if set, else to
`<spec>.profile.json` in the current directory, with the spec's SHA-256 and p2gen's
version, so that `load_profile` refuses a profile made by another spec (or another
version of this one).

Without --profile nothing of this is rendered: the generated C is what it was.
"""
from __future__ import annotations

import hashlib
import json
import os
from typing import Optional

from .errors import P2Error
from .model import CompositeKey

FORMAT = 1
SIGN = "0x8000000000000000ull"


class ProfileError(P2Error):
    """A profile that cannot be used for this spec: one line saying why."""


def p2gen_version() -> str:
    try:
        from importlib.metadata import version
        return version("p2gen")
    except Exception:      # not installed (a checkout on sys.path)
        return "unknown"


def spec_sha256(source: str) -> str:
    return hashlib.sha256(source.encode("utf-8", "surrogateescape")).hexdigest()


def default_path(spec_file: str) -> str:
    stem = spec_file[:-3] if spec_file.endswith(".p2") else spec_file
    return f"{stem}.profile.json"


def _ord_hash(f, rec: str) -> tuple:
    """C expressions (order key, hash) of field `f` of record pointer `rec`: the order key
    is a uint64_t that orders as the field does (a char[N] by its first 8 bytes)."""
    x = f"{rec}->{f.name}"
    t = f.type
    if t.kind == "char":
        n = min(8, t.length)
        parts = " | ".join(f"(uint64_t)(unsigned char){x}[{i}] << {56 - 8 * i}" for i in range(n))
        return f"({parts})", f"P2PROF_BYTES({x}, {t.length})"
    if t.kind == "float":
        return f"P2PROF_FORD({x})", f"P2PROF_MIX(P2PROF_FBITS({x}))"
    if t.signed:
        return f"((uint64_t)(int64_t){x} ^ {SIGN})", f"P2PROF_MIX((uint64_t)(int64_t){x})"
    return f"(uint64_t){x}", f"P2PROF_MIX((uint64_t){x})"


def key_stats(info) -> list:
    """Per key with a find (layers' and declared): its name, how its min/max print
    ('signed', 'unsigned', 'float' or None: a char[N] or composite key) and the C of its
    order key and hash over `rec`."""
    out = []
    for k in info.keys():
        fields = k.fields if isinstance(k, CompositeKey) else (k,)
        ords_hashes = [_ord_hash(f, "rec") for f in fields]
        h = ords_hashes[0][1]
        for _, hf in ords_hashes[1:]:
            h = f"P2PROF_MIX(({h}) * 31u ^ ({hf}))"
        t = fields[0].type
        shown = (None if isinstance(k, CompositeKey) or t.kind == "char"
                 else "float" if t.kind == "float" else "signed" if t.signed else "unsigned")
        out.append({"name": k.name, "ord": ords_hashes[0][0], "hash": h, "shown": shown})
    return out


def key_field_names(info) -> list:
    """The fields some key (a layer's or a declared find's) is made of: an update that
    changes one is a key update."""
    out = []
    for k in info.keys():
        for n in (k.names if isinstance(k, CompositeKey) else (k.name,)):
            if n not in out:
                out.append(n)
    return out


def context(checked, spec_file: str) -> dict:
    """What profile.c.j2 and the hooks in spec.c.j2 read (`prof` in the templates)."""
    head = {"format": FORMAT, "p2gen_version": p2gen_version(), "spec": spec_file,
            "spec_sha256": spec_sha256(checked.spec.source), "prefix": checked.prefix}
    containers = []
    for info in checked.containers:
        containers.append({
            "info": info,
            "keys": key_stats(info),
            "key_fields": key_field_names(info),
            "cursors": [k.name for k in info.cursors if k.synthetic != "find"],
            "json_head": json.dumps(info.name) + ": {\"equation\": "
                         + json.dumps(info.equation_text()),
        })
    return {"containers": containers, "by_name": {c["info"].name: c for c in containers},
            "json_head": json.dumps(head)[:-1] + ", \"containers\": {",
            "default_path": default_path(spec_file)}


def load_profile(path: str, spec_path: Optional[str] = None, source: Optional[str] = None) -> dict:
    """A profile's contents, refused in one line (ProfileError) if it cannot be read, is not
    a whole profile, or was written by another spec (or another version of it) than
    `spec_path` / `source` (the spec's text)."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise ProfileError(f"cannot read profile '{path}': {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise ProfileError(f"profile '{path}' is damaged: not UTF-8 text") from None
    try:
        prof = json.loads(text)
    except json.JSONDecodeError as e:
        raise ProfileError(f"profile '{path}' is damaged or truncated: {e.msg} at line "
                           f"{e.lineno} column {e.colno}") from None
    if not isinstance(prof, dict) or prof.get("format") != FORMAT or \
            not isinstance(prof.get("containers"), dict) or "spec_sha256" not in prof:
        raise ProfileError(f"profile '{path}' is not a p2gen profile of format {FORMAT}")
    if spec_path is not None and source is None:
        with open(spec_path, encoding="utf-8") as f:
            source = f.read()
    if source is not None and prof["spec_sha256"] != spec_sha256(source):
        raise ProfileError(f"profile '{path}' was written by another spec than "
                           f"{spec_path or 'this one'} (spec {prof.get('spec')!r}, SHA-256 "
                           f"{str(prof['spec_sha256'])[:12]}...): rebuild with --profile and run "
                           f"the workload again")
    return prof
