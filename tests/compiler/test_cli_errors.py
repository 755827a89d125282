"""Hostile input and hostile environments at the command line:
each is one clean message on stderr with the exit status generator/cli.py documents, never
a Python traceback.

The commands run in a child process, as a user runs them: how deep Python may recurse
depends on the stack the process starts with, so only a real run shows a RecursionError.
"""
import os
import subprocess
import sys

import pytest

from p2gen.parser import MAX_INT_DIGITS, MAX_NESTING

REC = ("record item { id: u32; grp: i32; score: i64; name: char[8]; ratio: f64; }\n"
       "container c of item = top2ds_qualify[array[transient]];\n")


def p2gen(*args, env=None, cwd=None):
    return subprocess.run([sys.executable, "-m", "p2gen.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=300, cwd=cwd,
                          env={**os.environ, **(env or {})})


def write(tmp_path, text, name="t.p2"):
    path = tmp_path / name
    path.write_text(text)
    return path


def one_line_error(proc, status=1):
    """The process failed with `status` and said why on one line of stderr."""
    assert proc.returncode == status, (proc.returncode, proc.stdout, proc.stderr[-3000:])
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert proc.stderr.startswith("error: ") and proc.stderr.count("\n") == 1, proc.stderr
    return proc.stderr


# ---------------------------------------------------------------------------
# Item 4: deep input
# ---------------------------------------------------------------------------
def _where(pred):
    return REC + f"cursor k on c where {pred};\n"


TOO_DEEP = {
    # name: (spec text, line, the token the error points at: 'n'th occurrence of `needle`)
    "parens-320": (_where("(" * 320 + "id > 1" + ")" * 320), 3, "(", MAX_NESTING + 1),
    "nots-960": (_where("not " * 960 + "id > 1"), 3, "not", MAX_NESTING + 1),
    "not-paren": (_where("not (" * 480 + "id > 1" + ")" * 480), 3, "not", MAX_NESTING // 2 + 1),
    "equation-963": ("record item { id: u32; }\ncontainer c of item = " + "qualify[" * 963
                     + "top2ds[array[transient]]" + "]" * 963 + ";\n", 2, "[", MAX_NESTING + 1),
}


def _col(line_text, needle, n):
    col = -1
    for _ in range(n):
        col = line_text.index(needle, col + 1)
    return col + 1


@pytest.mark.parametrize("command", ["check", "build", "explain"])
@pytest.mark.parametrize("case", sorted(TOO_DEEP))
def test_too_deep_is_a_positioned_error(tmp_path, case, command):
    text, line, needle, n = TOO_DEEP[case]
    spec = write(tmp_path, text)
    args = [command, spec] + (["--no-compile", "-o", tmp_path / "out"] if command == "build" else [])
    proc = p2gen(*args)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr and "RecursionError" not in proc.stderr
    col = _col(text.split("\n")[line - 1], needle, n)
    assert proc.stderr.startswith(f"{spec}:{line}:{col}: error: nesting too deep"), proc.stderr[:300]
    assert f"nest at most {MAX_NESTING} levels" in proc.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("literal", ["9" * 4400, "-" + "1" * 4301, "0x" + "f" * 5000])
@pytest.mark.parametrize("where", ["cursor", "char", "param"])
def test_huge_integer_literal_is_a_positioned_error(tmp_path, literal, where):
    if where == "cursor":
        text, line, before = _where(f"id > {literal}"), 3, "id > "
    elif where == "char":
        text, line, before = f"record r {{ a: char[{literal}]; }}\n", 1, "char["
    else:
        text = ("record r { a: u32; }\ncontainer c of r = top2ds[array[transient]] "
                f"with array(capacity = {literal});\n")
        line, before = 2, "capacity = "
    spec = write(tmp_path, text)
    for command in ("check", "explain"):
        proc = p2gen(command, spec)
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
        col = text.split("\n")[line - 1].index(before) + len(before) + 1
        assert proc.stderr.startswith(f"{spec}:{line}:{col}: error: integer literal of "), \
            proc.stderr[:300]
        assert f"at most {MAX_INT_DIGITS} digits" in proc.stderr


def test_long_flat_chains_need_no_recursion(tmp_path):
    """1,000 `and` (or `or`) terms are not nesting: accepted, planned and compiled."""
    ands = " and ".join(f"id != {i}" for i in range(1000))
    ors = " or ".join(f"grp == {i}" for i in range(1000))
    spec = write(tmp_path, REC + f"cursor k on c where {ands};\ncursor j on c where {ors};\n")
    proc = p2gen("check", spec)
    assert proc.returncode == 0, proc.stderr[-3000:]
    proc = p2gen("explain", spec)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "residual filter: id != 0 and id != 1 and id != 2 and " in proc.stdout
    proc = p2gen("build", spec, "-o", tmp_path / "out")
    assert proc.returncode == 0, proc.stderr[-3000:]
    # the C is a flat chain too: no deeper in parentheses than one term (clang refuses
    # expressions nested more than 256 deep)
    source = (tmp_path / "out" / "t.c").read_text()
    lines = [ln for ln in source.split("\n") if "rec.grp" in ln and "||" in ln]
    assert lines and lines[0].count("||") == 999

    def depth(s):
        d = m = 0
        for ch in s:
            d += (ch == "(") - (ch == ")")
            m = max(m, d)
        return m
    assert depth(lines[0]) < 10


@pytest.mark.parametrize("text", [
    _where("(" * MAX_NESTING + "id > 1" + ")" * MAX_NESTING),
    _where("not " * MAX_NESTING + "id > 1"),
    _where("not (" * (MAX_NESTING // 2) + "id > 1 or grp < 2" + ")" * (MAX_NESTING // 2)),
    _where("(id > 3 or " * MAX_NESTING + "id > 1" + ")" * MAX_NESTING),
    "record item { id: u32; }\ncontainer c of item = " + "qualify[" * (MAX_NESTING - 3)
    + "top2ds_qualify[array[transient]]" + "]" * (MAX_NESTING - 3) + ";\n"
    "cursor k on c where id > 3;\n",
], ids=["parens", "nots", "not-paren", "or-paren", "equation"])
def test_nesting_at_the_limit_builds(tmp_path, text):
    spec = write(tmp_path, text)
    proc = p2gen("build", spec, "-o", tmp_path / "out")
    assert proc.returncode == 0, proc.stderr[-3000:]


# ---------------------------------------------------------------------------
# Item 5: the environment
# ---------------------------------------------------------------------------
@pytest.fixture
def ok_spec(tmp_path):
    return write(tmp_path, REC)


@pytest.mark.parametrize("args", [
    ["--cc", "nonexistent-cc"],
    ["--cc", "nonexistent-cc", "--no-compile", "--python"],
    ["--cc", "nonexistent-cc", "--no-compile", "--harness"],
    ["--cc", ""],
], ids=["compile", "python", "harness", "empty"])
def test_build_with_a_compiler_that_cannot_run(tmp_path, ok_spec, args):
    err = one_line_error(p2gen("build", ok_spec, "-o", tmp_path / "out", *args))
    assert "C compiler" in err and "--cc" in err
    assert not (tmp_path / "out").exists()      # checked before anything is written


def test_build_with_an_unreadable_compiler_command(tmp_path, ok_spec):
    err = one_line_error(p2gen("build", ok_spec, "-o", tmp_path / "out", "--cc", "gcc 'x"))
    assert "cannot read the C compiler command" in err


@pytest.mark.parametrize("bench, args, says", [
    ("tpcb", ["--cc", "nonexistent-cc"], "C compiler 'nonexistent-cc'"),
    ("oo7", ["--cxx", "nonexistent-cxx"], "C++ compiler 'nonexistent-cxx'"),
])
def test_bench_with_a_compiler_that_cannot_run(tmp_path, bench, args, says):
    err = one_line_error(p2gen("bench", bench, "--build-dir", tmp_path / "b", "-o",
                               tmp_path / "r", *args, cwd=tmp_path))
    assert says in err


def test_build_python_with_CC_that_cannot_run(tmp_path, ok_spec):
    err = one_line_error(p2gen("build", ok_spec, "-o", tmp_path / "out", "--python",
                               env={"CC": "nonexistent-cc"}))
    assert "cannot run the C compiler 'nonexistent-cc'" in err


def test_build_into_a_directory_that_cannot_be_made(tmp_path, ok_spec):
    (tmp_path / "plain").write_text("a file, not a directory")
    out = tmp_path / "plain" / "out"
    err = one_line_error(p2gen("build", ok_spec, "-o", out, "--no-compile"))
    assert f"cannot write the generated files into '{out}': Not a directory" in err


def test_build_over_a_directory_where_a_file_goes(tmp_path, ok_spec):
    (tmp_path / "out" / "t.h").mkdir(parents=True)
    err = one_line_error(p2gen("build", ok_spec, "-o", tmp_path / "out", "--no-compile"))
    assert "cannot write the generated files" in err and "Is a directory" in err


def test_verify_with_a_compiler_that_cannot_run(tmp_path, ok_spec):
    """Status 3 (the checker cannot be built), not 1 (problems found)."""
    err = one_line_error(p2gen("verify", ok_spec, "--dir", tmp_path, "--build-dir",
                               tmp_path / "cache", "--cc", "nonexistent-cc"), status=3)
    assert "cannot run the C compiler 'nonexistent-cc'" in err


def test_verify_with_a_cache_that_cannot_be_written(tmp_path, ok_spec):
    (tmp_path / "plain").write_text("")
    err = one_line_error(p2gen("verify", ok_spec, "--dir", tmp_path, "--build-dir",
                               tmp_path / "plain" / "cache"), status=3)
    assert "cannot write" in err and "Not a directory" in err


def test_exit_statuses_are_documented_once_and_agree():
    """The tables in cli.py are what `--help` and `verify --help` print, and the statuses
    the tests above see are the ones documented."""
    import p2gen.cli as cli
    flat = lambda s: " ".join(s.split())
    main_help, verify_help = flat(p2gen("--help").stdout), flat(p2gen("verify", "--help").stdout)
    for rows, help_text in ((cli.EXIT_STATUS, main_help), (cli.VERIFY_STATUS, verify_help)):
        assert [c for c, _ in rows] == list(range(len(rows)))
        for code, meaning in rows:
            assert f"{code} {flat(meaning)}" in help_text
            assert f"{code} {flat(meaning)}" in flat(cli.__doc__)
    assert "C compiler that cannot be run" in dict(cli.EXIT_STATUS)[1]
    assert "C compiler that cannot be run" in dict(cli.VERIFY_STATUS)[3]


def test_check_help_says_what_check_prints(tmp_path, ok_spec):
    help_text = " ".join(p2gen("check", "--help").stdout.split())
    assert "nothing but errors" not in help_text
    assert "one-line summary" in help_text
    proc = p2gen("check", ok_spec)
    assert proc.returncode == 0 and proc.stderr == ""
    assert proc.stdout == f"{ok_spec}: ok (1 records, 1 containers, 0 cursors)\n"
