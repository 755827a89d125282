"""`pip install .` (not only editable) must ship the templates, runtime C and grammar."""
import json
import os
import subprocess
import sys
import zipfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """`pip wheel .` of the checkout, built once for the module's tests."""
    wheels = tmp_path_factory.mktemp("wheels")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                           "-q", "-w", str(wheels), ROOT], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return next(wheels.glob("*.whl"))


def test_wheel_ships_templates_runtime_and_parser(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    layers = [f for f in os.listdir(os.path.join(ROOT, "layers")) if f.endswith((".py", ".j2"))]
    for f in layers:
        assert f"p2gen/layers/{f}" in names
    for f in ("p2gen/runtime/p2_runtime.c", "p2gen/runtime/p2_runtime.h", "p2gen/runtime/codes.py",
              "p2gen/runtime/pyapi/__init__.py", "p2gen/runtime/pyapi/database.py",
              "p2gen/templates/spec.c.j2", "p2gen/templates/spec.h.j2", "p2gen/templates/pyfast.c",
              "p2gen/grammar/P2SpecParser.py", "p2gen/cli.py", "p2gen/c_macros.txt",
              "p2gen/c_decls.txt", "p2gen/c_runtime.txt", "p2gen/cmake/p2genConfig.cmake", "p2gen/bench/labflow/gen.py", "p2gen/bench/labflow/model.py"):
        assert f in names, f
    entry = [n for n in names if n.endswith("entry_points.txt")]
    assert entry


def test_bench_runs_from_an_installed_package(tmp_path, wheel):
    """`pip install .` (not editable), then `p2gen bench ...` from a directory that is not a
    checkout: the drivers and the variant specs ship as package data (p2gen.bench,
    p2gen.type_equations), and the Python benchmark runs end to end."""
    names = set(zipfile.ZipFile(wheel).namelist())
    for d, exts in (("bench/tpcb", (".cc", ".h")), ("bench/oo7", (".cc", ".h")),
                    ("bench/range", (".cc", ".h", ".p2")), ("bench/python", (".p2",)),
                    ("bench/social", (".cc", ".p2")), ("bench/acob", (".cc", ".h")),
                    ("type_equations/tpcb", (".p2",)), ("type_equations/oo7", (".p2",)),
                    ("type_equations/acob", (".p2",))):
        for f in os.listdir(os.path.join(ROOT, d)):
            if f.endswith(exts):
                assert f"p2gen/{d}/{f}" in names, f
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    proc = subprocess.run([py, "-m", "pip", "install", "-q", "--no-deps", str(wheel)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    probe = ("import p2gen, sys; from p2gen.bench.tpcb import run as t; "
             "from p2gen.bench.oo7 import run as o; "
             "assert str(p2gen.__file__).startswith(sys.prefix), p2gen.__file__; "
             "t.driver_sources(); o.driver_sources(); "
             "from p2gen.bench.range import run as r; r.driver_sources(); "
             "assert all(__import__('os').path.exists(v.spec) for v in r.default_variants()); "
             "print(len(t.default_variants(False)), len(o.default_variants()))")
    proc = subprocess.run([py, "-c", probe], cwd=elsewhere, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    n_tpcb, n_oo7 = map(int, proc.stdout.split())
    assert n_tpcb >= 10 and n_oo7 >= 4, proc.stdout
    proc = subprocess.run([str(venv / "bin" / "p2gen"), "bench", "python", "--rows", "20",
                           "--reps", "1", "--system", "P2", "--system", "dict", "--no-plots",
                           "--oo7-size", "tiny"],
                          cwd=elsewhere, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads((elsewhere / "bench" / "results" / "python.json").read_text())
    # every workload ran from the installed specs (tpcb_py.p2, oo7_py.p2, social_py.p2)
    assert {b["workload"] for b in doc["benchmarks"]} == {"tpcb", "oo7", "social"}


def test_tests_are_arranged_like_the_code():
    """Every test file sits in the directory of what it tests (tests/conftest.py, TEST_DIRS:
    compiler, layers, runtime, bindings, bench), none directly in tests/."""
    from conftest import TEST_DIRS
    tests = os.path.join(ROOT, "tests")
    loose = sorted(f for f in os.listdir(tests) if f.startswith("test_") and f.endswith(".py"))
    assert not loose, f"move {loose} into one of tests/{{{','.join(TEST_DIRS)}}}/"
    dirs = {d for d in os.listdir(tests) if os.path.isdir(os.path.join(tests, d))
            and any(f.startswith("test_") and f.endswith(".py") for f in os.listdir(os.path.join(tests, d)))}
    assert dirs <= set(TEST_DIRS), f"test files in {sorted(dirs - set(TEST_DIRS))}: add to TEST_DIRS"
