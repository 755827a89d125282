"""The mem contract (layers/README.md, "The mem contract"): memory layers are asked what
they are (their MemLayer attributes and template hooks), never tested by name, so adding a
memory layer touches layers/ only.

No C is compiled here: what is checked is what the generator writes and where it learns
it."""
import ast
import re
from pathlib import Path

import jinja2
import jinja2.nodes
import pytest

from p2gen.check import check
from p2gen.errors import SpecError, SpecErrors
from p2gen.layers import LAYERS
from p2gen.layers.base import MemLayer
from p2gen.layers.journal import Journal
from p2gen.layers.persistent import Persistent
from p2gen.parser import parse
from p2gen.plan import explain, plan
from p2gen.render import FILE_HOOKS, TXN_HOOKS, Renderer, render

ROOT = Path(__file__).resolve().parents[2]
GENERATOR = ROOT / "generator"
LAYERS_DIR = ROOT / "layers"
MEM_LAYERS = sorted(n for n, l in LAYERS.items() if l.realm == "mem")


# ---------------------------------------------------------------------------
# generator/ does not know the memory layers by name
# ---------------------------------------------------------------------------
def python_mentions(source: str, names: set) -> list:
    """(line, what) for each place Python source names a layer of `names`: a string
    constant that is exactly the name (`li.name == "journal"`, `("persistent", ...)`,
    `selectattr("journal")` in generated code), an attribute of that name (`fi.journal`)
    other than the container's `persistent` property (whether its references survive a
    restart, which its mem layer says), or an import of its module. A dict key is
    a field name, not a test (the bindings' metadata field `persistent`: whether the
    container's references survive a restart, which its mem layer says)."""
    out = []
    tree = ast.parse(source)
    keys = {id(k) for d in ast.walk(tree) if isinstance(d, ast.Dict) for k in d.keys}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and node.value in names and id(node) not in keys:
            out.append((node.lineno, repr(node.value)))
        elif isinstance(node, ast.Attribute) and node.attr in names \
                and node.attr != "persistent":
            out.append((node.lineno, f".{node.attr}"))
        elif isinstance(node, ast.ImportFrom):
            mods = [node.module or ""] + [a.name for a in node.names]
            for m in mods:
                if m.rsplit(".", 1)[-1] in names:
                    out.append((node.lineno, f"import of {m}"))
    return out


def template_mentions(source: str, names: set) -> list:
    """(line, what) for each place a Jinja template names a layer of `names`: a constant
    that is exactly the name (`M.name == "persistent"`, `selectattr("journal")`), an
    attribute of that name (`f.journal`) other than the container's `persistent`
    property (whether its references survive a restart, which the mem layer says), or an
    include or import of the layer's template."""
    env = jinja2.Environment()
    out = []
    tree = env.parse(source)
    for node in tree.find_all((jinja2.nodes.Const, jinja2.nodes.Getattr)):
        if isinstance(node, jinja2.nodes.Const):
            v = node.value
            if isinstance(v, str) and (v in names or v.removesuffix(".c.j2") in names):
                out.append((node.lineno, repr(v)))
        elif node.attr in names and node.attr != "persistent":
            out.append((node.lineno, f".{node.attr}"))
    return out


def generator_mentions(names: set) -> list:
    """Every place under generator/ (Python and templates) that names a layer of `names`."""
    out = []
    for path in sorted(GENERATOR.rglob("*.py")):
        for line, what in python_mentions(path.read_text(encoding="utf-8"), names):
            out.append(f"{path.relative_to(ROOT)}:{line}: {what}")
    for path in sorted(GENERATOR.rglob("*.j2")):
        for line, what in template_mentions(path.read_text(encoding="utf-8"), names):
            out.append(f"{path.relative_to(ROOT)}:{line}: {what}")
    return out


def test_generator_never_names_a_memory_layer():
    """Adding a memory layer touches layers/ only: generator/ asks a mem layer what it is
    (layers/base.py, MemLayer) and lets its template write its file-level code."""
    found = generator_mentions(set(MEM_LAYERS))
    assert not found, ("generator/ tests memory layers by name (ask their MemLayer "
                       "attributes, or let their templates' hooks say it):\n  "
                       + "\n  ".join(found))


@pytest.mark.parametrize("code,lang,hit", [
    ('if li.name == "journal":\n    pass\n', "py", '1: \'journal\''),
    ('x = li.name not in ("persistent", "array")\n', "py", "1: 'persistent'"),
    ("from .layers.persistent import MAX_RESERVE\n", "py", "1: import of layers.persistent"),
    ('msg = f"got {x} in persistent memory"\n', "py", None),
    ('meta = {"persistent": c.persistent}\n', "py", None),
    ("if fi.journal:\n    pass\n", "py", "1: .journal"),
    ('if mem in {"journal"}:\n    pass\n', "py", "1: 'journal'"),
    ('{% if M.name == "persistent" %}x{% endif %}\n', "j2", "1: 'persistent'"),
    ('{% for f in files if f.journal %}x{% endfor %}\n', "j2", "1: .journal"),
    ('{% for f in files | selectattr("journal") %}x{% endfor %}\n', "j2", "1: 'journal'"),
    ('{% include "journal.c.j2" %}\n', "j2", "1: 'journal.c.j2'"),
    ('{% if c.info.persistent %}x{% endif %}\n', "j2", None),
])
def test_the_scan_finds_a_name_test(code, lang, hit):
    """The scan above would catch the tests of a layer's name this change removed."""
    scan = python_mentions if lang == "py" else template_mentions
    found = [f"{line}: {what}" for line, what in scan(code, {"persistent", "journal"})]
    assert found == ([hit] if hit else []), found


# ---------------------------------------------------------------------------
# the attributes are coherent, and every file layer's template writes its file code
# ---------------------------------------------------------------------------
def macros_of(template: str) -> set:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(LAYERS_DIR)))
    tree = env.parse(env.loader.get_source(env, template)[0])
    # a hook is a macro of the template, or a name it exports bound to another template's
    # macro ({% set open_file = journal.open_file %}: the record log reuses the journal's)
    shared = {a.target.name for a in tree.body
              if isinstance(a, jinja2.nodes.Assign) and isinstance(a.target, jinja2.nodes.Name)}
    return {m.name for m in tree.find_all(jinja2.nodes.Macro)} | shared


@pytest.mark.parametrize("name", MEM_LAYERS)
def test_memory_layer_signature(name):
    layer = LAYERS[name]
    assert isinstance(layer, MemLayer), f"{name}: a mem layer's signature is a MemLayer"
    names = {p.name for p in layer.params}
    for attr in ("file_param", "reserve_param", "verify_open_param"):
        v = getattr(layer, attr)
        assert v is None or v in names, f"{name}.{attr} = {v!r} is not a parameter"
    if layer.survives_restart or layer.seg_allocator:
        assert layer.in_file, f"{name}: only a memory in a file survives a restart"
    for attr in layer.requires_below:
        assert hasattr(MemLayer, attr), f"{name}.requires_below: no attribute {attr!r}"
    if layer.requires_below:
        assert layer.below == "mem" and all(layer.requires_why)
    macros = macros_of(layer.template)
    assert macros <= set(FILE_HOOKS) | set(TXN_HOOKS), \
        f"{name}: macros the renderer never calls: {macros - set(FILE_HOOKS) - set(TXN_HOOKS)}"
    if layer.in_file:
        assert {"open_file", "close_file", "sync_file"} <= macros, \
            f"{name}: a file's layer writes how the file opens, closes and syncs"
    assert layer.transactions == ({"transactions", "transactions_api"} <= macros), \
        f"{name}: a layer that gives transactions writes them (and only then)"
    assert bool(layer.write_guard) <= layer.transactions


# ---------------------------------------------------------------------------
# a memory layer registered under another name works the same: nothing looks at names
# ---------------------------------------------------------------------------
class FileCopy(Persistent):
    name = "pfile"
    template = "persistent.c.j2"


class JournalCopy(Journal):
    name = "wal"
    template = "journal.c.j2"
    side_files = {"-wal": "wal"}


SPEC = """record item { id: u32; name: char[8]; }
container a of item = top2ds[hash(key = id, buckets = 8)[malloc[%s(file = "a.db")]]];
container b of item = top2ds[array[%s[%s(file = "b.db")]]];
container c of item = top2ds[array[transient]];
"""


def generated(text: str, recover: bool = False) -> tuple:
    checked = plan(check(parse(text, "m.p2"), "m"))
    r = Renderer(checked, "m.p2", recover=recover)
    h, c = r.render()
    return h, c, (r.recover_main() if recover else ""), explain(checked)


def normalised(texts: tuple) -> str:
    # the layers' names spell their functions, the section fences (whose rules fill the
    # line) and the files' descriptions; fingerprints hash the equations
    t = "\n".join(texts).replace("pfile", "persistent").replace("wal", "journal")
    return re.sub(r"-{3,}", "---", re.sub(r"0x[0-9a-f]{16}u", "FP", t))


@pytest.mark.parametrize("recover", [False, True])
def test_a_new_memory_layer_needs_only_its_signature(monkeypatch, recover):
    """Registering copies of persistent and journal under new names (what adding a memory
    layer is) gives the same C, header, recovery program and explanation."""
    want = generated(SPEC % ("persistent", "journal", "persistent"), recover)
    monkeypatch.setitem(LAYERS, "pfile", FileCopy())
    monkeypatch.setitem(LAYERS, "wal", JournalCopy())
    got = generated(SPEC % ("pfile", "wal", "pfile"), recover)
    assert "p2_seg_open_journal" in want[1] and "_begin" in want[0]
    assert normalised(got) == normalised(want)


def errors_of(text: str) -> list:
    with pytest.raises((SpecError, SpecErrors)) as info:
        check(parse(text, "m.p2"), "m")
    err = info.value
    return [e.message for e in (err.errors if isinstance(err, SpecErrors) else [err])]


def test_requirements_and_side_files_come_from_the_signature(monkeypatch):
    monkeypatch.setitem(LAYERS, "pfile", FileCopy())
    monkeypatch.setitem(LAYERS, "wal", JournalCopy())
    rec = "record item { id: u32; }\n"
    # the layers that would do are the registered ones with the attribute
    msgs = errors_of(rec + "container a of item = top2ds[array[wal[transient]]];\n")
    assert msgs == ["layer 'wal' journals a file it maps anywhere, or a page server's export: "
                    "it needs 'persistent' or 'pageserver' or 'pfile' below it, got 'transient' "
                    "(transient memory is not a file that may be mapped anywhere, nor a page "
                    "server)"], msgs
    msgs = errors_of(rec + 'container a of item = top2ds[array[wal[mapped(file = "m.db")]]];\n')
    assert msgs == ["layer 'wal' journals a file it maps anywhere, or a page server's export: "
                    "it needs 'persistent' or 'pageserver' or 'pfile' below it, got 'mapped' "
                    "(mapped memory is not a file that may be mapped anywhere, nor a page "
                    "server)"], msgs
    # a registered layer's side file is no data file's name
    msgs = errors_of(rec + 'container a of item = top2ds[array[pfile(file = "x.db-wal")]];\n')
    assert len(msgs) == 1 and 'ends in "-wal", which names the wal of a file' in msgs[0], msgs


def test_one_kind_of_transactions_per_spec(monkeypatch):
    """Two different transactional layers would both write <prefix>_begin and _commit."""
    monkeypatch.setitem(LAYERS, "wal", JournalCopy())
    msgs = errors_of("record item { id: u32; }\n"
                     'container a of item = top2ds[array[journal[persistent(file = "a.db")]]];\n'
                     'container b of item = top2ds[array[wal[persistent(file = "b.db")]]];\n')
    assert len(msgs) == 1 and "come from one kind of memory layer" in msgs[0], msgs


def test_layers_over_a_file_agree():
    """The mem layers over a file act on the whole file: containers sharing a file must
    have the same ones, with the same parameters."""
    msgs = errors_of("record item { id: u32; }\n"
                     'container a of item = top2ds[array[journal(group = 2)[persistent(file = "a.db")]]];\n'
                     'container b of item = top2ds[array[journal[persistent(file = "a.db")]]];\n')
    assert len(msgs) == 1 and "but not its journal: 'a' has journal(checkpoint = 4194304, " \
        "group = 2, sync = true), 'b' has journal(checkpoint = 4194304, group = 1, sync = true)" \
        in msgs[0], msgs


@pytest.mark.parametrize("name", [n for n in MEM_LAYERS if LAYERS[n].below is None])
def test_every_bottom_memory_has_a_links_spec(name):
    """tests/layers/test_links.py runs its schema over every bottom memory layer of the registry,
    each from its own spec (the same schema over that memory)."""
    if LAYERS[name].file_is_uri:
        pytest.skip(f"{name}: a memory on a server (a URI, not a path in the test's directory); "
                    f"tests/layers/test_pageserver.py and the differential matrix run it")
    spec = ROOT / "tests" / "specs" / f"links_{name}.p2"
    assert spec.exists(), (f"memory layer '{name}': write {spec.relative_to(ROOT)}, the "
                           f"schema of links_transient.p2 over {name}")
