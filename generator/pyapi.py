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

Database
    `open(dir=None)` opens every container (persistent files are created when absent and
    resolved against `dir`). `close()` (idempotent; also on leaving a `with` block and, as a
    safety net, when the object is garbage collected), `sync()`, `closed`,
    `container(name)`, `cursor(name, *args, **params)`, `containers` (name -> Container).
    Containers and cursors are also attributes named after them (`db.accounts`,
    `db.rich_in_branch(...)`) unless the name clashes with one of these methods.
    Any use after close() raises ClosedError.
Container
    `insert([record_or_mapping], **fields) -> Record`: fields not given are 0 / "".
    `get(ref) -> Record` (NotFoundError if there is no such element),
    `find(value)` when the container has exactly one key field, else `find(field=value)`
    -> Record or None (a string longer than the field finds nothing; an int outside the
    field's type raises RangeError), `update(rec_or_ref, **fields) -> Record`,
    `delete(rec_or_ref)`,
    `len()`, `iter()` (every element), `purge() -> int` (only over a `delflag` layer),
    `name`, `keys`, `record` (the Record class), `persistent`, `file`, `equation`.
Cursor (what iterating a container or calling a cursor returns)
    An iterator of Records, lazily walking the C cursor. `update(**fields)` and `delete()`
    act on the element last returned and keep the walk going. Changing the container any
    other way while a cursor walks it makes the cursor raise RuntimeError on its next step
    (as a dict does): the C cursor would otherwise follow a stale reference.
Record
    An immutable copy of one element: fields as attributes (int, float; char[N] as `str`,
    decoded UTF-8 with the NUL padding stripped and undecodable bytes kept as surrogate
    escapes), `.ref` (its reference when read; a field named `ref` wins, then use `._ref`),
    `._asdict()`, `._fields`; equal (and hashing equal) when of the same record type with
    equal fields, whatever their references. Passed to get/update/delete, a Record names
    its element by reference and key fields: NotFoundError if the element at that reference
    now has other keys (over qsort storage references are positions and shift on every
    insert and delete; over iarray the reference is the key). Bare int references are
    taken as they are.
Values written
    int fields take int (not float; bool counts as int) within the C type's range, else
    TypeError / RangeError (also an OverflowError). Float fields take int or float. char[N]
    fields take str (encoded UTF-8) or bytes of at most N bytes without NUL, else
    TypeError / RangeError (also a ValueError) naming the field and N. Unknown field names
    raise TypeError listing the record's fields.
Errors
    P2Error (.code: the P2_* code, .message), with NotFoundError (also a KeyError),
    DuplicateError, RangeError (also ValueError and OverflowError), ClosedError,
    FormatError, MismatchError, BusyError; other codes (P2_ENOMEM, P2_EIO, P2_EINVAL) raise
    P2Error itself. Messages are the C library's (`<prefix>_errmsg`).
Threads
    Like the C API, a Database is not thread-safe: use it from one thread at a time.
"""
from __future__ import annotations

import inspect
import os
import weakref
from collections.abc import Mapping
from typing import Any, Optional

__all__ = ["P2Error", "NotFoundError", "DuplicateError", "RangeError", "ClosedError",
           "FormatError", "MismatchError", "BusyError", "Record", "Database", "Container",
           "Cursor", "bind"]

# The codes of runtime/p2_runtime.h (checked against the extension in bind()).
P2_OK, P2_END, P2_NOTFOUND, P2_EDUP, P2_ERANGE, P2_ENOMEM = 0, 1, 2, 3, 4, 5
P2_EIO, P2_EFORMAT, P2_EMISMATCH, P2_EINVAL, P2_ECLOSED, P2_EBUSY = 6, 7, 8, 9, 10, 11
CODE_NAMES = ("P2_OK", "P2_END", "P2_NOTFOUND", "P2_EDUP", "P2_ERANGE", "P2_ENOMEM",
              "P2_EIO", "P2_EFORMAT", "P2_EMISMATCH", "P2_EINVAL", "P2_ECLOSED", "P2_EBUSY")


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
    """P2_EBUSY: the file is locked by another open database."""
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


def _encode(value: Any) -> bytes:
    return value.encode("utf-8", "surrogateescape") if isinstance(value, str) else bytes(value)


class _Field:
    """How one typed value (a record field or a cursor parameter) crosses to C."""
    __slots__ = ("name", "kind", "tname", "length", "lo", "hi", "what")

    def __init__(self, desc: dict, what: str):
        self.name = desc["name"]
        self.kind = desc["kind"]
        self.tname = desc["type"]   # i8 .. u64, f32, f64, char
        self.length = desc.get("length") or 0
        self.what = what     # "field 'x' of account" / "parameter $b of cursor c"
        if self.kind == "int":
            bits = _INT_BITS[self.tname]
            signed = self.tname.startswith("i")
            self.lo = -(1 << (bits - 1)) if signed else 0
            self.hi = (1 << (bits - 1)) - 1 if signed else (1 << bits) - 1
        else:
            self.lo = self.hi = None

    @property
    def spelled(self) -> str:
        return f"char[{self.length}]" if self.kind == "char" else self.tname

    def convert(self, value: Any):
        """The value as C takes it (int, float or bytes); raises TypeError / RangeError."""
        if self.kind == "int":
            if not isinstance(value, int):
                raise TypeError(f"{self.what} is {self.spelled}: expected an int, got "
                                f"{type(value).__name__} {value!r}")
            if not self.lo <= value <= self.hi:
                raise RangeError(f"{self.what} is {self.spelled}: {value} is out of range "
                                 f"({self.lo} .. {self.hi})")
            return int(value)
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
        data = _encode(value)
        if len(data) > self.length:
            raise RangeError(f"{self.what} is {self.spelled}: {value!r} is {len(data)} bytes, "
                             f"longer than {self.length}")
        if b"\0" in data:
            raise RangeError(f"{self.what} is {self.spelled}: {value!r} contains a NUL byte")
        return data


def _int_ref(ref: Any) -> int:
    if isinstance(ref, Record):
        return ref._ref
    if isinstance(ref, int) and not isinstance(ref, bool):
        return ref
    raise TypeError(f"expected a Record or a reference (int), got {type(ref).__name__} {ref!r}")


# ---------------------------------------------------------------------------
# Records
# ---------------------------------------------------------------------------
class Record:
    """An immutable copy of one element. Subclassed per record type by bind()."""
    __slots__ = ("_values", "_ref", "_origin")
    _fields: tuple = ()
    _name = "record"

    def __init__(self, *args, **kwargs):
        raise TypeError(f"{type(self).__name__} records are read from a container "
                        f"(insert, get, find, iteration)")

    @classmethod
    def _make(cls, values: tuple, ref: Optional[int], origin: Optional[str] = None):
        self = object.__new__(cls)
        object.__setattr__(self, "_values", values)
        object.__setattr__(self, "_ref", ref)
        object.__setattr__(self, "_origin", origin)
        return self

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
        for code, cname in enumerate(CODE_NAMES):
            if getattr(lib, cname, code) != code:
                raise ImportError(f"{cname} is {getattr(lib, cname)} in the extension of "
                                  f"{p}, {code} in p2gen.pyapi: rebuild it with this p2gen")
        self.fields = {}
        self.records = {}
        for rname, fdescs in meta["records"].items():
            fs = [_Field(d, f"field '{d['name']}' of {rname}") for d in fdescs]
            self.fields[rname] = fs
            self.records[rname] = _record_class(rname, fs)
        self.containers = {c["name"]: c for c in meta["containers"]}
        self.cursors = {k["name"]: k for k in meta["cursors"]}
        self.cursor_params = {
            k["name"]: [_Field(q, f"parameter ${q['name']} of cursor {k['name']}")
                        for q in k["params"]] for k in meta["cursors"]}
        self.c_open = getattr(lib, f"{p}_open")
        self.c_close = getattr(lib, f"{p}_close")
        self.c_sync = getattr(lib, f"{p}_sync")
        self.c_errmsg = getattr(lib, f"{p}_errmsg")
        self.c_errcode = getattr(lib, f"{p}_errcode")
        self.Database = type(f"{p}.Database", (Database,), {"__slots__": ()})
        self.Database.__qualname__ = "Database"
        self.Database.__module__ = p
        for name in self.containers:
            if not hasattr(Database, name):
                setattr(self.Database, name, property(
                    lambda db, _n=name: db.container(_n),
                    doc=f"container {name}: {self.containers[name]['equation']}"))
        for name, k in self.cursors.items():
            if not hasattr(Database, name) and name not in self.containers:
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


def _cursor_method(name: str, k: dict):
    def method(self, *args, **params):
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
                      + (f" order by {k['order_by']}" if k.get("order_by") else ""))
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
    __slots__ = ("_spec_", "_handle_", "_finalizer", "_containers", "dir", "__weakref__")

    def __init__(self, spec: _Spec, handle, dir=None):
        self._spec_ = spec
        self._handle_ = handle
        self.dir = dir
        self._finalizer = weakref.finalize(self, spec.c_close, handle)
        self._containers = {}
        for name, c in spec.containers.items():
            cls = _PurgeableContainer if c["delflag"] else Container
            self._containers[name] = cls(self, c)

    # -- life cycle ------------------------------------------------------------------
    @property
    def closed(self) -> bool:
        return self._handle_ is None

    def _handle(self):
        h = self._handle_
        if h is None:
            raise ClosedError(f"database {self._spec_.prefix} is closed")
        return h

    def close(self) -> None:
        """Close the files cleanly and free the handle. Closing twice does nothing."""
        h = self._handle_
        if h is None:
            return
        self._handle_ = None
        self._finalizer.detach()
        rc = self._spec_.c_close(h)
        if rc != P2_OK:
            raise self._spec_.error(None, rc, f"closing {self._spec_.prefix}")

    def sync(self) -> None:
        """Flush persistent containers to their files."""
        h = self._handle()
        rc = self._spec_.c_sync(h)
        if rc != P2_OK:
            raise self._spec_.error(h, rc)

    def __enter__(self):
        self._handle()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- contents ----------------------------------------------------------------------
    @property
    def containers(self) -> dict:
        return dict(self._containers)

    def container(self, name: str) -> "Container":
        try:
            return self._containers[name]
        except KeyError:
            raise AttributeError(f"spec {self._spec_.prefix} has no container '{name}' "
                                 f"(containers: {', '.join(self._containers)})") from None

    def cursor(self, name: str, *args, **params) -> "Cursor":
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
        return Cursor(c, k["c"]["prefix"], k["c"]["cursor"], cargs, name)

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return (f"<{self._spec_.prefix} database {state}, dir={self.dir!r}, containers: "
                f"{', '.join(self._containers)}>")

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._containers)
                      | set(self._spec_.cursors))


# ---------------------------------------------------------------------------
# Containers
# ---------------------------------------------------------------------------
class Container:
    """One container of an open database. See the module docstring."""

    def __init__(self, db: Database, meta: dict):
        spec = db._spec_
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
        self._rtype = f"{spec.prefix}_{meta['record']} *"
        cp = meta["c"]["prefix"]
        self._c = {op: getattr(lib, f"{cp}_{op}")
                   for op in ("insert", "get", "update", "delete", "count", "reserve")}
        self._find = {k: getattr(lib, f"{cp}_find_{k}") for k in self.keys}
        if meta["delflag"]:
            self._c["purge"] = getattr(lib, f"{cp}_purge")
        self._all = (meta["c"]["all"], meta["c"]["all_cursor"])
        self._version = 0   # bumped by every change not made through a cursor
        self._noref = ffi.cast("uint64_t", -1)

    # -- helpers ---------------------------------------------------------------------
    def _fail(self, rc: int, what: str = ""):
        return self._spec.error(self._db._handle_, rc, what)

    def _record(self, crec, ref: int):
        ffi = self._ffi
        values = []
        for f in self._fields.values():
            v = getattr(crec, f.name)
            if f.kind == "char":
                v = ffi.string(v).decode("utf-8", "surrogateescape")
            values.append(v)
        return self.record._make(tuple(values), int(ref), self.name)

    def _fill(self, crec, fields: dict) -> None:
        known = self._fields
        for n in fields:
            if n not in known:
                raise TypeError(f"{self.record._name} has no field '{n}' (fields: "
                                f"{', '.join(known)})")
        ffi = self._ffi
        conv = {n: known[n].convert(v) for n, v in fields.items()}  # check all, then write
        for n, v in conv.items():
            f = known[n]
            if f.kind == "char":
                ffi.buffer(getattr(crec, n))[:] = v.ljust(f.length, b"\0")
            else:
                setattr(crec, n, v)

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

    # -- the API -----------------------------------------------------------------------
    def insert(self, _from=None, /, **fields) -> Record:
        """Insert an element and return it (a Record with its reference). Fields come from
        the optional record or mapping, then from keyword arguments; others are 0 / ""."""
        if _from is not None:
            if isinstance(_from, Record):
                base = _from._asdict()
            elif isinstance(_from, Mapping):
                base = dict(_from)
            else:
                raise TypeError(f"insert() takes a Record or a mapping, got "
                                f"{type(_from).__name__}")
            fields = {**base, **fields}
        h = self._db._handle()
        crec = self._ffi.new(self._rtype)
        self._fill(crec, fields)
        out = self._ffi.new("uint64_t *")
        rc = self._c["insert"](h, crec, out)
        if rc != P2_OK:
            raise self._fail(rc)
        self._changed()
        return self._record(crec, out[0])

    def _read(self, h, ref: int):
        crec = self._ffi.new(self._rtype)
        rc = self._c["get"](h, ref, crec)
        if rc != P2_OK:
            raise self._fail(rc)
        return crec

    def _locate(self, h, rec_or_ref):
        """(ref, C copy of the element). A Record names its element by reference *and*
        key fields: if the element at its reference has other keys now (it was deleted,
        its key changed, or, over qsort storage, elements shifted), NotFoundError."""
        ref = self._ref(rec_or_ref)
        crec = self._read(h, ref)
        if isinstance(rec_or_ref, Record) and self.keys:
            now = self._record(crec, ref)._values
            for k, i in zip(self.keys, self._key_index):
                was, cur = rec_or_ref._values[i], now[i]
                if was != cur:
                    raise NotFoundError(
                        f"container {self.name}: the element at reference {ref} has "
                        f"{k} == {cur!r}, not {was!r}: the record is stale (the element was "
                        f"deleted, changed its key or moved); find it again")
        return ref, crec

    def get(self, rec_or_ref) -> Record:
        """The element `ref` (a fresh copy); NotFoundError if there is none."""
        h = self._db._handle()
        ref, crec = self._locate(h, rec_or_ref)
        return self._record(crec, ref)

    def __getitem__(self, ref) -> Record:
        return self.get(ref)

    def find(self, _key=None, /, **kw) -> Optional[Record]:
        """The element whose key equals the value (an element, if several), or None:
        `find(value)` when the container has one key field, else `find(field=value)`."""
        h = self._db._handle()
        keys = self.keys
        if not keys:
            raise TypeError(f"container {self.name} has no key fields ({self.equation}): "
                            f"iterate over it or use a cursor")
        if _key is not None:
            if kw:
                raise TypeError("find() takes a value or one field=value, not both")
            if len(keys) != 1:
                raise TypeError(f"container {self.name} has several keys ({', '.join(keys)}): "
                                f"say which, e.g. find({keys[0]}=...)")
            field, value = keys[0], _key
        else:
            if len(kw) != 1:
                raise TypeError(f"find() takes one key field=value (keys of {self.name}: "
                                f"{', '.join(keys)}), got {len(kw)}")
            (field, value), = kw.items()
            if field not in keys:
                what = "not a key" if field in self._fields else "not a field"
                raise TypeError(f"'{field}' is {what} of container {self.name}; find() takes "
                                f"one of its keys: {', '.join(keys)}")
        f = self._fields[field]
        cval = f.convert(value) if f.kind != "char" else _find_str(f, value)
        if cval is None:
            return None
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
        h = self._db._handle()
        ref, crec = self._locate(h, rec_or_ref)
        self._fill(crec, fields)
        refp = self._ffi.new("uint64_t *", ref)
        rc = self._c["update"](h, refp, crec)
        if rc != P2_OK:
            raise self._fail(rc)
        self._changed()
        return self._record(crec, refp[0])

    def delete(self, rec_or_ref) -> None:
        """Delete the element; NotFoundError if there is none."""
        h = self._db._handle()
        ref, _ = self._locate(h, rec_or_ref)
        rc = self._c["delete"](h, ref)
        if rc != P2_OK:
            raise self._fail(rc)
        self._changed()

    def __delitem__(self, ref) -> None:
        self.delete(ref)

    def __len__(self) -> int:
        return int(self._c["count"](self._db._handle()))

    def reserve(self, n: int) -> None:
        """Make room for n elements in all, so that loading them does not regrow."""
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise TypeError(f"reserve: n must be a non-negative int, got {n!r}")
        rc = self._c["reserve"](self._db._handle(), min(n, (1 << 64) - 1))
        if rc != P2_OK:
            raise self._fail(rc)

    def __iter__(self) -> "Cursor":
        self._db._handle()
        return Cursor(self, self._all[0], self._all[1], [], "all")

    def __contains__(self, rec_or_ref) -> bool:
        try:
            self.get(rec_or_ref)
        except NotFoundError:
            return False
        return True

    def __repr__(self) -> str:
        return f"<container {self.name} of {self.record._name} = {self.equation}>"


def _find_str(f: _Field, value):
    """A char key to look for: too long a string cannot be there (None)."""
    if not isinstance(value, (str, bytes, bytearray, memoryview)):
        return f.convert(value)  # raises TypeError
    data = _encode(value)
    if len(data) > f.length or b"\0" in data:
        return None
    return data


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
class Cursor:
    """A walk over the elements satisfying a cursor's predicate (an iterator of Records)."""

    def __init__(self, container: Container, cprefix: str, ctype: str, args: list, name: str):
        self._container = container
        self._name = name
        lib = container._spec.lib
        ffi = container._ffi
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
        self._version = container._version

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
        if self._done:
            raise StopIteration
        self._check()
        rc = self._next_c(self._cur)
        if rc == P2_END:
            self._done = True
            self._current = None
            raise StopIteration
        if rc != P2_OK:
            raise self._container._fail(rc)
        crec = self._get_c(self._cur)
        self._current = self._container._record(crec, self._ref_c(self._cur))
        return self._current

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

    def update(self, **fields) -> Record:
        """Change fields of the element under the cursor; the walk goes on after it."""
        self._check()
        self._on_element("update")
        c = self._container
        crec = c._ffi.new(c._rtype)
        p = self._get_c(self._cur)
        if p == c._ffi.NULL:
            raise P2Error(f"cursor {self._name} is not on an element", P2_EINVAL)
        crec[0] = p[0]
        c._fill(crec, fields)
        rc = self._update_c(self._cur, crec)
        if rc != P2_OK:
            raise c._fail(rc)
        c._changed()
        self._version = c._version
        self._current = c._record(crec, self._ref_c(self._cur))
        return self._current

    def delete(self) -> None:
        """Delete the element under the cursor; the walk goes on after it."""
        self._check()
        self._on_element("delete")
        c = self._container
        rc = self._delete_c(self._cur)
        if rc != P2_OK:
            raise c._fail(rc)
        c._changed()
        self._version = c._version
        self._current = None

    def __repr__(self) -> str:
        return f"<cursor {self._name} on {self._container.name}>"
