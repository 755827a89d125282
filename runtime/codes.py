"""The runtime's return codes (P2_OK, P2_END, ..., P2_EBUSY), read from their one table.

The table is the macro P2_ERROR_LIST in p2_runtime.h, which ships beside this module: one
row X(name, value, message) per code. The C runtime expands it into its enum and
p2_strerror(); Python takes the rows from here (the Python runtime's constants, the CFFI
declarations of a binding), so a code added to or changed in the table reaches both.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

HEADER = Path(__file__).with_name("p2_runtime.h")


class Code(NamedTuple):
    name: str      # "P2_EDUP"
    value: int     # 3
    message: str   # "key already present" (p2_strerror says "P2_EDUP: key already present")


_DEFINE = re.compile(r"^#define P2_ERROR_LIST\(X\)[ \t]*\\\n((?:.*\\\n)*.*\n)", re.M)
_ROW = re.compile(r'\bX\(\s*(P2_[A-Z0-9_]+)\s*,\s*(\d+)\s*,\s*"([^"\\\n]*)"\s*\)')
_COMMENT = re.compile(r"/\*.*?\*/", re.S)


def parse(header_text: str) -> tuple[Code, ...]:
    """The rows of P2_ERROR_LIST in the text of p2_runtime.h, in table order. Raises
    ValueError if the macro is missing, has no rows, or holds anything but rows and
    comments (a row this parser would not understand, e.g. a message with an escape
    sequence, must not be skipped silently)."""
    m = _DEFINE.search(header_text)
    if m is None:
        raise ValueError("p2_runtime.h: no '#define P2_ERROR_LIST(X)' table")
    body = _COMMENT.sub(" ", m.group(1).replace("\\\n", "\n"))
    rows = tuple(Code(name, int(value), message) for name, value, message in _ROW.findall(body))
    rest = _ROW.sub(" ", body).strip()
    if not rows or rest:
        raise ValueError(f"p2_runtime.h: P2_ERROR_LIST holds something other than "
                         f"X(name, value, \"message\") rows: {rest[:60]!r}")
    names = [c.name for c in rows]
    values = [c.value for c in rows]
    if len(set(names)) != len(names) or len(set(values)) != len(values):
        raise ValueError("p2_runtime.h: P2_ERROR_LIST repeats a name or a value")
    return rows


CODES: tuple[Code, ...] = parse(HEADER.read_text())
"""Every return code, in table order."""
