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
version of this one). Profiles accumulate, as gcc's runs do in a .gcda file: a close that
finds the file there writes a numbered one beside it (`<spec>.profile.1.json`, ...) and
`load_profile` merges them all. A new file per session rather than a merge in C at close:
the earlier file is untrusted input, which Python's JSON reader refuses safely where a C
reader of it would be new attack surface, and a damaged or foreign earlier file then costs
nothing of the new session (both stay on disk; the load names the one it refuses).
`P2GEN_PROFILE_RESET=1` (or `rm <spec>.profile*.json`) starts afresh.

Without --profile nothing of this is rendered: the generated C is what it was.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import re
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


def session_files(path: str) -> list:
    """The profiles the sessions wrote, in the order they were written: `path`, then the
    numbered ones beside it (`<stem>.1.json`, `<stem>.2.json`, ...: each close writes a new file
    rather than rewrite the one there, see profile.c.j2)."""
    ext = ".json" if path.endswith(".json") else ""
    stem = path[:len(path) - len(ext)]
    folder, base = os.path.split(stem)
    numbered = re.compile(re.escape(base) + r"\.([1-9][0-9]*)" + re.escape(ext) + r"\Z")
    try:
        names = os.listdir(folder or ".")
    except OSError:
        names = []
    found = sorted((int(m.group(1)), n) for n in names if (m := numbered.match(n)))
    return [path] + [os.path.join(folder, n) for _, n in found]


def hll_estimate(registers: bytes, n: int) -> float:
    """HyperLogLog's estimate over 256 registers, as profile.c.j2's __prof_distinct."""
    if n == 0:
        return 0.0
    total = sum(2.0 ** -r for r in registers)
    zeros = registers.count(0)
    e = 0.7213 / (1 + 1.079 / 256) * 256 * 256 / total
    if e <= 2.5 * 256 and zeros:
        e = 256 * math.log(256.0 / zeros)
    return e


def _merge_key(a: dict, b: dict) -> dict:
    out = dict(b)
    for field in ("finds", "inserts", "out_of_order"):
        out[field] = a[field] + b[field]
    lows = [v for v in (a["min"], b["min"]) if v is not None]
    highs = [v for v in (a["max"], b["max"]) if v is not None]
    out["min"] = min(lows) if lows else None
    out["max"] = max(highs) if highs else None
    out["in_order"] = bool(a["in_order"] and b["in_order"])
    if isinstance(a.get("hll"), str) and isinstance(b.get("hll"), str):
        ra, rb = bytes.fromhex(a["hll"]), bytes.fromhex(b["hll"])
        if len(ra) != 256 or len(rb) != 256:
            raise ValueError("hll")
        regs = bytes(max(x, y) for x, y in zip(ra, rb))
        out["hll"] = regs.hex()
        out["distinct"] = round(hll_estimate(regs, out["inserts"]))
    else:       # a profile written before the registers were: the larger estimate
        out.pop("hll", None)
        out["distinct"] = max(a["distinct"], b["distinct"])
    return out


def _merge_container(a: dict, b: dict) -> dict:
    """Two sessions of one container: counts add, the largest count is the larger, the final
    count the later session's; keys' ranges merge, their in-order flags AND, their HyperLogLog
    registers take the max; cursors' walks and rows add."""
    if a.get("equation") != b.get("equation") or set(a["ops"]) != set(b["ops"]) or \
            set(a["cursors"]) != set(b["cursors"]) or set(a["keys"]) != set(b["keys"]):
        raise ValueError("containers differ")
    out = dict(b)
    out["count_max"] = max(a["count_max"], b["count_max"])
    out["ops"] = {op: a["ops"][op] + b["ops"][op] for op in a["ops"]}
    out["cursors"] = {v: {"walks": a["cursors"][v]["walks"] + b["cursors"][v]["walks"],
                          "rows": a["cursors"][v]["rows"] + b["cursors"][v]["rows"]}
                      for v in a["cursors"]}
    out["keys"] = {k: _merge_key(a["keys"][k], b["keys"][k]) for k in a["keys"]}
    return out


def load_profile(path: str, spec_path: Optional[str] = None, source: Optional[str] = None) -> dict:
    """A profile's contents, every session's merged (the numbered files beside `path`, see
    session_files), refused in one line (ProfileError) if one cannot be read, is not a whole
    profile, or was written by another spec (or another version of it) than `spec_path` /
    `source` (the spec's text): remove `<stem>*.json`, or run with P2GEN_PROFILE_RESET=1, to
    start afresh."""
    if spec_path is not None and source is None:
        with open(spec_path, encoding="utf-8") as f:
            source = f.read()
    files = session_files(path)
    prof = _load_one(path, spec_path, source)
    for other in files[1:]:
        later = _load_one(other, spec_path, source, beside=path)
        if later["spec_sha256"] != prof["spec_sha256"] or \
                set(later["containers"]) != set(prof["containers"]):
            raise ProfileError(f"profile '{other}' beside '{path}' was written by another spec "
                               f"(SHA-256 {str(later['spec_sha256'])[:12]}...): remove "
                               f"{_stem(path)}*.json to start afresh")
        try:
            merged = {name: _merge_container(prof["containers"][name], c)
                      for name, c in later["containers"].items()}
        except (KeyError, TypeError, ValueError, AttributeError):
            raise ProfileError(f"profile '{other}' beside '{path}' is damaged: its containers "
                               f"cannot be merged with the earlier sessions'") from None
        prof = {**later, "containers": merged}
    prof["sessions"] = len(files)
    return prof


def _stem(path: str) -> str:
    return path[:-5] if path.endswith(".json") else path


def _load_one(path: str, spec_path: Optional[str], source: Optional[str],
              beside: Optional[str] = None) -> dict:
    where = f"profile '{path}'" + (f" beside '{beside}'" if beside else "")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise ProfileError(f"cannot read {where}: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise ProfileError(f"{where} is damaged: not UTF-8 text") from None
    try:
        prof = json.loads(text)
    except json.JSONDecodeError as e:
        raise ProfileError(f"{where} is damaged or truncated: {e.msg} at line "
                           f"{e.lineno} column {e.colno}") from None
    if not isinstance(prof, dict) or prof.get("format") != FORMAT or \
            not isinstance(prof.get("containers"), dict) or "spec_sha256" not in prof:
        raise ProfileError(f"{where} is not a p2gen profile of format {FORMAT}")
    if source is not None and prof["spec_sha256"] != spec_sha256(source):
        raise ProfileError(f"{where} was written by another spec than "
                           f"{spec_path or 'this one'} (spec {prof.get('spec')!r}, SHA-256 "
                           f"{str(prof['spec_sha256'])[:12]}...): rebuild with --profile and run "
                           f"the workload again" + (f", or remove {_stem(beside)}*.json"
                                                    if beside else ""))
    return prof
