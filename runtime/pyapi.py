"""The Pythonic layer over the data managers of a spec (stdlib only).

`p2gen build --python spec.p2 -o out` writes `out/<prefix>.py`, which calls `bind(ffi, lib,
METADATA)` with its compiled CFFI extension. With `out` on sys.path:

    import tpcb_hash1
    with tpcb_hash1.open("data") as db:          # dir of the persistent files (None: cwd)
        acc = db.accounts.insert(id=1, branch=2, balance=100)
        acc.balance, acc.ref                     # a Record: a copy, with its reference
        db.accounts.find(1)                      # by the only key (or find(id=1)); None if absent
        db.accounts.update(acc, balance=150)     # -> the updated Record (new ref if it moved)
        db.accounts.delete(acc)                  # a Record or a reference
        len(db.accounts), list(db.accounts)      # count; every element
        for a in db.rich_in_branch(b=2, min=0):  # a declared cursor (or db.cursor("rich_in_branch", ...))
            ...

With text fields, ref fields and relationships (type_equations/oo7/*.p2):

        m = db.modules.insert(id=1, design_root=None)    # ref field: Record, int or None
        man = db.manuals.insert(id=1, text="Ünïcode…")   # text field: str or bytes
        db.modules.man.add(m, man)                       # many-role: add / remove / count
        for x in db.modules.man(m): ...                  # ... and call it: iterate partners
        db.manuals.mod(man)                              # one-role: partner Record or None
        db.manuals.mod.set(man, None)                    # ... set / clear it

Database
    `open(dir=None)` opens every container (persistent files are created when absent and
    resolved against `dir`). `close()` (idempotent; also on leaving a `with` block and, as a
    safety net, when the object is garbage collected), `sync()`, `closed`,
    `container(name)`, `cursor(name, *args, **params)`, `containers` (name -> Container).
    Containers and cursors are also attributes named after them (`db.accounts`,
    `db.rich_in_branch(...)`) unless the name clashes with one of these methods.
    Over journalled files (else absent): `begin()`, `commit()`, `abort()` and
    `transaction()` (`with db.transaction():` begins, commits when the block ends
    normally, aborts when it raises). Leaving `with spec.open(...) as db:` commits what
    is pending on a normal exit and aborts it on an exception (as sqlite3's
    `with connection:`); close() alone keeps only what was committed.
    Any use after close() raises ClosedError. close() and abort() from inside a call on
    the database (user code run while it converts an argument: Re-entry, below) raise
    BusyError; abort() ends every open cursor and role walk (their next step raises
    RuntimeError, as after an insert: the rows they would give may be gone).
Container
    `insert([record_or_mapping], **fields) -> Record`: fields not given take the spec's
    default (`qty: u32 = 0`); one without a default must be given (TypeError naming it).
    By the container's key `key` (a unique index's, else the equation's first; a tuple
    for a composite one), as a dict: `c[key]` (NotFoundError, a KeyError, if absent),
    `key in c`, `c.get(key, default=None)`, `del c[key]`.
    `at(ref) -> Record` by reference (NotFoundError if there is no such element),
    `find(value)` by the container's key, `find(field=value)` by any key field,
    `find(a=..., b=...)` by a composite key -> Record or None (a string longer than the
    field finds nothing; an int outside the field's type raises RangeError; a TypeError
    lists every key), `update(rec_or_ref, **fields) -> Record`,
    `delete(rec_or_ref)`, `update_by(key, **fields) -> Record or None` and
    `delete_by(key) -> bool` (by the value of the container's only key field: one call
    into C each),
    `len()`, `iter()` (every element), `purge() -> int` (only over a `delflag` layer;
    absent otherwise), `upsert(...)` (only over an index with `unique = true`),
    `name`, `keys`, `record` (the Record class), `persistent`, `file`, `equation`,
    `roles` (role name -> Role), `role(name)`.
    numpy (records without text fields; TypeError otherwise): `dtype` (a structured
    dtype with the C record's offsets and size: ints and floats as their C types,
    char[N] as 'S<N>' NUL-padded bytes, ref fields as uint64 with 2**64-1 for none);
    `to_numpy()` -> every element in iteration order, a copy made in one call into C
    (valid after changes and close); `insert_many(rows) -> int` (a structured array,
    fields by name, missing ones 0 / b"" / none; or an iterable of mappings or Records):
    every value is checked first and a bad one raises TypeError / RangeError naming its
    row with nothing inserted; an insert failing in C (a duplicate key) stops there,
    the rows before it stay, and the P2Error has `.index` (the failing row).
    Roles of the relationships the container is in are attributes named after them
    (`db.comps.parts`) unless the name is a Python keyword or one of the attributes above:
    then `db.conns.role("from")`.
Roles (one end of a relationship, on the container whose elements play it)
    Arguments naming elements (owner, member, x, partner) are Records of the right
    container (checked like get's: TypeError if of another, NotFoundError if stale) or int
    references; an element that does not exist raises NotFoundError.
    A many-role (the element holds a collection of partners):
      `role(owner)` -> a lazy iterator of the partner container's Records, in the order
      they were added (a bag when both sides are many: a partner may come twice);
      `role.refs(owner)` -> the same walk as int references; `role.count(owner) -> int`;
      `role.add(owner, member)`; `role.remove(owner, member)` (one occurrence;
      NotFoundError if member is not there). Both ends are kept in step: adding to a
      many-role whose partner role is one moves the member from its previous owner.
    A one-role (the element holds at most one partner):
      `role(x)` or `role.get(x)` -> the partner's Record or None; `role.ref(x)` -> its
      reference or None; `role.set(x, partner)` (None clears it).
    Deleting an element takes it out of every relationship. The iterators walk the C
    iterator lazily; changing either container (insert, update, delete, any add / remove /
    set of a role on them) while one walks makes it raise RuntimeError on its next step,
    as a dict does: collect first (`list(role(owner))`), then change. `name`,
    `relationship` (its name), `many`, `container` and `partner` (Containers),
    `partner_role` (the Role at the other end).
Cursor (what iterating a container or calling a cursor returns)
    An iterator of Records, lazily walking the C cursor. `update(**fields)` and `delete()`
    act on the element last returned and keep the walk going; the update takes effect at
    once, and the walk meets every element once even when the update moves it further
    along (a new value of the key the cursor walks in order). `close()` (or a `with`
    block) ends a walk early. `to_numpy()`: the rest of the walk as a numpy array (then
    the cursor is at its end). Rows come from C in batches of up to BATCH (64) per call,
    built into Records at once; update() / delete() first put the C cursor back on the
    row they act on (its state was saved with the row) and fetch the rows after it again.
    Changing the container any
    other way while a cursor walks it makes the cursor raise RuntimeError on its next step
    (as a dict does): the C cursor would otherwise follow a stale reference.
Record
    An immutable copy of one element: fields as attributes (int, float; char[N] as `str`,
    decoded UTF-8 with the NUL padding stripped and undecodable bytes kept as surrogate
    escapes), `.ref` (its reference when read; a field named `ref` wins, then use `._ref`),
    text fields as `str` (the whole text, read when the Record is made; decoded UTF-8
    with undecodable bytes kept as surrogate escapes, so
    `rec.f.encode("utf-8", "surrogateescape")` gives the exact bytes, NULs included),
    ref fields as int or None (no element: the C NOREF),
    `._asdict()`, `._fields`; equal (and hashing equal) when of the same record type with
    equal fields, whatever their references. Passed to get/update/delete, a Record names
    its element by reference and key fields: NotFoundError if the element at that reference
    now has other keys (over qsort storage references are positions and shift on every
    insert and delete; over iarray the reference is the key). Bare int references are
    taken as they are.
Values written
    int fields take what operator.index takes (an int, an int subclass as its int value,
    never its __int__; an object with __index__; not float or str; bool counts as int)
    within the C type's range, else TypeError / RangeError (also an OverflowError); so do
    keys, references and integer cursor parameters (a reference: not bool). Float fields take int or float. char[N]
    fields take str (encoded UTF-8) or bytes of at most N bytes without NUL, else
    TypeError / RangeError (also a ValueError) naming the field and N; a str with no
    UTF-8 spelling (a lone surrogate) raises RangeError too. Text fields take
    str (encoded UTF-8, surrogate escapes back to their bytes) or bytes of any length,
    NULs included: insert() inserts and then writes each text (if writing one fails, the
    element is deleted again and the error raised); update() writes the other fields, then
    the texts given (if writing one fails, the element gets its old fields and texts
    back); fields not given keep their text. Ref fields take an int reference, a Record of
    the target container or None (no element); one that names no live element raises
    NotFoundError, a Record of another container TypeError. Unknown field names
    raise TypeError listing the record's fields. The binding's own arguments (a cursor's
    name, a container's record or reference, self) are positional-only, so fields and
    cursor parameters may be called anything (`db.cursor("q", name=3, self=1)`).
Errors
    P2Error (.code: the P2_* code, .message), with NotFoundError (also a KeyError),
    DuplicateError, RangeError (also ValueError and OverflowError), ClosedError,
    FormatError, MismatchError, BusyError; other codes (P2_ENOMEM, P2_EIO, P2_EINVAL) raise
    P2Error itself. Messages are the C library's (`<prefix>_errmsg`).
Threads
    A Database may be shared by threads: every call into the C library (on the database,
    its containers, cursors and roles) holds the database's lock (a threading.RLock, or
    the C paths' Lock, below), so calls from several threads are serialised, one at a
    time, never interleaved inside C. A cursor walked by several threads still raises
    RuntimeError if another change came in between (as for one thread). Databases of
    different opens are independent.
Re-entry
    Converting an argument may run user code: an __index__, a str subclass's encode, a
    field name's __eq__ / __hash__, a mapping's __getitem__, an array's dtype. It runs
    inside the call, the database's lock held: close() and abort() from it raise
    BusyError ("in use by a call in progress") and do nothing, since the call goes on
    with the handle; other calls from it go through (the lock is reentrant) and the call
    then acts on what they left: update converts its values before locating the element,
    a role its element arguments before locating any, a cursor's update re-checks that
    its container did not change (RuntimeError). The C paths run no user code while they
    hold the lock (they take exact types and leave the rest to the Python paths; a
    __del__ the collector runs meanwhile gets the same refusal).
C paths
    The extension built by p2gen carries a small CPython module, `_<prefix>_fast`
    (generator/pyfast.py). With it, insert(**fields), at(ref) of an int reference,
    update(rec_or_ref, **fields), delete(rec_or_ref) and, over a single integer key,
    find(key), find(<key>=key), get(key), [key], `key in`, update_by(key, **fields) and
    delete_by(key) run in C from the call to the Record returned ([] and `in` through
    one line of the class's dunder), and a cursor's next() returns its fetched batch
    (Records made in C) without Python code per row. Records with text fields take
    these paths too: their texts are given as exact str (UTF-8) or bytes and written
    after the element as the Python paths write them (undone the same way if writing
    one fails), and read in C with the element, under the lock, into the Record's str
    (surrogate escapes for bytes that are not UTF-8). The roles of a
    relationship between two such containers are instances of the module's ManyRole /
    OneRole: role(owner), refs, count, add, remove, ref, get and set locate their
    elements (an int reference, or a Record whose key fields its element still has) and
    call C once, and a walk (a Links over the module's RoleWalk) keeps its C iterator and
    fetches its batches in C. They take only the
    common case (keyword fields, exact int / float / str / bytes / None values that fit,
    an open database, the lock free or already this thread's) and hand anything else to
    the Python method they shadow, which raises the precise error: the results, errors,
    version counters and locking are the same either way. The database's lock is then the
    module's Lock (reentrant, with acquire / release / with as threading.RLock), which
    also tells the C paths that the database was closed. An extension without the module
    (built by an older p2gen, or PyPy) uses the Python paths throughout.
Signals (journalled specs)
    The journal finds written pages with a SIGSEGV handler. Every call that may write
    first checks that it is still the installed handler and, if faulthandler.enable(),
    signal.signal or a crash reporter replaced it, puts it back on top (the other handler
    still receives every fault that is not a journal page's first write); P2Error if that
    fails.
"""
from __future__ import annotations

import functools
import inspect
import keyword
import operator
import os
import struct
import sys
import threading
import weakref
from collections.abc import Mapping
from typing import Any, Optional

from .codes import CODES

__all__ = ["P2Error", "NotFoundError", "DuplicateError", "RangeError", "ClosedError",
           "FormatError", "MismatchError", "BusyError", "Record", "Database", "Container",
           "Cursor", "Role", "ManyRole", "OneRole", "Links", "bind", "NOREF", "Journalled"]

# The return codes, one module constant per row of their table (P2_ERROR_LIST in
# p2_runtime.h, read by p2gen.runtime.codes): P2_OK = 0, P2_END = 1, ..., P2_EBUSY = 11.
globals().update((c.name, c.value) for c in CODES)
NOREF = (1 << 64) - 1    # <prefix>_NOREF: a ref field or one-role naming no element
NOREF32 = (1 << 32) - 1  # <prefix>_NOREF32: the same in a ref field over 32-bit links
FAST_API = 6              # the C paths' module this layer drives (generator/pyfast.API)
_MISSING = object()   # no value: find() without a positional one (None is a ref key's
                      # none), a field without a default
TEXT_MAX = 1 << 40        # the generated set_<text> refuses texts this long (P2_ERANGE)


# ---------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------
class P2Error(Exception):
    """An error of a generated data manager; `.code` is its P2_* code (None if none)."""
    code: Optional[int] = None

    def __init__(self, message: str, code: Optional[int] = None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code

    def __str__(self) -> str:
        return self.message


class NotFoundError(P2Error, KeyError):
    """P2_NOTFOUND: no such element."""
    code = P2_NOTFOUND


class DuplicateError(P2Error):
    """P2_EDUP: the key is already present in unique storage."""
    code = P2_EDUP


class RangeError(P2Error, ValueError, OverflowError):
    """P2_ERANGE, or a value that does not fit its field."""
    code = P2_ERANGE


class ClosedError(P2Error):
    """P2_ECLOSED: the database was closed."""
    code = P2_ECLOSED


class FormatError(P2Error):
    """P2_EFORMAT: not a p2gen file, bad version, truncated or corrupt."""
    code = P2_EFORMAT


class MismatchError(P2Error):
    """P2_EMISMATCH: the file was made by another spec or type equation."""
    code = P2_EMISMATCH


class BusyError(P2Error):
    """P2_EBUSY: the file is locked by another open database; or close() / abort() from
    inside a call on the database (user code run by an argument), which is refused."""
    code = P2_EBUSY


_ERRORS = {P2_NOTFOUND: NotFoundError, P2_EDUP: DuplicateError, P2_ERANGE: RangeError,
           P2_ECLOSED: ClosedError, P2_EFORMAT: FormatError, P2_EMISMATCH: MismatchError,
           P2_EBUSY: BusyError}


def error_for(code: int, message: str) -> P2Error:
    """The exception for a P2_* code."""
    return _ERRORS.get(code, P2Error)(message, code)


# ---------------------------------------------------------------------------
# Fields: checking and converting values
# ---------------------------------------------------------------------------
_INT_BITS = {"i8": 8, "i16": 16, "i32": 32, "i64": 64, "u8": 8, "u16": 16, "u32": 32, "u64": 64}


def _encode(value: Any, what: str = "the value") -> bytes:
    """str as UTF-8 (surrogate escapes back to their bytes), bytes-likes as they are. A str
    that has no UTF-8 spelling (a lone surrogate outside the escapes U+DC80..U+DCFF) is a
    value the field cannot hold: RangeError, like any other value that does not fit."""
    if not isinstance(value, str):
        return bytes(value)
    try:
        return value.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError as e:
        raise RangeError(f"{what}: {value!r:.80} cannot be encoded as UTF-8 ({e.reason} "
                         f"at index {e.start})") from None


class _Field:
    """How one typed value (a record field or a cursor parameter) crosses to C."""
    __slots__ = ("name", "kind", "tname", "length", "lo", "hi", "what", "target", "noref",
                 "default")

    def __init__(self, desc: dict, what: str):
        self.name = desc["name"]
        self.kind = desc["kind"]
        self.tname = desc["type"]   # i8 .. u64, f32, f64, char
        self.length = desc.get("length") or 0
        self.what = what     # "field 'x' of account" / "parameter $b of cursor c"
        self.target = desc.get("target")   # ref <container>: the container's name
        # the spec's default (`qty: u32 = 0`; None for a ref field's `none`), else _MISSING:
        # insert then needs the field
        self.default = desc.get("default", _MISSING)
        # what stands for no element: a ref field over 32-bit links is a u32
        self.noref = NOREF32 if self.target is not None and self.tname == "u32" else NOREF
        if self.kind == "int":
            bits = _INT_BITS[self.tname]
            signed = self.tname.startswith("i")
            self.lo = -(1 << (bits - 1)) if signed else 0
            self.hi = (1 << (bits - 1)) - 1 if signed else (1 << bits) - 1
        else:
            self.lo = self.hi = None

    @property
    def spelled(self) -> str:
        if self.target is not None:
            return f"ref {self.target}"
        return f"char[{self.length}]" if self.kind == "char" else self.tname

    def convert(self, value: Any):
        """The value as C takes it (int, float or bytes); raises TypeError / RangeError."""
        if self.target is not None:
            return self._convert_ref(value)
        if self.kind == "text":
            if not isinstance(value, (str, bytes, bytearray, memoryview)):
                raise TypeError(f"{self.what} is text: expected str or bytes, got "
                                f"{type(value).__name__} {value!r:.80}")
            data = _encode(value, self.what)
            if len(data) >= TEXT_MAX:
                raise RangeError(f"{self.what} is text: {len(data)} bytes is too long "
                                 f"(at most {TEXT_MAX - 1})")
            return data
        if self.kind == "int":
            if value.__class__ is not int:
                value = _index(value, f"{self.what} is {self.spelled}: expected an int")
            if not self.lo <= value <= self.hi:
                raise RangeError(f"{self.what} is {self.spelled}: {value} is out of range "
                                 f"({self.lo} .. {self.hi})")
            return value
        if self.kind == "float":
            if not isinstance(value, (int, float)):
                raise TypeError(f"{self.what} is {self.spelled}: expected a float, got "
                                f"{type(value).__name__} {value!r}")
            try:
                return float(value)
            except OverflowError:
                raise RangeError(f"{self.what} is {self.spelled}: {value} is out of range") \
                    from None
        if not isinstance(value, (str, bytes, bytearray, memoryview)):
            raise TypeError(f"{self.what} is {self.spelled}: expected str or bytes, got "
                            f"{type(value).__name__} {value!r}")
        data = _encode(value, self.what)
        if len(data) > self.length:
            raise RangeError(f"{self.what} is {self.spelled}: {value!r} is {len(data)} bytes, "
                             f"longer than {self.length}")
        if b"\0" in data:
            raise RangeError(f"{self.what} is {self.spelled}: {value!r} contains a NUL byte")
        return data


    def _convert_ref(self, value: Any) -> int:
        if value is None:
            return self.noref
        if isinstance(value, Record):
            if value._origin != self.target:
                raise TypeError(f"{self.what} is ref {self.target}: got a {value._name} "
                                f"record of container {value._origin}")
            return value._ref
        if value.__class__ is not int:
            what = (f"{self.what} is ref {self.target}: expected a Record of {self.target}, "
                    f"an int reference or None")
            if isinstance(value, bool):       # True is not a reference
                raise TypeError(f"{what}, got bool {value!r}")
            value = _index(value, what)
        if not 0 <= value <= self.noref:
            raise RangeError(f"{self.what} is ref {self.target}: {value} is not a reference "
                             f"(0 .. 2**{self.noref.bit_length()}-1)")
        return value


def _index(value: Any, what: str) -> int:
    """The one conversion of an integer argument (a field's value, a key, a reference, a
    cursor parameter, reserve's n): operator.index, so an int subclass is its int value
    (never its __int__) and any object with __index__ (numpy's integers) is taken; a float
    or a str is a TypeError saying `what`. User code (an __index__) runs here, before the
    call into C, with the database's lock held (close / abort from it are refused)."""
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{what}, got {type(value).__name__} {value!r:.80}") from None


def _int_ref(ref: Any) -> int:
    if isinstance(ref, Record):
        return ref._ref
    if ref.__class__ is int:
        return ref
    what = "expected a Record or a reference (int)"
    if isinstance(ref, bool):       # True is not a reference
        raise TypeError(f"{what}, got bool {ref!r}")
    return _index(ref, what)


def _arg(x: Any) -> Any:
    """An element argument (a Record or a reference) converted before any element is
    located: what user code (an __index__) does then cannot change what was located."""
    if x.__class__ is int or isinstance(x, Record):
        return x
    return _int_ref(x)


# ---------------------------------------------------------------------------
# Records
# ---------------------------------------------------------------------------
class Record:
    """An immutable copy of one element. Subclassed per record type by bind()."""
    __slots__ = ("_values", "_ref", "_origin")
    _fields: tuple = ()
    _name = "record"

    def __init__(self, /, *args, **kwargs):
        raise TypeError(f"{type(self).__name__} records are read from a container "
                        f"(insert, get, find, iteration)")

    @classmethod
    def _make(cls, values: tuple, ref: Optional[int], origin: Optional[str] = None):
        return _new_record(cls, values, ref, origin)

    @property
    def ref(self) -> Optional[int]:
        """The element's reference when this copy was made."""
        return self._ref

    def _asdict(self) -> dict:
        return dict(zip(self._fields, self._values))

    def __setattr__(self, name, value):
        raise AttributeError(f"{self._name} records are read-only copies; change the element "
                             f"with container.update(rec, {name}=...)")

    __delattr__ = __setattr__

    def __eq__(self, other):
        if not isinstance(other, Record):
            return NotImplemented
        return type(self) is type(other) and self._values == other._values

    def __hash__(self):
        return hash((self._name, self._values))

    def __repr__(self) -> str:
        body = ", ".join(f"{n}={v!r}" for n, v in zip(self._fields, self._values))
        return f"{self._name}({body}, ref={self._ref!r})"

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        raise TypeError(f"{self._name} records cannot be pickled; pickle rec._asdict()")


# Records are made by setting their slots through the slot descriptors (three C calls; a
# third of the cost of object.__setattr__, which __setattr__'s refusal would otherwise need).
_set_values = Record.__dict__["_values"].__set__
_set_ref = Record.__dict__["_ref"].__set__
_set_origin = Record.__dict__["_origin"].__set__


def _new_record(cls, values: tuple, ref, origin, _new=object.__new__):
    self = _new(cls)
    _set_values(self, values)
    _set_ref(self, ref)
    _set_origin(self, origin)
    return self


# struct codes of the C field types (standard sizes; padding is spelled out from offsetof)
_STRUCT_CODES = {"i8": "b", "i16": "h", "i32": "i", "i64": "q", "u8": "B", "u16": "H",
                 "u32": "I", "u64": "Q", "f32": "f", "f64": "d"}


class _Layout:
    """How a C record's bytes become a Record's values in one struct.unpack: the record's
    struct.Struct (its exact C layout, read from the compiled extension: offsetof and
    sizeof, padding as pad bytes) and a function generated for the record type that turns
    the unpacked tuple into field values (char[N] decoded up to the first NUL, NOREF ref
    fields to None; text fields None, read separately by the container)."""

    def __init__(self, ffi, ctype: str, fields: list):
        fmt, at, index, src = ["="], 0, 0, []
        self.texts = []     # (position, field name) of text fields
        self.packed = []    # (field, index in the unpacked tuple) of the other fields
        for pos, f in enumerate(fields):
            off = ffi.offsetof(ctype, f.name)
            if off > at:
                fmt.append(f"{off - at}x")
            if f.kind == "text":
                size = ffi.sizeof("p2_text32" if f.tname == "text32" else "p2_text")
                fmt.append(f"{size}x")
                self.texts.append((pos, f.name))
                src.append("None")
                at = off + size
                continue
            if f.target is not None:
                code = "I" if f.noref == NOREF32 else "Q"
                expr = f"(None if t[{index}] == {f.noref} else t[{index}])"
            elif f.kind == "char":
                code = f"{f.length}s"
                expr = f"t[{index}].split(b'\\0', 1)[0].decode('utf-8', 'surrogateescape')"
            else:
                code, expr = _STRUCT_CODES[f.tname], f"t[{index}]"
            fmt.append(code)
            src.append(expr)
            self.packed.append((f, index))
            at = off + struct.calcsize("=" + code)
            index += 1
        total = ffi.sizeof(ctype)
        if total > at:
            fmt.append(f"{total - at}x")
        self.struct = struct.Struct("".join(fmt))
        assert self.struct.size == total, (ctype, self.struct.format, total)
        body = ", ".join(src) + ("," if len(src) == 1 else "")
        self.body = None if self.texts else body
        if src and src == [f"t[{i}]" for i in range(len(src))]:
            self.decode = tuple            # every field as struct reads it
        else:
            ns = {"NOREF": NOREF}
            exec(f"def decode(t):\n    return ({body})\n", ns)
            self.decode = ns["decode"]


class _Slow(Exception):
    """A value the generated packer leaves to the checked path (which raises the error)."""


def _packer(layout: "_Layout", buf, defaults: dict):
    """fill(t, fields): a function generated for a record type without text fields that
    writes into buf (a C record) the values of the dict `fields` over the unpacked tuple t
    (an element's current values, or the zero record), in one struct.pack_into: int and
    float ranges are struct's checks, char[N] is checked here (at most N bytes, no NUL),
    ref fields go through their _Field. Any value it does not take (a wrong type, out of
    range, an unknown field name) raises, and the caller then takes the checked per-field
    path, which raises the precise TypeError / RangeError. Returns (fill, the tuple insert
    starts from: `defaults` (converted values by name), else 0 / b"" / no element)."""
    ns = {"_K": _MISSING, "_Slow": _Slow, "NOREF": NOREF, "pack_into": layout.struct.pack_into,
          "buf": buf}
    lines = ["def fill(t, kw):", "    n = 0"]
    zero = []
    for f, j in layout.packed:
        v = f"v{j}"
        lines += [f"    {v} = kw.get({f.name!r}, _K)",
                  f"    if {v} is _K:", f"        {v} = t[{j}]", "    else:", "        n += 1"]
        if f.target is not None:
            ns[f"conv{j}"] = f._convert_ref
            lines += [f"        if {v} is None:", f"            {v} = {f.noref}",
                      f"        elif {v}.__class__ is not int:", f"            {v} = conv{j}({v})"]
            zero.append(defaults.get(f.name, f.noref))
        elif f.kind == "char":
            lines += [f"        if {v}.__class__ is str:",
                      f"            {v} = {v}.encode('utf-8', 'surrogateescape')",
                      f"        elif {v}.__class__ is not bytes:", "            raise _Slow",
                      f"        if len({v}) > {f.length} or b'\\0' in {v}:",
                      "            raise _Slow"]
            zero.append(defaults.get(f.name, b""))
        elif f.kind == "int":
            lines += [f"        if {v}.__class__ is not int and not isinstance({v}, int):",
                      "            raise _Slow"]
            zero.append(defaults.get(f.name, 0))
        else:
            lines += [f"        if {v}.__class__ is not float and not isinstance({v}, (int, float)):",
                      "            raise _Slow"]
            zero.append(defaults.get(f.name, 0.0))
    lines += ["    if n != len(kw):", "        raise _Slow",
              "    pack_into(buf, 0, " + "".join(f"v{j}, " for _, j in layout.packed) + ")"]
    exec("\n".join(lines) + "\n", ns)
    return ns["fill"], tuple(zero)


def _record_class(name: str, fields: list) -> type:
    names = tuple(f.name for f in fields)
    ns: dict = {"__slots__": (), "_fields": names, "_name": name,
                "__doc__": f"record {name} {{ " + " ".join(
                    f"{f.name}: {f.spelled};" for f in fields) + " }"}
    for i, n in enumerate(names):
        if n == "ref" or not hasattr(Record, n):
            ns[n] = property(lambda self, _i=i: self._values[_i],
                             doc=f"field {n}: {fields[i].spelled}")
    cls = type(name, (Record,), ns)
    cls.__qualname__ = name
    return cls


# ---------------------------------------------------------------------------
# The spec's API, bound to one extension
# ---------------------------------------------------------------------------
class _Spec:
    """What bind() derives once per spec: C functions, fields and classes."""

    def __init__(self, ffi, lib, meta: dict):
        self.ffi, self.lib, self.meta = ffi, lib, meta
        self.prefix = p = meta["prefix"]
        for code in CODES:
            if getattr(lib, code.name, code.value) != code.value:
                raise ImportError(f"{code.name} is {getattr(lib, code.name)} in the extension of "
                                  f"{p}, {code.value} in p2gen.runtime.codes: rebuild it with this p2gen")
        self.fields = {}
        self.records = {}
        self.layouts = {}
        for rname, fdescs in meta["records"].items():
            fs = [_Field(d, f"field '{d['name']}' of {rname}") for d in fdescs]
            self.fields[rname] = fs
            self.records[rname] = _record_class(rname, fs)
            self.layouts[rname] = _Layout(ffi, f"{p}_{rname}", fs)
        self.containers = {c["name"]: c for c in meta["containers"]}
        self.cursors = {k["name"]: k for k in meta["cursors"]}
        self.cursor_params = {
            k["name"]: [_Field(q, f"parameter ${q['name']} of cursor {k['name']}")
                        for q in k["params"]] for k in meta["cursors"]}
        self.c_open = getattr(lib, f"{p}_open")
        self.c_close = getattr(lib, f"{p}_close")
        self.c_sync = getattr(lib, f"{p}_sync")
        # journalled files: transactions (absent otherwise)
        self.c_begin = getattr(lib, f"{p}_begin", None)
        self.c_commit = getattr(lib, f"{p}_commit", None)
        self.c_abort = getattr(lib, f"{p}_abort", None)
        self.c_guard = getattr(lib, f"{p}_journal_guard", None)
        self.c_errmsg = getattr(lib, f"{p}_errmsg")
        self.c_errcode = getattr(lib, f"{p}_errcode")
        self.c_verify = getattr(lib, f"{p}_verify", None)
        # the C paths (generator/pyfast.py), when the extension has them and can make them
        self.fast = None
        init = getattr(lib, "p2py__fast_init", None)
        ident = getattr(lib, "p2py__fast_id", None)
        if init is not None and ident is not None and init() == 0:
            self.fast = sys.modules.get(f"_{p}_fast")
            if getattr(self.fast, "API", None) != FAST_API \
                    or getattr(self.fast, "ID", None) != ident():
                self.fast = None        # another p2gen's module, or another extension's
        # record fields read by a C descriptor rather than a property (a Python call)
        if self.fast is not None:
            for rcls in self.records.values():
                for i, n in enumerate(rcls._fields):
                    prop = rcls.__dict__.get(n)
                    if isinstance(prop, property):
                        setattr(rcls, n, self.fast.field(i, _RECORD_SLOTS[0], prop.__doc__))
        # cursors: over fast.Walk, next() runs in C between batches
        self.Cursor = Cursor
        if self.fast is not None:
            self.Cursor = type("Cursor", (self.fast.Walk, Cursor), {"__module__": p})
        self.Links = Links
        self.ManyRole, self.OneRole = ManyRole, OneRole
        if self.fast is not None:
            # walks over fast.RoleWalk (a role bound to its C paths makes them in C);
            # roles over the C paths' role types (see Database: bind_role)
            self.Links = type("Links", (self.fast.RoleWalk, Links), {"__module__": p})
            self.ManyRole = type("ManyRole", (self.fast.ManyRole, ManyRole), {"__module__": p})
            self.OneRole = type("OneRole", (self.fast.OneRole, OneRole), {"__module__": p})
        # what this spec's database has: transactions over a journal (absent otherwise)
        base = Journalled if self.c_commit is not None else Database
        self.Database = type(f"{p}.Database", (base,), {"__slots__": ()})
        self.Database.__qualname__ = "Database"
        self.Database.__module__ = p
        for name in self.containers:
            if not hasattr(base, name):
                setattr(self.Database, name, property(
                    lambda db, _n=name: db.container(_n),
                    doc=f"container {name}: {self.containers[name]['equation']}"))
        for name, k in self.cursors.items():
            if not hasattr(base, name) and name not in self.containers:
                setattr(self.Database, name, _cursor_method(name, k))

    def strerror(self, code: int) -> str:
        return self.ffi.string(self.lib.p2_strerror(code)).decode("utf-8", "replace")

    def error(self, handle, code: int, what: str = "") -> P2Error:
        """The exception for a failed call on `handle` (the C message when it has one)."""
        msg = ""
        if handle is not None and handle != self.ffi.NULL \
                and self.c_errcode(handle) == code:
            msg = self.ffi.string(self.c_errmsg(handle)).decode("utf-8", "replace")
        if not msg:
            msg = self.strerror(code)
            if what:
                msg = f"{what}: {msg}"
        return error_for(code, msg)

    def open(self, dir=None) -> "Database":
        """Open every container of the spec; persistent files live in `dir` (None: cwd)."""
        cdir = self.ffi.NULL if dir is None else os.fsencode(dir)
        out = self.ffi.new(f"{self.prefix}_db **")
        rc = self.c_open(out, cdir)
        handle = out[0]
        if rc != P2_OK:
            err = self.error(handle, rc, f"opening {self.prefix}")
            if handle != self.ffi.NULL:
                self.c_close(handle)
            raise err
        return self.Database(self, handle, dir)


def _close_handle(c_close, handle, lock) -> None:
    """A Database collected without close(): its C paths forget the handle, then it is
    closed."""
    detach = getattr(lock, "_detach", None)
    if detach is not None:
        detach()
    c_close(handle)


def _cursor_method(name: str, k: dict):
    def method(self, /, *args, **params):
        return self.cursor(name, *args, **params)
    params = ", ".join(f"{q['name']}" for q in k["params"])
    method.__name__ = name
    try:
        method.__signature__ = inspect.Signature(
            [inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)]
            + [inspect.Parameter(q["name"], inspect.Parameter.POSITIONAL_OR_KEYWORD)
               for q in k["params"]])
    except ValueError:  # a parameter named like a Python keyword: keep (*args, **params)
        pass
    method.__doc__ = (f"cursor {name}({params}) on {k['container']}"
                      + (f" where {k['where']}" if k.get("where") else "")
                      + (f" order by {k['order_by']}" if k.get("order_by") else "")
                      + (" desc" if k.get("descending") else ""))
    return method


def bind(ffi, lib, meta: dict):
    """Bind a spec's CFFI extension (`ffi`, `lib`) to this layer; `meta` is the METADATA
    dict of the generated module. Returns an object with `open`, `Database` and `records`."""
    return _Spec(ffi, lib, meta)


# ---------------------------------------------------------------------------
# Database
# ---------------------------------------------------------------------------
class Database:
    """An open database: every container of a spec. See the module docstring."""
    __slots__ = ("_spec_", "_handle_", "_finalizer", "_containers", "dir", "_lock",
                 "__weakref__")

    def __init__(self, spec: _Spec, handle, dir=None):
        self._spec_ = spec
        self._handle_ = handle
        # held by every call into C (see _serialised); with the C paths, their lock (the
        # same semantics as threading.RLock), which also tells them the handle
        if spec.fast is not None:
            self._lock = spec.fast.lock(int(spec.ffi.cast("uintptr_t", handle)))
        else:
            self._lock = threading.RLock()
        self.dir = dir
        self._finalizer = weakref.finalize(self, _close_handle, spec.c_close, handle, self._lock)
        self._containers = {}
        for name, c in spec.containers.items():
            cls = _container_class(bool(c["purges"]), bool(c.get("upsert")))
            self._containers[name] = cls(self, c)
        for name, c in spec.containers.items():
            owner = self._containers[name]
            for r in c.get("roles", ()):
                cls = spec.ManyRole if r["many"] else spec.OneRole
                role = owner._roles[r["role"]] = cls(
                    owner, self._containers[r["partner"]["container"]], r)
                # `container.role_name` as a plain attribute where nothing of the container
                # has that name: reached without __getattr__ (which only runs after a failed
                # lookup, an AttributeError raised and caught per use)
                n = r["role"]
                if _attribute_name(n, type(owner)) and not n.startswith("_") \
                        and n not in vars(owner):
                    vars(owner)[n] = role
        for c in self._containers.values():
            for r in c._roles.values():
                r.partner_role = r.partner._roles[r._meta["partner"]["role"]]
                if spec.fast is not None:     # its calls cross into C once (pyfast)
                    spec.fast.bind_role(r, c.name, r.name, c._fc, r.partner._fc, spec.Links,
                                        ManyRole if r.many else OneRole)

    def _database(self) -> "Database":
        return self

    def _guard(self) -> None:
        """Before a call that may write, with the lock held: the journal's SIGSEGV handler
        checked (and put back on top if the host replaced it); see _serialised."""
        guard = self._spec_.c_guard
        h = self._handle_
        if guard is not None and h is not None:
            rc = guard(h)
            if rc != P2_OK:
                raise self._spec_.error(h, rc)

    # -- life cycle ------------------------------------------------------------------
    @property
    def closed(self) -> bool:
        return self._handle_ is None

    def _handle(self):
        h = self._handle_
        if h is None:
            raise ClosedError(f"database {self._spec_.prefix} is closed")
        return h

    def _in_use(self, what: str) -> "BusyError":
        return BusyError(f"database {self._spec_.prefix} is in use by a call in progress: "
                         f"{what}() from inside a call on it (user code run while the call "
                         f"converts its arguments: an __index__, encode, __eq__, ...) is "
                         f"refused; {what} after the call returns")

    def close(self) -> None:
        """Close the files cleanly and free the handle. Closing twice does nothing.
        Refused (BusyError) from inside a call on the database (user code run while it
        converts its arguments): the call still uses the handle."""
        if self._handle_ is None:
            return
        lock = self._lock
        if lock._is_owned():      # this thread is inside a call on the database
            raise self._in_use("close")
        with lock:
            h = self._handle_
            guard = self._spec_.c_guard
            if guard is not None and h is not None:
                guard(h)          # the journal's handler on top (closing writes)
            self._close(h)

    def _close(self, h) -> None:
        if h is None:
            return
        self._handle_ = None
        self._finalizer.detach()
        detach = getattr(self._lock, "_detach", None)
        if detach is not None:
            detach()            # the C paths see the database closed
        rc = self._spec_.c_close(h)
        if rc != P2_OK:
            raise self._spec_.error(None, rc, f"closing {self._spec_.prefix}")

    def sync(self) -> None:
        """Flush persistent containers to their files."""
        h = self._handle()
        rc = self._spec_.c_sync(h)
        if rc != P2_OK:
            raise self._spec_.error(h, rc)

    def verify(self) -> list:
        """The integrity checker: every structure walked, every reference checked to be in
        bounds and live, every index checked against its storage. The problems found, one
        line each (the first 100); [] when all is consistent."""
        h = self._handle()
        spec = self._spec_
        if spec.c_verify is None:
            raise TypeError(f"{spec.prefix} was built without the integrity checker")
        size = 1 << 16
        buf = spec.ffi.new("char[]", size)
        n = spec.ffi.new("uint64_t *")
        rc = spec.c_verify(h, buf, size, n)
        if rc == P2_OK:
            return []
        if rc == P2_EFORMAT:
            return spec.ffi.string(buf).decode("utf-8", "replace").splitlines()
        raise spec.error(h, rc)

    def __enter__(self):
        self._handle()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        """Leaving `with spec.open(...) as db:` closes the database; over a journal it
        first commits what is pending when the block ends normally and drops it (an abort)
        when it ends by an exception (as sqlite3's `with connection:`). A commit that
        fails raises its error, the database closed and the changes dropped."""
        if self._handle_ is not None and exc_type is None \
                and self._spec_.c_commit is not None:
            try:
                self.commit()
            except BaseException:
                self._close_quietly()
                raise
        self.close()

    def _close_quietly(self) -> None:
        try:
            self.close()
        except P2Error:
            pass

    # -- contents ----------------------------------------------------------------------
    @property
    def containers(self) -> dict:
        return dict(self._containers)

    @property
    def relationships(self) -> dict:
        """Relationship name -> (its two Roles, in declaration order)."""
        out = {}
        for r in self._spec_.meta.get("relationships", ()):
            out[r["name"]] = tuple(self._containers[d["container"]]._roles[d["role"]]
                                   for d in r["roles"])
        return out

    def container(self, name: str) -> "Container":
        try:
            return self._containers[name]
        except KeyError:
            raise AttributeError(f"spec {self._spec_.prefix} has no container '{name}' "
                                 f"(containers: {', '.join(self._containers)})") from None

    def cursor(self, name: str, /, *args, **params) -> "Cursor":
        """Open cursor `name` with its parameters (by position in order of first use in
        its predicate, or by name)."""
        spec = self._spec_
        k = spec.cursors.get(name)
        if k is None:
            raise AttributeError(f"spec {spec.prefix} has no cursor '{name}' (cursors: "
                                 f"{', '.join(spec.cursors) or 'none'})")
        c = self._containers[k["container"]]
        pdescs = k["params"]
        pnames = [q["name"] for q in pdescs]
        if len(args) > len(pnames):
            raise TypeError(f"cursor {name} takes {len(pnames)} parameter(s) "
                            f"({', '.join(pnames) or 'none'}), got {len(args)} positional")
        values = dict(zip(pnames, args))
        for n, v in params.items():
            if n not in pnames:
                raise TypeError(f"cursor {name} has no parameter '{n}' (parameters: "
                                f"{', '.join(pnames) or 'none'})")
            if n in values:
                raise TypeError(f"cursor {name}: parameter '{n}' given twice")
            values[n] = v
        missing = [n for n in pnames if n not in values]
        if missing:
            raise TypeError(f"cursor {name}: missing parameter(s) {', '.join(missing)} "
                            f"(parameters: {', '.join(pnames)})")
        cargs = [f.convert(values[f.name]) for f in spec.cursor_params[name]]
        return spec.Cursor(c, k["c"]["prefix"], k["c"]["cursor"], cargs, name)

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return (f"<{self._spec_.prefix} database {state}, dir={self.dir!r}, containers: "
                f"{', '.join(self._containers)}>")

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._containers)
                      | set(self._spec_.cursors))


class _Transaction:
    """`with db.transaction():` (see Journalled.transaction)."""
    __slots__ = ("_db",)

    def __init__(self, db: "Journalled"):
        self._db = db

    def __enter__(self) -> "Database":
        db = self._db
        if db._txn_open:
            raise RuntimeError(f"database {db._spec_.prefix}: a transaction is already open "
                               f"(transactions do not nest)")
        db.begin()
        db._txn_open = True
        return db

    def __exit__(self, exc_type, exc, tb) -> None:
        db = self._db
        db._txn_open = False
        if exc_type is None:
            try:
                db.commit()
            except BaseException:
                if db._handle_ is not None:
                    db.abort()        # nothing of the block stays half-done
                raise
        elif db._handle_ is not None:
            db.abort()


class Journalled(Database):
    """A database with journalled files: transactions. Every change since the last
    commit or abort is one transaction; a crash keeps exactly what was committed."""
    __slots__ = ("_txn_open",)

    def __init__(self, spec: _Spec, handle, dir=None):
        self._txn_open = False
        super().__init__(spec, handle, dir)

    def _txn(self, fn) -> None:
        h = self._handle()
        rc = fn(h)
        if rc != P2_OK:
            raise self._spec_.error(h, rc)

    def transaction(self) -> "_Transaction":
        """`with db.transaction():` begins a transaction (P2Error if changes are pending:
        commit or abort them first; RuntimeError inside another `with db.transaction()`),
        commits it when the block ends normally and aborts it when the block raises (the
        exception goes on). A commit that fails aborts, then raises its error."""
        return _Transaction(self)

    def begin(self) -> None:
        """Start a transaction (every change since the last commit or abort is one)."""
        self._txn(self._spec_.c_begin)

    def commit(self) -> None:
        """Make the current transaction durable."""
        self._txn(self._spec_.c_commit)

    def abort(self) -> None:
        """Undo every change since the last commit or abort. Open cursors and role walks
        end (their next step raises RuntimeError, as after an insert). Refused
        (BusyError) from inside a call on the database, as close() is."""
        lock = self._lock
        if self._handle_ is not None and lock._is_owned():
            raise self._in_use("abort")
        with lock:
            try:
                self._txn(self._spec_.c_abort)
            finally:
                for c in self._containers.values():
                    c._changed()      # every walk over them ends at its next step



# ---------------------------------------------------------------------------
# Containers
# ---------------------------------------------------------------------------


def _merged_fields(op: str, _from, fields: dict) -> dict:
    """insert's and upsert's fields: those of the optional record or mapping, then the
    keyword arguments over them."""
    if _from is None:
        return fields
    if isinstance(_from, Record):
        base = _from._asdict()
    elif isinstance(_from, Mapping):
        base = dict(_from)
    else:
        raise TypeError(f"{op}() takes a Record or a mapping, got {type(_from).__name__}")
    return {**base, **fields}


class Container:
    """One container of an open database. See the module docstring."""

    def __init__(self, db: Database, meta: dict):
        spec = db._spec_
        self._fc = None     # the C paths (_install_c_paths), which then hold the counters
        self._db = db
        self._spec = spec
        self._ffi = ffi = spec.ffi
        lib = spec.lib
        self.name: str = meta["name"]
        self.keys: tuple = tuple(meta["keys"])
        self.persistent: bool = meta["persistent"]
        self.file: Optional[str] = meta["file"]
        self.equation: str = meta["equation"]
        self.record: type = spec.records[meta["record"]]
        self._fields = {f.name: f for f in spec.fields[meta["record"]]}
        self._key_index = [list(self._fields).index(k) for k in self.keys]
        # insert: the spec's defaults (`qty: u32 = 0`), and the fields it needs (no default)
        self._defaults = {f.name: f.default for f in self._fields.values()
                          if f.default is not _MISSING}
        self._required = tuple(n for n in self._fields if n not in self._defaults)
        self._rtype = f"{spec.prefix}_{meta['record']} *"
        cp = meta["c"]["prefix"]
        self._c = {op: getattr(lib, f"{cp}_{op}")
                   for op in ("insert", "get", "update", "delete", "count", "reserve")}
        self._at = getattr(lib, f"{cp}_at")
        self._copy_c = getattr(lib, f"p2py__{cp}_copy", None)
        self._updkey = {k: getattr(lib, f"p2py__{cp}_updkey_{k}", None) for k in self.keys}
        self._delkey = {k: getattr(lib, f"p2py__{cp}_delkey_{k}", None) for k in self.keys}
        self._out = ffi.new(self._rtype)          # update_by's result, reused
        self._out_buf = ffi.buffer(self._out)
        self._masks = {}                          # field names -> byte mask of the record
        self._insert_many_c = getattr(lib, f"{cp}_insert_many")
        self._check_chars_c = getattr(lib, f"p2py__{cp}_check_chars", None)
        self._find = {k: getattr(lib, f"{cp}_find_{k}") for k in self.keys}
        # composite keys, `key = (a, b)`: name -> its fields; find(a=..., b=...) uses them
        self.composite_keys: dict = {n: tuple(fs)
                                     for n, fs in meta.get("composite_keys", {}).items()}
        self._cfind = {n: getattr(lib, f"{cp}_find_{n}") for n in self.composite_keys}
        # the key of `container[key]`, `key in container` and get(key): that of a unique
        # index, else the equation's first (a field's name, or a composite key's); None
        # without keys
        self.key: Optional[str] = meta.get("key")
        self._upsert = getattr(lib, f"{cp}_upsert") if meta.get("upsert") else None
        if meta["purges"]:
            self._c["purge"] = getattr(lib, f"{cp}_purge")
        self._all = (meta["c"]["all"], meta["c"]["all_cursor"])
        self._version = 0   # bumped by every change not made through a cursor
        self._links = 0     # bumped by every change, and every add / remove / set of a role
        self._noref = ffi.cast("uint64_t", -1)
        self._texts = {n: (getattr(lib, d["get"]), getattr(lib, d["set"]))
                       for n, d in meta["c"].get("text", {}).items()}
        self._roles = {}    # role name -> Role, filled by Database
        # each ref field and what it holds for no element (NOREF, or NOREF32 over 32-bit links)
        self._refnone = {f.name: f.noref for f in self._fields.values() if f.target is not None}
        layout = spec.layouts[meta["record"]]
        self._unpack = layout.struct.unpack
        self._iter_unpack = layout.struct.iter_unpack
        self._rsize = layout.struct.size
        self._decode = layout.decode
        self._textpos = layout.texts
        self._rows_of = self._one_of = None
        if layout.body is not None:     # no text field: generated code, no calls per field
            ns = {"new": object.__new__, "sv": _set_values, "sr": _set_ref, "so": _set_origin,
                  "R": self.record, "NAME": self.name, "NOREF": NOREF}
            exec("def rows(ts, refs):\n"
                 "    out = []\n"
                 "    app = out.append\n"
                 "    for t, ref in zip(ts, refs):\n"
                 "        o = new(R)\n"
                 f"        sv(o, ({layout.body}))\n"
                 "        sr(o, ref)\n"
                 "        so(o, NAME)\n"
                 "        app(o)\n"
                 "    return out\n"
                 "def one(t, ref):\n"
                 "    o = new(R)\n"
                 f"    sv(o, ({layout.body}))\n"
                 "    sr(o, ref)\n"
                 "    so(o, NAME)\n"
                 "    return o\n", ns)
            self._rows_of, self._one_of = ns["rows"], ns["one"]
        # find's output, reused: every call into C holds the database's lock
        self._scratch = ffi.new(self._rtype)
        self._scratch_buf = ffi.buffer(self._scratch)
        self._scratch_ref = ffi.new("uint64_t *")
        # the extension's one-crossing helpers (pybind.helpers_c); None in one built before
        self._findrec = {k: getattr(lib, f"p2py__{cp}_findrec_{k}", None) for k in self.keys}
        self._fill_fast = self._zero = None
        if layout.body is not None:
            self._fill_fast, self._zero = _packer(
                layout, self._scratch_buf,
                {n: self._fields[n].convert(v) for n, v in self._defaults.items()})
        self._rows_c = None
        if not _install_c_paths(self):
            _install_fast_paths(self)

    # -- the change counters: C fields of the C paths when there are some (bumped there
    #    without a dict lookup), else in the instance's __dict__ under the same names
    #    (what a walk's _walk_dict holds: the C paths object, or that dict) ----------------
    @property
    def _version(self) -> int:
        """Bumped by every change not made through a cursor."""
        fc = self._fc
        return self.__dict__["_version"] if fc is None else fc.version

    @_version.setter
    def _version(self, v: int) -> None:
        fc = self._fc
        if fc is None:
            self.__dict__["_version"] = v
        else:
            fc.version = v

    @property
    def _links(self) -> int:
        """Bumped by every change, and every add / remove / set of a role."""
        fc = self._fc
        return self.__dict__["_links"] if fc is None else fc.links

    @_links.setter
    def _links(self, v: int) -> None:
        fc = self._fc
        if fc is None:
            self.__dict__["_links"] = v
        else:
            fc.links = v

    def _counters(self):
        """Where the counters live, for a walk's _walk_dict."""
        return self.__dict__ if self._fc is None else self._fc

    # -- helpers ---------------------------------------------------------------------
    def _database(self) -> Database:
        return self._db

    def _fail(self, rc: int, what: str = ""):
        return self._spec.error(self._db._handle_, rc, what)

    def _record(self, crec, ref: int, texts: bool = True):
        """A Record of the C record `crec` of element `ref`; texts are read from the
        container (None when `texts` is false: only for comparing keys)."""
        t = self._unpack(self._ffi.buffer(crec, self._rsize))
        if self._one_of is not None:
            return self._one_of(t, int(ref))
        return self._make(self._decode(t), int(ref), texts)

    def _records(self, buf, refs) -> list:
        """Records of the C records in buf (packed, one per reference in refs)."""
        if self._rows_c is not None:
            return self._rows_c(buf, refs, len(refs))
        ts = self._iter_unpack(buf)
        if self._rows_of is not None:
            return self._rows_of(ts, refs)
        make, decode = self._make, self._decode
        return [make(decode(t), r) for t, r in zip(ts, refs)]

    def _make(self, values: tuple, ref: int, texts: bool = True):
        """A Record of decoded values (texts None) of element `ref`, its texts read."""
        if texts and self._textpos:
            h = self._db._handle()
            values = list(values)
            for i, name in self._textpos:
                values[i] = self._text(h, ref, name).decode("utf-8", "surrogateescape")
            values = tuple(values)
        return _new_record(self.record, values, ref, self.name)

    def _text(self, h, ref: int, name: str) -> bytes:
        ffi = self._ffi
        data = ffi.new("const char **")
        n = ffi.new("uint64_t *")
        rc = self._texts[name][0](h, ref, data, n)
        if rc != P2_OK:
            raise self._fail(rc)
        return ffi.buffer(data[0], n[0])[:] if n[0] else b""

    def _set_texts(self, h, ref: int, texts: dict) -> None:
        for n, data in texts.items():
            rc = self._texts[n][1](h, ref, self._ffi.from_buffer(data), len(data))
            if rc != P2_OK:
                raise self._fail(rc, f"setting text {n}")

    def _fill(self, crec, fields: dict) -> dict:
        """Write the fields into the C record; returns the text fields' values (bytes),
        which are written after the element by _set_texts."""
        return self._write(crec, self._convert(fields))

    def _convert(self, fields: dict) -> dict:
        """The fields' values as C takes them, every one checked (TypeError, RangeError):
        where user code (an __index__, an encode) runs, before anything is located."""
        known = self._fields
        for n in fields:
            if n not in known:
                raise TypeError(f"{self.record._name} has no field '{n}' (fields: "
                                f"{', '.join(known)})")
        return {n: known[n].convert(v) for n, v in fields.items()}

    def _write(self, crec, conv: dict) -> dict:
        """Write converted fields into the C record; returns the text fields' values."""
        known = self._fields
        ffi = self._ffi
        texts = {}
        for n, v in conv.items():
            f = known[n]
            if f.kind == "char":
                ffi.buffer(getattr(crec, n))[:] = v.ljust(f.length, b"\0")
            elif f.kind == "text":
                texts[n] = v
            else:
                setattr(crec, n, v)
        return texts

    def _ref(self, rec_or_ref) -> int:
        ref = _int_ref(rec_or_ref)
        if isinstance(rec_or_ref, Record):
            if type(rec_or_ref) is not self.record or rec_or_ref._origin != self.name:
                raise TypeError(f"container {self.name}: that is a {rec_or_ref._name} record "
                                f"of container {rec_or_ref._origin}")
        if ref is None or not 0 <= ref < (1 << 64) - 1:
            raise NotFoundError(f"container {self.name}: no element with reference {ref}")
        return ref

    def _changed(self) -> None:
        self._version += 1
        self._links += 1

    def _scratch_zero(self):
        """The C record insert starts from (the defaults; else 0, "", no element), in
        the scratch buffer (b"" for a record with text fields: no C paths)."""
        if self._fill_fast is None:
            return b""
        self._fill_fast(self._zero, {})
        return self._scratch_buf

    def _check_required(self, op: str, fields, row: str = "") -> None:
        """TypeError naming the fields without a default in the spec that `fields` lacks."""
        missing = [n for n in self._required if n not in fields]
        if missing:
            raise TypeError(f"{op}(): {row}{self.record._name} needs field(s) "
                            f"{', '.join(missing)} (they have no default in the spec; "
                            f"give them, or declare one: `{missing[0]}: ... = value;`)")

    # -- the API -----------------------------------------------------------------------
    def insert(self, _from=None, /, **fields) -> Record:
        """Insert an element and return it (a Record with its reference). Fields come from
        the optional record or mapping, then from keyword arguments; others are 0 / ""."""
        with self._db._lock:   # one call into C at a time (see _serialised)
            self._db._guard()
            fields = _merged_fields("insert", _from, fields)
            self._check_required("insert", fields)
            h = self._db._handle()
            if self._fill_fast is not None:
                try:
                    self._fill_fast(self._zero, fields)
                except Exception:
                    pass            # the checked path below says what is wrong
                else:
                    ref = self._scratch_ref
                    rc = self._c["insert"](h, self._scratch, ref)
                    if rc != P2_OK:
                        raise self._fail(rc)
                    self._version += 1     # _changed(), inline
                    self._links += 1
                    return self._one_of(self._unpack(self._scratch_buf), ref[0])
            crec = self._ffi.new(self._rtype)
            for n, none in self._refnone.items():
                setattr(crec, n, none)     # not given: no element
            texts = self._fill(crec, {**self._defaults, **fields})
            out = self._ffi.new("uint64_t *")
            rc = self._c["insert"](h, crec, out)
            if rc != P2_OK:
                raise self._fail(rc)
            self._changed()
            ref = int(out[0])
            if texts:
                try:
                    self._set_texts(h, ref, texts)
                except P2Error:
                    self._c["delete"](h, ref)   # nothing half-made stays
                    raise
            return self._record(crec, ref)

    def _find_composite(self, h, name: str, kw: dict) -> Optional[Record]:
        """find(a=..., b=...) on the composite key `name` (a, b): one argument per field."""
        vals = []
        for n in self.composite_keys[name]:
            f, value = self._fields[n], kw[n]
            cval = f.convert(value) if f.kind != "char" else _find_str(f, value)
            if cval is None:
                return None
            vals.append(cval)
        out = self._ffi.new("uint64_t *")
        rc = self._cfind[name](h, *vals, out)
        if rc == P2_NOTFOUND:
            return None
        if rc != P2_OK:
            raise self._fail(rc)
        return self._record(self._read(h, out[0]), out[0])

    def _read(self, h, ref: int):
        crec = self._ffi.new(self._rtype)
        rc = self._c["get"](h, ref, crec)
        if rc != P2_OK:
            raise self._fail(rc)
        return crec

    def _locate_t(self, h, rec_or_ref):
        """(ref, the element's values as the record's struct unpacks them): _locate's
        checks, reading the element in place (`<c>_at`: no copy made in C)."""
        ref = self._ref(rec_or_ref)
        p = self._at(h, ref)
        if p == self._ffi.NULL:      # no such element: _locate raises the C error
            return ref, self._unpack(self._ffi.buffer(self._locate(h, rec_or_ref)[1],
                                                      self._rsize))
        t = self._unpack(self._ffi.buffer(p, self._rsize))
        if isinstance(rec_or_ref, Record) and self.keys:
            self._check_keys(rec_or_ref, ref, self._decode(t))
        return ref, t

    def _check_keys(self, rec, ref: int, now: tuple) -> None:
        for k, i in zip(self.keys, self._key_index):
            was, cur = rec._values[i], now[i]
            if was != cur:
                raise NotFoundError(
                    f"container {self.name}: the element at reference {ref} has "
                    f"{k} == {cur!r}, not {was!r}: the record is stale (the element was "
                    f"deleted, changed its key or moved); find it again")

    def _locate(self, h, rec_or_ref):
        """(ref, C copy of the element). A Record names its element by reference *and*
        key fields: if the element at its reference has other keys now (it was deleted,
        its key changed, or, over qsort storage, elements shifted), NotFoundError."""
        ref = self._ref(rec_or_ref)
        crec = self._read(h, ref)
        if isinstance(rec_or_ref, Record) and self.keys:
            self._check_keys(rec_or_ref, ref,
                             self._decode(self._unpack(self._ffi.buffer(crec, self._rsize))))
        return ref, crec

    def at(self, rec_or_ref) -> Record:
        """The element `ref` by its reference (an int, or a Record: a fresh copy);
        NotFoundError if there is none."""
        with self._db._lock:   # one call into C at a time (see _serialised)
            h = self._db._handle()
            ref, crec = self._locate(h, rec_or_ref)
            return self._record(crec, ref)

    def _by_key(self, key):
        """find() by the container's key (`self.key`): a value, or a tuple of a composite
        key's values in its order."""
        name = self.key
        if name is None:
            raise TypeError(f"container {self.name} has no key ({self.equation}): "
                            f"[], in and get() look elements up by key; use at(ref) for a "
                            f"reference, or iterate")
        fs = self.composite_keys.get(name)
        if fs is None:
            return self.find(key)       # find(v) is by the container's key (no dict made)
        if not isinstance(key, tuple) or len(key) != len(fs):
            raise TypeError(f"container {self.name}'s key is ({', '.join(fs)}): give a tuple "
                            f"of {len(fs)} values, got {key!r:.80}")
        return self.find(**dict(zip(fs, key)))

    def __getitem__(self, key) -> Record:
        """The element whose key (`self.key`) is `key`; NotFoundError (a KeyError) if
        there is none."""
        return self._getitem(key)     # the C paths' when they take it (an instance's)

    def _getitem(self, key) -> Record:
        rec = self._by_key(key)
        if rec is None:
            raise NotFoundError(f"container {self.name}: no element with {self.key} == "
                                f"{key!r:.80}")
        return rec

    def get(self, key, default=None):
        """The element whose key (`self.key`) is `key`, else `default` (as dict.get)."""
        rec = self._by_key(key)
        return default if rec is None else rec

    def __contains__(self, key) -> bool:
        """Is there an element whose key (`self.key`) is `key`?"""
        return self._contains(key)    # the C paths' when they take it (an instance's)

    def _contains(self, key) -> bool:
        return self._by_key(key) is not None

    def __delitem__(self, key) -> None:
        """Delete the element whose key (`self.key`) is `key`; NotFoundError if none."""
        self.delete(self[key])

    def _keys_spelled(self) -> str:
        """Every key of the container, as find() takes them: `id, (symbol, price)`."""
        return ", ".join(self.keys + tuple(f"({', '.join(fs)})"
                                           for fs in self.composite_keys.values()))

    def find(self, _key=_MISSING, /, **kw) -> Optional[Record]:
        """The element whose key equals the value (an element, if several), or None:
        `find(value)` by the container's key (`self.key`; a tuple for a composite one),
        or by any of its keys: `find(field=value)`, `find(a=..., b=...)` (every field of
        a composite key)."""
        with self._db._lock:   # one call into C at a time (see _serialised)
            h = self._db._handle()
            keys = self.keys
            if not keys and not self.composite_keys:
                raise TypeError(f"container {self.name} has no key fields ({self.equation}): "
                                f"iterate over it or use a cursor")
            if _key is not _MISSING:
                if kw:
                    raise TypeError("find() takes a value or field=value, not both")
                fs = self.composite_keys.get(self.key)
                if fs is None:
                    field, value = self.key, _key
                elif isinstance(_key, tuple) and len(_key) == len(fs):
                    return self._find_composite(h, self.key, dict(zip(fs, _key)))
                else:
                    raise TypeError(f"container {self.name}'s key is ({', '.join(fs)}): "
                                    f"find() takes a tuple of {len(fs)} values, or "
                                    f"field=value of one of its keys: {self._keys_spelled()}")
            else:
                if len(kw) == 1 and next(iter(kw)) in keys:
                    (field, value), = kw.items()
                else:
                    # every field of a composite key, by name
                    name = next((n for n, fs in self.composite_keys.items()
                                 if set(fs) == set(kw)), None)
                    if name is not None:
                        return self._find_composite(h, name, kw)
                    odd = [n for n in kw if n not in self._fields]
                    what = (f"'{odd[0]}' is not a field of {self.record._name}" if odd else
                            ", ".join(f"'{n}'" for n in kw)
                            + (" is not a key" if len(kw) == 1 else " are not a key")
                            if kw else "no key given")
                    raise TypeError(f"find(): {what}; container {self.name} is found by "
                                    f"one of its keys: {self._keys_spelled()} "
                                    f"(find(field=value), every field of a composite one)")
            f = self._fields[field]
            if value.__class__ is int and f.kind == "int" and f.lo <= value <= f.hi:
                cval = value
            else:
                cval = f.convert(value) if f.kind != "char" else _find_str(f, value)
            if cval is None:
                return None
            findrec = self._findrec[field]
            if findrec is not None:      # find and copy out, one crossing
                ref = self._scratch_ref
                rc = findrec(h, cval, self._scratch, ref)
                if rc == P2_NOTFOUND:
                    return None
                if rc != P2_OK:
                    raise self._fail(rc)
                if self._one_of is not None:
                    return self._one_of(self._unpack(self._scratch_buf), ref[0])
                return self._make(self._decode(self._unpack(self._scratch_buf)), ref[0])
            out = self._ffi.new("uint64_t *")
            rc = self._find[field](h, cval, out)
            if rc == P2_NOTFOUND:
                return None
            if rc != P2_OK:
                raise self._fail(rc)
            return self._record(self._read(h, out[0]), out[0])

    def update(self, rec_or_ref, /, **fields) -> Record:
        """Change fields of the element (read, modify, write back, keeping every index
        right); returns the updated Record, whose reference changes if the element moved."""
        with self._db._lock:   # one call into C at a time (see _serialised)
            db = self._db
            if db._spec_.c_guard is not None:
                db._guard()
            h = db._handle_
            if h is None:
                db._handle()     # raises ClosedError
            if self._fill_fast is not None:
                ref, t = self._locate_t(h, rec_or_ref)
                was = self._version
                try:
                    self._fill_fast(t, fields)
                except Exception:
                    was = None      # the checked path below says what is wrong
                # (and takes it when user code run by a value changed the container)
                if was == self._version:
                    refp = self._scratch_ref
                    refp[0] = ref
                    rc = self._c["update"](h, refp, self._scratch)
                    if rc != P2_OK:
                        raise self._fail(rc)
                    self._version += 1     # _changed(), inline
                    self._links += 1
                    return self._one_of(self._unpack(self._scratch_buf), refp[0])
            # every value converted first (user code runs there), then the element located
            conv = self._convert(fields)
            ref, crec = self._locate(h, rec_or_ref)
            old = self._ffi.new(self._rtype)
            old[0] = crec[0]
            texts = self._write(crec, conv)
            old_texts = {n: self._text(h, ref, n) for n in texts}
            refp = self._ffi.new("uint64_t *", ref)
            rc = self._c["update"](h, refp, crec)
            if rc != P2_OK:
                raise self._fail(rc)
            self._changed()
            if texts:
                try:
                    self._set_texts(h, refp[0], texts)
                except P2Error:
                    # best effort: the element gets its old fields and texts back
                    for n, data in old_texts.items():
                        self._texts[n][1](h, refp[0], self._ffi.from_buffer(data), len(data))
                    self._c["update"](h, refp, old)
                    raise
            return self._record(crec, refp[0])

    def delete(self, rec_or_ref) -> None:
        """Delete the element; NotFoundError if there is none."""
        with self._db._lock:   # one call into C at a time (see _serialised)
            db = self._db
            if db._spec_.c_guard is not None:
                db._guard()
            h = db._handle_
            if h is None:
                db._handle()     # raises ClosedError
            ref = self._locate_t(h, rec_or_ref)[0]
            rc = self._c["delete"](h, ref)
            if rc != P2_OK:
                raise self._fail(rc)
            self._changed()

    def _one_key(self, value):
        """(key field, the value as C takes it, or None when no element can have it)."""
        keys = self.keys
        if len(keys) != 1:
            raise TypeError(f"container {self.name} has {'no' if not keys else 'several'} "
                            f"key fields: update_by / delete_by take the value of its only "
                            f"key; use find() and update() / delete()")
        f = self._fields[keys[0]]
        if value.__class__ is int and f.kind == "int" and f.lo <= value <= f.hi:
            return keys[0], value
        return keys[0], (f.convert(value) if f.kind != "char" else _find_str(f, value))

    def _mask(self, names) -> Any:
        key = frozenset(names)
        m = self._masks.get(key)
        if m is None:
            ffi, ctype = self._ffi, self._rtype[:-2]
            members = dict(ffi.typeof(ctype).fields)
            mask = bytearray(ffi.sizeof(ctype))
            for n in key:
                off = ffi.offsetof(ctype, n)
                mask[off:off + ffi.sizeof(members[n].type)] = b"\1" * ffi.sizeof(members[n].type)
            m = self._masks[key] = ffi.new("unsigned char[]", bytes(mask))
        return m

    def update_by(self, _key, /, **fields) -> Optional[Record]:
        """Change fields of the element whose (only) key field equals the value, like
        update(); returns the updated Record, or None if there is no such element. One
        call into C (find, read, write the fields given, update) for a record without text
        fields."""
        with self._db._lock:   # one call into C at a time (see _serialised)
            db = self._db
            if db._spec_.c_guard is not None:
                db._guard()
            h = db._handle_
            if h is None:
                db._handle()     # raises ClosedError
            field, cval = self._one_key(_key)
            if cval is None:
                return None
            upd = self._updkey.get(field)
            if upd is not None and self._fill_fast is not None:
                try:
                    # the mask first: the fill writes the scratch record last (user code
                    # run by a name's hash or a value may insert, which uses it too)
                    mask = self._mask(fields)
                    self._fill_fast(self._zero, fields)
                except Exception:
                    upd = None       # the path below raises the precise error
                if upd is not None:
                    ref = self._scratch_ref
                    rc = upd(h, cval, self._scratch, mask, self._out, ref)
                    if rc == P2_NOTFOUND:
                        return None
                    if rc != P2_OK:
                        raise self._fail(rc)
                    self._version += 1     # _changed(), inline
                    self._links += 1
                    return self._one_of(self._unpack(self._out_buf), ref[0])
            rec = self.find(_key)
            return None if rec is None else self.update(rec, **fields)

    def delete_by(self, _key, /) -> bool:
        """Delete the element whose (only) key field equals the value (one of them, if
        several); False if there is none. One call into C."""
        with self._db._lock:   # one call into C at a time (see _serialised)
            db = self._db
            if db._spec_.c_guard is not None:
                db._guard()
            h = db._handle_
            if h is None:
                db._handle()     # raises ClosedError
            field, cval = self._one_key(_key)
            if cval is None:
                return False
            dele = self._delkey.get(field)
            if dele is None:
                rec = self.find(_key)
                if rec is None:
                    return False
                self.delete(rec)
                return True
            rc = dele(h, cval, self._scratch_ref)
            if rc == P2_NOTFOUND:
                return False
            if rc != P2_OK:
                raise self._fail(rc)
            self._changed()
            return True

    # -- numpy ---------------------------------------------------------------------------
    @property
    def dtype(self):
        """The numpy structured dtype of the C record (its field offsets and size): ints
        and floats as their C types, char[N] as bytes 'S<N>' (NUL-padded), ref fields as
        uint64 (2**64-1: no element). TypeError for a record with text fields."""
        np = _numpy()
        if self._textpos:
            raise TypeError(f"container {self.name}: to_numpy / insert_many copy fixed-size "
                            f"records; text field(s) {', '.join(n for _, n in self._textpos)} "
                            f"live outside the record (iterate, or insert one by one)")
        fs = list(self._fields.values())
        formats = []
        for f in fs:
            if f.target is not None:
                formats.append("=u4" if f.noref == NOREF32 else "=u8")
            elif f.kind == "char":
                formats.append(f"S{f.length}")
            else:
                formats.append(_NUMPY_CODES[f.tname])
        ffi, ctype = self._ffi, self._rtype[:-2]
        return np.dtype({"names": [f.name for f in fs], "formats": formats,
                         "offsets": [ffi.offsetof(ctype, f.name) for f in fs],
                         "itemsize": ffi.sizeof(ctype)})

    def to_numpy(self):
        """Every element, in the order iteration gives them, as a numpy structured array
        of `dtype` (a copy, made in one call into C: it stays valid after the database
        changes or closes)."""
        np = _numpy()
        dt = self.dtype
        with self._db._lock:
            h = self._db._handle()
            n = int(self._c["count"](h))
            out = np.zeros(n, dtype=dt)
            got = self._ffi.new("uint64_t *")
            if n:
                rc = self._copy_c(h, self._ffi.cast(self._rtype, self._ffi.from_buffer(out)),
                                  n, got)
                if rc != P2_OK:
                    raise self._fail(rc)
        return out[:int(got[0])] if n else out

    def insert_many(self, rows) -> int:
        """Insert many elements in one call into C; returns how many. `rows`: a numpy
        structured array (fields by name; fields it lacks are 0 / b"" / no element) or an
        iterable of mappings or Records. Every value is checked before anything is
        inserted: a bad one raises TypeError / RangeError naming its row, and nothing
        is inserted. An insert that fails in C (a duplicate key, no memory) stops there:
        the rows before it stay inserted, the error (P2Error) has `.index`, the failing
        row's."""
        if self._textpos:
            self.dtype    # raises TypeError: text fields
        with self._db._lock:      # held while packing too: _pack_rows uses the scratch record
            buf, n = self._pack_rows(rows)
            db = self._db
            if db._spec_.c_guard is not None:
                db._guard()
            h = db._handle_
            if h is None:
                db._handle()     # raises ClosedError
            if n == 0:
                return 0
            recs = self._ffi.cast(self._rtype, self._ffi.from_buffer(buf))
            if self._check_chars_c is not None:
                row, field = self._ffi.new("uint64_t *"), self._ffi.new("int *")
                if self._check_chars_c(recs, n, row, field) != P2_OK:
                    f = [f for f in self._fields.values() if f.kind == "char"][field[0]]
                    raise RangeError(f"insert_many: row {row[0]}: {f.what} is {f.spelled}: "
                                     f"it contains a NUL byte")
            # one call: the C function reserves room for all rows first (the loop then
            # never regrows or rehashes) and fetches what each insert reads ahead of it
            done = self._ffi.new("uint64_t *")
            rc = self._insert_many_c(h, recs, n, done)
            k = int(done[0])
            if k:
                self._changed()
            if rc != P2_OK:
                err = self._fail(rc)
                err.index = k
                err.message = (f"insert_many: row {k}: {err.message} (rows 0..{k - 1} were "
                               f"inserted)" if k else f"insert_many: row 0: {err.message}")
                err.args = (err.message,)
                raise err
            return k

    def _pack_rows(self, rows):
        """(a buffer of C records, their number) for insert_many; checks every value."""
        if hasattr(rows, "dtype") and getattr(rows.dtype, "names", None):
            return self._pack_numpy(rows)
        size = self._rsize
        out = bytearray()
        fill, zero, scratch = self._fill_fast, self._zero, self._scratch_buf
        for i, row in enumerate(rows):
            if isinstance(row, Record):
                row = row._asdict()
            elif not isinstance(row, Mapping):
                raise TypeError(f"insert_many: row {i}: expected a mapping or a Record, got "
                                f"{type(row).__name__}")
            self._check_required("insert_many", row, f"row {i}: ")
            try:
                fill(zero, row)
            except Exception:
                crec = self._ffi.new(self._rtype)
                for n, none in self._refnone.items():
                    setattr(crec, n, none)
                try:
                    self._fill(crec, {**self._defaults, **row})
                except Exception as e:
                    e.args = (f"insert_many: row {i}: {e}",) + e.args[1:]
                    if isinstance(e, P2Error):
                        e.message = e.args[0]
                    raise
                self._ffi.memmove(scratch, crec, size)
            out += scratch
        return out, len(out) // size

    def _pack_numpy(self, arr):
        np = _numpy()
        dt = self.dtype
        names = arr.dtype.names
        unknown = [n for n in names if n not in self._fields]
        if unknown:
            raise TypeError(f"insert_many: {self.record._name} has no field(s) "
                            f"{', '.join(unknown)} (fields: {', '.join(self._fields)})")
        arr = np.asarray(arr).reshape(-1)
        if arr.dtype == dt:     # the C layout already: every value fits its C type (and
            # every field is there)
            return np.ascontiguousarray(arr), len(arr)
        self._check_required("insert_many", names)
        out = np.zeros(len(arr), dtype=dt)
        for n, none in self._refnone.items():
            if n not in names:
                out[n] = none
        for n, v in self._defaults.items():
            if n not in names:
                out[n] = self._fields[n].convert(v)
        for n in names:
            f = self._fields[n]
            col = arr[n]
            k = col.dtype.kind
            if f.kind == "char":
                if k == "U":
                    col = np.char.encode(col, "utf-8")
                elif k != "S":
                    raise TypeError(f"insert_many: {f.what} is {f.spelled}: expected a bytes "
                                    f"or str column, got {col.dtype}")
                col = np.ascontiguousarray(col)
                # too long: a byte past the field's length (a NUL inside the value is found
                # in the packed records, in C: _check_chars)
                width = col.dtype.itemsize
                if width > f.length and len(col):
                    raw = col.view(np.uint8).reshape(len(col), width)
                    bad = np.nonzero(raw[:, f.length:].any(axis=1))[0]
                else:
                    bad = ()
                if self._check_chars_c is None and width > 1 and len(col):
                    raw = col.view(np.uint8).reshape(len(col), width)
                    zero = raw == 0     # a NUL byte followed by another: inside the value
                    inner = (zero[:, :-1] & ~zero[:, 1:]).any(axis=1)
                    bad = np.union1d(bad, np.nonzero(inner)[0]).astype(int)
                if len(bad):
                    raise RangeError(f"insert_many: row {bad[0]}: {f.what} is {f.spelled}: "
                                     f"{col[bad[0]]!r} is longer than {f.length} bytes or "
                                     f"contains a NUL byte")
            elif f.kind == "int" or f.target is not None:
                lo, hi = (0, f.noref) if f.target is not None else (f.lo, f.hi)
                if k not in "iub":
                    raise TypeError(f"insert_many: {f.what} is {f.spelled}: expected an "
                                    f"integer column, got {col.dtype}")
                if len(col):
                    bad = np.nonzero((col < lo) | (col > hi))[0] if k == "i" or \
                        np.iinfo(col.dtype).max > hi else []
                    if len(bad):
                        raise RangeError(f"insert_many: row {bad[0]}: {f.what} is "
                                         f"{f.spelled}: {col[bad[0]]} is out of range "
                                         f"({lo} .. {hi})")
            elif f.kind == "float":
                if k not in "iubf":
                    raise TypeError(f"insert_many: {f.what} is {f.spelled}: expected a "
                                    f"numeric column, got {col.dtype}")
                if f.tname == "f32" and len(col) and k == "f":
                    fin = np.isfinite(col)
                    bad = np.nonzero(fin & (np.abs(np.where(fin, col, 0)) >
                                            np.finfo(np.float32).max))[0]
                    if len(bad):
                        raise RangeError(f"insert_many: row {bad[0]}: {f.what} is f32: "
                                         f"{col[bad[0]]} is out of range")
            out[n] = col
        return out, len(out)

    def __len__(self) -> int:
        return int(self._c["count"](self._db._handle()))

    def reserve(self, n: int) -> None:
        """Make room for n elements in all, so that loading them does not regrow."""
        what = "reserve: n must be a non-negative int"
        if isinstance(n, bool):
            raise TypeError(f"{what}, got {n!r}")
        n = _index(n, what)
        if n < 0:
            raise TypeError(f"{what}, got {n!r}")
        rc = self._c["reserve"](self._db._handle(), min(n, (1 << 64) - 1))
        if rc != P2_OK:
            raise self._fail(rc)

    def __iter__(self) -> "Cursor":
        self._db._handle()
        return self._spec.Cursor(self, self._all[0], self._all[1], [], "all")

    # -- relationships -----------------------------------------------------------------
    @property
    def roles(self) -> dict:
        """Role name -> Role: the ends of relationships this container's elements play."""
        return dict(self._roles)

    def role(self, name: str) -> "Role":
        """The role `name` (also an attribute, unless a keyword or clashing name)."""
        try:
            return self._roles[name]
        except KeyError:
            raise AttributeError(f"container {self.name} has no role '{name}' (roles: "
                                 f"{', '.join(self._roles) or 'none'})") from None

    def __getattr__(self, name: str):
        # only reached when normal lookup fails: roles, then a helpful error
        roles = self.__dict__.get("_roles")
        if roles is not None and name in roles:
            return roles[name]
        if name.startswith("__") or roles is None:
            raise AttributeError(name)
        raise AttributeError(f"container {self.__dict__.get('name')} has no attribute or "
                             f"role '{name}' (roles: {', '.join(roles) or 'none'})")

    def __dir__(self):
        return sorted(set(super().__dir__()) | {n for n in self._roles if n.isidentifier()})

    def __repr__(self) -> str:
        return f"<container {self.name} of {self.record._name} = {self.equation}>"


_NUMPY_CODES = {"i8": "=i1", "i16": "=i2", "i32": "=i4", "i64": "=i8", "u8": "=u1",
                "u16": "=u2", "u32": "=u4", "u64": "=u8", "f32": "=f4", "f64": "=f8"}


def _numpy():
    try:
        import numpy
    except ImportError:  # pragma: no cover
        raise ImportError("to_numpy / insert_many need numpy (pip install numpy)") from None
    return numpy


def _install_c_paths(c: Container) -> bool:
    """The C paths of the container (generator/pyfast.py) as its insert, get, find,
    update_by and delete_by (the last three for a single int key), and its batches'
    Records made in C (with their texts: read under the database's lock, which the
    cursors hold when they fetch). Each takes the common case and calls the method it
    shadows for anything else (which checks and raises the precise error), as
    _install_fast_paths' closures do. False when the extension has no C paths for it (a
    record with more than pyfast.TEXTS_MAX text fields, an extension built before, PyPy)."""
    fast = c._spec.fast
    if fast is None:
        return False
    cls = type(c)
    if c._textpos:
        # the record insert starts from and the texts it writes: the spec's defaults
        crec = c._ffi.new(c._rtype)
        for n, none in c._refnone.items():
            setattr(crec, n, none)
        texts = c._fill(crec, c._defaults)
        zero = bytes(c._ffi.buffer(crec))
    else:
        texts, zero = {}, bytes(c._scratch_zero())
    fc = fast.container(c.name, c._db._lock, c, c.record, *_RECORD_SLOTS,
                        cls.insert.__get__(c), cls.at.__get__(c), cls.find.__get__(c),
                        cls.update_by.__get__(c),
                        cls.delete_by.__get__(c), c._fail, cls.update.__get__(c),
                        cls.delete.__get__(c), zero,
                        bytes(n in c._required for n in c._fields),
                        tuple(texts.get(n) for n in c._fields))
    if fc is None:
        return False
    c._fc = fc
    c._rows_c = fc.rows
    c.insert, c.at, c.update, c.delete = fc.insert, fc.get, fc.update, fc.delete
    if len(c.keys) == 1:
        f = c._fields[c.keys[0]]
        if f.kind == "int" and f.target is None:
            c.update_by, c.delete_by = fc.update_by, fc.delete_by
            if c.key == c.keys[0]:      # find(v) by it too (not by a composite key)
                c.find = fc.find
                # get, [] and in: one crossing (Container.__getitem__ / __contains__, on
                # the class, call these; their Python ways are the class's)
                c.get, c._getitem, c._contains = fc.get_by_key, fc.item, fc.contains
    return True


_RECORD_SLOTS = (Record.__dict__["_values"], Record.__dict__["_ref"], Record.__dict__["_origin"])


def _install_fast_paths(c: Container) -> None:
    """Per-container closures for the single-row operations of a record without text
    fields: insert, and for an integer key find, update_by and delete_by. Each binds what
    it needs once (no attribute lookups, no generic argument handling per call), handles
    the common case (keyword fields, an int key in the field's range, an open database)
    and passes anything else to the method it shadows, which checks and says what is
    wrong; the results, errors and the database's lock are the same either way."""
    if c._one_of is None or c._fill_fast is None:
        return
    db, lock, guard = c._db, c._db._lock, c._db._spec_.c_guard
    one, unpack, fill, zero = c._one_of, c._unpack, c._fill_fast, c._zero
    scratch, sbuf, ref, out, obuf = c._scratch, c._scratch_buf, c._scratch_ref, c._out, c._out_buf
    fail, c_insert = c._fail, c._c["insert"]
    slow_insert = c.insert
    required = c._required

    def insert(_from=None, /, **fields):
        if _from is not None:
            return slow_insert(_from, **fields)
        for n in required:
            if n not in fields:
                return slow_insert(**fields)        # raises TypeError naming them
        with lock:
            h = db._handle_
            if h is None:
                return slow_insert(**fields)        # raises ClosedError
            if guard is not None:
                db._guard()
            try:
                fill(zero, fields)
            except Exception:
                return slow_insert(**fields)        # raises the precise error
            rc = c_insert(h, scratch, ref)
            if rc != P2_OK:
                raise fail(rc)
            c._version += 1
            c._links += 1
            return one(unpack(sbuf), ref[0])

    insert.__doc__ = slow_insert.__doc__
    c.insert = insert
    if len(c.keys) != 1:
        return
    key = c.keys[0]
    f = c._fields[key]
    if f.kind != "int":
        return
    lo, hi = f.lo, f.hi
    findrec, upd, dele = c._findrec[key], c._updkey.get(key), c._delkey.get(key)
    if findrec is not None and c.key == key:
        slow_find = c.find

        def find(_key=_MISSING, /, **kw):
            v = _key
            if kw:      # find(id=v): the same path
                if _key is not _MISSING or len(kw) != 1:
                    return slow_find(_key, **kw)
                (name, v), = kw.items()
                # an exact str only: a subclass's __eq__ is user code, run by the slow
                # path with the lock held (Re-entry)
                if name.__class__ is not str or name != key:
                    return slow_find(_key, **kw)
            if v.__class__ is not int or not lo <= v <= hi:
                return slow_find(_key, **kw)
            with lock:
                h = db._handle_
                if h is None:
                    return slow_find(_key, **kw)
                rc = findrec(h, v, scratch, ref)
                if rc == P2_OK:
                    return one(unpack(sbuf), ref[0])
                if rc == P2_NOTFOUND:
                    return None
                raise fail(rc)

        find.__doc__ = slow_find.__doc__
        c.find = find
    if upd is not None:
        slow_update_by, masks = c.update_by, {}

        def update_by(_key, /, **fields):
            if _key.__class__ is not int or not lo <= _key <= hi:
                return slow_update_by(_key, **fields)
            with lock:
                h = db._handle_
                if h is None:
                    return slow_update_by(_key, **fields)
                if guard is not None:
                    db._guard()
                try:
                    # the mask first: the fill writes the scratch record last
                    names = tuple(fields)
                    mask = masks.get(names)
                    if mask is None:
                        mask = masks[names] = c._mask(fields)
                    fill(zero, fields)
                except Exception:
                    return slow_update_by(_key, **fields)
                rc = upd(h, _key, scratch, mask, out, ref)
                if rc == P2_OK:
                    c._version += 1
                    c._links += 1
                    return one(unpack(obuf), ref[0])
                if rc == P2_NOTFOUND:
                    return None
                raise fail(rc)

        update_by.__doc__ = slow_update_by.__doc__
        c.update_by = update_by
    if dele is not None:
        slow_delete_by = c.delete_by

        def delete_by(_key, /):
            if _key.__class__ is not int or not lo <= _key <= hi:
                return slow_delete_by(_key)
            with lock:
                h = db._handle_
                if h is None:
                    return slow_delete_by(_key)
                if guard is not None:
                    db._guard()
                rc = dele(h, _key, ref)
                if rc == P2_OK:
                    c._version += 1
                    c._links += 1
                    return True
                if rc == P2_NOTFOUND:
                    return False
                raise fail(rc)

        delete_by.__doc__ = slow_delete_by.__doc__
        c.delete_by = delete_by


def _find_str(f: _Field, value):
    """A char key to look for: too long a string cannot be there (None)."""
    if not isinstance(value, (str, bytes, bytearray, memoryview)):
        return f.convert(value)  # raises TypeError
    data = _encode(value, f.what)
    if len(data) > f.length or b"\0" in data:
        return None
    return data


class _UpsertContainer(Container):
    """A container with a unique index: upsert (absent from the others)."""

    def upsert(self, _from=None, /, **fields) -> tuple:
        """Insert an element or, if one with the same unique key exists (the key of the
        container's index with `unique = true`), replace it by these fields, in one call
        into C; returns (Record, inserted: bool). Fields as insert takes them."""
        with self._db._lock:   # one call into C at a time (see _serialised)
            self._db._guard()
            fields = _merged_fields("upsert", _from, fields)
            self._check_required("upsert", fields)
            h = self._db._handle()
            crec = self._ffi.new(self._rtype)
            for n, none in self._refnone.items():
                setattr(crec, n, none)     # not given: no element
            texts = self._fill(crec, {**self._defaults, **fields})
            out = self._ffi.new("uint64_t *")
            inserted = self._ffi.new("int *")
            rc = self._upsert(h, crec, out, inserted)
            if rc != P2_OK:
                raise self._fail(rc)
            self._changed()
            ref = int(out[0])
            if texts:
                self._set_texts(h, ref, texts)
            return self._record(crec, ref), bool(inserted[0])


_CONTAINER_CLASSES: dict = {}


def _container_class(purges: bool, upserts: bool) -> type:
    """Container, with purge() over a delflag layer and upsert() over a unique index:
    methods a container cannot do are absent (AttributeError, hasattr false)."""
    cls = _CONTAINER_CLASSES.get((purges, upserts))
    if cls is None:
        bases = tuple(b for b, on in ((_PurgeableContainer, purges), (_UpsertContainer, upserts))
                      if on) or (Container,)
        cls = bases[0] if len(bases) == 1 else type("Container", bases, {"__module__": __name__})
        _CONTAINER_CLASSES[(purges, upserts)] = cls
    return cls


class _PurgeableContainer(Container):
    def purge(self) -> int:
        """Remove the elements marked deleted for good; returns how many."""
        h = self._db._handle()
        n = self._ffi.new("uint64_t *")
        rc = self._c["purge"](h, n)
        if rc != P2_OK:
            raise self._fail(rc)
        self._changed()
        return int(n[0])


# ---------------------------------------------------------------------------
# Cursors
# ---------------------------------------------------------------------------
BATCH = 64   # rows a cursor or a many-role walk fetches per call into C


class Cursor:
    """A walk over the elements satisfying a cursor's predicate (an iterator of Records).

    Rows come from C in batches (pybind.helpers_c's fetch: up to BATCH rows per crossing,
    with the C cursor's state after each row), and become Records in one go. update() and
    delete() first move the C cursor back to the state it had on the row they act on, and
    drop the rows fetched after it (they are fetched again, as the C walk goes on from
    there); after an update the walk goes one row per crossing, since the C cursor then
    remembers the elements it moved (state a copy cannot carry)."""

    def __init__(self, container: Container, cprefix: str, ctype: str, args: list, name: str):
        self._container = container
        self._name = name
        lib = container._spec.lib
        ffi = container._ffi
        self._ffi = ffi
        self._ctype = ctype
        self._fetch_c = getattr(lib, f"p2py__{cprefix}_fetch", None)
        self._rows: list = []       # Records fetched, not yet returned
        self._i = 0                 # the next of them to return
        self._end = P2_OK           # the code the last fetch stopped with
        self._restore = -1          # row whose C state to restore before update/delete
        self._batch = BATCH
        self._bufs = None
        self._next_c = getattr(lib, f"{cprefix}_next")
        self._get_c = getattr(lib, f"{cprefix}_get")
        self._ref_c = getattr(lib, f"{cprefix}_ref")
        self._update_c = getattr(lib, f"{cprefix}_update")
        self._delete_c = getattr(lib, f"{cprefix}_delete")
        self._cur = ffi.new(f"{ctype} *")
        self._current: Optional[Record] = None
        self._done = False
        h = container._db._handle()
        rc = getattr(lib, f"{cprefix}_open")(h, self._cur, *args)
        if rc != P2_OK:
            raise container._fail(rc, f"opening cursor {name}")
        # what the C cursor remembers of the elements its updates moved ahead is freed at
        # its end, by close(), or when this object is collected
        self._close_c = weakref.finalize(self, getattr(lib, f"{cprefix}_close"), self._cur)
        self._version = container._version
        # what the C next() of a cursor class over fast.Walk reads (see _Spec.Cursor)
        self._walk_dict = container._counters()
        self._walk_lock = container._db._lock

    def _database(self) -> Database:
        return self._container._db

    def _check(self):
        c = self._container
        h = c._db._handle()
        if self._version != c._version:
            raise RuntimeError(f"container {c.name} changed during iteration of cursor "
                               f"{self._name}; change it through the cursor "
                               f"(cursor.update / cursor.delete) while walking")
        return h

    def __iter__(self) -> "Cursor":
        return self

    def __next__(self) -> Record:
        # not serialised: only _fill_rows calls into C, and takes the database's lock
        if self._done:
            raise StopIteration
        c = self._container
        if self._version != c._version or c._db._handle_ is None:
            self._check()     # raises
        i = self._i
        if i >= len(self._rows):
            self._refill()
            i = 0
        self._i = i + 1
        self._restore = i
        rec = self._current = self._rows[i]
        return rec

    def _refill(self) -> None:
        """The next batch into _rows (StopIteration at the end)."""
        with self._container._db._lock:
            self._check()
            self._fill_rows()

    def _fill_rows(self, batch: int = 0) -> None:
        """Fetch the next rows from C (the database's lock held by __next__'s caller)."""
        c = self._container
        self._rows = []
        self._i = 0
        rc = self._end
        if rc == P2_OK and self._fetch_c is not None:
            if self._bufs is None:
                ffi = self._ffi
                self._bufs = (ffi.new(f"{c._rtype[:-2]}[]", BATCH),
                              ffi.new("uint64_t[]", BATCH),
                              ffi.new(f"{self._ctype}[]", BATCH), ffi.new("int *"))
                self._cbufs = (ffi.buffer(self._bufs[0]), ffi.buffer(self._bufs[1]))
            recs, refs, snaps, n = self._bufs
            rc = self._fetch_c(self._cur, recs, refs, snaps, batch or self._batch, n)
            k = n[0]
            if k:
                if c._rows_c is not None:    # Records made in C, in one call
                    self._rows = c._rows_c(self._cbufs[0], self._cbufs[1], k)
                else:
                    self._rows = c._records(self._ffi.buffer(recs, k * c._rsize),
                                            self._ffi.unpack(refs, k))
        elif rc == P2_OK:      # an extension built without the helpers: row by row
            rc = self._next_c(self._cur)
            if rc == P2_OK:
                self._rows = [c._record(self._get_c(self._cur), self._ref_c(self._cur))]
                self._restore = -1
        self._end = rc
        if not self._rows:
            if rc == P2_END:
                self.close()
                raise StopIteration
            raise c._fail(rc)

    def to_numpy(self):
        """The rest of the walk (the elements next() would still return) as a numpy
        structured array of the container's dtype (a copy); the cursor is then at its end."""
        np = _numpy()
        c = self._container
        dt = c.dtype
        parts = []
        with c._db._lock:
            if not self._done:
                self._check()
                if self._i < len(self._rows):      # fetched, not yet returned
                    recs = self._bufs[0]
                    k = len(self._rows)
                    raw = bytes(self._ffi.buffer(recs, k * c._rsize))
                    parts.append(np.frombuffer(raw, dtype=dt)[self._i:])
                    self._rows = []
                    self._i = 0
                while True:
                    try:
                        self._fill_rows(batch=max(self._batch, BATCH))
                    except StopIteration:
                        break
                    k = len(self._rows)
                    parts.append(np.frombuffer(bytes(self._ffi.buffer(self._bufs[0],
                                                                      k * c._rsize)),
                                               dtype=dt).copy())
                    self._rows = []
                    self._current = None
        return np.concatenate(parts) if parts else np.zeros(0, dtype=dt)

    def _on_row(self) -> None:
        """Put the C cursor on the row last returned (its state saved when it was fetched)
        and forget the rows fetched after it."""
        r = self._restore
        if r >= 0 and self._bufs is not None:
            snaps = self._bufs[2]
            self._ffi.memmove(self._cur, snaps + r, self._ffi.sizeof(self._ctype))
        self._restore = -1
        self._rows = []
        self._i = 0
        self._end = P2_OK

    def close(self) -> None:
        """End the walk early (also when the cursor is collected or reaches its end):
        next() then raises StopIteration."""
        self._done = True
        self._current = None
        self._rows = []
        self._close_c()

    def __enter__(self) -> "Cursor":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def current(self) -> Optional[Record]:
        """The element last returned (as it was then), None before the first or after
        it was deleted."""
        return self._current

    def _on_element(self, op: str) -> None:
        if self._current is None:
            raise P2Error(f"cursor {self._name}: {op}() needs an element under the cursor "
                          f"(there is none before the first next(), after delete() or at "
                          f"the end)", P2_EINVAL)

    def update(self, /, **fields) -> Record:
        """Change fields of the element under the cursor; the walk goes on after it and
        does not meet the element again, even if the update moved it further along the
        walk (a new key of the cursor's order, a new iarray key)."""
        self._check()
        self._on_element("update")
        c = self._container
        conv = c._convert(fields)
        self._check()      # user code run by a value may have changed the container
        self._on_row()
        self._batch = 1    # the C cursor now remembers what it moved: no copies of it
        crec = c._ffi.new(c._rtype)
        p = self._get_c(self._cur)
        if p == c._ffi.NULL:
            raise P2Error(f"cursor {self._name} is not on an element", P2_EINVAL)
        crec[0] = p[0]
        texts = c._write(crec, conv)
        rc = self._update_c(self._cur, crec)
        if rc != P2_OK:
            raise c._fail(rc)
        c._changed()
        self._version = c._version
        ref = int(self._ref_c(self._cur))
        if texts:
            c._set_texts(c._db._handle(), ref, texts)
        self._current = c._record(crec, ref)
        return self._current

    def delete(self) -> None:
        """Delete the element under the cursor; the walk goes on after it."""
        self._check()
        self._on_element("delete")
        self._on_row()
        c = self._container
        rc = self._delete_c(self._cur)
        if rc != P2_OK:
            raise c._fail(rc)
        c._changed()
        self._version = c._version
        self._current = None

    def __repr__(self) -> str:
        return f"<cursor {self._name} on {self._container.name}>"


# ---------------------------------------------------------------------------
# Relationships
# ---------------------------------------------------------------------------
# Container attributes a role cannot shadow (then: container.role(name)).
_CONTAINER_ATTRS = {"name", "keys", "persistent", "file", "equation", "record"}


def role_expression(container: str, role: str, db: str = "db") -> str:
    """How Python code reaches a role: `db.comps.parts`, or `db.conns.role('from')`."""
    base = f"{db}.{container}" if _attribute_name(container, Database) \
        else f"{db}.container({container!r})"
    if _attribute_name(role, _PurgeableContainer) and role not in _CONTAINER_ATTRS:
        return f"{base}.{role}"
    return f"{base}.role({role!r})"


def _attribute_name(name: str, cls: type) -> bool:
    return name.isidentifier() and not keyword.iskeyword(name) and not hasattr(cls, name)


class Role:
    """One end of a relationship, on the container whose elements play it. See the module
    docstring; ManyRole and OneRole are the two kinds."""

    def __init__(self, container: Container, partner: Container, meta: dict):
        self._meta = meta
        self.container = container
        self.partner = partner
        self.partner_role: Optional[Role] = None   # set by Database
        self.name: str = meta["role"]
        self.relationship: str = meta["relationship"]
        self.many: bool = meta["many"]
        lib = container._spec.lib
        self._c = {op: getattr(lib, cname) for op, cname in meta["c"].items()
                   if op != "iter"}

    def _database(self) -> Database:
        return self.container._db

    def _owner(self, h, x) -> int:
        """The reference of an element of this role's container (checked to exist)."""
        return self.container._locate(h, x)[0]

    def _member(self, h, x) -> int:
        """The reference of an element of the partner container (checked to exist)."""
        return self.partner._locate(h, x)[0]

    def _done(self, rc: int, what: str) -> None:
        if rc != P2_OK:
            raise self.container._fail(rc, f"{self.container.name}.{self.name}: {what}")
        self.container._links += 1
        self.partner._links += 1

    def __repr__(self) -> str:
        kind = "many" if self.many else "one"
        return (f"<role {self.container.name}.{self.name} ({kind} {self.partner.name}) of "
                f"relationship {self.relationship}>")


class ManyRole(Role):
    """A role holding a collection of partners: `role(owner)` iterates them."""

    def __call__(self, owner, **order) -> "Links":
        """The partners of owner (Records of the partner container), lazily. An ordered
        role (`order by FIELD`) walks in that order and takes `reverse=True` and bounds
        `lo=` / `hi=` (inclusive, on FIELD: `where FIELD >= t` is lo=t)."""
        return self.container._spec.Links(self, owner, records=True, **order)

    def refs(self, owner, **order) -> "Links":
        """The partners of owner as int references, lazily (reverse=, lo=, hi= as above)."""
        return self.container._spec.Links(self, owner, records=False, **order)

    @property
    def order(self) -> Optional[tuple]:
        """(field, descending) of an ordered role, else None."""
        o = self._meta.get("order")
        return None if o is None else (o["field"], o["desc"])

    def _bounds(self, what: str, reverse, lo, hi) -> tuple:
        """(reverse as 0/1, lo, hi as C pointers or NULL) of an ordered role."""
        o = self._meta.get("order")
        if o is None:
            raise TypeError(f"{self.container.name}.{self.name}: {what}: reverse, lo and hi "
                            f"need an ordered role (`order by` a field in the spec)")
        ffi = self.container._ffi
        ptr = lambda v: ffi.NULL if v is None else ffi.new(f"{o['ctype']} *", v)
        return (1 if reverse else 0), ptr(lo), ptr(hi)

    def feed(self, owners, k: Optional[int] = None, *, reverse: bool = False, lo=None,
             hi=None) -> list:
        """The first k members (all when k is None) of the roles of several owners merged
        in the role's order (or reverse), as Records: the feed ("the 10 newest posts of the
        people I follow": `users.posts.feed(followees, 10)`), merged in C without
        materialising the roles. Ties across owners by their position in owners."""
        rev, plo, phi = self._bounds("feed", reverse, lo, hi)
        c, p = self.container, self.partner
        ffi = c._ffi
        with c._db._lock:
            h = c._db._handle()
            refs = [self._owner(h, _arg(o)) for o in owners]
            if k is None:
                k = sum(int(self._c["count"](h, r)) for r in refs)
            if k < 0:
                raise ValueError(f"{c.name}.{self.name}: feed: k must be >= 0, got {k}")
            out = ffi.new("uint64_t[]", max(k, 1))
            recs = ffi.new(f"{p._rtype.rstrip(' *')}[]", max(k, 1))
            got = ffi.new("uint64_t *")
            rc = self._c["top"](h, refs, len(refs), rev, plo, phi, k, out, recs, got)
            if rc != P2_OK:
                raise c._fail(rc, f"{c.name}.{self.name}: feed")
            return [p._record(recs + i, out[i]) for i in range(got[0])]

    def count(self, owner) -> int:
        """How many partners owner has (a partner held twice counts twice)."""
        owner = _arg(owner)
        h = self.container._db._handle()
        return int(self._c["count"](h, self._owner(h, owner)))

    def add(self, owner, member) -> None:
        """Add member to owner's collection (and owner to member's end)."""
        owner, member = _arg(owner), _arg(member)
        h = self.container._db._handle()
        o, m = self._owner(h, owner), self._member(h, member)
        self._done(self._c["add"](h, o, m), "add")

    def remove(self, owner, member) -> None:
        """Remove one occurrence of member from owner's collection; NotFoundError if
        member is not in it."""
        owner, member = _arg(owner), _arg(member)
        h = self.container._db._handle()
        o, m = self._owner(h, owner), self._member(h, member)
        self._done(self._c["remove"](h, o, m), "remove")


class OneRole(Role):
    """A role holding at most one partner: `role(x)` / `role.get(x)`, `role.set(x, p)`."""

    def ref(self, x) -> Optional[int]:
        """The partner's reference, or None."""
        x = _arg(x)
        h = self.container._db._handle()
        r = int(self._c["get"](h, self._owner(h, x)))
        return None if r == NOREF else r

    def get(self, x) -> Optional[Record]:
        """The partner (a Record of the partner container), or None."""
        r = self.ref(x)
        if r is None:
            return None
        p = self.partner
        return p._record(p._read(p._db._handle(), r), r)

    __call__ = get

    def set(self, x, partner) -> None:
        """Make partner (a Record, a reference, or None to clear) x's partner."""
        x = _arg(x)
        partner = None if partner is None else _arg(partner)
        h = self.container._db._handle()
        o = self._owner(h, x)
        m = NOREF if partner is None else self._member(h, partner)
        self._done(self._c["set"](h, o, m), "set")


class Links:
    """A lazy walk over the partners of one owner in a many-role (an iterator)."""

    def __init__(self, role: ManyRole, owner, records: bool = True, *, reverse: bool = False,
                 lo=None, hi=None):
        c = role.container
        ffi = c._ffi
        owner = _arg(owner)
        ranged = reverse or lo is not None or hi is not None
        bounds = role._bounds("walk", reverse, lo, hi) if ranged else None
        h = c._db._handle()
        self._role = role
        self._records = records
        self._owner = role._owner(h, owner)
        self._it = ffi.new(f"{role._meta['c']['iter']} *")
        self._out = ffi.new("uint64_t *")
        self._done = False
        # partners come from C in batches (pybind.helpers_c), references and records
        self._fetch_c = getattr(c._spec.lib, f"p2py__{role._meta['c']['open']}_fetch", None)
        self._rows: list = []
        self._i = 0
        self._end = P2_OK
        self._bufs = None
        rc = (role._c["open_range"](h, self._it, self._owner, *bounds) if ranged
              else role._c["open"](h, self._it, self._owner))
        if rc != P2_OK:
            raise c._fail(rc, f"{c.name}.{role.name}: opening")
        # what the C next() of a class over fast.Walk reads (see _Spec.Links); the
        # counters it walks under are _version and _walk_val2
        self._walk_lock = c._db._lock
        self._walk_key = "_links"
        self._walk_dict, self._version = c._counters(), c._links
        self._walk_dict2, self._walk_val2 = role.partner._counters(), role.partner._links

    def __iter__(self) -> "Links":
        return self

    def _check(self) -> None:
        """Raise what _step raises when the walk cannot go on (closed, changed)."""
        with self._role.container._db._lock:
            self._step_check()

    def _refill(self) -> None:
        """The next rows into _rows from _i = 0 (StopIteration at the end)."""
        with self._role.container._db._lock:
            rec = self._step()
        if self._i == 1 and self._rows and self._rows[0] is rec:
            self._i = 0
        else:                           # row by row: an extension without the batches
            self._rows, self._i = [rec], 0

    def _database(self) -> Database:
        return self._role.container._db

    def __next__(self):
        # rows already fetched are returned without the lock (no call into C)
        i = self._i
        if i < len(self._rows) and not self._done:
            role = self._role
            c = role.container
            if c._links == self._version and role.partner._links == self._walk_val2 \
                    and c._db._handle_ is not None:
                self._i = i + 1
                return self._rows[i]
        with self._role.container._db._lock:
            return self._step()

    def _step_check(self):
        role = self._role
        c, p = role.container, role.partner
        h = c._db._handle()
        if c._links != self._version or p._links != self._walk_val2:
            raise RuntimeError(f"{c.name} or {p.name} changed while walking "
                               f"{c.name}.{role.name}; collect the partners first "
                               f"(list(...)), then change")
        return h

    def _step(self):
        if self._done:
            raise StopIteration
        role = self._role
        c, p = role.container, role.partner
        h = self._step_check()
        i = self._i
        if i < len(self._rows):
            self._i = i + 1
            return self._rows[i]
        if self._fetch_c is None:
            rc = role._c["next"](self._it, self._out)
            if rc == P2_END:
                self._done = True
                raise StopIteration
            if rc != P2_OK:
                raise c._fail(rc)
            ref = int(self._out[0])
            if not self._records:
                return ref
            return p._record(p._read(h, ref), ref)
        self._rows = []
        self._i = 0
        rc = self._end
        if rc == P2_OK:
            ffi = c._ffi
            if self._bufs is None:
                self._bufs = (ffi.new("uint64_t[]", BATCH),
                              ffi.new(f"{p._rtype[:-2]}[]", BATCH) if self._records
                              else ffi.NULL, ffi.new("int *"))
            refs, recs, n = self._bufs
            rc = self._fetch_c(h, self._it, refs, recs, BATCH, n)
            k = n[0]
            if k:
                refl = ffi.unpack(refs, k)
                if self._records:
                    self._rows = p._records(ffi.buffer(recs, k * p._rsize), refl)
                else:
                    self._rows = refl
            self._end = rc
        if not self._rows:
            if rc == P2_END:
                self._done = True
                raise StopIteration
            raise c._fail(rc)
        self._i = 1
        return self._rows[0]

    def __repr__(self) -> str:
        return f"<walk of {self._role.container.name}.{self._role.name} of {self._owner}>"


# ---------------------------------------------------------------------------
# One call into C at a time per database (threads), with the journal's handler in place
# ---------------------------------------------------------------------------
def _serialised(fn, writes: bool):
    """fn, holding its database's lock. A call that may write (`writes`) on a journalled
    database first checks the journal's SIGSEGV handler (and puts it back if the host
    replaced it: reads never fault, writes do); close closes even if that fails."""
    if not writes:
        @functools.wraps(fn)
        def call(self, /, *args, **kwargs):
            with self._database()._lock:
                return fn(self, *args, **kwargs)
        return call

    @functools.wraps(fn)
    def call(self, /, *args, **kwargs):
        db = self._database()
        with db._lock:
            h = db._handle_
            guard = db._spec_.c_guard
            if guard is not None and h is not None:
                rc = guard(h)
                if rc != P2_OK and fn.__name__ != "close":
                    raise db._spec_.error(h, rc)
            return fn(self, *args, **kwargs)
    return call


for _cls, _reads, _writes in (
        (Database, ("verify", "cursor"), ("sync",)),
        (Journalled, (), ("_txn",)),
        # insert, get, find, update and delete take the lock themselves (hot paths)
        (Container, ("__len__", "__iter__"), ("reserve",)),
        (_PurgeableContainer, (), ("purge",)),
        (_UpsertContainer, (), ()),

        (Cursor, ("close",), ("update", "delete")),
        (ManyRole, ("__call__", "refs", "count"), ("add", "remove")),
        (OneRole, ("ref", "get", "__call__"), ("set",)),
        (Links, (), ())):
    for _n in _reads + _writes:
        setattr(_cls, _n, _serialised(_cls.__dict__[_n], _n in _writes))
del _cls, _reads, _writes, _n
