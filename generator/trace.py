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
    u64 each one's count at the open, u32 each one's record's size (C's sizeof: an event of
    a record holds exactly that many bytes, its zeros put back)
then events, each (format 4, `LAYOUT`: what an operation's event holds)
    u8 op, u8 unit (the container's, cursor's or role's index),
    [aux: a varint, a field's or key's index: set, set_text, find],
    [the word: the event's first u64 (a reference, a count, a cursor's or iterator's
     address) as the zigzag varint of its difference from the last word of the same unit
     (a container's, a cursor's or a role's, 0 at the open): a find's answer then set on
     it, a cursor's steps, are one byte],
    [a varint length, [a varint count of zero bytes (`ZEROS`: a record's trailing zeros,
     left out of the file)], then that many bytes: the rest of the payload, the zeros
     after it]
(a find by a scalar key answered directly, and an insert, are one event with the reference
given back, `ANSWERED`: its word the reference, P2_NIL for none; the readers expand it to
the operation and, if it gave one, a result),
and at the close the end mark: a byte 0 and "P2GTEND" (events of two bytes could end a
cut file on a boundary: without the mark it is refused as truncated).
A varint is 7 bits a byte, the lowest first, the high bit set on all bytes but the last.
A reference in the rest is a u64; a char[N] argument is N + 1 bytes (the string cut after
N + 1 bytes, NUL-padded: one too long stays too long); a record is the C struct's bytes.
The readers (`read_trace`, the replay driver's `p2r_expand`) expand the events to the
fixed layout of format 2, which the replay reads: u8 op, u8 unit, u16 aux, u32 length,
then the payload, the word first as a u64, a record's zeros put back. (Format 2, that layout
on file, 24 bytes an event of one reference, took 237 bytes a TPC-B transaction; format 3
126, of which 56 the history's record of 52 bytes; format 4 cuts that record's empty filler:
bench/RESULTS.md.)

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
END = b"\0P2GTEND"       # after the last event, written at close: a trace cut short lacks it
FORMAT = 4          # 2: the API's digest in the header, finds by key name order; 3: compact
#                     events; 4: a record's trailing zero bytes left out (ZEROS)
BYTE_ORDER = 0x01020304
HEAD = struct.Struct("<8sII64sI")
EVENT = struct.Struct("<BBHI")
BUFFER = 1 << 16
HEAD_MAX = 2 + 3 + 10 + 5 + 3    # op, unit, aux (u16), the word, the rest's length (u32), zeros
# a record's size in the header: at most check.MAX_RECORD_BYTES and its padding; more is a
# damaged trace (and would make a reader allocate what no event holds)
MAX_RECORD = 1 << 17

# op codes, shared by the writer (templates), the reader (below) and the replay
# (trace_replay.py); `unit` is a container for the first group, a cursor for the second
OPS = {
    "insert": 1, "insert_many": 2, "get": 3, "at": 4, "update": 5, "delete": 6,
    "set": 7, "set_text": 8, "find": 9, "result": 10, "reserve": 11,
    "cursor_open": 12, "cursor_next": 13, "cursor_ref": 14, "cursor_update": 15,
    "cursor_delete": 16, "cursor_close": 17,
    "commit": 18, "abort": 19,
    "rel_add": 20, "rel_remove": 21, "rel_set": 22, "rel_open": 23, "rel_next": 24,
    "find_found": 25, "insert_done": 26,
}
# an operation and the reference it gave back in one event, its word the reference (P2_NIL:
# none): a find by a scalar key answered directly, an insert; the readers expand it to the
# operation and, if it gave one, a result (ANSWERED: the operation each stands for)
ANSWERED = {"find_found": "find", "insert_done": "insert"}
NIL = (1 << 64) - 1
OP_NAMES = {v: k for k, v in OPS.items()}
CURSOR_OPS = {"cursor_open", "cursor_next", "cursor_ref", "cursor_update", "cursor_delete",
              "cursor_close"}
DB_OPS = {"commit", "abort"}
# what an operation's event holds besides op and unit (format 4): (aux, word, rest, and
# after the rest's length the count of zero bytes that follow the rest: a record's trailing
# zeros (an empty last text, zero fields), left out of the file)
AUX, WORD, REST, ZEROS = 1, 2, 4, 8
LAYOUT = {
    "insert": REST, "insert_many": WORD, "get": WORD, "at": WORD, "update": WORD | REST | ZEROS,
    "delete": WORD, "set": AUX | WORD | REST, "set_text": AUX | WORD | REST,
    "find": AUX | REST, "result": WORD, "reserve": WORD,
    "cursor_open": WORD | REST, "cursor_next": WORD, "cursor_ref": WORD,
    "cursor_update": WORD | REST, "cursor_delete": WORD | REST, "cursor_close": WORD,
    "commit": 0, "abort": 0,
    "rel_add": WORD | REST, "rel_remove": WORD | REST, "rel_set": WORD | REST,
    "rel_open": WORD | REST, "rel_next": WORD,
    "find_found": AUX | WORD | REST, "insert_done": WORD | REST | ZEROS,
}
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
    nc, ncur = len(checked.containers), len(units)
    base = [0] * (max(OPS.values()) + 1)
    layout = [0] * len(base)
    for name, code in OPS.items():
        layout[code] = LAYOUT[name]
        base[code] = nc if name in CURSOR_OPS else nc + ncur if name in REL_OPS else 0
    return {"ops": OPS, "c": containers, "cursor": units, "role": role_units, "buffer": BUFFER,
            "layout": layout, "base": base, "aux": AUX, "word": WORD, "rest": REST,
            "zeros": ZEROS,
            "words": max(nc + ncur + len(role_units), 1), "head_max": HEAD_MAX,
            "end": END.decode(),
            "sha": api_digest(checked), "version": p2gen_version(),
            "default_path": default_path(spec_file), "magic": MAGIC.decode(),
            "format": FORMAT, "byte_order": BYTE_ORDER}


@dataclass
class Trace:
    """A trace read and checked: its header, and its events as (op name, unit, aux,
    payload offset, payload length) over `data`, the events expanded (read_trace)."""
    path: str
    sha256: str
    counts_at_open: list
    data: bytes                 # the events expanded to the fixed layout (format 2's)
    start: int
    events: list = field(default_factory=list)
    origins: list = field(default_factory=list)     # each event's offset in the file

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
        older = " (an older p2gen's)" if fmt < FORMAT else ""
        raise TraceError(f"trace '{path}' is of format {fmt}{older}, this p2gen reads format "
                         f"{FORMAT}: run the workload again on a build with --trace")
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
    if len(data) < at + 12 * n:
        raise TraceError(f"trace '{path}' is truncated: its header ends at byte {len(data)}")
    counts = list(struct.unpack_from(f"<{n}Q", data, at))
    at += 8 * n
    sizes = list(struct.unpack_from(f"<{n}I", data, at))
    at += 4 * n
    if any(size > MAX_RECORD for size in sizes):
        raise TraceError(f"trace '{path}' is damaged: its header gives a record of "
                         f"{max(sizes)} bytes")
    n_units = len(checked.containers) if checked is not None else 256
    n_curs = len(cursors(checked)) if checked is not None else 256
    n_roles = len(roles(checked)) if checked is not None else 256
    trace = Trace(path, sha_text, counts, b"", 0)
    trace.data, trace.events, trace.origins = _expand(path, data, at, min(n_units, n),
                                                      n_curs, n_roles, sizes)
    return trace


def _varint(path: str, data: bytes, at: int, start: int, what: str) -> tuple:
    """(value, the offset after it) of the varint at `at` (of the event at `start`)."""
    v = shift = 0
    while True:
        if at >= len(data):
            raise TraceError(f"trace '{path}' is truncated: the event at byte {start} ends "
                             f"within its {what}")
        b = data[at]
        at += 1
        if shift > 63 or (shift == 63 and b & 0x7E):     # a 10th byte holds bit 63 only
            raise TraceError(f"trace '{path}' is damaged: the {what} of the event at byte "
                             f"{start} is longer than 64 bits")
        v |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return v, at


def _expand(path: str, data: bytes, at: int, n_units: int, n_curs: int, n_roles: int,
            sizes: list) -> tuple:
    """The compact events from `at` on, checked and expanded to the fixed layout the replay
    reads (the module's docstring; `sizes`: each container's record's, from the header):
    (the expanded bytes, the events as Trace.events holds
    them over those, each event's offset in the file)."""
    out, events, origins = bytearray(), [], []
    last = {}                                   # (kind, unit) -> the unit's last word
    while True:
        start = at
        if at >= len(data):
            raise TraceError(f"trace '{path}' is truncated: no end mark after its last event "
                             f"(the program did not close the database, or the file was cut)")
        if data[at] == 0:
            if len(data) - at < len(END) and END.startswith(data[at:]):
                raise TraceError(f"trace '{path}' is truncated: its end mark is cut")
            if data[at:] != END:
                raise TraceError(f"trace '{path}' is damaged: an end mark at byte {at} is "
                                 f"not the file's end")
            break
        if len(data) - at < 2:
            raise TraceError(f"trace '{path}' is truncated: 1 byte of an event head at byte {at}")
        op, unit = data[at], data[at + 1]
        at += 2
        name = OP_NAMES.get(op)
        if name is None:
            raise TraceError(f"trace '{path}' is damaged: unknown operation {op} at byte {start}")
        kind = "db" if name in DB_OPS else "cursor" if name in CURSOR_OPS else \
            "role" if name in REL_OPS else "container"
        limit = {"db": 1, "cursor": n_curs, "role": n_roles, "container": n_units}[kind]
        if unit >= limit:
            raise TraceError(f"trace '{path}' is damaged: {name} of unit {unit} (the spec has "
                             f"{limit}) at byte {start}")
        layout, aux, word, rest = LAYOUT[name], 0, b"", 0
        if layout & AUX:
            aux, at = _varint(path, data, at, start, "field or key")
            if aux > 0xFFFF:
                raise TraceError(f"trace '{path}' is damaged: field or key {aux} at byte {start}")
        if layout & WORD:
            z, at = _varint(path, data, at, start, "reference")
            v = (last.get((kind, unit), 0) + ((z >> 1) ^ -(z & 1))) & 0xFFFFFFFFFFFFFFFF
            last[(kind, unit)] = v
            word = struct.pack("<Q", v)
        zeros = 0
        if layout & REST:
            rest, at = _varint(path, data, at, start, "length")
            if layout & ZEROS:
                zeros, at = _varint(path, data, at, start, "count of zero bytes")
                if rest + zeros != sizes[unit]:
                    raise TraceError(f"trace '{path}' is damaged: the record of the event at "
                                     f"byte {start} is {rest} bytes and {zeros} zeros, not "
                                     f"{sizes[unit]}")
            if rest > len(data) - at:
                raise TraceError(f"trace '{path}' is truncated: an event of {rest} bytes at "
                                 f"byte {start}, {len(data) - at} left")
        length = len(word) + rest + zeros
        if length > 0xFFFFFFFF:
            raise TraceError(f"trace '{path}' is damaged: an event of {length} bytes at byte {start}")
        if name in ANSWERED:              # the operation, then its result if it gave one
            out += EVENT.pack(OPS[ANSWERED[name]], unit, aux, rest + zeros)
            events.append((ANSWERED[name], unit, aux, len(out), rest + zeros))
            out += data[at:at + rest]
            out += bytes(zeros)
            origins.append(start)
            at += rest
            if word != struct.pack("<Q", NIL):
                out += EVENT.pack(OPS["result"], unit, 0, 8)
                events.append(("result", unit, 0, len(out), 8))
                out += word
                origins.append(start)
            continue
        out += EVENT.pack(op, unit, aux, length)
        events.append((name, unit, aux, len(out), length))
        out += word
        out += data[at:at + rest]
        out += bytes(zeros)
        at += rest
        origins.append(start)
    return bytes(out), events, origins


def iter_payloads(trace: Trace) -> Iterator[tuple]:
    """(op, unit, aux, payload bytes) of every event."""
    for op, unit, aux, off, n in trace.events:
        yield op, unit, aux, trace.data[off:off + n]


def trace_path_for(spec_path: str) -> str:
    return default_path(os.path.basename(spec_path))
