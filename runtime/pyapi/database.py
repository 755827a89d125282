"""p2gen.runtime.pyapi: Database."""
from __future__ import annotations

import threading
import weakref

from ._base import P2_EFORMAT, P2_OK
from .errors import BusyError, ClosedError, P2Error
from .spec import _Spec, _close_handle


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


# the parts below that this one calls (imported last: they import this one)
from .containers import _container_class  # noqa: E402
from .relationships import ManyRole, OneRole, _attribute_name  # noqa: E402
