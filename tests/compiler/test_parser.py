"""Tests for the spec-language parser (generator/parser.py, grammar/P2Spec.g4)."""
from __future__ import annotations

import time

import pytest

from p2gen.errors import SpecError
from p2gen.model import (
    And, Compare, Const, Container, Cursor, FieldRef, FieldType, LayerApp, Not, Or,
    ParamRef, Pos, Spec,
)
from p2gen.parser import MAX_NESTING, parse, parse_file
from p2gen.model import chain_terms

EXAMPLE = """\
// line comment, and /* block comments */
record account {
    id: u32; branch: u32; balance: i64; filler: char[84];
}
container accounts of account
    = top2ds_qualify[hash[array[persistent]]]
    with hash(key = id, buckets = 1048576, fn = identity),
         persistent(file = "tpcb.db");
cursor rich_in_branch on accounts where branch == $b and balance > $min order by id;
cursor everything on accounts;
"""

RECORD = "record r { id: u32; score: f64; name: char[8]; }\n"


def chain_names(app: LayerApp) -> list[str]:
    return [a.name for a in app.chain()]


def where_of(pred: str):
    spec = parse(RECORD + f"cursor c on things where {pred};")
    return spec.cursors[0].where


def param_values(params_text: str):
    spec = parse(f"container c of r = layer({params_text});")
    return {p.name: (p.value.kind, p.value.value) for p in spec.containers[0].equation.params}


def error_of(text: str, path: str = "t.p2") -> SpecError:
    with pytest.raises(SpecError) as info:
        parse(text, path)
    return info.value


# ---------------------------------------------------------------------------
# The README example
# ---------------------------------------------------------------------------
def test_example_records():
    spec = parse(EXAMPLE, "tpcb.p2")
    assert isinstance(spec, Spec)
    assert spec.path == "tpcb.p2" and spec.source == EXAMPLE
    [rec] = spec.records
    assert rec.name == "account"
    assert [f.name for f in rec.fields] == ["id", "branch", "balance", "filler"]
    assert rec.field("id").type == FieldType("int", "u32")
    assert rec.field("balance").type == FieldType("int", "i64")
    filler = rec.field("filler").type
    assert filler.kind == "char" and filler.name == "char" and filler.length == 84
    assert rec.pos == Pos("tpcb.p2", 2, 8, 7)
    assert rec.field("balance").pos == Pos("tpcb.p2", 3, 27, 7)


def test_example_container():
    spec = parse(EXAMPLE, "tpcb.p2")
    [c] = spec.containers
    assert isinstance(c, Container)
    assert (c.name, c.record) == ("accounts", "account")
    assert c.pos == Pos("tpcb.p2", 5, 11, 8)
    assert c.record_pos == Pos("tpcb.p2", 5, 23, 7)
    assert chain_names(c.equation) == ["top2ds_qualify", "hash", "array", "persistent"]
    assert c.equation.text() == "top2ds_qualify[hash[array[persistent]]]"
    assert all(a.params == [] for a in c.equation.chain())
    assert c.equation.chain()[-1].below is None
    assert [a.layer for a in c.with_args] == ["hash", "persistent"]
    hash_args, pers_args = c.with_args
    assert [(p.name, p.value.kind, p.value.value) for p in hash_args.params] == [
        ("key", "name", "id"), ("buckets", "int", 1048576), ("fn", "name", "identity")]
    assert [(p.name, p.value.kind, p.value.value) for p in pers_args.params] == [
        ("file", "string", "tpcb.db")]
    assert hash_args.pos == Pos("tpcb.p2", 7, 10, 4)
    assert hash_args.params[1].pos == Pos("tpcb.p2", 7, 25, 7)        # buckets
    assert hash_args.params[1].value.pos == Pos("tpcb.p2", 7, 35, 7)  # 1048576
    assert pers_args.params[0].value.pos == Pos("tpcb.p2", 8, 28, 9)  # "tpcb.db"


def test_example_cursors():
    spec = parse(EXAMPLE, "tpcb.p2")
    rich, everything = spec.cursors
    assert isinstance(rich, Cursor)
    assert (rich.name, rich.container) == ("rich_in_branch", "accounts")
    assert rich.pos == Pos("tpcb.p2", 9, 8, 14)
    assert rich.container_pos == Pos("tpcb.p2", 9, 26, 8)
    w = rich.where
    assert isinstance(w, And)
    assert isinstance(w.left, Compare) and isinstance(w.right, Compare)
    assert (w.left.op, w.left.left, w.left.right.name) == (
        "==", FieldRef("branch", Pos("tpcb.p2", 9, 41, 6)), "b")
    assert isinstance(w.left.right, ParamRef)
    assert w.right.op == ">" and w.right.left.name == "balance"
    assert isinstance(w.right.right, ParamRef) and w.right.right.name == "min"
    assert w.left.pos == Pos("tpcb.p2", 9, 41, len("branch == $b"))
    assert rich.order_by == FieldRef("id", Pos("tpcb.p2", 9, 82, 2))
    assert (everything.name, everything.where, everything.order_by) == ("everything", None, None)


def test_parse_file(tmp_path):
    f = tmp_path / "tpcb.p2"
    f.write_text(EXAMPLE)
    spec = parse_file(f)
    assert spec.path == str(f)
    assert spec.containers[0].pos.file == str(f)
    with pytest.raises(SpecError, match="cannot read"):
        parse_file(tmp_path / "missing.p2")


def test_declarations_any_order_and_empty():
    spec = parse("cursor k on c;\ncontainer c of r = t[x];\nrecord r { }\nrecord s { a: u8; }")
    assert [c.name for c in spec.cursors] == ["k"]
    assert [c.name for c in spec.containers] == ["c"]
    assert [r.name for r in spec.records] == ["r", "s"]
    assert spec.records[0].fields == []
    assert parse("", "e.p2") == Spec("e.p2", "")
    assert parse("// only a comment\n/* and\n a block */\n").records == []


# ---------------------------------------------------------------------------
# Types
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("spelled, kind, name", [
    ("i8", "int", "i8"), ("i16", "int", "i16"), ("i32", "int", "i32"), ("i64", "int", "i64"),
    ("u8", "int", "u8"), ("u16", "int", "u16"), ("u32", "int", "u32"), ("u64", "int", "u64"),
    ("f32", "float", "f32"), ("f64", "float", "f64"),
    ("float", "float", "f32"), ("double", "float", "f64"),
])
def test_types(spelled, kind, name):
    [f] = parse(f"record r {{ x: {spelled}; }}").records[0].fields
    assert f.type == FieldType(kind, name)


def test_char_length_forms():
    fields = parse("record r { a: char[1]; b: char[0x10]; c: char[1_000]; }").records[0].fields
    assert [f.type.length for f in fields] == [1, 16, 1000]


# ---------------------------------------------------------------------------
# Equations
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("equation, names", [
    ("top2ds_qualify[avl[array[persistent]]]", ["top2ds_qualify", "avl", "array", "persistent"]),
    ("top2ds_qualify[qsort[transient]]", ["top2ds_qualify", "qsort", "transient"]),
    ("top2ds_qualify[hash[array[persistent]]]", ["top2ds_qualify", "hash", "array", "persistent"]),
    ("top2ds_qualify[iarray[transient]]", ["top2ds_qualify", "iarray", "transient"]),
])
def test_paper_equations(equation, names):
    c = parse(f"container c of r = {equation};").containers[0]
    assert chain_names(c.equation) == names
    assert c.equation.text() == equation
    assert c.with_args == []


def test_inline_params():
    text = ("container c of r\n"
            "  = top2ds_qualify[hash(key = id)[avl(key = score, unique = true)[array[transient]]]]\n"
            "  with array(size = 16), transient();\n")
    c = parse(text, "x.p2").containers[0]
    top, hsh, avl, arr, tr = c.equation.chain()
    assert [a.name for a in (top, hsh, avl, arr, tr)] == [
        "top2ds_qualify", "hash", "avl", "array", "transient"]
    assert top.params == [] and arr.params == [] and tr.params == []
    assert [(p.name, p.value.kind, p.value.value) for p in hsh.params] == [("key", "name", "id")]
    assert [(p.name, p.value.value) for p in avl.params] == [("key", "score"), ("unique", True)]
    assert [(a.layer, len(a.params)) for a in c.with_args] == [("array", 1), ("transient", 0)]


def test_layer_positions_on_line_3():
    text = ("record r { id: u32; }\n"
            "container c of r\n"
            "    = top2ds_qualify[hash[array[persistent]]];\n")
    eq = parse(text, "pos.p2").containers[0].equation
    assert [(a.pos.line, a.pos.col, a.pos.length) for a in eq.chain()] == [
        (3, 7, 14), (3, 22, 4), (3, 27, 5), (3, 33, 10)]
    assert eq.chain()[1].pos == Pos("pos.p2", 3, 22, 4)


# ---------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------
def test_int_values():
    assert param_values("a = 0, b = 42, c = -7, d = 0x1F, e = 0XfF, f = 1_048_576, "
                        "g = 0xFF_FF, h = -0x10") == {
        "a": ("int", 0), "b": ("int", 42), "c": ("int", -7), "d": ("int", 31),
        "e": ("int", 255), "f": ("int", 1048576), "g": ("int", 65535), "h": ("int", -16)}


def test_float_values():
    v = param_values("a = 0.75, b = 1e6, c = -2.5, d = 1.5E-3, e = .5, f = 2.")
    assert {k: kind for k, (kind, _) in v.items()} == dict.fromkeys("abcdef", "float")
    assert [v[k][1] for k in "abcdef"] == [0.75, 1e6, -2.5, 1.5e-3, 0.5, 2.0]


def test_string_bool_name_values():
    v = param_values(r'a = "plain", b = "q\"uote", c = "back\\slash", d = "n\nt\t", '
                     r'e = "", f = true, g = false, h = identity')
    assert v == {
        "a": ("string", "plain"), "b": ("string", 'q"uote'), "c": ("string", "back\\slash"),
        "d": ("string", "n\nt\t"), "e": ("string", ""), "f": ("bool", True),
        "g": ("bool", False), "h": ("name", "identity")}


# ---------------------------------------------------------------------------
# Predicates
# ---------------------------------------------------------------------------
def test_precedence_or_and_not():
    w = where_of("a == 1 or b == 2 and not c == 3")
    assert isinstance(w, Or)
    assert isinstance(w.left, Compare) and w.left.left.name == "a"
    assert isinstance(w.right, And)
    assert isinstance(w.right.left, Compare) and w.right.left.left.name == "b"
    assert isinstance(w.right.right, Not)
    assert isinstance(w.right.right.operand, Compare)
    assert w.right.right.operand.left.name == "c"


def test_left_associative():
    w = where_of("a == 1 and b == 2 and c == 3")
    assert isinstance(w, And) and isinstance(w.left, And)
    assert w.right.left.name == "c" and w.left.left.left.name == "a"
    w = where_of("a == 1 or b == 2 or c == 3")
    assert isinstance(w, Or) and isinstance(w.left, Or)


def test_long_chains_are_shallow_trees_in_order():
    """A chain of `and`s (or `or`s) is associative: built balanced, so however long it is,
    nothing that walks the tree recursively runs out of stack; its terms keep their order."""
    for op, cls in (("and", And), ("or", Or)):
        w = where_of(f" {op} ".join(f"id == {i}" for i in range(1000)))

        def depth(e):
            return 1 + max(depth(e.left), depth(e.right)) if isinstance(e, cls) else 0
        assert depth(w) == 10
        assert [t.right.value for t in chain_terms(w, cls)] == list(range(1000))
        assert w.pos.col == len("cursor c on things where ") + 1


def test_nesting_limit_position_and_file_order():
    deep = "not " * (MAX_NESTING + 5) + "id == 1"
    err = error_of(RECORD + f"cursor c on things where {deep};")
    assert (err.line, err.col) == (2, len("cursor c on things where ") + 4 * MAX_NESTING + 1)
    assert f"at most {MAX_NESTING} levels" in err.message
    # a `not` run ends with its comparison: many short ones side by side are not deep
    wide = " and ".join(["not not id == 1"] * MAX_NESTING)
    assert parse(RECORD + f"cursor c on things where {wide};").cursors
    # an earlier error is reported first (errors stay in file order)
    err = error_of("record r { a: u33; }\n" + f"cursor c on things where {deep};")
    assert err.line == 1 and "unknown type 'u33'" in err.message


def test_nested_parens():
    w = where_of("((a == 1 or b != 2)) and not (c < 3 or not (d >= 4))")
    assert isinstance(w, And)
    assert isinstance(w.left, Or)
    assert [w.left.left.op, w.left.right.op] == ["==", "!="]
    assert isinstance(w.right, Not) and isinstance(w.right.operand, Or)
    inner = w.right.operand
    assert inner.left.op == "<"
    assert isinstance(inner.right, Not) and inner.right.operand.op == ">="


@pytest.mark.parametrize("op", ["==", "!=", "<", "<=", ">", ">="])
def test_compare_ops(op):
    w = where_of(f"score {op} 1")
    assert isinstance(w, Compare) and w.op == op


def test_operands():
    w = where_of('id == $lo and 5 < score and name == "bob\\n" and score > -1.5 and id != 0x10')
    cmps = chain_terms(w, And)   # (a chain of five is bracketed as a balanced tree)
    assert isinstance(cmps[0].left, FieldRef) and cmps[0].right == ParamRef("lo", cmps[0].right.pos)
    assert isinstance(cmps[1].left, Const) and (cmps[1].left.kind, cmps[1].left.value) == ("int", 5)
    assert (cmps[2].right.kind, cmps[2].right.value) == ("string", "bob\n")
    assert (cmps[3].right.kind, cmps[3].right.value) == ("float", -1.5)
    assert (cmps[4].right.kind, cmps[4].right.value) == ("int", 16)


def test_predicate_positions():
    text = RECORD + "cursor c on things\n  where score >= $min or not id == 3\n  order by score;\n"
    cur = parse(text, "p.p2").cursors[0]
    w = cur.where
    assert w.left.pos == Pos("p.p2", 3, 9, len("score >= $min"))
    assert w.left.right.pos == Pos("p.p2", 3, 18, 4)
    assert w.right.pos.col == 26 and w.right.operand.pos.col == 30
    assert cur.order_by == FieldRef("score", Pos("p.p2", 4, 12, 5))
    assert cur.container_pos == Pos("p.p2", 2, 13, 6)


def test_order_direction_asc_desc_and_default():
    text = RECORD + ("cursor up on things order by score;\n"
                     "cursor up2 on things where id > 3 order by score asc;\n"
                     "cursor down on things where id > 3 order by score desc;\n")
    up, up2, down = parse(text, "p.p2").cursors
    assert (up.descending, up.direction_pos) == (False, None)
    assert (up2.descending, up2.direction_pos) == (False, Pos("p.p2", 3, 50, 3))
    assert down.descending and down.direction_pos == Pos("p.p2", 4, 51, 4)
    assert down.order_by == FieldRef("score", Pos("p.p2", 4, 45, 5))


def test_asc_and_desc_stay_names():
    """`asc` and `desc` are words of the order clause, not reserved: fields, records,
    containers and cursors may be called so (and be ordered by, in either direction)."""
    text = ("record desc { asc: u32; desc: i64; }\n"
            "cursor asc on desc order by desc desc;\n"
            "cursor desc on asc order by asc;\n")
    spec = parse(text, "p.p2")
    assert [f.name for f in spec.records[0].fields] == ["asc", "desc"]
    a, d = spec.cursors
    assert (a.name, a.container, a.order_by.name, a.descending) == ("asc", "desc", "desc", True)
    assert (d.name, d.container, d.order_by.name, d.descending) == ("desc", "asc", "asc", False)


# ---------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------
def check_error(err: SpecError, substring: str, line: int, col: int, source_line: str):
    assert substring in err.message
    assert (err.line, err.col) == (line, col)
    rendered = str(err)
    assert rendered.startswith(f"t.p2:{line}:{col}: error: ")
    assert "Traceback" not in rendered
    body = rendered.splitlines()
    assert body[1] == "    " + source_line
    assert body[2] == "    " + " " * (col - 1) + "^" * len(body[2].strip())
    assert body[2].strip() and set(body[2].strip()) == {"^"}


def test_error_missing_semicolon():
    err = error_of("record account {\n    id: u32;\n    balance: i64\n    filler: char[84];\n}\n")
    check_error(err, "expected ';' after field 'balance'", 3, 17, "    balance: i64")
    assert "found 'filler'" in err.message


def test_error_missing_semicolon_same_line():
    err = error_of("record r { a: u32 b: u32; }")
    check_error(err, "expected ';' after field 'a', found 'b'", 1, 19, "record r { a: u32 b: u32; }")


def test_error_missing_semicolon_after_cursor():
    err = error_of("cursor c on x where a == 1\ncursor d on x;\n")
    check_error(err, "expected ';' after cursor 'c'", 1, 27, "cursor c on x where a == 1")


def test_error_unknown_type():
    err = error_of("record r {\n    x: u33;\n}\n")
    check_error(err, "unknown type 'u33'; expected one of i8, i16", 2, 8, "    x: u33;")
    assert "f64" in err.message and "char[N]" in err.message
    assert err.pos.length == 3


def test_error_char_zero():
    err = error_of("record r { name: char[0]; }")
    check_error(err, "char length must be a positive integer", 1, 23, "record r { name: char[0]; }")


def test_error_char_without_length_and_int_with_length():
    err = error_of("record r { name: char; }")
    check_error(err, "needs a length", 1, 18, "record r { name: char; }")
    err = error_of("record r { n: u32[4]; }")
    check_error(err, "does not take a length", 1, 18, "record r { n: u32[4]; }")


def test_error_unterminated_string():
    src = 'container c of r = t[p] with p(file = "tpcb.db);'
    err = error_of("record r { x: u8; }\n" + src + "\n")
    check_error(err, "unterminated string", 2, 39, src)


def test_error_bad_escape():
    src = 'container c of r = t(f = "a\\qb");'
    err = error_of(src)
    check_error(err, "unknown escape '\\q'", 1, 28, src)


def test_error_stray_character():
    err = error_of("record r {\n  x: u32; @\n}")
    check_error(err, "unexpected character '@'", 2, 11, "  x: u32; @")


def test_error_words_not_symbols():
    err = error_of("cursor c on x where a == 1 && b == 2;")
    check_error(err, "unexpected character '&'", 1, 28, "cursor c on x where a == 1 && b == 2;")


def test_error_missing_bracket():
    src = "    = top2ds_qualify[hash[array[persistent]]"
    err = error_of(f"container c of r\n{src}\n    with hash(key = id);\n")
    check_error(err, "expected ']'", 2, len(src) + 1, src)
    assert "found keyword 'with'" in err.message
    src = "container c of r = top2ds_qualify[hash[array[persistent]];"
    err = error_of(src)
    check_error(err, "expected ']'", 1, len(src), src)


@pytest.mark.parametrize("text, word, col", [
    ("record order { x: u32; }", "order", 8),
    ("record r { where: u32; }", "where", 12),
    ("record r { cursor: u32; }", "cursor", 12),
    ("container c of r = true;", "true", 20),
    ("cursor by on x;", "by", 8),
])
def test_error_keyword_as_name(text, word, col):
    err = error_of(text)
    check_error(err, f"'{word}' is a reserved keyword", 1, col, text)


def test_error_garbage_top_level():
    err = error_of("record r { x: u8; }\nfoo bar;\n")
    check_error(err, "expected a declaration", 2, 1, "foo bar;")
    assert "'find'" in err.message   # `find` declarations too (not a keyword)
    assert "found 'foo'" in err.message
    err = error_of("record r { x: u8; } ;")
    check_error(err, "found ';'", 1, 21, "record r { x: u8; } ;")


def test_error_missing_closing_brace():
    err = error_of("record r { x: u32;\ncontainer c of r = t[x];\n")
    check_error(err, "expected '}' to close record 'r'", 1, 19, "record r { x: u32;")


def test_error_at_end_of_file():
    err = error_of("cursor c on x where a ==")
    assert "found end of file" in err.message and (err.line, err.col) == (1, 25)


def test_error_unterminated_comment():
    err = error_of("record r { x: u32; } /* never closed\n")
    check_error(err, "unterminated block comment", 1, 22, "record r { x: u32; } /* never closed")


def test_first_error_wins_in_file_order():
    err = error_of("record r { x: u33; }\nrecord s { y u32 }\n")
    assert "unknown type" in err.message and err.line == 1
    err = error_of("record r { y u32 }\nrecord s { x: u33; }\n")
    assert "syntax error" in err.message and err.line == 1
    err = error_of("record r { x: u32 }\n @ ")
    assert "expected ';'" in err.message and err.line == 1


def test_no_console_output(capsys):
    for text in ("record @", 'record "x', "record r { x: u8 }", "}}}"):
        with pytest.raises(SpecError):
            parse(text)
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""


# ---------------------------------------------------------------------------
# Speed
# ---------------------------------------------------------------------------
def test_200_line_spec_is_fast():
    parts = []
    for i in range(20):
        parts.append(f"record r{i} {{\n  id: u32;\n  name: char[20];\n  score: f64;\n  x: i64;\n}}\n")
        parts.append(f"container c{i} of r{i}\n"
                     f"  = top2ds_qualify[hash(key = id)[avl(key = score)[array[transient]]]]\n"
                     f"  with hash(buckets = 1_024, fn = identity), array(size = 0x100);\n")
        parts.append(f"cursor k{i} on c{i} where (id == $a or score > 1.5) "
                     f"and not name == \"x\" order by id;\n")
    text = "".join(parts)
    assert text.count("\n") == 200
    parse(text)  # warm the ANTLR DFA caches
    start = time.perf_counter()
    spec = parse(text)
    assert time.perf_counter() - start < 0.5
    assert len(spec.records) == len(spec.containers) == len(spec.cursors) == 20


def test_order_direction_must_be_asc_or_desc():
    text = RECORD + "cursor c on things order by score descending;\n"
    with pytest.raises(SpecError) as info:
        parse(text, "t.p2")
    check_error(info.value, "expected 'asc', 'desc' or ';' after 'order by score', found "
                "'descending'", 2, 35, "cursor c on things order by score descending;")
    # a second word after the direction is a plain syntax error at that word
    with pytest.raises(SpecError) as info:
        parse(RECORD + "cursor c on things order by score desc asc;\n", "t.p2")
    assert (info.value.line, info.value.col) == (2, 40)
