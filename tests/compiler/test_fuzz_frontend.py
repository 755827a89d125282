"""Hostile specs: the front end (parse, check, plan, render) must accept a spec or reject it
with one of the project's errors (P2Error: SpecError, SpecErrors) whose positions lie inside
the text, never with a Python exception of another kind; `p2gen check` must exit 0 or 1,
never with a traceback; and a spec that checks renders to the same bytes every time.

The inputs:
- test_mutated_examples: the example specs (type_equations/, tests/specs/, tests/fuzz/seeds/)
  with random spans replaced by tokens;
- test_token_soup, test_arbitrary_text: tokens in random order, and any text at all;
- test_grammar_specs: near-valid specs from a grammar (tests/fuzz/specgen.py: every field
  type, legal and illegal layer stacks and parameters, predicates, relationships, colliding
  and reserved names), some then mutated token by token; the valid ones are rendered twice;
- test_cli_check: the same specs (and broken UTF-8) through `p2gen check` in a subprocess;
- test_render_independent_of_hash_seed: valid specs render to the same bytes in processes
  with different PYTHONHASHSEED;
- test_accepted_specs_compile: specs with collision-prone names (generated suffixes,
  macros, runtime names, the prefixes p2/p2h/p2v) and hostile strings: whatever the checker
  accepts compiles with -Wall -Wextra -Werror (20 examples, ~1 s each; more with
  P2GEN_FUZZ_EXAMPLES);
- at the end, the bugs fuzzing found (fixed), each a regression test with its minimal input.

Budget. By default every test runs a fixed, derandomized number of examples (the same
inputs on every run; 200 grammar specs, 100 mutated examples, ...). For a soak:

    P2GEN_FUZZ_EXAMPLES=5000 python -m pytest tests/compiler/test_fuzz_frontend.py  # 5000 per test
    bash scripts/fuzz.sh 600          # 10 minutes: rounds of these tests with fresh seeds,
                                      # plus the atheris target (scripts/fuzz_atheris.py)

With P2GEN_FUZZ_EXAMPLES set the inputs are random (pass --hypothesis-seed=N to repeat a
run); the subprocess tests run a share of that (1/20 and 1/100).
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import textwrap

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzz.frontend import check_error, load, run_frontend
from fuzz.specgen import specs
from p2gen.errors import P2Error, SpecError
from p2gen.layers import LAYERS
from p2gen.parser import parse
from p2gen.render import render

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SEED_FILES = sorted(
    glob.glob(os.path.join(ROOT, "type_equations", "**", "*.p2"), recursive=True)
    + glob.glob(os.path.join(ROOT, "tests", "specs", "*.p2"))
    + glob.glob(os.path.join(ROOT, "tests", "fuzz", "seeds", "*.p2")))
SEEDS = [open(p, encoding="utf-8").read() for p in SEED_FILES]
TOKENS = ["record", "container", "cursor", "relationship", "of", "with", "on", "where",
          "order", "by", "and", "or", "not", "one", "many", "to", "{", "}", "[", "]", "(",
          ")", ";", ":", ",", ".", "=", "==", "!=", "<", "<=", ">", ">=", "$p", "$", "x",
          "id", "u32", "i8", "f64", "float", "char", "[4]", "[0]", "text", "ref", "ref x",
          "0", "-1", "-", "1e9", "0x", "0xff", "1_0", ".5", "18446744073709551616",
          '"f.db"', '""', '"\\q"', '"', "/*", "*/", "//", "true", "false", "int", "_x", "\n",
          " ", "\t"]
# the layer library's names, parameter names and choices, from its registry
TOKENS += list(LAYERS) + sorted({p.name for layer in LAYERS.values() for p in layer.params}
                                | {c for layer in LAYERS.values() for p in layer.params
                                   for c in p.choices})

SOAK = os.environ.get("P2GEN_FUZZ_EXAMPLES")


def fuzz_settings(default: int, soak_share: float = 1.0):
    n = max(1, int(int(SOAK) * soak_share)) if SOAK else default
    return settings(max_examples=n, deadline=None, derandomize=not SOAK, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])


def mutate(text, data, tokens=TOKENS, max_edits=4, min_edits=1):
    for _ in range(data.draw(st.integers(min_edits, max_edits), label="edits")):
        i = data.draw(st.integers(0, len(text)))
        j = data.draw(st.integers(i, min(len(text), i + 12)))
        repl = data.draw(st.sampled_from(tokens + [""]))
        text = text[:i] + repl + text[j:]
    return text


def token_edit(text, data):
    """Delete, duplicate or swap whitespace-separated words of a spec."""
    words = text.split(" ")
    for _ in range(data.draw(st.integers(1, 3), label="word edits")):
        if len(words) < 2:
            break
        i = data.draw(st.integers(0, len(words) - 2))
        op = data.draw(st.sampled_from(["delete", "duplicate", "swap", "token"]))
        if op == "delete":
            del words[i]
        elif op == "duplicate":
            words.insert(i, words[i])
        elif op == "swap":
            words[i], words[i + 1] = words[i + 1], words[i]
        else:
            words[i] = data.draw(st.sampled_from(TOKENS))
    return " ".join(words)


# ---------------------------------------------------------------------------
# In process
# ---------------------------------------------------------------------------
@fuzz_settings(100)     # a valid mutant is rendered whole: 0.3 s each
@given(st.sampled_from(SEEDS), st.data())
def test_mutated_examples(seed, data):
    run_frontend(mutate(seed, data), render=True)


@fuzz_settings(500)
@given(st.lists(st.sampled_from(TOKENS), max_size=60))
def test_token_soup(tokens):
    run_frontend(" ".join(tokens), render=True)


@fuzz_settings(500)
@given(st.text(max_size=200))
def test_arbitrary_text(text):
    run_frontend(text)


@fuzz_settings(200)     # each valid one rendered twice: the file's biggest share of the budget
@given(specs(), st.data())
def test_grammar_specs(text, data):
    how = data.draw(st.sampled_from(["as is", "as is", "as is", "words", "chars"]))
    if how == "words":
        text = token_edit(text, data)
    elif how == "chars":
        text = mutate(text, data, max_edits=2)
    run_frontend(text, render=True)


def test_seeds_check():
    """The fuzz seeds are valid specs (a broken seed would only fuzz the error paths)."""
    for path, text in zip(SEED_FILES, SEEDS):
        assert run_frontend(text, path=os.path.basename(path)) is not None, path


# ---------------------------------------------------------------------------
# Through the command line
# ---------------------------------------------------------------------------
P2GEN = [sys.executable, "-m", "p2gen.cli"]


def cli_check(path):
    return subprocess.run(P2GEN + ["check", path], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONWARNINGS": "ignore"})


def in_process_verdict(raw: bytes):
    """True if the spec checks, False if rejected, None if not UTF-8 text."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    # the CLI reads with universal newlines
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    try:
        load(text)
    except P2Error as err:
        check_error(err, text)
        return False
    return True


@fuzz_settings(12, soak_share=0.05)
@given(specs(), st.data())
def test_cli_check(tmp_path_factory, text, data):
    raw = text.encode()
    how = data.draw(st.sampled_from(["as is", "as is", "words", "bytes"]))
    if how == "words":
        raw = token_edit(text, data).encode()
    elif how == "bytes":
        i = data.draw(st.integers(0, len(raw)))
        raw = raw[:i] + data.draw(st.sampled_from(
            [b"\xff", b"\xc3", b"\xef\xbb\xbf", b"\x00", b"\xe2\x80\xa8", b"\r"])) + raw[i:]
    path = str(tmp_path_factory.mktemp("cli") / "fuzz.p2")
    with open(path, "wb") as f:
        f.write(raw)
    proc = cli_check(path)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode in (0, 1), (proc.returncode, proc.stderr)
    if proc.returncode == 1:
        assert "error" in proc.stderr, proc.stderr
    else:
        assert ": ok (" in proc.stdout
    verdict = in_process_verdict(raw)
    if verdict is not None:
        assert (proc.returncode == 0) == verdict, (proc.stdout, proc.stderr)
    else:
        assert proc.returncode == 1 and "not UTF-8" in proc.stderr


def test_cli_unreadable_spec(tmp_path):
    """A file that cannot be read: a clean message, no traceback (Click reports a missing
    file as a usage error, exit code 2; a directory or an unreadable file is ours, 1)."""
    missing = cli_check(str(tmp_path / "missing.p2"))
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    d = tmp_path / "dir.p2"
    d.mkdir()
    as_dir = cli_check(str(d))
    assert as_dir.returncode in (1, 2) and "Traceback" not in as_dir.stderr, as_dir.stderr


RENDER_SCRIPT = textwrap.dedent("""
    import hashlib, sys
    from p2gen import render
    from p2gen.check import check
    from p2gen.parser import parse_file
    from p2gen.plan import plan
    for path in sys.argv[1:]:
        h, c = render.render(plan(check(parse_file(path), "fz")), "fuzz.p2")
        print(hashlib.sha256((h + "\\0" + c).encode()).hexdigest())
""")


@fuzz_settings(1, soak_share=0.01)
@given(st.lists(specs(chaos=0), min_size=12, max_size=12))
def test_render_independent_of_hash_seed(tmp_path_factory, texts):
    """Iteration over sets and dicts of strings must not leak into the generated code."""
    d = tmp_path_factory.mktemp("seeds")
    paths = []
    for i, text in enumerate(texts + SEEDS[:4]):
        try:
            load(text)
        except P2Error:
            continue
        paths.append(str(d / f"s{i}.p2"))
        with open(paths[-1], "w", encoding="utf-8") as f:
            f.write(text)
    outs = []
    for seed in ("0", "1", "12345"):
        proc = subprocess.run([sys.executable, "-c", RENDER_SCRIPT] + paths,
                              capture_output=True, text=True, timeout=300,
                              env={**os.environ, "PYTHONHASHSEED": seed})
        assert proc.returncode == 0, proc.stderr
        outs.append(proc.stdout.split())
    assert len(outs[0]) == len(paths)
    for path, *digests in zip(paths, *outs):
        assert len(set(digests)) == 1, f"{path} renders differently under PYTHONHASHSEED " \
                                       f"0, 1, 12345:\n{open(path).read()}"


# ---------------------------------------------------------------------------
# What the checker accepts compiles
# ---------------------------------------------------------------------------
# Spec prefixes that meet the runtime's, the harness's and the verifier's own names.
PREFIXES = ["fz", "fz", "p2", "p2h", "p2v", "db", "c"]
COMPILE_FLAGS = ("-std=c11", "-O2", "-Wall", "-Wextra", "-Werror")   # p2gen build's


def compile_generated(text: str, prefix: str, d) -> bool:
    """Generate and compile a spec as `p2gen build` would (and its harness and verifier,
    syntax only); False if the checker refused it."""
    from p2gen.build import generate
    from p2gen.harness import harness_paths, write_harness
    from p2gen.verify import render_verifier
    from conftest import find_cc
    cc = find_cc()
    path = os.path.join(str(d), "fuzz.p2")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    try:
        gen = generate(path, str(d), prefix)
    except P2Error as err:
        check_error(err, text, path)
        return False
    verifier = os.path.join(str(d), f"{prefix}_verifier.c")
    with open(verifier, "w", encoding="utf-8") as f:
        f.write(render_verifier(gen.checked, path))
    jobs = [[cc, *COMPILE_FLAGS, "-I", str(d), "-c", gen.source,
             "-o", os.path.join(str(d), "spec.o")]]
    # (the test harness has no text fields: p2gen build --harness is for the other specs)
    has_text = any(f.type.kind == "text" for r in gen.checked.records for f in r.fields)
    jobs += [[cc, *COMPILE_FLAGS, "-fsyntax-only", "-I", str(d), src]
             for src in ([] if has_text else [write_harness(gen)]) + [verifier]]
    for cmd in jobs:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, f"the checker accepted this spec (prefix {prefix}) " \
            f"but {os.path.basename(cmd[-1])} does not compile:\n{text}\n{proc.stderr[:3000]}"
    return True


@fuzz_settings(20, soak_share=0.02)
@given(specs(chaos=0, risky=20), st.sampled_from(PREFIXES))
def test_accepted_specs_compile(tmp_path_factory, text, prefix):
    """Any spec `p2gen check` accepts compiles with -Wall -Wextra -Werror: specs drawn
    with names that meet generated names, macros and runtime names, and hostile strings."""
    if shutil.which(os.environ.get("CC", "cc")) is None:
        pytest.skip("no C compiler")
    compile_generated(text, prefix, tmp_path_factory.mktemp("cc"))


# ---------------------------------------------------------------------------
# Bugs found by fuzzing, with their minimal inputs, fixed since (regression tests).
# ---------------------------------------------------------------------------
# SpecError.render picked the quoted line with str.splitlines(), which also breaks at \f,
# \v, \x1c-\x1e, \x85, \u2028, \u2029, while the lexer counts '\n' only.
@pytest.mark.parametrize("text", ["//\x0c\nx", "/* \u2028 */\nx"])
def test_error_quotes_the_line_it_names(text):
    with pytest.raises(SpecError) as info:
        parse(text, "fuzz.p2")
    err = info.value
    assert err.line == 2
    assert err.render().split("\n")[1].strip() == "x"


def _c_literal_problems(source: str) -> list:
    code = re.sub(r"/\*.*?\*/|//[^\n]*", " ", source, flags=re.S)
    bad = re.findall(r"\)\s*-?(?:inf|nan)\b", code)   # ((float)inf)
    bad += [m for m in re.findall(r"(?<![\w.])(\d+)(?=[uUlL]*\b)", code) if int(m) >= 1 << 64]
    return bad


# The checker accepted values the generated C cannot spell: a float constant overflowing to
# infinity (rendered `inf`), and unbounded persistent `reserve` / journal `checkpoint`.
@pytest.mark.parametrize("text", [
    "record r { w: f32; }\ncontainer c of r = top2ds_qualify[array[transient]];\n"
    "cursor k on c where w < 1e999;\n",
    "record r { w: f64; }\ncontainer c of r = top2ds_qualify[array[transient]];\n"
    "cursor k on c where w > -1e999;\n",
    'record r { a: u8; }\ncontainer c of r = top2ds[array[persistent]]\n'
    '    with persistent(file = "a.db", reserve = 18446744073709551616);\n',
    'record r { a: u8; }\ncontainer c of r = top2ds[array[journal[persistent]]]\n'
    '    with persistent(file = "a.db"), journal(checkpoint = 18446744073709551616);\n',
], ids=["f32-inf", "f64-minus-inf", "reserve-2**64", "checkpoint-2**64"])
def test_checked_values_are_c_literals(text):
    try:
        checked = load(text)
    except P2Error:
        return                        # rejecting the value is a fix too
    header, source = render(checked, "fuzz.p2")
    assert not _c_literal_problems(header + source)


def test_fuzzer_dictionary_names_the_layer_library():
    """tests/fuzz/p2spec.dict (the coverage-guided fuzzer's dictionary) holds every
    registered layer's name, parameter names and choices."""
    path = os.path.join(ROOT, "tests", "fuzz", "p2spec.dict")
    with open(path, encoding="utf-8") as f:
        words = {line.strip()[1:-1] for line in f if line.startswith('"')}
    for name, layer in LAYERS.items():
        for word in [name] + [p.name for p in layer.params] + [c for p in layer.params
                                                                for c in p.choices]:
            assert word in words, f'add "{word}" (layer {name}) to tests/fuzz/p2spec.dict'
