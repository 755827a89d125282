"""The CLI contract (exit codes, stderr), every example spec building warning-free, and
golden files that pin the generated C byte for byte.

Regenerate the golden files after an intended change with:
    P2GEN_UPDATE_GOLDEN=1 python -m pytest tests/test_cli_and_golden.py
"""
import glob
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from p2gen.build import generate
from p2gen.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = sorted(glob.glob(os.path.join(ROOT, "type_equations", "**", "*.p2"), recursive=True))
GOLDEN = os.path.join(ROOT, "tests", "golden")
GOLDEN_SPECS = ["paper.p2", "inventory.p2"]


def run(*args):
    return CliRunner().invoke(main, list(args))


def test_help_lists_commands():
    r = run("--help")
    assert r.exit_code == 0
    for cmd in ("build", "check", "explain", "layers"):
        assert cmd in r.output


def test_layers_lists_every_layer_with_realms():
    r = run("layers")
    assert r.exit_code == 0
    for sig in ("transient: mem", "persistent: mem", "array: ds[mem]", "iarray: ds[mem]",
                "qsort: ds[mem]", "malloc: ds[mem]", "hash: ds[ds]", "avl: ds[ds]",
                "dlist: ds[ds]", "odlist: ds[ds]", "top2ds: top[ds]", "qualify: top[top]",
                "top2ds_qualify: top[ds]", "delflag: top[top]"):
        assert sig in r.output
    assert "param key: field (required)" in r.output


def test_check_error_goes_to_stderr_with_exit_1(tmp_path):
    spec = tmp_path / "bad.p2"
    spec.write_text("record r { a: u32; }\n"
                    "container c of r = top2ds_qualify[hash[persistent]] with hash(key = a);\n")
    proc = subprocess.run([sys.executable, "-m", "p2gen.cli", "check", str(spec)],
                          capture_output=True, text=True)
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert f"{spec}:2:40: error: layer 'hash' needs a layer of realm 'ds' below it" in proc.stderr
    assert "^^^^^^^^^^" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_usage_error_exit_2(tmp_path):
    assert run("build").exit_code == 2
    assert run("build", str(tmp_path / "missing.p2")).exit_code == 2
    assert run("frobnicate").exit_code == 2


def test_syntax_error_exit_1(tmp_path):
    spec = tmp_path / "syntax.p2"
    spec.write_text("record r { a: u32 }\n")
    r = run("check", str(spec))
    assert r.exit_code == 1
    assert "syntax error" in r.output


def test_explain_prints_choice(tmp_path):
    r = run("explain", os.path.join(ROOT, "type_equations", "paper.p2"))
    assert r.exit_code == 0, r.output
    assert "cursor rich_in_branch where branch == $b and balance > $min" in r.output
    assert "chosen:" in r.output and "residual filter:" in r.output


@pytest.mark.parametrize("spec", EXAMPLES, ids=lambda p: os.path.relpath(p, ROOT))
def test_every_example_builds_warning_free(spec, tmp_path):
    r = run("build", spec, "-o", str(tmp_path))
    assert r.exit_code == 0, r.output
    assert "compiled" in r.output
    assert glob.glob(str(tmp_path / "lib*.a"))


def test_build_is_deterministic(tmp_path):
    spec = os.path.join(ROOT, "type_equations", "inventory.p2")
    a = generate(spec, str(tmp_path / "a"))
    b = generate(spec, str(tmp_path / "b"))
    for x, y in ((a.header, b.header), (a.source, b.source)):
        assert open(x, "rb").read() == open(y, "rb").read()


def test_compiler_failure_is_reported(tmp_path):
    r = run("build", os.path.join(ROOT, "type_equations", "paper.p2"), "-o", str(tmp_path),
            "--cflags", "-std=c11 -DP2GEN_BROKEN=1 -include /nonexistent.h")
    assert r.exit_code == 1
    assert "compiling paper.c failed" in r.output


def test_generated_source_is_sectioned_by_layer(tmp_path):
    gen = generate(os.path.join(ROOT, "type_equations", "paper.p2"), str(tmp_path))
    text = open(gen.source).read()
    # the layers of hash_accounts appear bottom-up, each under its own banner
    banners = [f" * layer {name} (" for name in ("persistent", "array", "hash", "top2ds_qualify")]
    start = text.index("container hash_accounts of account")
    positions = [text.index(b, start) for b in banners]
    assert positions == sorted(positions)


@pytest.mark.parametrize("name", GOLDEN_SPECS)
def test_golden(name, tmp_path):
    gen = generate(os.path.join(ROOT, "type_equations", name), str(tmp_path))
    for path in (gen.header, gen.source):
        golden = os.path.join(GOLDEN, os.path.basename(path))
        got = open(path).read()
        if os.environ.get("P2GEN_UPDATE_GOLDEN"):
            os.makedirs(GOLDEN, exist_ok=True)
            with open(golden, "w") as f:
                f.write(got)
        assert os.path.exists(golden), f"missing golden file {golden}; run with P2GEN_UPDATE_GOLDEN=1"
        assert got == open(golden).read(), (
            f"{os.path.basename(path)} differs from {golden}; if intended, regenerate with "
            f"P2GEN_UPDATE_GOLDEN=1")


def test_c_demo_runs_twice_on_one_file(tmp_path):
    """examples/paper_demo.c through the generated API; the second run reopens the file."""
    gen = generate(os.path.join(ROOT, "type_equations", "paper.p2"), str(tmp_path / "out"))
    from p2gen.build import compile_objects
    lib = compile_objects(gen)
    exe = str(tmp_path / "demo")
    subprocess.run(["cc", "-std=c11", "-O1", "-Wall", "-Wextra", "-Werror", f"-I{gen.out_dir}",
                    os.path.join(ROOT, "examples", "paper_demo.c"), lib, "-o", exe], check=True)
    data = tmp_path / "db"
    data.mkdir()
    first = subprocess.run([exe, str(data)], capture_output=True, text=True)
    second = subprocess.run([exe, str(data)], capture_output=True, text=True)
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert "hash_accounts: 1000 elements (had 0 when opened)" in first.stdout
    assert "hash_accounts: 1000 elements (had 997 when opened)" in second.stdout
    assert "avl_accounts ids in [100, 105): 100 101 102 103 104" in second.stdout


# --- issue 10: the API inline in the user's translation unit --------------------------
HEADER_SPECS = ["paper.p2", "inventory.p2", "qualify_split.p2", "oo7/hash_refarray_persistent.p2",
                "oo7/hash_ilist_journal.p2"]


@pytest.mark.parametrize("name", HEADER_SPECS)
def test_header_compiles_as_c11_and_cxx_both_ways(name, tmp_path):
    """The generated header, included alone, compiles warning-free as C11 and as C++17,
    with the API out of line and with <PREFIX>_INLINE (the implementation included)."""
    gen = generate(os.path.join(ROOT, "type_equations", name), str(tmp_path))
    p, P = gen.prefix, gen.prefix.upper()
    body = (f'#include "{p}.h"\nint main(void) {{ {p}_db *db = 0; int rc = {p}_open(&db, 0);\n'
            f'  {p}_close(db); return rc == P2_OK ? 0 : 1; }}\n')
    for lang, compiler, ext, std in (("c", "cc", "c", "-std=c11"), ("c++", "c++", "cc", "-std=c++17")):
        src = tmp_path / f"use.{ext}"
        src.write_text(body)
        for mode in ((), (f"-D{P}_INLINE",)):
            r = subprocess.run([compiler, std, "-O2", "-Wall", "-Wextra", "-Werror", *mode,
                                f"-I{tmp_path}", "-c", str(src), "-o", str(tmp_path / "use.o")],
                               capture_output=True, text=True)
            assert r.returncode == 0, f"{lang} {mode}: {r.stderr}"
            syms = subprocess.run(["nm", str(tmp_path / "use.o")], capture_output=True, text=True).stdout
            # out of line: open/close are calls into the library; inline: defined here
            assert (f" U {p}_open" in syms) == (not mode), f"{lang} {mode}:\n{syms}"
    # the library itself stays out of line even when the whole program is compiled with
    # <PREFIX>_INLINE (its .c would otherwise include itself back through the header)
    r = subprocess.run(["cc", "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", f"-D{P}_INLINE",
                        f"-I{tmp_path}", "-c", gen.source, "-o", str(tmp_path / "lib.o")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    syms = subprocess.run(["nm", str(tmp_path / "lib.o")], capture_output=True, text=True).stdout
    assert f" T {p}_open" in syms


LOOKUP_C = r'''
#include <stdio.h>
#include <string.h>
#include "paper.h"
#define EXPECT(c) do { if (!(c)) { printf("FAILED line %d: %s\n", __LINE__, #c); return 1; } } while (0)
int main(int argc, char **argv)
{
    paper_db *db;
    (void)argc;
    EXPECT(paper_open(&db, argv[1]) == P2_OK);
    paper_account a;
    memset(&a, 0, sizeof a);
    paper_ref ref = PAPER_NOREF, r2 = PAPER_NOREF;
    for (uint32_t i = 0; i < 50; i++) {
        a.id = i; a.balance = 10 * i;
        EXPECT(paper_hash_accounts_insert(db, &a, NULL) == P2_OK);
        EXPECT(paper_avl_accounts_insert(db, &a, NULL) == P2_OK);
    }
    const paper_account *x = paper_hash_accounts_lookup_id(db, 7, &ref);
    EXPECT(x && x->id == 7 && x->balance == 70);
    EXPECT(paper_hash_accounts_find_id(db, 7, &r2) == P2_OK && r2 == ref);
    EXPECT(paper_hash_accounts_at(db, ref) == x);
    EXPECT(paper_hash_accounts_set_balance(db, ref, x->balance + 5) == P2_OK);
    EXPECT(paper_hash_accounts_lookup_id(db, 7, NULL)->balance == 75);
    EXPECT(paper_hash_accounts_lookup_id(db, 99, &ref) == NULL);
    EXPECT(paper_errcode(db) == P2_NOTFOUND && strstr(paper_errmsg(db), "id == 99"));
    x = paper_avl_accounts_lookup_id(db, 49, NULL);
    EXPECT(x && x->balance == 490);
    EXPECT(paper_avl_accounts_lookup_id(db, 50, NULL) == NULL);
    EXPECT(paper_hash_accounts_lookup_id(NULL, 7, &ref) == NULL);
    paper_close(db);
    printf("ok\n");
    return 0;
}
'''


@pytest.mark.parametrize("inline", [False, True], ids=["call", "inline"])
def test_lookup_finds_the_element_in_one_step(inline, tmp_path):
    """<container>_lookup_<key>: the element (or NULL, with P2_NOTFOUND) and its reference
    in one call; the same answers out of line and inline."""
    from p2gen.build import compile_objects
    gen = generate(os.path.join(ROOT, "type_equations", "paper.p2"), str(tmp_path / "out"))
    lib = compile_objects(gen)
    src = tmp_path / "lookup.c"
    src.write_text(LOOKUP_C)
    exe = str(tmp_path / "lookup")
    flags = ["-DPAPER_INLINE"] if inline else []
    subprocess.run(["cc", "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", *flags,
                    "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                    f"-I{gen.out_dir}", str(src), lib, "-o", exe], check=True)
    data = tmp_path / "db"
    data.mkdir()
    r = subprocess.run([exe, str(data)], capture_output=True, text=True,
                       env={**os.environ, "ASAN_OPTIONS": "detect_leaks=0"})
    assert r.returncode == 0 and r.stdout == "ok\n", r.stdout + r.stderr
