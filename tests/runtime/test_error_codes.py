"""The return codes have one table: P2_ERROR_LIST in runtime/p2_runtime.h.

The C enum, p2_strerror(), the harness's code names and the runtime test's are expanded
from it by the preprocessor; the Python runtime's constants and a binding's CFFI
declarations are read from it (p2gen.runtime.codes). These tests check that the Python
reading is the table the compiler sees, and that what is still written by hand (which
Python exception a code raises, the codes the generated header names in prose) agrees
with it: a code added to the table fails here until each place has decided about it.
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from conftest import runtime_obj
from p2gen.runtime import pyapi
from p2gen.runtime.codes import CODES, parse

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = ROOT / "runtime"

# Compatibility: these codes are compiled into programs and Python extensions and named by
# Python users; they keep their names and numbers for good (new codes come after them).
FROZEN = (("P2_OK", 0), ("P2_END", 1), ("P2_NOTFOUND", 2), ("P2_EDUP", 3), ("P2_ERANGE", 4),
          ("P2_ENOMEM", 5), ("P2_EIO", 6), ("P2_EFORMAT", 7), ("P2_EMISMATCH", 8),
          ("P2_EINVAL", 9), ("P2_ECLOSED", 10), ("P2_EBUSY", 11))
NOT_ERRORS = {"P2_OK", "P2_END"}     # success, and a cursor's normal end


def test_existing_codes_keep_their_names_and_numbers():
    assert [(c.name, c.value) for c in CODES[:len(FROZEN)]] == list(FROZEN)


def test_python_reads_the_table_the_compiler_sees(cc, tmp_path):
    """Every row the preprocessor expands is a row the Python parser read, with the same
    value, and p2_strerror() says "<name>: <message>" for it."""
    prog = ['#include <stdio.h>', '#include "p2_runtime.h"', "",
            "#define P2_COUNT_(name, value, message) + 1",
            "int main(void)", "{",
            '    printf("rows %d\\n", 0 P2_ERROR_LIST(P2_COUNT_));']
    for c in CODES:
        prog.append(f'    printf("{c.name} %d %s\\n", {c.name}, p2_strerror({c.name}));')
    prog += [f'    printf("unknown %s\\n", p2_strerror({max(c.value for c in CODES) + 1}));',
             "    return 0;", "}", ""]
    src = tmp_path / "codes.c"
    src.write_text("\n".join(prog))
    exe = tmp_path / "codes"
    flags = ["-std=c11", "-O0", "-g0", "-Wall", "-Wextra", "-Werror"]   # test_verify.py's runtime object
    res = subprocess.run([cc, *flags, "-I", str(RUNTIME), str(src),
                          runtime_obj(cc, flags), "-o", str(exe)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    lines = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.splitlines()
    assert lines[0] == f"rows {len(CODES)}"
    for c, line in zip(CODES, lines[1:]):
        assert line == f"{c.name} {c.value} {c.name}: {c.message}"
    assert lines[-1] == "unknown unknown error"


def test_parser_refuses_what_it_cannot_read():
    text = (RUNTIME / "p2_runtime.h").read_text()
    assert parse(text) == CODES
    row = next(line for line in text.splitlines() if "X(P2_EIO," in line)
    for bad in (row.replace("X(P2_EIO,", "Y(P2_EIO,"),                  # not a row
                row.replace('"input/output error"', '"input\\toutput"'),  # an escape
                row.replace("6,", "5,")):                                 # a repeated value
        with pytest.raises(ValueError):
            parse(text.replace(row, bad))


def test_python_constants_are_the_table():
    for c in CODES:
        assert getattr(pyapi, c.name) == c.value, c.name


def test_every_error_code_has_its_python_exception():
    """A code raises its own exception class (pyapi._ERRORS; the class's docstring names
    the code) or P2Error itself, as the Errors paragraph of pyapi's docstring lists."""
    m = re.search(r"other codes \(([^)]*)\) raise\s+P2Error itself", pyapi.__doc__)
    assert m, "pyapi's docstring no longer says which codes raise P2Error itself"
    plain = {name.strip() for name in m.group(1).split(",")}
    by_value = {c.value: c.name for c in CODES}
    mapped = {}
    for value, cls in pyapi._ERRORS.items():
        assert cls.code == value and value in by_value, cls
        assert cls.__doc__.startswith(by_value[value]), (cls, cls.__doc__)
        assert cls.__name__ in pyapi.__doc__, f"pyapi's docstring does not name {cls.__name__}"
        mapped[by_value[value]] = cls
    errors = {c.name for c in CODES} - NOT_ERRORS
    assert not plain & set(mapped), plain & set(mapped)
    assert plain | set(mapped) == errors, (
        f"codes without a decision in pyapi: {sorted(errors - plain - set(mapped))}; "
        f"not codes: {sorted((plain | set(mapped)) - errors)}")


def test_generated_header_names_every_error_code():
    """The conventions paragraph of the generated header lists the error codes."""
    text = (ROOT / "generator" / "templates" / "spec.h.j2").read_text()
    m = re.search(r"an error code from p2_runtime\.h\s+\*\s+\(([^)]*)\)", text)
    assert m, "spec.h.j2 no longer lists the error codes"
    listed = [name.strip(" *\n") for name in m.group(1).split(",")]
    assert listed == [c.name for c in CODES if c.name not in NOT_ERRORS]
