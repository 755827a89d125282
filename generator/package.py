"""`p2gen build --python --wheel`: a generated Python module as a wheel that installs and
runs without p2gen.

The wheel holds one package, named after the spec's prefix:

    <prefix>/__init__.py        the module `p2gen build --python` writes (pybind.python_module),
                                importing its extension and its run-time support from inside
                                the package rather than from p2gen
    <prefix>/__init__.pyi       type stubs made from the spec (stubs): records and their
                                fields, containers with their keys, cursors, roles
    <prefix>/py.typed           PEP 561: type checkers read the stubs of the installed package
    <prefix>/_<prefix>_cffi.*   the CFFI extension build_python compiled (API mode)
    <prefix>/_runtime/          p2gen's Python run-time support, copied at build time from
                                p2gen.runtime (RUNTIME_SUPPORT: the pyapi package, codes.py and the
                                p2_runtime.h whose error table codes.py reads): runtime/ stays
                                the one source

At run time the package needs the standard library and CFFI's compiled backend
(`_cffi_backend`, which every API-mode extension imports), so the wheel requires cffi and
nothing else. The extension is built against CPython's full API for this interpreter and
machine: the wheel's tag is cp<XY>-cp<XY>-<platform> (no manylinux claim: it is not
audited), and pip installs it only where it runs.

The archive is the minimal correct wheel (PEP 427/491): METADATA, WHEEL and a RECORD with
every file's sha256 and size; entries in a fixed order with a fixed date
($SOURCE_DATE_EPOCH if set), so the same build gives the same bytes.
"""
from __future__ import annotations

import base64
import hashlib
import io
import keyword
import os
import re
import sys
import sysconfig
import time
import zipfile
from typing import Optional

from .errors import BuildError, EnvError, os_reason
from .ir import Generated
from .pybind import RUNTIME_SUPPORT, SUPPORT_PACKAGE, binding_metadata, module_name, python_module
from .render import header_declarations
from .runtime import pyapi
from .toolchain import RUNTIME_DIR, write_atomic

DEFAULT_VERSION = "0.1.0"

# PEP 440 public versions in their normal form (what pip shows back): 1, 1.2.3, 2.0rc1,
# 1.0.post2, 1.1.dev3
_VERSION = re.compile(r"(?:[1-9]\d*!)?(?:0|[1-9]\d*)(?:\.(?:0|[1-9]\d*))*"
                      r"(?:(?:a|b|rc)(?:0|[1-9]\d*))?(?:\.post(?:0|[1-9]\d*))?"
                      r"(?:\.dev(?:0|[1-9]\d*))?")
# a distribution name (PEP 508): letters, digits, . _ -, beginning and ending with a
# letter or digit
_DIST_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")


def check_version(version: str) -> str:
    """`version` if it is a PEP 440 version in normal form; BuildError otherwise."""
    if not _VERSION.fullmatch(version):
        raise BuildError(f"error: --wheel-version {version!r} is not a version pip takes "
                         f"in its normal form (PEP 440: e.g. 1.0, 2.3.1, 1.0rc1, 1.0.post1)")
    return version


def check_dist_name(prefix: str) -> str:
    """The distribution name of the wheel of `prefix`'s module; BuildError when a prefix
    (a C identifier) is not a distribution name: one beginning or ending with '_'."""
    if not _DIST_NAME.fullmatch(prefix):
        raise BuildError(f"error: --wheel: the prefix {prefix!r} names the package, and a "
                         f"package name begins and ends with a letter or digit: choose "
                         f"another with --prefix")
    return prefix


def wheel_tag() -> str:
    """python-abi-platform of the extension this interpreter builds (PEP 425)."""
    if sys.implementation.name != "cpython":
        raise BuildError(f"error: --wheel: the extension is built for CPython's API; this "
                         f"is {sys.implementation.name}")
    py = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    abi = py + ("t" if sysconfig.get_config_var("Py_GIL_DISABLED") else "")
    plat = re.sub(r"[^A-Za-z0-9_]", "_", sysconfig.get_platform())
    return f"{py}-{abi}-{plat}"


def extension_path(gen: Generated) -> str:
    """The compiled extension build_python wrote into the output directory."""
    path = os.path.join(gen.out_dir, module_name(gen.prefix) + sysconfig.get_config_var("EXT_SUFFIX"))
    if not os.path.isfile(path):
        raise BuildError(f"error: --wheel: {path} is missing: the Python extension was not built")
    return path


def journalled_api(prefix: str, declarations: list) -> bool:
    """Does the database have transactions: is <prefix>_commit a public function of the
    header's declarations (the table of generated functions: Generated.declarations,
    render.header_declarations), where the binding finds it?"""
    return any(e.public and e.kind == "function" and e.name == f"{prefix}_commit"
               for e in declarations)


def package_files(gen: Generated) -> dict:
    """{path in the wheel: bytes} of the package `<prefix>`, in the order they are written."""
    p = gen.prefix
    meta = binding_metadata(gen.checked)
    declarations = gen.declarations
    if declarations is None:        # a Generated made without the emit pass's table
        declarations = header_declarations(gen.checked)
    files = {f"{p}/__init__.py": python_module(gen, meta, package=True).encode("utf-8"),
             f"{p}/__init__.pyi": stubs(meta, journalled_api(p, declarations)).encode("utf-8"),
             f"{p}/py.typed": b""}
    ext = extension_path(gen)
    with open(ext, "rb") as f:
        files[f"{p}/{os.path.basename(ext)}"] = f.read()
    files[f"{p}/{SUPPORT_PACKAGE}/__init__.py"] = (
        f'"""p2gen\'s Python run-time support for {p}, copied from p2gen.runtime '
        f'(p2gen {_p2gen_version()}) by p2gen build --wheel."""\n').encode("utf-8")
    for name in RUNTIME_SUPPORT:
        with open(os.path.join(RUNTIME_DIR, name), "rb") as f:
            files[f"{p}/{SUPPORT_PACKAGE}/{name}"] = f.read()
    return files


def _p2gen_version() -> str:
    try:
        from importlib.metadata import version
        return version("p2gen")
    except Exception:            # not installed (run from a checkout's path)
        return "0"


def _cffi_requirement() -> str:
    """cffi, at least the version whose backend the extension was generated for."""
    try:
        import cffi
        return f"cffi>={cffi.__version__}"
    except ImportError:  # pragma: no cover -- build_python needs it first
        return "cffi"


def _record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def _zip_date() -> tuple:
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch and epoch.isdigit():
        t = time.gmtime(max(int(epoch), 315532800))   # zip dates begin in 1980
        return t[:6]
    return (1980, 1, 1, 0, 0, 0)


def wheel_bytes(gen: Generated, version: str) -> tuple:
    """(file name, bytes) of the wheel of gen's Python module."""
    name = check_dist_name(gen.prefix)
    check_version(version)
    tag = wheel_tag()
    files = package_files(gen)
    dist = f"{re.sub(r'[-_.]+', '_', name)}-{version}"
    info = f"{dist}.dist-info"
    spec = os.path.basename(gen.checked.spec.path)
    pyver = f"{sys.version_info[0]}.{sys.version_info[1]}"
    files[f"{info}/METADATA"] = (
        "Metadata-Version: 2.1\n"
        f"Name: {name}\n"
        f"Version: {version}\n"
        f"Summary: data managers generated by p2gen {_p2gen_version()} from {spec}\n"
        f"Requires-Python: =={pyver}.*\n"
        f"Requires-Dist: {_cffi_requirement()}\n").encode("utf-8")
    files[f"{info}/WHEEL"] = (
        "Wheel-Version: 1.0\n"
        f"Generator: p2gen {_p2gen_version()}\n"
        "Root-Is-Purelib: false\n"
        f"Tag: {tag}\n").encode("utf-8")
    record = [_record_line(path, data) for path, data in files.items()]
    record.append(f"{info}/RECORD,,")
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode("utf-8")
    buf = io.BytesIO()
    date = _zip_date()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in files.items():
            zi = zipfile.ZipInfo(path, date)
            executable = path.endswith((".so", ".pyd"))
            zi.external_attr = (0o100755 if executable else 0o100644) << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, data)
    return f"{dist}-{tag}.whl", buf.getvalue()


def build_wheel(gen: Generated, version: str = DEFAULT_VERSION,
                wheel_dir: Optional[str] = None) -> str:
    """Write the wheel of gen's Python module (build_python first) into wheel_dir (default:
    the output directory); returns its path."""
    fname, data = wheel_bytes(gen, version)
    wheel_dir = wheel_dir or gen.out_dir
    path = os.path.join(wheel_dir, fname)
    try:
        os.makedirs(wheel_dir, exist_ok=True)
        write_atomic(path, data)
    except OSError as e:
        raise EnvError(f"error: cannot write {path}: {os_reason(e, path)}") from None
    return path


# -- type stubs --------------------------------------------------------------------------

def _py_read(d: dict) -> str:
    """The Python type of a field's value as a Record holds it."""
    if d.get("target") is not None:
        return "int | None"
    return {"int": "int", "float": "float", "char": "str", "text": "str"}[d["kind"]]


def _py_write(d: dict, rec_of: dict) -> str:
    """The Python types a field (or a cursor parameter) takes."""
    if d.get("target") is not None:
        return f"{rec_of[d['target']]} | SupportsIndex | None"
    return {"int": "SupportsIndex", "float": "float",
            "char": "str | bytes", "text": "str | bytes"}[d["kind"]]


def _ident(name: str) -> bool:
    return name.isidentifier() and not keyword.iskeyword(name)


def _container_attrs(purges: bool, upserts: bool) -> set:
    """What a container has before its roles (a role named like one is reached by role())."""
    cls = pyapi._container_class(purges, upserts)
    return set(dir(cls)) | pyapi._CONTAINER_ATTRS | {"key", "composite_keys"}


def stubs(meta: dict, journalled: bool) -> str:
    """The text of <prefix>/__init__.pyi: what the module binds, typed from the spec."""
    p = meta["prefix"]
    rec_of = {c["name"]: f"_Record_{c['record']}" for c in meta["containers"]}
    cls_of = {c["name"]: f"_Container_{c['name']}" for c in meta["containers"]}
    out = [f"# Type stubs of the p2gen data managers `{p}` (generated by p2gen; do not edit).",
           "from os import PathLike",
           "from types import TracebackType",
           "from typing import Any, Generic, Mapping, Sequence, SupportsIndex, TypeVar, overload",
           "",
           f"from .{SUPPORT_PACKAGE}.pyapi import (P2Error as P2Error, NotFoundError as NotFoundError,",
           "    DuplicateError as DuplicateError, RangeError as RangeError, ClosedError as ClosedError,",
           "    FormatError as FormatError, MismatchError as MismatchError, BusyError as BusyError)",
           "",
           "_T = TypeVar('_T')",
           "_R = TypeVar('_R')",
           "",
           "class _Cursor(Generic[_R]):",
           "    def __iter__(self) -> _Cursor[_R]: ...",
           "    def __next__(self) -> _R: ...",
           "    def current(self) -> _R | None: ...",
           "    def update(self, /, **fields: Any) -> _R: ...",
           "    def delete(self) -> None: ...",
           "    def close(self) -> None: ...",
           "    def to_numpy(self) -> Any: ...",
           "    def __enter__(self) -> _Cursor[_R]: ...",
           "    def __exit__(self, *exc: object) -> None: ...",
           "",
           "class _Links(Generic[_R]):",
           "    def __iter__(self) -> _Links[_R]: ...",
           "    def __next__(self) -> _R: ...",
           ""]
    records_done = set()
    for rname, fields in meta["records"].items():
        if rname in records_done:
            continue
        records_done.add(rname)
        out.append(f"class _Record_{rname}:")
        out.append(f"    \"\"\"record {rname} (an immutable copy of one element)\"\"\"")
        for d in fields:
            n = d["name"]
            if _ident(n) and (n == "ref" or not hasattr(pyapi.Record, n)):
                out += ["    @property", f"    def {n}(self) -> {_py_read(d)}: ..."]
        if not any(d["name"] == "ref" for d in fields):
            out += ["    @property", "    def ref(self) -> int | None: ..."]
        out += ["    @property", "    def _ref(self) -> int | None: ...",
                "    _fields: tuple[str, ...]",
                "    def _asdict(self) -> dict[str, Any]: ...", ""]
    for c in meta["containers"]:
        out += _container_stub(c, meta, rec_of, cls_of)
    base = "Journalled" if journalled else "Database"
    taken = set(dir(getattr(pyapi, base))) | {"dir"}
    out += ["class Database:",
            f"    \"\"\"An open database of {p}: every container of the spec.\"\"\"",
            "    dir: str | PathLike[str] | None",
            "    @property",
            "    def closed(self) -> bool: ...",
            "    @property",
            "    def containers(self) -> dict[str, Any]: ...",
            "    @property",
            "    def relationships(self) -> dict[str, Any]: ...",
            "    def close(self) -> None: ...",
            "    def sync(self) -> None: ...",
            "    def verify(self) -> list[str]: ...",
            "    def container(self, name: str) -> Any: ...",
            "    def cursor(self, name: str, /, *args: Any, **params: Any) -> _Cursor[Any]: ...",
            "    def __enter__(self) -> Database: ...",
            "    def __exit__(self, exc_type: type[BaseException] | None, "
            "exc: BaseException | None, tb: TracebackType | None) -> None: ..."]
    if journalled:
        out += ["    def transaction(self) -> _Transaction: ...",
                "    def begin(self) -> None: ...",
                "    def commit(self) -> None: ...",
                "    def abort(self) -> None: ..."]
    for c in meta["containers"]:
        if c["name"] not in taken and _ident(c["name"]):
            out += ["    @property", f"    def {c['name']}(self) -> {cls_of[c['name']]}: ..."]
    for k in meta["cursors"]:
        n = k["name"]
        if n in taken or n in cls_of or not _ident(n):
            continue
        r = rec_of[k["container"]]
        if all(_ident(q["name"]) for q in k["params"]):
            params = "".join(f", {q['name']}: {_py_write(q, rec_of)}" for q in k["params"])
        else:
            params = ", *args: Any, **params: Any"
        out.append(f"    def {n}(self{params}) -> _Cursor[{r}]: ...")
    out.append("")
    if journalled:
        out += ["class _Transaction:",
                "    def __enter__(self) -> Database: ...",
                "    def __exit__(self, exc_type: type[BaseException] | None, "
                "exc: BaseException | None, tb: TracebackType | None) -> None: ...", ""]
    out += ["def open(dir: str | PathLike[str] | None = None) -> Database: ...",
            "",
            "records: dict[str, type]",
            "METADATA: dict[str, Any]",
            "ffi: Any",
            "lib: Any",
            ""]
    return "\n".join(out)


def _container_stub(c: dict, meta: dict, rec_of: dict, cls_of: dict) -> list:
    name, R = c["name"], rec_of[c["name"]]
    fields = meta["records"][c["record"]]
    fd = {d["name"]: d for d in fields}
    typed = all(_ident(d["name"]) for d in fields)
    comp = c.get("composite_keys", {})
    # the key of c[key], get, `in`, del and find(value): a field's value, or a tuple
    key = c.get("key")
    if key in comp:
        key_t = "tuple[" + ", ".join(_py_write(fd[f], rec_of) for f in comp[key]) + "]"
    elif key is not None:
        key_t = _py_write(fd[key], rec_of)
    else:
        key_t = None
    out = [f"class {cls_of[name]}:",
           f"    \"\"\"container {name} of {c['record']} = {c['equation']}\"\"\"",
           "    name: str", "    keys: tuple[str, ...]", "    key: str | None",
           "    composite_keys: dict[str, tuple[str, ...]]", "    persistent: bool",
           "    file: str | None", "    equation: str", f"    record: type[{R}]",
           f"    def __len__(self) -> int: ...",
           f"    def __iter__(self) -> _Cursor[{R}]: ...",
           f"    def at(self, rec_or_ref: {R} | SupportsIndex) -> {R}: ...",
           f"    def delete(self, rec_or_ref: {R} | SupportsIndex) -> None: ...",
           "    def reserve(self, n: SupportsIndex) -> None: ...",
           "    @property", "    def roles(self) -> dict[str, Any]: ...",
           "    def role(self, name: str) -> Any: ...",
           "    @property", "    def dtype(self) -> Any: ...",
           "    def to_numpy(self) -> Any: ...",
           "    def insert_many(self, rows: Any) -> int: ..."]
    if typed:
        # insert(field=...): the fields without a default are required
        req = [d for d in fields if "default" not in d]
        opt = [d for d in fields if "default" in d]
        kw = ", ".join([f"{d['name']}: {_py_write(d, rec_of)}" for d in req]
                       + [f"{d['name']}: {_py_write(d, rec_of)} = ..." for d in opt])
        some = ", ".join(f"{d['name']}: {_py_write(d, rec_of)} = ..." for d in fields)
        for op, ret in (("insert", R), ("upsert", f"tuple[{R}, bool]")):
            if op == "upsert" and not c.get("upsert"):
                continue
            out += ["    @overload",
                    f"    def {op}(self, /, *, {kw}) -> {ret}: ...",
                    "    @overload",
                    f"    def {op}(self, _from: {R} | Mapping[str, Any], /, *, {some}) -> {ret}: ..."]
        out.append(f"    def update(self, rec_or_ref: {R} | SupportsIndex, /, *, {some}) -> {R}: ...")
    else:
        out += [f"    def insert(self, _from: {R} | Mapping[str, Any] | None = None, /, "
                f"**fields: Any) -> {R}: ...",
                f"    def update(self, rec_or_ref: {R} | SupportsIndex, /, **fields: Any) -> {R}: ..."]
        if c.get("upsert"):
            out.append(f"    def upsert(self, _from: {R} | Mapping[str, Any] | None = None, /, "
                       f"**fields: Any) -> tuple[{R}, bool]: ...")
    if c.get("purges"):
        out.append("    def purge(self) -> int: ...")
    if key_t is not None:
        out += [f"    def __getitem__(self, key: {key_t}) -> {R}: ...",
                "    def __contains__(self, key: object) -> bool: ...",
                f"    def __delitem__(self, key: {key_t}) -> None: ...",
                "    @overload",
                f"    def get(self, key: {key_t}) -> {R} | None: ...",
                "    @overload",
                f"    def get(self, key: {key_t}, default: _T) -> {R} | _T: ...",
                "    @overload",
                f"    def find(self, value: {key_t}, /) -> {R} | None: ..."]
        for k in c["keys"]:
            if _ident(k):
                out += ["    @overload",
                        f"    def find(self, *, {k}: {_py_write(fd[k], rec_of)}) -> {R} | None: ..."]
        for cname, fs in comp.items():
            if all(_ident(f) for f in fs):
                args = ", ".join(f"{f}: {_py_write(fd[f], rec_of)}" for f in fs)
                out += ["    @overload", f"    def find(self, *, {args}) -> {R} | None: ..."]
        if c["keys"]:
            k0 = _py_write(fd[c["keys"][0]], rec_of)
            some = ", ".join(f"{d['name']}: {_py_write(d, rec_of)} = ..." for d in fields)
            upd = f"*, {some}" if typed else "**fields: Any"
            out += [f"    def update_by(self, key: {k0}, /, {upd}) -> {R} | None: ...",
                    f"    def delete_by(self, key: {k0}, /) -> bool: ..."]
    taken = _container_attrs(bool(c.get("purges")), bool(c.get("upsert")))
    for ro in c.get("roles", []):
        n = ro["role"]
        if not _ident(n) or n in taken:
            continue
        out += ["    @property", f"    def {n}(self) -> {'_Many' if ro['many'] else '_One'}"
                f"_{name}_{n}: ..."]
    out.append("")
    for ro in c.get("roles", []):
        n = ro["role"]
        if not _ident(n) or n in taken:
            continue
        P = rec_of[ro["partner"]["container"]]
        arg = f"{R} | SupportsIndex"
        parg = f"{P} | SupportsIndex"
        if ro["many"] and ro.get("order"):
            # an ordered role: walks in order, reverse, from bounds; the feed
            kt = "float" if ro["order"]["ctype"] in ("float", "double") else "int"
            rng = f"*, reverse: bool = ..., lo: {kt} | None = ..., hi: {kt} | None = ..."
            out += [f"class _Many_{name}_{n}:",
                    f"    \"\"\"role {name}.{n}: many {ro['partner']['container']}, ordered by "
                    f"{ro['order']['field']}{' desc' if ro['order']['desc'] else ''}\"\"\"",
                    "    name: str", "    relationship: str", "    many: bool",
                    "    order: tuple[str, bool] | None",
                    f"    def __call__(self, owner: {arg}, {rng}) -> _Links[{P}]: ...",
                    f"    def refs(self, owner: {arg}, {rng}) -> _Links[int]: ...",
                    f"    def feed(self, owners: Sequence[{arg}], k: int | None = ..., {rng}) "
                    f"-> list[{P}]: ...",
                    f"    def count(self, owner: {arg}) -> int: ...",
                    f"    def add(self, owner: {arg}, member: {parg}) -> None: ...",
                    f"    def remove(self, owner: {arg}, member: {parg}) -> None: ...", ""]
        elif ro["many"]:
            out += [f"class _Many_{name}_{n}:",
                    f"    \"\"\"role {name}.{n}: many {ro['partner']['container']}\"\"\"",
                    "    name: str", "    relationship: str", "    many: bool",
                    f"    def __call__(self, owner: {arg}) -> _Links[{P}]: ...",
                    f"    def refs(self, owner: {arg}) -> _Links[int]: ...",
                    f"    def count(self, owner: {arg}) -> int: ...",
                    f"    def add(self, owner: {arg}, member: {parg}) -> None: ...",
                    f"    def remove(self, owner: {arg}, member: {parg}) -> None: ...", ""]
        else:
            out += [f"class _One_{name}_{n}:",
                    f"    \"\"\"role {name}.{n}: one {ro['partner']['container']}\"\"\"",
                    "    name: str", "    relationship: str", "    many: bool",
                    f"    def __call__(self, x: {arg}) -> {P} | None: ...",
                    f"    def get(self, x: {arg}) -> {P} | None: ...",
                    f"    def ref(self, x: {arg}) -> int | None: ...",
                    f"    def set(self, x: {arg}, partner: {parg} | None) -> None: ...", ""]
    return out
