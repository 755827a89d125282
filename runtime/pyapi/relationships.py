"""p2gen.runtime.pyapi: Relationships."""
from __future__ import annotations

import keyword
from typing import Optional

from ._base import NOREF, P2_END, P2_OK
from .fields import _arg
from .records import Record
from .database import Database
from .containers import Container, _PurgeableContainer
from .cursors import BATCH


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
