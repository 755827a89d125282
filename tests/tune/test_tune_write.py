"""`p2gen tune`'s write-back (tune_write), without building anything: a declaration over
several lines with a `with` clause, indented, between comments, is replaced by the evidence
block and the new declaration; every other byte stays; `original_source` gives back the
profiled text; tuning again replaces the block and keeps the first declaration; a spec
whose own equation is within the noise band is left as it is; the evidence names the pick,
the runner-up, the deciding operation, the predicted rank and the machine."""
from __future__ import annotations

from p2gen.tune_measure import Result
from p2gen.tune_rank import Candidate
from p2gen.tune_run import Outcome
from p2gen.tune_space import Stack
from p2gen.tune_write import BEGIN, END, evidence, original_source, rewrite

HEAD = """// accounts, the TPC-B way
record account { id: u32; balance: i64; }
record hist { aid: u32; }

  /* indented, over three lines */
  """
DECL = """container accounts of account
      = top2ds_qualify[avl[array[transient]]]
      with avl(key = id),   array(capacity = 8);"""
TAIL = """   // after the declaration
find accounts by id;
container history of hist = top2ds_qualify[array[transient]];
"""
SPEC = HEAD + DECL + TAIL
HASH = "top2ds_qualify[hash(key = id, buckets = 16)[array(capacity = 16)[transient]]]"


def outcome(pick_ms: float, own_ms: float = 10.0, eq: str = HASH) -> Outcome:
    own = Candidate(Stack((), "", None), equation="top2ds_qualify[avl[array[transient]]] ...",
                    cost=900.0, current=True)
    new = Candidate(Stack((), "hash", None), equation=eq, cost=30.0)
    res = [Result(0, {"insert": 100.0, "find_id": 400.0}, [own_ms * 1e6] * 3, own_ms * 1e6, 0.02),
           Result(1, {"insert": 110.0, "find_id": 20.0}, [pick_ms * 1e6] * 3, pick_ms * 1e6, 0.04)]
    return Outcome("accounts", [own, new], res, {"insert": 1000, "find_id": 20000}, 0.05, 1000)


def test_the_declaration_is_replaced_and_everything_else_kept():
    text = rewrite(SPEC, "bank.p2", [outcome(1.0)], reps=3, mach="a CPU, 2 cores, today")
    start = text.index(BEGIN)
    assert text[:start] == HEAD          # up to the indentation the block takes on
    decl_line = "  container accounts of account = " + HASH + ";"
    assert text.endswith(decl_line + TAIL)
    block = text[start:text.index(END) + len(END)]
    assert all(line.startswith("  //") for line in block.splitlines()[1:])   # indented as it was
    assert original_source(text) == SPEC
    # tuned again: one block, still keeping the first declaration
    again = rewrite(text, "bank.p2", [outcome(1.0, own_ms=3.0, eq=HASH.replace("16", "32"))],
                    reps=3, mach="m")
    assert again.count(BEGIN) == 1 and "buckets = 32" in again
    assert original_source(again) == SPEC


def test_a_tie_with_the_spec_s_own_equation_keeps_the_file():
    # the best is 4% faster: inside the 5% noise band
    assert rewrite(SPEC, "bank.p2", [outcome(9.6)], reps=3, mach="m") == SPEC


def test_the_evidence():
    lines = evidence(outcome(1.0), reps=3, mach="a CPU, 2 cores, 2026-12-07")
    text = "\n".join(lines)
    assert "2 equations x 3 runs" in text
    assert "find_id" in text and "decided by find_id" in text
    # count x ns: 20,000 finds x 20 ns = 0.4 ms for the pick, 8 ms for the runner-up
    row = next(l for l in lines if l.strip().startswith("find_id"))
    assert row.split()[1:] == ["20,000", "20.0", "0.400", "400.0", "8.000"]
    assert f"1. 1.000 ms, predicted 1 (30): {HASH}" in text
    assert "2. 10.000 ms, predicted 2 (900)" in text and "(the spec's own)" in text
    assert "noise band: 5.0%" in text and "machine: a CPU, 2 cores, 2026-12-07" in text


FILE_SPEC = """record part { id: u32; x: i32; }
record comp { id: u32; }
container parts of part
    = top2ds_qualify[hash[array[persistent]]]
    with hash(key = id), persistent(file = "r.db");   // the parts
container comps of comp = top2ds_qualify[array[persistent(file = "r.db", verify_open = false)]];
relationship has one comps.parts to many parts.owner = ilist;   // kept as it was
find parts by id;
"""


def test_a_pick_with_edits_beyond_its_declaration_is_undone_by_original_source():
    from p2gen.check import check
    from p2gen.parser import parse
    from p2gen.tune_space import Space
    space = Space(FILE_SPEC, "parts", "r.p2")
    st = next(s for s in space.enumerate()
              if s.rels == (("has", "refarray"),) and s.file_opts == (("links", "offset32"),
                                                                       ("alloc", "exact")))
    eq = space.equation(st)
    own = Candidate(Stack((), "", None), equation="top2ds_qualify[hash[array[persistent]]]",
                    cost=900.0, current=True)
    new = Candidate(st, equation=eq, cost=30.0, edits=space.describe_edits(st))
    res = [Result(0, {"find_id": 400.0}, [1e7] * 3, 1e7, 0.02),
           Result(1, {"find_id": 20.0}, [1e6] * 3, 1e6, 0.04)]
    o = Outcome("parts", [own, new], res, {"find_id": 20000}, 0.05, 1000)
    text = rewrite(FILE_SPEC, "r.p2", [o], reps=3, mach="m")
    # each edit marked in place; the comments and the rest of each line kept
    assert ('relationship has one comps.parts to many parts.owner =/*p2gen tune:*/ refarray'
            '/*:was  ilist*/;   // kept as it was') in text
    assert ('persistent(/*p2gen tune:*/file = "r.db", verify_open = false, links = offset32, '
            'alloc = exact/*:was file = "r.db", verify_open = false*/)]];') in text
    assert "the pick also sets: file r.db: links = offset32, alloc = exact; relationship " \
           "has = refarray (marked in place)" in text
    # the written spec is the candidate measured (the checker's reading of both is one)
    measured = check(parse(space.spec_text(eq, st), "r.p2"))
    written = check(parse(text, "r.p2"))
    assert [c.equation_text() for c in written.containers] == \
        [c.equation_text() for c in measured.containers]
    assert [r.layer.name for r in written.relationships] == ["refarray"]
    assert {c.mem.params["links"] for c in written.containers} == {"offset32"}
    assert original_source(text) == FILE_SPEC
