"""The CLI contract (exit codes, stderr), every example spec building warning-free, and
golden files that pin the generated C byte for byte: per layer of the registry the
sections it writes for a minimal spec (tests/golden/layers/), per pipeline feature the
header and the rest of the source (tests/golden/pipeline/), and per class of spec error
what `p2gen check` prints (tests/golden/errors/).

Regenerate the golden files after an intended change with:
    P2GEN_UPDATE_GOLDEN=1 python -m pytest tests/compiler/test_cli_and_golden.py
"""
import difflib
import glob
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from p2gen.build import generate
from p2gen.cli import main
from p2gen.layers import LAYERS
from speccover import covering

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = sorted(glob.glob(os.path.join(ROOT, "type_equations", "**", "*.p2"), recursive=True))
GOLDEN = os.path.join(ROOT, "tests", "golden")


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
    for layer in LAYERS.values():
        assert layer.signature() in r.output
        for p in layer.params:
            assert f"param {p.describe()}" in r.output
    for sig in ("transient: mem", "journal: mem[mem]", "array: ds[mem]", "hash: ds[ds]",
                "top2ds: top[ds]", "qualify: top[top]", "ilist: rel"):
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


@pytest.mark.parametrize("spec", covering(EXAMPLES), ids=lambda p: os.path.relpath(p, ROOT))
def test_every_example_builds_warning_free(spec, tmp_path):
    """`p2gen build` of the examples, -Werror: a covering subset (tests/speccover.py), all of
    them with P2GEN_FULL=1. The benchmarks' variants left out are built by the bench tests
    as users build them, with -Werror too."""
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


@pytest.mark.parametrize("name", ["paper.p2", "oo7/hash_ilist_journal.p2"])
def test_every_section_has_a_head_and_an_end_fence(name, tmp_path):
    """Each layer's section (containers' layers and relationships' layers) and each
    container's section is closed by an end fence naming it before any other section
    opens; the header's sections likewise."""
    import re
    gen = generate(os.path.join(ROOT, "type_equations", name), str(tmp_path))
    source, header = open(gen.source).read(), open(gen.header).read()
    heads = [(f"{layer}(key={key})" if key else layer, owner) for layer, owner, key in
             re.findall(r"^ \* layer (\w+) \(.*\) of (\w+)(?::.*\bkey=(\w+))?", source, re.M)]
    heads += [(layer, "relationship " + rel) for rel, layer in
              re.findall(r"^ \* relationship (\w+) .*\n \*   layer (\w+) \(", source, re.M)]
    assert len(heads) >= 5
    for layer, owner in heads:
        end = f"/* end of layer {layer} of {owner} "
        assert source.count(end) == 1, end
    # sections nest: no layer opens before the previous one ended
    events = re.findall(r"^(?: \* layer \w+ \(| \*   layer \w+ \(|/\* end of layer )", source, re.M)
    assert len(events) == 2 * len(heads)
    assert all(e.startswith(" * ") for e in events[::2])
    assert all(e.startswith("/* end") for e in events[1::2])
    for text in (source, header):
        for cname in re.findall(r"^ \* container (\w+) of \w+$", text, re.M):
            assert text.count(f"/* end of container {cname} ") == 1, cname


@pytest.mark.parametrize("name", ["paper.p2", "inventory.p2"])
def test_cursor_comments_keep_their_line_breaks(name, tmp_path):
    """A cursor's comment in the header: its declaration on one line, the plan's access
    path on the next (a template block at the end of the first line must not swallow the
    line break)."""
    import re
    gen = generate(os.path.join(ROOT, "type_equations", name), str(tmp_path))
    header = open(gen.header).read()
    heads = re.findall(r"^/\* cursor (?!\w+_all:).*\n.*", header, re.M)
    assert heads
    for two in heads:
        first, second = two.split("\n")
        assert "path:" not in first, first
        assert second.startswith(" *   path: "), two


# --- goldens: per layer and per error class ---------------------------------------------
# The generated C is headed section by section by the layer that wrote it. Each layer of
# the registry has a minimal spec using it (tests/golden/layers/<layer>.p2) and a golden of
# the sections that layer wrote there (<layer>.c): a template change shows up in the golden
# of its own layer only, small enough to read in a failing diff.
_RULE = re.compile(r"/\* [-=#]{20,}$")              # first line of a section's banner
_END = re.compile(r"/\* end of .*\*/$")             # a section's end fence
_LAYER_HEAD = re.compile(r" \*\s+layer (\w+) \(")   # " * layer hash (hash: ds[ds]) of c"


def layer_sections(source: str, layer: str) -> list:
    """The sections of generated C written by `layer`, as (first line, end line) spans: each
    from its banner (a rule line, comment lines, a rule line; one naming `layer NAME (`) to
    its end fence (`/* end of ... */`, included) or, where sections have no end fence, to
    the line before the next banner (trailing blank lines dropped)."""
    lines = source.split("\n")
    out, i = [], 0
    while i < len(lines):
        if not _RULE.match(lines[i]):
            i += 1
            continue
        j = i + 1                                  # the banner runs to its closing rule
        while j < len(lines) and not lines[j].endswith(" */"):
            j += 1
        heads = [_LAYER_HEAD.match(x) for x in lines[i + 1:j]]
        if not any(h and h.group(1) == layer for h in heads):
            i = j + 1
            continue
        k = j + 1
        while k < len(lines) and not _RULE.match(lines[k]) and not _END.match(lines[k]):
            k += 1
        end = k + 1 if k < len(lines) and _END.match(lines[k]) else k   # fence included
        while end > i and not lines[end - 1].strip():
            end -= 1
        out.append((i, end))
        i = max(k, end)
    return out


def layer_text(source: str, layer: str) -> str:
    """The golden of a layer: its sections, one blank line apart."""
    lines = source.split("\n")
    return "".join(("\n" if n else "") + "\n".join(lines[a:b]) + "\n"
                   for n, (a, b) in enumerate(layer_sections(source, layer)))


def pipeline_text(source: str) -> str:
    """What the pipeline's own templates wrote: the source with every layer's sections
    replaced by a line naming the layer (their goldens are the layers' own)."""
    lines = source.split("\n")
    spans = sorted((a, b, name) for name in LAYERS for a, b in layer_sections(source, name))
    out, at = [], 0
    for a, b, name in spans:
        out += lines[at:a] + [f"/* [layer {name}: see tests/golden/layers/{name}.c] */"]
        at = b
    return "\n".join(out + lines[at:])


def check_golden(golden: Path, got: str) -> None:
    """Compare `got` with the golden file (rewrite it under P2GEN_UPDATE_GOLDEN=1); on a
    difference, fail with the unified diff."""
    rel = golden.relative_to(ROOT)
    if os.environ.get("P2GEN_UPDATE_GOLDEN"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(got)
    assert golden.exists(), f"missing golden file {rel}; create it with P2GEN_UPDATE_GOLDEN=1"
    want = golden.read_text()
    if got != want:
        diff = "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True),
                                            f"{rel} (golden)", f"{rel} (generated now)"))
        pytest.fail(f"output differs from {rel}; if the change is intended, regenerate with "
                    f"P2GEN_UPDATE_GOLDEN=1 python -m pytest tests/compiler/{Path(__file__).name}\n{diff}",
                    pytrace=False)


LAYER_GOLDEN = Path(GOLDEN) / "layers"


def test_layer_sections_extract_to_the_next_banner_or_end_fence():
    banner = ("/* " + "-" * 74, " * layer {} ({}: x) of c", " * " + "-" * 72 + " */")
    def section(name, body):
        return "\n".join(banner).format(name, name) + "\n" + body + "\n"
    src = (section("a", "int a1;\n\n") + section("b", "int b;") + "/* end of layer b of c -- */\n"
           + "int outside;\n" + section("a", "int a2;") + "/* " + "=" * 74 + "\n")
    assert layer_text(src, "a") == (section("a", "int a1;") + "\n" + section("a", "int a2;"))
    assert layer_text(src, "b") == section("b", "int b;\n/* end of layer b of c -- */")
    assert layer_text(src, "c") == ""


@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_layer_golden(layer, tmp_path):
    """Every registered layer has a minimal spec using it and a golden of what it wrote."""
    spec = LAYER_GOLDEN / f"{layer}.p2"
    assert spec.exists(), (
        f"layer '{layer}' has no golden: write a minimal spec that uses it as "
        f"{spec.relative_to(ROOT)} (see the others there), then create its golden with "
        f"P2GEN_UPDATE_GOLDEN=1 python -m pytest tests/compiler/test_cli_and_golden.py -k '{layer}' "
        f"and read it")
    gen = generate(str(spec), str(tmp_path))
    got = layer_text(open(gen.source).read(), layer)
    assert got, f"{spec.relative_to(ROOT)} generates no section of layer '{layer}'"
    check_golden(LAYER_GOLDEN / f"{layer}.c", got)


PIPELINE_GOLDEN = Path(GOLDEN) / "pipeline"


@pytest.mark.parametrize("name", sorted(p.stem for p in PIPELINE_GOLDEN.glob("*.p2")))
def test_pipeline_golden(name, tmp_path):
    """The header and what generator/templates write into the source (layouts, public API,
    relationships' API, texts, open/close, integrity check, transactions) for small specs
    that use every feature; the layers' sections are left to their own goldens."""
    gen = generate(str(PIPELINE_GOLDEN / f"{name}.p2"), str(tmp_path))
    check_golden(PIPELINE_GOLDEN / f"{name}.h", open(gen.header).read())
    check_golden(PIPELINE_GOLDEN / f"{name}.c", pipeline_text(open(gen.source).read()))


# The spec errors are part of the interface: per class of error, a handful of bad specs
# (tests/golden/errors/<class>/*.p2) and what `p2gen check` prints for them, message, line,
# column and caret line, exactly (tests/golden/errors/<class>.txt).
ERROR_GOLDEN = Path(GOLDEN) / "errors"
ERROR_CLASSES = ["syntax", "name", "type", "realm", "layer_param", "persistence"]


@pytest.mark.parametrize("cls", ERROR_CLASSES)
def test_error_golden(cls, monkeypatch):
    monkeypatch.chdir(ERROR_GOLDEN)      # messages name the spec as given: <class>/<case>.p2
    cases = sorted(glob.glob(f"{cls}/*.p2"))
    assert len(cases) >= 3, f"error class '{cls}' needs a handful of bad specs in {ERROR_GOLDEN}/{cls}"
    out = []
    for case in cases:
        r = CliRunner().invoke(main, ["check", case])
        assert r.exit_code == 1 and r.stdout == "", f"{case}: exit {r.exit_code}\n{r.output}"
        assert "Traceback" not in r.stderr, r.stderr
        out.append(f"$ p2gen check {case}\n{r.stderr}")
    check_golden(ERROR_GOLDEN / f"{cls}.txt", "\n".join(out))


def test_error_golden_classes_are_listed():
    dirs = sorted(p.name for p in ERROR_GOLDEN.iterdir() if p.is_dir())
    assert dirs == sorted(ERROR_CLASSES), f"add the class to ERROR_CLASSES or remove its folder: {dirs}"


def test_layer_goldens_belong_to_registered_layers():
    stale = sorted(p.stem for p in LAYER_GOLDEN.glob("*.p2") if p.stem not in LAYERS)
    assert not stale, f"goldens of layers not in the registry: {stale}; delete them"


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
    # the _next_rec walk after the deleting walk meets what that walk left: no odd id
    for run in (first.stdout, second.stdout):
        seen, deleted = map(int, re.search(r"min=2900\): (\d+) seen, (\d+) deleted", run).groups())
        assert deleted > 0
        assert f"min=2900) again: {seen - deleted} seen, 0 odd" in run, run


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
