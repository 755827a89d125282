"""The order scripts/test.sh's workers take the suite's files in (conftest.scope_rank):
the files named as long first, in their order, then the others most tests first, the
spread tests last; a long file renamed or removed fails here instead of silently starting
last."""
from __future__ import annotations

from pathlib import Path

from conftest import LONG_FILES, SPREAD_FILES, scope_rank

TESTS = Path(__file__).resolve().parents[1]


def test_long_files_exist():
    names = {p.name for p in TESTS.glob("*/test_*.py")}
    assert not [n for n in LONG_FILES if n not in names]
    assert not [n for n in SPREAD_FILES if n not in names]


def test_long_files_first_spread_tests_last():
    spread = sorted(SPREAD_FILES)[0]
    units = [("tests/compiler/test_many.py", 300), (f"tests/layers/{spread}::t[a]", 1),
             (f"tests/x/{LONG_FILES[1]}", 2), ("tests/compiler/test_few.py", 3),
             (f"tests/layers/{spread}::pageserver", 20), (f"tests/x/{LONG_FILES[0]}", 1)]
    order = [u for _i, u in sorted(enumerate(units), key=lambda iu: scope_rank(iu[1][0], iu[1][1], iu[0]))]
    assert [s for s, _n in order] == [
        f"tests/x/{LONG_FILES[0]}", f"tests/x/{LONG_FILES[1]}", "tests/compiler/test_many.py",
        "tests/compiler/test_few.py", f"tests/layers/{spread}::pageserver",
        f"tests/layers/{spread}::t[a]"]
