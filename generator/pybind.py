"""`p2gen build --python`: a CFFI extension (API mode) per spec, and the module users import.

For a spec with prefix P, `build_python` writes into the output directory

    _P_cffi.c, _P_cffi.*.so   the compiled extension: the generated P.c (included by P.h
                              with P_INLINE, as C users build it, so the binding's
                              helpers and fast paths inline the layers) and p2_runtime.c,
                              linked with CFFI glue (`from _P_cffi import ffi, lib`)
    P.py                      `import P`: binds the extension to the generic Pythonic
                              layer of p2gen.runtime.pyapi and holds the spec's metadata

and, with --wheel (package.py), P/__init__.py: the same module inside a package that holds
the extension and a copy of p2gen.runtime's Python support, importing both from there.

The CFFI declarations (cdef) are the declarations of the generated P.h as the table of
generated functions records them (cfuncs.py: every `cfunc` and `cdecl` block of the
header, in its order; header_api: which struct members stay hidden), after the return
codes (p2gen.runtime.codes) and the public API region of the hand-written p2_runtime.h
(runtime_api: p2_strerror, p2_text; public_api: its fences, what is stripped), and before
those of the binding's own C helpers (helpers_c). A declaration the header template makes
through the table reaches Python without a change here. Same spec, same bytes.
"""
from __future__ import annotations

import hashlib
import os
import pprint
import re
import shlex
import sysconfig
from typing import Optional

from .build import RUNTIME_DIR, Generated, cc_command, write_if_changed
from .toolchain import _compiler_identity, runtime_object, write_atomic
from .ir import CheckedSpec, ContainerInfo, CursorInfo
from .errors import BuildError
from .model import FieldType, expr_text
from .render import header_declarations, metadata
from .runtime.codes import CODES
from .pyfast import fast_c
from .runtime.pyapi import role_expression



def module_name(prefix: str) -> str:
    """Name of the compiled CFFI extension of a spec."""
    return f"_{prefix}_cffi"


def _arg(t: FieldType, name: str, p: str = "") -> str:
    if t.kind == "char":
        return f"const char *{name}"
    if t.target is not None and p:
        return f"{p}_ref {name}"
    return f"{t.ctype} {name}"


def _role_c(role) -> dict:
    """The C names of one role's functions."""
    if role.many:
        c = {"iter": f"{role.p}_iter", "open": f"{role.p}_open", "next": f"{role.p}_next",
             "count": f"{role.p}_count", "add": f"{role.p}_add",
             "remove": f"{role.p}_remove"}
        if role.order is not None:   # an ordered role: walks from bounds, the merge
            c.update(open_range=f"{role.p}_open_range", top=f"{role.p}_top")
        return c
    return {"get": role.p, "set": f"{role.container.p}_set_{role.name}"}


def _cursor_type(cur: CursorInfo) -> str:
    return f"{cur.p}_cursor"


def _public_cursors(info: ContainerInfo) -> list:
    """The cursors the header declares for a container, in header order (finds are private)."""
    return [k for k in info.cursors if k.synthetic != "find"]


# The fences of the public API region in p2_runtime.h (and, for the reader, in the
# generated header: templates/spec.h.j2).
API_BEGIN = "/* p2gen: public API begin."
API_END = "/* p2gen: public API end */"

_COMMENT = re.compile(r"^[ \t]*/\*.*?\*/[ \t]*\n|/\*.*?\*/", re.S | re.M)  # whole lines first
_DEFINE = re.compile(r"#\s*define\s+(\w+)(\(?)")
_STRUCT = re.compile(r"\bstruct\s+(\w+)\s*\{([^{}]*)\}")
_MEMBER_NAME = re.compile(r"(\w+)\s*(?:\[[^\]]*\]\s*)*$")


def header_api(declarations: list) -> str:
    """The declarations of a generated header, as CFFI takes them: the table's entries
    (cfuncs.CFunction, render.header_declarations) in header order, each as its `api`
    text (no comment, no storage class; a constant macro as `#define NAME ...`, its value
    read by CFFI from the compiled header), a struct's private members hidden
    (_partial_struct), a blank line where the header groups them."""
    out: list = []
    for e in declarations:
        if not e.public:
            continue
        if e.spaced and out:
            out.append("")
        out.append(_STRUCT.sub(_partial_struct, e.api) if e.kind == "type" else e.api)
    return "\n".join(out) + "\n"


def public_api(prefix: str, header: str) -> str:
    """The declarations of the public API region of a hand-written header (p2_runtime.h),
    as CFFI takes them.

    The region is what lies between the header's "public API begin/end" fences. Comments
    go; so does the storage class <PREFIX>_API; a constant macro
    becomes `#define NAME ...` (CFFI reads its value from the compiled header), a
    function-like one is dropped; a #line directive (--line-directives) goes; any other
    preprocessor line is refused, since it would make the declarations depend on
    conditions CFFI cannot see. A struct's members whose
    names begin with `_` are private to the C side (cursor and iterator state): they are
    replaced by `...;`, which leaves CFFI to take that struct's size from the compiler.
    Raises BuildError when the fences are missing or something else cannot be taken."""
    try:
        head = header.index(API_BEGIN)
        tail = header.index(API_END, head)
    except ValueError:
        raise BuildError(f"{prefix}.h has no public API region ({API_BEGIN!r} ... "
                         f"{API_END!r}): the header and p2gen are out of step") from None
    region = _COMMENT.sub("", header[head:tail])
    api = f"{prefix.upper()}_API"
    out = []
    for line in region.splitlines():
        line = line.rstrip()
        if re.match(r"#\s*line\b", line):      # `p2gen build --line-directives`
            continue
        if line.startswith("#"):
            m = _DEFINE.match(line)
            if m is None:
                raise BuildError(f"{prefix}.h: the public API region holds {line!r}; "
                                 "only constant macros can be declared to CFFI")
            if not m.group(2):
                out.append(f"#define {m.group(1)} ...")
            continue
        if line.startswith(api + " "):
            line = line[len(api) + 1:]
        if line or (out and out[-1]):
            out.append(line)
    return _STRUCT.sub(_partial_struct, "\n".join(out).strip() + "\n")


def _partial_struct(m: re.Match) -> str:
    """A struct body without its private (`_`-named) members, `...;` in their place."""
    public, private = [], False
    for decl in m.group(2).split(";"):
        if not decl.strip():
            continue
        # a declarator the pattern does not read (a function pointer) counts as public
        names = [n.group(1) if (n := _MEMBER_NAME.search(d.strip())) else ""
                 for d in decl.split(",")]
        if all(n.startswith("_") for n in names):
            private = True
        elif any(n.startswith("_") for n in names):
            raise BuildError(f"struct {m.group(1)} declares public and private members "
                             f"in one line ({decl.strip()!r})")
        else:
            public.append(f"    {decl.strip()};")
    if private:
        public.append("    ...;")
    return f"struct {m.group(1)} {{\n" + "\n".join(public) + "\n}"


# The runtime header, whose public API region (p2_strerror, p2_text) every binding declares.
RUNTIME_HEADER = os.path.join(RUNTIME_DIR, "p2_runtime.h")


def runtime_api() -> str:
    """The declarations of p2_runtime.h's public API region, as CFFI takes them (the same
    fences and rules as a generated header's: public_api)."""
    with open(RUNTIME_HEADER, encoding="utf-8") as f:
        return public_api("p2_runtime", f.read())


def cdef(checked: CheckedSpec, declarations: Optional[list] = None) -> str:
    """The CFFI declarations of a spec: the runtime's return codes and its public API
    region (runtime_api: p2_strerror, p2_text), the declarations of the generated header
    as the table of generated functions records them (header_api over `declarations`,
    Generated.declarations: the emit pass's; rendered again when not given) and the
    binding's own helpers (helpers_c)."""
    if declarations is None:
        declarations = header_declarations(checked)
    out = ["/* p2_runtime.h: return codes */"]
    out += [f"#define {c.name} {c.value}" for c in CODES]
    out += ["/* p2_runtime.h: the public API */", runtime_api(),
            f"/* {checked.prefix}.h: the public API */",
            header_api(declarations),
            "/* the binding's own helpers (helpers_c): one crossing per find, batches */",
            helpers_c(checked, declare=True),
            "/* the fast module (pyfast.fast_c): 0 when it is in sys.modules */",
            "int p2py__fast_init(void);", "uintptr_t p2py__fast_id(void);", ""]
    return "\n".join(out)


BATCH_MAX = 256   # rows a cursor fetches per crossing, at most


def helpers_c(checked: CheckedSpec, declare: bool = False) -> str:
    """C the CFFI module compiles beside the generated library (static: private to it):
    calls that cross from Python once where the public API takes several.

    p2py__<c>_findrec_<key>: find by key and copy the element out (find + get).
    p2py__<c>_updkey_<key>: find by key, overwrite the bytes of the fields given (mask),
        update; p2py__<c>_delkey_<key>: find by key, delete (update_by / delete_by).
    p2py__<cursor>_fetch: up to max rows of a cursor (next + get + ref per row) into
        recs/refs, and the cursor's state after each row into snaps (a cursor is plain data
        while its updates have moved nothing: the binding moves the cursor back to a row's
        snapshot before updating or deleting that row, then drops the rows after it).
    p2py__<role>_fetch: up to max partners of a many-role walk, references and records.
    p2py__<c>_copy: up to max elements of a container, in its walk's order (to_numpy).
    p2py__<c>_check_chars: the first of count records (*row) whose char field number
        *field (in record order among the char fields) holds a byte after its first NUL:
        a value with a NUL inside, which a C string cannot spell (insert_many checks a
        numpy array's rows in C before inserting any).
    Each returns the last code (P2_OK when max rows came, else P2_END or the error) and
    the number of rows in *n.
    """
    from .render import jinja_env
    p = checked.prefix
    containers = []
    for info in checked.containers:
        allc = info.all_cursor
        containers.append({
            "cp": info.p, "R": f"{p}_{info.record.name}", "all": allc.p,
            "all_type": _cursor_type(allc),
            "chars": [{"name": f.name, "length": f.type.length}
                      for f in info.record.fields if f.type.kind == "char"],
            # a composite key's find: called from Python itself
            "key_fields": [{"name": key, "arg": _arg(info.record.field(key).type, "key", p)}
                     for key in info.field_keys()],
            "cursors": [{"p": k.p, "t": _cursor_type(k)} for k in _public_cursors(info)]})
    roles = []
    for rel in checked.relationships:
        for role in rel.roles:
            if role.many:
                c = _role_c(role)
                roles.append({"open": c["open"], "iter": c["iter"], "next": c["next"],
                              "PR": f"{p}_{role.partner.container.record.name}",
                              "partner": role.partner.container.p})
    text = jinja_env().get_template("pybind_helpers.c.j2").render(
        p=p, declare=declare, containers=containers, roles=roles)
    return text[:-1] if text.endswith("\n") else text


def _field_desc(name: str, t: FieldType, default=None) -> dict:
    d = {"name": name, "kind": t.kind, "type": t.name, "length": t.length, "ctype": t.ctype}
    if t.target is not None:    # ref <container>: an int (u64) naming an element there
        d["target"] = t.target
    if default is not None:     # `name: type = value` (the checker matched it to the type)
        d["default"] = None if default.kind == "name" else (
            float(default.value) if t.kind == "float" else default.value)
    return d


def _primary_key(info) -> str:
    """The key `container[key]`, `key in container` and `get(key)` look elements up by:
    that of the outermost index with `unique = true`, else the first key of the equation
    (a field's name or a composite key's); the first declared find (`find c by k;`) before
    the equation's, so that the key does not depend on the equation."""
    u = info.unique_index
    if u is not None and u.key_field_obj is not None:
        return u.key_field_obj.name
    if info.declared_finds:
        return info.declared_finds[0][0].name
    return info.keys()[0].name


def _role_desc(role) -> dict:
    return {"container": role.container.name, "role": role.name, "many": role.many,
            "partner": {"container": role.partner.container.name,
                        "role": role.partner.name, "many": role.partner.many},
            "relationship": role.rel.name, "c": _role_c(role),
            "order": None if role.order is None else {
                "field": role.order.name, "desc": role.descending,
                "ctype": role.order.type.ctype}}


def binding_metadata(checked: CheckedSpec) -> dict:
    """render.metadata plus the C names the Python layer calls and the cursors' predicates."""
    meta = metadata(checked)
    meta["module"] = module_name(checked.prefix)
    # Field and parameter descriptions are rebuilt here: render.metadata spells them
    # {"name": field, **ftype} and the type's own "name" key overwrites the field's.
    meta["records"] = {r.name: [_field_desc(f.name, f.type, f.default) for f in r.fields]
                       for r in checked.records}
    for c, info in zip(meta["containers"], checked.containers):
        c["c"] = {"prefix": info.p, "all": info.all_cursor.p,
                  "all_cursor": _cursor_type(info.all_cursor),
                  "text": {f.name: {"get": f"{info.p}_get_{f.name}",
                                    "set": f"{info.p}_set_{f.name}"}
                           for f in info.text_fields}}
        c["texts"] = [f.name for f in info.text_fields]
        if info.keys():
            c["key"] = _primary_key(info)
        c["refs"] = {f.name: f.type.target for f in info.ref_fields}
        c["roles"] = [_role_desc(r) for r in info.roles]
    for k, cur in zip(meta["cursors"], checked.cursors):
        k["params"] = [_field_desc(n, t) for n, t in cur.params]
        k["c"] = {"prefix": cur.p, "cursor": _cursor_type(cur)}
        k["where"] = expr_text(cur.where) if cur.where is not None else None
    meta["relationships"] = [{
        "name": rel.name, "kind": rel.kind, "layer": rel.layer.name, "text": rel.text(),
        "roles": [_role_desc(r) for r in rel.roles],
    } for rel in checked.relationships]
    return meta


# The wheel's private copy of p2gen.runtime's Python support, inside the package (package.py).
SUPPORT_PACKAGE = "_runtime"
# What the generated module imports of p2gen's Python runtime: copied into the wheel's
# <prefix>/_runtime and beside a flat module as _<prefix>_runtime/.
RUNTIME_SUPPORT = (*sorted(f"pyapi/{n}" for n in os.listdir(os.path.join(RUNTIME_DIR, "pyapi"))
                          if n.endswith(".py")),      # the package's parts, as they are
                   "codes.py", "p2_runtime.h")


def flat_support_package(prefix: str) -> str:
    """The package beside a flat `<prefix>.py` holding the copy of p2gen's run-time support
    it imports where p2gen is not installed."""
    return f"_{prefix}_runtime"


def write_flat_support(out_dir: str, prefix: str) -> None:
    """Copy p2gen.runtime's Python support into out_dir/_<prefix>_runtime/."""
    d = os.path.join(out_dir, flat_support_package(prefix))
    os.makedirs(d, exist_ok=True)
    write_if_changed(os.path.join(d, "__init__.py"),
                     f'"""p2gen\'s Python run-time support for {prefix}, copied from '
                     f'p2gen.runtime by p2gen build --python: what {prefix}.py imports where '
                     f'p2gen is not installed."""\n')
    for name in RUNTIME_SUPPORT:
        with open(os.path.join(RUNTIME_DIR, name), encoding="utf-8") as f:
            text = f.read()
        os.makedirs(os.path.dirname(os.path.join(d, name)), exist_ok=True)   # pyapi/
        write_if_changed(os.path.join(d, name), text)


def python_module(gen: Generated, meta: dict, package: bool = False) -> str:
    """The text of <prefix>.py; with `package`, that of <prefix>/__init__.py in the wheel
    (package.py), which imports its extension and its run-time support (a copy of
    p2gen.runtime) from inside the package: no p2gen at run time."""
    p = gen.prefix
    mod = module_name(p)
    support = f"{p}.{SUPPORT_PACKAGE}" if package else "p2gen.runtime"
    lines = [
        f'"""Python bindings of the p2gen data managers `{p}` (generated by p2gen; do not edit).',
        "",
        f"    import {p}",
        f"    with {p}.open(dir) as db:     # dir: where persistent files live (None: cwd)",
    ]
    for c in meta["containers"]:
        lines.append(f"        db.{c['name']}     # container of {c['record']} = {c['equation']}")
    for k in meta["cursors"]:
        params = ", ".join(f"{q['name']}=..." for q in k["params"])
        lines.append(f"        db.{k['name']}({params})     # cursor on {k['container']}")
    for r in meta.get("relationships", []):
        lines.append(f"        # {r['text']}")
        for ro in r["roles"]:
            what = (f"iterates {ro['partner']['container']}; .add .remove .count"
                    if ro["many"] else
                    f"-> {ro['partner']['container']} record or None; .set")
            lines.append(f"        {role_expression(ro['container'], ro['role'])}(x)     # {what}")
    lines += [
        "",
        f"See {support}.pyapi for the API (Database, Container, Cursor, Record, errors).",
        '"""',
    ]
    if package:     # the wheel: pip installs the package whole
        lines += [f"from .{mod} import ffi as _ffi, lib as _lib"]
    else:
        lines += [
            "import os as _os",
            "",
            "try:",
            f"    from {mod} import ffi as _ffi, lib as _lib",
            "except ImportError:  # loaded by file name, its directory not on sys.path",
            "    import importlib.machinery as _im",
            "    import importlib.util as _iu",
            "    import sys as _sys",
            "    _here = _os.path.dirname(_os.path.abspath(__file__))",
            "    _ext = None",
            "    for _suffix in _im.EXTENSION_SUFFIXES:",
            f"        _cand = _os.path.join(_here, {mod!r} + _suffix)",
            "        if _os.path.exists(_cand):",
            "            _ext = _cand",
            "            break",
            "    if _ext is None:",
            "        raise",
            f"    _spec = _iu.spec_from_file_location({mod!r}, _ext)",
            "    _m = _iu.module_from_spec(_spec)",
            "    _spec.loader.exec_module(_m)",
            f"    _sys.modules[{mod!r}] = _m",
            "    _ffi, _lib = _m.ffi, _m.lib",
        ]
    names = ("(P2Error, NotFoundError, DuplicateError, RangeError,  # noqa: F401\n"
             "                         ClosedError, FormatError, MismatchError, BusyError, bind)")
    if package:
        lines += ["", f"from .{SUPPORT_PACKAGE}.pyapi import {names}"]
    else:   # p2gen's run-time support, or without p2gen the copy written beside the module
        rt = flat_support_package(p)
        lines += [
            "",
            "try:",
            f"    from p2gen.runtime.pyapi import {names}",
            "except ImportError:  # no p2gen here: its run-time support copied beside this module",
            "    import importlib.util as _iu",
            "    import sys as _sys",
            f"    if {rt!r} not in _sys.modules:",
            f"        _rt = _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), {rt!r})",
            f"        _rspec = _iu.spec_from_file_location({rt!r}, _os.path.join(_rt, '__init__.py'),",
            "                                             submodule_search_locations=[_rt])",
            "        _rmod = _iu.module_from_spec(_rspec)",
            f"        _sys.modules[{rt!r}] = _rmod",
            "        _rspec.loader.exec_module(_rmod)",
            f"    from {rt}.pyapi import {names}",
        ]
    lines += [
        "",
        "METADATA = " + pprint.pformat(meta, indent=1, width=96, sort_dicts=False),
        "",
        "_api = bind(_ffi, _lib, METADATA)",
        "open = _api.open",
        "Database = _api.Database",
        "records = _api.records  # record name -> Record class",
        "ffi, lib = _ffi, _lib",
        "",
    ]
    return "\n".join(lines)


def _extension_toolchain(cc: Optional[str], extra_cflags) -> tuple:
    """The compiler command and flags distutils compiles an extension's sources with (its
    compiler, Python's CFLAGS and CCSHARED, those of the environment, -std=c11 and
    `extra_cflags`)."""
    compiler = cc or os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    flags = []
    for var in ("CFLAGS", "CCSHARED"):
        flags += shlex.split(sysconfig.get_config_var(var) or "")
    for var in ("CFLAGS", "CPPFLAGS"):       # distutils adds these from the environment
        flags += shlex.split(os.environ.get(var, ""))
    return cc_command(compiler), flags + ["-std=c11", *extra_cflags]


def _runtime_for_extension(cc: Optional[str], extra_cflags) -> str:
    """The runtime's object for an extension: compiled as distutils would compile it as a
    source of the extension, but once per compiler and flags (toolchain.runtime_object),
    not at every module's build."""
    return runtime_object(*_extension_toolchain(cc, extra_cflags))


def _extension_key(out_dir: str, c_file: str, prefix: str, runtime_obj: str,
                   cc: Optional[str], extra_cflags) -> str:
    """What the compiled extension is made of, hashed: the CFFI C source, the generated
    header and code it includes and the runtime's header, the compiler and its flags (the
    link's too), the runtime object (its path is keyed by its text) and the extension
    suffix. The same key, the same module: build_python then leaves it as it is."""
    import cffi
    cc_cmd, flags = _extension_toolchain(cc, extra_cflags)
    parts = [cffi.__version__, _compiler_identity(tuple(cc_cmd)), shlex.join(flags),
             sysconfig.get_config_var("LDSHARED") or "", os.environ.get("LDFLAGS", ""),
             sysconfig.get_config_var("EXT_SUFFIX") or "", runtime_obj]
    for name in (c_file, f"{prefix}.h", f"{prefix}.c", "p2_runtime.h"):
        try:
            with open(os.path.join(out_dir, name), "rb") as f:
                parts += [name, hashlib.sha256(f.read()).hexdigest()]
        except FileNotFoundError:
            parts += [name, "-"]
    return hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()


def build_python(gen: Generated, cc: Optional[str] = None, extra_cflags=()) -> str:
    """Compile the CFFI extension `_<prefix>_cffi` and write `<prefix>.py` in gen.out_dir.

    `cc` (a command, possibly with options) replaces the C compiler for this build.
    Returns the path of `<prefix>.py`. Raises BuildError when CFFI or the compiler fails.
    """
    try:
        import cffi
    except ImportError as e:  # pragma: no cover
        raise BuildError(f"--python needs the cffi package: {e}") from e
    if cc:
        cc_command(cc)            # a compiler that cannot be run: one line, not distutils' story
    p = gen.prefix
    out_dir = os.path.abspath(gen.out_dir)
    mod = module_name(p)
    ffi = cffi.FFI()
    decls = cdef(gen.checked, gen.declarations)
    try:
        ffi.cdef(decls)
    except Exception as e:  # cffi.CDefError and friends: a p2gen bug
        raise BuildError(f"CFFI rejected the declarations of {p}: {e}") from e
    # Sources are relative: CFFI compiles from inside tmpdir, and object files then land
    # next to them rather than under a copy of the absolute path.
    # Built against CPython's full API (not the limited one CFFI picks by default): the fast
    # module's calls and record slots need it; the extension is per machine anyway.
    # The generated code is compiled into the module's own file with <PREFIX>_INLINE, as
    # the README tells C users to build it: the helpers' find + copy, the fast paths'
    # adapters and the generated layers flatten into one another (no call per layer).
    runtime_obj = _runtime_for_extension(cc, extra_cflags)
    ffi.set_source(mod, f'#define {p.upper()}_INLINE\n#include "{p}.h"\n\n'
                   + helpers_c(gen.checked) + "\n\n" + fast_c(gen.checked) + "\n",
                   extra_objects=[runtime_obj],
                   include_dirs=[out_dir],
                   define_macros=[("_CFFI_NO_LIMITED_API", None)],
                   extra_compile_args=["-std=c11", *extra_cflags])
    # CFFI's compile always compiles: a stamp beside the extension, holding the key of what
    # it was built from, lets an unchanged rebuild keep it (written after a good build only)
    c_file = os.path.join(out_dir, mod + ".c")
    ffi.emit_c_code(c_file)                 # rewritten only if its text changed
    key = _extension_key(out_dir, c_file, p, runtime_obj, cc, extra_cflags)
    ext = os.path.join(out_dir, mod + (sysconfig.get_config_var("EXT_SUFFIX") or ".so"))
    stamp = ext + ".stamp"
    if not (os.path.isfile(ext) and _read_stamp(stamp) == key):
        if os.path.exists(stamp):           # a failed build leaves no stamp to trust
            os.unlink(stamp)
        _compile_extension(ffi, out_dir, mod, cc)
        write_atomic(stamp, key + "\n")
    path = os.path.join(out_dir, f"{p}.py")
    write_flat_support(out_dir, p)
    write_if_changed(path, python_module(gen, binding_metadata(gen.checked)))
    return path


def _read_stamp(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().strip()
    except (OSError, UnicodeDecodeError):
        return ""


def _compile_extension(ffi, out_dir: str, mod: str, cc: Optional[str]) -> None:
    """CFFI's compile of the extension `mod` in out_dir, with $CC set to `cc` for it."""
    saved = os.environ.get("CC")
    if cc:
        os.environ["CC"] = cc
    try:
        ffi.compile(tmpdir=out_dir, verbose=False)
    except Exception as e:  # cffi.VerificationError (CompileError / LinkError)
        who = f" (CC={shlex.quote(cc)})" if cc else ""
        raise BuildError(f"building the Python extension {mod}{who} failed: {e}") from e
    finally:
        if saved is None:
            os.environ.pop("CC", None)
        else:
            os.environ["CC"] = saved
