"""`p2gen bench ...` lives in its own module (bench/cli.py), added under the compiler's
command group (generator/cli.py): its commands answer -h and lay out their help as every
other p2gen command does (settings inherited from the compiler's group), and their
options are declared there, not in the compiler's CLI."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from p2gen.bench import cli as bench_cli
from p2gen.cli import CONTEXT, main

COMMANDS = sorted(main.commands["bench"].commands)


def test_bench_group_is_the_bench_module_s():
    assert main.commands["bench"] is bench_cli.bench
    assert {"tpcb", "range", "oo7", "python", "labflow"} <= set(COMMANDS)
    for name in COMMANDS:
        assert main.commands["bench"].commands[name].callback.__module__ == "p2gen.bench.cli"


def help_text(*args: str) -> str:
    # a real process: Click's test runner forces 80 columns, hiding the width setting
    proc = subprocess.run([sys.executable, "-m", "p2gen", *args], capture_output=True,
                          text=True, env={**os.environ, "COLUMNS": "120"}, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.parametrize("name", COMMANDS)
def test_bench_command_help_as_the_compiler_s(name):
    # -h, not only --help, and the compiler's width (100 columns), not Click's default (80)
    short = help_text("bench", name, "-h")
    assert short == help_text("bench", name, "--help")
    assert short.startswith(f"Usage: p2gen bench {name} [OPTIONS]"), short[:80]
    widest = max(len(line) for line in short.splitlines())
    assert 80 < widest <= CONTEXT["max_content_width"], widest
