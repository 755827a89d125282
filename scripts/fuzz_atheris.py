#!/usr/bin/env python3
"""A libFuzzer-driven (atheris) fuzz target over the p2gen front end: parse, check, plan and
explain. Not part of the test suite; scripts/fuzz.sh runs it when atheris is installed
(pip install atheris). Any exception other than p2gen's own errors (P2Error), or an error
whose position lies outside the text, is a crash: libFuzzer stops and writes the input to
crash-<sha1> in the working directory.

    python scripts/fuzz_atheris.py [libFuzzer flags] [CORPUS_DIR ...]
    python scripts/fuzz_atheris.py -max_total_time=300 -dict=tests/fuzz/p2spec.dict corpus/
    python scripts/fuzz_atheris.py crash-1234...      # replay one input

The input bytes are decoded as UTF-8 (undecodable bytes become U+FFFD), so mutations of the
seed specs stay text. Seed a corpus with type_equations/**/*.p2 and tests/fuzz/seeds/*.p2
(scripts/fuzz.sh does). With --render the specs that check are also rendered (slower).
"""
import os
import sys

import atheris

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))

with atheris.instrument_imports(include=["p2gen"]):
    from p2gen.errors import P2Error  # noqa: F401  (instrumented with the rest of p2gen)
    from fuzz.frontend import run_frontend

RENDER = "--render" in sys.argv
if RENDER:
    sys.argv.remove("--render")


def test_one_input(data: bytes) -> None:
    run_frontend(data.decode("utf-8", "replace"), render=RENDER)


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
