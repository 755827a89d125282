"""C and C++ builds of a spec as users make them, outside p2gen:

- CMake: examples/cmake (a C and a C++ program over the README's bank.p2) configured with
  -Dp2gen_DIR="$(p2gen cmake-dir)", built with -Wall -Wextra -Werror, run; then the spec is
  edited and the next build regenerates the header (p2gen_add_spec's custom command), and a
  build with nothing changed generates nothing.
- pkg-config: `p2gen build` writes <prefix>.pc beside lib<prefix>.a; a program compiled
  with `pkg-config --cflags --libs <prefix>` links and runs, from a copy of the output
  directory elsewhere too (the file names its directory as ${pcfiledir}).

.ci/run installs cmake and pkg-config; without them these tests are skipped."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "cmake"


def _env():
    """PATH with this environment's bin directory first: where `p2gen` is."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), env.get("PATH", "")])
    return env


def _run(cmd, cwd, env):
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, f"{cmd}\n{proc.stdout}\n{proc.stderr}"
    return proc


def test_cmake_example_builds_runs_and_follows_the_spec(tmp_path, cc):
    cmake = shutil.which("cmake")
    if cmake is None or not shutil.which("c++"):
        pytest.skip("no cmake or C++ compiler (.ci/run installs them)")
    env = _env()
    src, build = tmp_path / "src", tmp_path / "build"
    shutil.copytree(EXAMPLE, src)
    cmake_dir = _run(["p2gen", "cmake-dir"], tmp_path, env).stdout.strip()
    assert (Path(cmake_dir) / "p2genConfig.cmake").is_file()
    _run([cmake, "-S", str(src), "-B", str(build), f"-Dp2gen_DIR={cmake_dir}",
          "-DCMAKE_C_FLAGS=-Wall -Wextra -Werror", "-DCMAKE_CXX_FLAGS=-Wall -Wextra -Werror"],
         tmp_path, env)
    _run([cmake, "--build", str(build)], tmp_path, env)
    data = tmp_path / "data"
    data.mkdir()
    assert _run([str(build / "bank_app")], data, env).stdout == "ada has 100\n"
    assert _run([str(build / "bank_app")], data, env).stdout == "ada has 200\n"
    assert _run([str(build / "bank_list")], data, env).stdout == "ada 200\n"

    # nothing changed: nothing generated
    out = _run([cmake, "--build", str(build)], tmp_path, env).stdout
    assert "p2gen:" not in out, out
    # the spec edited: regenerated, rebuilt
    header = build / "p2gen" / "bank" / "bank.h"
    assert "bank_poor_open" not in header.read_text()
    spec = src / "bank.p2"
    spec.write_text(spec.read_text() + "cursor poor on accounts where balance < $max;\n")
    out = _run([cmake, "--build", str(build)], tmp_path, env).stdout
    assert "p2gen: bank.h and bank.c" in out, out
    assert "bank_poor_open" in header.read_text()
    assert _run([str(build / "bank_app")], data, env).stdout == "ada has 300\n"


def test_pkg_config_file(tmp_path, cc):
    pkg_config = shutil.which("pkg-config") or shutil.which("pkgconf")
    if pkg_config is None:
        pytest.skip("no pkg-config (.ci/run installs it)")
    env = _env()
    shutil.copy(EXAMPLE / "bank.p2", tmp_path / "bank.p2")
    shutil.copy(EXAMPLE / "app.c", tmp_path / "app.c")
    _run(["p2gen", "build", "-q", "bank.p2", "-o", "out"], tmp_path, env)
    pc = (tmp_path / "out" / "bank.pc").read_text()
    assert "prefix=${pcfiledir}" in pc and str(tmp_path) not in pc, pc
    # the output directory moved: the .pc file follows it
    shutil.move(str(tmp_path / "out"), str(tmp_path / "moved"))
    pc_env = dict(env, PKG_CONFIG_PATH=str(tmp_path / "moved"))
    flags = _run([pkg_config, "--cflags", "--libs", "bank"], tmp_path, pc_env).stdout.split()
    assert f"-I{tmp_path / 'moved'}" in flags, flags
    _run([cc, "-std=c11", "-Wall", "-Wextra", "-Werror", "app.c", *flags, "-o", "app"],
         tmp_path, env)
    assert _run([str(tmp_path / "app")], tmp_path, env).stdout == "ada has 100\n"


def test_build_prints_a_line_per_step(tmp_path):
    """p2gen build's progress: a line per step on stderr with the elapsed time (on a
    terminal, or P2GEN_PROGRESS=1), none with -q."""
    shutil.copy(EXAMPLE / "bank.p2", tmp_path / "bank.p2")
    env = dict(_env(), P2GEN_PROGRESS="1")
    err = _run(["p2gen", "build", "bank.p2", "-o", "out"], tmp_path, env).stderr.splitlines()
    assert [line.split("] ", 1)[1] for line in err] == [
        "generating the C of bank.p2", "compiling libbank.a"], err
    assert all(line.startswith("p2gen: [") and " s] " in line for line in err), err
    proc = _run(["p2gen", "build", "-q", "bank.p2", "-o", "out"], tmp_path, env)
    assert proc.stdout == proc.stderr == ""
