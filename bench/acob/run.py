"""`p2gen bench acob`: the ACOB benchmark (DeWitt, Futtersack, Maier, Velez 1990; the
benchmark as /work/shared/specs/acob.md writes it up) over a local file and over the page
and object servers.

Engines: nbdkit (its memory plugin) and redis-server, started here on free loopback ports
and stopped by their pids (p2gen.bench.engines, as the tests start theirs). The specs
type_equations/acob/acob_{persistent,pageserver,objserver}.p2 (one equation, only the
memory differs) are generated with the URIs of those servers and built as users build
theirs, with bench/acob/ into one Google Benchmark binary: LOCAL (the paper's WiSS),
PAGESERVER (50-page client buffer), OBJSERVER (1,750-record client cache), HYBRID (the page
server's spec with ship = ranges, on an nbdkit of its own: pages read, the byte ranges
the layers announced written back), FILESERVER (the page server's spec over a file of an
NFSv3 export: NFS-Ganesha and rpcbind in a private network namespace, libnfs; writes
FILE_SYNC as the paper's NFS, or UNSTABLE + COMMIT with --nfs-writes unstable). FILESERVER
runs in a process of its own inside that namespace (the other engines listen on the
host's loopback), with the same seed: its counts are checked against the others' as
if it had run beside them.
Run: for every clustering factor, `repetitions` processes (in a random order), each on
fresh engines: build sets A.. with the same f, scan, random read, random update each set
(a cold client buffer per query and set, one commit per query and set). The binary prints
the counts (records read by the walk, root ids, updates, the servers' request counters per
set, checksums after build and update); this checks them across systems and writes
acob.json (every process's Google Benchmark JSON and counts) and acob.md (per-set counts
beside acob.md §6.1's reference-model counts and the paper's, medians of time per set,
ratios to LOCAL from the same processes).
"""
from __future__ import annotations

import json
import os
import random
import re
import statistics
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from .. import BENCH_DIR, spec_dir
from ..common import (checked_sources, compile_and_link, driver_cxxflags, generate_variants,
                      say_report, source_steps, users_build_steps, write_report)
from ..engines import NBD_MISSING, NFS_MISSING, REDIS_MISSING, NbdServer, NfsServer, RedisServer
from ...errors import EnvError

SOURCE_DIR = BENCH_DIR / "acob"
DRIVER_SOURCES = ("acob.h", "acob_driver.cc", "acob_main.cc")
LIBS = ("-lbenchmark", "-lpthread")
STEPS = ("build", "scan", "read", "update")
# (system, spec stem, rank, a server's memory)
SYSTEMS = (("LOCAL", "persistent", 1, False), ("PAGESERVER", "pageserver", 2, True),
           ("OBJSERVER", "objserver", 3, True), ("HYBRID", "hybrid", 4, True),
           ("FILESERVER", "fileserver", 5, True))
NBD_SYSTEMS = ("PAGESERVER", "HYBRID")
NFS_SYSTEMS = ("FILESERVER",)
NBD_EXPORT_BYTES = 256 << 20
# acob.md §6.1: per set, mean ± sd over 8 seeds, R = 5, B = 50, 1,750-record object cache,
# S = 1, unsmeared, walk references only: f -> (references, page reads, object gets,
# page write-backs (update), object puts (update))
MODEL = {10: ((13004, 117), (5371, 47), (8918, 101), (4365, 42), (2804, 44)),
         30: ((13004, 117), (4957, 44), (8863, 85), (4159, 45), (2775, 35)),
         50: ((13004, 117), (4291, 37), (8792, 84), (3731, 33), (2732, 32)),
         70: ((13004, 117), (3359, 28), (8575, 80), (3018, 26), (2627, 32)),
         90: ((13004, 117), (2218, 30), (8267, 88), (2056, 31), (2453, 38))}
# acob.md §6: the paper's own figures, per set (random read, buffers 50/50)
PAPER = {10: {"pages": 5443, "objects": 11977, "page_hit": 0.66, "obj_hit": 0.181},
         90: {"pages": 2293, "objects": 10953, "page_hit": 0.86, "obj_hit": 0.251}}
PAPER_READ_REFS = 14623
# The 1990 cost model: the paper's round trips (Table 1: a 4,000-byte page 17.9 ms, a
# 100-byte object 8.2 ms) at 1/100, a delay per request slept by the client
# (P2_SERVER_DELAY_*_US, runtime backend) on top of today's loopback round trip (acob.md
# §8, p50: an NBD 4 KiB read 27 µs, a Redis GET 23 µs): page 179 µs, object 82 µs.
# The file server's NFS page fetch was cheaper than the page server's RPC (acob.md §6: ≈ 12 s
# for ≈ 1,200 pages, ≈ 10 ms a page): at 1/100, 100 µs, less today's NFS read (≈ 35 µs).
COST_1990 = {"P2_SERVER_DELAY_NBD_US": "152", "P2_SERVER_DELAY_REDIS_US": "59",
             "P2_SERVER_DELAY_NFS_US": "65"}


@dataclass
class Options:
    objects: int = 1500
    sets: int = 2
    fs: tuple = (30,)
    buffers: tuple = (50,)      # client buffer in pages (the object cache: 35 records a page)
    cost: str = "native"        # or "1990": COST_1990's delays per request
    region: int = 5
    smear: bool = False
    seed: int = 1990
    repetitions: int = 1
    systems: tuple = ("LOCAL", "PAGESERVER", "OBJSERVER", "HYBRID")
    nfs_writes: str = "sync"    # FILESERVER: pageserver(writes = ...): sync, the paper's; or unstable

    def args(self, f: int, db_dir: str) -> list:
        return [f"--acob_objects={self.objects}", f"--acob_sets={self.sets}", f"--acob_f={f}",
                f"--acob_region={self.region}", f"--acob_smear={int(self.smear)}",
                f"--acob_seed={self.seed}", f"--acob_dir={db_dir}"]


def engines_missing(systems) -> list:
    out = []
    if any(s in systems for s in NBD_SYSTEMS) and NBD_MISSING:
        out.append(NBD_MISSING)
    if "OBJSERVER" in systems and REDIS_MISSING:
        out.append(REDIS_MISSING)
    if any(s in systems for s in NFS_SYSTEMS) and NFS_MISSING:
        out.append(NFS_MISSING)
    return out


def server_specs(spec_out: Path, nbd_uri: str, redis_uri: str, systems, buffer: int = 50,
                 hybrid_uri: Optional[str] = None, nfs_uri: str = "nfs://127.0.0.1/export/acob",
                 nfs_writes: str = "sync") -> list:
    """The specs of the systems asked, the servers' URIs and the client buffer (`buffer`
    pages; the object cache 35 records a page) written in: [(name, spec, prefix, rank, server)].
    HYBRID's is the page server's with ship = ranges, on `hybrid_uri`; FILESERVER's the page
    server's on `nfs_uri`, its writes `nfs_writes`."""
    src = spec_dir("acob")
    spec_out.mkdir(parents=True, exist_ok=True)
    out = []
    for name, stem, rank, server in SYSTEMS:
        if name not in systems:
            continue
        text = (src / f"acob_{'pageserver' if stem in ('hybrid', 'fileserver') else stem}.p2").read_text()
        if stem == "hybrid":
            text = text.replace("pageserver(server", "pageserver(ship = ranges, server")
        if stem == "fileserver":
            text = text.replace("pageserver(server", f"pageserver(writes = {nfs_writes}, server")
        text = re.sub(r'nbd://[^"]*', nfs_uri if stem == "fileserver" else
                      (hybrid_uri or nbd_uri) if stem == "hybrid" else nbd_uri, text)
        text = re.sub(r'redis://[^"]*', redis_uri, text)
        text = re.sub(r'\bpages = [0-9]+', f"pages = {buffer}", text)
        text = re.sub(r'\bobjects = [0-9]+', f"objects = {35 * buffer}", text)
        p = spec_out / f"acob_{stem}.p2"
        if not p.exists() or p.read_text() != text:
            p.write_text(text)
        out.append((name, str(p), f"acob_{stem}", rank, server))
    return out


@dataclass
class _V:
    name: str
    spec: str
    prefix: str


def build(build_dir: str, nbd_uri: str, redis_uri: str, *, systems=Options.systems, buffer: int = 50,
          hybrid_uri: Optional[str] = None, nfs_uri: str = "nfs://127.0.0.1/export/acob",
          nfs_writes: str = "sync", cc: str = "cc",
          cxx: str = "c++", opt: str = "-O2", extra_flags: tuple = (), jobs: Optional[int] = None,
          say: Callable[[str], None] = lambda m: None) -> Path:
    """Generate the systems' specs (the servers' URIs written in), build them as users do and
    link build_dir/acob_bench; extra_flags (e.g. sanitizers) go to every compile and the link."""
    src = checked_sources(SOURCE_DIR, DRIVER_SOURCES, "acob")
    specs = server_specs(Path(build_dir).resolve() / "specs", nbd_uri, redis_uri, systems, buffer,
                         hybrid_uri, nfs_uri, nfs_writes)
    variants = [_V(n, s, p) for n, s, p, _, _ in specs]
    bdir, gen_dir, obj_dir, gens = generate_variants(build_dir, variants, say)
    cxxflags = driver_cxxflags(opt) + list(extra_flags)
    steps = [(p, g, [f"-DP2_VARIANT={p}", f'-DP2_HEADER="{p}.h"', f'-DP2_NAME="{n}"',
                     f"-DP2_RANK={rank}", f"-DACOB_SERVER={int(server)}"])
             for (n, _, p, rank, server), (_, g) in zip(specs, gens)]
    cc_all = cc + "".join(" " + f for f in extra_flags)
    tasks, archives = users_build_steps(gen_dir, obj_dir, steps, cc=cc_all, cxx=cxx, cxxflags=cxxflags,
                                        driver=src / "acob_driver.cc", driver_deps=[src / "acob.h"],
                                        include_dirs=[src])
    tasks += source_steps(src, ("acob_main.cc",), obj_dir, cxx=cxx, cxxflags=cxxflags,
                          deps=[src / "acob.h"])
    return compile_and_link(bdir, "acob_bench", tasks, archives, list(LIBS) + list(extra_flags),
                            cxx=cxx, opt=opt, lto=False,
                            hint="install Google Benchmark: apt-get install libbenchmark-dev",
                            jobs=jobs, say=say)


class Engines:
    """nbdkit (memory plugin) and redis-server on free loopback ports, NFS-Ganesha in a
    network namespace of its own, as long as the `with` lasts; fresh() gives each process an
    empty export, an empty Redis and no NFS file (the open creates it)."""

    def __init__(self, workdir: Path, systems):
        self.nbd = NbdServer(plugin="memory", size=NBD_EXPORT_BYTES) if "PAGESERVER" in systems else None
        self.redis = RedisServer(workdir / "redis") if "OBJSERVER" in systems else None
        self.hybrid = NbdServer(plugin="memory", size=NBD_EXPORT_BYTES) if "HYBRID" in systems else None
        self.nfs = NfsServer(workdir / "nfs") if "FILESERVER" in systems else None

    def nfs_uri(self) -> str:
        return self.nfs.uri("acob") if self.nfs else "nfs://127.0.0.1/export/unused"

    def hybrid_uri(self) -> str:
        return self.hybrid.uri("acob") if self.hybrid else "nbd://127.0.0.1/unused"

    def uris(self) -> tuple:
        return (self.nbd.uri("acob") if self.nbd else "nbd://127.0.0.1/unused",
                self.redis.uri(0) if self.redis else "redis://127.0.0.1/0")

    def __enter__(self):
        try:
            for e in (self.nbd, self.hybrid):
                if e:
                    e.start()
            if self.redis:
                self.redis.start()
            if self.nfs:
                self.nfs.start()
        except Exception:
            self.__exit__()
            raise
        return self

    def fresh(self) -> None:
        for e in (self.nbd, self.hybrid):   # the memory plugin: zeros again at a restart
            if e:
                e.stop()
                e.start()
        if self.redis:
            self.redis.flush()
        if self.nfs:
            self.nfs.remove("acob")

    def __exit__(self, *exc):
        for e in (self.nbd, self.redis, self.hybrid, self.nfs):
            if e:
                e.stop()


COUNT = re.compile(r"^acob-count (.*)$")
CHECKSUM = re.compile(r"^acob-checksum system=(\S+) when=(\S+) set=(\S+) value=(\S+)$")


def parse_output(text: str) -> tuple[list, list]:
    """(counts: a dict per `acob-count` line, numbers as ints; checksums: (system, when, set, value))."""
    counts, sums = [], []
    for line in text.splitlines():
        m = COUNT.match(line)
        if m:
            d = dict(kv.split("=", 1) for kv in m.group(1).split())
            counts.append({k: (v if k in ("system", "step", "set") else
                               float(v) if k == "ms" else int(v)) for k, v in d.items()})
            continue
        m = CHECKSUM.match(line)
        if m:
            sums.append(m.groups())
    return counts, sums


def run_once(exe: Path, opts: Options, f: int, json_out: str, db_dir: str,
             delays: Optional[dict] = None, nfs: Optional[NfsServer] = None) -> tuple[int, str, str]:
    """One process: (exit status, stdout, stderr); Google Benchmark's JSON to json_out.
    delays: the P2_SERVER_DELAY_*_US to set (default: opts.cost's). With `nfs`, the
    process runs in that server's network namespace."""
    cmd = [str(exe)] + opts.args(f, db_dir) + [
        f"--benchmark_out={json_out}", "--benchmark_out_format=json",
        "--benchmark_filter=^acob/(" + "|".join(opts.systems) + ")/"]
    if nfs is not None:
        cmd = nfs.wrap(cmd)
    env = dict(os.environ)
    for k in COST_1990:
        env.pop(k, None)
    env.update(delays if delays is not None else COST_1990 if opts.cost == "1990" else {})
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    return proc.returncode, proc.stdout, proc.stderr


def run_systems(exe: Path, opts: Options, f: int, json_out: str, db_dir: str,
                eng: "Engines", delays: Optional[dict] = None) -> tuple[int, str, str, list]:
    """run_once for opts.systems: FILESERVER in a second process inside the NFS server's
    namespace (same seed, so the same walk), the host's systems in the first. (exit
    status, the outputs joined, stderr, the Google Benchmark JSON paths)."""
    from dataclasses import replace
    host = tuple(s for s in opts.systems if s not in NFS_SYSTEMS)
    ns = tuple(s for s in opts.systems if s in NFS_SYSTEMS)
    rc, out, err, paths = 0, "", "", []
    for systems, nfs, tag in ((host, None, ""), (ns, eng.nfs, ".nfs")):
        if not systems:
            continue
        path = json_out + tag
        r, o, e = run_once(exe, replace(opts, systems=systems), f, path, db_dir + tag, delays, nfs)
        rc, out, err = rc or r, out + o, err + e
        paths.append(path)
    return rc, out, err, paths


def merge_benchmark_json(paths: list) -> Optional[dict]:
    """One Google Benchmark JSON of a run's processes: the first's context, every
    process's benchmarks."""
    docs = [json.loads(Path(p).read_text()) for p in paths]
    if not docs:
        return None
    return dict(docs[0], benchmarks=[b for d in docs for b in d.get("benchmarks", [])])


def problems(runs: list) -> list:
    """What disagrees: the walk's counts and checksums across systems (one process, same
    seed), checksums after update against those after build, missing steps."""
    out = []
    for r in runs:
        tag = f"B={r.get('buffer', 50)} f={r['f']} run {r['rep']}"
        if r["rc"] != 0:
            out.append(f"{tag}: the binary exited with {r['rc']}: {r['stderr'].strip()[-500:]}")
        by = {}
        for c in r["counts"]:
            by.setdefault((c["step"], c["set"]), {})[c["system"]] = (c["walk"], c["roots"], c["updates"])
        for (step, s), per in sorted(by.items()):
            if len(set(per.values())) > 1:
                out.append(f"{tag}: {step} set {s}: the systems' counts differ: {per}")
            if len(per) != len(r["systems"]):
                out.append(f"{tag}: {step} set {s}: counts only from {sorted(per)}")
        sums = {}
        for system, when, s, v in r["checksums"]:
            sums.setdefault((when, s), {})[system] = v
        for (when, s), per in sorted(sums.items()):
            if len(set(per.values())) > 1:
                out.append(f"{tag}: checksum after {when} of set {s} differs: {per}")
            if when == "update":
                before = sums.get(("build", s), {})
                for system, v in per.items():
                    if before.get(system) != v:
                        out.append(f"{tag}: {system} set {s}: checksum {v} after update, "
                                   f"{before.get(system)} after build")
    return out


def per_set_means(runs: list, f: int, buffer: int = 50) -> dict:
    """(system, step) -> {counter: mean per set over the sets of the runs at f and buffer}."""
    acc: dict = {}
    for r in runs:
        if r["f"] != f or r.get("buffer", 50) != buffer:
            continue
        for c in r["counts"]:
            acc.setdefault((c["system"], c["step"]), []).append(c)
    return {k: {n: statistics.mean(c.get(n, 0) for c in cs) for n in cs[0] if n not in ("system", "step", "set")}
            for k, cs in acc.items()}


def time_medians(runs: list, f: int, buffer: int = 50) -> dict:
    """(system, step) -> median over processes of the step's time per set (ms)."""
    acc: dict = {}
    for r in runs:
        if r["f"] != f or r.get("buffer", 50) != buffer:
            continue
        per: dict = {}
        for c in r["counts"]:
            per.setdefault((c["system"], c["step"]), []).append(c["ms"])
        for k, v in per.items():
            acc.setdefault(k, []).append(statistics.mean(v))
    return {k: statistics.median(v) for k, v in acc.items()}


def _n(x) -> str:
    return "—" if x is None else f"{x:,.0f}"


def _hit(req, walk) -> str:
    return "—" if req is None or not walk else f"{1 - req / walk:.3f}"


# acob.md §6.1, seed 1990, f -> page reads of the random read at B = 50, 100, ..., 300
SWEEP_PAGES = {30: (4912, 3923, 2946, 2002, 1098, 300), 90: (2173, 1757, 1345, 960, 596, 300)}
# object gets at f = 30 with the root-id reads counted
SWEEP_OBJECTS_WITH_ROOTS = {30: (10251, 8114, 7368, 7321, 7321, 7321)}


def report_lines(opts: Options, runs: list, command: Optional[str]) -> list:
    md = ["# ACOB: a local file, a page server and an object server", "",
          f"{opts.sets} sets of {opts.objects:,} complex objects (7 records of 112 bytes, 35 to a "
          f"4 KiB page), region {opts.region} pages, smearing {'on' if opts.smear else 'off'}, "
          f"{opts.objects // 5} objects per random query, seed {opts.seed}; client buffer of B pages "
          "(page server) or 35·B records (object server), emptied before each query and set "
          "(LOCAL: the file in the OS's page cache, hot); root ids read from the driver's memory, "
          "not the server; "
          f"{opts.repetitions} process(es) per (B, f), engines fresh for each. Cost model: "
          + ("native (today's engines on loopback as they are)." if opts.cost == "native" else
             "1990 ratios (every request first sleeps, client-side: a page 152 µs, an object "
             "59 µs, meant to make a page cost ≈ 179 µs and an object ≈ 82 µs with today's "
             "loopback round trip, the paper's 17.9 : 8.2 ms at 1/100; what a request cost "
             "in the scans is under each table: sleeps overshoot on a loaded machine)."), ""]
    if command:
        md += ["Command: `" + command + "`", ""]
    for buf in opts.buffers:
        for f in opts.fs:
            md += _section(opts, runs, f, buf)
    if len(opts.buffers) > 1:
        md += _sweep(opts, runs)
    return md


def _section(opts: Options, runs: list, f: int, buf: int) -> list:
    m = per_set_means(runs, f, buf)
    t = time_medians(runs, f, buf)
    plain = opts.objects == 1500 and opts.region == 5 and not opts.smear and buf == 50
    ref = MODEL.get(f) if plain else None
    md = [f"## B = {buf} pages, f = {f} %", "",
          "Counts per set (mean over the sets); hit rate: 1 − requests / walk references; of "
          "them again: write-backs of a page (object) written back before in the same step and "
          "set (written − again: the distinct pages or objects written). "
          "The reference model's (acob.md §6.1: mean ± sd over 8 seeds) and the paper's beside "
          "them where they apply.", "",
          "| step | walk refs | root ids | updates | page server: pages read | written | of them again | "
          "hit rate | object server: objects fetched | written | of them again | hit rate |",
          "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for step in STEPS:
        loc = m.get(("LOCAL", step)) or m.get(("PAGESERVER", step)) or m.get(("OBJSERVER", step)) or {}
        ps, ob = m.get(("PAGESERVER", step), {}), m.get(("OBJSERVER", step), {})
        walk = loc.get("walk")
        md.append(f"| {step} | {_n(walk)} | {_n(loc.get('roots'))} | {_n(loc.get('updates'))} | "
                  f"{_n(ps.get('reads'))} | {_n(ps.get('writes'))} | {_n(ps.get('rewrites'))} | "
                  f"{_hit(ps.get('reads'), walk) if step != 'build' else '—'} | {_n(ob.get('reads'))} | "
                  f"{_n(ob.get('writes'))} | {_n(ob.get('rewrites'))} | "
                  f"{_hit(ob.get('reads'), walk) if step != 'build' else '—'} |")
    if ref:
        (refs, pages, objs, pwb, puts) = ref
        md.append(f"| model §6.1 read / update | {refs[0]:,} ± {refs[1]} | | ≈ 5,030 | "
                  f"{pages[0]:,} ± {pages[1]} | {pwb[0]:,} ± {pwb[1]} (update) | | | "
                  f"{objs[0]:,} ± {objs[1]} | {puts[0]:,} ± {puts[1]} (update) | | |")
        md.append("| model §6.1 scan | 10,500 | | 0 | 300 | 0 | 0 | | 10,500 | 0 | 0 | |")
    if f in PAPER and opts.objects == 1500 and buf == 50 and opts.region == 5 and not opts.smear:
        p = PAPER[f]
        md.append(f"| paper §6 read | {PAPER_READ_REFS:,} (root ids counted) | | | {p['pages']:,} | | | "
                  f"{p['page_hit']} | {p['objects']:,} | | | {p['obj_hit']} |")
    md += ["", "Median over the processes of the time per set (ms); the ratios from the same "
           "processes.", "",
           "| step | LOCAL | PAGESERVER | × LOCAL | OBJSERVER | × LOCAL | OBJSERVER / PAGESERVER |",
           "|---|---:|---:|---:|---:|---:|---:|"]
    x = lambda a, b: "—" if a is None or not b else f"{a / b:.1f}×"
    ms = lambda v: "—" if v is None else f"{v:.2f}"
    for step in STEPS:
        lo, ps, ob = (t.get((s, step)) for s in ("LOCAL", "PAGESERVER", "OBJSERVER"))
        md.append(f"| {step} | {ms(lo)} | {ms(ps)} | {x(ps, lo)} | {ms(ob)} | {x(ob, lo)} | {x(ob, ps)} |")
    sp, so = m.get(("PAGESERVER", "scan"), {}), m.get(("OBJSERVER", "scan"), {})
    tp, to = t.get(("PAGESERVER", "scan")), t.get(("OBJSERVER", "scan"))
    if sp.get("reads") and so.get("reads") and tp and to:
        up, uo = tp * 1000 / sp["reads"], to * 1000 / so["reads"]
        md += ["", f"A request in the scan (its time over its requests, client work included): "
               f"page {up:.0f} µs, object {uo:.0f} µs, page : object {up / uo:.2f}."]
    md += _hybrid(m, t)
    md += _fileserver(m, t, opts)
    md.append("")
    return md


def _hybrid(m: dict, t: dict) -> list:
    """HYBRID beside the page and object servers: bytes shipped per update set, read time."""
    hy, ps, ob = (m.get((s, "update"), {}) for s in ("HYBRID", "PAGESERVER", "OBJSERVER"))
    if not hy.get("bytes_written"):
        return []
    kib = lambda c: "—" if not c.get("bytes_written") else f"{c['bytes_written'] / 1024:,.0f} KiB"
    x = lambda a, b: "—" if not a or not b else f"{a / b:.2f}×"
    tr, pr = t.get(("HYBRID", "read")), t.get(("PAGESERVER", "read"))
    return ["", "Hybrid (pageserver(ship = ranges)): what an update set ships — "
            f"{kib(hy)} in {_n(hy.get('writes'))} write requests, against the page server's "
            f"{kib(ps)} ({x(hy.get('bytes_written'), ps.get('bytes_written'))}) and the object "
            f"server's {kib(ob)} ({x(hy.get('bytes_written'), ob.get('bytes_written'))}); its "
            f"random read {x(tr, pr)} the page server's time."]


def _fileserver(m: dict, t: dict, opts: Options) -> list:
    """FILESERVER beside the page server: the same pages (the same client buffer and
    machinery), each step's time, and what its writes cost (acob.md §7, shape 6)."""
    if not any(k[0] == "FILESERVER" for k in m):
        return []
    x = lambda a, b: "—" if not a or not b else f"{a / b:.2f}×"
    ms = lambda v: "—" if v is None else f"{v:.2f}"
    how = ("every WRITE FILE_SYNC, durable before the server answers (the paper's NFS)"
           if opts.nfs_writes == "sync" else "UNSTABLE writes and one COMMIT per commit")
    md = ["", f"File server (pageserver over nfs://, NFS-Ganesha + libnfs, NFSv3; {how}): "
          "per set, beside the page server (NBD).", "",
          "| step | pages read | written | commits | ms | PAGESERVER ms | FILESERVER / PAGESERVER | × LOCAL |",
          "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for step in STEPS:
        fs = m.get(("FILESERVER", step), {})
        tf, tp, tl = (t.get((s, step)) for s in ("FILESERVER", "PAGESERVER", "LOCAL"))
        md.append(f"| {step} | {_n(fs.get('reads'))} | {_n(fs.get('writes'))} | {_n(fs.get('flushes'))} | "
                  f"{ms(tf)} | {ms(tp)} | {x(tf, tp)} | {x(tf, tl)} |")
    return md


def _sweep(opts: Options, runs: list) -> list:
    """The random read against the client buffer: requests per set, and the spec's model."""
    md = ["## Client buffer sweep (random read)", "",
          "| f | B (pages) | page server: pages read | model §6.1 (seed 1990) | read ms | "
          "object server: objects fetched | + the root-id set | model §6.1 (root ids counted) | read ms |",
          "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for f in opts.fs:
        for i, buf in enumerate(opts.buffers):
            m = per_set_means(runs, f, buf)
            t = time_medians(runs, f, buf)
            ps, ob = m.get(("PAGESERVER", "read"), {}), m.get(("OBJSERVER", "read"), {})
            k = buf // 50 - 1 if buf % 50 == 0 and 50 <= buf <= 300 else None
            mp = SWEEP_PAGES.get(f, ())[k] if k is not None and f in SWEEP_PAGES else None
            mo = SWEEP_OBJECTS_WITH_ROOTS.get(f, ())[k] if k is not None and f in SWEEP_OBJECTS_WITH_ROOTS else None
            # the spec's model counts the set's root-id entries (one per object) as object
            # gets too; the driver keeps them in its memory
            withroots = None if ob.get("reads") is None else ob["reads"] + opts.objects
            tp, to = t.get(("PAGESERVER", "read")), t.get(("OBJSERVER", "read"))
            md.append(f"| {f} | {buf} | {_n(ps.get('reads'))} | {_n(mp)} | "
                      f"{'—' if tp is None else f'{tp:.1f}'} | {_n(ob.get('reads'))} | {_n(withroots)} | "
                      f"{_n(mo)} | {'—' if to is None else f'{to:.1f}'} |")
    md.append("")
    return md


render = report_lines     # (command's own `render` is the --render option)


def load(json_path: str) -> tuple[Options, list]:
    """(options, runs) of a stored acob.json"""
    d = json.loads(Path(json_path).read_text())
    o = {k: tuple(v) if isinstance(v, list) else v for k, v in d["options"].items()}
    return Options(**o), d["runs"]


def command(*, objects, sets, full, f, region, smear, seed, repetitions, systems, out, build_dir,
            cc, cxx, jobs, buffers=(), cost="native", nfs_writes="sync", render=None,
            say: Callable[[str], None] = print, **_) -> int:
    """`p2gen bench acob`: start the engines, build, run, check, report. Exit status."""
    from ..common import command_outputs
    if render:      # only the report of a stored run
        opts, runs = load(render)
        md = report_lines(opts, runs, None)
        write_report(out or "bench/results", "acob.md", md)
        return say_report(say, "\n".join(md), problems(runs), wrote=[str(Path(out) / "acob.md")])
    opts = Options(objects=objects, sets=5 if full else sets,
                   fs=tuple(f) if f else (30,), buffers=tuple(buffers) if buffers else (50,),
                   region=region, smear=smear, seed=seed, cost=cost, nfs_writes=nfs_writes,
                   repetitions=repetitions, systems=tuple(systems) if systems else Options.systems)
    missing = engines_missing(opts.systems)
    if missing:
        raise EnvError("; ".join(missing))
    out, json_path, cmdline = command_outputs(out, "acob.json")
    runs = []
    with tempfile.TemporaryDirectory(prefix="acob.") as tmp, Engines(Path(tmp), opts.systems) as eng:
        nbd_uri, redis_uri = eng.uris()
        exes = {b: build(str(Path(build_dir) / f"b{b}"), nbd_uri, redis_uri, systems=opts.systems,
                         buffer=b, hybrid_uri=eng.hybrid_uri(), nfs_uri=eng.nfs_uri(),
                         nfs_writes=opts.nfs_writes, cc=cc, cxx=cxx, jobs=jobs, say=say)
                for b in opts.buffers}
        order = [(b, fv, rep) for b in opts.buffers for fv in opts.fs for rep in range(opts.repetitions)]
        random.shuffle(order)      # load on a shared machine weighs on every (B, f) alike
        for i, (b, fv, rep) in enumerate(order):
            eng.fresh()
            db_dir = Path(tmp) / f"db{i}"
            jpath = Path(tmp) / f"run{i}.json"
            rc, stdout, stderr, jpaths = run_systems(exes[b], opts, fv, str(jpath), str(db_dir), eng)
            counts, sums = parse_output(stdout)
            gb = merge_benchmark_json([p for p in jpaths if Path(p).exists()])
            runs.append(dict(f=fv, buffer=b, rep=rep, rc=rc, counts=counts, checksums=sums,
                             stderr=stderr, systems=list(opts.systems), benchmark=gb))
            say(f"[{i + 1}/{len(order)}] B={b} f={fv} run {rep}: exit {rc}, {len(counts)} count lines")
    Path(out).mkdir(parents=True, exist_ok=True)
    Path(json_path).write_text(json.dumps({"options": opts.__dict__, "runs": runs}, indent=1))
    md = report_lines(opts, runs, cmdline)
    text = "\n".join(md)
    write_report(out, "acob.md", md)
    return say_report(say, text, problems(runs), wrote=[json_path, str(Path(out) / "acob.md")])
