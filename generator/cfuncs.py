"""The table of generated functions: every C function a template emits, as the template
declared it.

A template writes each function it emits inside one construct,

    {% call cfunc(L.p ~ "_link") %}
    /* its comment: part of the function */
    static inline void {{ L.p }}_link({{ DB }} *db, uint64_t ref)
    {
        ...
    }
    {% endcall %}

with `public=true` for a function of the spec's API (the construct writes its storage class
<PREFIX>_API, see spec.h.j2) and `decl=true` for a prototype. The construct emits the text
unchanged but for that storage class, and records a CFunction: its name, the section being
rendered (the layer and container, or the spec's own template), whether it is public or a
prototype, the identifiers its text names (what it calls: its body, known as a string when
it is recorded, tokenised) and its text. Around the text it leaves two marks (characters no
template or value may print, like the line marks of render.LineMarks) so that the text of a
function can be taken out again without reading the C around it. The other declarations
of the public API (spec.h.j2's types and constant macros, and those a mem layer's hooks
add to the header) go through its sibling `{% call cdecl(name) %}`, recorded the same way
as public declarations of kind "type" or "macro".

What each entry defines (the names pass reads it) is what the construct says, never read
back from the C: a function defines its name and its parameters (a prototype nothing; the
parameters are the names its head lists), plus the macros given as `macros=[...]` (a
guard of its own); a declaration defines its name (a macro, a typedef's name, a struct's
tag, a variable), the names given as `also=[...]` (the other macros of a group, the other
constants of an enum), and the members of its struct: those its text spells out given as
`members=[...]`, those a loop prints through `{{ cmember(name) }}` (which prints the name and
records it). A struct's tag is its name (`typedef struct NAME {`, `struct NAME {`) or none.
tests/compiler/test_names_table.py checks, for every committed spec, that what the table
says equals what the text defines (nothing is left out, nothing made up).

What reads the table instead of the emitted C: the pruning of static functions nothing
calls (FunctionTable.unused_lines), the storage class <PREFIX>_API (written by the
construct) and the CFFI declarations (pybind.header_api: the header's entries in order,
each as `api` gives it, with a blank line where `spaced` says), and the names pass
(names.py: each entry's `defines`, what its construct says, above; the source, header,
integrity checker and harness define nothing outside a construct,
`{% call cdecl(name, public=false) %}` for their private types, macros and variables).
Each entry also keeps its parameters' names.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

from .cnames import Definition

# \x03<index>\x04 opens the text of table entry <index>; \x03/\x04 closes it (before the
# line end that ends the function's last line). \x03$\x04 opens a section's end fence
# (render.fenced): a blank line left right before it, when the section's last functions
# went, goes too.
FUNC_MARK = re.compile("\x03[^\x04]*\x04")
_OPEN = re.compile("\x03([0-9]+)\x04")
CLOSE_MARK = "\x03/\x04"
FENCE_MARK = "\x03$\x04"
_LINE_MARKS = re.compile("(?:\x01[^\x02]*\x02)*")    # render.LineMarks at a line's head
_WORD = re.compile(r"\b[A-Za-z_]\w*")
_MARK = re.compile("\x01[^\x02]*\x02")                # one line mark (render.LineMarks)
_END_OF_TEXT = re.compile("\n(?:\x01[^\x02]*\x02)*\\Z")  # the last line end, its marks
_TYPE_HEAD = re.compile(r"(?:typedef|struct|union|enum)\b")
_DEFINE_HEAD = re.compile(r"#\s*define\s+(\w+)[ \t]+\S")
_FUNC_POINTER = re.compile(r"\(\s*\*\s*(\w+)\s*\)")
_LAST_WORD = re.compile(r"(\w+)\s*(?:\[[^\]]*\]\s*)*$")

# A name's place in a text is found with str.find, not a pattern built per name: a render
# checks thousands of names, and patterns compiled per name cost half its time (and push
# the fixed ones out of re's cache).


def _word_char(c: str) -> bool:
    return c.isalnum() or c == "_"


def _occurrences(text: str, word: str):
    """Where `word` starts in `text`."""
    i = text.find(word)
    while i >= 0:
        yield i
        i = text.find(word, i + 1)


def _as_word(text: str, name: str) -> bool:
    """`name` stands in `text` with no word character either side."""
    n = len(name)
    return any((i == 0 or not _word_char(text[i - 1])) and
               (i + n == len(text) or not _word_char(text[i + n]))
               for i in _occurrences(text, name))


def _called_in_head(body: str, name: str, stops: str, after_stop: bool = False) -> bool:
    """`name(` comes in `body` at a word's start, with no character of `stops` before it
    (`after_stop`: but for the one right before it)."""
    for i in _occurrences(body, name + "("):
        if any(c in stops for c in body[:i - 1 if after_stop and i else i]):
            return False
        if i == 0 or not _word_char(body[i - 1]):
            return True
    return False


@dataclass
class CFunction:
    """One function (or prototype) of the generated C, as its template declared it."""
    name: str
    section: str
    public: bool
    decl: bool                  # a prototype, not a definition
    text: str                   # as emitted (storage class included, line marks kept)
    calls: frozenset = field(default_factory=frozenset)   # the identifiers its text names
    params: tuple = ()          # its parameters' names
    kind: str = "function"      # "function"; cdecl's "type" or "macro"
    api: str = ""               # the declaration alone: no comment, no storage class
    spaced: bool = False        # a blank line stands before it in its output (spaced_out)
    members: tuple = ()         # a struct's members, as the construct declared them
    # what it defines (cnames.Definition: the function and its parameters; a type's typedef
    # name, tag and members; a macro), as the construct declared it: the names pass
    # (names.py) reads these, not the emitted C
    defines: tuple = ()


def strip_marks(text: str) -> str:
    """Text without the table's marks (a program that is not pruned, the header)."""
    return FUNC_MARK.sub("", text)


class FunctionTable:
    """The functions one rendering records (`cfunc`, given to every template it renders)."""

    def __init__(self, prefix: str):
        self.api = f"{prefix.upper()}_API "
        self.entries: list[CFunction] = []
        self.section = ""
        self._members: list = []    # the members cmember recorded, per open cdecl

    def cfunc(self, name: str, public: bool = False, decl: bool = False,
              macros: tuple = (), caller=None) -> str:
        """The construct (`{% call cfunc(name, public=..., decl=...) %}...{% endcall %}`):
        records the function and returns its text, marked, with the storage class of a
        public function written before its head (after the comment that opens it).
        `macros`: the macros its text defines besides (a guard, p2_fixstr_cmp's)."""
        text = caller()
        # the line end after the last line (and the line marks of the empty line after it)
        # is the template's, outside the function
        text = _END_OF_TEXT.sub("", text, count=1)
        head = _head_at(text)
        body = _LINE_MARKS.sub("", text[head:]) if "\x01" in text else text[head:]
        body = _MARK.sub("", body)
        if not _called_in_head(body, name, "(;{", after_stop=True):
            raise ValueError(f"cfunc({name!r}): the text does not declare it: {body[:80]!r}")
        if public == body.startswith("static"):
            raise ValueError(f"cfunc({name!r}): public={public}, but the head is "
                             f"{body.split(chr(10))[0]!r}")
        if decl != _COMMENT.sub("", body).rstrip().endswith(";"):
            raise ValueError(f"cfunc({name!r}): decl={decl}, but the text "
                             f"{'is' if not decl else 'is not'} a prototype")
        if public:
            text = text[:head] + self.api + text[head:]
        plain = _MARK.sub("", text)
        _spelled(f"cfunc({name!r})", "macro", macros, plain)
        params = _params(body, name)
        # a prototype defines nothing: its definition (here or in the runtime) does
        defines = () if decl else (Definition("ordinary", name),
                                   *(Definition(f"param:{name}", p) for p in params))
        return self._record(CFunction(
            name, self.section, public, decl, plain,
            frozenset(_WORD.findall(plain)) - {name} if not decl else frozenset(),
            params, api=_declaration(body) if decl else "",
            defines=defines + tuple(Definition("macro", m) for m in macros)), text)

    def cdecl(self, name: str, public: bool = True, also: tuple = (), members: tuple = (),
              caller=None) -> str:
        """The construct for a declaration that is not a function of the table's pruning
        (`{% call cdecl(name) %}...{% endcall %}`). Public (the default): a declaration of
        the public API, a type (`typedef ...;`, ending in the name it declares) or a
        constant macro (`#define NAME value`), recorded as a public declaration of kind
        "type" or "macro". `public=false`: anything else the C defines at file scope (a
        private type or struct, a macro or a group of them under #if, a variable, a
        program's main), recorded for the names pass. What it defines: `name`, the names
        of `also` (the other macros of its group, the other constants of its enum), and a
        struct's members, `members` and those its text prints through `cmember`.
        Its text is emitted unchanged."""
        self._members.append([])
        try:
            text = _END_OF_TEXT.sub("", caller(), count=1)
        finally:
            printed = self._members.pop()
        head = _head_at(text, directives=False)
        body = _MARK.sub("", text[head:])
        plain = _MARK.sub("", text)
        what = f"cdecl({name!r})"
        members = tuple(members) + tuple(printed)
        _spelled(what, "name", (name, *also, *members), plain)
        if body.startswith("#"):
            kind = "macro"
            defines = [Definition("macro", n) for n in (name, *also)]
        else:
            kind = "type" if _TYPE_HEAD.match(body) else "object"
            defines = _type_definitions(what, name, also, members, body, kind)
        if not public:
            # what it names: a program's main or table calls the functions it names
            return self._record(CFunction(name, self.section, False, True, plain,
                                          frozenset(_WORD.findall(plain)) - {name},
                                          kind=kind, members=members,
                                          defines=tuple(defines)), text)
        if kind == "macro":
            define = _DEFINE_HEAD.match(body)
            if define is None or define.group(1) != name:
                raise ValueError(f"{what}: not a constant macro of that name: "
                                 f"{body[:80]!r}")
            api = f"#define {name} ..."   # CFFI reads the value itself
        else:
            last = body.rstrip()
            last = last[:-1].rstrip() if last.endswith(";") else ""
            if not (body.startswith("typedef") and _TYPE_HEAD.match(body)) or \
                    not last.endswith(name) or _word_char(last[-len(name) - 1:-len(name)] or " "):
                raise ValueError(f"{what}: not a typedef of that name: {body[:80]!r}")
            kind, api = "type", _declaration(body)
        return self._record(CFunction(name, self.section, True, True, plain, kind=kind,
                                      api=api, members=members, defines=tuple(defines)),
                            text)

    def cmember(self, name: str) -> str:
        """`{{ cmember(name) }}`: a member of the struct the enclosing `cdecl` defines, as
        a loop prints it: printed, and recorded as one of the struct's members."""
        if not self._members:
            raise ValueError(f"cmember({name!r}) outside a cdecl construct")
        self._members[-1].append(name)
        return name

    def _record(self, entry: CFunction, text: str) -> str:
        index = len(self.entries)
        self.entries.append(entry)
        # (the line end the block's end tag took, trim_blocks, given back after the mark)
        # (a call block's output is printed as is: Jinja's finalize does not see it)
        return f"\x03{index}\x04{text}{CLOSE_MARK}\n"

    def emitted(self, text: str) -> list:
        """The entries whose text is in `text` (a rendered and marked output), in order."""
        return [self.entries[int(i)] for i in _OPEN.findall(text)]

    def spaced_out(self, text: str) -> list:
        """The entries emitted in marked `text`, in order, each with `spaced` set when a
        blank line (comments aside) stands between it and the entry before: the CFFI
        declarations keep the header's grouping."""
        out = []
        for m in _OPEN.finditer(text):
            e = self.entries[int(m.group(1))]
            if not e.public:        # (the header's own macros: its guard, <PREFIX>_API)
                continue
            if out:
                # from the end of the entry before to the head of this one's declaration
                start = text.rindex(CLOSE_MARK, 0, m.start()) + len(CLOSE_MARK)
                gap = text[start:m.start()] + text[m.end():m.end() + _head_at(
                    text[m.end():text.index(CLOSE_MARK, m.end())], directives=False)]
                # (line marks, and a section's end fence mark, as strip_marks takes them)
                gap = _COMMENT.sub("", FUNC_MARK.sub("", _MARK.sub("", gap)))
                e.spaced = re.search(r"\n[ \t]*\n", gap) is not None
            out.append(e)
        return out

    def unused_lines(self, source: str, roots: frozenset = frozenset()) -> set:
        """The lines (0-based) of marked `source` that the static functions nothing calls
        take, and their prototypes: a layer renders its whole contract (every comparator,
        every cursor operation, every memory function), and what this spec's public
        functions do not call, directly or through functions that are kept, is not emitted.
        `roots`: what the programs that include the source and call its static functions
        (the integrity checker, the recovery program) name, as their tables record it."""
        lines = source.split("\n")
        spans: dict = {}     # name -> [(first line, last line)] of its definitions
        protos: dict = {}    # name -> [line spans] of its prototypes
        funcs: dict = {}     # name -> entry (definitions)
        public: list = []
        first = None
        for k, line in enumerate(lines):
            for m in _OPEN.finditer(line):
                first = (k, self.entries[int(m.group(1))])
            if CLOSE_MARK in line and first is not None:
                start, e = first
                first = None
                if e.kind != "function":      # a type, macro or variable: kept
                    continue
                if e.decl:
                    protos.setdefault(e.name, []).append((start, k))
                elif e.public:
                    public.append(e)
                else:
                    spans.setdefault(e.name, []).append((start, k))
                    funcs[e.name] = e
        todo = [w for w in set(roots).union(*(e.calls for e in public))
                if w in funcs]
        used = set(todo)
        while todo:
            for w in funcs[todo.pop()].calls:
                if w in funcs and w not in used:
                    used.add(w)
                    todo.append(w)
        gone: set = set()
        for name in set(funcs) - used:
            for a, b in spans[name]:
                gone.update(range(a, b + 1))
                # the blank line after it goes with it, unless it ends a run of functions
                # written one after the other (the comparators)
                if b + 1 < len(lines) and lines[b + 1] == "" and \
                        not (a > 0 and lines[a - 1].endswith(CLOSE_MARK)):
                    gone.add(b + 1)
            for a, b in protos.get(name, ()):
                gone.update(range(a, b + 1))
        # a section whose last function went keeps no blank line before its end fence
        kept = [k for k in range(len(lines)) if k not in gone]
        for a, b in zip(kept, kept[1:]):
            if lines[a] == "" and lines[b].startswith(FENCE_MARK):
                gone.add(a)
        return gone


def _head_at(text: str, directives: bool = True) -> int:
    """Where the declaration starts in a function's text: after the line marks, comments
    and (`directives`) preprocessor lines that open it."""
    at = _LINE_MARKS.match(text).end()
    while True:
        if text.startswith("/*", at):
            end = text.index("*/", at) + 2
        elif directives and text.startswith("#", at):   # a guard of its own (p2_fixstr)
            end = text.index("\n", at)
        else:
            return at
        if text[end:end + 1] != "\n":
            return at
        at = _LINE_MARKS.match(text, end + 1).end()


def _spelled(what: str, kind: str, names, text: str) -> None:
    """Each of `names` (what a construct says its text defines) stands in `text` as a word:
    a misspelt name in a template stops the render."""
    for n in names:
        if not _as_word(text, n):
            raise ValueError(f"{what}: {kind} {n!r} is not in its text")


# a declaration's struct, union or enum body: `typedef struct TAG {`, `struct TAG {`, `enum {`
_AGGREGATE = re.compile(r"(?:typedef\s+|static\s+(?:const\s+)?)?(struct|union|enum)\b\s*(\w*)\s*\{")


def _type_definitions(what: str, name: str, also, members, body: str, kind: str) -> list:
    """What a type or variable declaration defines, from what its construct says: `name`
    (a typedef's or variable's ordinary name, or the tag of a bare `struct NAME {...};`),
    the tag of its struct (its name), the constants of `also`, the struct's members."""
    agg = _AGGREGATE.match(body)
    tag = agg.group(2) if agg else ""
    if tag and tag != name:
        raise ValueError(f"{what}: the struct's tag {tag!r} is not its name")
    bare_struct = kind == "type" and not body.startswith("typedef") and agg \
        and agg.group(1) != "enum"
    out = [] if bare_struct else [Definition("ordinary", name)]
    if tag:
        out.append(Definition("tag", tag))
    out += [Definition("ordinary", n) for n in also]
    if kind == "object" and _called_in_head(body, name, "=;{"):
        out += [Definition(f"param:{name}", p) for p in _params(body, name)]   # a main
    # an anonymous struct's members are its typedef's (or variable's)
    out += [Definition(f"member:{name}", m) for m in members]
    return out


# comments: whole lines (with their line end) first, then the rest
_COMMENT = re.compile(r"^[ \t]*/\*.*?\*/[ \t]*\n|/\*.*?\*/", re.S | re.M)


def _declaration(body: str) -> str:
    """A declaration's text from its head on, without its comments, trailing blanks and
    runs of blank lines."""
    out: list = []
    for line in _COMMENT.sub("", body).split("\n"):
        line = line.rstrip()
        if line or (out and out[-1]):
            out.append(line)
    return "\n".join(out).strip()


def _params(body: str, name: str) -> tuple:
    """The parameter names of the function whose head starts `body`."""
    i = body.find(name + "(")
    if i < 0:
        return ()
    i += len(name)
    depth, j = 0, i
    while j < len(body):
        if body[j] == "(":
            depth += 1
        elif body[j] == ")":
            depth -= 1
            if depth == 0:
                break
        j += 1
    out = []
    for part in _split_commas(body[i + 1:j]):
        part = part.strip()
        if not part or part == "void" or part == "...":
            continue
        m = _FUNC_POINTER.search(part) if "(" in part else None    # a function pointer
        if m:
            out.append(m.group(1))
            continue
        if "[" not in part:        # the common case, without the pattern's search
            word = part.rstrip()
            k = len(word)
            while k and _word_char(word[k - 1]):
                k -= 1
            if word[k:]:
                out.append(word[k:])
            continue
        m = _LAST_WORD.search(part)
        if m:
            out.append(m.group(1))
    return tuple(out)


def _split_commas(s: str) -> list:
    parts, cur, depth = [], [], 0
    for ch in s:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts
