"""A plain-Python reference model of a p2gen container, for the differential tests.

A container is a list of records (tuples of normalised field values, in field order).
The model knows only what the public API promises:

- storage `iarray` makes its key unique, in the range 0 .. max_key (else P2_EDUP /
  P2_ERANGE, and a failed insert or update changes nothing); every other layer accepts
  duplicates;
- a cursor yields the elements satisfying its predicate (evaluated here over the
  predicate AST of the spec), in its `order by` order if it has one (largest key first
  for `desc`), otherwise in an order the model does not predict (results are compared
  as multisets);
- `delflag` deletes logically: `purge` then removes, and reports, the marked elements
  (over iarray a marked element also makes room for a new one with its key);
- a transient container is empty after a close; a persistent one keeps everything.

Values are normalised as the generated C compares them: integers as ints, f32 rounded
to single precision, char[N] as the bytes up to the first NUL.
"""
from __future__ import annotations

import math
import struct
from typing import Any, Optional

from p2gen.model import And, Compare, Const, FieldRef, FieldType, Not, Or, ParamRef


# ---------------------------------------------------------------------------
# values
# ---------------------------------------------------------------------------
def cstr(b: bytes) -> bytes:
    """The C-string view of a char value: the bytes before the first NUL."""
    i = b.find(b"\0")
    return b if i < 0 else b[:i]


def norm(t: FieldType, v: Any) -> Any:
    """A value as the C code sees it once stored in a field of type `t`."""
    if t.kind == "char":
        if isinstance(v, str):
            v = v.encode()
        return cstr(bytes(v))
    if t.kind == "float":
        v = float(v)
        if t.name == "f32" and math.isfinite(v):
            v = struct.unpack("<f", struct.pack("<f", v))[0]
        return v
    return int(v)


def encode(t: FieldType, v: Any) -> str:
    """The harness token for value v of type t."""
    if t.kind == "char":
        b = v.encode() if isinstance(v, str) else bytes(v)
        out = []
        for c in b:
            if 0x20 < c < 0x7F and c not in (0x22, 0x5C):
                out.append(chr(c))
            else:
                out.append(f"\\x{c:02x}")
        return '"' + "".join(out) + '"'
    if t.kind == "float":
        return repr(float(v))
    return str(int(v))


def decode(t: FieldType, tok: str) -> Any:
    """A harness output token back to a (normalised) value."""
    if t.kind == "char":
        assert len(tok) >= 2 and tok[0] == tok[-1] == '"', f"bad string token {tok!r}"
        body, out, i = tok[1:-1], bytearray(), 0
        while i < len(body):
            if body[i] == "\\":
                assert body[i + 1] == "x", f"bad escape in {tok!r}"
                out.append(int(body[i + 2:i + 4], 16))
                i += 4
            else:
                out.append(ord(body[i]))
                i += 1
        return bytes(out)
    if t.kind == "float":
        return norm(t, float(tok))
    return int(tok)


# ---------------------------------------------------------------------------
# predicates
# ---------------------------------------------------------------------------
_OPS = {
    "==": lambda a, b: a == b, "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
}


class Predicate:
    """Evaluates a cursor's where-clause (Compare / And / Or / Not) over one record."""

    def __init__(self, expr, record):
        self.expr = expr
        self.record = record
        self.index = {f.name: i for i, f in enumerate(record.fields)}

    def _ftype(self, c: Compare) -> FieldType:
        for side in (c.left, c.right):
            if isinstance(side, FieldRef):
                return self.record.field(side.name).type
        raise AssertionError("comparison without a field")

    def _operand(self, o, t: FieldType, rec: tuple, params: dict):
        if isinstance(o, FieldRef):
            return rec[self.index[o.name]]
        if isinstance(o, ParamRef):
            return params[o.name]
        assert isinstance(o, Const)
        if t.kind == "char":
            return norm(t, o.value)
        if t.kind == "float":
            return norm(t, float(o.value))
        return int(o.value)

    def _eval(self, e, rec, params) -> bool:
        if isinstance(e, And):
            return self._eval(e.left, rec, params) and self._eval(e.right, rec, params)
        if isinstance(e, Or):
            return self._eval(e.left, rec, params) or self._eval(e.right, rec, params)
        if isinstance(e, Not):
            return not self._eval(e.operand, rec, params)
        t = self._ftype(e)
        return _OPS[e.op](self._operand(e.left, t, rec, params),
                          self._operand(e.right, t, rec, params))

    def __call__(self, rec: tuple, params: dict) -> bool:
        return True if self.expr is None else self._eval(self.expr, rec, params)


def param_fields(expr) -> dict:
    """For each $parameter of a where-clause, the name of a field it is compared with."""
    out: dict = {}

    def walk(e):
        if e is None:
            return
        if isinstance(e, (And, Or)):
            walk(e.left)
            walk(e.right)
        elif isinstance(e, Not):
            walk(e.operand)
        else:
            f = next((s.name for s in (e.left, e.right) if isinstance(s, FieldRef)), None)
            for s in (e.left, e.right):
                if isinstance(s, ParamRef) and f is not None:
                    out.setdefault(s.name, f)
    walk(expr)
    return out


# ---------------------------------------------------------------------------
# the container
# ---------------------------------------------------------------------------
class ModelError(AssertionError):
    """The implementation did something the model does not allow."""


class ContainerModel:
    def __init__(self, info, plans):
        """`info`: a p2gen.ir.ContainerInfo; `plans`: its spec's planned access paths
        (CheckedSpec.plans, CursorInfo -> Plan)."""
        self.info = info
        self.plans = plans
        self.name = info.name
        self.record = info.record
        self.fields = [f.name for f in info.record.fields]
        self.types = [f.type for f in info.record.fields]
        self.index = {n: i for i, n in enumerate(self.fields)}
        st = info.storage
        self.unique = self.index[st.layer.key_field(st)] if st.layer.unique_key else None
        self.max_key = st.layer.key_bound(st)
        self.delflag = info.purges
        self.persistent = info.persistent
        self.recs: list = []
        self.marked: list = []      # delflag: deleted, not yet purged
        self.cursors = {c.name: c for c in info.cursors if c.synthetic != "find"}
        self.predicates = {c.name: Predicate(c.where, info.record) for c in info.cursors}

    # -- records -----------------------------------------------------------------
    def make(self, values) -> tuple:
        return tuple(norm(t, v) for t, v in zip(self.types, values))

    def replace(self, rec: tuple, field: str, value) -> tuple:
        i = self.index[field]
        out = list(rec)
        out[i] = norm(self.types[i], value)
        return tuple(out)

    def show(self, rec: tuple) -> str:
        return "(" + ", ".join(f"{n}={v!r}" for n, v in zip(self.fields, rec)) + ")"

    def _position(self, rec: tuple) -> int:
        for i, r in enumerate(self.recs):
            if r == rec:
                return i
        raise ModelError(f"{self.name}: the implementation reported {self.show(rec)}, "
                         f"which the model does not hold")

    # -- unique iarray key ---------------------------------------------------------------
    def _key_error(self, new: tuple, old: Optional[tuple]) -> Optional[str]:
        if self.unique is None:
            return None
        k = new[self.unique]
        if not (0 <= k <= self.max_key):
            return "ERANGE"
        if old is not None and old[self.unique] == k:
            return None
        # delflag: a marked element holding the key makes room
        self.marked = [m for m in self.marked if m[self.unique] != k]
        if any(r[self.unique] == k for r in self.recs):
            return "EDUP"
        return None

    # -- operations (return None for success, else the P2 code name) ---------------------
    def insert(self, rec: tuple) -> Optional[str]:
        err = self._key_error(rec, None)
        if err is None:
            self.recs.append(rec)
        return err

    def delete(self, rec: tuple) -> None:
        del self.recs[self._position(rec)]
        if self.delflag:
            self.marked.append(rec)

    def update(self, old: tuple, new: tuple) -> Optional[str]:
        i = self._position(old)
        err = self._key_error(new, old)
        if err is None:
            self.recs[i] = new
        return err

    def purge(self) -> int:
        n = len(self.marked)
        self.marked = []
        return n

    def closed(self) -> None:
        """The database was closed (and will be reopened)."""
        if not self.persistent:
            self.recs = []
            self.marked = []

    # -- transactions (containers over a journal or record log) ---------------------------
    def committed(self) -> None:
        """A commit (or what commits: sync, close): an abort comes back to this state."""
        self._saved = (list(self.recs), list(self.marked))

    def aborted(self) -> None:
        """An abort: every change since the last commit is undone."""
        recs, marked = getattr(self, "_saved", ([], []))
        self.recs, self.marked = list(recs), list(marked)

    # -- queries -------------------------------------------------------------------------
    def where(self, field: str, value) -> list:
        i = self.index[field]
        v = norm(self.types[i], value)
        return [r for r in self.recs if r[i] == v]

    def matches(self, cursor: str, params: dict) -> list:
        pred = self.predicates[cursor]
        return [r for r in self.recs if pred(r, params)]

    def order_key(self, cursor: str):
        field = self.cursors[cursor].order_by
        return None if field is None else self.index[field]

    def descending(self, cursor: str) -> bool:
        """Is the cursor ordered `desc` (largest key first)?"""
        return self.cursors[cursor].descending

    def check_order(self, cursor: str, recs: list) -> None:
        k = self.order_key(cursor)
        if k is None:
            return
        desc = self.descending(cursor)
        keys = [r[k] for r in recs]
        for a, b in zip(keys, keys[1:]):
            if (a < b) if desc else (b < a):
                raise ModelError(f"cursor {cursor}: order by {self.fields[k]}"
                                 f"{' desc' if desc else ''} violated: "
                                 f"{a!r} before {b!r} in {keys!r}")

    def same_multiset(self, got: list, want: list, what: str) -> None:
        rest = list(want)
        extra = []
        for r in got:
            for j, w in enumerate(rest):
                if w == r:
                    del rest[j]
                    break
            else:
                extra.append(r)
        if extra or rest:
            raise ModelError(f"{what}: {len(got)} records, model expects {len(want)}; "
                             f"unexpected {[self.show(r) for r in extra][:5]}, "
                             f"missing {[self.show(r) for r in rest][:5]}")
