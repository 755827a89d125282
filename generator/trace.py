"""Operation traces (`p2gen build --trace`): what the templates need to compile a log of every
public operation into the generated API, and the reader of the logs they write.

With --trace the generated source defines `<PREFIX>_TRACE` as 1 unless the compiler was given
another value (`-D<PREFIX>_TRACE=0`: nothing is logged) and every public operation appends
one event to a buffer in the handle (64 KiB), written out when it fills and at close, to
`$P2GEN_TRACE` if set, else to `<spec>.trace` in the current directory; each open starts the
file again. Events carry what an exact replay needs (trace_replay.py): the records inserted
and updated, the references the operations were given and the ones they gave back (so that
a replay on another equation maps the original references to its own), the keys of finds,
the cursors' parameters and every step, text fields' bytes, commits and aborts, and the
relationships' changes and walks (add, remove, set, a walk's open and each step; a role kept
in the order of a field is not traced yet).

The file: a header
    magic "P2GTRACE", u32 format, u32 0x01020304 (the byte order: the writer's),
    the SHA-256 of the spec's API (64 hex characters: `api_digest`), u32 containers,
    u64 each one's count at the open
then events, each
    u8 op, u8 unit (the container's or cursor's index), u16 aux (a field's or key's index),
    u32 length, then that many bytes of payload.
A reference in a payload is a u64; a char[N] argument is N + 1 bytes (the string cut after
N + 1 bytes, NUL-padded: one too long stays too long); a record is the C struct's bytes.

The trace's identity is the spec's API, not its text: the records as C lays them out, each
container's record, memory, file, unique keys, deferred deletes, declared finds and keys,
the cursors and the relationships' ends (`api_digest`). So a trace recorded on one
equation replays on another of the same API (`p2gen tune` rewrote the spec, or the user
changed an equation), and a find's key is its index in the keys sorted by name
(`key_order`), which no equation reorders. A spec of another API refuses it.

Without --trace nothing of this is rendered: the generated C is what it was.
"""
from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
from typing import Iterator, Optional

from .errors import P2Error, SpecError
from .profile import p2gen_version, spec_sha256

MAGIC = b"P2GTRACE"
FORMAT = 2          # 2: the API's digest in the header, finds by key name order
BYTE_ORDER = 0x01020304
HEAD = struct.Struct("<8sII64sI")
EVENT = struct.Struct("<BBHI")
BUFFER = 1 << 16

# op codes, shared by the writer (templates), the reader (below) and the replay
# (trace_replay.py); `unit` is a container for the first group, a cursor for the second
OPS = {
    "insert": 1, "insert_many": 2, "get": 3, "at": 4, "update": 5, "delete": 6,
    "set": 7, "set_text": 8, "find": 9, "result": 10, "reserve": 11,
    "cursor_open": 12, "cursor_next": 13, "cursor_ref": 14, "cursor_update": 15,
    "cursor_delete": 16, "cursor_close": 17,
    "commit": 18, "abort": 19,
    "rel_add": 20, "rel_remove": 21, "rel_set": 22, "rel_open": 23, "rel_next": 24,
}
OP_NAMES = {v: k for k, v in OPS.items()}
CURSOR_OPS = {"cursor_open", "cursor_next", "cursor_ref", "cursor_update", "cursor_delete",
              "cursor_close"}
DB_OPS = {"commit", "abort"}
# a relationship's role is the unit: add/remove (owner, member), set (element, partner or
# P2_NIL), open (the iterator's address, the owner), next (the iterator's address)
REL_OPS = {"rel_add", "rel_remove", "rel_set", "rel_open", "rel_next"}


class TraceError(P2Error):
    """A trace that cannot be used for this spec: one line saying why."""


def default_path(spec_file: str) -> str:
    stem = spec_file[:-3] if spec_file.endswith(".p2") else spec_file
    return f"{stem}.trace"


def cursors(checked) -> list:
    """The public cursors (the spec's and each container's `all`), in the order of their
    units: (container, CursorInfo)."""
    return [(info, k) for info in checked.containers for k in info.cursors
            if k.synthetic != "find"]


def roles(checked) -> list:
    """Every relationship's roles, in the order of their units."""
    return [role for ri in checked.relationships for role in ri.roles]


def check_traceable(checked) -> None:
    """--trace records containers', cursors' and relationships' operations: refused where
    that cannot replay."""
    ordered = [f"{r.container.name}.{r.name}" for r in roles(checked) if r.order is not None]
    if ordered:
        raise SpecError(f"--trace: role {ordered[0]} is kept in the order of a field (order "
                        f"by), whose ranged walks and merges a trace does not record yet")
    if len(checked.containers) > 255 or len(cursors(checked)) > 255 or \
            len(roles(checked)) > 255:
        raise SpecError("--trace: more than 255 containers, cursors or roles (a trace's unit "
                        "is a byte)")


def key_order(info) -> list:
    """A container's keys in the trace's order (a find event's aux is the index): by name."""
    return sorted(info.keys(), key=lambda k: k.name)


def api_text(checked) -> str:
    """What a trace depends on, one line each: what a program calls and the bytes it
    passes (the records' fields as C types), whatever the equations; `api_digest` hashes it."""
    lines = []
    for r in checked.records:
        lines.append(f"record {r.name} " + " ".join(
            f"{f.name}:{f.type.ctype}[{f.type.length}]>{f.type.target or ''}" for f in r.fields))
    for info in checked.containers:
        def key(k):
            return "(" + ",".join(k.names) + ")" if hasattr(k, "names") else k.name
        unique = sorted({key(li.key_field_obj) for li in info.ds if li.key_field_obj is not None
                         and (li.params.get("unique") or li.layer.unique_key)})
        lines.append(f"container {info.name} of {info.record.name} memory "
                     f"{'['.join(li.name for li in info.mems)} file {info.file} "
                     f"unique {unique} purges {info.purges} "
                     f"declared {[key(k) for k, _ in info.declared_finds]} "
                     f"keys {[key(k) for k in key_order(info)]}")
    for info, k in cursors(checked):
        lines.append(f"cursor {info.name}.{k.name}")
    for ri in checked.relationships:
        ends = [ri.left, ri.right]
        lines.append(f"relationship {ri.name} " + " ".join(
            f"{'many' if e.many else 'one'} {e.container.name}.{e.name}" for e in ends))
    return "\n".join(lines) + "\n"


def api_digest(checked) -> str:
    """The SHA-256 of the spec's API (`api_text`): a trace's identity."""
    return spec_sha256(api_text(checked))


def context(checked, spec_file: str) -> dict:
    """What trace.c.j2 and the hooks in spec.c.j2 read (`trc` in the templates)."""
    check_traceable(checked)
    containers = {}
    for i, info in enumerate(checked.containers):
        containers[info.name] = {
            "index": i, "info": info,
            "fields": {f.name: j for j, f in enumerate(info.record.fields)},
            "keys": {k.name: j for j, k in enumerate(key_order(info))},
        }
    units = {(info.name, k.name): j for j, (info, k) in enumerate(cursors(checked))}
    role_units = {(r.container.name, r.name): j for j, r in enumerate(roles(checked))}
    return {"ops": OPS, "c": containers, "cursor": units, "role": role_units, "buffer": BUFFER,
            "sha": api_digest(checked), "version": p2gen_version(),
            "default_path": default_path(spec_file), "magic": MAGIC.decode(),
            "format": FORMAT, "byte_order": BYTE_ORDER}


@dataclass
class Trace:
    """A trace read and checked: its header, and its events as (op name, unit, aux,
    payload offset, payload length) over `data`."""
    path: str
    sha256: str
    counts_at_open: list
    data: bytes
    start: int
    events: list = field(default_factory=list)

    def op_counts(self, checked) -> dict:
        """{unit name: {op: count}}: containers' and cursors' operations by name."""
        names = [c.name for c in checked.containers]
        curs = [k.name for _, k in cursors(checked)]
        rels = [f"{r.container.name}.{r.name}" for r in roles(checked)]
        out: dict = {}
        for op, unit, _aux, _off, _n in self.events:
            name = ("(database)" if op in DB_OPS else curs[unit] if op in CURSOR_OPS else
                    rels[unit] if op in REL_OPS else names[unit])
            ops = out.setdefault(name, {})
            ops[op] = ops.get(op, 0) + 1
        return out


def read_trace(path: str, checked=None, source: Optional[str] = None) -> Trace:
    """A trace's header and events, every length checked against the file; refused in one
    line (TraceError) if it cannot be read, is not a whole trace, or was written by a spec
    of another API than `checked` (`api_digest`; `source`: the spec's text, checked here)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise TraceError(f"cannot read trace '{path}': {e.strerror or e}") from None
    if len(data) < HEAD.size or data[:8] != MAGIC:
        raise TraceError(f"'{path}' is not a p2gen trace (no P2GTRACE header)")
    magic, fmt, order, sha, n = HEAD.unpack_from(data, 0)
    if order != BYTE_ORDER:
        raise TraceError(f"trace '{path}' was written on a machine of another byte order")
    if fmt != FORMAT:
        raise TraceError(f"trace '{path}' is of format {fmt}, this p2gen reads format {FORMAT}")
    sha_text = sha.decode("ascii", "replace")
    if checked is None and source is not None:
        from .check import check
        from .parser import parse
        checked = check(parse(source, "<spec>"))
    if checked is not None and sha_text != api_digest(checked):
        raise TraceError(f"trace '{path}' was written by a spec of another API than "
                         f"{checked.spec.path} (its records, containers, keys, cursors or "
                         f"relationships differ; API SHA-256 {sha_text[:12]}...): rebuild "
                         f"with --trace and run the workload again")
    at = HEAD.size
    if checked is not None and n != len(checked.containers):
        raise TraceError(f"trace '{path}' is damaged: its header names {n} containers, "
                         f"the spec has {len(checked.containers)}")
    if len(data) < at + 8 * n:
        raise TraceError(f"trace '{path}' is truncated: its header ends at byte {len(data)}")
    counts = list(struct.unpack_from(f"<{n}Q", data, at))
    at += 8 * n
    trace = Trace(path, sha_text, counts, data, at)
    n_units = len(checked.containers) if checked is not None else 256
    n_curs = len(cursors(checked)) if checked is not None else 256
    n_roles = len(roles(checked)) if checked is not None else 256
    while at < len(data):
        if len(data) - at < EVENT.size:
            raise TraceError(f"trace '{path}' is truncated: {len(data) - at} bytes of an "
                             f"event head at byte {at}")
        op, unit, aux, length = EVENT.unpack_from(data, at)
        name = OP_NAMES.get(op)
        if name is None:
            raise TraceError(f"trace '{path}' is damaged: unknown operation {op} at byte {at}")
        limit = (1 if name in DB_OPS else n_curs if name in CURSOR_OPS else
                 n_roles if name in REL_OPS else n_units)
        if unit >= limit:
            raise TraceError(f"trace '{path}' is damaged: {name} of unit {unit} (the spec has "
                             f"{limit}) at byte {at}")
        if length > len(data) - at - EVENT.size:
            raise TraceError(f"trace '{path}' is truncated: an event of {length} bytes at "
                             f"byte {at}, {len(data) - at - EVENT.size} left")
        trace.events.append((name, unit, aux, at + EVENT.size, length))
        at += EVENT.size + length
    return trace


def iter_payloads(trace: Trace) -> Iterator[tuple]:
    """(op, unit, aux, payload bytes) of every event."""
    for op, unit, aux, off, n in trace.events:
        yield op, unit, aux, trace.data[off:off + n]


def trace_path_for(spec_path: str) -> str:
    return default_path(os.path.basename(spec_path))
