"""LabFlow-1 reference model: replays a benchmark log (format in gen.py) in plain Python and
writes the answer of every query, the oracle that the replays on generated data managers
and on the peers (SQLite, LMDB) must match byte for byte.

It keeps the workload's data as LabBase did: the fixed top level (materials, steps, the
`involves` relation as each material's list of its steps and each step's list of its
materials, the newest step of each kind per material) as Python objects, the bottom level
as a run-time dictionary (step kinds and their attributes, versioned) and each step's
measured values as a typed payload, a TLV blob (attribute id u16, type u8, length u16,
value; little-endian; u8 one byte, i32 and f32 four, strings their bytes) decoded with the
dictionary at the step's schema version.

While replaying it checks the log itself and raises LogError (with the line number) on a
malformed or inconsistent log: unknown material, step, kind or state; a STEP whose
attributes are not exactly its kind's current ones in dictionary order; `when` not strictly
increasing; a STATE on a material in a terminal state or outside its line's states; a
read request outside an interval; an interval that is not the paper's markers 1-4, exactly
the interval's requests, REPORT1, REPORT2, markers 7-11; an END whose totals differ.

Query output: one line per read request, in log order (markers and writes print nothing):

    QUEUE s n       Q <oid> ..                the first n materials in state s, oid order
    LOOK name       L <oid> <kind> <state>    or: L absent
    LATEST m a      A <value>                 or: A absent (no step involving m carries a)
    LASTSTEP m k    S <step> <when> <who> <attr>=<value> ..   or: S absent
    HIST m          H <n> <kind>:<when>:<who> ..              m's steps in time order
    STEPMATS s      M <oid> ..                materials involved in step s, oid order
    REPORT1 t0 t1   R1 <kind>=<count> ..      every kind ever defined, dictionary order:
                                              its steps with t0 <= when <= t1
    REPORT2         R2 <state>=<count>/<when> ..   every state in the fixed order: its
                                              materials and the oldest of their newest
                                              steps' `when` ('-' when none; a material
                                              whose MAT was the interval's last request
                                              has no step yet: counted, no `when`)

Values print as the log wrote them (f32 with four decimals, see gen.py). LATEST m a is the
material view: the value of attribute a (any kind's attribute of that name) from the most
recent step involving m that carries it; the newest step of each kind per material
(`latest`) answers it, since a kind's later schema versions only add attributes.

`python -m p2gen.bench.labflow.model LOG [OUT]` replays a log and writes the query output.
"""
from __future__ import annotations

import bisect
import heapq
import struct
import sys
from dataclasses import dataclass, field

from .gen import (CUT_FACTORS, FORMAT, INITIAL_STATE, INTERVAL_REQUESTS, MATERIAL_KINDS,
                  STATES, TERMINAL, VERSION, WHO)
from .filesize import ReferenceFiles

TYPE_CODE = {"u8": 1, "i32": 2, "f32": 3, "str": 4, "var": 5}
_TLV = struct.Struct("<HBH")
LINE_STATES = {"sample": frozenset(("received", "prepped", "measured", "passed", "failed")),
               "segment": frozenset(("new", "amplified", "sequenced", "released", "failed"))}
READS = frozenset(("QUEUE", "LOOK", "LATEST", "LASTSTEP", "HIST", "STEPMATS"))
INTERVAL_OPEN = ((1, "BASELINE"), (2, "COMMIT"), (3, "MEASURE"), (4, "BASELINE"))
INTERVAL_CLOSE = ((7, "MEASURE"), (8, "BASELINE"), (9, "COMMIT"), (10, "MEASURE"),
                  (11, "DBSIZE"))


class LogError(ValueError):
    def __init__(self, lineno: int, msg: str):
        super().__init__(f"line {lineno}: {msg}")
        self.lineno = lineno


@dataclass
class Attr:
    id: int
    kind: int
    name: str
    type: str           # u8, i32, f32, str<N>, var
    since: int          # the dictionary version its request made


@dataclass
class Kind:
    id: int
    name: str
    since: int
    retired: int | None = None      # the version of the SPLIT that retired it
    attrs: list = field(default_factory=list)       # Attr, in dictionary order

    def layout(self, version: int) -> list:
        """The attributes a step of this kind carries at schema version `version`."""
        return [a for a in self.attrs if a.since <= version]


@dataclass
class Material:
    oid: int
    name: str
    kind: str
    state: str
    hist: list = field(default_factory=list)        # step oids, in `when` order


@dataclass
class Step:
    oid: int
    kind: int
    schema_ver: int
    who: str
    when: int
    mats: tuple
    payload: bytes


@dataclass
class Interval:
    k: int
    first_line: int                 # line of MARK k 4
    requests: int = 0
    size_at_cut: int = 0           # estimated_bytes() there
    ops: dict = field(default_factory=dict)         # opcode -> count inside the interval
    closed: bool = False


def _type_code(t: str) -> int:
    return TYPE_CODE["str"] if t.startswith("str") else TYPE_CODE[t]


def encode(layout: list, values: list) -> bytes:
    """The TLV payload of `values` (texts, in layout order)."""
    out = bytearray()
    for a, v in zip(layout, values):
        t = a.type
        if t == "u8":
            b = struct.pack("<B", int(v))
        elif t == "i32":
            b = struct.pack("<i", int(v))
        elif t == "f32":
            b = struct.pack("<f", float(v))
        else:
            b = v.encode("ascii")
        out += _TLV.pack(a.id, _type_code(t), len(b)) + b
    return bytes(out)


def decode(layout: list, payload: bytes) -> list:
    """[(Attr, value text)] of a payload read with `layout`; ValueError unless the payload
    holds exactly the layout's attributes, in order, with their types and sizes."""
    out = []
    pos = 0
    for a in layout:
        if pos + _TLV.size > len(payload):
            raise ValueError(f"payload ends before attribute {a.name}")
        aid, code, n = _TLV.unpack_from(payload, pos)
        pos += _TLV.size
        if aid != a.id or code != _type_code(a.type):
            raise ValueError(f"payload holds attribute {aid} type {code} where the layout "
                             f"has {a.name} ({a.id}, {a.type})")
        b = payload[pos:pos + n]
        pos += n
        if a.type == "u8":
            v = str(struct.unpack("<B", b)[0])
        elif a.type == "i32":
            v = str(struct.unpack("<i", b)[0])
        elif a.type == "f32":
            v = f"{struct.unpack('<f', b)[0]:.4f}"
        else:
            v = b.decode("ascii")
        out.append((a, v))
    if pos != len(payload):
        raise ValueError(f"{len(payload) - pos} bytes after the layout's attributes")
    return out


class Model:
    """The reference model. `replay(lines)` runs a log; `out` collects the query output."""

    def __init__(self):
        self.interval_len = INTERVAL_REQUESTS       # the header's interval= sets it
        self.version = 0
        self.kinds: list[Kind] = []
        self.kind_by_name: dict[str, Kind] = {}
        self.attrs: list[Attr] = []
        self.attrs_named: dict[str, list] = {}          # attribute name -> [Attr]
        self.materials: list[Material] = []
        self.by_name: dict[str, int] = {}
        self.steps: list[Step] = []
        self.whens: list[int] = []                      # steps' `when`, ascending
        self.latest: dict[tuple, int] = {}              # (m, kind id) -> step oid
        self.queues: dict[str, set] = {s: set() for s in STATES}
        self.n_involves = 0
        self.files = ReferenceFiles()                   # the generator's byte model, fed the same writes
        self.out: list[str] = []
        self.intervals: list[Interval] = []
        self.ended = False
        # interval parser state: 'build' (outside), 'open' (markers 1..4 so far), 'run'
        # (the requests), 'reports', 'close' (markers 7.. so far)
        self._phase = "build"
        self._expect = 0
        self.seed = self.memory = None

    def estimated_bytes(self) -> int:
        """The generator's byte model of the reference variant's files (filesize.py),
        fed the same writes: the generator's running estimate must agree with it at every
        cut point."""
        return self.files.size()

    # -- helpers ------------------------------------------------------------------------------
    def material(self, tok: str) -> Material:
        m = int(tok)
        if not 1 <= m <= len(self.materials):
            raise KeyError(f"no material {tok}")
        return self.materials[m - 1]

    def step(self, tok: str) -> Step:
        s = int(tok)
        if not 1 <= s <= len(self.steps):
            raise KeyError(f"no step {tok}")
        return self.steps[s - 1]

    def kind(self, name: str) -> Kind:
        k = self.kind_by_name.get(name)
        if k is None:
            raise KeyError(f"no step kind {name}")
        return k

    def values(self, s: Step) -> list:
        """[(Attr, value text)] of a step, decoded with its kind at its schema version."""
        return decode(self.kinds[s.kind].layout(s.schema_ver), s.payload)

    def latest_value(self, m: int, attr: str):
        """The material view: (value, step) of `attr` on material m from the newest step
        that carries it, through the latest table; None if no step does."""
        best = None
        for a in self.attrs_named.get(attr, ()):
            s = self.latest.get((m, a.kind))
            if s is None:
                continue
            st = self.steps[s - 1]
            if st.schema_ver >= a.since and (best is None or st.when > best[1].when):
                best = (a, st)
        if best is None:
            return None
        a, st = best
        return next(v for x, v in self.values(st) if x is a), st

    def latest_by_scan(self, m: int, attr: str):
        """The same by brute force: m's history scanned from the newest step."""
        for s in reversed(self.materials[m - 1].hist):
            st = self.steps[s - 1]
            for a, v in self.values(st):
                if a.name == attr:
                    return v, st
        return None

    # -- schema -------------------------------------------------------------------------------
    def _new_kind(self, name: str) -> Kind:
        if name in self.kind_by_name:
            raise ValueError(f"step kind {name} exists")
        k = Kind(len(self.kinds), name, self.version)
        self.kinds.append(k)
        self.files.dictionary(1, 0)
        self.kind_by_name[name] = k
        return k

    def _new_attr(self, k: Kind, name: str, typ: str) -> None:
        if any(a.name == name for a in k.attrs):
            raise ValueError(f"{k.name} already has attribute {name}")
        if not (typ in ("u8", "i32", "f32", "var") or
                (typ.startswith("str") and typ[3:].isdigit() and 1 <= int(typ[3:]) <= 255)):
            raise ValueError(f"unknown type {typ}")
        a = Attr(len(self.attrs), k.id, name, typ, self.version)
        self.attrs.append(a)
        self.files.dictionary(0, 1)
        k.attrs.append(a)
        self.attrs_named.setdefault(name, []).append(a)

    def _live_kind(self, name: str) -> Kind:
        k = self.kind(name)
        if k.retired is not None:
            raise ValueError(f"step kind {name} was split")
        return k

    # -- the requests -------------------------------------------------------------------------
    def replay(self, lines, require_end: bool = True) -> list[str]:
        """Replay an iterable of log lines (str, with or without the newline); returns the
        query output lines (also in self.out). `require_end=False` accepts a prefix of a
        log (to look at the model's state at some point of it)."""
        it = iter(lines)
        first = next(it, "").rstrip("\n").split(" ")
        if first[:2] != [FORMAT, str(VERSION)] or len(first) != 5 or \
                [f.partition("=")[0] for f in first[2:]] != ["seed", "memory", "interval"]:
            raise LogError(1, f"not a {FORMAT} version {VERSION} log")
        self.seed, self.memory, self.interval_len = (int(f.partition("=")[2]) for f in first[2:])
        for lineno, line in enumerate(it, 2):
            if self.ended:
                raise LogError(lineno, "text after END")
            t = line.rstrip("\n").split(" ")
            try:
                self._request(lineno, t)
            except LogError:
                raise
            except (KeyError, ValueError, IndexError, AssertionError) as e:
                raise LogError(lineno, f"{line.strip()[:80]}: {e}") from None
        if require_end and not self.ended:
            raise LogError(0, "the log has no END line (truncated?)")
        return self.out

    def _interval_marker(self, lineno: int, t: list) -> None:
        k, q, action = int(t[1]), int(t[2]), t[3]
        if self._phase == "build":
            if not self.intervals and k == 0 and (q, action) == (1, "BASELINE") and \
                    lineno == 2:
                return
            if (k, q, action) != (len(self.intervals) + 1, 1, "BASELINE"):
                raise ValueError("expected the next interval's MARK k 1 BASELINE")
            self._phase, self._expect = "open", 1
            return
        cur = self.intervals[-1] if self._phase != "open" else None
        if self._phase == "open":
            want = INTERVAL_OPEN[self._expect]
            if k != len(self.intervals) + 1 or (q, action) != want:
                raise ValueError(f"expected MARK {len(self.intervals) + 1} {want[0]} {want[1]}")
            self._expect += 1
            if self._expect == len(INTERVAL_OPEN):
                self.intervals.append(Interval(k, lineno, size_at_cut=self.estimated_bytes()))
                self._phase = "run"
            return
        if self._phase != "close" or k != cur.k or (q, action) != INTERVAL_CLOSE[self._expect]:
            raise ValueError("marker out of place (an interval is 4 markers, its requests, "
                             "REPORT1, REPORT2, then markers 7..11)")
        self._expect += 1
        if self._expect == len(INTERVAL_CLOSE):
            cur.closed = True
            self._phase = "build"

    def _request(self, lineno: int, t: list) -> None:
        op = t[0]
        if op == "MARK":
            if len(t) not in (4, 5):
                raise ValueError("MARK takes interval, query, action [label]")
            self._interval_marker(lineno, t)
            return
        if op in ("REPORT1", "REPORT2"):
            if self._phase == "run" and op == "REPORT1":
                cur = self.intervals[-1]
                if cur.requests != self.interval_len:
                    raise ValueError(f"interval {cur.k} has {cur.requests} requests before "
                                     f"its reports, not {self.interval_len}")
                self._phase, self._expect = "reports", 0
            self._report(op, t)
            return
        if op == "END":
            if self._phase != "build":
                raise ValueError("END inside an interval")
            if len(self.intervals) != len(CUT_FACTORS):
                raise ValueError(f"{len(self.intervals)} intervals, not {len(CUT_FACTORS)}")
            want = (len(self.materials), len(self.steps), self.n_involves)
            if tuple(map(int, t[1:4])) != want:
                raise ValueError(f"END totals {t[1:4]} but the log made {want}")
            self.ended = True
            return
        # a request: counted in the open interval
        if self._phase in ("open", "reports", "close"):
            raise ValueError("request between an interval's markers")
        if self._phase == "run":
            cur = self.intervals[-1]
            cur.requests += 1
            cur.ops[op] = cur.ops.get(op, 0) + 1
            if cur.requests > self.interval_len:
                raise ValueError(f"interval {cur.k} has more than {self.interval_len} requests")
        elif op in READS:
            raise ValueError("a read-only request outside the intervals")
        handler = getattr(self, "op_" + op, None) if op.isupper() else None
        if handler is None:
            raise ValueError(f"unknown request {op}")
        handler(t)

    def _report(self, op: str, t: list) -> None:
        # REPORT1 then REPORT2, right after the interval's requests
        if self._phase != "reports":
            raise ValueError(f"{op} outside an interval's reports")
        if op == "REPORT1":
            if self._expect != 0:
                raise ValueError("REPORT1 twice")
            self._expect = 1
            self.op_REPORT1(t)
        else:
            if self._expect != 1:
                raise ValueError("REPORT2 before REPORT1")
            self.op_REPORT2(t)
            self._phase, self._expect = "close", 0

    def op_ADDKIND(self, t):
        self.version += 1
        self._new_kind(t[1])

    def op_ADDATTR(self, t):
        k = self._live_kind(t[1])
        self.version += 1
        self._new_attr(k, t[2], t[3])

    def op_SPLIT(self, t):
        old = self._live_kind(t[1])
        self.version += 1
        old.retired = self.version
        taken = []
        for part in t[2:]:
            name, _, names = part.partition("=")
            k = self._new_kind(name)
            for a in names.split(","):
                src = next((x for x in old.attrs if x.name == a), None)
                if src is None:
                    raise ValueError(f"{old.name} has no attribute {a}")
                self._new_attr(k, a, src.type)
                taken.append(a)
        if sorted(taken) != sorted(a.name for a in old.attrs):
            raise ValueError("a split must give each attribute of the kind to one new kind")

    def op_MAT(self, t):
        name, kind = t[1], t[2]
        if kind not in MATERIAL_KINDS:
            raise ValueError(f"no material kind {kind}")
        if name in self.by_name:
            raise ValueError(f"material {name} exists")
        oid = len(self.materials) + 1
        state = INITIAL_STATE[kind]
        self.materials.append(Material(oid, name, kind, state))
        self.files.material(oid)
        self.by_name[name] = oid
        self.queues[state].add(oid)

    def op_STEP(self, t):
        k = self._live_kind(t[1])
        who, when = t[2], int(t[3])
        if who not in WHO:
            raise ValueError(f"unknown who {who}")
        if self.whens and when <= self.whens[-1]:
            raise ValueError(f"when {when} does not increase")
        mats = tuple(int(x) for x in t[4].split(","))
        if len(set(mats)) != len(mats):
            raise ValueError("a material twice in one step")
        for m in mats:
            self.material(str(m))
        layout = k.layout(self.version)
        pairs = [p.partition("=") for p in t[5:]]
        if [n for n, _, _ in pairs] != [a.name for a in layout]:
            raise ValueError(f"attributes {[n for n, _, _ in pairs]} but {k.name} has "
                             f"{[a.name for a in layout]}")
        for a, (_, _, v) in zip(layout, pairs):
            if a.type.startswith("str") and len(v) > int(a.type[3:]):
                raise ValueError(f"{a.name} longer than its {a.type}")
        oid = len(self.steps) + 1
        self.steps.append(Step(oid, k.id, self.version, who, when, mats,
                               encode(layout, [v for _, _, v in pairs])))
        self.whens.append(when)
        self.n_involves += len(mats)
        self.files.step(oid, len(self.steps[-1].payload), [(m, k.id) not in self.latest for m in mats])
        for m in mats:
            self.materials[m - 1].hist.append(oid)
            self.latest[(m, k.id)] = oid

    def op_STATE(self, t):
        m, s = self.material(t[1]), t[2]
        if s not in STATES:
            raise ValueError(f"no state {s}")
        if m.state in TERMINAL:
            raise ValueError(f"material {m.oid} is {m.state}, a terminal state")
        if s not in LINE_STATES[m.kind]:
            raise ValueError(f"{s} is not a state of a {m.kind}")
        self.queues[m.state].discard(m.oid)
        self.queues[s].add(m.oid)
        m.state = s

    def op_QUEUE(self, t):
        q = self.queues[t[1]]
        self.out.append(" ".join(["Q", *map(str, heapq.nsmallest(int(t[2]), q))]))

    def op_LOOK(self, t):
        m = self.by_name.get(t[1])
        if m is None:
            self.out.append("L absent")
        else:
            mat = self.materials[m - 1]
            self.out.append(f"L {m} {mat.kind} {mat.state}")

    def op_LATEST(self, t):
        r = self.latest_value(self.material(t[1]).oid, t[2])
        self.out.append("A absent" if r is None else f"A {r[0]}")

    def op_LASTSTEP(self, t):
        m, k = self.material(t[1]), self.kind(t[2])
        s = self.latest.get((m.oid, k.id))
        if s is None:
            self.out.append("S absent")
            return
        st = self.steps[s - 1]
        vals = " ".join(f"{a.name}={v}" for a, v in self.values(st))
        self.out.append(f"S {s} {st.when} {st.who}" + (f" {vals}" if vals else ""))

    def op_HIST(self, t):
        m = self.material(t[1])
        parts = [f"{self.kinds[st.kind].name}:{st.when}:{st.who}"
                 for st in (self.steps[s - 1] for s in m.hist)]
        self.out.append(" ".join(["H", str(len(parts)), *parts]))

    def op_STEPMATS(self, t):
        st = self.step(t[1])
        self.out.append(" ".join(["M", *map(str, sorted(st.mats))]))

    def op_REPORT1(self, t):
        t0, t1 = int(t[1]), int(t[2])
        counts = [0] * len(self.kinds)
        lo = bisect.bisect_left(self.whens, t0)
        hi = bisect.bisect_right(self.whens, t1)
        for st in self.steps[lo:hi]:
            counts[st.kind] += 1
        self.out.append(" ".join(["R1", *(f"{k.name}={c}" for k, c in zip(self.kinds, counts))]))

    def op_REPORT2(self, t):
        parts = ["R2"]
        for s in STATES:
            whens = [self.steps[m.hist[-1] - 1].when
                     for m in (self.materials[o - 1] for o in self.queues[s]) if m.hist]
            parts.append(f"{s}={len(self.queues[s])}/{min(whens) if whens else '-'}")
        self.out.append(" ".join(parts))


def replay_file(path) -> Model:
    model = Model()
    with open(path, encoding="ascii") as f:
        model.replay(f)
    return model


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) not in (1, 2):
        print("usage: python -m p2gen.bench.labflow.model LOG [OUT]", file=sys.stderr)
        return 2
    try:
        model = replay_file(argv[0])
    except (OSError, LogError) as e:
        print(f"{argv[0]}: {e}", file=sys.stderr)
        return 1
    text = "".join(line + "\n" for line in model.out)
    if len(argv) == 2:
        with open(argv[1], "w", encoding="ascii") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
