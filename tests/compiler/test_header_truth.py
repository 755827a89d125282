"""The generated C tells the truth for its spec: each function's documented errors are
what the layers of that container's equation can return (layers/*.py, `errors`), a
relationship role's functions document what its layer declares, and no function is emitted
that nothing calls.

The tests over every committed spec run, unless P2GEN_FULL=1, over a covering subset of
them (tests/speccover.py: every layer, layer parameter, field type, cursor, role and find
shape any of them has)."""
import functools
import glob
import os
import re
import subprocess

import pytest

from p2gen.check import check
from p2gen.layers import LAYERS
from p2gen.parser import parse
from p2gen.plan import plan
from p2gen.render import render
from speccover import covering

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REC = "record item { id: u32; grp: i32; name: char[8]; }\n"


def header_of(text: str) -> str:
    checked = plan(check(parse(text, "t.p2"), "t"))
    return render(checked, "t.p2")[0]


def documented(header: str, container: str) -> dict:
    """{function: set of codes} from the `Errors:` line of each function's comment."""
    out = {}
    for comment, name in re.findall(r"/\*((?:(?!\*/).)*?)\*/\n(?:T_API )?[^\n]*?\bt_"
                                    + container + r"_(\w+)\(", header, re.S):
        m = re.search(r"Errors: ([^.]*)\.", comment)
        if m:
            out[name] = set(re.findall(r"P2_[A-Z]+", m.group(1)))
    return out


def case_id(value) -> str:
    """A parameter's test id, the same in every process: a set's repr follows string
    hashing, which differs between processes, and pytest-xdist's workers must collect the
    same tests. Written as repr writes it, the members sorted."""
    def show(v):
        if isinstance(v, (set, frozenset)):
            return "{" + ", ".join(sorted(map(show, v))) + "}"
        if isinstance(v, dict):
            return "{" + ", ".join(f"{show(k)}: {show(x)}" for k, x in v.items()) + "}"
        if isinstance(v, tuple):
            return repr(tuple(v))
        return repr(v)
    return (value if isinstance(value, str) else show(value))[:40]


CASES = [
    # equation, insert, update, delete
    ("top2ds[avl[array[transient]]] with avl(key = id)",
     {"P2_ENOMEM"}, {"P2_NOTFOUND"}, {"P2_NOTFOUND"}),
    ("top2ds_qualify[hash[iarray[persistent]]] with hash(key = grp), iarray(key = id), "
     "persistent(file = \"t.db\")",
     {"P2_EDUP", "P2_ERANGE", "P2_ENOMEM", "P2_EIO"},
     {"P2_NOTFOUND", "P2_EDUP", "P2_ERANGE", "P2_ENOMEM", "P2_EIO"}, {"P2_NOTFOUND"}),
    ("top2ds[dlist[malloc[persistent]]] with persistent(file = \"t.db\")",
     {"P2_ENOMEM", "P2_EIO"}, {"P2_NOTFOUND"}, {"P2_NOTFOUND"}),
    ("delflag[top2ds[qsort[transient]]] with qsort(key = id)",
     {"P2_ENOMEM"}, {"P2_NOTFOUND"}, {"P2_NOTFOUND"}),
]


@pytest.mark.parametrize("equation,insert,update,delete", CASES, ids=case_id)
def test_error_lists_are_what_the_layers_declare(equation, insert, update, delete):
    errs = documented(header_of(REC + f"container c of item = {equation};\n"), "c")
    assert errs["insert"] == insert
    assert errs["update"] == update
    assert errs["delete"] == delete
    # a plain field's setter cannot fail but for the element; a key's goes through update
    assert errs["set_grp"] == ({"P2_NOTFOUND"} | (update if "key = grp" in equation else set()))


def test_cursor_delete_over_shifting_storage_may_run_out_of_memory():
    """Over qsort a cursor remaps what it remembers on a delete (P2_ENOMEM); delflag only
    marks, so over it the cursor's delete cannot fail."""
    cur = "cursor all_of on c order by id;\n"
    plain = header_of(REC + "container c of item = top2ds[qsort[transient]] with qsort(key = id);\n" + cur)
    flagged = header_of(REC + "container c of item = delflag[top2ds[qsort[transient]]] "
                              "with qsort(key = id);\n" + cur)
    line = re.compile(r"next\(\) continues after it\.\n \* Errors: ([^.]*)\.")
    assert line.search(plain).group(1) == "P2_EINVAL (not on an element), P2_ENOMEM"
    assert line.search(flagged).group(1) == "P2_EINVAL (not on an element)"


SPECS = sorted(glob.glob(os.path.join(ROOT, "type_equations", "**", "*.p2"), recursive=True))


@functools.lru_cache(maxsize=None)
def planned_header(spec: str):
    """(checked spec, header) of a spec file, rendered once per process: the tests below
    only read them, and rendering every committed spec is most of their time."""
    checked = plan(check(parse(open(spec).read(), spec), None))
    return checked, render(checked, spec)[0]


@pytest.mark.parametrize("spec", covering(SPECS), ids=lambda p: os.path.relpath(p, ROOT))
def test_only_keyed_storage_documents_duplicates(spec):
    """P2_EDUP comes from a unique key (iarray's slots, or an index with unique = true):
    a container without one never lists it."""
    checked, header = planned_header(spec)
    for info in checked.containers:
        errs = documented(header.replace(checked.prefix.upper() + "_API ", "T_API ")
                          .replace(checked.prefix + "_", "t_"), info.name)
        assert {"insert", "update", "delete", "reserve"} <= set(errs), errs
        keyed = any(li.layer.unique_key or li.params.get("unique") for li in info.ds)
        for fn in ("insert", "update"):
            assert ("P2_EDUP" in errs[fn]) == keyed, (info.name, fn, errs[fn])


# --- relationships: what each role's add, remove and set return ------------------------
# every bottom memory layer of the registry; one in a file gets its file parameter, one on
# a server its URI (the checker does not connect)
SERVER_URIS = {"objserver": "redis://127.0.0.1:1/0"}
MEMS = {n: (f' with {n}({l.file_param} = "{SERVER_URIS.get(n, "nbd://127.0.0.1:1/t") if l.file_is_uri else "t.db"}")'
            if l.in_file else "")
        for n, l in LAYERS.items() if l.realm == "mem" and l.below is None}
# the storage of the relationships' containers: array, or malloc where the memory takes
# only storage with a block per element (objserver)
STORAGE = {n: "malloc" if n in SERVER_URIS else "array" for n in MEMS}


def relrec(mem: str) -> str:
    return ("record a { id: i32; }\nrecord b { id: i32; }\n"
            f"container as of a = top2ds[{STORAGE[mem]}[{mem}]]{MEMS[mem]};\n"
            f"container bs of b = top2ds[{STORAGE[mem]}[{mem}]]{MEMS[mem]};\n")


NF = {"P2_NOTFOUND"}
# what allocating in each memory returns, as its layer declares (layers/base.py, errors)
ALLOCS = {n: set(LAYERS[n].errors["alloc"]) for n in MEMS}
REL_CASES = [
    # relationship; {(container, function): documented codes; True: P2_NOTFOUND and what
    # allocating in the memory returns}
    # a linked list through the elements: nothing to allocate
    ("one as.kids to many bs.parent = ilist",
     {("as", "kids_add"): NF, ("as", "kids_remove"): NF, ("bs", "set_parent"): NF}),
    # the `many` end keeps a block of references, which add and set may grow
    ("one as.kids to many bs.parent = refarray",
     {("as", "kids_add"): True, ("as", "kids_remove"): NF, ("bs", "set_parent"): True}),
    ("many as.xs to many bs.ys = refarray",
     {("as", "xs_add"): True, ("bs", "ys_add"): True, ("as", "xs_remove"): NF,
      ("bs", "ys_remove"): NF}),
    # 1:1: two single references are rewritten
    ("one as.twin to one bs.twin_of = refarray",
     {("as", "set_twin"): NF, ("bs", "set_twin_of"): NF}),
]


@pytest.mark.parametrize("mem", sorted(MEMS))
@pytest.mark.parametrize("rel,expected", REL_CASES, ids=case_id)
def test_role_error_lists_are_what_the_layer_declares(rel, expected, mem):
    header = header_of(relrec(mem) + f"relationship r {rel};\n")
    for (container, fn), codes in expected.items():
        want = NF | ALLOCS[mem] if codes is True else codes
        assert documented(header, container)[fn] == want, (container, fn)


@pytest.mark.parametrize("spec", covering(SPECS + sorted(glob.glob(os.path.join(
                             ROOT, "tests", "specs", "links_*.p2")))),
                         ids=lambda p: os.path.relpath(p, ROOT))
def test_only_roles_that_grow_blocks_document_allocation(spec):
    """A role function documents the memory layer's allocation codes exactly when the
    relationship keeps a block of references at one of its ends (the call may grow it)."""
    checked, header = planned_header(spec)
    header = header.replace(checked.prefix.upper() + "_API ", "T_API ") \
        .replace(checked.prefix + "_", "t_")
    seen = 0
    for ri in checked.relationships:
        for role in ri.roles:
            errs = documented(header, role.container.name)
            holders = [e for e in (role, role.partner) if ri.layer.role_owns_block(e)]
            for fn in ((f"{role.name}_add", f"{role.name}_remove") if role.many
                       else (f"set_{role.name}",)):
                seen += 1
                alloc = bool(holders) and not fn.endswith("_remove")
                assert ("P2_ENOMEM" in errs[fn]) == alloc, (ri.name, fn, errs[fn])
                on_file = any(e.container.persistent for e in holders)
                assert ("P2_EIO" in errs[fn]) == (alloc and on_file), (ri.name, fn, errs[fn])
                assert "P2_NOTFOUND" in errs[fn]
    assert seen or not checked.relationships


def test_a_remove_reported_as_not_found_declares_nothing_else():
    """The public remove reports a failing <ip>_remove as P2_NOTFOUND: a layer declaring
    more for it is refused rather than documented wrongly."""
    from p2gen.layers.ilist import IList
    from p2gen.render import role_api_errors

    class Leaky(IList):
        errors = {"remove": {"P2_NOTFOUND", "P2_ENOMEM"}}
    checked = plan(check(parse(relrec("transient")
                               + "relationship r one as.kids to many bs.parent = ilist;\n",
                               "t.p2"), "t"))
    role = next(r for r in checked.relationships[0].roles if r.many)
    assert role_api_errors(role)["remove"] == "P2_NOTFOUND"
    role.rel.layer = Leaky()
    with pytest.raises(ValueError, match="remove"):
        role_api_errors(role)


COMMITTED = sorted(glob.glob(os.path.join(ROOT, "type_equations", "**", "*.p2"), recursive=True)
                   + glob.glob(os.path.join(ROOT, "bench", "**", "*.p2"), recursive=True)
                   + glob.glob(os.path.join(ROOT, "tests", "specs", "*.p2")))
# the recovery program's build of the source, for a few specs (each is another compile)
RECOVERED = ("paper.p2", "links_persistent.p2", "hash_ilist_journal.p2", "inventory.p2")

# gcc flags an unused static function (-Wunused-function) but not an unused static inline
# one: the program is compiled with `inline` defined away after the system and runtime
# headers (whose own inline functions are not the generated code's business)
UNINLINE = """#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "p2_runtime.h"
#define inline
#include "%s"
"""


def assert_all_static_functions_used(main, include_dir):
    from p2gen.build import RUNTIME_DIR
    wrapper = main.parent / f"uninline_{main.name}"
    wrapper.write_text(UNINLINE % main.name)
    proc = subprocess.run(["cc", "-std=c11", "-O0", "-Wunused-function", "-Werror", "-c",
                           "-o", os.devnull, "-I", str(include_dir), "-I", RUNTIME_DIR,
                           str(wrapper)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]


# the covering subset of the committed specs, and the specs of the recovery builds
UNUSED_CHECKED = sorted(set(covering(COMMITTED))
                        | {s for s in COMMITTED if os.path.basename(s) in RECOVERED})


@pytest.mark.parametrize("spec", UNUSED_CHECKED, ids=lambda p: os.path.relpath(p, ROOT))
def test_no_static_function_is_unused(spec, tmp_path):
    """Every static function of the generated source is called by the source itself or by
    the program that includes it (the integrity checker; the recovery program, for its
    own build of the source)."""
    from p2gen.build import generate
    from p2gen.render import Renderer
    from p2gen.verify import render_verifier
    gen = generate(spec, str(tmp_path))
    checked = gen.checked           # load() would run the passes and the emit again
    (tmp_path / "verifier.c").write_text(render_verifier(checked, os.path.basename(spec)))
    assert_all_static_functions_used(tmp_path / "verifier.c", tmp_path)
    if os.path.basename(spec) in RECOVERED:
        rec = tmp_path / "recover"
        rec.mkdir()
        r = Renderer(checked, os.path.basename(spec), recover=True)
        header, source = r.render()
        (rec / f"{gen.prefix}.h").write_text(header)
        (rec / f"{gen.prefix}.c").write_text(source)
        (rec / "recoverer.c").write_text(r.recover_main())
        assert_all_static_functions_used(rec / "recoverer.c", rec)


@pytest.mark.parametrize("spec", ["paper.p2", "inventory.p2", "oo7/hash_ilist_journal.p2"])
def test_cursor_states_have_names(spec, tmp_path):
    """A cursor's state is compared and set by name (P2_CURSOR_*), never as a bare number."""
    from p2gen.build import generate
    gen = generate(os.path.join(ROOT, "type_equations", spec), str(tmp_path))
    source = open(gen.source).read()
    assert re.findall(r"_state\s*(?:[!=]=|=)\s*\d", source) == []
    for state in ("BEFORE", "ON", "OFF", "END"):
        assert re.search(rf"_state (?:[!=]=|=) P2_CURSOR_{state}\b", source), state


# --- #line directives (p2gen build --line-directives) ----------------------------------
def attributed(text: str) -> list:
    """[(line, template path, template line)] as the C compiler counts them."""
    out, at = [], None
    for line in text.split("\n"):
        m = re.match(r'#line (\d+) "([^"]+)"$', line)
        if m:
            at = (m.group(2), int(m.group(1)))
            continue
        out.append((line, *at) if at else (line, None, None))
        at = (at[0], at[1] + 1) if at else None
    return out


# labflow/segmented.p2: composite keys, whose argument lists a `{% set %}` block captures
@pytest.mark.parametrize("spec", ["paper.p2", "oo7/hash_ilist_journal.p2", "labflow/segmented.p2"])
def test_line_directives_add_only_line_directives(spec, tmp_path):
    """Off by default; on, the output is the default output with #line lines added, and
    every generated line that is a template's literal text is attributed to that line."""
    from p2gen.build import generate
    from p2gen.render import jinja_env
    plain = generate(os.path.join(ROOT, "type_equations", spec), str(tmp_path / "plain"))
    marked = generate(os.path.join(ROOT, "type_equations", spec), str(tmp_path / "marked"),
                      line_directives=True)
    for a, b in ((plain.header, marked.header), (plain.source, marked.source)):
        text_a, text_b = open(a).read(), open(b).read()
        assert "#line" not in text_a
        assert "\n".join(l for l in text_b.split("\n") if not l.startswith("#line ")) == text_a
        checked = 0
        for line, path, n in attributed(text_b):
            if path is None or line.startswith((" *", "/*")):   # none inside a comment
                continue
            # a line the template writes as it is must be that template line
            source = open(os.path.join(ROOT, path)).read().split("\n")
            if line.strip() and line == source[n - 1]:
                checked += 1
            elif line.strip() and "{{" not in source[n - 1] and "{%" not in source[n - 1]:
                assert line == source[n - 1], (path, n, line)
        assert checked > 30, checked


def test_line_directives_leave_the_python_declarations_as_they_are():
    """The binding declares the header's public API to CFFI: #line directives change none
    of it (`p2gen build --line-directives --python`)."""
    from p2gen.build import load
    from p2gen.pybind import public_api
    checked = load(os.path.join(ROOT, "type_equations", "inventory.p2"), None)
    plain = render(checked, "inventory.p2")[0]
    marked = render(checked, "inventory.p2", line_directives=True)[0]
    assert "#line" in marked
    assert public_api("inventory", marked) == public_api("inventory", plain)


def test_line_directives_point_compiler_errors_into_the_template(tmp_path):
    """A template with a line the C compiler refuses: its message names that template line."""
    import shutil
    from p2gen.build import RUNTIME_DIR, load
    from p2gen.render import Renderer, _template_dirs, make_env
    layers = tmp_path / "layers"
    shutil.copytree(_template_dirs()[0], layers)
    avl = (layers / "avl.c.j2").read_text().split("\n")
    k = next(i for i, l in enumerate(avl) if re.match(r"static inline int \{\{ L.p \}\}_create\(", l))
    if avl[k - 1].startswith("{% call cfunc("):   # before the function's block (cfuncs.py)
        k -= 1
    avl.insert(k, "int broken_avl_template = undeclared_identifier;")
    (layers / "avl.c.j2").write_text("\n".join(avl))
    spec = os.path.join(ROOT, "type_equations", "paper.p2")
    r = Renderer(load(spec, None), "paper.p2", line_directives=True)
    r.env = make_env((str(layers), _template_dirs()[1]), True)
    header, source = r.render()
    (tmp_path / "paper.h").write_text(header)
    (tmp_path / "paper.c").write_text(source)
    proc = subprocess.run(["cc", "-std=c11", "-c", "-o", os.devnull, "-I", str(tmp_path),
                           "-I", RUNTIME_DIR, str(tmp_path / "paper.c")],
                          capture_output=True, text=True)
    assert proc.returncode != 0
    assert re.search(rf"layers/avl\.c\.j2:{k + 1}:\d+: error: .undeclared_identifier",
                     proc.stderr), proc.stderr[-2000:]
