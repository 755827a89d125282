"""`p2gen tune`, step 4: the winner written back into the spec, with its evidence.

The container's declaration (from its `container` keyword to its `;`, the parser's
position: tune_space._decl_span) is replaced by a comment block of evidence and the new
declaration, one line; every other byte of the file stays as it was. The block keeps the
declaration as it was before tuning (`// | ` lines), so that `original_source` gives back
the text the profile was made with (its SHA-256 is in the profile): a tuned spec still
takes its profile (`--check` in CI), and tuning it again replaces the block.

    // p2gen tune begin: container accounts (...)
    //   ... evidence ...
    // was:
    // | container accounts of account = top2ds_qualify[array[transient]];
    // p2gen tune end
    container accounts of account = top2ds_qualify[hash(key = id, ...)[array[transient]]];

A pick that changes other lines (the file's options in the other containers of its file, a
relationship's layer: tune_space.Edit) changes each in place, marked so that
`original_source` can undo it: `/*p2gen tune:*/NEW/*:was OLD*/` (one line each).
"""
from __future__ import annotations

import datetime
import difflib
import os
import re

from .check import check
from .errors import P2Error
from .parser import parse
from .tune_space import _decl_span

BEGIN, END, WAS = "// p2gen tune begin", "// p2gen tune end", "// | "
EDIT_OPEN, EDIT_WAS, EDIT_CLOSE = "/*p2gen tune:*/", "/*:was ", "*/"
EDITED = re.compile(re.escape(EDIT_OPEN) + r"[^\n]*?" + re.escape(EDIT_WAS) + r"([^\n]*?)\*/")
# a block and the one-line declaration p2gen wrote after it
# (up to its `;`, a `;` in a quoted file name skipped)
BLOCK = re.compile(r"^([ \t]*)// p2gen tune begin[^\n]*\n(?:\1//[^\n]*\n)*?\1// p2gen tune end\n"
                   r"\1container \w+ of \w+ = (?:\"(?:[^\"\\\n]|\\.)*\"|[^\";\n])*;", re.M)


def _was_lines(block: str) -> list:
    out = []
    for line in block.split("\n"):
        s = line.lstrip(" \t")
        if s.startswith(WAS):
            out.append(s[len(WAS):])
        elif s == WAS.rstrip():
            out.append("")
    return out


def original_source(source: str) -> str:
    """The spec's text as it was before any tuning: each block and the declaration after
    it replaced by the declaration the block kept."""
    source = EDITED.sub(lambda m: m.group(1), source)
    return BLOCK.sub(lambda m: m.group(1) + "\n".join(_was_lines(m.group(0))), source)


def _marked_edits(text: str, path: str, container: str, stack) -> list:
    """(start, end, new) of each edit of `stack` beyond the container's declaration, new
    marked so that original_source undoes it."""
    from .tune_space import Space
    return [(e.start, e.end, EDIT_OPEN + e.new + EDIT_WAS + e.old + EDIT_CLOSE)
            for e in Space(text, container, path).edits(stack)]


def machine() -> str:
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    return f"{model}, {os.cpu_count()} cores, {date}"


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.3f}"


def evidence(o, reps: int, mach: str) -> list:
    """The evidence for outcome `o` (tune_run.Outcome), as lines (without `// `)."""
    pick, cands = o.pick, o.candidates
    others = sorted((r for r in o.measured if r is not pick), key=lambda r: r.median)
    runner = others[0] if others else None
    lines = [f"picked by measurement: {len(o.measured)} equations x {reps} runs in separate "
             f"processes, random order; n = {o.n:,} (the profile's largest count)",
             f"workload: {o.workload}",
             "cost = the workload's count x the median ns per operation:",
             f"  {'operation':<18}{'count':>12}{'pick ns':>11}{'pick ms':>11}"
             + (f"{'next ns':>11}{'next ms':>11}" if runner else "")]
    decided, gap = None, 0.0
    for op, count in o.counts.items():
        p_ns = pick.ns.get(op, 0.0)
        row = f"  {op:<18}{count:>12,}{p_ns:>11.1f}{_ms(count * p_ns):>11}"
        if runner:
            r_ns = runner.ns.get(op, 0.0)
            row += f"{r_ns:>11.1f}{_ms(count * r_ns):>11}"
            if count * (r_ns - p_ns) > gap:
                decided, gap = op, count * (r_ns - p_ns)
        lines.append(row)
    if runner:
        lines.append(f"decided by {decided or 'none'}: the pick saves {_ms(gap)} ms on it; "
                     f"runner-up: {cands[runner.index].label}")
    if cands[pick.index].edits:
        lines.append(f"the pick also sets: {cands[pick.index].edits} (marked in place)")
    if o.cpu.get(pick.index) is not None and o.cpu.get(0) is not None:
        lines.append(f"CPU a run (median, the command's processes): pick "
                     f"{_ms(o.cpu[pick.index])} ms, the spec's own {_ms(o.cpu[0])} ms")
    pred = sorted(range(len(cands)), key=lambda i: cands[i].cost)
    meas = [r.index for r in sorted(o.measured, key=lambda r: r.median)]
    lines.append("ranking (median ms; predicted rank by the planner's costs, cache-line reads):")
    for rank, i in enumerate(meas, 1):
        r = o.by_index(i)
        own = " (the spec's own)" if i == 0 else ""
        lines.append(f"  {rank}. {_ms(r.median)} ms, predicted {pred.index(i) + 1} "
                     f"({cands[i].cost:,.0f}): {cands[i].label}{own}")
    ties = ", ".join(f"#{meas.index(r.index) + 1}" for r in o.ties) or "none"
    lines.append(f"noise band: {o.band:.1%} (spread across processes); ties with the pick: "
                 f"{ties}")
    for eq, why in o.refused:
        lines.append(f"refused: {eq}: {why}")
    lines += [f"note: {n}" for n in o.notes]
    lines.append(f"machine: {mach}")
    return lines


def block(o, reps: int, mach: str, was: str, indent: str = "") -> str:
    body = [f"{BEGIN}: container {o.container}"] + [f"//   {l}".rstrip() for l in
                                                       evidence(o, reps, mach)]
    body.append("// was:")
    body += [WAS + l if l else WAS.rstrip() for l in was.split("\n")]   # as written
    body.append(END)
    return "".join(indent + l + "\n" for l in body)


def rewrite(source: str, path: str, outcomes: list, reps: int, mach: str = "") -> str:
    """The spec's text with each outcome's pick written back (outcomes whose pick is the
    spec's own equation leave the text as it is)."""
    mach = mach or machine()
    text = source
    for o in outcomes:
        if o.pick.index == 0:
            continue
        cand = o.candidates[o.pick.index]
        eq = cand.equation
        edits = _marked_edits(text, path, o.container, cand.stack) if cand.edits else []
        checked = check(parse(text, path))
        info = checked.container(o.container)
        start, end = _decl_span(text, info.decl)
        line_start = text.rfind("\n", 0, start) + 1
        indent = text[line_start:start]
        if indent.strip():
            raise P2Error(f"{path}: the declaration of container {o.container} does not start "
                          f"its line; put it on a line of its own to have it tuned")
        m = next((m for m in BLOCK.finditer(text) if m.end() == end), None)
        if m is not None:           # tuned before: keep what the block kept
            was = "\n".join(_was_lines(m.group(0)))
            line_start = m.start()
        else:
            was = text[start:end]
        new = (block(o, reps, mach, was, indent) + indent
               + f"container {o.container} of {info.record.name} = {eq};")
        # the declaration and the edits (never inside it) in one pass, from the end
        for a, b, t in sorted(edits + [(line_start, end, new)], key=lambda e: -e[0]):
            text = text[:a] + t + text[b:]
    return text


def unified_diff(old: str, new: str, path: str) -> str:
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                        f"a/{path}", f"b/{path}"))
