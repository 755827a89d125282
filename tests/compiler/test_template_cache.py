"""The compiled layer templates kept in the user's cache directory (generator/render.py,
_TemplateCache): a `p2gen build` after the first loads them instead of compiling them, the
generated C is the same byte for byte, a template edited since is compiled again, the
`--line-directives` environment keeps its own entries, and a cache that cannot be made
costs nothing but the compile."""
from __future__ import annotations

import filecmp
import os
import subprocess
import sys
from pathlib import Path

from p2gen import render

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "type_equations" / "paper.p2"


def build(out: Path, cache: Path, *extra: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, P2GEN_CACHE_DIR=str(cache))
    proc = subprocess.run([sys.executable, "-m", "p2gen", "build", str(SPEC), "-o", str(out),
                           "--no-compile", *extra], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    return proc


def entries(cache: Path) -> dict:
    return {p.relative_to(cache / "templates"): p.stat().st_mtime_ns
            for p in (cache / "templates").rglob("*.cache")}


def test_second_build_loads_the_templates_and_writes_the_same_c(tmp_path):
    cache = tmp_path / "cache"
    build(tmp_path / "a", cache)
    first = entries(cache)
    assert first, "no compiled template was kept"
    assert len({p.parts[0] for p in first}) == 1          # one environment's directory
    build(tmp_path / "b", cache)
    assert entries(cache) == first                         # loaded, none written again
    for name in ("paper.c", "paper.h"):
        assert filecmp.cmp(tmp_path / "a" / name, tmp_path / "b" / name, shallow=False), name
    build(tmp_path / "lines", cache, "--line-directives")
    dirs = {p.parts[0] for p in entries(cache)}
    assert len(dirs) == 2                                  # its own entries, beside the others'


def test_a_cache_that_cannot_be_made_only_costs_the_compile(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("a file where the cache directory would be\n")
    build(tmp_path / "a", blocked)
    build(tmp_path / "b", tmp_path / "cache")
    for name in ("paper.c", "paper.h"):
        assert filecmp.cmp(tmp_path / "a" / name, tmp_path / "b" / name, shallow=False), name


def test_an_edited_template_is_compiled_again(tmp_path, monkeypatch):
    monkeypatch.setenv("P2GEN_CACHE_DIR", str(tmp_path / "cache"))
    layers = tmp_path / "layers"
    layers.mkdir()
    tmpl = layers / "t.j2"
    tmpl.write_text("first {{ x }}\n")
    assert render.make_env((str(layers),)).get_template("t.j2").render(x=1) == "first 1\n"
    assert entries(tmp_path / "cache")
    tmpl.write_text("second {{ x }}\n")
    # a new process's environment (nothing held in memory): the entry is stale
    assert render.make_env((str(layers),)).get_template("t.j2").render(x=2) == "second 2\n"
