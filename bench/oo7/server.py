"""`p2gen bench oo7 --server`: OO7 over a page server and an object server, as QuickStore
ran it over the EXODUS page server (White and DeWitt 1994), beside the same equation on a
local file.

The equation is the manifest's HASH/ILIST (type_equations/oo7/hash_ilist_persistent.p2).
Its server variants are generated from it at run time (server_specs): the memory layer
`persistent(file = ...)` replaced by `pageserver(server = "nbd://127.0.0.1:PORT/oo7",
pages = N)` (PAGESERVER), and by `objserver(server = "redis://127.0.0.1:PORT/0", objects =
35·N)` under `malloc` storage (OBJSERVER: the checker refuses array storage over an
object server), the ports those of the nbdkit (memory plugin) and redis-server started
here (p2gen.bench.engines) and stopped by their pids. Each is built as users build theirs
(lib<prefix>.a, the driver -O2 with <PREFIX>_INLINE) with bench/oo7/oo7_p2.cc and linked
with oo7_server.cc's protocol into build_dir/oo7_server.

The binary builds each system's database, closes it, and per operation (T1, T6, Q1)
opens it again: cold is the first run after that open (an empty client buffer; the local
file dropped from the page cache), hot the same operation at once again; per run its
time, answer and the server's counters (<prefix>_server_stats: requests by kind, bytes
each way, misses, hits, evictions). Answers must agree with the local variant's.
Writes oo7_server.json (every line the binary printed, per process) and oo7_server.md.
"""
from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import tempfile
from pathlib import Path
from typing import Callable, Optional

from ..common import (checked_sources, command_outputs, compile_and_link, driver_cxxflags,
                      generate_variants, image_lines, plot_files, say_report, source_steps,
                      users_build_steps, write_report)
from ..engines import NBD_MISSING, REDIS_MISSING, NbdServer, RedisServer
from ...errors import EnvError
from .run import SOURCE_DIR, SPEC_DIR, P2_DRIVER, _check_size

BASE_SPEC = "hash_ilist_persistent.p2"
OPS = ("T1", "T6", "Q1")
# (name, mem, rank): LOCAL is the manifest's spec as it is
SYSTEMS = (("LOCAL", "persistent", 1), ("PAGESERVER", "pageserver", 2), ("OBJSERVER", "objserver", 3))
DRIVER_SOURCES = ("oo7.h", "oo7_common.cc", "oo7_server.cc", P2_DRIVER)
PAGES = 50                 # client buffer in pages; the object cache holds 35 records a page
NBD_EXPORT_BYTES = 256 << 20
COUNTERS = ("reads", "writes", "bytes_read", "bytes_written", "misses", "hits", "evictions")
# the memory layer of the base spec, in every container
LOCAL_MEM = re.compile(r'persistent\(file = "[^"]*"(?P<rest>[^)]*)\)')


def server_specs(out: Path, nbd_uri: str, redis_uri: str, systems, pages: int = PAGES) -> list:
    """The base spec and its server twins, the servers' URIs written in:
    [(name, mem, spec path, prefix, rank)]. The URIs come from the engines started here;
    the checker still checks them (layers/pageserver.py uri_problem)."""
    text = (SPEC_DIR / BASE_SPEC).read_text()
    if not LOCAL_MEM.search(text):
        raise EnvError(f"{SPEC_DIR / BASE_SPEC}: no persistent(file = ...) layer to replace")
    out.mkdir(parents=True, exist_ok=True)
    twins = {
        "persistent": text,
        "pageserver": LOCAL_MEM.sub(lambda m: f'pageserver(server = "{nbd_uri}", pages = {pages}'
                                    f'{m.group("rest")})', text).replace("[persistent]", "[pageserver]"),
        # an object server stores records one by one: malloc storage, not an array's block
        "objserver": LOCAL_MEM.sub(lambda m: f'objserver(server = "{redis_uri}", objects = {35 * pages}'
                                   f'{m.group("rest")})', text)
                     .replace("array[persistent]", "malloc[objserver]"),
    }
    specs = []
    for name, mem, rank in SYSTEMS:
        if name not in systems:
            continue
        p = out / f"oo7_hash_ilist_{mem}.p2"
        if not p.exists() or p.read_text() != twins[mem]:
            p.write_text(twins[mem])
        specs.append((name, mem, str(p), f"oo7_server_{mem}", rank))
    return specs


class _V:
    def __init__(self, name, spec, prefix):
        self.name, self.spec, self.prefix = name, spec, prefix


def build(build_dir: str, nbd_uri: str, redis_uri: str, *, systems, pages: int = PAGES,
          cc: str = "cc", cxx: str = "c++", opt: str = "-O2", jobs: Optional[int] = None,
          say: Callable[[str], None] = lambda m: None) -> Path:
    """Generate the systems' specs, build each as users do with oo7_p2.cc, link
    build_dir/oo7_server with oo7_common.cc and oo7_server.cc."""
    src = checked_sources(SOURCE_DIR, DRIVER_SOURCES, "oo7")
    specs = server_specs(Path(build_dir).resolve() / "server_specs", nbd_uri, redis_uri, systems, pages)
    bdir, gen_dir, obj_dir, gens = generate_variants(build_dir, [_V(n, s, p) for n, _, s, p, _ in specs], say)
    cxxflags = driver_cxxflags(opt)
    steps = []
    for (name, mem, _, prefix, rank), (_, g) in zip(specs, gens):
        header = Path(g.header).read_text()
        server = mem != "persistent"
        steps.append((prefix, g, [
            f"-DP2_VARIANT={prefix}", f'-DP2_HEADER="{prefix}.h"', f'-DP2_NAME="{name}"',
            f'-DP2_MEM="{mem}"', f"-DP2_PERSISTENT={0 if server else 1}", f"-DP2_RANK={rank}",
            f"-DP2_SERVER={int(server)}", '-DP2_FILES="oo7.db"',
            f"-DP2_LOOKUP_ATOM_ID={int(f'{prefix}_atomic_parts_lookup_id(' in header)}"]))
    tasks, archives = users_build_steps(gen_dir, obj_dir, steps, cc=cc, cxx=cxx, cxxflags=cxxflags,
                                        driver=src / P2_DRIVER, driver_deps=[src / "oo7.h"],
                                        include_dirs=[src], opt=opt)
    tasks += source_steps(src, ("oo7_common.cc", "oo7_server.cc"), obj_dir, cxx=cxx, cxxflags=cxxflags,
                          deps=[src / "oo7.h"])
    return compile_and_link(bdir, "oo7_server", tasks, archives, ["-lpthread"], cxx=cxx, opt=opt,
                            lto=False, hint="see README: the server engines' client libraries",
                            jobs=jobs, say=say)


def engines_missing(systems) -> list:
    return [m for s, m in (("PAGESERVER", NBD_MISSING), ("OBJSERVER", REDIS_MISSING)) if s in systems and m]


def run_process(exe: Path, size: str, fanout: int, seed: int, ops, db_dir: str,
                hot_runs: int = 1) -> tuple[int, list, str]:
    """One process of the binary: (exit status, its JSON lines, stderr); the hot time the
    median of hot_runs runs."""
    proc = subprocess.run([str(exe), f"--size={size}", f"--fanout={fanout}", f"--seed={seed}",
                           f"--dir={db_dir}", "--ops=" + ",".join(ops), f"--hot={hot_runs}"],
                          capture_output=True, text=True, timeout=1800)
    rows = [json.loads(l) for l in proc.stdout.splitlines() if l.startswith("{")]
    return proc.returncode, rows, proc.stderr


def problems(processes: list) -> list:
    """What is wrong: a failed process or system, answers that differ from LOCAL's, server
    counters that do not add up (requests < misses, a hot run sending more than its cold)."""
    out = []
    for i, pr in enumerate(processes):
        if pr["rc"] != 0:
            out.append(f"process {i}: exit status {pr['rc']}: {pr['stderr'].strip()[-300:]}")
        answers = {}
        for r in pr["rows"]:
            if "error" in r:
                out.append(f"process {i}: {r['system']}: {r['error']}")
                continue
            answers.setdefault((r["op"], r["phase"]), {})[r["system"]] = r["count"]
        for key, per in sorted(answers.items()):
            if len(set(per.values())) > 1:
                out.append(f"process {i}: {key[0]} {key[1]}: the answers differ: {per}")
        by = {(r["system"], r["op"], r["phase"]): r.get("stats") for r in pr["rows"] if "error" not in r}
        for (system, op, phase), st in by.items():
            if not st:
                continue
            if st["reads"] + st["writes"] < st["misses"] and system == "PAGESERVER":
                out.append(f"process {i}: {system} {op} {phase}: fewer requests than misses: {st}")
            cold = by.get((system, op, "cold"))
            if phase == "hot" and cold and st["reads"] > cold["reads"]:
                out.append(f"process {i}: {system} {op}: the hot run read more than the cold one")
    return out


def _med(rows, key, stat=None):
    vals = [(r["stats"] or {}).get(stat, 0) if stat else r[key] for r in rows]
    return statistics.median(vals) if vals else None


# Targets: hot, every page resident, the page server runs the local file's code
HOT_TARGET = 1.05


def ratio_to_local(processes: list, system: str, op: str, phase: str) -> Optional[float]:
    """The median over the processes of the system's time over LOCAL's, each ratio taken
    within one process (the load moves both alike)."""
    out = []
    for pr in processes:
        by = {(r["system"], r["op"], r["phase"]): r["ms"] for r in pr["rows"] if "error" not in r}
        a, b = by.get((system, op, phase)), by.get(("LOCAL", op, phase))
        if a is not None and b:
            out.append(a / b)
    return statistics.median(out) if out else None


def summary(processes: list) -> dict:
    """(op, phase, system) -> median ms over the processes."""
    acc: dict = {}
    for pr in processes:
        for r in pr["rows"]:
            if "error" not in r and r["phase"] != "build":
                acc.setdefault((r["op"], r["phase"], r["system"]), []).append(r["ms"])
    return {k: statistics.median(v) for k, v in acc.items()}


def render_plot(processes: list, out_dir: str, title: str) -> list:
    """oo7_server.png: per operation, cold and hot, each system's median time (log scale)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    med = summary(processes)
    systems = [s for s, _, _ in SYSTEMS if any(k[2] == s for k in med)]
    groups = [(op, ph) for op in OPS for ph in ("cold", "hot") if any(k[:2] == (op, ph) for k in med)]
    fig, ax = plt.subplots(figsize=(8, 4))
    w = 0.8 / max(1, len(systems))
    for i, sysname in enumerate(systems):
        xs = [g + i * w for g in range(len(groups))]
        ax.bar(xs, [max(med.get((op, ph, sysname), 0), 1e-3) for op, ph in groups], w, label=sysname)
    ax.set_xticks([g + w * (len(systems) - 1) / 2 for g in range(len(groups))])
    ax.set_xticklabels([f"{op} {ph}" for op, ph in groups])
    ax.set_yscale("log")
    ax.set_ylabel("ms (median over processes)")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    path = os.path.join(out_dir, "oo7_server.png")
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return [path]


def report(doc: dict, out_dir: str, plots: bool = False) -> tuple[str, list, list]:
    """oo7_server.md: per operation and temperature, per system the median time and the
    server's counters; the ratio to LOCAL (the median of the processes' own ratios); the
    hot target; with plots, oo7_server.png. Returns (markdown, problems, pngs)."""
    processes = doc["processes"]
    probs = problems(processes)
    md = ["# OO7 over a page server and an object server", "",
          f"`{doc.get('command', 'p2gen bench oo7 --server')}`", "",
          f"Size {doc['size']}, fanout {doc['fanout']}, {len(processes)} process(es) (medians); "
          f"client buffer {doc['pages']} pages (object server: {35 * doc['pages']} records). "
          "Cold: the first run after a fresh open (an empty client buffer; the local file dropped "
          "from the page cache); hot: the same operation at once again, the median of "
          f"{doc.get('hot_runs', 1)} run(s), its counters the last run's; vs LOCAL: the median of "
          "each process's own ratio. Requests: reads / writes "
          "sent to the server; KB in / out: payload bytes; misses: pages (objects) fetched; hits: "
          "touches of a page the clock had made inaccessible.", "",
          "| op | temp | system | ms | vs LOCAL | answer | reads | writes | KB in | KB out | misses | hits | evictions |",
          "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    rows = [r for pr in processes for r in pr["rows"] if "error" not in r and r["phase"] != "build"]
    systems = [s for s, _, _ in SYSTEMS if any(r["system"] == s for r in rows)]
    for op in OPS:
        for phase in ("cold", "hot"):
            local = [r for r in rows if r["system"] == "LOCAL" and r["op"] == op and r["phase"] == phase]
            for s in systems:
                rs = [r for r in rows if r["system"] == s and r["op"] == op and r["phase"] == phase]
                if not rs:
                    continue
                ms, r = _med(rs, "ms"), ratio_to_local(processes, s, op, phase)
                ratio = f"{r:.2f}×" if r is not None else "–"
                server = bool(rs[0].get("stats"))
                cells = ([f"{_med(rs, None, 'reads'):.0f}", f"{_med(rs, None, 'writes'):.0f}",
                          f"{_med(rs, None, 'bytes_read') / 1024:.0f}", f"{_med(rs, None, 'bytes_written') / 1024:.0f}",
                          f"{_med(rs, None, 'misses'):.0f}", f"{_med(rs, None, 'hits'):.0f}",
                          f"{_med(rs, None, 'evictions'):.0f}"] if server else ["–"] * 7)
                md.append(f"| {op} | {phase} | {s} | {ms:.2f} | {ratio} | {rs[0]['count']} | " + " | ".join(cells) + " |")
    md += target_lines(processes, doc["pages"])
    pngs = []
    if plots and rows:
        pngs = plot_files(out_dir, lambda: render_plot(
            processes, out_dir, f"OO7 {doc['size']} over servers, buffer {doc['pages']} pages"))
        md += image_lines(pngs)
    if probs:
        md += ["", "## Problems", ""] + [f"- {p}" for p in probs]
    return write_report(out_dir, "oo7_server.md", md + [""]), probs, pngs


def target_lines(processes: list, pages: int) -> list:
    """The hot target: PAGESERVER's hot T1 within HOT_TARGET of LOCAL's, with no request
    (the buffer holds T1's working set); said unmet with the reason when it is not."""
    r = ratio_to_local(processes, "PAGESERVER", "T1", "hot")
    if r is None:
        return []
    hot = [x for pr in processes for x in pr["rows"]
           if x.get("system") == "PAGESERVER" and x.get("op") == "T1" and x.get("phase") == "hot"]
    reads = _med(hot, None, "reads") if hot and hot[0].get("stats") else None
    why = ("" if reads == 0 else f"; its hot run still read {reads:.0f} pages: the buffer of {pages} "
           "pages does not hold T1's working set (--pages)")
    return ["", f"Target: hot T1 on the page server ≤ {HOT_TARGET:.2f}× LOCAL: **{r:.2f}×**, "
            f"{'met' if r <= HOT_TARGET else 'not met'}{why}."]


def command(*, size, fanout, seed, out, build_dir, db_dir, cc, cxx, jobs, render, repetitions=1,
            pages=PAGES, hot_runs=1, plots=False, systems=tuple(s for s, _, _ in SYSTEMS),
            say=print) -> int:
    """`p2gen bench oo7 --server`: start the engines, build, run `repetitions` processes
    (fresh engines each), write oo7_server.{json,md}; the exit status."""
    _check_size(size)
    out, json_path, cmdline = command_outputs(out, "oo7_server.json")
    if render:
        with open(render) as f:
            text, probs, pngs = report(json.load(f), out, plots=plots)
        return say_report(say, text, probs, [os.path.join(out, "oo7_server.md"), *pngs])
    missing = engines_missing(systems)
    if missing:
        raise EnvError("; ".join(missing))
    size = size or "small"
    fan = int(str(fanout or 3).split(",")[0])
    work = Path(tempfile.mkdtemp(prefix="oo7_server_", dir=db_dir))
    processes = []
    nbd = NbdServer(plugin="memory", size=NBD_EXPORT_BYTES) if "PAGESERVER" in systems else None
    redis = RedisServer(work / "redis") if "OBJSERVER" in systems else None
    try:
        for e in (nbd, redis):
            if e:
                e.start()
        exe = build(build_dir or os.path.join("bench", "build", "oo7_server"),
                    nbd.uri("oo7") if nbd else "nbd://127.0.0.1/unused",
                    redis.uri(0) if redis else "redis://127.0.0.1/0",
                    systems=systems, pages=pages, cc=cc, cxx=cxx, jobs=jobs, say=say)
        for i in range(repetitions):
            if i:   # empty engines again: every process builds its database afresh
                if nbd:
                    nbd.stop()
                    nbd.start()
                if redis:
                    redis.flush()
            d = work / f"run{i}"
            d.mkdir()
            rc, rows, err = run_process(exe, size, fan, seed, OPS, str(d), hot_runs)
            say(f"process {i}: exit status {rc}, {len(rows)} runs")
            processes.append(dict(rc=rc, rows=rows, stderr=err))
    finally:
        for e in (nbd, redis):
            if e:
                e.stop()
    doc = dict(command=cmdline, size=size, fanout=fan, seed=seed, pages=pages, hot_runs=hot_runs,
               processes=processes)
    os.makedirs(out, exist_ok=True)
    with open(json_path, "w") as f:
        json.dump(doc, f, indent=1)
    text, probs, pngs = report(doc, out, plots=plots)
    return say_report(say, text, probs, [json_path, os.path.join(out, "oo7_server.md"), *pngs],
                      int(any(p["rc"] for p in processes)))
