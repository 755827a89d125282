"""p2gen.runtime.pyapi: One call into C at a time per database (threads), with the journal's handler in place."""
from __future__ import annotations

import functools

from ._base import P2_OK
from .database import Database, Journalled
from .containers import Container, _PurgeableContainer, _UpsertContainer
from .cursors import Cursor
from .relationships import Links, ManyRole, OneRole


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
