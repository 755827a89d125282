"""p2gen.runtime.pyapi: Errors."""
from __future__ import annotations

from typing import Optional

from ._base import P2_EBUSY, P2_ECLOSED, P2_ECONFLICT, P2_EDUP, P2_EFORMAT, P2_EMISMATCH, P2_ERANGE, P2_NOTFOUND


class P2Error(Exception):
    """An error of a generated data manager; `.code` is its P2_* code (None if none)."""
    code: Optional[int] = None

    def __init__(self, message: str, code: Optional[int] = None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code

    def __str__(self) -> str:
        return self.message


class NotFoundError(P2Error, KeyError):
    """P2_NOTFOUND: no such element."""
    code = P2_NOTFOUND


class DuplicateError(P2Error):
    """P2_EDUP: the key is already present in unique storage."""
    code = P2_EDUP


class RangeError(P2Error, ValueError, OverflowError):
    """P2_ERANGE, or a value that does not fit its field."""
    code = P2_ERANGE


class ClosedError(P2Error):
    """P2_ECLOSED: the database was closed."""
    code = P2_ECLOSED


class FormatError(P2Error):
    """P2_EFORMAT: not a p2gen file, bad version, truncated or corrupt."""
    code = P2_EFORMAT


class MismatchError(P2Error):
    """P2_EMISMATCH: the file was made by another spec or type equation."""
    code = P2_EMISMATCH


class BusyError(P2Error):
    """P2_EBUSY: the file is locked by another open database; or close() / abort() from
    inside a call on the database (user code run by an argument), which is refused."""
    code = P2_EBUSY


class ConflictError(P2Error):
    """P2_ECONFLICT: another client of the object server committed what this transaction
    read since it read it; nothing was shipped: abort(), then run the transaction again."""
    code = P2_ECONFLICT


_ERRORS = {P2_NOTFOUND: NotFoundError, P2_EDUP: DuplicateError, P2_ERANGE: RangeError,
           P2_ECLOSED: ClosedError, P2_EFORMAT: FormatError, P2_EMISMATCH: MismatchError,
           P2_EBUSY: BusyError, P2_ECONFLICT: ConflictError}


def error_for(code: int, message: str) -> P2Error:
    """The exception for a P2_* code."""
    return _ERRORS.get(code, P2Error)(message, code)
