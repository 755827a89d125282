"""p2gen.runtime.pyapi: Records."""
from __future__ import annotations

import struct
from typing import Optional

from ._base import NOREF, NOREF32, _MISSING


class Record:
    """An immutable copy of one element. Subclassed per record type by bind()."""
    __slots__ = ("_values", "_ref", "_origin")
    _fields: tuple = ()
    _name = "record"

    def __init__(self, /, *args, **kwargs):
        raise TypeError(f"{type(self).__name__} records are read from a container "
                        f"(insert, get, find, iteration)")

    @classmethod
    def _make(cls, values: tuple, ref: Optional[int], origin: Optional[str] = None):
        return _new_record(cls, values, ref, origin)

    @property
    def ref(self) -> Optional[int]:
        """The element's reference when this copy was made."""
        return self._ref

    def _asdict(self) -> dict:
        return dict(zip(self._fields, self._values))

    def __setattr__(self, name, value):
        raise AttributeError(f"{self._name} records are read-only copies; change the element "
                             f"with container.update(rec, {name}=...)")

    __delattr__ = __setattr__

    def __eq__(self, other):
        if not isinstance(other, Record):
            return NotImplemented
        return type(self) is type(other) and self._values == other._values

    def __hash__(self):
        return hash((self._name, self._values))

    def __repr__(self) -> str:
        body = ", ".join(f"{n}={v!r}" for n, v in zip(self._fields, self._values))
        return f"{self._name}({body}, ref={self._ref!r})"

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        raise TypeError(f"{self._name} records cannot be pickled; pickle rec._asdict()")


# Records are made by setting their slots through the slot descriptors (three C calls; a
# third of the cost of object.__setattr__, which __setattr__'s refusal would otherwise need).
_set_values = Record.__dict__["_values"].__set__
_set_ref = Record.__dict__["_ref"].__set__
_set_origin = Record.__dict__["_origin"].__set__


def _new_record(cls, values: tuple, ref, origin, _new=object.__new__):
    self = _new(cls)
    _set_values(self, values)
    _set_ref(self, ref)
    _set_origin(self, origin)
    return self


# struct codes of the C field types (standard sizes; padding is spelled out from offsetof)
_STRUCT_CODES = {"i8": "b", "i16": "h", "i32": "i", "i64": "q", "u8": "B", "u16": "H",
                 "u32": "I", "u64": "Q", "f32": "f", "f64": "d"}


class _Layout:
    """How a C record's bytes become a Record's values in one struct.unpack: the record's
    struct.Struct (its exact C layout, read from the compiled extension: offsetof and
    sizeof, padding as pad bytes) and a function generated for the record type that turns
    the unpacked tuple into field values (char[N] decoded up to the first NUL, NOREF ref
    fields to None; text fields None, read separately by the container)."""

    def __init__(self, ffi, ctype: str, fields: list):
        fmt, at, index, src = ["="], 0, 0, []
        self.texts = []     # (position, field name) of text fields
        self.packed = []    # (field, index in the unpacked tuple) of the other fields
        for pos, f in enumerate(fields):
            off = ffi.offsetof(ctype, f.name)
            if off > at:
                fmt.append(f"{off - at}x")
            if f.kind == "text":
                size = ffi.sizeof("p2_text32" if f.tname == "text32" else "p2_text")
                fmt.append(f"{size}x")
                self.texts.append((pos, f.name))
                src.append("None")
                at = off + size
                continue
            if f.target is not None:
                code = "I" if f.noref == NOREF32 else "Q"
                expr = f"(None if t[{index}] == {f.noref} else t[{index}])"
            elif f.kind == "char":
                code = f"{f.length}s"
                expr = f"t[{index}].split(b'\\0', 1)[0].decode('utf-8', 'surrogateescape')"
            else:
                code, expr = _STRUCT_CODES[f.tname], f"t[{index}]"
            fmt.append(code)
            src.append(expr)
            self.packed.append((f, index))
            at = off + struct.calcsize("=" + code)
            index += 1
        total = ffi.sizeof(ctype)
        if total > at:
            fmt.append(f"{total - at}x")
        self.struct = struct.Struct("".join(fmt))
        assert self.struct.size == total, (ctype, self.struct.format, total)
        body = ", ".join(src) + ("," if len(src) == 1 else "")
        self.body = None if self.texts else body
        if src and src == [f"t[{i}]" for i in range(len(src))]:
            self.decode = tuple            # every field as struct reads it
        else:
            ns = {"NOREF": NOREF}
            exec(f"def decode(t):\n    return ({body})\n", ns)
            self.decode = ns["decode"]


class _Slow(Exception):
    """A value the generated packer leaves to the checked path (which raises the error)."""


def _packer(layout: "_Layout", buf, defaults: dict):
    """fill(t, fields): a function generated for a record type without text fields that
    writes into buf (a C record) the values of the dict `fields` over the unpacked tuple t
    (an element's current values, or the zero record), in one struct.pack_into: int and
    float ranges are struct's checks, char[N] is checked here (at most N bytes, no NUL),
    ref fields go through their _Field. Any value it does not take (a wrong type, out of
    range, an unknown field name) raises, and the caller then takes the checked per-field
    path, which raises the precise TypeError / RangeError. Returns (fill, the tuple insert
    starts from: `defaults` (converted values by name), else 0 / b"" / no element)."""
    ns = {"_K": _MISSING, "_Slow": _Slow, "NOREF": NOREF, "pack_into": layout.struct.pack_into,
          "buf": buf}
    lines = ["def fill(t, kw):", "    n = 0"]
    zero = []
    for f, j in layout.packed:
        v = f"v{j}"
        lines += [f"    {v} = kw.get({f.name!r}, _K)",
                  f"    if {v} is _K:", f"        {v} = t[{j}]", "    else:", "        n += 1"]
        if f.target is not None:
            ns[f"conv{j}"] = f._convert_ref
            lines += [f"        if {v} is None:", f"            {v} = {f.noref}",
                      f"        elif {v}.__class__ is not int:", f"            {v} = conv{j}({v})"]
            zero.append(defaults.get(f.name, f.noref))
        elif f.kind == "char":
            lines += [f"        if {v}.__class__ is str:",
                      f"            {v} = {v}.encode('utf-8', 'surrogateescape')",
                      f"        elif {v}.__class__ is not bytes:", "            raise _Slow",
                      f"        if len({v}) > {f.length} or b'\\0' in {v}:",
                      "            raise _Slow"]
            zero.append(defaults.get(f.name, b""))
        elif f.kind == "int":
            lines += [f"        if {v}.__class__ is not int and not isinstance({v}, int):",
                      "            raise _Slow"]
            zero.append(defaults.get(f.name, 0))
        else:
            lines += [f"        if {v}.__class__ is not float and not isinstance({v}, (int, float)):",
                      "            raise _Slow"]
            zero.append(defaults.get(f.name, 0.0))
    lines += ["    if n != len(kw):", "        raise _Slow",
              "    pack_into(buf, 0, " + "".join(f"v{j}, " for _, j in layout.packed) + ")"]
    exec("\n".join(lines) + "\n", ns)
    return ns["fill"], tuple(zero)


def _record_class(name: str, fields: list) -> type:
    names = tuple(f.name for f in fields)
    ns: dict = {"__slots__": (), "_fields": names, "_name": name,
                "__doc__": f"record {name} {{ " + " ".join(
                    f"{f.name}: {f.spelled};" for f in fields) + " }"}
    for i, n in enumerate(names):
        if n == "ref" or not hasattr(Record, n):
            ns[n] = property(lambda self, _i=i: self._values[_i],
                             doc=f"field {n}: {fields[i].spelled}")
    cls = type(name, (Record,), ns)
    cls.__qualname__ = name
    return cls
