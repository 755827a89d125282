"""The spec as data: what the parser produces and every later pass reads.

parse -> model (this file) -> check (realms, names, types) -> plan (access paths)
-> render (Jinja2 layer templates) -> compile.

Every node carries a `Pos` so that any later pass can report an error at the exact
line and column of the text that caused it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Union


@dataclass(frozen=True)
class Pos:
    """A place in a spec file: 1-based line, 1-based column, and the length of the text."""
    file: str
    line: int
    col: int
    length: int = 1

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


# ---------------------------------------------------------------------------
# Records
# ---------------------------------------------------------------------------
INT_TYPES = {
    # name: (C type, bits, signed)
    "i8": ("int8_t", 8, True), "i16": ("int16_t", 16, True),
    "i32": ("int32_t", 32, True), "i64": ("int64_t", 64, True),
    "u8": ("uint8_t", 8, False), "u16": ("uint16_t", 16, False),
    "u32": ("uint32_t", 32, False), "u64": ("uint64_t", 64, False),
}
FLOAT_TYPES = {"f32": "float", "f64": "double"}
# Aliases accepted in specs, mapped to the canonical names above.
TYPE_ALIASES = {"float": "f32", "double": "f64"}


@dataclass(frozen=True)
class FieldType:
    """`kind` is 'int', 'float', 'char' or 'text'. `name` is the canonical type name
    (i8..u64, f32, f64, 'char' or 'text'); `length` is N for char[N].

    `ref <container>` is an 'int' of name 'u64' with `target` set: a reference to an
    element of that container (the storage layer's reference, UINT64_MAX for none), so it
    can be a key or appear in predicates like any u64. 'text' is a variable-length byte
    string kept in the container's memory layer; the record holds its handle.

    Over 32-bit links (persistent(links = offset32)) the checker narrows both (`narrowed`):
    a ref is a 'u32' (the slot number, UINT32_MAX for none) and a text handle a
    `p2_text32` (name 'text32': the block's offset >> 3 and a 32-bit length)."""
    kind: str
    name: str
    length: int = 0
    target: Optional[str] = None

    @property
    def ctype(self) -> str:
        if self.kind == "int":
            return INT_TYPES[self.name][0]
        if self.kind == "float":
            return FLOAT_TYPES[self.name]
        if self.kind == "text":
            return "p2_text32" if self.name == "text32" else "p2_text"
        return "char"

    @property
    def bits(self) -> int:
        if self.kind == "int":
            return INT_TYPES[self.name][1]
        if self.kind == "float":
            return 32 if self.name == "f32" else 64
        if self.kind == "text":
            return 64 if self.name == "text32" else 128
        return 8 * self.length

    @property
    def signed(self) -> bool:
        return self.kind == "int" and INT_TYPES[self.name][2]

    @property
    def min_value(self) -> int:
        return -(1 << (self.bits - 1)) if self.signed else 0

    @property
    def max_value(self) -> int:
        return (1 << (self.bits - 1)) - 1 if self.signed else (1 << self.bits) - 1

    def spelled(self) -> str:
        if self.target is not None:
            return f"ref {self.target}"
        if self.kind == "text":
            return "text"
        return f"char[{self.length}]" if self.kind == "char" else self.name

    @property
    def narrow(self) -> bool:
        """A ref or text handle stored in 32 bits (over 32-bit links)."""
        return (self.target is not None and self.name == "u32") or self.name == "text32"

    def narrowed(self) -> "FieldType":
        """This type as a record over 32-bit links stores it (refs and text handles
        narrow; every other type is what it is)."""
        if self.target is not None:
            return FieldType("int", "u32", target=self.target)
        if self.kind == "text":
            return FieldType("text", "text32")
        return self


@dataclass
class Field:
    """`default`: the value a spec gives it (`qty: u32 = 0`), a Value of kind 'int',
    'float', 'string' or 'name' (`none`, for a ref field), which the checker matches to the
    type; None: no default (the Python binding's insert then needs the field)."""
    name: str
    type: FieldType
    pos: Pos
    default: Optional["Value"] = None


@dataclass(frozen=True)
class CompositeType:
    """The type of a composite key `key = (a, b)`: passed between the layers of a container
    as one C struct (`ctype`, `<container prefix>__key_<name>`) holding a copy of each
    field, compared field after field (lexicographic order). Only integer and char[N]
    fields make up a composite key (the checker)."""
    ctype: str
    fields: tuple            # Field, in key order
    kind: str = "composite"
    name: str = "composite"
    length: int = 0
    target: Optional[str] = None
    signed: bool = False

    def spelled(self) -> str:
        return "(" + ", ".join(f.type.spelled() for f in self.fields) + ")"


@dataclass
class CompositeKey:
    """A key made of several fields of the record, `key = (mat, kind)`: it stands where a
    key `Field` stands (a layer's `key_field_obj`), named by its fields joined with '_'
    (`mat_kind`: the find function is `<container>_find_mat_kind`)."""
    name: str
    type: CompositeType
    pos: Pos

    @property
    def fields(self) -> tuple:
        return self.type.fields

    @property
    def names(self) -> tuple:
        return tuple(f.name for f in self.type.fields)

    def text(self) -> str:
        return "(" + ", ".join(self.names) + ")"


@dataclass
class Record:
    name: str
    fields: list[Field]
    pos: Pos

    def field(self, name: str) -> Optional[Field]:
        for f in self.fields:
            if f.name == name:
                return f
        return None


# ---------------------------------------------------------------------------
# Type equations and containers
# ---------------------------------------------------------------------------
@dataclass
class Value:
    """A literal in a layer parameter: kind is 'int', 'float', 'string' or 'name'
    (a bare identifier such as a field name or `identity`), or 'bool', or 'names' (a
    parenthesised list of identifiers, a composite key: value is the tuple of names and
    `parts` their places)."""
    kind: str
    value: Union[int, float, str, bool, tuple]
    pos: Pos
    parts: tuple = ()


@dataclass
class Param:
    name: str
    value: Value
    pos: Pos


@dataclass
class LayerApp:
    """One layer in an equation: `hash` in `top2ds_qualify[hash[array[persistent]]]`.

    `params` are the ones written inline, `hash(key = id)[...]`; parameters given in the
    container's `with` clause are attached by the checker."""
    name: str
    below: Optional["LayerApp"]
    params: list[Param]
    pos: Pos

    def chain(self) -> list["LayerApp"]:
        """Outermost first."""
        out, cur = [], self
        while cur is not None:
            out.append(cur)
            cur = cur.below
        return out

    def text(self) -> str:
        inner = f"[{self.below.text()}]" if self.below else ""
        return f"{self.name}{inner}"


@dataclass
class LayerArgs:
    """`hash(key = id, buckets = 1024)` in a container's `with` clause."""
    layer: str
    params: list[Param]
    pos: Pos


@dataclass
class Container:
    name: str
    record: str
    record_pos: Pos
    equation: LayerApp
    with_args: list[LayerArgs]
    pos: Pos


# ---------------------------------------------------------------------------
# Predicates and cursors
# ---------------------------------------------------------------------------
@dataclass
class FieldRef:
    name: str
    pos: Pos


@dataclass
class ParamRef:
    """`$name`: a value supplied when the cursor is opened."""
    name: str
    pos: Pos


@dataclass
class Const:
    """kind is 'int', 'float' or 'string'."""
    kind: str
    value: Union[int, float, str]
    pos: Pos


Operand = Union[FieldRef, ParamRef, Const]

COMPARE_OPS = ("==", "!=", "<", "<=", ">", ">=")


@dataclass
class Compare:
    op: str  # one of COMPARE_OPS
    left: Operand
    right: Operand
    pos: Pos


@dataclass
class And:
    left: "Expr"
    right: "Expr"
    pos: Pos


@dataclass
class Or:
    left: "Expr"
    right: "Expr"
    pos: Pos


@dataclass
class Not:
    operand: "Expr"
    pos: Pos


Expr = Union[Compare, And, Or, Not]


@dataclass
class Cursor:
    name: str
    container: str
    container_pos: Pos
    where: Optional[Expr]
    order_by: Optional[FieldRef]
    pos: Pos
    # `order by FIELD desc`: largest key first. `direction_pos`: where `asc` or `desc`
    # was written (None: the direction was left out, so ascending).
    descending: bool = False
    direction_pos: Optional[Pos] = None


# ---------------------------------------------------------------------------
# Relationships
# ---------------------------------------------------------------------------
@dataclass
class RelEnd:
    """`one composites.parts`: a multiplicity, a container and the role its elements play."""
    many: bool
    container: str
    role: str
    mult_pos: Pos
    container_pos: Pos
    role_pos: Pos
    # `order by time desc`: the collection role kept in the order of a field of its members
    order_by: Optional["FieldRef"] = None
    descending: bool = False


@dataclass
class Relationship:
    """`relationship parts one composites.parts to many atoms.part_of = ilist;`

    Each end's role holds the *other* end's elements: composites.parts is a collection
    (the right end is `many`), atoms.part_of a single reference (the left end is `one`).
    """
    name: str
    left: RelEnd
    right: RelEnd
    equation: LayerApp
    pos: Pos


@dataclass
class Find:
    """`find accounts by id;` (or `by (mat, kind)`): the container's find on that key is
    part of the API whatever its equation (an index keyed on it serves it, else a scan)."""
    container: str
    container_pos: Pos
    names: tuple           # the key's fields: one, or two or more (composite)
    name_pos: tuple        # where each was written
    composite: bool        # written in parentheses
    pos: Pos               # the word `find`


# ---------------------------------------------------------------------------
# The whole spec
# ---------------------------------------------------------------------------
@dataclass
class Spec:
    path: str          # file name used in messages
    source: str        # full text, for underlining errors
    records: list[Record] = field(default_factory=list)
    containers: list[Container] = field(default_factory=list)
    cursors: list[Cursor] = field(default_factory=list)
    relationships: list[Relationship] = field(default_factory=list)
    finds: list[Find] = field(default_factory=list)

    def record(self, name: str) -> Optional[Record]:
        return next((r for r in self.records if r.name == name), None)

    def container(self, name: str) -> Optional[Container]:
        return next((c for c in self.containers if c.name == name), None)


# ---------------------------------------------------------------------------
# Expressions as the spec language writes them (explain, comments, error messages)
# ---------------------------------------------------------------------------
def chain_terms(e: Expr, op: type) -> list:
    """The terms of `e` read as `t0 op t1 op ...` (op And or Or), left to right, however
    the chain is bracketed; without recursion, so a chain of any length is fine."""
    out, todo = [], [e]
    while todo:
        e = todo.pop()
        if isinstance(e, op):
            todo += (e.right, e.left)
        else:
            out.append(e)
    return out


def operand_text(o) -> str:
    if isinstance(o, FieldRef):
        return o.name
    if isinstance(o, ParamRef):
        return f"${o.name}"
    if o.kind == "string":
        return '"' + o.value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return str(o.value)


def expr_text(e: Expr, top: bool = True) -> str:
    if isinstance(e, Compare):
        return f"{operand_text(e.left)} {e.op} {operand_text(e.right)}"
    if isinstance(e, Not):
        return f"not ({expr_text(e.operand)})"
    op = type(e)
    inner = f" {op.__name__.lower()} ".join(expr_text(t, False) for t in chain_terms(e, op))
    return inner if top else f"({inner})"
