"""The names pass reads the table of what the templates emit (cfuncs.FunctionTable), not
the emitted C: that holds only if every file-scope definition of the generated header,
source, verifier and harness goes through a `cfunc` or `cdecl` construct, and if what each
construct says it defines (its name, parameters, `also`, `macros`, members) is what its text
defines. Checked here for every committed spec by reading the C back (cnames.definitions,
the reader that makes the compiler's lists): outside the constructs nothing is defined, and
inside each one exactly what its entry says."""
import os
import re
from pathlib import Path

import pytest

from p2gen import cnames
from p2gen.check import check
from p2gen.harness import harness_rendering
from p2gen.parser import parse_file
from p2gen.plan import plan
from p2gen.render import Renderer, verifier_rendering

ROOT = Path(__file__).resolve().parents[2]
# every layer has a minimal spec there; the paper's specs besides
SPECS = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "type_equations").glob("*.p2"))
SPECS += sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests/golden/layers").glob("*.p2"))
SPECS += ["bench/social/feed.p2"]       # ordered roles: the merge's heap of walks
_ENTRY = re.compile("\x03[0-9]+\x04.*?\x03/\x04", re.S)


def _undeclared(entries) -> list:
    """(entry, what its text defines that its entry does not say, what it says its text does
    not define) for each entry of a table where the two differ."""
    out = []
    for e in entries:
        # an anonymous struct's members: the reader names no owner, the table its typedef's
        said = {(d.ns, d.name) for d in e.defines}
        read = {(d.ns.replace("member:<anonymous>", f"member:{e.name}"), d.name)
                for d in cnames.definitions(e.text)}
        if said != read:
            out.append((e.section, e.name, sorted(read - said), sorted(said - read)))
    return out


def _outside(marked: str) -> list:
    """What the text outside the table's entries defines."""
    rest = _ENTRY.sub("", marked).replace("\x03$\x04", "")
    return sorted({(d.ns, d.name) for d in cnames.definitions(rest)})


@pytest.mark.parametrize("rel", SPECS)
def test_every_definition_goes_through_the_table(rel):
    checked = plan(check(parse_file(str(ROOT / rel)), None))
    r = Renderer(checked, os.path.basename(rel))
    r.render()
    header, source = r.marked
    verifier, harness = verifier_rendering(checked, "x.p2"), harness_rendering(checked)
    assert _outside(header) == []
    assert _outside(source) == []
    assert _outside(verifier[0]) == []
    assert _outside(harness[0]) == []
    # and what each entry says it defines is what its text defines
    for table in (r.table, verifier[1], harness[1], r.recover_rendering()[1]):
        assert _undeclared(table.entries) == []
    # and the entries say what they define: the handle's struct, its typedef, a function
    defined = {(d.ns, d.name) for part in r.emitted_entries for e in part for d in e.defines}
    p = checked.prefix
    assert {("tag", f"{p}_db"), ("ordinary", f"{p}_db"), ("ordinary", f"{p}_open"),
            ("member:" + f"{p}_db", "err")} <= defined


def test_a_struct_definition_defines_a_tag_not_an_ordinary_name():
    assert cnames.definitions("struct s { int a; };") == (
        cnames.Definition("tag", "s"), cnames.Definition("member:s", "a"))
    names = {d.name for d in cnames.definitions('static const int t[] = { f(1) };')}
    assert names == {"t"}          # a call in an initializer makes no prototype


def test_the_runtime_name_list_is_what_the_compiler_reads(cc):
    """generator/c_runtime.txt (what p2_runtime.h defines, which the names pass reads
    instead of the header) equals what the compiler makes of the header in each of its
    configurations; regenerate it with `python -m p2gen.cnames --runtime` (or
    scripts/amalgamate.sh) if this fails."""
    listed = {(d.ns, d.name) for d in cnames.runtime_definitions()}
    read = cnames.compiler_runtime_definitions(cc)
    assert sorted(read - listed) == [] and sorted(listed - read) == []
    # the kinds of name it holds: a tag and its members, a type, a function, an enum
    # constant, a macro
    assert {("tag", "p2_seg"), ("member:p2_seg", "base"), ("ordinary", "p2_seg"),
            ("ordinary", "p2_seg_open"), ("ordinary", "P2_OK"),
            ("macro", "P2_ERR_MSG_SIZE")} <= listed
