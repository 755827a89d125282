"""`p2gen build --wheel`: a generated module ships as a wheel that installs into a fresh
virtual environment without p2gen and runs there; its type stubs check a script that uses it.

The wheel is built once (through the command line) from a spec with a text field, a ref
field and a journal. The fresh environment has no pip of its own: this suite's pip installs
into it (`pip --python`), the wheel and what it requires (cffi), from the package index or
pip's cache as the quickstart test's install does."""
from __future__ import annotations

import ast
import base64
import csv
import hashlib
import io
import json
import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest
from mypy import api as mypy          # the test extras have mypy and wheel
from wheel.wheelfile import WheelFile

SPEC = """\
// shop.p2: customers with a note (text), sales naming a customer (ref), one journalled file
record customer { id: u32; name: char[24]; note: text; }
record sale     { id: u64; customer: ref customers; qty: u32 = 1; price: f64; }
container customers of customer
    = top2ds_qualify[hash[array[journal[persistent]]]]
    with hash(key = id, unique = true), persistent(file = "shop.db");
container sales of sale
    = top2ds_qualify[hash[array[journal[persistent]]]]
    with hash(key = id, unique = true), persistent(file = "shop.db");
cursor big on sales where qty >= $min;
"""

# Runs in the fresh environment, and is the script mypy --strict checks against the stubs.
SMOKE = '''\
import importlib
import json
import sys

import shop

d = sys.argv[1]
with shop.open(d) as db:
    ada = db.customers.insert(id=1, name="ada", note="likes \\u00fcml\\u00e4uts\\n" * 40)
    db.sales.insert(id=10, customer=ada, price=2.5)
    db.sales.insert(id=11, customer=ada, qty=7, price=1.25)
    found = db.sales.find(id=11)
    assert found is not None and found.qty == 7 and found.customer == ada.ref
    db.commit()
    db.sales.insert(id=12, customer=None, price=9.0)      # never committed: close drops it
    fast = getattr(shop, "_api").fast is not None   # the C paths (a private attribute)
    db.close()

with shop.open(d) as db:
    note: str = db.customers[1].note
    sale = db.sales.get(10)
    big = [s.id for s in db.big(min=5)]
    with db.transaction():
        db.sales.update(db.sales[10], qty=3)
    out = {"note": note, "customer": sale.customer if sale else -1,
           "ada": db.customers.find(1) is not None, "big": big,
           "ids": sorted(s.id for s in db.sales), "qty10": db.sales[10].qty, "fast": fast,
           "module": shop.__file__,
           "p2gen_loaded": sorted(m for m in sys.modules if m.split(".")[0] == "p2gen")}
try:
    importlib.import_module("p2gen")
    out["p2gen"] = "importable"
except ImportError:
    out["p2gen"] = "absent"
print(json.dumps(out))
'''

# Each line a mistake the stubs catch: (code, what mypy's message names)
MISTAKES = [
    ("db.sales.insert(id=3, price=1.5)", 'No overload variant of "insert"'),   # customer missing
    ('db.customers.find(name="x")', 'Unexpected keyword argument "name"'),     # not a key
    ("n: int = db.customers[2].note", 'expression has type "str"'),
    ("db.big(mn=1)", 'Unexpected keyword argument "mn"'),
    ("db.sales.update(1, colour=2)", 'Unexpected keyword argument "colour"'),
    ("db.customers.upsert(id=1, name=b'x', note=3)", 'No overload variant of "upsert"'),
]


def _env() -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "PIP_USER")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    root = tmp_path_factory.mktemp("wheel")
    spec = root / "shop.p2"
    spec.write_text(SPEC)
    proc = subprocess.run([sys.executable, "-m", "p2gen", "build", str(spec), "--wheel",
                           "--wheel-version", "1.2.3", "-o", str(root / "out"), "-q"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    wheels = list((root / "out").glob("*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory):
    """A fresh virtual environment (no p2gen) with only the wheel installed, and cffi."""
    env_dir = tmp_path_factory.mktemp("fresh") / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True)
    py = env_dir / "bin" / "python"
    proc = subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q",
                           str(wheel)], capture_output=True, text=True, env=_env(), timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return py


def test_the_wheel_is_named_tagged_and_recorded(wheel):
    tag = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    assert wheel.name.startswith(f"shop-1.2.3-{tag}-{tag}-"), wheel.name
    z = zipfile.ZipFile(wheel)
    names = z.namelist()
    record = z.read("shop-1.2.3.dist-info/RECORD").decode()
    rows = list(csv.reader(io.StringIO(record)))
    # every file once, with its sha256 and size; RECORD itself without
    assert sorted(r[0] for r in rows) == sorted(names)
    for path, digest, size in rows:
        if path.endswith("/RECORD"):
            assert (digest, size) == ("", "")
            continue
        data = z.read(path)
        want = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        assert (digest, int(size)) == (f"sha256={want}", len(data)), path
    # the package, its stubs and marker, the extension, the copied run-time support
    for n in ("shop/__init__.py", "shop/__init__.pyi", "shop/py.typed",
              "shop/_runtime/pyapi/__init__.py", "shop/_runtime/pyapi/database.py",
              "shop/_runtime/codes.py", "shop/_runtime/p2_runtime.h"):
        assert n in names, n
    assert any(n.startswith("shop/_shop_cffi.") and n.endswith(".so") for n in names), names
    # the copies are runtime/'s files as they are
    from p2gen.pybind import RUNTIME_SUPPORT
    runtime = Path(__file__).resolve().parents[2] / "runtime"
    for n in RUNTIME_SUPPORT:
        assert z.read(f"shop/_runtime/{n}") == (runtime / n).read_bytes(), n
    meta = z.read("shop-1.2.3.dist-info/METADATA").decode()
    assert "Name: shop\n" in meta and "Version: 1.2.3\n" in meta
    assert "Requires-Dist: cffi>=" in meta and "p2gen" not in meta.split("Summary")[0]
    assert "Root-Is-Purelib: false" in z.read("shop-1.2.3.dist-info/WHEEL").decode()
    # no import of p2gen anywhere in what runs (function bodies included)
    for n in names:
        if n.endswith(".py"):
            for node in ast.walk(ast.parse(z.read(n))):
                mods = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                        [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level
                        else [])
                assert not [m for m in mods if m.split(".")[0] == "p2gen"], (n, mods)
    # the wheel library reads it back and checks every hash against RECORD
    with WheelFile(str(wheel)) as wf:
        for n in wf.namelist():
            wf.read(n)


def test_the_wheel_runs_in_a_fresh_environment_without_p2gen(venv, tmp_path):
    script = tmp_path / "smoke.py"
    script.write_text(SMOKE)
    data = tmp_path / "data"
    data.mkdir()
    proc = subprocess.run([str(venv), str(script), str(data)], cwd=tmp_path,
                          capture_output=True, text=True, env=_env(), timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = json.loads(proc.stdout)
    assert out["p2gen"] == "absent" and out["p2gen_loaded"] == []
    assert Path(out["module"]).is_relative_to(venv.parent.parent), out["module"]
    assert out["note"] == "likes \u00fcml\u00e4uts\n" * 40
    assert out["ada"] and out["customer"] == 0
    assert out["ids"] == [10, 11]           # 12 was never committed
    assert out["big"] == [11] and out["qty10"] == 3
    assert out["fast"], "the extension's C paths did not load from the package"
    assert (data / "shop.db").exists()


@pytest.fixture(scope="module")
def mypy_cache(tmp_path_factory):
    """One cache for the module's mypy runs: the standard library's stubs are read once."""
    return ["--cache-dir", str(tmp_path_factory.mktemp("mypy-cache"))]


def test_the_stubs_type_a_script_and_catch_its_mistakes(venv, tmp_path, mypy_cache):
    good = tmp_path / "good.py"
    good.write_text(SMOKE)
    cache = mypy_cache
    # the installed package's stubs, found through py.typed
    stdout, stderr, status = mypy.run(["--strict", "--python-executable", str(venv), *cache,
                                       str(good)])
    assert status == 0, stdout + stderr
    bad = tmp_path / "bad.py"
    bad.write_text("import shop\n\nwith shop.open('.') as db:\n" + "".join(
        f"    {code}\n" for code, _ in MISTAKES))
    stdout, stderr, status = mypy.run(["--python-executable", str(venv), *cache, str(bad)])
    assert status == 1, stdout + stderr
    for line, (code, message) in enumerate(MISTAKES, start=4):
        assert any(out.startswith(f"{bad}:{line}: error:") and message in out
                   for out in stdout.splitlines()), (code, stdout)


@pytest.mark.parametrize("args, message", [
    (["--wheel-version", "1.0-beta"], "is not a version pip takes"),
    (["--prefix", "_shop"], "begins and ends with a letter or digit"),
])
def test_wheel_options_refused_before_the_build(tmp_path, args, message):
    spec = tmp_path / "shop.p2"
    spec.write_text(SPEC)
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "p2gen", "build", str(spec), "--wheel",
                           *args, "-o", str(out)], capture_output=True, text=True)
    assert proc.returncode == 1 and message in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    assert not list(out.glob("*.whl")) and not list(out.glob("*.so"))


# Stubs of committed specs with what the shop spec lacks: roles (OO7), composite keys and
# a database without a journal (LabFlow-1 on the heap). Made without a C build.
STUB_SPECS = ["type_equations/oo7/hash_ilist_journal.p2", "type_equations/labflow/all_transient.p2"]
STUB_USE = '''\
import all_transient as lf
import hash_ilist_journal as oo7


def walk(db: oo7.Database) -> list[int]:
    m = db.modules.find(id=1)
    assert m is not None
    out = [c.id for c in db.modules.complex_assemblies(m)]
    man = db.modules.man(m)
    if man is not None:
        out.append(man.text_len)
    db.modules.complex_assemblies.add(m, 3)
    db.commit()
    return out


def latest(db: lf.Database) -> int | None:
    row = db.involves_rows.find(mat=1, when=2)        # a composite key, by its fields
    hit = db.involves_rows.get((1, 2))
    return row.step if row is not None else (hit.step if hit else None)
'''
STUB_MISUSE = [
    ("db.modules.complex_assemblies.add(m, 'x')", "add"),             # a str as a member
    ("db.involves_rows.find(mat=1)", "find"),                         # half a composite key
    ("x: str = db.modules.man(m)", "assignment"),                     # a Record or None
]


def test_stubs_of_specs_with_roles_and_composite_keys(tmp_path, mypy_cache):
    from p2gen.build import load
    from p2gen.package import RUNTIME_SUPPORT, journalled_api, stubs
    from p2gen.pybind import binding_metadata
    from p2gen.render import header_declarations
    root = Path(__file__).resolve().parents[2]
    for rel in STUB_SPECS:
        checked = load(str(root / rel))
        declarations = header_declarations(checked)
        pkg = tmp_path / checked.prefix
        (pkg / "_runtime" / "pyapi").mkdir(parents=True)
        (pkg / "__init__.pyi").write_text(
            stubs(binding_metadata(checked), journalled_api(checked.prefix, declarations)))
        (pkg / "py.typed").write_text("")
        (pkg / "_runtime" / "__init__.py").write_text("")
        for n in RUNTIME_SUPPORT:
            (pkg / "_runtime" / n).write_bytes((root / "runtime" / n).read_bytes())
    assert "def commit" in (tmp_path / "hash_ilist_journal" / "__init__.pyi").read_text()
    assert "def commit" not in (tmp_path / "all_transient" / "__init__.pyi").read_text()
    use = tmp_path / "use.py"
    use.write_text(STUB_USE)
    bad = tmp_path / "bad.py"
    bad.write_text(STUB_USE + "\n\ndef bad(db: oo7.Database, d2: lf.Database) -> None:\n"
                   "    m = 1\n" + "".join(f"    {code.replace('db.involves', 'd2.involves')}\n"
                                          for code, _ in STUB_MISUSE))
    cache = [*mypy_cache, "--follow-imports=silent"]
    stdout, stderr, status = mypy.run(["--strict", *cache, str(use),
                                       str(tmp_path / "hash_ilist_journal" / "__init__.pyi"),
                                       str(tmp_path / "all_transient" / "__init__.pyi")])
    assert status == 0, stdout + stderr
    stdout, stderr, status = mypy.run([*cache, str(bad)])
    first = STUB_USE.count("\n") + 5
    for line, (code, what) in enumerate(STUB_MISUSE, start=first):
        assert any(out.startswith(f"{bad}:{line}: error:") and what in out
                   for out in stdout.splitlines()), (code, stdout)
