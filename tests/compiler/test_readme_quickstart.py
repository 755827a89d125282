"""The README's quickstart, run exactly as written.

Every fenced block of README.md preceded by a marker comment is part of the quickstart, in
the order they appear:

    <!-- quickstart: run -->          the block is shell commands: run them
    <!-- quickstart: file NAME -->    the block is a file the reader saves as NAME, in the
                                      directory the commands before it left them in

The blocks become one bash script (`set -euo pipefail`), a file block a here-document, run
from a copy of the checkout (what `git ls-files` lists, untracked files not ignored included)
with HOME a fresh directory: the install block makes its own virtual environment and runs
`pip install .` there, as a reader would (it needs the package index, as scripts/setup.sh
does; pip's cache is the user's own)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"

MARKER = re.compile(r"^<!-- quickstart: (run|file ([\w.-]+)) -->\n```[\w+-]*\n(.*?)^```$",
                    re.M | re.S)
EOF_WORD = "P2GEN_QUICKSTART_EOF"


def quickstart_blocks(text: str) -> list:
    """[(kind, file name or None, body)] of the marked blocks, in order."""
    out = []
    for m in MARKER.finditer(text):
        kind = "run" if m.group(1) == "run" else "file"
        out.append((kind, m.group(2), m.group(3)))
    return out


def quickstart_script(text: str) -> str:
    lines = ["set -euo pipefail"]
    for kind, name, body in quickstart_blocks(text):
        if kind == "run":
            lines.append(body.rstrip("\n"))
        else:
            assert EOF_WORD not in body
            lines.append(f"cat > {name} <<'{EOF_WORD}'\n{body}{EOF_WORD}")
    return "\n".join(lines) + "\n"


def test_quickstart_blocks_are_marked():
    """The markers catch what the quickstart needs: the install, the spec, a C and a
    Python program, and the commands between (a marker lost in an edit fails here, fast)."""
    blocks = quickstart_blocks(README.read_text(encoding="utf-8"))
    files = [name for kind, name, _ in blocks if kind == "file"]
    assert files == ["bank.p2", "app.c", "app.py"], files
    runs = [body for kind, _, body in blocks if kind == "run"]
    assert "pip install ." in runs[0]
    assert any("p2gen build bank.p2 --python" in body for body in runs)


def _copy_checkout(dst: Path) -> None:
    if (ROOT / ".git").exists() and shutil.which("git"):
        names = subprocess.run(
            ["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others",
             "--exclude-standard"], check=True, capture_output=True).stdout.split(b"\0")
        for raw in names:
            if not raw:
                continue
            rel = os.fsdecode(raw)
            src = ROOT / rel
            if not src.is_file():       # deleted in the work tree, not yet committed
                continue
            (dst / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst / rel)
    else:
        shutil.copytree(ROOT, dst, dirs_exist_ok=True, ignore=shutil.ignore_patterns(
            ".git", "build", "generated", "*.egg-info", ".pytest_cache", "__pycache__",
            ".venv", "results"))


def test_quickstart_runs_as_written(tmp_path):
    if not (shutil.which("cc") or shutil.which("gcc")):
        pytest.skip("no C compiler")
    checkout, home = tmp_path / "checkout", tmp_path / "home"
    checkout.mkdir()
    home.mkdir()
    _copy_checkout(checkout)
    script = quickstart_script(README.read_text(encoding="utf-8"))
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "PIP_USER")}
    env["HOME"] = str(home)
    env.setdefault("PIP_CACHE_DIR", str(Path.home() / ".cache" / "pip"))
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    # the reader's shell: this interpreter's directory is not on its PATH
    here = os.path.dirname(sys.executable)
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if p and os.path.abspath(p) != os.path.abspath(here))
    proc = subprocess.run(["bash", "-c", script], cwd=checkout, env=env,
                          capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, (
        f"the quickstart failed (status {proc.returncode})\n--- script\n{script}"
        f"--- stdout\n{proc.stdout}--- stderr\n{proc.stderr}")
    out = proc.stdout.splitlines()
    # what the README's comments say the runs print
    assert "ada has 100" in out and "ada has 200" in out, proc.stdout
    assert out[-1] == "ada 201", proc.stdout
