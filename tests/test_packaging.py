"""`pip install .` (not only editable) must ship the templates, runtime C and grammar."""
import os
import subprocess
import sys
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_wheel_ships_templates_runtime_and_parser(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                           "-q", "-w", str(tmp_path), ROOT], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    wheel = next(p for p in os.listdir(tmp_path) if p.endswith(".whl"))
    names = set(zipfile.ZipFile(tmp_path / wheel).namelist())
    layers = [f for f in os.listdir(os.path.join(ROOT, "layers")) if f.endswith((".py", ".j2"))]
    for f in layers:
        assert f"p2gen/layers/{f}" in names
    for f in ("p2gen/runtime/p2_runtime.c", "p2gen/runtime/p2_runtime.h",
              "p2gen/templates/spec.c.j2", "p2gen/templates/spec.h.j2",
              "p2gen/grammar/P2SpecParser.py", "p2gen/cli.py", "p2gen/c_macros.txt",
              "p2gen/c_decls.txt"):
        assert f in names, f
    entry = [n for n in names if n.endswith("entry_points.txt")]
    assert entry
