"""LabFlow-1 workload generator: the seeded simulation of two production lines, written as
the *benchmark log* every LabFlow-1 variant replays.

Bonner, Shrufi and Rozen's LabFlow-1 (EDBT 1996) records a genome laboratory's event
history: materials move through stations, each visit is recorded as a *step* that
*involves* one or more materials, and the workflow's schema changes while it runs. The
benchmark log is that history as a stream of database requests, cut into three measured
intervals at database sizes of 0.5x, 1x and 2x a memory budget X.

The simulation
--------------
Line A (material kind ``sample``): receive(source) on arrival, then stations
prep(temp, salinity), measure(length, mass), qc(pass, score); states
received -> prepped -> measured -> passed | back to received on a failed qc | failed after the
third failed qc. A passed sample spawns two line-B ``segment`` materials, each with a receive
step (source = the sample's name) involving the segment and its sample.
Line B: pcr(primer, temp) on batches of up to 8 segments, sequence(seq, quality),
qc(pass, score); states new -> amplified -> sequenced -> released | back to new | failed after
the third failed qc. A qc fails with probability 0.15.

A station visit reads the station's work list (``QUEUE``: the materials in its input state,
oid order), takes the first (pcr: up to 8), reads what the station needs about them
(``LOOK``, ``LATEST``, ``LASTSTEP``, ``HIST``, ``STEPMATS``), records its ``STEP`` (one per
kind the station records: two once its kind is split) and moves each input on (``STATE``).
An arrival reads the receiving desk's work list, then writes ``MAT`` and the receive step; a
spawn reads the sample's length first. The read probabilities (P_* below) are tuned so that
inside the intervals the request mix is within 5 points of the spec's target shares. Which
station is visited is drawn with weights equal to the length of its work list, so the lines
drain evenly. [choice] A sample arrives with probability 1/10 per visit, not 1 per 5 visits
as the workload's specification has it: a sample needs about 8.5 visits (3 on line A plus 2
x 2.5 on line B, redone work included), so one arrival per 5 visits would grow the work
lists without bound and the queues would hold most of the database; at 1/10 the lines run at
about 85 % load and the work lists stay short, as a laboratory's do.

Schema changes (through a run-time dictionary; steps carry typed payloads, as LabBase did):
each of the three intervals holds one attribute added (measure.purity, pcr.cycles,
qc.reviewer), one step kind added and then used by the workflow (rework on every failed
qc, label on every pair of spawned segments, review on every released segment) and one step kind
split into two that the station then records in turn (prep -> heat + salt,
sequence -> seqrun + basecall, pcr -> pcrsetup + pcrrun), at positions drawn inside the
interval. The initial schema is itself written as ADDKIND/ADDATTR requests at the start.

Database size and cut points
----------------------------
The cut points are log positions where the database reaches 0.5X, 1X and 2X. The generator
follows the reference variant's files (the segmented persistent one) as the log's writes
make them grow, with a byte model of its allocator and layers (filesize.py) [choice]: an
estimate rather than a measured file, so that the log does not depend on a build of the
variant. The files grow in steps (a block that doubles), so an interval opens before or
after the write that carries the estimate past its cut point, whichever side is nearer.
The replay of the reference variant reports its files at each cut point (`cut_file_bytes`);
the byte model gives them to the byte, and they lie within the spec's 10 % of 0.5X/1X/2X
for budgets of 4 MiB and more (below that, the empty database's initial blocks are more
than 0.5X). The reference model (model.py) feeds the byte model the same writes. If one
interval's 10,000 requests carry the database past the next cut point, the next interval
starts at once.

Log format (version 1)
----------------------
ASCII text, one request per line, tokens separated by single spaces, lines ending in
``\\n``, none longer than MAX_LINE (1,024) bytes with its newline, so that a C replayer can
read it with one fixed buffer. No token holds a space; names and string values are
``[A-Za-z0-9._-]+``, sequences ``[ACGT]+``. Oids are implicit and dense: the n-th ``MAT``
creates material oid n, the n-th ``STEP`` creates step oid n (both from 1), so a replayer
needs no id mapping::

    LABFLOW1 1 seed=<seed> memory=<X> interval=<n>   first line: format name and version, the
                                                     seed, X in bytes, requests per interval
    MARK <interval> <query> <action> [<label>]       interval 0 (log start) or 1..3; query is the
                                                     paper's 1..11; action BASELINE, COMMIT,
                                                     MEASURE (label backlog|interval|commit), DBSIZE
    ADDKIND <kind>                                   new step kind, no attributes yet
    ADDATTR <kind> <attr> <type>                     type: u8, i32, f32, str<N> (N <= 255), var
    SPLIT <kind> <new>=<a>,<b>.. <new>=<c>..         retire <kind>; new kinds take its attributes
    MAT <name> <sample|segment>                      new material in state received | new
    STEP <kind> <who> <when> <m1>,..,<mk> [<attr>=<value> ..]
    STATE <m> <state>
    QUEUE <state> <n>          LOOK <name>           LATEST <m> <attr>
    LASTSTEP <m> <kind>        HIST <m>              STEPMATS <s>
    REPORT1 <t0> <t1>          REPORT2
    END <materials> <steps> <involves>               last line: the totals, to detect truncation

States, in their fixed numbering: received prepped measured passed new amplified sequenced
released failed (passed, released and failed are terminal). ``who`` is one of the 16 names of
``WHO``. ``when`` is a strictly increasing integer clock (seconds) over STEP requests.

Dictionary versions: the version starts at 0 and every ADDKIND, ADDATTR and SPLIT adds 1;
an attribute's ``since`` is the version its request made. A step replayed at version v
(its schema_ver) carries exactly the attributes of its kind with since <= v, in the order
they were added, and a STEP line lists them in that order. Values: u8 and i32 in decimal;
f32 values are multiples of 1/16 below 2^19 in magnitude, written with exactly four
decimals, so that ``strtof``/``float`` read them exactly and ``%.4f`` writes them back
unchanged; strings as they are.

A benchmark interval is, as in the paper: ``MARK k 1 BASELINE``, ``MARK k 2 COMMIT``,
``MARK k 3 MEASURE backlog``, ``MARK k 4 BASELINE``, exactly 10,000 requests (writes, reads
and schema changes; the header's interval=, which only tests change), ``REPORT1`` and
``REPORT2``, ``MARK k 7 MEASURE interval``, ``MARK k 8 BASELINE``, ``MARK k 9 COMMIT``,
``MARK k 10 MEASURE commit``, ``MARK k 11 DBSIZE``. Outside the intervals the log holds only
writes and schema changes (the paper dropped every read-only request there); the log starts
with ``MARK 0 1 BASELINE`` and ends after the third interval with the writes of the station
visit it cut, then ``END``.

Random numbers
--------------
[choice] splitmix64 (Steele, Lea, Flood 2014), written out below, rather than Python's
``random``: its output is defined by eight lines of integer arithmetic, so a C replayer or
generator can reproduce it, and no Python release can change it (``random.Random``'s
integer seeding and ``random()``/``getrandbits`` are stable, but ``randrange``, ``choice``
and ``shuffle`` are defined by CPython's implementation and have changed before: their
outputs for a seed changed in 3.2 when they moved to ``_randbelow``, ``shuffle`` lost its
``random`` argument in 3.11, ``randrange`` its float arguments in 3.12). Draws use only
integers: ``below(n)`` is the high word of ``next() * n`` (Lemire's multiply-shift without
rejection; its relative bias, n / 2^64, is below 2^-37 for the n used here), probabilities
are per mille. The only floats written are multiples of 1/16 formatted with four
decimals, exact in any correctly rounding ``printf`` or Python. Every draw is made
whether or not its request is written (reads outside intervals are dropped after drawing),
so the simulation does not depend on where the intervals fall.
"""
from __future__ import annotations

import hashlib
import heapq
import io
from dataclasses import dataclass, field

from .filesize import ReferenceFiles

FORMAT = "LABFLOW1"
VERSION = 1
DEFAULT_SEED = 1996
DEFAULT_MEMORY = 8 << 20        # X for CI; the paper's X was 32 MB
INTERVAL_REQUESTS = 10_000
MAX_LINE = 1024                 # the longest line is a sequence step, under 800 bytes
CUT_FACTORS = ((1, 2), (1, 1), (2, 1))      # 0.5X, 1X, 2X as fractions
CUT_NAMES = ("0.5X", "1X", "2X")

M64 = (1 << 64) - 1

STATES = ("received", "prepped", "measured", "passed",
          "new", "amplified", "sequenced", "released", "failed")
TERMINAL = frozenset(("passed", "released", "failed"))
INITIAL_STATE = {"sample": "received", "segment": "new"}
MATERIAL_KINDS = ("sample", "segment")
WHO = ("ada", "barbara", "claude", "dana", "edsger", "frances", "grace", "hedy",
       "ivan", "jean", "ken", "leslie", "margaret", "niklaus", "olga", "radia")

# The initial step kinds and their attributes (name, type), in dictionary order.
INITIAL_SCHEMA = (
    ("receive", (("source", "str16"),)),
    ("prep", (("temp", "f32"), ("salinity", "f32"))),
    ("measure", (("length", "i32"), ("mass", "f32"))),
    ("qc", (("pass", "u8"), ("score", "f32"))),
    ("pcr", (("primer", "str20"), ("temp", "f32"))),
    ("sequence", (("seq", "var"), ("quality", "f32"))),
)
# Per interval: the attribute added, the kind added (used by the workflow from then on),
# the kind split (into two kinds taking its attributes in order, the first `n` to the first).
SCHEMA_CHANGES = (
    (("measure", "purity", "f32"), ("rework", (("reason", "str16"),)),
     ("prep", (("heat", 1), ("salt", None)))),
    (("pcr", "cycles", "i32"), ("label", (("barcode", "str16"),)),
     ("sequence", (("seqrun", 1), ("basecall", None)))),
    (("qc", "reviewer", "str16"), ("review", (("ok", "u8"), ("note", "str16"))),
     ("pcr", (("pcrsetup", 1), ("pcrrun", None)))),
)
REASONS = ("contamination", "low-yield", "smear", "no-signal", "mislabel")
NOTES = ("ok", "recheck", "borderline", "clean", "faint")

# The byte model of the reference variant's files is filesize.py's.
SIZE_TLV = 5                    # payload entry header: attr id u16, type u8, length u16
TYPE_BYTES = {"u8": 1, "i32": 4, "f32": 4}

P_FAIL = 150                    # per mille
P_ARRIVAL = 100                 # per mille per visit
MAX_FAILS = 3
PCR_BATCH = 8
WORKLIST = 10                   # materials a station's QUEUE request asks for
# [choice] per-visit read probabilities (per mille), tuned so that inside the intervals the
# request mix is within 5 points of the spec's target shares (tests/bench/test_labflow.py checks).
P_LOOK = 1000
P_LASTSTEP = 900
P_HIST = 1000
P_STEPMATS = 500


class SplitMix64:
    """splitmix64: state += golden gamma; output = the state through two xor-shift-multiply
    rounds. Same constants as the reference C code (Vigna's splitmix64.c)."""

    __slots__ = ("s",)

    def __init__(self, seed: int):
        self.s = seed & M64

    def next(self) -> int:
        self.s = z = (self.s + 0x9E3779B97F4A7C15) & M64
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        return z ^ (z >> 31)

    def below(self, n: int) -> int:
        """An integer in [0, n): the high 64 bits of next() * n."""
        return (self.next() * n) >> 64

    def chance(self, per_mille: int) -> bool:
        return self.below(1000) < per_mille


_BASES4 = tuple("".join("ACGT"[(b >> s) & 3] for s in (0, 2, 4, 6)) for b in range(256))
_F32 = tuple(f"{n / 16:.4f}" for n in range(1601))      # 0.0000 .. 100.0000 in 1/16 steps


def _bases(rng: SplitMix64, n: int) -> str:
    """n random bases, 32 per draw (each byte of a draw gives four)."""
    parts = []
    for _ in range((n + 31) // 32):
        parts.extend(_BASES4[b] for b in rng.next().to_bytes(8, "little"))
    return "".join(parts)[:n]


def parse_size(text: str) -> int:
    """'8M', '256MiB', '1G', '1048576' -> bytes (K/M/G are binary)."""
    t = text.strip().upper().removesuffix("B").removesuffix("I")
    mult = 1
    if t and t[-1] in "KMG":
        mult = 1 << (10 * ("KMG".index(t[-1]) + 1))
        t = t[:-1]
    try:
        n = int(t)
    except ValueError:
        raise ValueError(f"not a size: {text!r} (e.g. 8M, 256MiB, 1G)") from None
    if n <= 0:
        raise ValueError(f"not a size: {text!r} (must be positive)")
    return n * mult


@dataclass
class Summary:
    """What a generation produced: counts, the cut points (line numbers of the MARK k 4
    lines, 1-based) and the estimated size there, and the log's SHA-256."""
    seed: int
    memory: int
    lines: int = 0
    requests: int = 0
    materials: int = 0
    steps: int = 0
    involves: int = 0
    cuts: list = field(default_factory=list)        # (line, estimated bytes)
    # per cut point, the estimates before and after the write request that carried the
    # estimate past it (None before: it was past already when the interval before closed)
    crossings: list = field(default_factory=list)
    sha256: str = ""


class _Sim:
    def __init__(self, out, seed: int, memory: int, interval: int):
        self.out = out
        self.rng = SplitMix64(seed)
        self.memory = memory
        self.interval_len = interval
        self.cut_bytes = [memory * a // b for a, b in CUT_FACTORS]
        self.sha = hashlib.sha256()
        self.sum = Summary(seed, memory)
        self.buf: list[str] = []
        self.files = ReferenceFiles()   # the byte model, fed every write before it is written
        self.est = self.files.size()    # the empty database's files
        self.clock = 820_454_400        # 1996-01-01T00:00:00Z
        self.clock0 = self.clock
        self.n_mat = self.n_step = self.n_inv = 0
        self.n_samples = self.n_segments = 0
        # simulation state per material (index oid - 1)
        self.names: list[str] = []
        self.fails: list[int] = []
        self.latest_pairs: set = set()          # (m, kind) with a step: the latest table
        self.last_pcr: dict[int, int] = {}      # m -> step oid of its newest pcr-role step
        self.work = {s: [] for s in STATES if s not in TERMINAL}   # min-heaps of oids
        # dictionary: kind -> [(attr, type)], and the kinds each station role records
        self.kinds: dict[str, list] = {}
        self.role_kinds = {r: [r] for r in ("prep", "measure", "qc", "pcr", "sequence")}
        # intervals
        self.k = 0                      # intervals opened so far
        self.live = False               # inside an interval: reads are written
        self.count = 0                  # requests of the open interval
        self.done = False
        self.ddl: list = []             # (offset, callable) pending in the open interval

    # -- writing ---------------------------------------------------------------------------
    def _line(self, s: str) -> None:
        self.sum.lines += 1
        self.buf.append(s)
        if len(self.buf) >= 4096:
            self._flush()

    def _flush(self) -> None:
        data = "".join(self.buf).encode("ascii")
        self.buf.clear()
        self.sha.update(data)
        self.out.write(data)

    def _request(self, s: str) -> None:
        self._line(s)
        self.sum.requests += 1
        if self.live:
            self.count += 1
            if self.count == self.interval_len:
                self._close()

    def read(self, s: str) -> None:
        """A read request: written only inside an interval (callers test self.live first
        to spare the formatting)."""
        self._request(s)

    def write(self, s: str) -> None:
        """A write request; the caller has counted what it adds. The next interval opens
        where the estimate reaches its cut point: after this request, or before it when the
        request carries the estimate further past the cut point than it was below it (a
        block that doubles makes the file grow in steps)."""
        est = self.files.size()
        if not self.live and not self.done and self.est >= self.cut_bytes[self.k]:
            self.sum.crossings.append((None, self.est))     # the empty database is past it
            self._open()
        elif not self.live and not self.done and est >= self.cut_bytes[self.k]:
            cut = self.cut_bytes[self.k]
            self.sum.crossings.append((self.est, est))
            if cut - self.est < est - cut:
                self._open()            # at the estimate before this request
                self.est = est
                self._request(s)
                return
            self.est = est
            self._request(s)
            self._open()
            return
        self.est = est
        self._request(s)

    # -- intervals --------------------------------------------------------------------------
    def _mark(self, q: int, action: str, label: str = "") -> None:
        self._line(f"MARK {self.k} {q} {action}{' ' + label if label else ''}\n")

    def _open(self) -> None:
        self.k += 1
        self._mark(1, "BASELINE")
        self._mark(2, "COMMIT")
        self._mark(3, "MEASURE", "backlog")
        self._mark(4, "BASELINE")
        self.sum.cuts.append((self.sum.lines, self.est))
        self.live = True
        self.count = 0
        attr, kind, split = SCHEMA_CHANGES[self.k - 1]
        span = self.interval_len * 9 // 10
        offsets = sorted(self.interval_len // 20 + self.rng.below(span) for _ in range(3))
        self.ddl = [(offsets[0], lambda: self.add_attr(*attr)),
                    (offsets[1], lambda: self.add_kind(*kind)),
                    (offsets[2], lambda: self.split(*split))]

    def _close(self) -> None:
        assert not self.ddl, "a schema change did not fit in its interval"
        t0 = self.clock - (self.clock - self.clock0) // 10
        self._line(f"REPORT1 {t0} {self.clock}\n")
        self._line("REPORT2\n")
        self._mark(7, "MEASURE", "interval")
        self._mark(8, "BASELINE")
        self._mark(9, "COMMIT")
        self._mark(10, "MEASURE", "commit")
        self._mark(11, "DBSIZE")
        self.live = False
        if self.k == len(CUT_FACTORS):
            self.done = True
        elif self.est >= self.cut_bytes[self.k]:
            self.sum.crossings.append((None, self.est))
            self._open()

    # -- schema -----------------------------------------------------------------------------
    def add_kind(self, kind: str, attrs=()) -> None:
        self.kinds[kind] = []
        self.files.dictionary(1, 0)
        self.write(f"ADDKIND {kind}\n")
        for a, t in attrs:
            self.add_attr(kind, a, t)

    def add_attr(self, kind: str, attr: str, typ: str) -> None:
        self.kinds[kind].append((attr, typ))
        self.files.dictionary(0, 1)
        self.write(f"ADDATTR {kind} {attr} {typ}\n")

    def split(self, kind: str, parts) -> None:
        attrs = self.kinds.pop(kind)
        (first, n), (second, _) = parts
        self.kinds[first], self.kinds[second] = attrs[:n], attrs[n:]
        spec = " ".join(f"{k}={','.join(a for a, _ in self.kinds[k])}" for k in (first, second))
        for r, ks in self.role_kinds.items():
            if kind in ks:
                i = ks.index(kind)
                self.role_kinds[r] = ks[:i] + [first, second] + ks[i + 1:]
        # dictionary entries made: each new kind and a copy of each of its attributes
        self.files.dictionary(1, n)
        self.files.dictionary(1, len(attrs) - n)
        self.write(f"SPLIT {kind} {spec}\n")

    # -- values -----------------------------------------------------------------------------
    def value(self, attr: str, typ: str, ctx: dict) -> tuple[str, int]:
        """(text, payload bytes) of one attribute value."""
        rng = self.rng
        if attr in ctx:
            v = ctx[attr]
        elif typ == "f32":
            v = _F32[rng.below(1601)]
        elif typ == "u8":
            v = str(rng.below(2))
        elif typ == "i32":
            v = str(500 + rng.below(19_501) if attr == "length" else rng.below(100))
        elif typ == "var":
            v = _bases(rng, 300 + rng.below(401))
        elif attr == "primer":
            v = _bases(rng, 18 + rng.below(3))
        elif attr == "reason":
            v = REASONS[rng.below(len(REASONS))]
        elif attr == "note":
            v = NOTES[rng.below(len(NOTES))]
        elif attr == "reviewer":
            v = WHO[rng.below(16)]
        else:       # barcode and any other string
            v = f"bc{rng.below(10 ** 8):08d}"
        n = TYPE_BYTES.get(typ)
        return v, SIZE_TLV + (len(v) if n is None else n)

    # -- requests ---------------------------------------------------------------------------
    def step(self, kind: str, mats: list[int], ctx: dict | None = None) -> int:
        """Record one step of `kind` involving `mats`; returns its oid."""
        rng = self.rng
        self.clock += 1 + rng.below(120)
        who = WHO[rng.below(16)]
        parts = [f"STEP {kind} {who} {self.clock} {','.join(map(str, mats))}"]
        payload = 0
        ctx = ctx or {}
        for a, t in self.kinds[kind]:
            v, b = self.value(a, t, ctx)
            parts.append(f"{a}={v}")
            payload += b
        new_latest = [(m, kind) not in self.latest_pairs for m in mats]
        self.latest_pairs.update((m, kind) for m in mats)
        self.n_step += 1
        self.n_inv += len(mats)
        self.files.step(self.n_step, payload, new_latest)
        self.write(" ".join(parts) + "\n")
        return self.n_step

    def material(self, kind: str, name: str) -> int:
        self.n_mat += 1
        self.files.material(self.n_mat)
        self.names.append(name)
        self.fails.append(0)
        self.write(f"MAT {name} {kind}\n")
        heapq.heappush(self.work[INITIAL_STATE[kind]], self.n_mat)
        return self.n_mat

    def state(self, m: int, s: str) -> None:
        self.write(f"STATE {m} {s}\n")
        if s not in TERMINAL:
            heapq.heappush(self.work[s], m)

    def latest(self, m: int, attr: str) -> None:
        if self.live:
            self.read(f"LATEST {m} {attr}\n")

    def look(self, m: int) -> None:
        if self.rng.chance(P_LOOK) and self.live:
            self.read(f"LOOK {self.names[m - 1]}\n")

    # -- the workflow -----------------------------------------------------------------------
    def arrival(self) -> None:
        if self.live:       # the receiving desk looks at its work list first
            self.read(f"QUEUE received {WORKLIST}\n")
        self.n_samples += 1
        m = self.material("sample", f"smp{self.n_samples:07d}")
        self.step("receive", [m], {"source": f"lab-{self.rng.below(40):02d}"})

    def spawn(self, parent: int) -> None:
        self.latest(parent, "length")       # what the segments are cut from
        pair = []
        for _ in range(2):
            self.n_segments += 1
            m = self.material("segment", f"seg{self.n_segments:07d}")
            self.step("receive", [m, parent], {"source": self.names[parent - 1]})
            pair.append(m)
        if "label" in self.kinds:           # one labelling step for the pair
            self.step("label", pair)

    def qc(self, m: int, on_pass: str, on_fail: str, line_b: bool) -> None:
        self.look(m)
        for a in (("seq", "quality", "score") if line_b
                  else ("length", "mass", "purity", "score")):
            self.latest(m, a)
        if self.rng.chance(P_LASTSTEP) and self.live:
            role = "sequence" if line_b else "measure"
            self.read(f"LASTSTEP {m} {self.role_kinds[role][-1]}\n")
        if self.rng.chance(P_HIST) and self.live:
            self.read(f"HIST {m}\n")
        failed = self.rng.chance(P_FAIL)
        self.step("qc", [m], {"pass": "0" if failed else "1"})
        if failed:
            self.fails[m - 1] += 1
            if "rework" in self.kinds:
                self.step("rework", [m])
            self.state(m, "failed" if self.fails[m - 1] >= MAX_FAILS else on_fail)
        else:
            if line_b and "review" in self.kinds:
                self.step("review", [m])
            self.state(m, on_pass)
            if not line_b:
                self.spawn(m)

    def visit(self) -> None:
        rng = self.rng
        work = self.work
        for off, change in self.ddl[:1]:
            if self.count >= off:
                self.ddl.pop(0)
                change()
        stations = (("prepped", "received"), ("measured", "prepped"), ("qcA", "measured"),
                    ("pcr", "new"), ("sequence", "amplified"), ("qcB", "sequenced"))
        total = sum(len(work[s]) for _, s in stations)
        if total == 0 or rng.chance(P_ARRIVAL):
            self.arrival()
            return
        r = rng.below(total)
        for name, s in stations:
            r -= len(work[s])
            if r < 0:
                break
        if self.live:
            self.read(f"QUEUE {s} {PCR_BATCH if name == 'pcr' else WORKLIST}\n")
        q = work[s]
        if name == "pcr":
            batch = [heapq.heappop(q) for _ in range(min(PCR_BATCH, len(q)))]
            for m in batch:
                self.look(m)
                self.latest(m, "source")
            sid = 0
            for kind in self.role_kinds["pcr"]:
                sid = self.step(kind, batch)
            for m in batch:
                self.last_pcr[m] = sid
                self.state(m, "amplified")
            return
        m = heapq.heappop(q)
        if name == "prepped":
            self.look(m)
            self.latest(m, "source")
            for kind in self.role_kinds["prep"]:
                self.step(kind, [m])
            self.state(m, "prepped")
        elif name == "measured":
            self.look(m)
            self.latest(m, "temp")
            self.latest(m, "salinity")
            if rng.chance(P_LASTSTEP) and self.live:
                self.read(f"LASTSTEP {m} {self.role_kinds['prep'][-1]}\n")
            for kind in self.role_kinds["measure"]:
                self.step(kind, [m])
            self.state(m, "measured")
        elif name == "sequence":
            self.look(m)
            self.latest(m, "primer")
            self.latest(m, "temp")
            if rng.chance(P_LASTSTEP) and self.live:
                self.read(f"LASTSTEP {m} {self.role_kinds['pcr'][-1]}\n")
            if rng.chance(P_STEPMATS) and self.live:
                self.read(f"STEPMATS {self.last_pcr[m]}\n")
            for kind in self.role_kinds["sequence"]:
                self.step(kind, [m])
            self.state(m, "sequenced")
        elif name == "qcA":
            self.qc(m, "passed", "received", False)
        else:
            self.qc(m, "released", "new", True)

    def run(self) -> Summary:
        self._line(f"{FORMAT} {VERSION} seed={self.sum.seed} memory={self.memory} "
                   f"interval={self.interval_len}\n")
        self._mark(1, "BASELINE")
        for kind, attrs in INITIAL_SCHEMA:
            self.add_kind(kind, attrs)
        while not self.done:
            self.visit()
        self._line(f"END {self.n_mat} {self.n_step} {self.n_inv}\n")
        self._flush()
        s = self.sum
        s.materials, s.steps, s.involves = self.n_mat, self.n_step, self.n_inv
        s.sha256 = self.sha.hexdigest()
        return s


def generate(out, seed: int = DEFAULT_SEED, memory: int = DEFAULT_MEMORY,
             interval: int = INTERVAL_REQUESTS) -> Summary:
    """Write the benchmark log for `seed` and memory budget `memory` (bytes) to the binary
    stream `out`. `interval` (requests per measured interval) is 10,000 in the benchmark;
    tests may shorten it. Returns the Summary."""
    if interval < 100:
        raise ValueError("an interval needs at least 100 requests")
    return _Sim(out, seed, memory, interval).run()


def generate_bytes(seed: int = DEFAULT_SEED, memory: int = DEFAULT_MEMORY,
                   interval: int = INTERVAL_REQUESTS) -> tuple[bytes, Summary]:
    buf = io.BytesIO()
    s = generate(buf, seed, memory, interval)
    return buf.getvalue(), s
