"""Small edges of the spec language, each through the public
interface: the checker's messages (`p2gen check`), the generated C API (the sanitized
harness) or the README.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from p2gen.errors import SpecError, SpecErrors
from p2gen.harness import run_harness

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def check_cli(tmp_path, text):
    spec = tmp_path / "t.p2"
    spec.write_text(text)
    proc = subprocess.run([sys.executable, "-m", "p2gen.cli", "check", str(spec)],
                          capture_output=True, text=True, timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def error_at(tmp_path, text, line, needle, *fragments):
    """`p2gen check` fails with an error at `needle` on `line` saying every fragment."""
    proc = check_cli(tmp_path, text)
    assert proc.returncode == 1, proc.stdout
    col = text.split("\n")[line - 1].index(needle) + 1
    errors = [e for e in proc.stderr.split("\n") if ": error: " in e]
    here = [e for e in errors if e.startswith(f"{tmp_path / 't.p2'}:{line}:{col}: error: ")]
    assert here, (line, col, proc.stderr)
    for f in fragments:
        assert any(f in e for e in here), (f, here)
    return here


def run(exe, cmds, env, cwd):
    proc = run_harness(exe, cmds, cwd=str(cwd), env=env)
    assert "Sanitizer" not in proc.stderr and "runtime error" not in proc.stderr, proc.stderr
    assert proc.returncode == 0, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    assert not any(line.startswith("bug") for line in proc.stdout.splitlines()), proc.stdout
    return proc.stdout.splitlines()


# ---------------------------------------------------------------------------
# Signedness in a comparison of two fields: each field named with its own sign
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("pred, first, second", [
    ("a < b", "unsigned a (u32)", "signed b (i32)"),
    ("b < a", "signed b (i32)", "unsigned a (u32)"),
])
def test_signed_unsigned_comparison_names_each_side_right(tmp_path, pred, first, second):
    text = ("record r { a: u32; b: i32; }\n"
            "container c of r = top2ds_qualify[array[transient]];\n"
            f"cursor k on c where {pred};\n")
    error_at(tmp_path, text, 3, pred, f"comparing {first} with {second} is ambiguous")


# ---------------------------------------------------------------------------
# File names: one file under any spelling; no data file named like a journal
# ---------------------------------------------------------------------------
SPELLINGS = """record r { a: u32; }
container c1 of r = top2ds[array[persistent]] with persistent(file = "x.db");
container c2 of r = top2ds[array[persistent]] with persistent(file = "./x.db");
container c3 of r = top2ds[array[persistent]] with persistent(file = "sub/../x.db");
"""


def test_one_file_under_several_spellings_is_one_file(harness_builder, san_env, tmp_path):
    exe = harness_builder(SPELLINGS, "spell").exe
    out = run(exe, [f"open {tmp_path}", "insert c1 1", "insert c2 2", "insert c2 3",
                    "insert c3 4", "close", f"open {tmp_path}", "count c1", "count c2",
                    "count c3"], san_env, tmp_path)
    assert out[-3:] == ["count 1", "count 2", "count 1"], out
    assert sorted(os.listdir(tmp_path)) == ["x.db"]


@pytest.mark.parametrize("name, why", [
    ("x.db-journal", 'the journal of "x.db" is "x.db-journal"'),
    ("./d/y-journal", 'the journal of "d/y" is "d/y-journal"'),
])
def test_a_data_file_named_like_a_journal_is_refused(tmp_path, name, why):
    text = ('record r { a: u32; }\n'
            'container c of r = top2ds[array[persistent]] with persistent(file = "x.db");\n'
            'container d of r = top2ds[array[persistent]]\n'
            f'    with persistent(file = "{name}");\n')
    error_at(tmp_path, text, 4, "file", f'file "{name}" of container \'d\' ends in "-journal"',
             why)


@pytest.mark.parametrize("name", ["sub/", ".", "sub/..", "/"])
def test_a_directory_is_not_a_data_file(tmp_path, name):
    text = ('record r { a: u32; }\n'
            f'container c of r = top2ds[array[persistent]] with persistent(file = "{name}");\n')
    error_at(tmp_path, text, 2, "file =", "names a directory")


# ---------------------------------------------------------------------------
# delflag over delflag: refused (the outer purge would only mark again below)
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("equation", [
    "delflag[delflag[top2ds[array[transient]]]]",
    "delflag[qualify[delflag[top2ds_qualify[hash(key = a)[array[persistent]]]]]]",
])
def test_stacked_delflag_is_refused(tmp_path, equation):
    with_ = ' with persistent(file = "d.db")' if "persistent" in equation else ""
    text = f"record r {{ a: u32; }}\ncontainer c of r = {equation}{with_};\n"
    line2 = text.split("\n")[1]
    inner = line2.index("delflag", line2.index("delflag") + 1)
    proc = check_cli(tmp_path, text)
    assert proc.returncode == 1, proc.stdout
    assert proc.stderr.startswith(f"{tmp_path / 't.p2'}:2:{inner + 1}: error: layer 'delflag' "
                                  f"defers deletes"), proc.stderr
    assert "use one such layer per equation" in proc.stderr


def test_one_delflag_is_fine(tmp_path):
    proc = check_cli(tmp_path, "record r { a: u32; }\n"
                               "container c of r = delflag[qualify[top2ds_qualify[array[transient]]]];\n")
    assert proc.returncode == 0, proc.stderr


# ---------------------------------------------------------------------------
# The README lists the reserved words: exactly the lexer's keywords
# ---------------------------------------------------------------------------
def test_readme_lists_the_reserved_words():
    from p2gen.grammar.P2SpecLexer import P2SpecLexer
    keywords = {lit.strip("'") for lit in P2SpecLexer.literalNames
                if re.fullmatch(r"'[A-Za-z_]+'", lit)}
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    m = re.search(r"^- Reserved words \(not usable as names\):(.*?)\.", readme, re.M | re.S)
    assert m, "README's language section lists the reserved words"
    assert set(re.findall(r"`([^`]+)`", m.group(1))) == keywords
    for word in sorted(keywords):          # and each is indeed refused as a name
        with pytest.raises((SpecError, SpecErrors)):
            from p2gen.parser import parse
            parse(f"record {word} {{ a: u32; }}\n")


# ---------------------------------------------------------------------------
# persistent(reserve = ...): bounded at check time, and named when a file outgrows it
# ---------------------------------------------------------------------------
RESERVE_SPEC = """record r { a: u32; pad: char[200]; }
container c of r = top2ds[array(capacity = 8)[persistent]]
    with persistent(file = "small.db", reserve = 1_048_576);
"""


def test_outgrowing_the_reserve_names_the_spec_parameter(harness_builder, san_env, tmp_path):
    exe = harness_builder(RESERVE_SPEC, "rsv").exe
    out = run(exe, [f"open {tmp_path}"] + [f'insert c {i} "x"' for i in range(8000)]
              + ["count c"], san_env, tmp_path)
    errors = [line for line in out if line.startswith("err ")]
    assert errors and all(e.startswith("err ENOMEM ") for e in errors), errors[:3]
    assert "persistent(reserve = ...)" in errors[0] and "small.db" in errors[0], errors[0]
    assert "p2_seg_open" not in errors[0]
    stored = int(out[-1].split()[1])
    assert 0 < stored < 8000 and len(errors) == 8000 - stored


@pytest.mark.parametrize("reserves, line, needle, fragment", [
    ([str(1 << 50)], 2, str(1 << 50), "must be at most 70368744177664"),
    (["50_000_000_000_000"] * 2, 3, "reserve =", "more than the 70368744177664 (64 TiB)"),
])
def test_a_reserve_no_process_can_map_is_refused(tmp_path, reserves, line, needle, fragment):
    text = "record r { a: u32; }\n" + "".join(
        f'container c{i} of r = top2ds[array[persistent]] with persistent(file = "f{i}.db", '
        f"reserve = {r});\n" for i, r in enumerate(reserves))
    error_at(tmp_path, text, line, needle, fragment)


# ---------------------------------------------------------------------------
# iarray's default max_key: proportionate to its capacity, not 2^32 - 2
# ---------------------------------------------------------------------------
IARRAY_SPEC = """record r { id: u32; pad: char[64]; }
container c of r = top2ds_qualify[iarray(key = id)[persistent(file = "ia.db")]];
container d of r = top2ds_qualify[iarray(key = id, capacity = 4, max_key = 100000)[transient]];
"""


def test_iarray_default_max_key_keeps_one_insert_small(harness_builder, san_env, tmp_path):
    exe = harness_builder(IARRAY_SPEC, "iadef").exe
    big = 1024 * 1024           # the default capacity is 1024 slots
    out = run(exe, [f"open {tmp_path}", 'insert c 7 "a"', f'insert c {big - 1} "top"',
                    f'insert c {big} "over"', 'insert c 4000000000 "far"',
                    'insert d 100000 "given"', 'insert d 100001 "over"', "count c", "count d"],
              san_env, tmp_path)
    assert out[:3] == ["ok", "ok", "ok"], out
    for line in (out[3], out[4], out[6]):
        assert line.startswith("err ERANGE ") and "max_key" in line, out
    assert "by default 1024 * capacity - 1" in out[3]
    assert f"0..{big - 1}" in out[3] and "0..100000" in out[6] and "by default" not in out[6]
    assert out[-2:] == ["count 2", "count 1"]
    # the block holds ~1M slots of ~72 bytes at most: well under a gigabyte
    assert os.path.getsize(tmp_path / "ia.db") < 256 << 20


def test_layers_lists_the_iarray_default(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "p2gen.cli", "layers"], capture_output=True,
                          text=True, timeout=60)
    assert "param max_key: int = 1024 * capacity - 1" in proc.stdout


# ---------------------------------------------------------------------------
# A cursor whose open refused a parameter is not open: it never walks
# ---------------------------------------------------------------------------
NAMED_SPEC = """record r { id: u32; name: char[8]; }
container c of r = top2ds_qualify[hash(key = name)[array[transient]]];
cursor by_name on c where name == $n;
"""


def test_a_cursor_whose_open_refused_its_parameter_never_walks(harness_builder, san_env,
                                                                tmp_path):
    """A string parameter longer than its field is refused (P2_ERANGE). The cursor must not
    then walk with a parameter it was not given: before, its handle was set before the
    check, so _next walked for "" (the zeroed parameter) and found the element named "".
    The harness checks, after every failed open, that _next answers P2_ECLOSED and _next_rec
    and _get NULL (a `bug` line otherwise, which `run` refuses)."""
    exe = harness_builder(NAMED_SPEC, "named").exe
    out = run(exe, [f"open {tmp_path}", 'insert c 1 ""', 'insert c 2 "abcdefgh"',
                    'cursor by_name "abcdefghi"', 'cursor by_name ""', 'cursor by_name "abcdefgh"'],
              san_env, tmp_path)
    assert out[:3] == ["ok", "ok", "ok"], out
    assert out[3].startswith("err ERANGE ") and "longer than 8 bytes" in out[3], out
    assert out[4:] == ['rec 1 ""', "end 1", 'rec 2 "abcdefgh"', "end 1"], out
