"""p2gen.runtime.pyapi: Cursors."""
from __future__ import annotations

import weakref
from typing import Optional

from ._base import P2_EINVAL, P2_END, P2_OK
from .errors import P2Error
from .records import Record
from .database import Database
from .containers import Container, _numpy


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
