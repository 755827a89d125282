"""Spec text -> `model.Spec`, with the ANTLR 4.13.2 parser generated from grammar/P2Spec.g4.

    spec = parse(text, "tpcb.p2")
    spec = parse_file("tpcb.p2")

The first lexical, syntax or type-name error raises `SpecError(message, pos, source)`;
ANTLR's own console listeners are removed and its error recovery is replaced by an
error strategy that stops at the first problem with a message in the language's terms
("syntax error: expected ';' after field 'balance', found 'filler'").

Errors come out in file order: besides the syntax errors found by the error strategy, a
parse listener checks field types (`u33`, `char[0]`) as soon as each one has been parsed
and string escapes as soon as each string token is consumed, so a bad type on line 3
is reported before a missing ';' on line 9.
"""
from __future__ import annotations

import os
from typing import Iterable, Optional, Union

from antlr4 import CommonTokenStream, InputStream, Token
from antlr4.atn.PredictionMode import PredictionMode
from antlr4.error.ErrorStrategy import DefaultErrorStrategy
from antlr4.error.Errors import RecognitionException
from antlr4.tree.Tree import ParseTreeListener, TerminalNode

from .errors import SpecError
from .grammar.P2SpecLexer import P2SpecLexer
from .grammar.P2SpecParser import P2SpecParser
from .model import (
    FLOAT_TYPES, INT_TYPES, TYPE_ALIASES,
    And, Compare, Const, Container, Cursor, Field, FieldRef, FieldType, LayerApp,
    Find, LayerArgs, Not, Or, Param, ParamRef, Pos, Record, RelEnd, Relationship, Spec, Value,
)

__all__ = ["parse", "parse_file"]

P = P2SpecParser

KEYWORDS = {
    P.RECORD, P.CONTAINER, P.OF, P.WITH, P.CURSOR, P.ON, P.WHERE, P.ORDER, P.BY,
    P.AND, P.OR, P.NOT, P.TRUE, P.FALSE, P.RELATIONSHIP,
}
DECL_KEYWORDS = {P.RECORD, P.CONTAINER, P.CURSOR, P.RELATIONSHIP}
LEXICAL_ERRORS = {P.ERROR_CHAR, P.UNTERMINATED_STRING, P.UNTERMINATED_COMMENT}

# How expected tokens are named in messages (the rest use their literal, e.g. "';'").
TOKEN_DESCRIPTIONS = {
    Token.EOF: "end of file",
    P.ID: "a name",
    P.PARAM: "a $parameter",
    P.INT: "an integer",
    P.FLOAT: "a number",
    P.STRING: "a string",
}

TYPE_NAMES = list(INT_TYPES) + list(FLOAT_TYPES)
TYPE_LIST = ", ".join(TYPE_NAMES + list(TYPE_ALIASES) + ["char[N]", "text", "ref <container>"])
ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t"}


# ---------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------
def parse(text: str, path: str = "<spec>") -> Spec:
    """Parse spec `text` (named `path` in messages) into a `Spec`."""
    try:
        tree = _parse_tree(text, path, PredictionMode.SLL)
    except _SyntaxError:
        # SLL can in principle reject input that full LL accepts; confirm with LL.
        # (The grammar is LL(1), so in practice this just re-raises the same error.)
        try:
            tree = _parse_tree(text, path, PredictionMode.LL)
        except _SyntaxError as err:
            raise SpecError(err.message, err.pos, err.source) from None
    return _Builder(text, path).spec(tree)


def parse_file(path: Union[str, "os.PathLike[str]"]) -> Spec:
    """Read and parse a spec file; the path as given is used in messages."""
    name = os.fspath(path)
    try:
        with open(name, encoding="utf-8") as f:
            text = f.read()
    except UnicodeDecodeError as e:
        raise SpecError(f"cannot read spec file '{name}': not UTF-8 ({e.reason})") from None
    except OSError as e:
        raise SpecError(f"cannot read spec file '{name}': {e.strerror or e}") from None
    return parse(text, name)


# ---------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------
class _SyntaxError(SpecError):
    """A syntax error from one parse attempt (internal: lets parse() retry in LL mode)."""


class _State:
    """Shared by the error strategy and the parse listener of one parse."""

    def __init__(self, text: str, path: str):
        self.text = text
        self.path = path
        self.failed = False

    def error(self, message: str, pos: Pos, syntax: bool = False) -> SpecError:
        self.failed = True
        cls = _SyntaxError if syntax else SpecError
        return cls(message, pos, self.text)


# Nesting limits. The parser (ANTLR's Python runtime), the tree builder and the code that
# walks predicates recurse once (or a few times) per level of nesting, so nesting deep
# enough would exhaust Python's stack (a RecursionError, not a message). The limit is far
# above anything a spec needs and low enough that every stage stays within Python's default
# recursion limit (1000 frames); it is checked token by token while lexing, before the
# parser recurses into the level that would exceed it. Long flat chains (`a and b and ...`,
# many fields or declarations) are not nesting and have no limit.
MAX_NESTING = 100
# Integer literals: 64-bit values need at most 20 decimal digits; much longer literals are
# refused as they are lexed (Python also refuses to convert more than 4300 digits).
MAX_INT_DIGITS = 100


class _LimitedLexer(P2SpecLexer):
    """The lexer, checking nesting depth and literal length as tokens come out.

    Depth is counted as the parse tree nests: each open '[' or '(' is a level, and so is
    each `not` until the comparison or parenthesis it applies to ends (an `and`, `or`,
    ')' or ';' at its own level). The parser asks for tokens at most a couple ahead of the
    one it is parsing, so an error raised here comes after every earlier error in the file
    (errors stay in file order) and before the parser recurses into the level too deep."""

    def __init__(self, stream, state: "_State"):
        super().__init__(stream)
        self.state = state
        self.frames = [0]     # per open bracket/parenthesis (and the top level): `not`s open in it

    def nextToken(self):
        tok = super().nextToken()
        t = tok.type
        frames = self.frames
        if t in (P.LBRACK, P.LPAREN):
            frames.append(0)
        elif t in (P.RBRACK, P.RPAREN):
            if len(frames) > 1:
                frames.pop()
            frames[-1] = 0        # `not ( ... )` ends with its parenthesis
        elif t == P.NOT:
            frames[-1] += 1
        elif t in (P.AND, P.OR):
            frames[-1] = 0
        elif t == P.SEMI:
            del frames[1:]
            frames[0] = 0
        elif t == P.INT:
            body = tok.text.replace("_", "").lstrip("-")
            digits = len(body) - (2 if body[:2] in ("0x", "0X") else 0)
            if digits > MAX_INT_DIGITS:
                raise self._error(f"integer literal of {digits} digits is too long: p2gen's "
                                  f"integers are at most 64 bits (literals of at most "
                                  f"{MAX_INT_DIGITS} digits are read)", tok)
        depth = len(frames) - 1 + sum(frames)
        if depth > MAX_NESTING:
            what = {P.LBRACK: "'['", P.LPAREN: "'('", P.NOT: "'not'"}.get(t, f"'{tok.text}'")
            raise self._error(f"nesting too deep: {what} opens level {depth}; brackets, "
                              f"parentheses and 'not's nest at most {MAX_NESTING} levels",
                              tok)
        return tok

    def _error(self, message: str, tok) -> SpecError:
        st = self.state
        st.failed = True
        return SpecError(message, _tok_pos(st.path, tok), st.text)


def _parse_tree(text: str, path: str, mode) -> P2SpecParser.SpecContext:
    state = _State(text, path)
    lexer = _LimitedLexer(InputStream(text), state)
    lexer.removeErrorListeners()          # the lexer never fails: see ERROR_CHAR
    parser = P2SpecParser(CommonTokenStream(lexer))
    parser.removeErrorListeners()
    parser._errHandler = _ErrorStrategy(state)
    parser._interp.predictionMode = mode
    parser.addParseListener(_Checker(state))
    return parser.spec()


def _tok_pos(path: str, tok: Token, length: Optional[int] = None) -> Pos:
    if length is None:
        length = len(tok.text.split("\n", 1)[0]) if tok.text else 1
    return Pos(path, tok.line, tok.column + 1, max(1, length))


def _describe_expected(types: Iterable[int]) -> str:
    names = []
    for t in sorted(types, key=lambda t: (t == Token.EOF, t)):
        if t in TOKEN_DESCRIPTIONS:
            names.append(TOKEN_DESCRIPTIONS[t])
        elif 0 < t < len(P.literalNames) and P.literalNames[t] != "<INVALID>":
            names.append(P.literalNames[t])
        else:
            names.append(P.symbolicNames[t] if 0 < t < len(P.symbolicNames) else str(t))
    if not names:
        return "nothing"
    if len(names) == 1:
        return names[0]
    return ", ".join(names[:-1]) + " or " + names[-1]


def _describe_found(tok: Token) -> str:
    if tok.type == Token.EOF:
        return "end of file"
    if tok.type in KEYWORDS:
        return f"keyword '{tok.text}'"
    return f"'{tok.text}'"


def _interval_types(s) -> set[int]:
    out: set[int] = set()
    if s is not None and s.intervals is not None:
        for r in s.intervals:
            out.update(r)
    out.discard(Token.EPSILON)
    return out


class _ErrorStrategy(DefaultErrorStrategy):
    """Stops at the first error, raising a `SpecError` with a readable message.

    No recovery is attempted: every entry point the generated parser calls on a
    mismatch (sync, recoverInline, reportError) raises."""

    def __init__(self, state: _State):
        super().__init__()
        self.state = state

    # Called before each subrule and loop iteration: catch an unexpected token early,
    # while the expected set still includes everything that may come next.
    def sync(self, recognizer):
        la = recognizer.getTokenStream().LA(1)
        s = recognizer._interp.atn.states[recognizer.state]
        next_tokens = recognizer.atn.nextTokens(s)
        if la in next_tokens:
            return
        if Token.EPSILON in next_tokens:
            expected = recognizer.getExpectedTokens()   # includes what may follow
            if la in expected:
                return
        else:
            expected = next_tokens
        raise self._fail(recognizer, recognizer.getCurrentToken(), _interval_types(expected))

    def recoverInline(self, recognizer):
        raise self._fail(recognizer, recognizer.getCurrentToken(),
                         _interval_types(recognizer.getExpectedTokens()))

    def reportError(self, recognizer, e: RecognitionException):
        tok = e.offendingToken or recognizer.getCurrentToken()
        try:
            expected = e.getExpectedTokens()
        except Exception:  # pragma: no cover - defensive: fall back to the parser's view
            expected = recognizer.getExpectedTokens()
        raise self._fail(recognizer, tok, _interval_types(expected))

    def recover(self, recognizer, e):  # pragma: no cover - reportError always raises
        raise self._fail(recognizer, recognizer.getCurrentToken(), set())

    # ------------------------------------------------------------------
    def _fail(self, recognizer, tok: Token, expected: set[int]) -> SpecError:
        st = self.state
        path = st.path
        prev = recognizer.getTokenStream().LT(-1) if tok.tokenIndex > 0 else None
        if tok.type in LEXICAL_ERRORS:
            return st.error(_lexical_message(tok), _lexical_pos(path, tok), syntax=False)

        at_tok = _tok_pos(path, tok)
        if prev is not None:
            after_prev = Pos(path, prev.line, prev.column + 1 + len(prev.text.split("\n")[0]), 1)
        else:
            after_prev = at_tok
        # The offending token starts a new line (or is the end of the file): the text
        # most likely lacks something at the end of the previous token.
        new_line = prev is not None and (tok.type == Token.EOF or tok.line > prev.line)
        found = _describe_found(tok)
        ctx = recognizer._ctx
        if (isinstance(ctx, P.FieldTypeContext) and ctx.target is not None
                and ctx.name.text != "ref"):
            # `balance: i64 <newline> filler: ...` read the next field's name as a ref
            # target: the ';' after the type is what is missing
            name, tgt = ctx.name, ctx.target
            field = ctx.parentCtx.name.text if ctx.parentCtx.name is not None else "?"
            pos = (Pos(path, name.line, name.column + 1 + len(name.text), 1)
                   if tgt.line > name.line else _tok_pos(path, tgt))
            return st.error(f"syntax error: expected ';' after field '{field}', found "
                            f"'{tgt.text}'", pos, syntax=True)

        # A keyword where a name may go. A declaration keyword followed by a name is
        # more likely the start of the next declaration after a missing terminator.
        stream = recognizer.getTokenStream()
        starts_decl = tok.type in DECL_KEYWORDS and stream.LA(2) == P.ID
        if tok.type in KEYWORDS and P.ID in expected and not starts_decl:
            return st.error(f"syntax error: '{tok.text}' is a reserved keyword and cannot "
                            f"be used as a name", at_tok, syntax=True)

        if isinstance(ctx, P.SpecContext):
            return st.error(f"syntax error: {DECL_EXPECTED}, found {found}", at_tok, syntax=True)
        fd = ctx
        while fd is not None and not isinstance(fd, P.FindDeclContext):
            fd = fd.parentCtx
        if fd is not None and fd.kw is not None and fd.kw.text != "find":
            # a name where a declaration starts: the grammar tried it as `find ... by ...`
            st.failed = True
            return _not_a_declaration(path, fd.kw, st.text)

        where = after_prev if new_line else at_tok
        decl = _enclosing_decl(ctx)

        if P.SEMI in expected and decl is not None:
            # '[' and '(' would only continue a type or layer: noise next to ';'.
            expected = {P.SEMI} if new_line else expected - {P.LBRACK, P.LPAREN}
            return st.error(f"syntax error: expected {_describe_expected(expected)} after "
                            f"{decl}, found {found}", where, syntax=True)

        if expected == {P.RBRACK} and isinstance(ctx, P.EquationContext) and ctx.name:
            return st.error(f"syntax error: expected ']' to close the '[' after layer "
                            f"'{ctx.name.text}', found {found}", where, syntax=True)

        if isinstance(ctx, P.RecordDeclContext) and P.RBRACE in expected and ctx.name:
            what = "'}'" if tok.type in DECL_KEYWORDS else "a field or '}'"
            return st.error(f"syntax error: expected {what} to close record "
                            f"'{ctx.name.text}', found {found}", where, syntax=True)

        suffix = f" in {decl}" if decl else ""
        return st.error(f"syntax error: expected {_describe_expected(expected)}{suffix}, "
                        f"found {found}", where, syntax=True)


DECL_EXPECTED = ("expected a declaration ('record', 'container', 'cursor', 'relationship' "
                 "or 'find')")


def _not_a_declaration(path: str, tok: Token, text: str, cls=_SyntaxError) -> SpecError:
    """A declaration that starts with a name other than `find` (which is not a keyword)."""
    return cls(f"syntax error: {DECL_EXPECTED}, found '{tok.text}'",
                        _tok_pos(path, tok), text)


def _enclosing_decl(ctx) -> Optional[str]:
    """'field 'balance'', 'container 'accounts'', ... for the innermost declaration."""
    kinds = (
        (P.FieldDeclContext, "field"),
        (P.RecordDeclContext, "record"),
        (P.ContainerDeclContext, "container"),
        (P.CursorDeclContext, "cursor"),
        (P.RelationshipDeclContext, "relationship"),
        (P.FindDeclContext, "find"),
    )
    while ctx is not None:
        for cls, kind in kinds:
            if isinstance(ctx, cls):
                name = getattr(ctx, "name", None) or getattr(ctx, "containerName", None)
                return f"{kind} '{name.text}'" if name is not None else f"{kind} declaration"
        ctx = ctx.parentCtx
    return None


def _lexical_message(tok: Token) -> str:
    if tok.type == P.UNTERMINATED_STRING:
        return "unterminated string literal (missing closing '\"')"
    if tok.type == P.UNTERMINATED_COMMENT:
        return "unterminated block comment (missing '*/')"
    ch = tok.text
    if ch == "$":
        return "expected a parameter name after '$' (like $min)"
    if ch == "-":
        return "unexpected '-': a minus sign must be followed directly by a number"
    if ch in "&|!":
        return f"unexpected character '{ch}' (use the words 'and', 'or', 'not')"
    if ch.isprintable() and not ch.isspace():
        return f"unexpected character '{ch}'"
    return f"unexpected character U+{ord(ch):04X}"


def _lexical_pos(path: str, tok: Token) -> Pos:
    if tok.type == P.UNTERMINATED_COMMENT:
        return _tok_pos(path, tok, 2)
    return _tok_pos(path, tok)


class _Checker(ParseTreeListener):
    """Checks, during the parse, what the grammar leaves open: field types and string
    escapes. Running during the parse (not after) keeps errors in file order."""

    def __init__(self, state: _State):
        self.state = state

    def visitTerminal(self, node: TerminalNode):
        if not self.state.failed and node.symbol.type == P.STRING:
            try:
                _decode_string(self.state.path, node.symbol)
            except SpecError as e:
                self.state.failed = True
                e.source = self.state.text
                raise

    def exitEveryRule(self, ctx):
        # exitRule also runs in `finally` blocks while an error propagates: skip then.
        if not self.state.failed and isinstance(ctx, P.FieldTypeContext):
            try:
                _field_type(self.state.path, ctx)
            except SpecError as e:
                self.state.failed = True
                e.source = self.state.text
                raise


# ---------------------------------------------------------------------------
# Literals and types
# ---------------------------------------------------------------------------
def _int_value(text: str) -> int:
    s = text.replace("_", "")
    neg = s.startswith("-")
    if neg:
        s = s[1:]
    v = int(s[2:], 16) if s[:2] in ("0x", "0X") else int(s, 10)
    return -v if neg else v


def _float_value(text: str) -> float:
    return float(text.replace("_", ""))


def _decode_string(path: str, tok: Token) -> str:
    raw = tok.text[1:-1]
    out = []
    i = 0
    while i < len(raw):
        c = raw[i]
        if c == "\\":
            e = raw[i + 1]
            if e not in ESCAPES:
                pos = Pos(path, tok.line, tok.column + 2 + i, 2)
                raise SpecError(f"unknown escape '\\{e}' in string; use \\\" \\\\ \\n or \\t", pos)
            out.append(ESCAPES[e])
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _field_type(path: str, ctx: P2SpecParser.FieldTypeContext) -> FieldType:
    tok = ctx.name
    spelled = tok.text
    name = TYPE_ALIASES.get(spelled, spelled)
    length_tok = ctx.length
    if ctx.target is not None and name != "ref":
        # `balance: i64 <newline> filler: ...`: a ';' is missing, not a target
        field = ctx.parentCtx.name.text if getattr(ctx.parentCtx, "name", None) else "?"
        tgt = ctx.target
        if tgt.line > tok.line:
            pos = Pos(path, tok.line, tok.column + 1 + len(tok.text), 1)
        else:
            pos = _tok_pos(path, tgt)
        raise SpecError(f"syntax error: expected ';' after field '{field}', found "
                        f"'{tgt.text}'", pos)
    if ctx.target is not None:   # ref <container>
        if length_tok is not None:
            raise SpecError("type 'ref' does not take a length",
                            _tok_pos(path, ctx.LBRACK().symbol))
        return FieldType("int", "u64", target=ctx.target.text)
    if name == "ref":
        raise SpecError("type 'ref' needs the container it points into: ref <container>",
                        _tok_pos(path, tok))
    if name == "text":
        if length_tok is not None:
            raise SpecError("type 'text' does not take a length: it is variable-length; "
                            "use char[N] for a fixed one", _tok_pos(path, ctx.LBRACK().symbol))
        return FieldType("text", "text")
    if name == "char":
        if length_tok is None:
            raise SpecError("type 'char' needs a length: char[N]", _tok_pos(path, tok))
        n = _int_value(length_tok.text)
        if n <= 0:
            raise SpecError(f"char length must be a positive integer, got {length_tok.text}",
                            _tok_pos(path, length_tok))
        return FieldType("char", "char", n)
    if name in INT_TYPES or name in FLOAT_TYPES:
        if length_tok is not None:
            bracket = ctx.LBRACK().symbol
            raise SpecError(f"type '{spelled}' does not take a length; only char[N] does",
                            _tok_pos(path, bracket))
        return FieldType("int" if name in INT_TYPES else "float", name)
    raise SpecError(f"unknown type '{spelled}'; expected one of {TYPE_LIST}", _tok_pos(path, tok))


# ---------------------------------------------------------------------------
# Parse tree -> model
# ---------------------------------------------------------------------------
class _Builder:
    def __init__(self, text: str, path: str):
        self.text = text
        self.path = path

    def tok(self, tok: Token, length: Optional[int] = None) -> Pos:
        return _tok_pos(self.path, tok, length)

    def span(self, start: Token, stop: Token) -> Pos:
        """From `start` to the end of `stop`, cut at the end of start's line."""
        text = self.text[start.start:stop.stop + 1] if stop is not None else start.text
        return Pos(self.path, start.line, start.column + 1,
                   max(1, len(text.split("\n", 1)[0].rstrip("\r"))))

    def spec(self, ctx: P2SpecParser.SpecContext) -> Spec:
        spec = Spec(path=self.path, source=self.text)
        for d in ctx.decl():
            if d.recordDecl():
                spec.records.append(self.record(d.recordDecl()))
            elif d.containerDecl():
                spec.containers.append(self.container(d.containerDecl()))
            elif d.relationshipDecl():
                spec.relationships.append(self.relationship(d.relationshipDecl()))
            elif d.findDecl():
                spec.finds.append(self.find(d.findDecl()))
            else:
                spec.cursors.append(self.cursor(d.cursorDecl()))
        return spec

    # records ------------------------------------------------------------
    def record(self, ctx: P2SpecParser.RecordDeclContext) -> Record:
        fields = [Field(f.name.text, _field_type(self.path, f.fieldType()), self.tok(f.name),
                        self.value(f.dflt) if f.dflt is not None else None)
                  for f in ctx.fieldDecl()]
        return Record(ctx.name.text, fields, self.tok(ctx.name))

    # containers ---------------------------------------------------------
    def container(self, ctx: P2SpecParser.ContainerDeclContext) -> Container:
        return Container(
            name=ctx.name.text,
            record=ctx.recordName.text,
            record_pos=self.tok(ctx.recordName),
            equation=self.equation(ctx.equation()),
            with_args=[self.layer_args(a) for a in ctx.layerArgs()],
            pos=self.tok(ctx.name),
        )

    def equation(self, ctx: P2SpecParser.EquationContext) -> LayerApp:
        below = ctx.equation()
        return LayerApp(
            name=ctx.name.text,
            below=self.equation(below) if below is not None else None,
            params=self.params(ctx.paramList()),
            pos=self.tok(ctx.name),
        )

    def layer_args(self, ctx: P2SpecParser.LayerArgsContext) -> LayerArgs:
        return LayerArgs(ctx.name.text, self.params(ctx.paramList()), self.tok(ctx.name))

    def params(self, ctx: Optional[P2SpecParser.ParamListContext]) -> list[Param]:
        if ctx is None:
            return []
        return [Param(p.name.text, self.value(p.value()), self.tok(p.name)) for p in ctx.param()]

    def value(self, ctx: P2SpecParser.ValueContext) -> Value:
        tok = ctx.start
        pos = self.tok(tok)
        t = tok.type
        if t == P.INT:
            return Value("int", _int_value(tok.text), pos)
        if t == P.FLOAT:
            return Value("float", _float_value(tok.text), pos)
        if t == P.STRING:
            return Value("string", _decode_string(self.path, tok), pos)
        if t in (P.TRUE, P.FALSE):
            return Value("bool", t == P.TRUE, pos)
        if t == P.LPAREN:   # (a, b): the names of a composite key, each with its place
            return Value("names", tuple(n.text for n in ctx.names), pos,
                         tuple(self.tok(n) for n in ctx.names))
        return Value("name", tok.text, pos)

    # relationships ------------------------------------------------------
    def relationship(self, ctx: P2SpecParser.RelationshipDeclContext) -> Relationship:
        if ctx.toWord.text != "to":
            raise SpecError(f"syntax error: expected 'to' between the two ends of "
                            f"relationship '{ctx.name.text}', found '{ctx.toWord.text}'",
                            self.tok(ctx.toWord), self.text)
        return Relationship(ctx.name.text, self.rel_end(ctx.left, ctx.name.text),
                            self.rel_end(ctx.right, ctx.name.text),
                            self.equation(ctx.equation()), self.tok(ctx.name))

    def rel_end(self, ctx: P2SpecParser.RelEndContext, rel: str) -> RelEnd:
        if ctx.mult.text not in ("one", "many"):
            raise SpecError(f"relationship '{rel}': expected 'one' or 'many' before "
                            f"'{ctx.containerName.text}.{ctx.role.text}', found "
                            f"'{ctx.mult.text}'", self.tok(ctx.mult), self.text)
        order, direction = ctx.orderField, ctx.direction
        if direction is not None and direction.text not in ("asc", "desc"):
            raise SpecError(f"syntax error: relationship '{rel}': expected 'asc', 'desc', 'to' "
                            f"or '=' after 'order by {order.text}', found '{direction.text}'",
                            self.tok(direction), self.text)
        return RelEnd(ctx.mult.text == "many", ctx.containerName.text, ctx.role.text,
                      self.tok(ctx.mult), self.tok(ctx.containerName), self.tok(ctx.role),
                      order_by=FieldRef(order.text, self.tok(order)) if order is not None else None,
                      descending=direction is not None and direction.text == "desc")

    # finds --------------------------------------------------------------
    def find(self, ctx: P2SpecParser.FindDeclContext) -> Find:
        if ctx.kw.text != "find":
            raise _not_a_declaration(self.path, ctx.kw, self.text, SpecError)
        key = ctx.findKey()
        return Find(ctx.containerName.text, self.tok(ctx.containerName),
                    tuple(n.text for n in key.names), tuple(self.tok(n) for n in key.names),
                    key.LPAREN() is not None, self.tok(ctx.kw))

    # cursors ------------------------------------------------------------
    def cursor(self, ctx: P2SpecParser.CursorDeclContext) -> Cursor:
        where = ctx.orExpr()
        order = ctx.orderField
        direction = ctx.direction
        if direction is not None and direction.text not in ("asc", "desc"):
            raise SpecError(f"syntax error: cursor '{ctx.name.text}': expected 'asc', 'desc' "
                            f"or ';' after 'order by {order.text}', found '{direction.text}'",
                            self.tok(direction), self.text)
        return Cursor(
            name=ctx.name.text,
            container=ctx.containerName.text,
            container_pos=self.tok(ctx.containerName),
            where=self.or_expr(where) if where is not None else None,
            order_by=FieldRef(order.text, self.tok(order)) if order is not None else None,
            pos=self.tok(ctx.name),
            descending=direction is not None and direction.text == "desc",
            direction_pos=self.tok(direction) if direction is not None else None,
        )

    def or_expr(self, ctx: P2SpecParser.OrExprContext):
        parts = ctx.andExpr()
        return self.chain(Or, parts, [self.and_expr(p) for p in parts])

    def and_expr(self, ctx: P2SpecParser.AndExprContext):
        parts = ctx.notExpr()
        return self.chain(And, parts, [self.not_expr(p) for p in parts])

    def chain(self, op, ctxs: list, terms: list, lo: int = 0, hi: Optional[int] = None):
        """`t0 op t1 op ... op tn` as a balanced tree: `and` and `or` are associative (and
        C evaluates the balanced form in the same order), and a balanced tree of a long
        chain is shallow, so nothing that walks predicates recursively runs out of stack.
        Up to three terms it is the left-leaning ((t0 op t1) op t2)."""
        if hi is None:
            hi = len(terms)
        if hi - lo == 1:
            return terms[lo]
        mid = lo + (hi - lo + 1) // 2
        return op(self.chain(op, ctxs, terms, lo, mid), self.chain(op, ctxs, terms, mid, hi),
                  self.span(ctxs[lo].start, ctxs[hi - 1].stop))

    def not_expr(self, ctx: P2SpecParser.NotExprContext):
        if ctx.NOT() is not None:
            return Not(self.not_expr(ctx.notExpr()), self.span(ctx.start, ctx.stop))
        if ctx.orExpr() is not None:
            return self.or_expr(ctx.orExpr())
        c = ctx.comparison()
        return Compare(c.op.text, self.operand(c.left), self.operand(c.right),
                       self.span(c.start, c.stop))

    def operand(self, ctx: P2SpecParser.OperandContext):
        tok = ctx.start
        pos = self.tok(tok)
        t = tok.type
        if t == P.ID:
            return FieldRef(tok.text, pos)
        if t == P.PARAM:
            return ParamRef(tok.text[1:], pos)
        if t == P.INT:
            return Const("int", _int_value(tok.text), pos)
        if t == P.FLOAT:
            return Const("float", _float_value(tok.text), pos)
        return Const("string", _decode_string(self.path, tok), pos)
