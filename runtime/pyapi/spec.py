"""p2gen.runtime.pyapi: The spec's API, bound to one extension."""
from __future__ import annotations

import inspect
import os
import sys

from ..codes import CODES

from ._base import FAST_API, P2_OK
from .errors import P2Error, error_for
from .fields import _Field
from .records import _Layout, _record_class


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


# the parts below that this one calls (imported last: they import this one)
from .database import Database, Journalled  # noqa: E402
from .containers import _RECORD_SLOTS  # noqa: E402
from .cursors import Cursor  # noqa: E402
from .relationships import Links, ManyRole, OneRole  # noqa: E402
