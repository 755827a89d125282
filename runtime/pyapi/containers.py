"""p2gen.runtime.pyapi: Containers."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from ._base import NOREF, NOREF32, P2_NOTFOUND, P2_OK, _MISSING
from .errors import NotFoundError, P2Error, RangeError
from .fields import _Field, _encode, _index, _int_ref
from .records import Record, _new_record, _packer, _set_origin, _set_ref, _set_values
from .database import Database


def _merged_fields(op: str, _from, fields: dict) -> dict:
    """insert's and upsert's fields: those of the optional record or mapping, then the
    keyword arguments over them."""
    if _from is None:
        return fields
    if isinstance(_from, Record):
        base = _from._asdict()
    elif isinstance(_from, Mapping):
        base = dict(_from)
    else:
        raise TypeError(f"{op}() takes a Record or a mapping, got {type(_from).__name__}")
    return {**base, **fields}


class Container:
    """One container of an open database. See the module docstring."""

    def __init__(self, db: Database, meta: dict):
        spec = db._spec_
        self._fc = None     # the C paths (_install_c_paths), which then hold the counters
        self._db = db
        self._spec = spec
        self._ffi = ffi = spec.ffi
        lib = spec.lib
        self.name: str = meta["name"]
        self.keys: tuple = tuple(meta["keys"])
        self.persistent: bool = meta["persistent"]
        self.file: Optional[str] = meta["file"]
        self.equation: str = meta["equation"]
        self.record: type = spec.records[meta["record"]]
        self._fields = {f.name: f for f in spec.fields[meta["record"]]}
        self._key_index = [list(self._fields).index(k) for k in self.keys]
        # insert: the spec's defaults (`qty: u32 = 0`), and the fields it needs (no default)
        self._defaults = {f.name: f.default for f in self._fields.values()
                          if f.default is not _MISSING}
        self._required = tuple(n for n in self._fields if n not in self._defaults)
        self._rtype = f"{spec.prefix}_{meta['record']} *"
        cp = meta["c"]["prefix"]
        self._c = {op: getattr(lib, f"{cp}_{op}")
                   for op in ("insert", "get", "update", "delete", "count", "reserve")}
        self._at = getattr(lib, f"{cp}_at")
        self._copy_c = getattr(lib, f"p2py__{cp}_copy", None)
        self._updkey = {k: getattr(lib, f"p2py__{cp}_updkey_{k}", None) for k in self.keys}
        self._delkey = {k: getattr(lib, f"p2py__{cp}_delkey_{k}", None) for k in self.keys}
        self._out = ffi.new(self._rtype)          # update_by's result, reused
        self._out_buf = ffi.buffer(self._out)
        self._masks = {}                          # field names -> byte mask of the record
        self._insert_many_c = getattr(lib, f"{cp}_insert_many")
        self._check_chars_c = getattr(lib, f"p2py__{cp}_check_chars", None)
        self._find = {k: getattr(lib, f"{cp}_find_{k}") for k in self.keys}
        # composite keys, `key = (a, b)`: name -> its fields; find(a=..., b=...) uses them
        self.composite_keys: dict = {n: tuple(fs)
                                     for n, fs in meta.get("composite_keys", {}).items()}
        self._cfind = {n: getattr(lib, f"{cp}_find_{n}") for n in self.composite_keys}
        # the key of `container[key]`, `key in container` and get(key): that of a unique
        # index, else the equation's first (a field's name, or a composite key's); None
        # without keys
        self.key: Optional[str] = meta.get("key")
        self._upsert = getattr(lib, f"{cp}_upsert") if meta.get("upsert") else None
        if meta["purges"]:
            self._c["purge"] = getattr(lib, f"{cp}_purge")
        self._all = (meta["c"]["all"], meta["c"]["all_cursor"])
        self._version = 0   # bumped by every change not made through a cursor
        self._links = 0     # bumped by every change, and every add / remove / set of a role
        self._noref = ffi.cast("uint64_t", -1)
        self._texts = {n: (getattr(lib, d["get"]), getattr(lib, d["set"]))
                       for n, d in meta["c"].get("text", {}).items()}
        self._roles = {}    # role name -> Role, filled by Database
        # each ref field and what it holds for no element (NOREF, or NOREF32 over 32-bit links)
        self._refnone = {f.name: f.noref for f in self._fields.values() if f.target is not None}
        layout = spec.layouts[meta["record"]]
        self._unpack = layout.struct.unpack
        self._iter_unpack = layout.struct.iter_unpack
        self._rsize = layout.struct.size
        self._decode = layout.decode
        self._textpos = layout.texts
        self._rows_of = self._one_of = None
        if layout.body is not None:     # no text field: generated code, no calls per field
            ns = {"new": object.__new__, "sv": _set_values, "sr": _set_ref, "so": _set_origin,
                  "R": self.record, "NAME": self.name, "NOREF": NOREF}
            exec("def rows(ts, refs):\n"
                 "    out = []\n"
                 "    app = out.append\n"
                 "    for t, ref in zip(ts, refs):\n"
                 "        o = new(R)\n"
                 f"        sv(o, ({layout.body}))\n"
                 "        sr(o, ref)\n"
                 "        so(o, NAME)\n"
                 "        app(o)\n"
                 "    return out\n"
                 "def one(t, ref):\n"
                 "    o = new(R)\n"
                 f"    sv(o, ({layout.body}))\n"
                 "    sr(o, ref)\n"
                 "    so(o, NAME)\n"
                 "    return o\n", ns)
            self._rows_of, self._one_of = ns["rows"], ns["one"]
        # find's output, reused: every call into C holds the database's lock
        self._scratch = ffi.new(self._rtype)
        self._scratch_buf = ffi.buffer(self._scratch)
        self._scratch_ref = ffi.new("uint64_t *")
        # the extension's one-crossing helpers (pybind.helpers_c); None in one built before
        self._findrec = {k: getattr(lib, f"p2py__{cp}_findrec_{k}", None) for k in self.keys}
        self._fill_fast = self._zero = None
        if layout.body is not None:
            self._fill_fast, self._zero = _packer(
                layout, self._scratch_buf,
                {n: self._fields[n].convert(v) for n, v in self._defaults.items()})
        self._rows_c = None
        if not _install_c_paths(self):
            _install_fast_paths(self)

    # -- the change counters: C fields of the C paths when there are some (bumped there
    #    without a dict lookup), else in the instance's __dict__ under the same names
    #    (what a walk's _walk_dict holds: the C paths object, or that dict) ----------------
    @property
    def _version(self) -> int:
        """Bumped by every change not made through a cursor."""
        fc = self._fc
        return self.__dict__["_version"] if fc is None else fc.version

    @_version.setter
    def _version(self, v: int) -> None:
        fc = self._fc
        if fc is None:
            self.__dict__["_version"] = v
        else:
            fc.version = v

    @property
    def _links(self) -> int:
        """Bumped by every change, and every add / remove / set of a role."""
        fc = self._fc
        return self.__dict__["_links"] if fc is None else fc.links

    @_links.setter
    def _links(self, v: int) -> None:
        fc = self._fc
        if fc is None:
            self.__dict__["_links"] = v
        else:
            fc.links = v

    def _counters(self):
        """Where the counters live, for a walk's _walk_dict."""
        return self.__dict__ if self._fc is None else self._fc

    # -- helpers ---------------------------------------------------------------------
    def _database(self) -> Database:
        return self._db

    def _fail(self, rc: int, what: str = ""):
        return self._spec.error(self._db._handle_, rc, what)

    def _record(self, crec, ref: int, texts: bool = True):
        """A Record of the C record `crec` of element `ref`; texts are read from the
        container (None when `texts` is false: only for comparing keys)."""
        t = self._unpack(self._ffi.buffer(crec, self._rsize))
        if self._one_of is not None:
            return self._one_of(t, int(ref))
        return self._make(self._decode(t), int(ref), texts)

    def _records(self, buf, refs) -> list:
        """Records of the C records in buf (packed, one per reference in refs)."""
        if self._rows_c is not None:
            return self._rows_c(buf, refs, len(refs))
        ts = self._iter_unpack(buf)
        if self._rows_of is not None:
            return self._rows_of(ts, refs)
        make, decode = self._make, self._decode
        return [make(decode(t), r) for t, r in zip(ts, refs)]

    def _make(self, values: tuple, ref: int, texts: bool = True):
        """A Record of decoded values (texts None) of element `ref`, its texts read."""
        if texts and self._textpos:
            h = self._db._handle()
            values = list(values)
            for i, name in self._textpos:
                values[i] = self._text(h, ref, name).decode("utf-8", "surrogateescape")
            values = tuple(values)
        return _new_record(self.record, values, ref, self.name)

    def _text(self, h, ref: int, name: str) -> bytes:
        ffi = self._ffi
        data = ffi.new("const char **")
        n = ffi.new("uint64_t *")
        rc = self._texts[name][0](h, ref, data, n)
        if rc != P2_OK:
            raise self._fail(rc)
        return ffi.buffer(data[0], n[0])[:] if n[0] else b""

    def _set_texts(self, h, ref: int, texts: dict) -> None:
        for n, data in texts.items():
            rc = self._texts[n][1](h, ref, self._ffi.from_buffer(data), len(data))
            if rc != P2_OK:
                raise self._fail(rc, f"setting text {n}")

    def _fill(self, crec, fields: dict) -> dict:
        """Write the fields into the C record; returns the text fields' values (bytes),
        which are written after the element by _set_texts."""
        return self._write(crec, self._convert(fields))

    def _convert(self, fields: dict) -> dict:
        """The fields' values as C takes them, every one checked (TypeError, RangeError):
        where user code (an __index__, an encode) runs, before anything is located."""
        known = self._fields
        for n in fields:
            if n not in known:
                raise TypeError(f"{self.record._name} has no field '{n}' (fields: "
                                f"{', '.join(known)})")
        return {n: known[n].convert(v) for n, v in fields.items()}

    def _write(self, crec, conv: dict) -> dict:
        """Write converted fields into the C record; returns the text fields' values."""
        known = self._fields
        ffi = self._ffi
        texts = {}
        for n, v in conv.items():
            f = known[n]
            if f.kind == "char":
                ffi.buffer(getattr(crec, n))[:] = v.ljust(f.length, b"\0")
            elif f.kind == "text":
                texts[n] = v
            else:
                setattr(crec, n, v)
        return texts

    def _ref(self, rec_or_ref) -> int:
        ref = _int_ref(rec_or_ref)
        if isinstance(rec_or_ref, Record):
            if type(rec_or_ref) is not self.record or rec_or_ref._origin != self.name:
                raise TypeError(f"container {self.name}: that is a {rec_or_ref._name} record "
                                f"of container {rec_or_ref._origin}")
        if ref is None or not 0 <= ref < (1 << 64) - 1:
            raise NotFoundError(f"container {self.name}: no element with reference {ref}")
        return ref

    def _changed(self) -> None:
        self._version += 1
        self._links += 1

    def _scratch_zero(self):
        """The C record insert starts from (the defaults; else 0, "", no element), in
        the scratch buffer (b"" for a record with text fields: no C paths)."""
        if self._fill_fast is None:
            return b""
        self._fill_fast(self._zero, {})
        return self._scratch_buf

    def _check_required(self, op: str, fields, row: str = "") -> None:
        """TypeError naming the fields without a default in the spec that `fields` lacks."""
        missing = [n for n in self._required if n not in fields]
        if missing:
            raise TypeError(f"{op}(): {row}{self.record._name} needs field(s) "
                            f"{', '.join(missing)} (they have no default in the spec; "
                            f"give them, or declare one: `{missing[0]}: ... = value;`)")

    # -- the API -----------------------------------------------------------------------
    def insert(self, _from=None, /, **fields) -> Record:
        """Insert an element and return it (a Record with its reference). Fields come from
        the optional record or mapping, then from keyword arguments; others are 0 / ""."""
        with self._db._lock:   # one call into C at a time (see _serialised)
            self._db._guard()
            fields = _merged_fields("insert", _from, fields)
            self._check_required("insert", fields)
            h = self._db._handle()
            if self._fill_fast is not None:
                try:
                    self._fill_fast(self._zero, fields)
                except Exception:
                    pass            # the checked path below says what is wrong
                else:
                    ref = self._scratch_ref
                    rc = self._c["insert"](h, self._scratch, ref)
                    if rc != P2_OK:
                        raise self._fail(rc)
                    self._version += 1     # _changed(), inline
                    self._links += 1
                    return self._one_of(self._unpack(self._scratch_buf), ref[0])
            crec = self._ffi.new(self._rtype)
            for n, none in self._refnone.items():
                setattr(crec, n, none)     # not given: no element
            texts = self._fill(crec, {**self._defaults, **fields})
            out = self._ffi.new("uint64_t *")
            rc = self._c["insert"](h, crec, out)
            if rc != P2_OK:
                raise self._fail(rc)
            self._changed()
            ref = int(out[0])
            if texts:
                try:
                    self._set_texts(h, ref, texts)
                except P2Error:
                    self._c["delete"](h, ref)   # nothing half-made stays
                    raise
            return self._record(crec, ref)

    def _find_composite(self, h, name: str, kw: dict) -> Optional[Record]:
        """find(a=..., b=...) on the composite key `name` (a, b): one argument per field."""
        vals = []
        for n in self.composite_keys[name]:
            f, value = self._fields[n], kw[n]
            cval = f.convert(value) if f.kind != "char" else _find_str(f, value)
            if cval is None:
                return None
            vals.append(cval)
        out = self._ffi.new("uint64_t *")
        rc = self._cfind[name](h, *vals, out)
        if rc == P2_NOTFOUND:
            return None
        if rc != P2_OK:
            raise self._fail(rc)
        return self._record(self._read(h, out[0]), out[0])

    def _read(self, h, ref: int):
        crec = self._ffi.new(self._rtype)
        rc = self._c["get"](h, ref, crec)
        if rc != P2_OK:
            raise self._fail(rc)
        return crec

    def _locate_t(self, h, rec_or_ref):
        """(ref, the element's values as the record's struct unpacks them): _locate's
        checks, reading the element in place (`<c>_at`: no copy made in C)."""
        ref = self._ref(rec_or_ref)
        p = self._at(h, ref)
        if p == self._ffi.NULL:      # no such element: _locate raises the C error
            return ref, self._unpack(self._ffi.buffer(self._locate(h, rec_or_ref)[1],
                                                      self._rsize))
        t = self._unpack(self._ffi.buffer(p, self._rsize))
        if isinstance(rec_or_ref, Record) and self.keys:
            self._check_keys(rec_or_ref, ref, self._decode(t))
        return ref, t

    def _check_keys(self, rec, ref: int, now: tuple) -> None:
        for k, i in zip(self.keys, self._key_index):
            was, cur = rec._values[i], now[i]
            if was != cur:
                raise NotFoundError(
                    f"container {self.name}: the element at reference {ref} has "
                    f"{k} == {cur!r}, not {was!r}: the record is stale (the element was "
                    f"deleted, changed its key or moved); find it again")

    def _locate(self, h, rec_or_ref):
        """(ref, C copy of the element). A Record names its element by reference *and*
        key fields: if the element at its reference has other keys now (it was deleted,
        its key changed, or, over qsort storage, elements shifted), NotFoundError."""
        ref = self._ref(rec_or_ref)
        crec = self._read(h, ref)
        if isinstance(rec_or_ref, Record) and self.keys:
            self._check_keys(rec_or_ref, ref,
                             self._decode(self._unpack(self._ffi.buffer(crec, self._rsize))))
        return ref, crec

    def at(self, rec_or_ref) -> Record:
        """The element `ref` by its reference (an int, or a Record: a fresh copy);
        NotFoundError if there is none."""
        with self._db._lock:   # one call into C at a time (see _serialised)
            h = self._db._handle()
            ref, crec = self._locate(h, rec_or_ref)
            return self._record(crec, ref)

    def _by_key(self, key):
        """find() by the container's key (`self.key`): a value, or a tuple of a composite
        key's values in its order."""
        name = self.key
        if name is None:
            raise TypeError(f"container {self.name} has no key ({self.equation}): "
                            f"[], in and get() look elements up by key; use at(ref) for a "
                            f"reference, or iterate")
        fs = self.composite_keys.get(name)
        if fs is None:
            return self.find(key)       # find(v) is by the container's key (no dict made)
        if not isinstance(key, tuple) or len(key) != len(fs):
            raise TypeError(f"container {self.name}'s key is ({', '.join(fs)}): give a tuple "
                            f"of {len(fs)} values, got {key!r:.80}")
        return self.find(**dict(zip(fs, key)))

    def __getitem__(self, key) -> Record:
        """The element whose key (`self.key`) is `key`; NotFoundError (a KeyError) if
        there is none."""
        return self._getitem(key)     # the C paths' when they take it (an instance's)

    def _getitem(self, key) -> Record:
        rec = self._by_key(key)
        if rec is None:
            raise NotFoundError(f"container {self.name}: no element with {self.key} == "
                                f"{key!r:.80}")
        return rec

    def get(self, key, default=None):
        """The element whose key (`self.key`) is `key`, else `default` (as dict.get)."""
        rec = self._by_key(key)
        return default if rec is None else rec

    def __contains__(self, key) -> bool:
        """Is there an element whose key (`self.key`) is `key`?"""
        return self._contains(key)    # the C paths' when they take it (an instance's)

    def _contains(self, key) -> bool:
        return self._by_key(key) is not None

    def __delitem__(self, key) -> None:
        """Delete the element whose key (`self.key`) is `key`; NotFoundError if none."""
        self.delete(self[key])

    def _keys_spelled(self) -> str:
        """Every key of the container, as find() takes them: `id, (symbol, price)`."""
        return ", ".join(self.keys + tuple(f"({', '.join(fs)})"
                                           for fs in self.composite_keys.values()))

    def find(self, _key=_MISSING, /, **kw) -> Optional[Record]:
        """The element whose key equals the value (an element, if several), or None:
        `find(value)` by the container's key (`self.key`; a tuple for a composite one),
        or by any of its keys: `find(field=value)`, `find(a=..., b=...)` (every field of
        a composite key)."""
        with self._db._lock:   # one call into C at a time (see _serialised)
            h = self._db._handle()
            keys = self.keys
            if not keys and not self.composite_keys:
                raise TypeError(f"container {self.name} has no key fields ({self.equation}): "
                                f"iterate over it or use a cursor")
            if _key is not _MISSING:
                if kw:
                    raise TypeError("find() takes a value or field=value, not both")
                fs = self.composite_keys.get(self.key)
                if fs is None:
                    field, value = self.key, _key
                elif isinstance(_key, tuple) and len(_key) == len(fs):
                    return self._find_composite(h, self.key, dict(zip(fs, _key)))
                else:
                    raise TypeError(f"container {self.name}'s key is ({', '.join(fs)}): "
                                    f"find() takes a tuple of {len(fs)} values, or "
                                    f"field=value of one of its keys: {self._keys_spelled()}")
            else:
                if len(kw) == 1 and next(iter(kw)) in keys:
                    (field, value), = kw.items()
                else:
                    # every field of a composite key, by name
                    name = next((n for n, fs in self.composite_keys.items()
                                 if set(fs) == set(kw)), None)
                    if name is not None:
                        return self._find_composite(h, name, kw)
                    odd = [n for n in kw if n not in self._fields]
                    what = (f"'{odd[0]}' is not a field of {self.record._name}" if odd else
                            ", ".join(f"'{n}'" for n in kw)
                            + (" is not a key" if len(kw) == 1 else " are not a key")
                            if kw else "no key given")
                    raise TypeError(f"find(): {what}; container {self.name} is found by "
                                    f"one of its keys: {self._keys_spelled()} "
                                    f"(find(field=value), every field of a composite one)")
            f = self._fields[field]
            if value.__class__ is int and f.kind == "int" and f.lo <= value <= f.hi:
                cval = value
            else:
                cval = f.convert(value) if f.kind != "char" else _find_str(f, value)
            if cval is None:
                return None
            findrec = self._findrec[field]
            if findrec is not None:      # find and copy out, one crossing
                ref = self._scratch_ref
                rc = findrec(h, cval, self._scratch, ref)
                if rc == P2_NOTFOUND:
                    return None
                if rc != P2_OK:
                    raise self._fail(rc)
                if self._one_of is not None:
                    return self._one_of(self._unpack(self._scratch_buf), ref[0])
                return self._make(self._decode(self._unpack(self._scratch_buf)), ref[0])
            out = self._ffi.new("uint64_t *")
            rc = self._find[field](h, cval, out)
            if rc == P2_NOTFOUND:
                return None
            if rc != P2_OK:
                raise self._fail(rc)
            return self._record(self._read(h, out[0]), out[0])

    def update(self, rec_or_ref, /, **fields) -> Record:
        """Change fields of the element (read, modify, write back, keeping every index
        right); returns the updated Record, whose reference changes if the element moved."""
        with self._db._lock:   # one call into C at a time (see _serialised)
            db = self._db
            if db._spec_.c_guard is not None:
                db._guard()
            h = db._handle_
            if h is None:
                db._handle()     # raises ClosedError
            if self._fill_fast is not None:
                ref, t = self._locate_t(h, rec_or_ref)
                was = self._version
                try:
                    self._fill_fast(t, fields)
                except Exception:
                    was = None      # the checked path below says what is wrong
                # (and takes it when user code run by a value changed the container)
                if was == self._version:
                    refp = self._scratch_ref
                    refp[0] = ref
                    rc = self._c["update"](h, refp, self._scratch)
                    if rc != P2_OK:
                        raise self._fail(rc)
                    self._version += 1     # _changed(), inline
                    self._links += 1
                    return self._one_of(self._unpack(self._scratch_buf), refp[0])
            # every value converted first (user code runs there), then the element located
            conv = self._convert(fields)
            ref, crec = self._locate(h, rec_or_ref)
            old = self._ffi.new(self._rtype)
            old[0] = crec[0]
            texts = self._write(crec, conv)
            old_texts = {n: self._text(h, ref, n) for n in texts}
            refp = self._ffi.new("uint64_t *", ref)
            rc = self._c["update"](h, refp, crec)
            if rc != P2_OK:
                raise self._fail(rc)
            self._changed()
            if texts:
                try:
                    self._set_texts(h, refp[0], texts)
                except P2Error:
                    # best effort: the element gets its old fields and texts back
                    for n, data in old_texts.items():
                        self._texts[n][1](h, refp[0], self._ffi.from_buffer(data), len(data))
                    self._c["update"](h, refp, old)
                    raise
            return self._record(crec, refp[0])

    def delete(self, rec_or_ref) -> None:
        """Delete the element; NotFoundError if there is none."""
        with self._db._lock:   # one call into C at a time (see _serialised)
            db = self._db
            if db._spec_.c_guard is not None:
                db._guard()
            h = db._handle_
            if h is None:
                db._handle()     # raises ClosedError
            ref = self._locate_t(h, rec_or_ref)[0]
            rc = self._c["delete"](h, ref)
            if rc != P2_OK:
                raise self._fail(rc)
            self._changed()

    def _one_key(self, value):
        """(key field, the value as C takes it, or None when no element can have it)."""
        keys = self.keys
        if len(keys) != 1:
            raise TypeError(f"container {self.name} has {'no' if not keys else 'several'} "
                            f"key fields: update_by / delete_by take the value of its only "
                            f"key; use find() and update() / delete()")
        f = self._fields[keys[0]]
        if value.__class__ is int and f.kind == "int" and f.lo <= value <= f.hi:
            return keys[0], value
        return keys[0], (f.convert(value) if f.kind != "char" else _find_str(f, value))

    def _mask(self, names) -> Any:
        key = frozenset(names)
        m = self._masks.get(key)
        if m is None:
            ffi, ctype = self._ffi, self._rtype[:-2]
            members = dict(ffi.typeof(ctype).fields)
            mask = bytearray(ffi.sizeof(ctype))
            for n in key:
                off = ffi.offsetof(ctype, n)
                mask[off:off + ffi.sizeof(members[n].type)] = b"\1" * ffi.sizeof(members[n].type)
            m = self._masks[key] = ffi.new("unsigned char[]", bytes(mask))
        return m

    def update_by(self, _key, /, **fields) -> Optional[Record]:
        """Change fields of the element whose (only) key field equals the value, like
        update(); returns the updated Record, or None if there is no such element. One
        call into C (find, read, write the fields given, update) for a record without text
        fields."""
        with self._db._lock:   # one call into C at a time (see _serialised)
            db = self._db
            if db._spec_.c_guard is not None:
                db._guard()
            h = db._handle_
            if h is None:
                db._handle()     # raises ClosedError
            field, cval = self._one_key(_key)
            if cval is None:
                return None
            upd = self._updkey.get(field)
            if upd is not None and self._fill_fast is not None:
                try:
                    # the mask first: the fill writes the scratch record last (user code
                    # run by a name's hash or a value may insert, which uses it too)
                    mask = self._mask(fields)
                    self._fill_fast(self._zero, fields)
                except Exception:
                    upd = None       # the path below raises the precise error
                if upd is not None:
                    ref = self._scratch_ref
                    rc = upd(h, cval, self._scratch, mask, self._out, ref)
                    if rc == P2_NOTFOUND:
                        return None
                    if rc != P2_OK:
                        raise self._fail(rc)
                    self._version += 1     # _changed(), inline
                    self._links += 1
                    return self._one_of(self._unpack(self._out_buf), ref[0])
            rec = self.find(_key)
            return None if rec is None else self.update(rec, **fields)

    def delete_by(self, _key, /) -> bool:
        """Delete the element whose (only) key field equals the value (one of them, if
        several); False if there is none. One call into C."""
        with self._db._lock:   # one call into C at a time (see _serialised)
            db = self._db
            if db._spec_.c_guard is not None:
                db._guard()
            h = db._handle_
            if h is None:
                db._handle()     # raises ClosedError
            field, cval = self._one_key(_key)
            if cval is None:
                return False
            dele = self._delkey.get(field)
            if dele is None:
                rec = self.find(_key)
                if rec is None:
                    return False
                self.delete(rec)
                return True
            rc = dele(h, cval, self._scratch_ref)
            if rc == P2_NOTFOUND:
                return False
            if rc != P2_OK:
                raise self._fail(rc)
            self._changed()
            return True

    # -- numpy ---------------------------------------------------------------------------
    @property
    def dtype(self):
        """The numpy structured dtype of the C record (its field offsets and size): ints
        and floats as their C types, char[N] as bytes 'S<N>' (NUL-padded), ref fields as
        uint64 (2**64-1: no element). TypeError for a record with text fields."""
        np = _numpy()
        if self._textpos:
            raise TypeError(f"container {self.name}: to_numpy / insert_many copy fixed-size "
                            f"records; text field(s) {', '.join(n for _, n in self._textpos)} "
                            f"live outside the record (iterate, or insert one by one)")
        fs = list(self._fields.values())
        formats = []
        for f in fs:
            if f.target is not None:
                formats.append("=u4" if f.noref == NOREF32 else "=u8")
            elif f.kind == "char":
                formats.append(f"S{f.length}")
            else:
                formats.append(_NUMPY_CODES[f.tname])
        ffi, ctype = self._ffi, self._rtype[:-2]
        return np.dtype({"names": [f.name for f in fs], "formats": formats,
                         "offsets": [ffi.offsetof(ctype, f.name) for f in fs],
                         "itemsize": ffi.sizeof(ctype)})

    def to_numpy(self):
        """Every element, in the order iteration gives them, as a numpy structured array
        of `dtype` (a copy, made in one call into C: it stays valid after the database
        changes or closes)."""
        np = _numpy()
        dt = self.dtype
        with self._db._lock:
            h = self._db._handle()
            n = int(self._c["count"](h))
            out = np.zeros(n, dtype=dt)
            got = self._ffi.new("uint64_t *")
            if n:
                rc = self._copy_c(h, self._ffi.cast(self._rtype, self._ffi.from_buffer(out)),
                                  n, got)
                if rc != P2_OK:
                    raise self._fail(rc)
        return out[:int(got[0])] if n else out

    def insert_many(self, rows) -> int:
        """Insert many elements in one call into C; returns how many. `rows`: a numpy
        structured array (fields by name; fields it lacks are 0 / b"" / no element) or an
        iterable of mappings or Records. Every value is checked before anything is
        inserted: a bad one raises TypeError / RangeError naming its row, and nothing
        is inserted. An insert that fails in C (a duplicate key, no memory) stops there:
        the rows before it stay inserted, the error (P2Error) has `.index`, the failing
        row's."""
        if self._textpos:
            self.dtype    # raises TypeError: text fields
        with self._db._lock:      # held while packing too: _pack_rows uses the scratch record
            buf, n = self._pack_rows(rows)
            db = self._db
            if db._spec_.c_guard is not None:
                db._guard()
            h = db._handle_
            if h is None:
                db._handle()     # raises ClosedError
            if n == 0:
                return 0
            recs = self._ffi.cast(self._rtype, self._ffi.from_buffer(buf))
            if self._check_chars_c is not None:
                row, field = self._ffi.new("uint64_t *"), self._ffi.new("int *")
                if self._check_chars_c(recs, n, row, field) != P2_OK:
                    f = [f for f in self._fields.values() if f.kind == "char"][field[0]]
                    raise RangeError(f"insert_many: row {row[0]}: {f.what} is {f.spelled}: "
                                     f"it contains a NUL byte")
            # one call: the C function reserves room for all rows first (the loop then
            # never regrows or rehashes) and fetches what each insert reads ahead of it
            done = self._ffi.new("uint64_t *")
            rc = self._insert_many_c(h, recs, n, done)
            k = int(done[0])
            if k:
                self._changed()
            if rc != P2_OK:
                err = self._fail(rc)
                err.index = k
                err.message = (f"insert_many: row {k}: {err.message} (rows 0..{k - 1} were "
                               f"inserted)" if k else f"insert_many: row 0: {err.message}")
                err.args = (err.message,)
                raise err
            return k

    def _pack_rows(self, rows):
        """(a buffer of C records, their number) for insert_many; checks every value."""
        if hasattr(rows, "dtype") and getattr(rows.dtype, "names", None):
            return self._pack_numpy(rows)
        size = self._rsize
        out = bytearray()
        fill, zero, scratch = self._fill_fast, self._zero, self._scratch_buf
        for i, row in enumerate(rows):
            if isinstance(row, Record):
                row = row._asdict()
            elif not isinstance(row, Mapping):
                raise TypeError(f"insert_many: row {i}: expected a mapping or a Record, got "
                                f"{type(row).__name__}")
            self._check_required("insert_many", row, f"row {i}: ")
            try:
                fill(zero, row)
            except Exception:
                crec = self._ffi.new(self._rtype)
                for n, none in self._refnone.items():
                    setattr(crec, n, none)
                try:
                    self._fill(crec, {**self._defaults, **row})
                except Exception as e:
                    e.args = (f"insert_many: row {i}: {e}",) + e.args[1:]
                    if isinstance(e, P2Error):
                        e.message = e.args[0]
                    raise
                self._ffi.memmove(scratch, crec, size)
            out += scratch
        return out, len(out) // size

    def _pack_numpy(self, arr):
        np = _numpy()
        dt = self.dtype
        names = arr.dtype.names
        unknown = [n for n in names if n not in self._fields]
        if unknown:
            raise TypeError(f"insert_many: {self.record._name} has no field(s) "
                            f"{', '.join(unknown)} (fields: {', '.join(self._fields)})")
        arr = np.asarray(arr).reshape(-1)
        if arr.dtype == dt:     # the C layout already: every value fits its C type (and
            # every field is there)
            return np.ascontiguousarray(arr), len(arr)
        self._check_required("insert_many", names)
        out = np.zeros(len(arr), dtype=dt)
        for n, none in self._refnone.items():
            if n not in names:
                out[n] = none
        for n, v in self._defaults.items():
            if n not in names:
                out[n] = self._fields[n].convert(v)
        for n in names:
            f = self._fields[n]
            col = arr[n]
            k = col.dtype.kind
            if f.kind == "char":
                if k == "U":
                    col = np.char.encode(col, "utf-8")
                elif k != "S":
                    raise TypeError(f"insert_many: {f.what} is {f.spelled}: expected a bytes "
                                    f"or str column, got {col.dtype}")
                col = np.ascontiguousarray(col)
                # too long: a byte past the field's length (a NUL inside the value is found
                # in the packed records, in C: _check_chars)
                width = col.dtype.itemsize
                if width > f.length and len(col):
                    raw = col.view(np.uint8).reshape(len(col), width)
                    bad = np.nonzero(raw[:, f.length:].any(axis=1))[0]
                else:
                    bad = ()
                if self._check_chars_c is None and width > 1 and len(col):
                    raw = col.view(np.uint8).reshape(len(col), width)
                    zero = raw == 0     # a NUL byte followed by another: inside the value
                    inner = (zero[:, :-1] & ~zero[:, 1:]).any(axis=1)
                    bad = np.union1d(bad, np.nonzero(inner)[0]).astype(int)
                if len(bad):
                    raise RangeError(f"insert_many: row {bad[0]}: {f.what} is {f.spelled}: "
                                     f"{col[bad[0]]!r} is longer than {f.length} bytes or "
                                     f"contains a NUL byte")
            elif f.kind == "int" or f.target is not None:
                lo, hi = (0, f.noref) if f.target is not None else (f.lo, f.hi)
                if k not in "iub":
                    raise TypeError(f"insert_many: {f.what} is {f.spelled}: expected an "
                                    f"integer column, got {col.dtype}")
                if len(col):
                    bad = np.nonzero((col < lo) | (col > hi))[0] if k == "i" or \
                        np.iinfo(col.dtype).max > hi else []
                    if len(bad):
                        raise RangeError(f"insert_many: row {bad[0]}: {f.what} is "
                                         f"{f.spelled}: {col[bad[0]]} is out of range "
                                         f"({lo} .. {hi})")
            elif f.kind == "float":
                if k not in "iubf":
                    raise TypeError(f"insert_many: {f.what} is {f.spelled}: expected a "
                                    f"numeric column, got {col.dtype}")
                if f.tname == "f32" and len(col) and k == "f":
                    fin = np.isfinite(col)
                    bad = np.nonzero(fin & (np.abs(np.where(fin, col, 0)) >
                                            np.finfo(np.float32).max))[0]
                    if len(bad):
                        raise RangeError(f"insert_many: row {bad[0]}: {f.what} is f32: "
                                         f"{col[bad[0]]} is out of range")
            out[n] = col
        return out, len(out)

    def __len__(self) -> int:
        return int(self._c["count"](self._db._handle()))

    def reserve(self, n: int) -> None:
        """Make room for n elements in all, so that loading them does not regrow."""
        what = "reserve: n must be a non-negative int"
        if isinstance(n, bool):
            raise TypeError(f"{what}, got {n!r}")
        n = _index(n, what)
        if n < 0:
            raise TypeError(f"{what}, got {n!r}")
        rc = self._c["reserve"](self._db._handle(), min(n, (1 << 64) - 1))
        if rc != P2_OK:
            raise self._fail(rc)

    def __iter__(self) -> "Cursor":
        self._db._handle()
        return self._spec.Cursor(self, self._all[0], self._all[1], [], "all")

    # -- relationships -----------------------------------------------------------------
    @property
    def roles(self) -> dict:
        """Role name -> Role: the ends of relationships this container's elements play."""
        return dict(self._roles)

    def role(self, name: str) -> "Role":
        """The role `name` (also an attribute, unless a keyword or clashing name)."""
        try:
            return self._roles[name]
        except KeyError:
            raise AttributeError(f"container {self.name} has no role '{name}' (roles: "
                                 f"{', '.join(self._roles) or 'none'})") from None

    def __getattr__(self, name: str):
        # only reached when normal lookup fails: roles, then a helpful error
        roles = self.__dict__.get("_roles")
        if roles is not None and name in roles:
            return roles[name]
        if name.startswith("__") or roles is None:
            raise AttributeError(name)
        raise AttributeError(f"container {self.__dict__.get('name')} has no attribute or "
                             f"role '{name}' (roles: {', '.join(roles) or 'none'})")

    def __dir__(self):
        return sorted(set(super().__dir__()) | {n for n in self._roles if n.isidentifier()})

    def __repr__(self) -> str:
        return f"<container {self.name} of {self.record._name} = {self.equation}>"


_NUMPY_CODES = {"i8": "=i1", "i16": "=i2", "i32": "=i4", "i64": "=i8", "u8": "=u1",
                "u16": "=u2", "u32": "=u4", "u64": "=u8", "f32": "=f4", "f64": "=f8"}


def _numpy():
    try:
        import numpy
    except ImportError:  # pragma: no cover
        raise ImportError("to_numpy / insert_many need numpy (pip install numpy)") from None
    return numpy


def _install_c_paths(c: Container) -> bool:
    """The C paths of the container (generator/pyfast.py) as its insert, get, find,
    update_by and delete_by (the last three for a single int key), and its batches'
    Records made in C (with their texts: read under the database's lock, which the
    cursors hold when they fetch). Each takes the common case and calls the method it
    shadows for anything else (which checks and raises the precise error), as
    _install_fast_paths' closures do. False when the extension has no C paths for it (a
    record with more than pyfast.TEXTS_MAX text fields, an extension built before, PyPy)."""
    fast = c._spec.fast
    if fast is None:
        return False
    cls = type(c)
    if c._textpos:
        # the record insert starts from and the texts it writes: the spec's defaults
        crec = c._ffi.new(c._rtype)
        for n, none in c._refnone.items():
            setattr(crec, n, none)
        texts = c._fill(crec, c._defaults)
        zero = bytes(c._ffi.buffer(crec))
    else:
        texts, zero = {}, bytes(c._scratch_zero())
    fc = fast.container(c.name, c._db._lock, c, c.record, *_RECORD_SLOTS,
                        cls.insert.__get__(c), cls.at.__get__(c), cls.find.__get__(c),
                        cls.update_by.__get__(c),
                        cls.delete_by.__get__(c), c._fail, cls.update.__get__(c),
                        cls.delete.__get__(c), zero,
                        bytes(n in c._required for n in c._fields),
                        tuple(texts.get(n) for n in c._fields))
    if fc is None:
        return False
    c._fc = fc
    c._rows_c = fc.rows
    c.insert, c.at, c.update, c.delete = fc.insert, fc.get, fc.update, fc.delete
    if len(c.keys) == 1:
        f = c._fields[c.keys[0]]
        if f.kind == "int" and f.target is None:
            c.update_by, c.delete_by = fc.update_by, fc.delete_by
            if c.key == c.keys[0]:      # find(v) by it too (not by a composite key)
                c.find = fc.find
                # get, [] and in: one crossing (Container.__getitem__ / __contains__, on
                # the class, call these; their Python ways are the class's)
                c.get, c._getitem, c._contains = fc.get_by_key, fc.item, fc.contains
    return True


_RECORD_SLOTS = (Record.__dict__["_values"], Record.__dict__["_ref"], Record.__dict__["_origin"])


def _install_fast_paths(c: Container) -> None:
    """Per-container closures for the single-row operations of a record without text
    fields: insert, and for an integer key find, update_by and delete_by. Each binds what
    it needs once (no attribute lookups, no generic argument handling per call), handles
    the common case (keyword fields, an int key in the field's range, an open database)
    and passes anything else to the method it shadows, which checks and says what is
    wrong; the results, errors and the database's lock are the same either way."""
    if c._one_of is None or c._fill_fast is None:
        return
    db, lock, guard = c._db, c._db._lock, c._db._spec_.c_guard
    one, unpack, fill, zero = c._one_of, c._unpack, c._fill_fast, c._zero
    scratch, sbuf, ref, out, obuf = c._scratch, c._scratch_buf, c._scratch_ref, c._out, c._out_buf
    fail, c_insert = c._fail, c._c["insert"]
    slow_insert = c.insert
    required = c._required

    def insert(_from=None, /, **fields):
        if _from is not None:
            return slow_insert(_from, **fields)
        for n in required:
            if n not in fields:
                return slow_insert(**fields)        # raises TypeError naming them
        with lock:
            h = db._handle_
            if h is None:
                return slow_insert(**fields)        # raises ClosedError
            if guard is not None:
                db._guard()
            try:
                fill(zero, fields)
            except Exception:
                return slow_insert(**fields)        # raises the precise error
            rc = c_insert(h, scratch, ref)
            if rc != P2_OK:
                raise fail(rc)
            c._version += 1
            c._links += 1
            return one(unpack(sbuf), ref[0])

    insert.__doc__ = slow_insert.__doc__
    c.insert = insert
    if len(c.keys) != 1:
        return
    key = c.keys[0]
    f = c._fields[key]
    if f.kind != "int":
        return
    lo, hi = f.lo, f.hi
    findrec, upd, dele = c._findrec[key], c._updkey.get(key), c._delkey.get(key)
    if findrec is not None and c.key == key:
        slow_find = c.find

        def find(_key=_MISSING, /, **kw):
            v = _key
            if kw:      # find(id=v): the same path
                if _key is not _MISSING or len(kw) != 1:
                    return slow_find(_key, **kw)
                (name, v), = kw.items()
                # an exact str only: a subclass's __eq__ is user code, run by the slow
                # path with the lock held (Re-entry)
                if name.__class__ is not str or name != key:
                    return slow_find(_key, **kw)
            if v.__class__ is not int or not lo <= v <= hi:
                return slow_find(_key, **kw)
            with lock:
                h = db._handle_
                if h is None:
                    return slow_find(_key, **kw)
                rc = findrec(h, v, scratch, ref)
                if rc == P2_OK:
                    return one(unpack(sbuf), ref[0])
                if rc == P2_NOTFOUND:
                    return None
                raise fail(rc)

        find.__doc__ = slow_find.__doc__
        c.find = find
    if upd is not None:
        slow_update_by, masks = c.update_by, {}

        def update_by(_key, /, **fields):
            if _key.__class__ is not int or not lo <= _key <= hi:
                return slow_update_by(_key, **fields)
            with lock:
                h = db._handle_
                if h is None:
                    return slow_update_by(_key, **fields)
                if guard is not None:
                    db._guard()
                try:
                    # the mask first: the fill writes the scratch record last
                    names = tuple(fields)
                    mask = masks.get(names)
                    if mask is None:
                        mask = masks[names] = c._mask(fields)
                    fill(zero, fields)
                except Exception:
                    return slow_update_by(_key, **fields)
                rc = upd(h, _key, scratch, mask, out, ref)
                if rc == P2_OK:
                    c._version += 1
                    c._links += 1
                    return one(unpack(obuf), ref[0])
                if rc == P2_NOTFOUND:
                    return None
                raise fail(rc)

        update_by.__doc__ = slow_update_by.__doc__
        c.update_by = update_by
    if dele is not None:
        slow_delete_by = c.delete_by

        def delete_by(_key, /):
            if _key.__class__ is not int or not lo <= _key <= hi:
                return slow_delete_by(_key)
            with lock:
                h = db._handle_
                if h is None:
                    return slow_delete_by(_key)
                if guard is not None:
                    db._guard()
                rc = dele(h, _key, ref)
                if rc == P2_OK:
                    c._version += 1
                    c._links += 1
                    return True
                if rc == P2_NOTFOUND:
                    return False
                raise fail(rc)

        delete_by.__doc__ = slow_delete_by.__doc__
        c.delete_by = delete_by


def _find_str(f: _Field, value):
    """A char key to look for: too long a string cannot be there (None)."""
    if not isinstance(value, (str, bytes, bytearray, memoryview)):
        return f.convert(value)  # raises TypeError
    data = _encode(value, f.what)
    if len(data) > f.length or b"\0" in data:
        return None
    return data


class _UpsertContainer(Container):
    """A container with a unique index: upsert (absent from the others)."""

    def upsert(self, _from=None, /, **fields) -> tuple:
        """Insert an element or, if one with the same unique key exists (the key of the
        container's index with `unique = true`), replace it by these fields, in one call
        into C; returns (Record, inserted: bool). Fields as insert takes them."""
        with self._db._lock:   # one call into C at a time (see _serialised)
            self._db._guard()
            fields = _merged_fields("upsert", _from, fields)
            self._check_required("upsert", fields)
            h = self._db._handle()
            crec = self._ffi.new(self._rtype)
            for n, none in self._refnone.items():
                setattr(crec, n, none)     # not given: no element
            texts = self._fill(crec, {**self._defaults, **fields})
            out = self._ffi.new("uint64_t *")
            inserted = self._ffi.new("int *")
            rc = self._upsert(h, crec, out, inserted)
            if rc != P2_OK:
                raise self._fail(rc)
            self._changed()
            ref = int(out[0])
            if texts:
                self._set_texts(h, ref, texts)
            return self._record(crec, ref), bool(inserted[0])


_CONTAINER_CLASSES: dict = {}


def _container_class(purges: bool, upserts: bool) -> type:
    """Container, with purge() over a delflag layer and upsert() over a unique index:
    methods a container cannot do are absent (AttributeError, hasattr false)."""
    cls = _CONTAINER_CLASSES.get((purges, upserts))
    if cls is None:
        bases = tuple(b for b, on in ((_PurgeableContainer, purges), (_UpsertContainer, upserts))
                      if on) or (Container,)
        cls = bases[0] if len(bases) == 1 else type("Container", bases, {"__module__": __package__})
        _CONTAINER_CLASSES[(purges, upserts)] = cls
    return cls


class _PurgeableContainer(Container):
    def purge(self) -> int:
        """Remove the elements marked deleted for good; returns how many."""
        h = self._db._handle()
        n = self._ffi.new("uint64_t *")
        rc = self._c["purge"](h, n)
        if rc != P2_OK:
            raise self._fail(rc)
        self._changed()
        return int(n[0])
