"""The compiler's passes depend one way: no module of the p2gen package imports, directly
or through others, a module that imports it back -- imports inside function bodies count,
since they are how a cycle hides. Read from the source (ast), not by importing."""
from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[2] / "generator"


def _imports(path: Path, module: str) -> set:
    """The p2gen.* modules (first level: p2gen.build, p2gen.render, ...) `path` imports."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:                      # from .x import y / from . import x
                if node.module:
                    out.add(node.module.split(".")[0])
                else:
                    out.update(a.name for a in node.names)
            elif node.module and node.module.startswith("p2gen."):
                out.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("p2gen."):
                    out.add(a.name.split(".")[1])
    own = {p.stem for p in PKG.glob("*.py") if p.stem != "__init__"}
    return {m for m in out if m in own and m != module}


def import_graph() -> dict:
    return {p.stem: _imports(p, p.stem) for p in sorted(PKG.glob("*.py"))
            if p.stem != "__init__"}


def cycles(graph: dict) -> list:
    """Every strongly connected component of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_compiler_package_has_no_import_cycle():
    found = cycles(import_graph())
    assert not found, "import cycles in the compiler package (p2gen/): " + "; ".join(
        " <-> ".join(c) for c in found)


def test_the_cycle_finder_finds_a_cycle():
    # the test above can fail: a graph with a hidden cycle is caught
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_pass_imports_the_pipeline():
    # the passes and the toolbox come before the pipeline (build.py): none imports it
    graph = import_graph()
    for m in ("toolchain", "parser", "check", "plan", "render", "names", "harness", "ir",
              "model", "errors", "cnames"):
        assert "build" not in graph.get(m, set()), f"{m}.py imports build.py"
