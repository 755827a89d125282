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
# acob/RAWNBD/read (one raw libnbd read of a page at a time) links libnbd itself
RAWNBD = Path("/usr/include/libnbd.h").exists()
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
# The 1990 cost model: a request costs what Table 1 (the paper's Sun RPC over UDP: reply of
# 1 B 7.8 ms ... 8,000 B 28.4) gives for its reply's size, at 1/50 (so one run of the object
# server takes minutes, not hours, and today's round trip, 25-150 µs on a loaded machine, is
# a small part of it): a 4 KiB page ≈ 363 µs, a 112-byte object ≈ 164 µs (the paper's
# 17.9 : 8.2 ms). Injected by the client: the runtime's backend pads each request to the
# engine to at least P2_SERVER_DELAY_*_US, whatever today's round trip was; calibrate()
# measures the client's own work around it and sets the delays so that what a page or an
# object costs in the scan is the target. (nbdkit's delay filter counts whole milliseconds: at 1/50 it
# would need 0.18 ms; at 1/10 a run of the object server would take hours.)
# The file server's NFS page fetch was cheaper than the page server's RPC (acob.md §6: ≈ 12 s
# for ≈ 1,200 pages, ≈ 10 ms a page): at 1/50, 200 µs a page, its client work taken as the
# page server's (the same fault and copy; calibrate() does not run Ganesha's namespace).
TABLE1_MS = ((1, 7.8), (10, 7.9), (100, 8.2), (1000, 9.7), (4000, 17.9), (8000, 28.4))
COST_1990_SCALE = 0.02
NFS_PAGE_MS = 10.0
PAGE_BYTES, RECORD_BYTES = 4096, 112
DELAY_VARS = ("P2_SERVER_DELAY_NBD_US", "P2_SERVER_DELAY_REDIS_US", "P2_SERVER_DELAY_NFS_US")
PAPER_RATIO = 17.9 / 8.2


def table1_ms(nbytes: int) -> float:
    """Table 1's reply cost (ms) for a reply of nbytes, linear between its sizes and beyond
    its last two."""
    pts = TABLE1_MS
    for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
        if nbytes <= x1 or (x1, y1) == pts[-1]:
            return y0 + (y1 - y0) * (max(nbytes, x0) - x0) / (x1 - x0)
    return pts[-1][1]


def cost_1990_targets() -> tuple[float, float]:
    """(page, object) µs: Table 1's reply cost of a page and of a record, scaled."""
    return (table1_ms(PAGE_BYTES) * 1000 * COST_1990_SCALE,
            table1_ms(RECORD_BYTES) * 1000 * COST_1990_SCALE)


# run_once's delays under --cost 1990 when none are given: the targets uncalibrated (a page
# read one request, an object fetch two Redis commands, an NFS page read one)
COST_1990 = {"P2_SERVER_DELAY_NBD_US": str(round(cost_1990_targets()[0])),
             "P2_SERVER_DELAY_REDIS_US": str(round(cost_1990_targets()[1] / 2)),
             "P2_SERVER_DELAY_NFS_US": str(round(NFS_PAGE_MS * 1000 * COST_1990_SCALE))}


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
    targets: bool = False       # also hotread (every system) and RAWNBD/read: target_lines

    def args(self, f: int, db_dir: str) -> list:
        return [f"--acob_objects={self.objects}", f"--acob_sets={self.sets}", f"--acob_f={f}",
                f"--acob_region={self.region}", f"--acob_smear={int(self.smear)}",
                f"--acob_seed={self.seed}", f"--acob_dir={db_dir}", f"--acob_hot={int(self.targets)}"]


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
          gen_opt: Optional[str] = None, say: Callable[[str], None] = lambda m: None) -> Path:
    """Generate the systems' specs (the servers' URIs written in), build them as users do and
    link build_dir/acob_bench; extra_flags (e.g. sanitizers) go to every compile and the link,
    gen_opt (tests only) after the users' flags of the generated code (users_build_steps)."""
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
                                        include_dirs=[src], gen_opt=gen_opt)
    tasks += source_steps(src, ("acob_main.cc",), obj_dir, cxx=cxx,
                          cxxflags=cxxflags + [f"-DACOB_RAWNBD={int(RAWNBD)}"], deps=[src / "acob.h"])
    libs = list(LIBS) + (["-lnbd"] if RAWNBD else [])
    return compile_and_link(bdir, "acob_bench", tasks, archives, libs + list(extra_flags),
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
             delays: Optional[dict] = None, steps: tuple = STEPS,
             nbd_uri: Optional[str] = None, nfs: Optional[NfsServer] = None) -> tuple[int, str, str]:
    """One process: (exit status, stdout, stderr); Google Benchmark's JSON to json_out.
    delays: the P2_SERVER_DELAY_*_US (and P2_SERVER_READAHEAD) to set (default: opts.cost's); steps: the first
    steps only (build must be one of them); nbd_uri: the page server's export, for
    RAWNBD/read (opts.targets). With `nfs`, the process runs in that server's network
    namespace."""
    raw = opts.targets and nbd_uri and RAWNBD and "PAGESERVER" in opts.systems
    cmd = [str(exe)] + opts.args(f, db_dir) + ([f"--acob_nbd={nbd_uri}"] if raw else []) + [
        f"--benchmark_out={json_out}", "--benchmark_out_format=json",
        "--benchmark_filter=^acob/(" + "|".join(opts.systems + (("RAWNBD",) if raw else ())) + ")/"
        + ("" if tuple(steps) == STEPS else "(" + "|".join(steps) + ")/")]
    if nfs is not None:
        cmd = nfs.wrap(cmd)
    env = dict(os.environ)
    for k in DELAY_VARS + ("P2_SERVER_READAHEAD",):
        env.pop(k, None)
    env.update(delays if delays is not None else COST_1990 if opts.cost == "1990" else {})
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    return proc.returncode, proc.stdout, proc.stderr


def run_systems(exe: Path, opts: Options, f: int, json_out: str, db_dir: str,
                eng: "Engines", delays: Optional[dict] = None,
                nbd_uri: Optional[str] = None) -> tuple[int, str, str, list]:
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
        r, o, e = run_once(exe, replace(opts, systems=systems), f, path, db_dir + tag, delays,
                           nbd_uri=nbd_uri, nfs=nfs)
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
def scan_request_us(counts: list) -> dict:
    """system -> what one request cost in the scan (µs): the scans' time over their requests
    (the round trip, any delay, and the client's work around it: fault, copy, eviction)."""
    out = {}
    for system in ("PAGESERVER", "OBJSERVER"):
        cs = [c for c in counts if c["system"] == system and c["step"] == "scan" and c.get("reads")]
        if cs:
            out[system] = sum(c["ms"] for c in cs) * 1000 / sum(c["reads"] for c in cs)
    return out


def delays_env(page_us: float, object_us: float, nfs_us: Optional[float] = None) -> dict:
    env = {"P2_SERVER_DELAY_NBD_US": str(max(0, round(page_us))),
           "P2_SERVER_DELAY_REDIS_US": str(max(0, round(object_us)))}
    if nfs_us is not None:
        env["P2_SERVER_DELAY_NFS_US"] = str(max(0, round(nfs_us)))
    return env


def nfs_delay(cal: dict) -> float:
    """The file server's delay per NFS read: its page's cost (NFS_PAGE_MS, scaled) less the
    client's work on a page, taken as the page server's (the calibrated target less its delay)."""
    return NFS_PAGE_MS * 1000 * COST_1990_SCALE - (cal["target"][0] - cal["delays"][0])


def calibrate(exe: Path, eng: "Engines", opts: Options, tmp: Path, *, rounds: int = 4,
              tolerance: float = 0.05, say: Callable[[str], None] = lambda m: None) -> dict:
    """The 1990 cost model's round trips, measured: the runtime pads each request to the
    engine to at least its delay (P2_SERVER_DELAY_*_US), and what a page or an object costs
    in a scan is that plus the client's own work (fault, copy, eviction, the walk). A process
    scans one set on the page and the object server with no delay (today's cost), then with
    delays = the targets (cost_1990_targets) over the requests a fetch makes (a page read
    one; an object fetch two Redis commands, the version and the bytes, in one pipeline),
    each next round corrected by what a fetch missed its target by, until both are within
    `tolerance`. Returns {target, native, delays, measured, rounds: [(delays, measured)]}
    (µs, page then object; delays per request to the engine, the others per fetch)."""
    target = cost_1990_targets()
    tmp.mkdir(parents=True, exist_ok=True)
    copts = Options(objects=opts.objects, sets=1, fs=(30,), region=opts.region, seed=opts.seed,
                    systems=("PAGESERVER", "OBJSERVER"))
    per_fetch = (1.0, 2.0)     # requests to the engine per page read, per object fetch

    def measure(delays: tuple, i: int) -> tuple:
        eng.fresh()
        rc, out, err = run_once(exe, copts, 30, str(tmp / f"cal{i}.json"), str(tmp / f"cal{i}"),
                                delays=delays_env(*delays), steps=("build", "scan"))
        got = scan_request_us(parse_output(out)[0])
        if rc != 0 or len(got) != 2:
            raise EnvError(f"acob: the cost model's calibration run failed (exit {rc}): {err.strip()[-500:]}")
        return got["PAGESERVER"], got["OBJSERVER"]

    native = measure((0, 0), 0)
    delays = tuple(t / k for t, k in zip(target, per_fetch))
    hist, work = [], ([], [])
    for i in range(1, rounds + 1):
        got = measure(delays, i)
        hist.append((delays, got))
        say(f"calibration {i}: delays page {delays[0]:.0f} µs, object {delays[1]:.0f} µs: a page cost "
            f"{got[0]:.0f} µs, an object {got[1]:.0f} µs (targets {target[0]:.0f}, {target[1]:.0f})")
        if all(abs(g - t) <= tolerance * t for g, t in zip(got, target)):
            break
        # the client's work beyond the padded round trips, its median over the rounds (one
        # round on a loaded machine can be twice another), at most a whole native fetch
        for j in range(2):
            work[j].append(min(native[j], max(0.0, got[j] - per_fetch[j] * delays[j])))
        delays = tuple(max(0.0, (t - statistics.median(w)) / k) for t, w, k in zip(target, work, per_fetch))
    best = min(hist, key=lambda h: max(abs(g - t) / t for g, t in zip(h[1], target)))
    return dict(target=target, native=native, delays=best[0], measured=best[1], rounds=hist)


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
            if c["system"] != "RAWNBD":     # raw reads of the export, no walk
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


def report_lines(opts: Options, runs: list, command: Optional[str], cal: Optional[dict] = None,
                 ra_runs: Optional[list] = None) -> list:
    md = ["# ACOB: a local file, a page server and an object server", "",
          f"{opts.sets} sets of {opts.objects:,} complex objects (7 records of 112 bytes, 35 to a "
          f"4 KiB page), region {opts.region} pages, smearing {'on' if opts.smear else 'off'}, "
          f"{opts.objects // 5} objects per random query, seed {opts.seed}; client buffer of B pages "
          "(page server) or 35·B records (object server), emptied before each query and set "
          "(LOCAL: the file in the OS's page cache, hot); root ids read from the driver's memory, "
          "not the server; "
          f"{opts.repetitions} process(es) per (B, f), engines fresh for each. Cost model: "
          + ("native (today's engines on loopback as they are)." if opts.cost == "native" else
             "1990 ratios: Table 1's reply cost by size at 1/50, injected on the client (labelled "
             "P2_SERVER_DELAY_NBD_US / _REDIS_US: the runtime sleeps until each request's round "
             "trip has taken at least that), calibrated below."), ""]
    if command:
        md += ["Command: `" + command + "`", ""]
    md += calibration_lines(cal, runs)
    md += counted_lines(opts, runs, cal)
    for buf in opts.buffers:
        for f in opts.fs:
            md += _section(opts, runs, f, buf)
    if len(opts.buffers) > 1:
        md += _sweep(opts, runs)
    md += target_lines(runs, native=opts.cost == "native", ra_runs=ra_runs)
    return md


def _per_process(runs: list, fn) -> list:
    return [x for x in (fn(r["counts"]) for r in runs) if x is not None]


def _step(counts: list, system: str, step: str) -> list:
    return [c for c in counts if c["system"] == system and c["step"] == step]


HOT_TARGET, FAULT_TARGET = 1.05, 1.5
# the read-ahead row: nbdkit's delay filter at 1 ms a read; P2_SERVER_READAHEAD's pages;
# its targets: requests in flight at once, and the scan's speed-up over one at a time
READAHEAD, READAHEAD_DELAY = 16, "delay-read=1ms"
INFLIGHT_TARGET, SPEEDUP_TARGET = 8, 5.0


def readahead_runs(exe: Path, eng: "Engines", opts: Options, tmp: Path, *, env: Optional[dict] = None,
                   say: Callable[[str], None] = lambda m: None) -> list:
    """The read-ahead row (--targets): the page server's build and scan over nbdkit with its
    delay filter (every read 1 ms), restarted with it on the page server's port so that the
    binary's URI serves, each of opts.repetitions times as a pair of processes in a random
    order, one with read-ahead off (a request at a time) and one with P2_SERVER_READAHEAD.
    Native costs; env: more of the processes' environment (P2_SERVER_FAULTS). [{rep,
    readahead, rc, counts, stderr, benchmark: its Google Benchmark JSON}]."""
    from dataclasses import replace
    popts = replace(opts, systems=("PAGESERVER",), targets=False)
    tmp.mkdir(parents=True, exist_ok=True)
    slow = NbdServer(port=eng.nbd.port, size=eng.nbd.size, plugin="memory", filters=("delay",))
    out = []
    eng.nbd.stop()
    try:
        for rep in range(opts.repetitions):
            for ra in random.sample([0, READAHEAD], 2):
                slow.start((READAHEAD_DELAY,))
                try:
                    rc, stdout, stderr = run_once(
                        exe, popts, opts.fs[0], str(tmp / f"ra{rep}_{ra}.json"), str(tmp / f"ra{rep}_{ra}"),
                        delays={"P2_SERVER_READAHEAD": str(ra), **(env or {})}, steps=("build", "scan"))
                finally:
                    slow.stop()
                gb = tmp / f"ra{rep}_{ra}.json"
                out.append(dict(rep=rep, readahead=ra, rc=rc, counts=parse_output(stdout)[0], stderr=stderr,
                                benchmark=json.loads(gb.read_text()) if gb.exists() else None))
                say(f"read-ahead {ra} run {rep}: exit {rc}")
    finally:
        eng.nbd.start()
    return out


def readahead_lines(ra_runs: list) -> list:
    """The read-ahead row: per repetition the scan's time one request at a time over its
    time with read-ahead (the pair's ratio), and the most requests in flight at once; the
    medians."""
    def scan(r):
        cs = [c for c in r["counts"] if c["system"] == "PAGESERVER" and c["step"] == "scan"]
        return (sum(c["ms"] for c in cs), max(c.get("inflight", 0) for c in cs),
                sum(c["reads"] for c in cs)) if cs and r["rc"] == 0 else None
    pairs = {}
    for r in ra_runs:
        pairs.setdefault(r["rep"], {})[r["readahead"]] = scan(r)
    got = [(p[0], p[READAHEAD]) for p in pairs.values() if p.get(0) and p.get(READAHEAD)]
    if not got:
        return []
    speedup = statistics.median(one[0] / ahead[0] for one, ahead in got)
    inflight = statistics.median(ahead[1] for _, ahead in got)
    one_ms, ahead_ms = statistics.median(g[0][0] for g in got), statistics.median(g[1][0] for g in got)
    reads = statistics.median(g[0][2] for g in got), statistics.median(g[1][2] for g in got)
    met = inflight >= INFLIGHT_TARGET and speedup >= SPEEDUP_TARGET
    return [f"| with nbdkit's 1 ms `delay` filter, a scan keeps ≥ {INFLIGHT_TARGET} requests in flight "
            f"(P2_SERVER_READAHEAD={READAHEAD}) and runs ≥ {SPEEDUP_TARGET:.0f}× faster than one at a time | "
            f"{inflight:.0f} in flight, {speedup:.2f}× ({ahead_ms:,.0f} ms against {one_ms:,.0f}; "
            f"{reads[1]:,.0f} pages read against {reads[0]:,.0f}; pairs of processes: {len(got)}) | {'yes' if met else 'no'} |"]


def target_lines(runs: list, native: bool = True, ra_runs: Optional[list] = None) -> list:
    """The servers' targets measured here (--targets), each a median over the processes of
    the ratio within one process: the hot random read (the page server against LOCAL; its
    pages read, 0 when the buffer holds the set) and a cold fault in the scan against one
    raw libnbd read of a page (native costs only); and the read-ahead row (readahead_runs)."""
    def hot(counts):
        ps, lo = _step(counts, "PAGESERVER", "hotread"), _step(counts, "LOCAL", "hotread")
        if not ps or not lo or not sum(c["ms"] for c in lo):
            return None
        return sum(c["ms"] for c in ps) / sum(c["ms"] for c in lo), statistics.mean(c["reads"] for c in ps)

    def fault(counts):
        ps, raw = _step(counts, "PAGESERVER", "scan"), _step(counts, "RAWNBD", "read")
        if not ps or not raw or not sum(c["reads"] for c in ps) or not raw[0]["reads"]:
            return None
        page = sum(c["ms"] for c in ps) * 1000 / sum(c["reads"] for c in ps)
        one = raw[0]["ms"] * 1000 / raw[0]["reads"]
        return page / one, page, one

    hots, faults = _per_process(runs, hot), _per_process(runs, fault) if native else []
    ahead = readahead_lines(ra_runs or [])
    if not hots and not faults and not ahead:
        return []
    md = ["## Targets", "", "Each the median over the processes of the ratio taken "
          "within one process.", "", "| target | measured | met |", "|---|---|:-:|"]
    if hots:
        r, reads = statistics.median(h[0] for h in hots), statistics.median(h[1] for h in hots)
        md.append(f"| hot random read: page server ≤ {HOT_TARGET}× LOCAL (every page resident) | "
                  f"{r:.2f}× ({reads:,.0f} pages read a set hot) | {'yes' if r <= HOT_TARGET else 'no'} |")
    if faults:
        r = statistics.median(x[0] for x in faults)
        page, one = statistics.median(x[1] for x in faults), statistics.median(x[2] for x in faults)
        md.append(f"| cold fault (the scan's time per page fetched) ≤ {FAULT_TARGET}× one raw libnbd "
                  f"read of a page | {r:.2f}× ({page:.0f} µs against {one:.0f} µs) | "
                  f"{'yes' if r <= FAULT_TARGET else 'no'} |")
    md += ahead
    md.append("")
    return md


def effective_ratio(runs: list) -> Optional[tuple]:
    """(page µs, object µs, page : object) a request cost in the runs' scans, medians over
    the processes; None without both servers' scans."""
    per = [scan_request_us(r["counts"]) for r in runs]
    ps = [x["PAGESERVER"] for x in per if "PAGESERVER" in x]
    ob = [x["OBJSERVER"] for x in per if "OBJSERVER" in x]
    ratios = [x["PAGESERVER"] / x["OBJSERVER"] for x in per if len(x) == 2]
    if not ratios:
        return None
    return statistics.median(ps), statistics.median(ob), statistics.median(ratios)


def counted_lines(opts: Options, runs: list, cal: Optional[dict]) -> list:
    """The 1990 model counted rather than timed: per (B, f), each server's requests (reads and
    writes, per set) at the calibrated costs of a fetch (cal["measured"]) plus LOCAL's time
    for the step, beside the measured OBJ / PAGE ratios: the shapes without the load's noise
    in one process."""
    if not cal:
        return []
    page_us, obj_us = cal["measured"]
    md = ["### OBJ / PAGE, measured and counted", "",
          "Counted: a set's requests (reads + writes) × what a fetch cost in the calibration "
          f"(page {page_us:.0f} µs, object {obj_us:.0f} µs) + LOCAL's time for the step; > 1 where "
          "the page server is faster.", "",
          "| B | f | scan measured | counted | read measured | counted | update measured | counted |",
          "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for buf in opts.buffers:
        for f in opts.fs:
            m, t = per_set_means(runs, f, buf), time_medians(runs, f, buf)
            cells = []
            for step in ("scan", "read", "update"):
                ps, ob = m.get(("PAGESERVER", step)), m.get(("OBJSERVER", step))
                tp, to = t.get(("PAGESERVER", step)), t.get(("OBJSERVER", step))
                lo = t.get(("LOCAL", step), 0.0)
                cells.append("—" if not tp or to is None else f"{to / tp:.2f}")
                if ps is None or ob is None:
                    cells.append("—")
                    continue
                cp = lo + (ps["reads"] + ps["writes"]) * page_us / 1000
                co = lo + (ob["reads"] + ob["writes"]) * obj_us / 1000
                cells.append(f"{co / cp:.2f}")
            md.append(f"| {buf} | {f} | " + " | ".join(cells) + " |")
    md.append("")
    return md


def calibration_lines(cal: Optional[dict], runs: list) -> list:
    """The cost model's calibration, and the page : object ratio the runs' scans paid."""
    if not cal:
        return []
    (tp, to), (np_, no), (dp, do), (mp, mo) = cal["target"], cal["native"], cal["delays"], cal["measured"]
    md = ["## The 1990 cost model, calibrated", "",
          "What one request costs in a scan of one set (its time over its requests: round trip "
          "and the client's work, fault, copy and eviction included), µs:", "",
          "| | page (4 KiB) | object (112 B) | page : object |", "|---|---:|---:|---:|",
          f"| target: Table 1 at 1/50 | {tp:.0f} | {to:.0f} | {tp / to:.2f} (paper 17.9 : 8.2 = {PAPER_RATIO:.2f}) |",
          f"| native, measured (no delay) | {np_:.0f} | {no:.0f} | {np_ / no:.2f} |",
          f"| least round trip per request to the engine (a page read one, an object fetch two) | {dp:.0f} | {do:.0f} | |",
          f"| with the delay, calibration ({len(cal['rounds'])} round(s)) | {mp:.0f} | {mo:.0f} | {mp / mo:.2f} |"]
    eff = effective_ratio(runs)
    if eff:
        ep, eo, er = eff
        ok = abs(er / PAPER_RATIO - 1) <= 0.10
        md.append(f"| with the delay, the runs' scans (median) | {ep:.0f} | {eo:.0f} | {er:.2f} |")
        md += ["", f"Effective page : object ratio in the runs: **{er:.2f}**, "
               f"{er / PAPER_RATIO:.2f}× the paper's {PAPER_RATIO:.2f} "
               f"({'within' if ok else 'outside'} 10 %)."]
    md.append("")
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
    eff = effective_ratio([r for r in runs if r["f"] == f and r.get("buffer", 50) == buf])
    if eff:
        md += ["", f"A request in the scan (its time over its requests, client work included; "
               f"medians over the processes): page {eff[0]:.0f} µs, object {eff[1]:.0f} µs, "
               f"page : object {eff[2]:.2f}."]
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


def load(json_path: str) -> tuple[Options, list, Optional[dict]]:
    """(options, runs, the cost model's calibration or None) of a stored acob.json"""
    d = json.loads(Path(json_path).read_text())
    o = {k: tuple(v) if isinstance(v, list) else v for k, v in d["options"].items()}
    return Options(**o), d["runs"], d.get("calibration")


def command(*, objects, sets, full, f, region, smear, seed, repetitions, systems, out, build_dir,
            cc, cxx, jobs, buffers=(), cost="native", nfs_writes="sync", render=None, targets=False,
            say: Callable[[str], None] = print, **_) -> int:
    """`p2gen bench acob`: start the engines, build, run, check, report. Exit status."""
    from ..common import command_outputs
    if render:      # only the report of a stored run
        opts, runs, cal = load(render)
        md = report_lines(opts, runs, None, cal, json.loads(Path(render).read_text()).get("readahead"))
        write_report(out or "bench/results", "acob.md", md)
        return say_report(say, "\n".join(md), problems(runs), wrote=[str(Path(out) / "acob.md")])
    opts = Options(objects=objects, sets=5 if full else sets, targets=targets,
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
        cal = (calibrate(exes[opts.buffers[0]], eng, opts, Path(tmp), say=say)
               if opts.cost == "1990" else None)
        delays = delays_env(*cal["delays"], nfs_us=nfs_delay(cal)) if cal else None
        order = [(b, fv, rep) for b in opts.buffers for fv in opts.fs for rep in range(opts.repetitions)]
        random.shuffle(order)      # load on a shared machine weighs on every (B, f) alike
        for i, (b, fv, rep) in enumerate(order):
            eng.fresh()
            db_dir = Path(tmp) / f"db{i}"
            jpath = Path(tmp) / f"run{i}.json"
            rc, stdout, stderr, jpaths = run_systems(exes[b], opts, fv, str(jpath), str(db_dir), eng,
                                                     delays=delays, nbd_uri=nbd_uri)
            counts, sums = parse_output(stdout)
            gb = merge_benchmark_json([p for p in jpaths if Path(p).exists()])
            runs.append(dict(f=fv, buffer=b, rep=rep, rc=rc, counts=counts, checksums=sums,
                             stderr=stderr, systems=list(opts.systems), benchmark=gb))
            say(f"[{i + 1}/{len(order)}] B={b} f={fv} run {rep}: exit {rc}, {len(counts)} count lines")
        ra_runs = (readahead_runs(exes[opts.buffers[0]], eng, opts, Path(tmp), say=say)
                   if opts.targets and opts.cost == "native" and "PAGESERVER" in opts.systems else None)
    Path(out).mkdir(parents=True, exist_ok=True)
    Path(json_path).write_text(json.dumps({"options": opts.__dict__, "runs": runs, "calibration": cal,
                                           "readahead": ra_runs}, indent=1))
    md = report_lines(opts, runs, cmdline, cal, ra_runs)
    text = "\n".join(md)
    write_report(out, "acob.md", md)
    probs = problems(runs) + [f"read-ahead {r['readahead']} run {r['rep']}: exit {r['rc']}: "
                              f"{r['stderr'].strip()[-500:]}" for r in ra_runs or [] if r["rc"] != 0]
    return say_report(say, text, probs, wrote=[json_path, str(Path(out) / "acob.md")])
