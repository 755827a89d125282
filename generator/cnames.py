"""Names in generated C: what a piece of C defines, and where two definitions meet.

The names pass (names.py) reads what the generated C defines from the table of what the
templates emit (cfuncs.py: each construct says what it defines), and what the headers it
includes define from three lists regenerated from the compiler: c_macros.txt and
c_decls.txt (the system headers') and c_runtime.txt (the runtime header's). Two definitions
of one name in one namespace, or a definition that is a macro of a header, is a collision
(`collisions`) the checker reports at the spec declaration that made the name. Reading
definitions back from C (`definitions`) serves to make those lists from the compiler's
preprocessed output, and the tests that hold the table to the generated text.
"""
from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from typing import Iterator, Optional

# The system headers generated code (spec, runtime, harness, verifier) includes.
SYSTEM_HEADERS = ("errno.h", "fcntl.h", "inttypes.h", "limits.h", "signal.h", "stdarg.h",
                  "stddef.h", "stdint.h", "stdio.h", "stdlib.h", "string.h", "sys/file.h",
                  "sys/mman.h", "sys/stat.h", "sys/types.h", "sys/uio.h", "unistd.h",
                  "stdbool.h")
MACROS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "c_macros.txt")

# Keywords of C11 and of the GNU dialects a user may compile the generated code with, and
# the macros <stdbool.h> and <stddef.h> make keywords in all but name.
C_KEYWORDS = frozenset("""auto break case char const continue default do double else enum
extern float for goto if inline int long register restrict return short signed sizeof
static struct switch typedef union unsigned void volatile while _Alignas _Alignof _Atomic
_Bool _Complex _Generic _Imaginary _Noreturn _Static_assert _Thread_local asm typeof
bool true false NULL""".split())


def _names_in(path: str) -> frozenset:
    """The names a list of this directory holds (c_macros.txt, c_decls.txt): one a line,
    '#' lines are comments."""
    with open(path, encoding="ascii") as f:
        return frozenset(ln.strip() for ln in f if ln.strip() and not ln.startswith("#"))


def _preprocessed_headers(cc: str, mode: str) -> str:
    """What `cc -E <mode>` makes of SYSTEM_HEADERS (-dM: their macros; -P: their text)."""
    src = "#define _GNU_SOURCE\n" + "".join(f"#include <{h}>\n" for h in SYSTEM_HEADERS)
    return subprocess.run([cc, "-std=gnu11", mode, "-E", "-"], input=src, text=True,
                          capture_output=True, check=True).stdout


@functools.lru_cache(maxsize=None)
def system_macros() -> frozenset:
    """Macro names of SYSTEM_HEADERS (not starting with '_': user names cannot)."""
    return _names_in(MACROS_FILE)


def compiler_macros(cc: str = "cc") -> set:
    """What `cc` says SYSTEM_HEADERS define (used to regenerate and test c_macros.txt)."""
    names = {re.match(r"#define (\w+)", ln).group(1)
             for ln in _preprocessed_headers(cc, "-dM").splitlines()
             if ln.startswith("#define ")}
    return {n for n in names if not n.startswith("_")}


DECLS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "c_decls.txt")


@functools.lru_cache(maxsize=None)
def system_declarations() -> frozenset:
    """Functions, types, variables, enum constants and struct tags SYSTEM_HEADERS declare
    (not starting with '_'): a generated `time_t` or `int64_t` would meet them."""
    return _names_in(DECLS_FILE)


def compiler_declarations(cc: str = "cc") -> set:
    """What `cc`'s SYSTEM_HEADERS declare (used to regenerate and test c_decls.txt)."""
    return {d.name for d in definitions(_preprocessed_headers(cc, "-P"), prototypes=True)
            if d.ns in ("ordinary", "tag") and not d.name.startswith("_")}


# The names the runtime header (p2_runtime.h) defines, as the compiler sees it: macros,
# functions it declares or defines, types, tags, struct members, enum constants (a
# Definition a line: "<namespace> <name>"). The names pass reads this list; a test reads the
# header through the compiler again and compares (regenerate: python -m p2gen.cnames
# --runtime).
RUNTIME_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "c_runtime.txt")
# the header's configurations: as built, and the write audit's test build
RUNTIME_CONFIGS = ((), ("-DP2_WRITE_AUDIT",))


@functools.lru_cache(maxsize=None)
def runtime_definitions() -> tuple:
    """What p2_runtime.h defines (Definitions), as RUNTIME_FILE lists it."""
    with open(RUNTIME_FILE, encoding="ascii") as f:
        return tuple(Definition(*ln.split()) for ln in f
                     if ln.strip() and not ln.startswith("#"))


def compiler_runtime_definitions(cc: str = "cc") -> set:
    """What `cc` makes of p2_runtime.h after SYSTEM_HEADERS, in each of RUNTIME_CONFIGS,
    less what SYSTEM_HEADERS alone define (used to regenerate and test RUNTIME_FILE)."""
    from . import runtime as runtime_pkg
    system = "#define _GNU_SOURCE\n" + "".join(f"#include <{h}>\n" for h in SYSTEM_HEADERS)
    runtime_dir = os.path.dirname(os.path.abspath(runtime_pkg.__file__))

    def cpp(src: str, mode: str, config: tuple) -> str:
        return subprocess.run([cc, "-std=gnu11", *config, "-I", runtime_dir, mode, "-E", "-"],
                              input=src, text=True, capture_output=True, check=True).stdout

    def macros(text: str) -> set:
        return {("macro", ln.split()[1].split("(")[0]) for ln in text.splitlines()
                if ln.startswith("#define ")}

    def declared(text: str) -> set:
        return {(d.ns, d.name) for d in definitions(text, prototypes=True)}

    out: set = set()
    for config in RUNTIME_CONFIGS:
        with_runtime = system + '#include "p2_runtime.h"\n'
        out |= macros(cpp(with_runtime, "-dM", config)) - macros(cpp(system, "-dM", config))
        out |= declared(cpp(with_runtime, "-P", config)) - declared(cpp(system, "-P", config))
    return out - {("macro", c.lstrip("-D")) for config in RUNTIME_CONFIGS for c in config}


# ---------------------------------------------------------------------------
# reading definitions back from C
# ---------------------------------------------------------------------------
_TOKEN = re.compile(r"""
    (?P<ws>[ \t\r\f\v]+) | (?P<nl>\n) | (?P<lc>//[^\n]*) | (?P<bc>/\*.*?\*/)
  | (?P<str>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<id>[A-Za-z_][A-Za-z_0-9]*) | (?P<num>\.?[0-9](?:[eEpP][-+]|[A-Za-z_0-9.])*)
  | (?P<punct>->|\+\+|--|<<=|>>=|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^]=|\#\#|\.\.\.|.)
""", re.S | re.X)


def _lines(src: str) -> Iterator[tuple[bool, list]]:
    """(is_directive, tokens) per logical line (splices joined, comments dropped)."""
    src = src.replace("\\\n", "")
    toks: list = []
    for m in _TOKEN.finditer(src):
        kind = m.lastgroup
        if kind == "nl":
            if toks:
                yield toks[0] == ("punct", "#"), toks
            toks = []
        elif kind in ("ws", "lc", "bc"):
            if kind == "bc" and "\n" in m.group():
                if toks:
                    yield toks[0] == ("punct", "#"), toks
                toks = []
        else:
            toks.append((kind, m.group()))
    if toks:
        yield toks[0] == ("punct", "#"), toks


@dataclass(frozen=True)
class Definition:
    ns: str      # 'macro', 'ordinary', 'tag', 'member:<struct>', 'param:<function>'
    name: str


def _declarator(toks: list) -> Optional[str]:
    """The name a declaration (tokens up to its `;`, `,` or `=`) declares."""
    ids = [i for i, (k, t) in enumerate(toks) if k == "id"]
    if not ids:
        return None
    for i, (k, t) in enumerate(toks):
        if t == "(":
            if i + 1 < len(toks) and toks[i + 1][1] == "*":      # (*name)(...)
                j = i + 1
                while j < len(toks) and toks[j][1] == "*":
                    j += 1
                return toks[j][1] if j < len(toks) and toks[j][0] == "id" else None
            return toks[i - 1][1] if i > 0 and toks[i - 1][0] == "id" else None
        if t in ("[", "=", ":"):
            return toks[i - 1][1] if i > 0 and toks[i - 1][0] == "id" else None
    return toks[ids[-1]][1]


def _split(toks: list, sep: str) -> list:
    """Split at `sep` outside (), [] and {}."""
    parts, cur, depth = [], [], 0
    for tok in toks:
        if tok[1] in "([{" and tok[0] == "punct":
            depth += 1
        elif tok[1] in ")]}" and tok[0] == "punct":
            depth -= 1
        if depth == 0 and tok[1] == sep and tok[0] == "punct":
            parts.append(cur)
            cur = []
        else:
            cur.append(tok)
    if cur:
        parts.append(cur)
    return parts


def _matching(toks: list, i: int) -> int:
    """Index of the bracket closing the one at toks[i]."""
    open_, close = toks[i][1], {"(": ")", "[": "]", "{": "}"}[toks[i][1]]
    depth = 0
    for j in range(i, len(toks)):
        if toks[j][0] == "punct":
            if toks[j][1] == open_:
                depth += 1
            elif toks[j][1] == close:
                depth -= 1
                if depth == 0:
                    return j
    return len(toks) - 1


@functools.lru_cache(maxsize=16)   # the runtime header and a spec's header recur
def definitions(src: str, prototypes: bool = False) -> tuple:
    """The identifiers C source `src` defines (declarations of functions that are not
    defined here are left out, unless `prototypes`: a prototype and its definition are one
    name)."""
    out: list[Definition] = []
    toks: list = []
    for directive, line in _lines(src):
        if directive:
            if len(line) > 2 and line[1][1] == "define" and line[2][0] == "id":
                out.append(Definition("macro", line[2][1]))
        else:
            toks.extend(line)
    i, decl = 0, []
    while i < len(toks):
        kind, t = toks[i]
        if kind == "punct" and t == "{":
            end = _matching(toks, i)
            head = [x for x in decl]
            if any(x[1] == "=" for x in head):                  # an initializer
                decl.extend(toks[i:end + 1])
            elif head and head[-1][1] == ")":                     # a function body
                _function(head, out)
                decl = []
            else:                                                 # struct/union/enum body
                _aggregate(head, toks[i + 1:end], out)
                decl.append(("id", "__body__"))
            i = end + 1
            continue
        if kind == "punct" and t == ";":
            _declaration(decl, out, prototypes)
            decl = []
        else:
            decl.append(toks[i])
        i += 1
    return tuple(out)


def _function(head: list, out: list) -> None:
    # the parameter list is the last top-level (...) of the head
    depth, start = 0, None
    for j in range(len(head) - 1, -1, -1):
        if head[j][1] == ")":
            depth += 1
        elif head[j][1] == "(":
            depth -= 1
            if depth == 0:
                start = j
                break
    if start is None or start == 0 or head[start - 1][0] != "id":
        return
    name = head[start - 1][1]
    out.append(Definition("ordinary", name))
    for param in _split(head[start + 1:-1], ","):
        p = _declarator(param)
        if p and p != "void" and not (len(param) == 1 and param[0][1] == "void"):
            out.append(Definition(f"param:{name}", p))


def _aggregate(head: list, body: list, out: list) -> None:
    tag = head[-1][1] if head and head[-1][0] == "id" and len(head) >= 2 \
        and head[-2][1] in ("struct", "union", "enum") else None
    kind = next((t for k, t in head if t in ("struct", "union", "enum")), None)
    if tag:
        out.append(Definition("tag", tag))
    if kind == "enum":
        for item in _split(body, ","):
            if item and item[0][0] == "id":
                out.append(Definition("ordinary", item[0][1]))
        return
    owner = tag or "<anonymous>"
    i, member = 0, []
    while i < len(body):
        if body[i][1] == "{":
            end = _matching(body, i)
            _aggregate(member, body[i + 1:end], out)
            member.append(("id", "__body__"))
            i = end + 1
            continue
        if body[i][1] == ";":
            for part in _split(member, ","):
                name = _declarator(part)
                if name and name != "__body__":
                    out.append(Definition(f"member:{owner}", name))
            member = []
        else:
            member.append(body[i])
        i += 1


def _declaration(decl: list, out: list, prototypes: bool = False) -> None:
    if not decl:
        return
    words = [t for k, t in decl]
    is_typedef = "typedef" in words
    # a prototype declares a function defined elsewhere: its definition counts (a
    # parenthesis in an initializer, after the `=`, does not make one)
    head = words[:words.index("=")] if "=" in words else words
    if not is_typedef and "(" in head:
        i = head.index("(")
        if i + 1 < len(words) and words[i + 1] != "*":
            if prototypes and i > 0 and decl[i - 1][0] == "id":
                out.append(Definition("ordinary", words[i - 1]))
            return
    for part in _split(decl, ","):
        bare = [x for x in part if x[1] != "__body__"]
        name = _declarator(bare or part)
        if name and name not in ("struct", "union", "enum", "__body__"):
            # `struct x;` declares a tag use and `struct x {...};` a tag: no ordinary name
            if len(bare) == 2 and part[0][1] in ("struct", "union", "enum"):
                continue
            out.append(Definition("ordinary", name))


def collisions(units: list, macros: frozenset = frozenset(),
               declared: frozenset = frozenset()) -> dict:
    """{Definition: count} for names defined more than once in one translation unit (a
    list of what each of its parts defines, Definitions, in order), or defined while being
    a macro of `macros` or of the unit, or (functions, types, variables, tags) a name
    `declared` elsewhere."""
    found: dict = {}
    for unit in units:
        seen: dict = {}
        unit_macros = set()
        for defs in unit:
            for d in defs:
                seen[d] = seen.get(d, 0) + 1
                if d.ns == "macro":
                    unit_macros.add(d.name)
        for d, n in seen.items():
            # (a macro may be defined twice: under #if and #else)
            if d.ns != "macro" and (n > 1 or d.name in macros or d.name in unit_macros
                                    or d.ns in ("ordinary", "tag") and d.name in declared):
                found[d] = max(found.get(d, 0), n)
    return found


def _write_names(path: str, head: str, names: list) -> None:
    """Write a list _names_in reads: `head` as '#' lines, then the names, one a line."""
    with open(path, "w", encoding="ascii") as f:
        f.write("".join(f"# {ln}\n" for ln in head.split("\n")))
        f.write("".join(n + "\n" for n in names))


if __name__ == "__main__":   # python -m p2gen.cnames --macros / --decls / --runtime: regenerate lists
    for flag, path, read, what, head in (
            ("--decls", DECLS_FILE, compiler_declarations, "names",
             "Names the C headers that generated code includes declare (functions, types,\n"
             "variables, enum constants, tags), not starting with '_'."),
            ("--macros", MACROS_FILE, compiler_macros, "macros",
             "Macros the C headers that generated code includes define (glibc, gcc), names "
             "not\nstarting with '_' (those are refused by rule).")):
        if sys.argv[1:] == [flag]:
            names = sorted(read(os.environ.get("CC", "cc")))
            _write_names(path, f"{head} Regenerate: python -m p2gen.cnames {flag}", names)
            print(f"{len(names)} {what} written to {path}")
    if sys.argv[1:] == ["--runtime"]:
        names = [f"{ns} {name}" for ns, name in
                 sorted(compiler_runtime_definitions(os.environ.get("CC", "cc")))]
        _write_names(RUNTIME_FILE, "What p2_runtime.h defines, as the compiler reads it (in its "
                     "configurations, less the\nsystem headers'): '<namespace> <name>'. "
                     "Regenerate: python -m p2gen.cnames --runtime", names)
        print(f"{len(names)} runtime names written to {RUNTIME_FILE}")
