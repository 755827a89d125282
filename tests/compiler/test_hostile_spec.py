"""Hostile spec text: every string a spec carries into C (file names, string constants,
layer parameters, where text, the spec file's own name) goes through render.c_text, and
nothing in it can change the C around it.

The proof for a spec that puts hostile text in every string position at once:
(a) the generated C compiles with -Wall -Wextra -Werror (and the sanitized harness and
    verifier build);
(b) its token stream outside comments and string literals (after trigraphs and line
    splices, as a C11 compiler sees it) is the same as that of the same spec with benign
    text;
(c) a build-and-run shows that no injected code ran, that the file opened is the one named
    byte for byte, and that a string constant matches exactly the bytes it spells.
"""
from __future__ import annotations

import os
import re
import subprocess

import pytest

from conftest import runtime_obj
from hypothesis import given, settings, strategies as st

from p2gen.build import compile_objects, generate
from p2gen.check import check
from p2gen.errors import SpecError, SpecErrors
from p2gen.harness import render_harness, run_harness
from p2gen.parser import parse
from p2gen.plan import plan
from p2gen.render import RenderError, jinja_env, c_text, render
from p2gen.verify import render_verifier

# ---------------------------------------------------------------------------
# a C tokeniser: translation phases 1-3, enough to compare token streams
# ---------------------------------------------------------------------------
TRIGRAPHS = {"=": "#", "/": "\\", "'": "^", "(": "[", ")": "]", "!": "|", "<": "{",
             ">": "}", "-": "~"}
PUNCT = re.compile(r"->|\+\+|--|<<=|>>=|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^]=|##|\.\.\.|.",
                   re.S)


def c_tokens(src: str) -> list:
    """Tokens of C source: ('str', text) for string and character literals, ('tok', text)
    for everything else; comments dropped. Raises ValueError on an unterminated comment or
    literal."""
    src = re.sub(r"\?\?([=/'()!<>-])", lambda m: TRIGRAPHS[m.group(1)], src)  # phase 1
    src = src.replace("\\\n", "")                                            # phase 2
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if c in " \t\r\n\f\v":
            i += 1
        elif src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            if j < 0:
                raise ValueError("unterminated comment")
            i = j + 2
        elif c in "\"'":
            j = i + 1
            while j < n and src[j] != c:
                if src[j] == "\n":
                    raise ValueError(f"newline in literal at {src[i:j]!r}")
                j += 2 if src[j] == "\\" else 1
            if j >= n:
                raise ValueError("unterminated literal")
            out.append(("str", src[i:j + 1]))
            i = j + 1
        elif c.isalpha() or c == "_":
            m = re.compile(r"[A-Za-z_0-9]+").match(src, i)
            out.append(("tok", m.group()))
            i = m.end()
        elif c.isdigit():
            m = re.compile(r"[0-9][A-Za-z_0-9.]*").match(src, i)
            out.append(("tok", m.group()))
            i = m.end()
        else:
            m = PUNCT.match(src, i)
            out.append(("tok", m.group()))
            i = m.end()
    return out


def skeleton(src: str) -> list:
    """The token stream with every literal's contents hidden."""
    return [t if kind == "tok" else t[0] for kind, t in c_tokens(src)]


def c_literal_bytes(lit: str) -> bytes:
    """The bytes a C string literal made by c_text stands for."""
    assert lit[0] == lit[-1] == '"', lit
    body, out, i = lit[1:-1], bytearray(), 0
    while i < len(body):
        if body[i] == "\\":
            if body[i + 1] in "01234567":
                m = re.compile(r"[0-7]{1,3}").match(body, i + 1)
                out.append(int(m.group(), 8))
                i = m.end()
                continue
            out += body[i + 1].encode()
            i += 2
        else:
            out += body[i].encode()
            i += 1
    return bytes(out)


# ---------------------------------------------------------------------------
# the one spelling function
# ---------------------------------------------------------------------------
HOSTILE_BITS = ["*/", "/*", "//", "\n", "\r", '"', "'", "\\", "??/", "??=", "?", "%s%n",
                "\t", "\0", "é", "\udcff", "*", "/"]
hostile_text = st.lists(st.sampled_from(HOSTILE_BITS) | st.text(max_size=4),
                        max_size=8).map("".join)


@settings(max_examples=300, deadline=None)
@given(hostile_text)
def test_string_spelling_is_one_literal_of_the_same_bytes(s):
    lit = c_text(s, "string")
    want = s.encode("utf-8", "surrogateescape")
    # alone, inside a comment or after a `*`: one literal, the same bytes
    assert c_tokens(lit) == [("str", lit)]
    assert c_literal_bytes(lit) == want
    assert c_tokens(f"/* {lit} */ x") == [("tok", "x")]
    assert c_tokens(f"a *{lit}") == [("tok", "a"), ("tok", "*"), ("str", lit)]


@settings(max_examples=300, deadline=None)
@given(hostile_text)
def test_comment_spelling_cannot_leave_the_comment(s):
    text = c_text(s, "comment")
    assert re.fullmatch(r"[\x20-\x7e]*", text)
    # in every kind of comment and beside the comment's own delimiters, it stays inside
    for src in (f"/*{text}*/ x", f"/* {text} */ x", f"//{text}\nx", f"/* a*{text} */ x",
                f"/* {text}/ */ x", f"/*/{text} */ x"):
        assert c_tokens(src) == [("tok", "x")], (s, text, src)
    assert not text.endswith("\\")


def test_a_template_printing_raw_spec_text_stops_the_render():
    """The structural safeguard: a `{{ }}` that prints hostile text without the filters is
    an internal error at render time, never C."""
    t = jinja_env().from_string("/* file {{ x }} */ int y;")
    assert t.render(x="benign.db") == "/* file benign.db */ int y;"
    for bad in ("x */ int evil; /* x", "a\nb", "??/", "x\\", "/abs", "é", "a//b"):
        with pytest.raises(RenderError, match="not inert"):
            t.render(x=bad)
    assert jinja_env().from_string("/* {{ x | ccomment }} */").render(x="a */ evil") \
        == "/* a *\\/ evil */"


# ---------------------------------------------------------------------------
# a spec with hostile text in every string position
# ---------------------------------------------------------------------------
# what an attacker would paste: close the comment, define a constructor that runs before
# main, reopen the comment; with a trigraph line splice, a format and odd bytes around it
PAYLOAD = ('*/\nstatic void __attribute__((constructor)) p2_pwn(void) { puts("PWNED"); } /*'
           ' ??/\n %s%n \\ \t é')


def spec_quote(s: str) -> str:
    return '"' + (s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
                  .replace("\t", "\\t")) + '"'


def hostile_spec(file: str, c1: str, c2: str, c3: str) -> str:
    return (
        "record item { id: u32; name: char[96]; tag: char[96]; }\n"
        "container items of item = top2ds_qualify[avl[hash[array[journal[persistent]]]]]\n"
        f"    with hash(key = id), avl(key = name), persistent(file = {spec_quote(file)});\n"
        f"cursor by_name on items where name == {spec_quote(c1)};\n"
        f"cursor tagged on items where tag == {spec_quote(c2)} and name != {spec_quote(c3)};\n"
        f"cursor later on items where name > {spec_quote(c3)} or not (tag <= {spec_quote(c2)});\n")


FILE_NAME = "d" + PAYLOAD.replace("\t", "").replace("\n", " ") + ".db"
HOSTILE = hostile_spec(FILE_NAME, PAYLOAD, PAYLOAD[::-1], '"*/"' + PAYLOAD[:40])
BENIGN = hostile_spec("benign.db", "abc", "def", "ghi")


def sources(text: str, spec_file: str) -> list:
    checked = plan(check(parse(text, spec_file), "hs"))
    header, source = render(checked, spec_file)
    return [header, source, render_harness(checked), render_verifier(checked, spec_file)]


def test_hostile_text_changes_no_token_outside_literals():
    hostile = sources(HOSTILE, "x*/\nint pwn; /*??/\\.p2")
    benign = sources(BENIGN, "benign.p2")
    for h, b in zip(hostile, benign):
        assert skeleton(h) == skeleton(b)
    # and the hostile text is there, only inside literals and comments
    assert "p2_pwn" in hostile[1] and "p2_pwn" not in benign[1]


def test_unspellable_text_is_a_checker_error():
    for text, fragment in (
            (hostile_spec("a\0b.db", "x", "y", "z"), "cannot hold a NUL"),
            (hostile_spec("x" * 4096, "x", "y", "z"), "4096 bytes long, at most 4095"),
            (hostile_spec("a.db", "x\ud800", "y", "z"), "lone surrogate")):
        with pytest.raises((SpecError, SpecErrors)) as info:
            check(parse(text, "t.p2"), "t")
        err = info.value
        errors = err.errors if isinstance(err, SpecErrors) else [err]
        assert any(fragment in e.message and e.line >= 1 and e.col >= 1 for e in errors), \
            [e.render() for e in errors]
    # a byte a non-UTF-8 path was read with is spelled as that byte
    checked = plan(check(parse(hostile_spec("a\udcff.db", "x", "y", "z"), "t.p2"), "t"))
    assert '"a\\377.db"' in render(checked, "t.p2")[1]


def test_hostile_spec_builds_and_runs_without_running_injected_code(tmp_path, cc, san_env,
                                                                    harness_builder):
    # (a) p2gen build: default flags, -Wall -Wextra -Werror; the spec file's own name is
    # hostile too
    spec = tmp_path / "x*?\n??=\\\n int pwn; é\\.p2"
    spec.write_text(HOSTILE, encoding="utf-8")
    gen = generate(str(spec), str(tmp_path / "out"), "hs")
    compile_objects(gen, cc=cc)
    # (c) the sanitized harness: open creates the file named by the exact bytes, the
    # constants select exactly the elements whose bytes they spell
    built = harness_builder(HOSTILE, "hs")
    run = tmp_path / "run"
    os.makedirs(os.path.dirname(os.path.join(str(run), FILE_NAME)))

    def harness_char(s: str) -> str:
        return '"' + "".join(chr(b) if 0x21 <= b <= 0x7e and chr(b) not in '"\\'
                             else f"\\x{b:02x}" for b in s.encode()) + '"'

    out = run_harness(built.exe, [
        "open",
        f"insert items 1 {harness_char(PAYLOAD)} {harness_char('t')}",
        f"insert items 2 {harness_char(PAYLOAD[:-1])} {harness_char(PAYLOAD[::-1])}",
        "cursor by_name", "cursor tagged", "close"], cwd=str(run), env=san_env)
    assert out.returncode == 0, out.stderr
    assert "PWNED" not in out.stdout.splitlines() + out.stderr.splitlines()  # the payload echoed in records is fine
    lines = out.stdout.splitlines()
    assert lines[0] == "ok" and lines[1] == "ok" and lines[2] == "ok", out.stdout
    ends = [ln for ln in lines if ln.startswith("end")]
    assert ends == ["end 1", "end 1"], out.stdout
    recs = [ln for ln in lines if ln.startswith("rec")]
    assert recs[0].split()[1] == "1" and recs[1].split()[1] == "2", out.stdout
    assert os.path.isfile(os.path.join(str(run), FILE_NAME))


FORMAT_SPEC = """record item { id: u32; }
container items of item = top2ds_qualify[hash[array[journal[persistent]]]]
    with hash(key = id), persistent(file = "%s%n%s.db");
"""

FORMAT_MAIN = r"""
#include <stdio.h>
#include <string.h>
#include "fmt.h"
int main(void)
{
    fmt_db *db = NULL;
    fmt_item it;
    fmt_ref r;
    if (fmt_open(&db, ".") != P2_OK) { printf("open: %s\n", fmt_errmsg(db)); return 1; }
    memset(&it, 0, sizeof it);
    it.id = 7;
    printf("begin %d\n", fmt_begin(db));
    printf("insert %d\n", fmt_items_insert(db, &it, &r));
    printf("begin2 %d %s\n", fmt_begin(db), fmt_errmsg(db));
    printf("commit %d\n", fmt_commit(db));
    printf("begin3 %d\n", fmt_begin(db));
    return fmt_close(db) == P2_OK ? 0 : 1;
}
"""


def test_file_name_is_never_a_format(tmp_path, cc, san_env):
    """Item 2: `file = "%s%n%s.db"` reaches begin's message as an argument: the C compiles
    with -Werror -Wformat=2 (which refuses a format the arguments do not match, and any
    format that is not a literal), and under ASan/UBSan begin with changes pending reports
    the name verbatim."""
    spec = tmp_path / "fmt.p2"
    spec.write_text(FORMAT_SPEC)
    gen = generate(str(spec), str(tmp_path), "fmt")
    main = tmp_path / "main.c"
    main.write_text(FORMAT_MAIN)
    exe = tmp_path / "fmt_main"
    # -Wformat=2: every format in the generated code and the runtime is a literal
    flags = ["-std=c11", "-g", "-Wall", "-Wextra", "-Werror", "-Wformat=2",
             "-fsanitize=address,undefined", "-fno-sanitize-recover=all"]
    cmd = [cc, *flags, "-I", str(tmp_path), str(main), gen.source,
           runtime_obj(cc, flags), "-o", str(exe)]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    out = subprocess.run([str(exe)], cwd=str(tmp_path), env=san_env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "begin 0" and lines[1] == "insert 0", out.stdout
    assert lines[2].startswith("begin2 ") and lines[2] != "begin2 0", out.stdout
    assert re.search(r"begin: the current transaction on %s%n%s\.db has [0-9]+ changed pages",
                     lines[2]), lines[2]
    assert lines[3:] == ["commit 0", "begin3 0"], out.stdout
    assert (tmp_path / "%s%n%s.db").is_file()


# ---------------------------------------------------------------------------
# what the checker accepts compiles
# ---------------------------------------------------------------------------
from p2gen.model import Compare, Const, FieldRef, FieldType, Pos  # noqa: E402
from p2gen.render import fold_compare  # noqa: E402

INT_TYPES = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]
OPS = ["<", "<=", ">", ">=", "==", "!="]


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(INT_TYPES), st.sampled_from(OPS), st.data(), st.booleans())
def test_folded_comparisons_mean_what_c_would_compute(tname, op, data, const_left):
    t = FieldType("int", tname)
    lo, hi = t.min_value, t.max_value
    v = data.draw(st.sampled_from([lo, lo + 1, hi - 1, hi, 0]) | st.integers(lo, hi))
    pos = Pos("t.p2", 1, 1)
    f, k = FieldRef("a", pos), Const("int", v, pos)
    c = Compare(op, k, f, pos) if const_left else Compare(op, f, k, pos)
    folded = fold_compare(c, t)
    import operator
    fn = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
          "==": operator.eq, "!=": operator.ne}[op]
    outcomes = {fn(k.value, x) if const_left else fn(x, k.value)
                for x in (lo, lo + 1, hi - 1, hi, v, max(lo, v - 1), min(hi, v + 1))}
    if folded is not None:
        assert outcomes == {folded}
    # the warned-about cases are folded
    if (op, v) in ((">=", lo), ("<=", hi)) and not const_left:
        assert folded is True


TYPE_LIMITS_SPEC = """record r { a: u32; b: u8; c: i8; d: u64; e: i64; f: f64; }
container rs of r = top2ds_qualify[array[transient]];
cursor always on rs where a >= 0 and b <= 255 and c >= -128 and d >= 0 and a == a
    and e >= -9223372036854775808 and 0 <= b;
cursor never on rs where a < 0 or b > 255 or c < -128 or 255 < b or a != a or a > a;
cursor some on rs where b >= 1 and not (a < 0);
"""


def test_comparisons_the_type_decides_compile_and_mean_it(harness_builder, san_env, tmp_path):
    built = harness_builder(TYPE_LIMITS_SPEC, "tl")   # -Wall -Wextra -Werror
    out = run_harness(built.exe, ["open", "insert rs 0 0 -128 0 -9223372036854775808 0",
                                  "insert rs 4294967295 255 127 18446744073709551615 1 0.5",
                                  "cursor always", "cursor never", "cursor some"],
                      cwd=str(tmp_path), env=san_env)
    assert out.returncode == 0, out.stderr
    ends = [ln for ln in out.stdout.splitlines() if ln.startswith("end")]
    assert ends == ["end 2", "end 0", "end 1"], out.stdout


def test_macro_list_covers_the_compilers_headers(cc):
    """generator/c_macros.txt (the macros user names may not take) holds every macro the
    headers of the generated code define with this compiler; regenerate it with
    `python -m p2gen.cnames --macros` if this fails."""
    from p2gen.cnames import compiler_macros, system_macros
    missing = sorted(compiler_macros(cc) - system_macros())
    assert not missing, f"macros missing from generator/c_macros.txt: {missing[:20]}"


def test_declaration_list_covers_the_compilers_headers(cc):
    """generator/c_decls.txt (functions, types, tags the headers declare, which generated
    names may not be) is current for this compiler; regenerate it with
    `python -m p2gen.cnames --decls` if this fails."""
    from p2gen.cnames import compiler_declarations, system_declarations
    missing = sorted(compiler_declarations(cc) - system_declarations())
    assert not missing, f"names missing from generator/c_decls.txt: {missing[:20]}"
