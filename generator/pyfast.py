"""The fast paths of the Python binding: a small CPython extension module compiled into a
spec's CFFI extension (beside pybind.helpers_c), so that insert, get, find, update,
delete, update_by, delete_by, the calls of relationship roles (role(owner), refs, count,
add, remove; ref, get, set), the next() of cursors and relationship walks and the
building of their batches of Records cross from Python into C once, with no Python code
in between.

`fast_c(checked)` is the C text: the spec-independent part templates/pyfast.c (a reentrant lock
type, the container type, conversions between Python values and C record bytes) and,
per container (a record of at most TEXTS_MAX text fields) a table of its fields (offset,
size, kind, range, which are keys; a text field's get/set functions) and adapters with one
signature to its generated functions, and
per role of a relationship between two such containers a table of adapters to its
functions (ManyRole / OneRole, bound to it by bind_role; a walk is a RoleWalk holding the
role's C iterator). The cdef'd
`p2py__fast_init()` (CFFI releases the GIL around it; it takes it back) creates the module
`_<prefix>_fast` and registers it in sys.modules; p2gen.runtime.pyapi uses it when it is
there and keeps its Python paths otherwise (PyPy, an extension built before).

Safety, as the Python paths have it:
- Threads: the database's lock is the module's `Lock` (reentrant, like threading.RLock,
  which the Python paths use with `with`). A C path takes it without blocking (its own
  thread may already hold it); if another thread holds it, the call goes the Python way,
  which waits. Every call into the generated C happens with the lock held.
- Close: the lock holds the database handle; Database.close() (holding the lock) clears
  it first, and a C path that finds no handle goes the Python way (ClosedError).
- Re-entry: a C path converts its arguments before it takes the lock and runs no Python
  code of the user's while it holds it (exact types only: a subclass, whose __index__ or
  encode is user code, goes the Python way, which converts with operator.index). User
  code the collector runs meanwhile (a __del__) finds the lock held by its own thread:
  Database.close() and abort() then refuse (BusyError), so the handle a C path holds is
  never freed under it.
- Values: only exact ints in the field's range, exact floats and ints for float fields,
  str (UTF-8) or bytes within char[N] without NUL, None or an int for ref fields, an
  exact str with a UTF-8 spelling or exact bytes for text fields are taken in C; anything else (a bool, a Record for a ref field, a value out of range, an
  unknown field, a positional record) goes the Python way, which raises the precise error.
- Journal: a write first calls the journal guard in C; if it fails, the Python way
  raises its error.
- Records are made as the Python paths make them: the record class's three slots
  (`_values`, `_ref`, `_origin`) written at the offsets of their member descriptors.
  A text is read with the lock held (the cursors' `rows` refuse to run without it) and
  decoded where the generated get_<text> points, before any other call: nothing
  between can set or free it.
- Texts written: insert writes the element, then its texts (those given, and the spec's
  non-empty defaults), deleting the element if one fails; update / update_by copy the
  old texts first and put them and the old fields back if writing a new one fails (as
  Container.insert / update do).
- Elements: an owner, member or updated element is an int reference or a Record of the
  container whose key fields its element still has (Container._locate's check);
  anything else goes the Python way.
- Versions: `_version` and `_links` of the container bumped on every change (C fields
  of its Container here, which the Python Container's properties read and write).
"""
from __future__ import annotations

import functools
import os

from .ir import CheckedSpec

API = 6            # what p2gen.runtime.pyapi expects of the module (FAST_API there)
STACK_MAX = 4096   # larger records keep the Python paths (the C paths copy records on the stack)
ITER_MAX = 256     # a role's iterator is kept in its walk object up to this size
TEXTS_MAX = 8      # records with more text fields keep the Python paths (a C path keeps
                   # the values given for its texts on the stack)

# The spec-independent C (templates/pyfast.c): a C file of its own, compiled and warned on
# by itself in the tests (tests/bindings/test_python_fast.py), the spec's part inserted at its fence.
FAST_C_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "templates", "pyfast.c")
FENCE = "/* ==== p2gen: the spec's tables and adapters go here (pyfast.fast_c) ==== */\n"


@functools.lru_cache(maxsize=1)
def fast_c_parts() -> tuple:
    """(before, after) the fence of templates/pyfast.c."""
    with open(FAST_C_FILE, encoding="utf-8") as f:
        text = f.read()
    before, sep, after = text.partition(FENCE)
    assert sep and FENCE not in after, f"{FAST_C_FILE}: one fence line expected"
    return before, after


def _kind(t) -> str:
    if t.kind == "text":
        return "P2F_TEXT"
    if t.target is not None:
        return "P2F_REF"
    if t.kind == "int":
        return "P2F_INT" if t.signed else "P2F_UINT"
    return "P2F_FLOAT" if t.kind == "float" else "P2F_CHAR"


def fast_c(checked: CheckedSpec) -> str:
    """The C of the fast module of a spec (compiled in its CFFI extension, after the
    generated header and pybind.helpers_c): templates/pyfast.c with the spec's tables
    (templates/pyfast_tables.c.j2) at its fence."""
    from .render import jinja_env
    p = checked.prefix
    # a mem layer's write guard (the journal's: its page-fault handler back on top), called
    # before every write of the fast path
    guards = sorted({li.layer.write_guard for f in getattr(checked, "files", ())
                     for li in getattr(f, "mems", ()) if getattr(li.layer, "write_guard", None)})
    containers = []
    for info in checked.containers:
        if len(info.text_fields) > TEXTS_MAX:
            continue
        R = f"{p}_{info.record.name}"
        names = [f.name for f in info.record.fields]
        fields = []
        for f in info.record.fields:
            t = f.type
            lo = t.min_value if t.kind == "int" and t.target is None else 0
            hi = t.max_value if t.kind == "int" else 0
            text = t.kind == "text"
            fields.append({"name": f.name, "kind": _kind(t), "hi": hi,
                           "lo": "INT64_MIN" if lo == -(1 << 63) else f"{lo}LL",
                           "tget": f"{info.p}_get_{f.name}" if text else None,
                           "tset": f"{info.p}_set_{f.name}" if text else None})
        keys = info.field_keys()
        k = None
        if len(keys) == 1:
            kf = info.record.field(keys[0])
            if kf.type.kind == "int" and kf.type.target is None:
                k = keys[0]
        cp = info.p
        containers.append({
            "name": info.name, "cp": cp, "R": R, "fields": fields, "k": k,
            "key": names.index(k) if k else -1,
            "fns": ([f"p2f__{cp}_find", f"p2f__{cp}_upd", f"p2f__{cp}_del"] if k
                    else ["NULL", "NULL", "NULL"]),
            "nkeys": len(keys), "kidx": ", ".join(str(names.index(x)) for x in keys) or "-1",
            "ntexts": len(info.text_fields)})
    roles = []
    for rel in checked.relationships:
        for role in rel.roles:
            if (len(role.container.text_fields) > TEXTS_MAX
                    or len(role.partner.container.text_fields) > TEXTS_MAX):
                continue
            roles.append({"container": role.container.name, "name": role.name, "rp": role.p,
                          "many": role.many,
                          "setter": f"{role.container.p}_set_{role.name}",
                          # an ordered role: its bounds' C type and how a number becomes one
                          "kt": role.order.type.ctype if role.order is not None else None,
                          "kconv": (None if role.order is None else
                                    "d" if role.order.type.kind == "float" else
                                    "s" if role.order.type.signed else "u"),
                          "kmin": role.order.type.min_value if role.order is not None
                          and role.order.type.kind == "int" else 0,
                          "kmax": role.order.type.max_value if role.order is not None
                          and role.order.type.kind == "int" else 0,
                          "PR": f"{p}_{role.partner.container.record.name}"})
    tables = jinja_env().get_template("pyfast_tables.c.j2").render(
        p=p, guards=guards, containers=containers, roles=roles)
    before, after = fast_c_parts()
    return "\n".join([f'#define P2F_MODULE "_{p}_fast"', f"#define P2F_STACK_MAX {STACK_MAX}",
                      f"#define P2F_API {API}", f"#define P2F_TEXTS_MAX {TEXTS_MAX}",
                      f"#define P2F_ITER_MAX {ITER_MAX}   /* larger role iterators keep the "
                      f"Python walks */", before, tables.rstrip("\n"), after])
