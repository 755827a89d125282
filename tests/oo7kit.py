"""What the OO7 conformance tests share: running bench/oo7's conformance checker
(oo7_conform) and reading its report ("ok <check> <value>" / "FAIL ..." lines, then
"N passed, M failed")."""
from __future__ import annotations

import shlex
import subprocess


def run(exe: str, env: dict, *args: str) -> tuple[subprocess.CompletedProcess, dict]:
    """Run the checker; the results of its passed checks by name."""
    proc = subprocess.run([exe, *args], capture_output=True, text=True, env=env, timeout=300)
    results = {}
    for line in proc.stdout.splitlines():
        if line.startswith("ok "):
            name, _, value = line[3:].partition(" ")
            results[name] = value
    return proc, results


def assert_all_passed(proc: subprocess.CompletedProcess) -> None:
    failures = [l for l in proc.stdout.splitlines() if l.startswith("FAIL")]
    assert proc.returncode == 0 and not failures, (
        f"{shlex.join(proc.args)}\nexit {proc.returncode}\n" + "\n".join(failures) + "\n"
        + proc.stderr[-4000:])
    assert proc.stdout.rstrip().endswith(" 0 failed")
