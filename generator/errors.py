"""Errors a user can cause, each pinned to a place in the spec.

A `SpecError` renders like a compiler diagnostic:

    tpcb.p2:7:22: error: layer 'hash' needs a layer of realm 'ds' below it, got 'persistent' (realm 'mem')
        = top2ds_qualify[hash[persistent]]
                              ^^^^^^^^^^
"""
from __future__ import annotations

from typing import Optional

from .model import Pos


class P2Error(Exception):
    """Base of every error p2gen reports to a user (CLI exit code 1)."""


class SpecError(P2Error):
    def __init__(self, message: str, pos: Optional[Pos] = None, source: Optional[str] = None):
        super().__init__(message)
        self.message = message
        self.pos = pos
        self.source = source

    @property
    def line(self) -> Optional[int]:
        return self.pos.line if self.pos else None

    @property
    def col(self) -> Optional[int]:
        return self.pos.col if self.pos else None

    def render(self) -> str:
        if self.pos is None:
            return f"error: {self.message}"
        head = f"{self.pos}: error: {self.message}"
        if not self.source:
            return head
        lines = self.source.split("\n")   # as the lexer counts lines (splitlines also breaks at \f, \u2028 ...)
        if not (1 <= self.pos.line <= len(lines)):
            return head
        text = lines[self.pos.line - 1].rstrip("\r").expandtabs(1)
        start = max(self.pos.col - 1, 0)
        width = max(1, min(self.pos.length, max(len(text) - start, 1)))
        return f"{head}\n    {text}\n    {' ' * start}{'^' * width}"

    def __str__(self) -> str:
        return self.render()


class SpecErrors(P2Error):
    """Several independent errors found in one pass (reported together, in file order)."""

    def __init__(self, errors: list[SpecError]):
        self.errors = sorted(errors, key=lambda e: (e.line or 0, e.col or 0))
        super().__init__("\n".join(e.render() for e in self.errors))

    def __str__(self) -> str:
        return "\n".join(e.render() for e in self.errors)


class BuildError(P2Error):
    """The C compiler (or CFFI) failed on generated code: a p2gen bug or a bad --cc/--cflags."""


class EnvError(P2Error):
    """The machine cannot do what was asked, whatever the spec: a C compiler that cannot be
    run, an output directory that cannot be written. One line, no traceback."""


def os_reason(e: OSError, about: str = "") -> str:
    """`Not a directory: 'out/sub'` from an OSError, without the errno noise (and without
    the file name when it is `about`, the one the message names already)."""
    why = e.strerror or str(e)
    return f"{why}: '{e.filename}'" if e.filename and e.filename != about else why
