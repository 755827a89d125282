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
    FormatError, MismatchError, BusyError, ConflictError (an object server's commit: abort,
    then retry); other codes (P2_ENOMEM, P2_EIO, P2_EINVAL) raise P2Error itself. Messages are the C library's (`<prefix>_errmsg`).
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
Parts (one module each; this package re-exports every name, p2gen.runtime.pyapi.X as
before): _base (return codes, NOREF, FAST_API), errors, fields (checking and converting
values), records (Record, layouts, packers), spec (bind: the API bound to one
extension), database (Database, Journalled), containers (Container, the C and fast
paths), cursors, relationships (roles, Links), _serial (one call into C at a time per
database, applied to the classes above). A part imports those it calls that come after
it at its end: they import it.
"""
from __future__ import annotations

from ._base import (  # noqa: F401
    NOREF, NOREF32, FAST_API, _MISSING, TEXT_MAX, P2_OK, P2_END, P2_NOTFOUND, P2_EDUP,
    P2_ERANGE, P2_ENOMEM, P2_EIO, P2_EFORMAT, P2_EMISMATCH, P2_EINVAL, P2_ECLOSED,
    P2_EBUSY, P2_ECONFLICT)
from .errors import (  # noqa: F401
    P2Error, NotFoundError, DuplicateError, RangeError, ClosedError, FormatError,
    MismatchError, BusyError, ConflictError, _ERRORS, error_for)
from .fields import (  # noqa: F401
    _INT_BITS, _encode, _Field, _index, _int_ref, _arg)
from .records import (  # noqa: F401
    Record, _set_values, _set_ref, _set_origin, _new_record, _STRUCT_CODES, _Layout,
    _Slow, _packer, _record_class)
from .spec import (  # noqa: F401
    _Spec, _close_handle, _cursor_method, bind)
from .database import (  # noqa: F401
    Database, _Transaction, Journalled)
from .containers import (  # noqa: F401
    _merged_fields, Container, _NUMPY_CODES, _numpy, _install_c_paths, _RECORD_SLOTS,
    _install_fast_paths, _find_str, _UpsertContainer, _CONTAINER_CLASSES,
    _container_class, _PurgeableContainer)
from .cursors import (  # noqa: F401
    BATCH, Cursor)
from .relationships import (  # noqa: F401
    _CONTAINER_ATTRS, role_expression, _attribute_name, Role, ManyRole, OneRole, Links)
from ._serial import (  # noqa: F401
    _serialised)

__all__ = ["P2Error", "NotFoundError", "DuplicateError", "RangeError", "ClosedError",
           "FormatError", "MismatchError", "BusyError", "Record", "Database", "Container",
           "Cursor", "Role", "ManyRole", "OneRole", "Links", "bind", "NOREF", "Journalled"]

# its classes name the package as their module, as when it was one file (reprs, messages)
for _v in list(globals().values()):
    if isinstance(_v, type) and _v.__module__.startswith(__name__ + "."):
        _v.__module__ = __name__
del _v
