"""p2gen.runtime.pyapi: Fields: checking and converting values."""
from __future__ import annotations

import operator
from typing import Any

from ._base import NOREF, NOREF32, TEXT_MAX, _MISSING
from .errors import RangeError


_INT_BITS = {"i8": 8, "i16": 16, "i32": 32, "i64": 64, "u8": 8, "u16": 16, "u32": 32, "u64": 64}


def _encode(value: Any, what: str = "the value") -> bytes:
    """str as UTF-8 (surrogate escapes back to their bytes), bytes-likes as they are. A str
    that has no UTF-8 spelling (a lone surrogate outside the escapes U+DC80..U+DCFF) is a
    value the field cannot hold: RangeError, like any other value that does not fit."""
    if not isinstance(value, str):
        return bytes(value)
    try:
        return value.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError as e:
        raise RangeError(f"{what}: {value!r:.80} cannot be encoded as UTF-8 ({e.reason} "
                         f"at index {e.start})") from None


class _Field:
    """How one typed value (a record field or a cursor parameter) crosses to C."""
    __slots__ = ("name", "kind", "tname", "length", "lo", "hi", "what", "target", "noref",
                 "default")

    def __init__(self, desc: dict, what: str):
        self.name = desc["name"]
        self.kind = desc["kind"]
        self.tname = desc["type"]   # i8 .. u64, f32, f64, char
        self.length = desc.get("length") or 0
        self.what = what     # "field 'x' of account" / "parameter $b of cursor c"
        self.target = desc.get("target")   # ref <container>: the container's name
        # the spec's default (`qty: u32 = 0`; None for a ref field's `none`), else _MISSING:
        # insert then needs the field
        self.default = desc.get("default", _MISSING)
        # what stands for no element: a ref field over 32-bit links is a u32
        self.noref = NOREF32 if self.target is not None and self.tname == "u32" else NOREF
        if self.kind == "int":
            bits = _INT_BITS[self.tname]
            signed = self.tname.startswith("i")
            self.lo = -(1 << (bits - 1)) if signed else 0
            self.hi = (1 << (bits - 1)) - 1 if signed else (1 << bits) - 1
        else:
            self.lo = self.hi = None

    @property
    def spelled(self) -> str:
        if self.target is not None:
            return f"ref {self.target}"
        return f"char[{self.length}]" if self.kind == "char" else self.tname

    def convert(self, value: Any):
        """The value as C takes it (int, float or bytes); raises TypeError / RangeError."""
        if self.target is not None:
            return self._convert_ref(value)
        if self.kind == "text":
            if not isinstance(value, (str, bytes, bytearray, memoryview)):
                raise TypeError(f"{self.what} is text: expected str or bytes, got "
                                f"{type(value).__name__} {value!r:.80}")
            data = _encode(value, self.what)
            if len(data) >= TEXT_MAX:
                raise RangeError(f"{self.what} is text: {len(data)} bytes is too long "
                                 f"(at most {TEXT_MAX - 1})")
            return data
        if self.kind == "int":
            if value.__class__ is not int:
                value = _index(value, f"{self.what} is {self.spelled}: expected an int")
            if not self.lo <= value <= self.hi:
                raise RangeError(f"{self.what} is {self.spelled}: {value} is out of range "
                                 f"({self.lo} .. {self.hi})")
            return value
        if self.kind == "float":
            if not isinstance(value, (int, float)):
                raise TypeError(f"{self.what} is {self.spelled}: expected a float, got "
                                f"{type(value).__name__} {value!r}")
            try:
                return float(value)
            except OverflowError:
                raise RangeError(f"{self.what} is {self.spelled}: {value} is out of range") \
                    from None
        if not isinstance(value, (str, bytes, bytearray, memoryview)):
            raise TypeError(f"{self.what} is {self.spelled}: expected str or bytes, got "
                            f"{type(value).__name__} {value!r}")
        data = _encode(value, self.what)
        if len(data) > self.length:
            raise RangeError(f"{self.what} is {self.spelled}: {value!r} is {len(data)} bytes, "
                             f"longer than {self.length}")
        if b"\0" in data:
            raise RangeError(f"{self.what} is {self.spelled}: {value!r} contains a NUL byte")
        return data


    def _convert_ref(self, value: Any) -> int:
        if value is None:
            return self.noref
        if isinstance(value, Record):
            if value._origin != self.target:
                raise TypeError(f"{self.what} is ref {self.target}: got a {value._name} "
                                f"record of container {value._origin}")
            return value._ref
        if value.__class__ is not int:
            what = (f"{self.what} is ref {self.target}: expected a Record of {self.target}, "
                    f"an int reference or None")
            if isinstance(value, bool):       # True is not a reference
                raise TypeError(f"{what}, got bool {value!r}")
            value = _index(value, what)
        if not 0 <= value <= self.noref:
            raise RangeError(f"{self.what} is ref {self.target}: {value} is not a reference "
                             f"(0 .. 2**{self.noref.bit_length()}-1)")
        return value


def _index(value: Any, what: str) -> int:
    """The one conversion of an integer argument (a field's value, a key, a reference, a
    cursor parameter, reserve's n): operator.index, so an int subclass is its int value
    (never its __int__) and any object with __index__ (numpy's integers) is taken; a float
    or a str is a TypeError saying `what`. User code (an __index__) runs here, before the
    call into C, with the database's lock held (close / abort from it are refused)."""
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{what}, got {type(value).__name__} {value!r:.80}") from None


def _int_ref(ref: Any) -> int:
    if isinstance(ref, Record):
        return ref._ref
    if ref.__class__ is int:
        return ref
    what = "expected a Record or a reference (int)"
    if isinstance(ref, bool):       # True is not a reference
        raise TypeError(f"{what}, got bool {ref!r}")
    return _index(ref, what)


def _arg(x: Any) -> Any:
    """An element argument (a Record or a reference) converted before any element is
    located: what user code (an __index__) does then cannot change what was located."""
    if x.__class__ is int or isinstance(x, Record):
        return x
    return _int_ref(x)


# the parts below that this one calls (imported last: they import this one)
from .records import Record  # noqa: E402
