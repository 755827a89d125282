"""The front end as one fuzzable call, shared by tests/compiler/test_fuzz_frontend.py and
scripts/fuzz_atheris.py.

`run_frontend(text)` drives parse -> check -> plan (-> explain, and with `render=True` the
C header and source, the harness, the verifier and the Python binding declarations).
It returns the checked spec, or None when the spec was rejected with one of the project's
errors (P2Error: SpecError, SpecErrors). Every other exception propagates: that is the bug
the fuzzers look for. A rejection is also checked: every SpecError must render, and its
position (if any) must name the file and lie inside the text.
"""
from __future__ import annotations


from p2gen import render as render_mod
from p2gen.check import check
from p2gen.names import check_generated_names
from p2gen.errors import P2Error, SpecError, SpecErrors
from p2gen.parser import parse
from p2gen.plan import explain, plan

try:                                  # the integrity checker's generator (p2gen verify)
    from p2gen import verify as verify_mod
except ImportError:                   # pragma: no cover - older trees
    verify_mod = None

PATH = "fuzz.p2"


def error_list(err: P2Error) -> list:
    if isinstance(err, SpecErrors):
        return list(err.errors)
    return [err]


def check_error(err: P2Error, text: str, path: str = PATH) -> None:
    """The error renders, and every position it names is the file's and inside the text
    (lines counted the way the lexer counts them, by '\\n'; a column may point one past
    the end of its line, e.g. at a missing ';')."""
    assert str(err), "an error with an empty message"
    if isinstance(err, SpecErrors):
        assert err.errors, "SpecErrors without errors"
    lines = text.split("\n")
    for e in error_list(err):
        if not isinstance(e, SpecError):
            continue
        assert e.render()
        if e.pos is None:
            continue
        where = f"{e.pos} ({e.message})"
        assert e.pos.file == path, f"error in another file: {where}"
        assert 1 <= e.pos.line <= len(lines), f"line outside the text: {where}"
        assert 1 <= e.pos.col <= len(lines[e.pos.line - 1]) + 1, f"column outside the line: {where}"
        assert e.pos.length >= 1, f"empty span: {where}"


def load(text: str, path: str = PATH, prefix: str = "fz"):
    """What `p2gen check` does: parse, check, plan, and the generated-name check."""
    checked = plan(check(parse(text, path), prefix))
    check_generated_names(checked, path)
    return checked


def render_all(checked, path: str = PATH) -> tuple:
    """Everything generated from a checked spec without a C compiler, as strings."""
    from p2gen.harness import render_harness
    from p2gen.pybind import binding_metadata, cdef
    header, source = render_mod.render(checked, path)
    verifier = verify_mod.render_verifier(checked, path) if verify_mod else ""
    return (header, source, render_harness(checked), verifier,
            cdef(checked), repr(binding_metadata(checked)), explain(checked))


def run_frontend(text: str, render: bool = False, path: str = PATH):
    try:
        checked = load(text, path)
    except P2Error as err:
        check_error(err, text, path)
        return None
    explain(checked)
    if render:
        try:
            first = render_all(checked, path)
        except P2Error as err:        # a spec the renderer refuses: still a clean error
            check_error(err, text, path)
            return None
        again = render_all(load(text, path), path)
        for a, b, what in zip(first, again, ("header", "source", "harness", "verifier",
                                             "cdef", "metadata", "explain")):
            assert a == b, f"rendering is not deterministic: the {what} differs between runs"
    return checked
