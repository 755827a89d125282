"""The persistent file's layout, as documented, against the code that writes it.

p2_runtime.h documents the header of a database file (and its root table entry) in
tables of offset, size and field; the structs that are written to disk live in
p2_runtime.c.  These tests read the tables out of the header, compile a small C program
against the runtime that prints offsetof / sizeof of every field they name, and compare:
a row with a wrong offset or size, a field that does not exist, a gap or an overlap
between rows, or a table that stops short of the struct's end fails.
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = ROOT / "runtime"

# A table starts at its column heading and ends at the first line that is not a row (or
# the continuation of one): "offset size field contents".
HEADING = re.compile(r"^ \*\s+offset\s+size\s+field\s+contents\s*$")
ROW = re.compile(r"^ \*\s+(\d+)\s+(\d+|\.)\s+(\S+)(?:\s|$)")
CONTINUATION = re.compile(r"^ \*\s{20,}\S")
# Each table is introduced, in the lines before its heading, by the struct it documents.
STRUCT = re.compile(r"`struct (\w+)`")


def layout_tables(header_text: str) -> dict[str, list[tuple[int, int | None, str]]]:
    """{struct name: [(offset, size or None for '.', field), ...]} for every table."""
    lines = header_text.splitlines()
    tables: dict[str, list] = {}
    for i, line in enumerate(lines):
        if not HEADING.match(line):
            continue
        intro = " ".join(lines[max(0, i - 4):i])
        structs = STRUCT.findall(intro)
        assert structs, f"layout table at line {i + 1} of p2_runtime.h names no `struct ...`"
        rows = []
        for row in lines[i + 1:]:
            m = ROW.match(row)
            if m:
                size = None if m.group(2) == "." else int(m.group(2))
                rows.append((int(m.group(1)), size, m.group(3)))
            elif not CONTINUATION.match(row):
                break
        assert rows, f"layout table at line {i + 1} of p2_runtime.h has no rows"
        tables[structs[-1]] = rows
    return tables


def measure(cc, tmp_path, tables) -> dict[str, dict[str, tuple[int, int]]]:
    """{struct: {field: (offsetof, sizeof)}, plus '' -> (0, sizeof the struct)}, from C."""
    prog = ['#include "p2_runtime.c"', "", "int main(void)", "{"]
    for struct, rows in tables.items():
        prog.append(f'    printf("{struct} . 0 %zu\\n", sizeof(struct {struct}));')
        for _, size, field in rows:
            if size is None:
                continue
            prog.append(f'    printf("{struct} {field} %zu %zu\\n", offsetof(struct {struct}, {field}), '
                        f"sizeof(((struct {struct} *)0)->{field}));")
    prog += ["    return 0;", "}", ""]
    src = tmp_path / "layout.c"
    src.write_text("\n".join(prog))
    exe = tmp_path / "layout"
    res = subprocess.run([cc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-I", str(RUNTIME),
                          str(src), "-o", str(exe)], capture_output=True, text=True)
    assert res.returncode == 0, f"a field named in the layout table does not compile:\n{res.stderr}"
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    got: dict[str, dict[str, tuple[int, int]]] = {}
    for line in out.splitlines():
        struct, field, off, size = line.split()
        got.setdefault(struct, {})[field] = (int(off), int(size))
    return got


def check_table(struct, rows, measured) -> list[str]:
    """What is wrong with one table, given the compiler's offsets and sizes."""
    problems = []
    struct_size = measured["."][1]
    expect = 0
    for off, size, field in rows:
        if off != expect:
            problems.append(f"{struct}: row '{field}' at offset {off}, but the row before "
                            f"ends at {expect} (gap or overlap)")
        if size is None:           # the row after the struct: what follows it in the file
            if off != struct_size:
                problems.append(f"{struct}: '{field}' starts at {off}, but the struct is "
                                f"{struct_size} bytes")
            return problems
        real = measured[field]
        if (off, size) != real:
            problems.append(f"{struct}: row '{field}' says offset {off} size {size}; "
                            f"the code has offset {real[0]} size {real[1]}")
        expect = off + size
    if expect != struct_size:
        problems.append(f"{struct}: the rows end at {expect}, the struct is {struct_size} bytes")
    return problems


@pytest.fixture(scope="module")
def tables():
    return layout_tables((RUNTIME / "p2_runtime.h").read_text())


@pytest.fixture(scope="module")
def measured(cc, tables, tmp_path_factory):
    return measure(cc, tmp_path_factory.mktemp("layout"), tables)


def test_layout_tables_match_the_structs(tables, measured):
    assert set(tables) == {"p2_seg_header", "p2_seg_root_entry"}, sorted(tables)
    problems = [p for struct, rows in tables.items()
                for p in check_table(struct, rows, measured[struct])]
    assert not problems, "p2_runtime.h's file layout disagrees with p2_runtime.c:\n" + \
        "\n".join(problems)


def test_a_wrong_row_is_found(tables, measured):
    """The check itself: each kind of wrong row is reported."""
    measured = measured["p2_seg_header"]
    rows = tables["p2_seg_header"]
    i = next(k for k, r in enumerate(rows) if r[2] == "data_seq")
    off, size, field = rows[i]
    wrong_size = rows[:i] + [(off, 4, field)] + rows[i + 1:]
    assert any("says offset 144 size 4" in p for p in check_table("h", wrong_size, measured))
    dropped = rows[:i] + rows[i + 1:]
    assert any("gap or overlap" in p for p in check_table("h", dropped, measured))
    swapped = rows[:i] + [(off, size, "zero0")] + rows[i + 1:]
    assert any("row 'zero0'" in p for p in check_table("h", swapped, measured))
    assert any("rows end at" in p for p in check_table("h", rows[:-2], measured))


SECTION_LIST = re.compile(r"^ \*\s+(\d+(?:\.\d+)?[a-z]?)\.?\s+\S")
SECTION_HEAD = re.compile(r"^/\* [-=]{60,}\n \* (\d+(?:\.\d+)?[a-z]?)\.? ", re.M)


def test_runtime_sections_follow_the_head_comment():
    """p2_runtime.c lists its sections in its head comment; the section headings in the
    file are those, in that order."""
    text = (RUNTIME / "p2_runtime.c").read_text()
    head = text[:text.index("*/")]
    listed = [m.group(1) for line in head.splitlines() if (m := SECTION_LIST.match(line))]
    headed = SECTION_HEAD.findall(text)
    assert len(listed) > 5, listed
    assert headed == listed, (listed, headed)
    assert {"3a", "4.4a", "5.5a", "5.5b"} <= set(listed), listed


def test_runtime_is_the_amalgamation_of_its_parts():
    """runtime/p2_runtime.c, what users get, is runtime/src/*.c concatenated in the order
    p2gen.toolchain.RUNTIME_PARTS gives (bash scripts/amalgamate.sh rebuilds it), and every
    file in runtime/src/ is one of the parts."""
    from p2gen.toolchain import RUNTIME_PARTS, amalgamate
    src = RUNTIME / "src"
    assert sorted(p.name for p in src.glob("*.c")) == sorted(RUNTIME_PARTS)
    assert (RUNTIME / "p2_runtime.c").read_text() == amalgamate(str(src)), \
        "runtime/p2_runtime.c is not runtime/src/ concatenated: run bash scripts/amalgamate.sh"
    # each part opens with its head comment (after the head itself)
    for name in RUNTIME_PARTS[1:]:
        assert (src / name).read_text().startswith("/* "), name


def test_table_parser_sees_every_row():
    """Every line of a table is a row or the continuation of one (a line the parser would
    skip, e.g. a row with a typo in its offset, ends the table early and is caught here)."""
    lines = (RUNTIME / "p2_runtime.h").read_text().splitlines()
    for i, line in enumerate(lines):
        if HEADING.match(line):
            j = i + 1
            while ROW.match(lines[j]) or CONTINUATION.match(lines[j]):
                j += 1
            assert lines[j].strip() == "*", f"line {j + 1}: table ends at {lines[j]!r}"
