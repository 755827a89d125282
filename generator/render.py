"""Rendering: a checked, planned spec becomes one C header and one C source.

The source is assembled container by container, layer by layer from the bottom (memory)
up to the top, each section rendered by that layer's template in layers/, headed by a
banner naming the layer and the equation and closed by an end fence naming it again.
Every function a template emits is declared through one construct, `cfunc`, which records
it in the renderer's table (cfuncs.py: name, section, public or not, what it calls); the
static functions nothing calls are then left out by that table (FunctionTable.unused_lines)
and the public ones carry the storage class <PREFIX>_API the construct wrote. Rendering
is deterministic: same spec, same bytes.
"""
from __future__ import annotations

import functools
import hashlib
import os
import re
import zlib
from dataclasses import dataclass
from typing import Optional

import jinja2
import jinja2.ext
import jinja2.lexer

from .cfuncs import FENCE_MARK, FunctionTable, strip_marks
from .ir import CheckedSpec, ContainerInfo, CursorInfo, LayerInstance
from .layers.base import ALLOC, container_links as _container_links
from .runtime.codes import CODES
from .plan import path_kind_text
from .profile import context as profile_context
from .trace import context as trace_context
from .model import (And, Compare, Const, Expr, FieldRef, FieldType, Not, ParamRef, chain_terms,
                    expr_text)

def _template_dirs() -> list[str]:
    from . import layers as layer_pkg
    from . import templates as tmpl_pkg
    return [os.path.dirname(layer_pkg.__file__), os.path.dirname(tmpl_pkg.__file__)]


@functools.lru_cache(maxsize=None)
def jinja_env(line_marks: bool = False) -> jinja2.Environment:
    """One environment per process: Jinja2 compiles each template once (rendering a spec
    then takes milliseconds, not the half second recompiling every template cost).
    line_marks: the environment of `--line-directives` builds (see LineMarks)."""
    return make_env(tuple(_template_dirs()), line_marks)


class _TemplateCache(jinja2.FileSystemBytecodeCache):
    """The layer templates compiled by Jinja2, kept in the user's cache directory: a
    process then loads each as Python bytecode instead of compiling it (about a second of
    every `p2gen build`). Jinja2 checks each entry against its template's source and its
    own version, and writes it atomically; a cache that cannot be written only costs the
    compile."""

    def dump_bytecode(self, bucket) -> None:
        try:
            super().dump_bytecode(bucket)
        except OSError:
            pass


def _template_cache(line_marks: bool) -> Optional[jinja2.BytecodeCache]:
    """A directory per environment: how a template compiles also depends on this file
    (the environment's options, finalize, the LineMarks extension), which Jinja2's own
    check does not see."""
    from .toolchain import cache_dir
    try:
        with open(__file__, "rb") as f:
            me = f.read()
        key = hashlib.sha256(b"\0".join([me, jinja2.__version__.encode(), b"%d" % line_marks]))
        where = os.path.join(cache_dir("templates"), key.hexdigest()[:20])
        os.makedirs(where, exist_ok=True)
    except OSError:
        return None
    return _TemplateCache(where)


def make_env(template_dirs: tuple, line_marks: bool = False) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(list(template_dirs)),
        bytecode_cache=_template_cache(line_marks),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
        autoescape=False, extensions=[LineMarks] if line_marks else [])
    env.filters["cstr"] = c_string
    env.filters["ccomment"] = c_comment
    # `{% filter fenced(head_lines, title) %}...{% endfilter %}`: a section with its banner
    # and end fence (see fenced)
    env.filters["fenced"] = fenced
    # Every `{{ ... }}` value passes _finalize: a value that could change where C's lexer
    # is (open or close a comment, end a line, splice lines, make a trigraph) stops the
    # render instead of reaching the compiler. Spec text must go through c_text first.
    env.finalize = _finalize_marked if line_marks else _finalize
    # `{{ caller()|composed }}`: a macro's body, template text whose values each passed
    # _finalize when the body was rendered, printed as is
    env.filters["composed"] = CSource
    # a 32-bit tag derived from a name (e.g. per-container magic numbers), never 0
    env.filters["tag32"] = lambda s: (zlib.crc32(str(s).encode()) | 1)
    return env


# ---------------------------------------------------------------------------
# Line directives (`p2gen build --line-directives`)
# ---------------------------------------------------------------------------
# Rendered with LineMarks, the text of every template carries, at the start of each of
# its literal lines, a mark naming the template and the line: \x01name:N\x02 (characters
# no template or value may print). mark_lines takes the marks out, keeping for each output
# line the last mark before its first character; line_directives then writes a
# `#line N "layers/<layer>.c.j2"` wherever the output stops following the template line
# by line, so that the C compiler's messages point into the templates.
_MARK = re.compile("\x01([^\x02]*)\x02")


class LineMarks(jinja2.ext.Extension):
    """Marks each line of a template's literal text with the template's name and line."""

    def filter_stream(self, stream):
        for tok in stream:
            if tok.type != "data":
                yield tok
                continue
            lines = tok.value.split("\n")
            marked = [f"\x01{stream.name}:{tok.lineno + k}\x02{line}"
                      for k, line in enumerate(lines)]
            yield jinja2.lexer.Token(tok.lineno, "data", "\n".join(marked))


def mark_lines(text: str) -> tuple:
    """(text without marks, [(template name, line) or None for each line])."""
    out, where = [], []
    for line in text.split("\n"):
        # (the function table's marks, cfuncs.py, may stand among them: they stay)
        head = re.match("(?:\x01[^\x02]*\x02|\x03[^\x04]*\x04)*", line).group(0)
        marks = _MARK.findall(head)
        if marks:
            name, _, n = marks[-1].rpartition(":")
            where.append((name, int(n)))
        else:
            where.append(None)
        out.append(_MARK.sub("", line))
    return "\n".join(out), where


def line_directives(text: str, where: list, path_of) -> str:
    """`text` with a #line directive before each line that does not continue the template
    line the compiler would count (never inside a comment or after a line splice)."""
    out = []
    expected = None
    in_comment = False
    for line, at in zip(text.split("\n"), where):
        spliced = bool(out) and out[-1].endswith("\\")
        if at is not None and at != expected and not in_comment and not spliced:
            out.append(f'#line {at[1]} "{path_of(at[0])}"')
            expected = at
        out.append(line)
        expected = (expected[0], expected[1] + 1) if expected else None
        in_comment = _ends_in_comment(line, in_comment)
    return "\n".join(out)


def _ends_in_comment(line: str, in_comment: bool) -> bool:
    """Is C's lexer inside a /* comment at the end of `line`?"""
    i, n = 0, len(line)
    while i < n:
        if in_comment:
            j = line.find("*/", i)
            if j < 0:
                return True
            in_comment, i = False, j + 2
        elif line.startswith("/*", i):
            in_comment, i = True, i + 2
        elif line.startswith("//", i):
            return False
        elif line[i] in "\"'":
            q, i = line[i], i + 1
            while i < n and line[i] != q:
                i += 2 if line[i] == "\\" else 1
            i += 1
        else:
            i += 1
    return in_comment


# ---------------------------------------------------------------------------
# C spelling of values and predicates
# ---------------------------------------------------------------------------
class RenderError(Exception):
    """A template tried to print text that could change the meaning of the C around it
    (a bug in a template: spec text printed without the `cstr`/`ccomment` filter)."""


class CSource(str):
    """C text the renderer composed itself (a layer's section, several lines): printed as
    is. Everything else a template prints must be one line of lexically inert text."""


# What spec text must never bring into C, in a comment or a literal: comment delimiters,
# `//`, trigraphs (`??/` is a backslash under -std=c11), line ends and other control
# characters, NUL, and anything that is not ASCII.
_INERT_BAD = re.compile(r"/\*|\*/|//|\?\?|[^\x20-\x7e]")


def text_bytes(s) -> bytes:
    """The bytes spec text stands for: UTF-8, with the bytes a non-UTF-8 path was read
    with (surrogateescape, as os.fsencode) given back. Other lone surrogates cannot be
    spelled in C: the checker refuses them (check_spec_text)."""
    if isinstance(s, (bytes, bytearray)):
        return bytes(s)
    return str(s).encode("utf-8", "surrogateescape")


def c_text(s, how: str = "string") -> str:
    """The one spelling of spec text (file names, string constants, layer parameters,
    where text, the spec's own path) in generated C.

    how="string": a C string literal with the same bytes. Only printable ASCII is kept;
      `"` and `\\` are escaped, every other byte (and `?`, so no trigraph can form, and the
      second character of `/*`, `*/` and `//`) is an octal escape, so the literal is inert
      even if it lands in a comment.
    how="comment": text to show inside a C comment. Printable ASCII is kept except that `\\`
      shows as `\\x5c` (a backslash never ends the text, where it would splice the next
      line), the second character of `/*`, `*/`, `//` and `??` is shown escaped (`*\\/`),
      control characters as `\\n`, `\\t` or `\\xNN`, and bytes that are not ASCII as
      `\\xNN`, and a `*` or `/` at either end as `\\x2a` or `\\x2f`: a comment cannot be closed,
      opened, split or extended by spec text.
    """
    b = text_bytes(s)
    out: list[str] = []
    prev = ""
    for byte in b:
        ch = chr(byte)
        pair = prev + ch
        if how == "string":
            if ch in '"\\':
                tok = "\\" + ch
            elif 32 <= byte < 127 and ch != "?" and pair not in ("/*", "*/", "//"):
                tok = ch
            else:
                tok = f"\\{byte:03o}"
        elif how == "comment":
            if ch == "\\":
                tok = "\\x5c"
            elif ch == "\n":
                tok = "\\n"
            elif ch == "\t":
                tok = "\\t"
            elif not 32 <= byte < 127:
                tok = f"\\x{byte:02x}"
            elif pair in ("/*", "*/", "//", "??"):
                tok = "\\" + ch
            else:
                tok = ch
        else:
            raise ValueError(f"c_text: unknown spelling {how!r}")
        out.append(tok)
        prev = tok[-1]   # what the next byte meets in the output
    if how == "string":
        return '"' + "".join(out) + '"'
    # nor may it begin or end with `*` or `/`, which could pair with a template's own
    # `/*`, `*/` or `/` beside it
    if out and out[0] in ("*", "/"):
        out[0] = f"\\x{ord(out[0]):02x}"
    if out and out[-1][-1] in ("*", "/"):
        out[-1] = f"\\x{ord(out[-1][-1]):02x}"
    return "".join(out)


def c_string(s) -> str:
    """Spec text as a C string literal (see c_text)."""
    return c_text(s, "string")


def c_comment(s) -> str:
    """Spec text shown in a C comment (see c_text)."""
    return c_text(s, "comment")


def _finalize(value):
    """Jinja's hook on every `{{ ... }}`: refuse text that is not inert (see _INERT_BAD);
    a value may not end in a backslash (line splice) nor begin or end with `*` or `/`
    (which could pair with a template's own `/*`, `*/` or `/` beside it)."""
    if isinstance(value, CSource) or not isinstance(value, str):
        return value
    bad = _INERT_BAD.search(value)
    if bad or value and (value[-1] == "\\" or value[0] in "*/" or value[-1] in "*/"):
        where = repr(value if len(value) <= 80 else value[:77] + "...")
        raise RenderError(f"internal error: a template printed {where}, which is not inert "
                          f"C text; spec text must go through c_text (filters cstr, ccomment)")
    return value


def _finalize_marked(value):
    """_finalize for `--line-directives` renders: a value captured by `{% set x %}...
    {% endset %}` carries the line marks of its literal text (mark_lines takes every mark
    out of the output), so the check is of the text that will remain."""
    if isinstance(value, str) and not isinstance(value, CSource) and "\x01" in value:
        _finalize(_MARK.sub("", value))
    else:
        _finalize(value)
    return value


# ---------------------------------------------------------------------------
# Section fences
# ---------------------------------------------------------------------------
# Every section of the generated C (a container, a layer, a relationship) is headed by a
# banner and closed by an end fence naming it, so a reader sees where a layer's code
# starts and where it stops (as in Lemon's template output). Both are spelled here only.
FENCE_WIDTH = 77      # a banner's top rule ends at this column
# the rule of a layer's section, of the header's sections and of the source's container
# sections, with the length of the banner's closing rule
FENCE_RULES = {"-": 72, "=": 74, "#": 74}


def fence_head(lines: list, rule: str = "-") -> CSource:
    """A section's banner: `lines` (comment-safe text: spec text through c_comment)
    between two rules."""
    assert rule in FENCE_RULES
    top = "/* " + rule * (FENCE_WIDTH - 3)
    bottom = " * " + rule * FENCE_RULES[rule] + " */"
    return CSource("\n".join([top, *(f" * {line}" for line in lines), bottom]))


def fence_end(title: str, rule: str = "-") -> CSource:
    """A section's end fence: one line, `end of <title>`, ruled to the banner's width."""
    assert rule in FENCE_RULES
    text = f"/* end of {title} "
    return CSource(text + rule * max(3, FENCE_WIDTH - 3 - len(text)) + " */")


def _strip_end(text: str) -> str:
    """`text` without its trailing white space and line marks (LineMarks), by str methods:
    a pattern anchored at the end is tried at every position of a section's text."""
    while True:
        text = text.rstrip()
        if not text.endswith("\x02"):
            return text
        # the mark's \x01: the first after the \x02 before (the pattern's [^\x02]*)
        mark = text.find("\x01", text.rfind("\x02", 0, len(text) - 1) + 1, len(text) - 1)
        if mark < 0:
            return text
        text = text[:mark]


def fenced(body: str, lines: list, title: str, rule: str = "-") -> CSource:
    """`body` as a section: its banner, the body without trailing blank lines, its end
    fence (ending the line)."""
    body = _strip_end(body)
    # the end fence is marked for the pruning of unused functions (cfuncs.py)
    return CSource(f"{fence_head(lines, rule)}\n{body}\n{FENCE_MARK}{fence_end(title, rule)}\n")


def layer_fence_lines(li: LayerInstance, info: ContainerInfo) -> list:
    head = f"layer {li.name} ({li.layer.signature()}) of {info.name}"
    if li.params_text():
        head += f": {c_comment(li.params_text())}"
    return [head]


def c_int(v: int, t: FieldType) -> str:
    if t.signed:
        if v == t.min_value and t.bits == 64:
            return "(INT64_MIN)"
        return f"(({t.ctype}){v}{'LL' if t.bits == 64 else ''})"
    return f"(({t.ctype}){v}u{'LL' if t.bits == 64 else ''})"


def c_const(k: Const, t: FieldType) -> str:
    if t.kind == "char":
        return f"((const char[{t.length}]){{{c_string(k.value)}}})"
    if t.kind == "int":
        return c_int(int(k.value), t)
    return f"(({t.ctype}){float(k.value)!r})"


def arg_type(t: FieldType) -> str:
    if t.target is not None:
        return CSource("uint64_t ")
    return CSource("const char *" if t.kind == "char" else f"{t.ctype} ")


def param_field_decl(name: str, t: FieldType, member=None, prefix: str = "_p_") -> str:
    """The struct member holding parameter (or key field) `name` of type `t`: `prefix` +
    name, recorded by `member` (the table's cmember) when the struct is a cdecl's."""
    field = member(prefix + name) if member is not None else prefix + name
    if t.kind == "char":
        return f"char {field}[{t.length}];"
    return f"{t.ctype} {field};"


FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}


def fold_compare(c: Compare, ft: FieldType) -> Optional[bool]:
    """The value of an integer comparison its field's type alone decides (`u >= 0`,
    `u8 <= 255`, `i8 >= -128`, `a < a`), else None."""
    if ft.kind != "int":
        return None
    l, r, op = c.left, c.right, c.op
    if isinstance(l, FieldRef) and isinstance(r, FieldRef):
        if l.name != r.name:
            return None
        return op in ("==", "<=", ">=")
    if isinstance(l, Const):
        l, r, op = r, l, FLIP[op]
    if not (isinstance(l, FieldRef) and isinstance(r, Const)) or r.kind != "int":
        return None
    lo, hi, v = ft.min_value, ft.max_value, int(r.value)
    outcome = {"<": (v > hi, v <= lo), "<=": (v >= hi, v < lo),
               ">": (v < lo, v >= hi), ">=": (v <= lo, v > hi),
               "==": (False, v < lo or v > hi), "!=": (v < lo or v > hi, False)}[op]
    if outcome[0]:
        return True
    if outcome[1]:
        return False
    return None


class PredicateC:
    """Spells a predicate as a C expression over element `e` and cursor `k`."""

    def __init__(self, spec_prefix: str, record):
        self.sp = spec_prefix
        self.record = record

    def operand(self, o, t: FieldType) -> str:
        if isinstance(o, FieldRef):
            return f"e->rec.{o.name}"
        if isinstance(o, ParamRef):
            return f"k->_p_{o.name}"
        return c_const(o, t)

    def compare(self, c: Compare) -> str:
        ft = None
        for side in (c.left, c.right):
            if isinstance(side, FieldRef):
                ft = self.record.field(side.name).type
                break
        if ft.kind == "char":
            def length(o):
                if isinstance(o, FieldRef):
                    return self.record.field(o.name).type.length
                return ft.length
            a = self.operand(c.left, ft)
            b = self.operand(c.right, ft)
            return (f"(p2_fixstr_cmp({a}, {length(c.left)}, {b}, {length(c.right)}) "
                    f"{c.op} 0)")
        folded = fold_compare(c, ft)
        if folded is not None:
            # decided by the field's type alone: C compilers warn (-Wtype-limits, which
            # -Wextra turns on) about such comparisons, so spell the outcome instead;
            # the (void) keeps the element used
            field = c.left if isinstance(c.left, FieldRef) else c.right
            return f"((void){self.operand(field, ft)}, {int(folded)})"
        return f"({self.operand(c.left, ft)} {c.op} {self.operand(c.right, ft)})"

    def expr(self, e: Expr) -> str:
        if isinstance(e, Compare):
            return self.compare(e)
        if isinstance(e, Not):
            return f"!{self.expr(e.operand)}"
        op = "&&" if isinstance(e, And) else "||"
        return "(" + f" {op} ".join(self.expr(t) for t in chain_terms(e, type(e))) + ")"

    def conjunction(self, es: list) -> Optional[str]:
        if not es:
            return None
        return " && ".join(self.expr(e) for e in es)


# ---------------------------------------------------------------------------
# Render-time views of cursors
# ---------------------------------------------------------------------------
@dataclass
class CursorView:
    """What a top layer template needs to emit one cursor's code."""
    info: CursorInfo
    plan: object           # plan.Plan: the access path chosen for it
    t: str                 # C struct type
    p: str                 # public prefix (user cursors), internal prefix (synthetic)
    tp: str                # prefix of this cursor's functions inside a top layer: `<T.p>_<name>`
    params: list           # [(name, FieldType)]
    first_c: str           # C expression: first candidate reference (uses k)
    advance_c: str         # C expression: next candidate after `ref` (uses k, ref)
    stop_c: Optional[str]  # C expression on e: past the end of the range
    residual_c: Optional[str]
    comment: str
    # C expression (uses k, `old`: the element's reference, `rec`: its new record): would
    # this update put the element elsewhere in this cursor's walk, where the walk could meet
    # it again? Yes when the storage relocates it or the path's layer orders it by a field
    # that changes (the Halloween problem; the cursor then remembers it and skips it).
    relink_c: str = "0"
    relink_why: str = ""   # the same in words, for the generated comment

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def synthetic(self) -> Optional[str]:
        return self.info.synthetic


def _key_value_c(conj, t: FieldType) -> str:
    if isinstance(conj.value, ParamRef):
        return f"k->_p_{conj.value.name}"
    return c_const(conj.value, t)


def key_of(key, elem: str) -> str:
    """The key of the element `elem` points at (a C expression): its key field, or for a
    composite key the key struct built from its fields."""
    if key.type.kind == "composite":
        return f"{key.type.ctype}_of(&{elem}->rec)"
    return f"{elem}->rec.{key.name}"


def key_of_rec(key, rec: str) -> str:
    """The key of the record `rec` points at (a C expression)."""
    if key.type.kind == "composite":
        return f"{key.type.ctype}_of({rec})"
    return f"{rec}->{key.name}"


def _key_min_max(t: FieldType, high: bool) -> str:
    """The smallest (largest, if `high`) value of a field of a composite key: what a bound
    on a prefix of the key takes for the fields after it."""
    if t.kind == "char":
        return '"' + "\\xff" * t.length + '"' if high else '""'
    return c_int(t.max_value if high else t.min_value, t)


def composite_value(key, values: list, pad_high: bool = False) -> str:
    """The key struct (`<key>_make(...)`) of the C values of its leading fields, the rest
    padded with their smallest values (or largest, if `pad_high`)."""
    args = list(values) + [_key_min_max(f.type, pad_high) for f in key.fields[len(values):]]
    return f"{key.type.ctype}_make({', '.join(args)})"


def composite_bounds(key, path) -> tuple:
    """The lower and upper bound of a range path on a composite key, each (C value,
    inclusive) or None: the equality prefix, then the bound on the next field (or none:
    the whole stretch of the prefix), the fields after it padded so that the bound takes
    in (or leaves out) every value they may have."""
    fixed = [_key_value_c(c, f.type) for c, f in zip(path.prefix, key.fields)]
    if len(fixed) == len(key.fields):   # every field equal: [key, key]
        v = composite_value(key, fixed)
        return (v, True), (v, True)
    t = key.fields[len(fixed)].type
    lo = hi = None
    if path.lo is not None:
        incl = path.lo.op == ">="
        # a >= v: from (v, smallest...); a > v: after (v, largest...)
        lo = (composite_value(key, fixed + [_key_value_c(path.lo, t)], not incl), incl)
    elif fixed:
        lo = (composite_value(key, fixed), True)
    if path.hi is not None:
        incl = path.hi.op == "<="
        # a <= v: up to (v, largest...); a < v: before (v, smallest...)
        hi = (composite_value(key, fixed + [_key_value_c(path.hi, t)], incl), incl)
    elif fixed:
        hi = (composite_value(key, fixed, True), True)
    return lo, hi


def composite_cursor_walk(info: ContainerInfo, path, P: str) -> tuple:
    """(first, advance, stop) C expressions of a cursor whose path is a layer with a
    composite key: an equality on the whole key (hash), or a range of its order."""
    key = path.layer.key_field_obj
    cmp = f"{info.p}__cmp_{key.name}({key.type.ctype}_of(&e->rec), "
    if path.kind == "eq":
        v = composite_value(key, [_key_value_c(c, f.type)
                                  for c, f in zip(path.prefix, key.fields)])
        return f"{P}_eq_first(k->_db, {v})", f"{P}_eq_next(k->_db, ref, {v})", None
    lo, hi = composite_bounds(key, path)
    dummy = composite_value(key, [])
    stop = None
    if path.descending:
        first = (f"{P}_range_last(k->_db, 1, {hi[0]}, {int(hi[1])})" if hi
                 else f"{P}_range_last(k->_db, 0, {dummy}, 1)")
        if lo:
            stop = f"{cmp}{lo[0]}) {'<' if lo[1] else '<='} 0"
        return first, f"{P}_range_prev(k->_db, ref)", stop
    first = (f"{P}_range_first(k->_db, 1, {lo[0]}, {int(lo[1])})" if lo
             else f"{P}_range_first(k->_db, 0, {dummy}, 1)")
    if hi:
        stop = f"{cmp}{hi[0]}) {'>' if hi[1] else '>='} 0"
    return first, f"{P}_range_next(k->_db, ref)", stop


def range_cursor_walk(info: ContainerInfo, path, P: str) -> tuple[str, str, str | None]:
    """A range path's first, advance and stop C: from the bound it starts at (lo in key
    order, hi descending; the key's end where there is none) to the bound it stops past.
    The two directions mirror each other, so one walk with its words swapped serves both."""
    key = path.layer.key_field_obj
    kt = key.type
    if path.descending:  # from the last in key order down
        start, end, begin, step, past = path.hi, path.lo, "last", "prev", "<"
        start_incl, end_incl = ("<=", "=="), (">=", "==")
    else:
        start, end, begin, step, past = path.lo, path.hi, "first", "next", ">"
        start_incl, end_incl = (">=", "=="), ("<=", "==")
    if start is not None:
        v = _key_value_c(start, kt)
        incl = "1" if start.op in start_incl else "0"
        first = f"{P}_range_{begin}(k->_db, 1, {v}, {incl})"
    else:
        zero = '""' if kt.kind == "char" else "0"
        first = f"{P}_range_{begin}(k->_db, 0, {zero}, 1)"
    adv = f"{P}_range_{step}(k->_db, ref)"
    stop = None
    if end is not None:
        v = _key_value_c(end, kt)
        cmp = f"{info.p}__cmp_{key.name}(e->rec.{key.name}, {v})"
        stop = f"{cmp} {past if end.op in end_incl else past + '='} 0"
    return first, adv, stop


def cursor_view(cur: CursorInfo, checked: CheckedSpec) -> CursorView:
    info = cur.container
    pred = PredicateC(checked.prefix, info.record)
    planned = checked.plans[cur]
    path = planned.path
    P = path.layer.p
    t = f"{cur.p}_cursor"
    stop = None
    if path.kind == "scan":
        first = f"{P}_scan_first(k->_db)"
        adv = f"{P}_scan_next(k->_db, ref)"
    elif path.layer.key_field_obj is not None and \
            path.layer.key_field_obj.type.kind == "composite":
        first, adv, stop = composite_cursor_walk(info, path, P)
    elif path.kind == "eq":
        kt = path.layer.key_field_obj.type
        v = _key_value_c(path.eq, kt)
        first = f"{P}_eq_first(k->_db, {v})"
        adv = f"{P}_eq_next(k->_db, ref, {v})"
    else:
        first, adv, stop = range_cursor_walk(info, path, P)
    residual = pred.conjunction(planned.residual)
    comment = f"path: {path.layer.describe()} {path_kind_text(path)} ({path.why}); residual: " \
              f"{planned.residual_text}"
    St = info.storage.p
    relink = [f"{St}_moves(k->_db, old, rec)"]
    okey = path.layer.key_field_obj
    if okey is not None and path.layer is not info.storage:
        relink.append(f"{info.p}__cmp_{okey.name}({key_of(okey, f'{St}_elem(k->_db, old)')}, "
                      f"{key_of_rec(okey, 'rec')}) != 0")
    why = f"{info.storage.name} storage moves it"
    if len(relink) > 1:
        why += f", or its {okey.name} ({path.layer.name}'s key) changes"
    return CursorView(cur, planned, t, cur.p, "", cur.params, first, adv, stop, residual, comment,
                      " || ".join(relink), why)


# ---------------------------------------------------------------------------
# What each function of a container's API can return, for the header
# ---------------------------------------------------------------------------
def layer_errors(info: ContainerInfo, op: str) -> set:
    """The codes the layers of `info`'s equation return for `op` (layers/base.py, `errors`):
    their union, from the outermost layer down to one that does the operation alone (a
    layer that defers deletes, for removals), with ALLOC spelled as the mem layers' codes."""
    out: set = set()
    for li in info.chain:
        out |= li.layer.op_errors(li, op)
        if li.layer.defers_delete and op in ("remove", "cursor_delete"):
            break
    if ALLOC in out:
        out.discard(ALLOC)
        out |= mem_errors(info)
    return out


def mem_errors(info: ContainerInfo) -> set:
    """What allocating in `info`'s memory can return."""
    out: set = set()
    for li in info.chain:
        if li.layer.realm == "mem":
            out |= li.layer.op_errors(li, "alloc")
    return out


def spell_errors(codes) -> str:
    """Codes in the order of their table (P2_ERROR_LIST), comma-separated."""
    ERROR_CODES = [c.name for c in CODES]
    unknown = set(codes) - set(ERROR_CODES)
    if unknown:
        raise ValueError(f"unknown error codes {sorted(unknown)} (not in p2_runtime.h)")
    return ", ".join(c for c in ERROR_CODES if c in codes)


def api_errors(info: ContainerInfo) -> dict:
    """For each public function of a container, the codes it can return beside P2_OK,
    P2_ECLOSED (a closed handle) and P2_EINVAL for a NULL argument: what its checks return
    for this container (references it holds, elements others refer to) and what the layers
    of its equation declare. Keys: insert, update, delete, reserve, cursor_update and
    cursor_delete (beside P2_EINVAL when the cursor is on no element), set_<field>."""
    nf = {"P2_NOTFOUND"}
    checks_refs = nf if info.ref_fields else set()
    # an element others refer to is never moved (prepare_update): the update is refused
    pinned = {"P2_EINVAL"} if info.referenced and info.storage.layer.relocates else set()
    update = nf | checks_refs | pinned | layer_errors(info, "update")
    out = {
        "insert": checks_refs | layer_errors(info, "insert"),
        "update": update,
        "delete": nf | layer_errors(info, "remove"),
        "reserve": layer_errors(info, "reserve"),
        # beside P2_EINVAL when the cursor is not on an element (said in the header)
        "cursor_update": checks_refs | pinned | layer_errors(info, "update")
                         | layer_errors(info, "cursor_update"),
        "cursor_delete": layer_errors(info, "remove") | layer_errors(info, "cursor_delete"),
    }
    if info.unique_index is not None:
        # an update of the element its lookup found: never "no such element"
        out["upsert"] = out["insert"] | (update - nf) | checks_refs

    keys = info.key_columns()
    for f in info.record.fields:
        if f.type.kind == "text":
            out[f"set_{f.name}"] = nf | {"P2_ERANGE", "P2_EINVAL"} | mem_errors(info)
            continue
        codes = set(nf)
        if f.type.kind == "char":
            codes.add("P2_ERANGE")      # longer than the field
        if f.name in keys:
            codes |= update
        out[f"set_{f.name}"] = codes
    return {k: spell_errors(v) for k, v in out.items()}


def role_api_errors(role) -> dict:
    """For each public function of a relationship role that changes it, the codes it can
    return beside P2_OK and P2_ECLOSED: P2_NOTFOUND (the element or partner does not
    exist; for remove also: the owner does not hold the member) and what the relationship's
    layer declares (layers/base.py, RelLayer). Keys: add and remove (roles holding many),
    set (roles holding one)."""
    layer = role.rel.layer
    alloc: set = set()
    for end in (role, role.partner):
        if layer.role_owns_block(end):
            alloc |= mem_errors(end.container)
    out = {}
    for op in (("add", "remove") if role.many else ("set",)):
        codes = {"P2_NOTFOUND"} | set(layer.role_errors(role, op))
        if ALLOC in codes:
            codes.discard(ALLOC)
            codes |= alloc
        if op == "remove" and codes != {"P2_NOTFOUND"}:
            raise ValueError(f"layer '{layer.name}' declares {sorted(codes)} for remove: "
                             f"the public function reports a failing remove as P2_NOTFOUND")
        out[op] = spell_errors(codes)
    return out


# The file-level hooks a mem layer's template may define as macros of one argument, the
# file (layers/README.md, "The mem contract"): the code of the pipeline's open, close,
# sync and recovery program for that file.
FILE_HOOKS = ("open_file", "after_create", "after_attach", "file_code", "file_api",
              "close_file", "sync_file", "recover_abandon", "recover_report")
# The spec-level hooks of the mem layer giving transactions, each a macro of one argument,
# the files it journals: the API's declarations and definitions, the code `__open` runs
# before any file opens, and the code ending each turn of the open's integrity walk (it
# breaks out of the loop, or goes round to walk again: other clients commit meanwhile).
TXN_HOOKS = ("transactions_api", "transactions", "before_open", "after_open_walk")


def _macro_text(text: str) -> str:
    """A template macro's output without its last line end. (Rendered with line marks,
    the text ends in the marks of the empty line after that line end: they go with it.)"""
    return re.sub("\n(?:\x01[^\x02]*\x02)*\\Z", "", text, count=1)


def container_links(info: ContainerInfo):
    """The container's Links (layers/base.py), its helpers giving template-made C."""
    lk = _container_links(info)
    lk.code = CSource
    return lk


def _key_of_c(key, elem: str) -> CSource:
    """`kv(elem)` in a layer template: the key of the element `elem` points at."""
    return CSource(key_of(key, elem))


def _key_of_rec_c(key, rec: str) -> CSource:
    """`kr(rec)` in a layer template: the key of the record `rec` points at."""
    return CSource(key_of_rec(key, rec))


def names(checked: CheckedSpec, info: ContainerInfo) -> dict:
    """C type names every template of a container uses."""
    return {"DB": f"{checked.prefix}_db", "E": f"{info.p}_elem", "ROOT": f"{info.p}_root",
            "R": f"{checked.prefix}_{info.record.name}", "NIL": "P2_NIL"}


# ---------------------------------------------------------------------------
class Renderer:
    def __init__(self, checked: CheckedSpec, spec_file: str, recover: bool = False,
                 line_directives: bool = False):
        self.checked = checked
        self.spec_file = spec_file
        # line_directives: #line directives point the C compiler's messages into the
        # templates (`p2gen build --line-directives`); off, the output has none
        self.line_directives = line_directives
        self.env = jinja_env(True) if line_directives else jinja_env()
        # the source of `p2gen recover`'s program: plain files opened despite an unclean
        # close, and every layer's _rebuild (layers/README.md) rendered
        self.recover = recover
        self.modules: dict = {}   # LayerInstance -> its template's module (layer_module)
        # every function the templates emit, as they declare it (cfuncs.py)
        self.table = FunctionTable(checked.prefix)
        self._call_enter: dict = {}     # db expression -> call_enter's text

    def views(self, info: ContainerInfo) -> list:
        return [cursor_view(c, self.checked) for c in info.cursors]

    def layer_module(self, li: LayerInstance, cursors: Optional[list] = None):
        """The layer's template rendered for `li` (jinja2's TemplateModule): its text is the
        layer's section, its macros the hooks it exports (a mem layer's file-level code)."""
        module = self.modules.get(li)
        if module is None:
            info = li.container
            tmpl = self.env.get_template(li.layer.template)
            self.table.section = f"layer {li.name} of {info.name}"
            module = tmpl.make_module(dict(cdecl=self.table.cdecl,
                L=li, B=li.below, C=info, S=self.checked, M=info.mem,
                St=info.storage, D=info.ds[0],
                cursors=self.views(info) if cursors is None else cursors,
                key=li.key_field_obj, seg=self.seg_index(info), LK=container_links(info),
                kv=functools.partial(_key_of_c, li.key_field_obj),
                kr=functools.partial(_key_of_rec_c, li.key_field_obj),
                **names(self.checked, info),
                arg_type=arg_type, c_const=c_const, recover=self.recover,
                cfunc=self.table.cfunc, cmember=self.table.cmember))
            self.modules[li] = module
        return module

    def layer_section(self, li: LayerInstance, info: ContainerInfo, cursors: list) -> str:
        text = str(self.layer_module(li, cursors))
        # the key tells apart two layers of one name in an equation (hash by id, by name)
        what = f"{li.name}(key={li.key_field_obj.name})" if li.key_field_obj else li.name
        return fenced(text, layer_fence_lines(li, info), f"layer {what} of {info.name}")

    def files(self) -> list:
        """The spec's files as the pipeline templates see them; `code` holds the file-level
        C of the file's mem layers (FILE_HOOKS), `txn` the mem layer giving it
        transactions (or None)."""
        out = []
        for idx, fi in enumerate(self.checked.files):
            f = {"index": idx, "path": fi.path, "reserve": fi.reserve,
                 "fingerprint": f"0x{fi.fingerprint:016x}u",
                 "containers": fi.containers, "mems": fi.mems, "txn": fi.transactions,
                 "desc": self.file_desc(fi), "verify_open": fi.verify_open,
                 "nroots": fi.nroots, "alloc": fi.alloc}
            out.append(f)
        # the files one transaction layer commits together (its hooks read their number)
        tfiles = [f for f in out if f["txn"] is not None]
        for rank, f in enumerate(tfiles):
            f["txn_rank"], f["txn_files"] = rank, len(tfiles)
        for f, fi in zip(out, self.checked.files):
            f["code"] = {hook: self.mem_hook(fi.mems, hook, f) for hook in FILE_HOOKS}
        return out

    def mem_hook(self, mems: list, hook: str, *args) -> CSource:
        """The C of a mem layer's hook (a macro of its template, layers/README.md "The mem
        contract"): the outermost of `mems` that defines it speaks for the stack (a
        journal's open replaces its file's plain one); none: no code. Without its last
        line end, so that a template line `{{ code }}` puts it back."""
        for li in mems:
            macro = getattr(self.layer_module(li), hook, None)
            if macro is not None:
                self.table.section = f"layer {li.name} ({hook}) of {li.container.name}"
                text = _macro_text(macro(*args))
                return CSource(text if _MARK.sub("", text) else "")
        return CSource("")

    def prefetch_insert(self, info: ContainerInfo, rec: str) -> CSource:
        """The statements that fetch into the cache what inserting *rec (a `const R *`
        named `rec`) will read, from every ds layer of the container that says (its
        template's macro `prefetch_insert(rec)`, layers/README.md): what `_insert_many`
        runs a few records ahead. Empty if no layer says."""
        parts = []
        for li in info.ds:
            macro = getattr(self.layer_module(li), "prefetch_insert", None)
            if macro is not None:
                text = _macro_text(macro(rec))
                if _MARK.sub("", text).strip():
                    parts.append(text)
        return CSource("\n".join(parts))

    def transactions(self, files: list) -> dict:
        """The spec's transaction API (<prefix>_begin, _commit, _abort, and the layer's
        write guard), written by the mem layer that gives the files transactions:
        {"api": declarations for the header, "source": definitions}, empty without."""
        tfiles = [f for f in files if f["txn"] is not None]
        if not tfiles:
            return {"files": [], "api": CSource(""), "source": CSource(""),
                    "before_open": CSource(""), "after_open_walk": CSource("")}
        kinds = {f["txn"].name for f in tfiles}
        if len(kinds) > 1:
            raise RenderError(f"internal error: transactions by more than one mem layer "
                              f"({', '.join(sorted(kinds))}); the checker refuses that")
        mems = [tfiles[0]["txn"]]
        hooks = {hook: self.mem_hook(mems, hook, tfiles) for hook in TXN_HOOKS}
        return {"files": tfiles, "api": hooks["transactions_api"], "source": hooks["transactions"],
                "before_open": hooks["before_open"], "after_open_walk": hooks["after_open_walk"]}

    def file_desc(self, fi) -> str:
        """What made a file, stored in its header and named when another spec opens it."""
        spec = self.spec_file.replace("\\", "/").rsplit("/", 1)[-1]
        eqs = "; ".join(f"{ci.name} = {ci.equation_text()}" for ci in fi.containers)
        desc = f"spec {spec}: {eqs}"
        if fi.alloc != "pow2":     # a file of the default size classes says nothing
            desc = f"spec {spec} (alloc = {fi.alloc}): {eqs}"
        # the header keeps 95 bytes and a message has room for a few hundred
        return desc if len(desc) <= 300 else desc[:297] + "..."

    def seg_index(self, info: ContainerInfo) -> int:
        for idx, fi in enumerate(self.checked.files):
            if info in fi.containers:
                return idx
        return -1

    def role_names(self, role) -> dict:
        """What a relationship template needs to reach one end's elements."""
        info = role.container
        # LK: how a reference to an element of this role's container is stored (all
        # containers of a relationship share one memory, so one link width)
        return {"E": names(self.checked, info)["E"], "elem": f"{info.storage.p}_elem",
                "M": info.mem.p, "T": info.chain[0].p, "St": info.storage.p,
                "LK": container_links(info)}

    def rel_section(self, ri) -> str:
        tmpl = self.env.get_template(ri.layer.template)
        self.table.section = f"layer {ri.layer.name} of relationship {ri.name}"
        text = tmpl.render(REL=ri, rn=self.role_names, S=self.checked,
                           DB=f"{self.checked.prefix}_db", recover=self.recover,
                           cfunc=self.table.cfunc)
        return fenced(text, [c_comment(ri.text()),
                             f"  layer {ri.layer.name} ({ri.layer.signature()}), {ri.kind}"],
                      f"layer {ri.layer.name} of relationship {ri.name}")

    def render(self) -> tuple[str, str]:
        checked = self.checked
        containers = []
        for info in checked.containers:
            views = self.views(info)
            sections = []
            for li in reversed(info.chain):
                sections.append((li, self.layer_section(li, info, views)))
            containers.append({"info": info, "views": views, "sections": sections,
                               "seg": self.seg_index(info),
                               "prefetch": self.prefetch_insert(info, "ahead")})
        rels = [{"info": ri, "text": self.rel_section(ri)} for ri in checked.relationships]
        files = self.files()
        ctx = dict(S=checked, spec_file=self.spec_file, containers=containers, rels=rels,
                   files=files, txn=self.transactions(files), arg_type=arg_type, param_field_decl=param_field_decl,
                   c_string=c_string, where_text=expr_text, names=names,
                   rn=self.role_names, recover=self.recover, api_errors=api_errors,
                   role_api_errors=role_api_errors, key_of_rec=_key_of_rec_c,
                   cfunc=self.table.cfunc, cdecl=self.table.cdecl, cmember=self.table.cmember,
                   call_enter=self.call_enter,
                   prof=profile_context(checked, self.spec_file) if checked.profile else None,
                   trc=trace_context(checked, self.spec_file) if checked.trace else None,
                   hooked=[c for c in containers
                                           if c["info"].has_hooks or c["info"].referenced])
        self.table.section = "spec.h.j2"
        header = self.env.get_template("spec.h.j2").render(**ctx)
        self.table.section = "spec.c.j2"
        source = self.env.get_template("spec.c.j2").render(**ctx)
        if self.line_directives:
            header, header_at = mark_lines(header)
            source, source_at = mark_lines(source)
        # what the header declares, in order (the CFFI declarations: pybind.header_api)
        self.header_declarations = self.table.spaced_out(header)
        self.source_functions = self.table.emitted(source)
        gone = self.table.unused_lines(source, self.tool_roots())
        source = "\n".join(line for k, line in enumerate(source.split("\n")) if k not in gone)
        self.source_functions = self.table.emitted(source)     # what was kept
        # every definition emitted: header, kept source (the names pass reads them)
        self.emitted_entries = (self.table.emitted(header), self.source_functions)
        self.marked = (header, source)     # (tests: nothing is defined outside the table)
        header, source = strip_marks(header), strip_marks(source)
        if self.line_directives:
            source_at = [at for k, at in enumerate(source_at) if k not in gone]
            header = line_directives(header, header_at, self.template_path)
            source = line_directives(source, source_at, self.template_path)
        return header, source

    def call_enter(self, db: str = "db") -> str:
        """The C statements a public function runs on entry, once `db` is known to be
        open: each file's bottom mem layer's `call_enter` (an object server's cache), or
        "" (nothing, the line left out)."""
        text = self._call_enter.get(db)
        if text is None:      # asked by every public function: computed once per name
            text = self._call_enter[db] = " ".join(
                f"{mi.layer.call_enter}(&{db}->seg[{idx}]);"
                for idx, fi in enumerate(self.checked.files)
                for mi in fi.mems if mi.layer.below is None and mi.layer.call_enter)
        return text

    def template_path(self, name: str) -> str:
        """Where a template is, as #line names it: relative to the folder holding layers/
        (the checkout, or the installed package): `layers/avl.c.j2`."""
        from . import layers as layer_pkg
        base = os.path.dirname(os.path.dirname(os.path.abspath(layer_pkg.__file__)))
        filename = self.env.loader.get_source(self.env, name)[1]
        return os.path.relpath(filename, base).replace(os.sep, "/")

    def tool_roots(self) -> set:
        """What the program that includes this source calls (its table's entries: every
        function and declaration of it goes through a construct): the recovery program
        (`p2gen recover`) for a recovery build, else the integrity checker (`p2gen
        verify`). Its static functions named there are kept."""
        table = self.recover_rendering()[1] if self.recover else \
            verifier_rendering(self.checked, self.spec_file)[1]
        return set().union(*(e.calls for e in table.entries))

    def recover_main(self) -> str:
        """The C of `p2gen recover`'s program (templates/recover_main.c.j2)."""
        # the mem layers' hooks come from this renderer's environment: with line directives
        # on, their text carries line marks, which this program (not line-mapped) drops;
        # and the marks of the function table
        return strip_marks(_MARK.sub("", self.recover_rendering()[0]))

    def recover_rendering(self) -> tuple:
        """(marked text, table) of `p2gen recover`'s program."""
        checked = self.checked
        files = self.files()
        txn = self.transactions(files)
        table = FunctionTable(checked.prefix)
        table.section = "recover_main.c.j2"
        text = jinja_env().get_template("recover_main.c.j2").render(
            S=checked, spec_file=self.spec_file, files=files, txn=txn,
            names=names, c_string=c_string, containers=[{"info": i} for i in checked.containers],
            rels=[{"info": ri} for ri in checked.relationships],
            cfunc=table.cfunc, cdecl=table.cdecl, cmember=table.cmember)
        return text, table


# ---------------------------------------------------------------------------
# The integrity checker's program (`p2gen verify`; verify.py builds and runs it)
# ---------------------------------------------------------------------------
def _map_context(checked: CheckedSpec) -> list:
    """Per persistent container: which bytes the check depends on (see --map), as each
    layer declares them (layers/base.py: ElemField.weak, reference_blocks, column_blocks, slot_map,
    role_reference_blocks)."""
    r = Renderer(checked, "")
    out = []
    for info in checked.containers:
        if not info.persistent:
            continue
        root_fields, elem_fields, role_fields, vecs, blocks, columns = [], [], [], [], [], []
        slots = info.storage.layer.slot_map(info.storage)
        for li in info.chain:
            root_fields += [("O" if f.weak else "L", f.name) for f in li.layer.root_fields(li)]
            if li is not info.storage or slots is None:   # else mapped slot by slot
                elem_fields += [("O" if f.weak else "L", f.name)
                                for f in li.layer.elem_fields(li)]
            blocks += li.layer.reference_blocks(li)
            columns += li.layer.column_blocks(li)
        for role in info.roles:
            role_fields += [("O" if f.weak else "L", f.name)
                            for f in role.rel.layer.role_fields(role)]
            vecs += role.rel.layer.role_reference_blocks(role)
        out.append({"info": info, "seg": r.seg_index(info), "root_fields": root_fields,
                    "elem_fields": elem_fields, "role_fields": role_fields, "vecs": vecs,
                    "blocks": blocks, "columns": columns, "slots": slots, "link": container_links(info),
                    "texts": [f.name for f in info.text_fields]})
    return out


def render_verifier(checked: CheckedSpec, spec_file: str) -> str:
    return strip_marks(verifier_rendering(checked, spec_file)[0])


def verifier_rendering(checked: CheckedSpec, spec_file: str) -> tuple:
    """(marked text, table) of the integrity checker's program: the table
    (cfuncs.FunctionTable) records what the program itself defines (the names pass)."""
    r = Renderer(checked, spec_file)
    table = FunctionTable(checked.prefix)
    table.section = "verify_main.c.j2"
    text = jinja_env().get_template("verify_main.c.j2").render(
        S=checked, spec_file=spec_file, files=r.files(), maps=_map_context(checked),
        names=names, c_string=c_string, cfunc=table.cfunc, cdecl=table.cdecl,
        cmember=table.cmember)
    return text, table



def render(checked: CheckedSpec, spec_file: str,
           line_directives: bool = False) -> tuple[str, str]:
    return Renderer(checked, spec_file, line_directives=line_directives).render()


def header_declarations(checked: CheckedSpec) -> list:
    """The declarations of the spec's header as the table of generated functions records
    them (cfuncs.CFunction: every `cfunc` and `cdecl` block), in header order."""
    r = Renderer(checked, "")
    r.render()
    return r.header_declarations


def metadata(checked: CheckedSpec) -> dict:
    """A JSON-able description of the generated API (used by the Python bindings)."""
    def ftype(t: FieldType):
        return {"kind": t.kind, "type": t.name, "length": t.length, "ctype": t.ctype}
    return {
        "prefix": checked.prefix,
        "records": {r.name: [{"name": f.name, **ftype(f.type)} for f in r.fields]
                    for r in checked.records},
        "containers": [{
            "name": c.name, "record": c.record.name, "equation": c.equation_text(),
            "keys": c.field_keys(), "persistent": c.persistent, "file": c.file,
            "purges": c.purges,
            # only where there are some: the metadata of other specs stays as it was
            **({"composite_keys": {k.name: list(k.names) for k in c.composite_keys()}}
               if c.composite_keys() else {}),
            **({"upsert": True} if c.unique_index is not None else {}),
        } for c in checked.containers],
        "cursors": [{
            "name": k.name, "container": k.container.name,
            "params": [{"name": n, **ftype(t)} for n, t in k.params],
            "order_by": k.order_by,
            # only where it is so: the metadata of ascending cursors stays as it was
            **({"descending": True} if k.descending else {}),
        } for k in checked.cursors],
    }
