"""The Python binding declares to CFFI what the generated header declares, taken from the
table of generated functions (generator/cfuncs.py: the header template's `cfunc` and
`cdecl` blocks; generator/pybind.py, header_api): for every committed spec each public
function of the header is in the cdef, the declarations are those of the header's public
API region read by its fences (public_api, which reads p2_runtime.h), the names the
binding calls are among them, a declaration added to the header template through the
construct reaches the cdef without a change to the binding, and what CFFI cannot take is
refused in words.

The whole public API is checked, unless P2GEN_FULL=1, over a covering subset of the specs
(tests/speccover.py: every layer, layer parameter, field type, cursor, role and find shape
any of them has).

No C compiler needed: CFFI parses the declarations; tests/bindings/test_python*.py build and call
the modules."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import jinja2
import pytest

from p2gen import render as render_mod
from p2gen.build import emit_spec
from p2gen.errors import BuildError
from p2gen import pybind
from p2gen.pybind import (API_BEGIN, API_END, binding_metadata, cdef, header_api,
                          public_api)
from speccover import covering

cffi = pytest.importorskip("cffi")

ROOT = Path(__file__).resolve().parents[2]
# (the layers' minimal specs: every layer's hooks into the header, the servers' included)
# tracked specs only: bench runs leave generated specs under the git-ignored bench/build/
SPECS = sorted(ROOT / line for line in subprocess.run(
    ["git", "ls-files", "--", "type_equations/*.p2", "tests/specs/*.p2", "bench/*.p2",
     "tests/golden/layers/*.p2"], cwd=ROOT, capture_output=True, text=True,
    check=True).stdout.splitlines())
LINKS = ROOT / "tests" / "specs" / "links_transient.p2"   # text fields, relationships


def rendered(spec: Path):
    """(checked spec, header) as `p2gen build` emits them (one rendering: load's passes
    already render the header, and rendering again is most of this file's time)."""
    checked, header, _ = emit_spec(str(spec))
    return checked, header


def parsed(decls: str):
    """CFFI's FFI with the cdef parsed, and what it declares, as its parser reads it:
    {"function f": type, "macro M": ...}."""
    ffi = cffi.FFI()
    ffi.cdef(decls)
    # the parser's table is the one place CFFI lists every declaration without compiling
    return ffi, dict(ffi._parser._declarations)


def declared(decls: str) -> dict:
    return parsed(decls)[1]


def functions(decls: dict) -> set:
    return {k.split(" ", 1)[1] for k in decls if k.startswith("function ")}


def header_functions(prefix: str, header: str) -> set:
    """The header's public functions, read independently of the fences: render.inline_api
    gives every one of them, wherever it stands, the storage class <PREFIX>_API."""
    api = re.escape(prefix.upper()) + r"_API"
    return set(re.findall(r"^" + api + r" [^;]*?\b(\w+)\([^;]*\);$", header, re.M))


def test_specs_found():
    assert len(SPECS) >= 30 and LINKS in SPECS


@pytest.mark.parametrize("spec", covering(SPECS), ids=lambda s: str(s.relative_to(ROOT)))
def test_cdef_declares_the_whole_public_api(spec):
    checked, header = rendered(spec)
    p = checked.prefix
    ffi, decls = parsed(cdef(checked))
    public = header_functions(p, header)
    assert {f"{p}_open", f"{p}_close", f"{p}_verify"} <= public
    # every public function and nothing else, besides the runtime's and the binding's own
    fns = functions(decls)
    assert fns - public == {"p2_strerror"} | {f for f in fns if f.startswith("p2py__")}
    assert public <= fns
    assert f"macro {p.upper()}_NOREF" in decls
    # records with their fields in order; cursor state hidden
    for r in checked.records:
        assert [n for n, _ in ffi.typeof(f"{p}_{r.name}").fields] == [f.name for f in r.fields]
    for info in checked.containers:
        assert decls[f"typedef {info.all_cursor.p}_cursor"][0].partial
    # the table's declarations are the header's public API region, read by its fences
    assert header_api(render_mod.header_declarations(checked)) == public_api(p, header)


def test_binding_calls_only_declared_functions():
    """The C names binding_metadata hands the Python layer are functions the header declares."""
    checked, header = rendered(LINKS)
    fns = functions(declared(cdef(checked)))
    meta = binding_metadata(checked)
    names = []
    for c in meta["containers"]:
        for t in c["c"]["text"].values():
            names += [t["get"], t["set"]]
        for role in c["roles"]:
            names += [v for k, v in role["c"].items() if k != "iter"]
    for k in meta["cursors"]:
        names += [f"{k['c']['prefix']}_{op}" for op in ("open", "next", "get", "ref", "close")]
    assert {"links_transient_comps_get_doc", "links_transient_comps_set_doc",
            "links_transient_comps_parts_add", "links_transient_atoms_part_of"} <= set(names)
    assert not set(names) - fns


def header_template_with(monkeypatch, extra: str):
    """The header template with `extra` inserted before the end of its public API region."""
    env = render_mod.jinja_env.__wrapped__()          # a fresh environment, not the cached one
    source = env.loader.get_source(env, "spec.h.j2")[0]
    assert source.count(API_END) == 1
    env.loader = jinja2.ChoiceLoader([
        jinja2.DictLoader({"spec.h.j2": source.replace(API_END, extra + API_END)}),
        env.loader])
    monkeypatch.setattr(render_mod, "jinja_env", lambda: env)


@pytest.mark.parametrize("block, message", [
    ("{% call cdecl('zz_count') %}\ntypedef uint64_t zz_total;\n{% endcall %}\n",
     "cdecl('zz_count'): name 'zz_count' is not in its text"),
    ("{% call cdecl('ZZ_MAX') %}\n#define ZZ_MAX(a, b) ((a) > (b) ? (a) : (b))\n{% endcall %}\n",
     "cdecl('ZZ_MAX'): not a constant macro of that name"),
    ("{% call cdecl('zz_x') %}\nstruct zz_x { int a; };\n{% endcall %}\n",
     "cdecl('zz_x'): not a typedef of that name"),
    ("{% call cfunc('zz_f', public=true, decl=true) %}\nint zz_g(void);\n{% endcall %}\n",
     "cfunc('zz_f'): the text does not declare it"),
])
def test_header_declarations_the_table_refuses(monkeypatch, block, message):
    """A declaration block whose text is not what it says (another name, a function-like
    macro CFFI cannot declare, a struct tag without a typedef) stops the rendering."""
    header_template_with(monkeypatch, block)
    with pytest.raises(ValueError, match=re.escape(message)):
        rendered(LINKS)


def test_declaration_added_to_header_template_reaches_cdef(monkeypatch):
    """A function and a type the header template declares through the table's constructs
    are in the cdef with no change to pybind."""
    extra = ("{% call cdecl(S.prefix ~ '_squeezed') %}\n"
             "typedef struct {{ S.prefix }}_squeezed { uint64_t freed; int _why; } "
             "{{ S.prefix }}_squeezed;\n"
             "{% endcall %}\n"
             "{% for c in containers %}\n"
             "/* Squeeze the container (a declaration this test adds). */\n"
             "{% call cfunc(c.info.p ~ '_squeeze', public=true, decl=true) %}\n"
             "int {{ c.info.p }}_squeeze({{ S.prefix }}_db *db, {{ S.prefix }}_squeezed *out);\n"
             "{% endcall %}\n"
             "{% endfor %}\n")
    header_template_with(monkeypatch, extra)
    checked, header = rendered(LINKS)
    assert f"LINKS_TRANSIENT_API int {checked.containers[0].p}_squeeze(" in header
    decls = declared(cdef(checked))
    squeeze = {f"{info.p}_squeeze" for info in checked.containers}
    assert len(squeeze) == 3 and squeeze <= functions(decls)
    p = checked.prefix
    assert str(decls[f"function {checked.containers[0].p}_squeeze"][0]) == \
        f"<int(*)({p}_db *, {p}_squeezed *)>"
    squeezed = decls[f"typedef {p}_squeezed"][0]
    assert squeezed.partial and list(squeezed.fldnames) == ["freed"]    # _why: hidden


def test_runtime_types_come_from_the_runtime_header():
    """p2_text and p2_strerror are declared as p2_runtime.h declares them: the members
    CFFI reads for p2_text are the header's own, in its order."""
    checked, header = rendered(LINKS)
    decls = declared(cdef(checked))
    assert "function p2_strerror" in decls
    text = Path(pybind.RUNTIME_HEADER).read_text()
    body = re.search(r"typedef struct p2_text \{(.*?)\} p2_text;", text, re.S).group(1)
    members = re.findall(r"\b(\w+);", re.sub(r"/\*.*?\*/", "", body, flags=re.S))
    assert members == ["mref", "len"]
    assert list(decls["struct p2_text"][0].fldnames) == members


def test_runtime_declaration_reaches_cdef(monkeypatch, tmp_path):
    """A declaration added inside p2_runtime.h's public API region reaches every spec's
    cdef; a runtime header without the region is refused in words."""
    text = Path(pybind.RUNTIME_HEADER).read_text()
    assert text.count(API_BEGIN) == 1 and text.count(API_END) == 1
    copy = tmp_path / "p2_runtime.h"
    copy.write_text(text.replace(API_END, "/* A probe. */\nint p2_probe(const p2_text *t);\n"
                                          + API_END))
    monkeypatch.setattr(pybind, "RUNTIME_HEADER", str(copy))
    checked, header = rendered(LINKS)
    decls = declared(cdef(checked))
    assert str(decls["function p2_probe"][0]) == "<int(*)(p2_text const *)>"
    copy.write_text(text.replace(API_END, ""))
    with pytest.raises(BuildError, match=re.escape("p2_runtime.h has no public API region")):
        cdef(checked)


REGION = """\
#ifndef X_H
/* p2gen: public API begin. comment */
typedef struct x_db x_db;
#define X_NOREF UINT64_MAX
#define X_MAX(a, b) ((a) > (b) ? (a) : (b))
/* a comment
 * on two lines */
X_API int x_open(x_db **out, const char *dir); /* trailing */
typedef struct x_cur {
    x_db *_db;
    uint64_t _a, _b;
    char _p_name[8];
} x_cur;
typedef struct x_pub {
    int32_t id;
    char name[12];
    int _spare;
} x_pub;
/* p2gen: public API end */
X_API int x_outside(void);
#endif
"""


def test_public_api_region():
    out = public_api("x", REGION)
    assert out == ("typedef struct x_db x_db;\n"
                   "#define X_NOREF ...\n"
                   "int x_open(x_db **out, const char *dir);\n"
                   "typedef struct x_cur {\n    ...;\n} x_cur;\n"
                   "typedef struct x_pub {\n    int32_t id;\n    char name[12];\n    ...;\n} x_pub;\n")
    assert functions(declared(out)) == {"x_open"}


@pytest.mark.parametrize("change, message", [
    (lambda h: h.replace("/* p2gen: public API end */", ""), "has no public API region"),
    (lambda h: h.replace("typedef struct x_db", "#ifdef X_WIDE\n#endif\ntypedef struct x_db"),
     "holds '#ifdef X_WIDE'; only constant macros"),
    (lambda h: h.replace("uint64_t _a, _b;", "uint64_t _a, b;"),
     "struct x_cur declares public and private members"),
])
def test_public_api_refuses(change, message):
    with pytest.raises(BuildError, match=re.escape(message)):
        public_api("x", change(REGION))
