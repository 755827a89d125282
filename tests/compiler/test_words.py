"""Help texts, reports and every shipped file speak of features, not of the tracker: no
"issue 5" / "Targets of issue 3" where a user reads it (the help of every command, the
package's sources and templates, the benchmark drivers, READMEs and spec files)."""
import os
import re

import click
from click.testing import CliRunner

from p2gen.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TRACKER = re.compile(r"\bissues? ?#?\d+", re.IGNORECASE)
SHIPPED = ("generator", "layers", "runtime", "bench", "type_equations", "scripts")
EXTS = (".py", ".j2", ".c", ".h", ".cc", ".md", ".p2", ".sh", ".g4")


def _commands(group, path=()):
    yield path
    if isinstance(group, click.Group):
        for name, cmd in group.commands.items():
            yield from _commands(cmd, path + (name,))


def test_help_texts_name_features():
    runner = CliRunner()
    for path in _commands(main):
        r = runner.invoke(main, [*path, "--help"])
        assert r.exit_code == 0, (path, r.output)
        assert not TRACKER.search(r.output), (path, TRACKER.search(r.output).group(0))


def test_shipped_files_name_features():
    found = []
    for top in SHIPPED + ("README.md",):
        p = os.path.join(ROOT, top)
        files = [p] if os.path.isfile(p) else [
            os.path.join(d, f) for d, dirs, fs in os.walk(p)
            if not any(x in d for x in ("__pycache__", "/build", "/results", "/grammar"))
            for f in fs if f.endswith(EXTS)]
        for f in files:
            with open(f, encoding="utf-8", errors="replace") as fh:
                for n, line in enumerate(fh, 1):
                    if TRACKER.search(line):
                        found.append(f"{os.path.relpath(f, ROOT)}:{n}: {line.strip()}")
    assert not found, "tracker words where users read them:\n" + "\n".join(found)
