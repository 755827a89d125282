"""Relationships (ilist, refarray), `text` and `ref` fields, end to end.

tests/specs/links_{transient,persistent}.p2 (one schema: comps over hash[array], atoms
over hash[malloc], conns over array; six relationships covering ilist 1:N, refarray 1:N,
M:N and 1:1, two of them self-relationships) are built with p2gen, and
tests/c/links_driver.c, a command interpreter over the generated API, is compiled against
each under ASan + UBSan with LeakSanitizer ON (a transient close must free every text and
every reference block). Randomised command sequences are checked answer by answer against
`Model` below, the semantics written down in layers/ilist.c.j2, layers/refarray.c.j2 and
generator/templates/links.c.j2; for the persistent spec each sequence is split across
three processes on one file, and the reopened file must dump exactly as the model.
Targeted tests pin the edge cases; the checker's errors for relationships, ref and text
fields are checked through `p2gen check` at the end.

What the random sequences avoid on purpose: references to DELETED atoms (malloc storage
cannot always tell them from live ones, and over transient memory reading one is a
use-after-free; only wild, misaligned values are used as bad atom references), and
set_<field> on a comp whose `root` names a deleted atom (see
test_stale_root_does_not_block_other_setters).
"""
from __future__ import annotations

import hashlib
import os
import random
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Optional

import pytest

from conftest import build_san_program, cache_lock, san_quick_flags, sources_digest
from p2gen.layers import LAYERS

ROOT = Path(__file__).resolve().parents[2]
SPECS = ROOT / "tests" / "specs"
DRIVER = ROOT / "tests" / "c" / "links_driver.c"
# every bottom memory layer of the registry, each with its spec tests/specs/links_<mem>.p2
# (one schema; tests/layers/test_mem_contract.py fails, naming the layer, where one is missing),
# but those on a server (pageserver: tests/layers/test_pageserver.py, which starts one)
MEMS = tuple(n for n, l in LAYERS.items()
             if l.realm == "mem" and l.below is None and not l.file_is_uri)
HEAP = next(n for n in MEMS if not LAYERS[n].in_file)        # LeakSanitizer's probe
FILE = next(n for n in MEMS if LAYERS[n].survives_restart)   # the file-only checks


def survives(mem: str) -> bool:
    """Does a database in this memory outlive its process (reopened from its file)?"""
    return LAYERS[mem].survives_restart
CFLAGS = san_quick_flags()     # the drivers' (build_san_program's), for their cache key
CACHE_KEEP = 6
TIMEOUT = 60

NONE = (1 << 64) - 1      # <spec>_NOREF
OK, NOTFOUND = 0, 2

# ---------------------------------------------------------------------------
# the schema, as the model sees it
# ---------------------------------------------------------------------------
# (container, role) -> (many, partner container, partner role)
REL = {
    ("comps", "parts"): (True, "atoms", "part_of"),      # ilist 1:N
    ("atoms", "part_of"): (False, "comps", "parts"),
    ("atoms", "to"): (True, "conns", "from"),            # refarray 1:N
    ("conns", "from"): (False, "atoms", "to"),
    ("atoms", "from"): (True, "conns", "to"),            # ilist 1:N
    ("conns", "to"): (False, "atoms", "from"),
    ("comps", "users"): (True, "comps", "used_by"),      # refarray M:N, self, capacity 1
    ("comps", "used_by"): (True, "comps", "users"),
    ("comps", "twin"): (False, "atoms", "twin_of"),      # refarray 1:1
    ("atoms", "twin_of"): (False, "comps", "twin"),
    ("atoms", "kids"): (True, "atoms", "parent"),        # ilist 1:N, self
    ("atoms", "parent"): (False, "atoms", "kids"),
}
# roles per container in relationship (file) order: the order of the dump, and the order
# in which a delete unlinks
ROLES = {
    "comps": ["parts", "users", "used_by", "twin"],
    "atoms": ["part_of", "to", "from", "twin_of", "kids", "parent"],
    "conns": ["from", "to"],
}
FIELDS = {"comps": ["id", "root"], "atoms": ["id", "x"], "conns": ["len"]}
CONTAINERS = ("comps", "atoms", "conns")


def fnv(data: bytes) -> int:
    h = 1469598103934665603
    for b in data:
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def make_text(n: int, seed: int) -> bytes:
    """What the driver's `settext REF n seed` stores (see links_driver.c)."""
    if seed % 2 == 0:
        return bytes(97 + (seed + 7 * i + i * i) % 26 for i in range(n))
    return bytes((seed * 131 + 17 * i + (i >> 3)) & 0xFF for i in range(n))


def show(ref: int) -> str:
    return "N" if ref == NONE else str(ref)


def show_list(refs: list) -> str:
    return "[" + ",".join(show(r) for r in refs) + "]"


# ---------------------------------------------------------------------------
# the model
# ---------------------------------------------------------------------------
class Model:
    """Elements by container and reference (the references the C side hands out)."""

    def __init__(self):
        self.e = {c: {} for c in CONTAINERS}
        self.seen = {c: set() for c in CONTAINERS}   # every reference ever handed out

    def live(self, c: str, r: int) -> bool:
        return r in self.e[c]

    def dead(self, c: str) -> list:
        return sorted(self.seen[c] - set(self.e[c]))

    # -- elements -------------------------------------------------------------
    def insert(self, c: str, ref: int, vals: list) -> None:
        assert not self.live(c, ref), f"insert into {c} handed out live reference {ref}"
        el = dict(zip(FIELDS[c], vals))
        for role in ROLES[c]:
            el[role] = [] if REL[(c, role)][0] else NONE
        if c == "comps":
            el["doc"] = b""
            el["doc_hash"] = fnv(b"")
        self.e[c][ref] = el
        self.seen[c].add(ref)

    def root_ok(self, root: int) -> bool:
        return root == NONE or self.live("atoms", root)

    def update(self, c: str, ref: int, vals: list) -> int:
        if not self.live(c, ref):
            return NOTFOUND
        if c == "comps" and not self.root_ok(vals[1]):
            return NOTFOUND
        self.e[c][ref].update(zip(FIELDS[c], vals))
        return OK

    def set_field(self, c: str, ref: int, name: str, v: int) -> int:
        if not self.live(c, ref):
            return NOTFOUND
        el = self.e[c][ref]
        # set_<f> goes through the whole-record update, which checks every ref field
        if c == "comps" and not self.root_ok(v if name == "root" else el["root"]):
            return NOTFOUND
        el[name] = v
        return OK

    def set_text(self, ref: int, data: bytes) -> int:
        if not self.live("comps", ref):
            return NOTFOUND
        self.e["comps"][ref]["doc"] = data
        self.e["comps"][ref]["doc_hash"] = fnv(data)
        return OK

    def delete(self, c: str, x: int) -> int:
        if not self.live(c, x):
            return NOTFOUND
        el = self.e[c][x]
        for role in ROLES[c]:
            many, pc, prole = REL[(c, role)]
            if many:
                pmany = REL[(pc, prole)][0]
                for v in list(el[role]):
                    if pmany:
                        self.e[pc][v][prole].remove(x)   # one occurrence per occurrence
                    else:
                        self.e[pc][v][prole] = NONE
                el[role] = []
            else:
                self.set(c, role, x, NONE)
        del self.e[c][x]
        return OK

    # -- relationships --------------------------------------------------------
    def add(self, c: str, role: str, x: int, y: int) -> int:
        many, pc, prole = REL[(c, role)]
        assert many
        if not self.live(c, x) or not self.live(pc, y):
            return NOTFOUND
        if REL[(pc, prole)][0]:                       # M:N: a bag on both sides
            self.e[c][x][role].append(y)
            self.e[pc][y][prole].append(x)
        else:                                         # 1:N: y moves (to the end)
            old = self.e[pc][y][prole]
            if old != NONE:
                self.e[c][old][role].remove(y)
            self.e[c][x][role].append(y)
            self.e[pc][y][prole] = x
        return OK

    def remove(self, c: str, role: str, x: int, y: int) -> int:
        many, pc, prole = REL[(c, role)]
        assert many
        if not self.live(c, x) or not self.live(pc, y) or y not in self.e[c][x][role]:
            return NOTFOUND
        self.e[c][x][role].remove(y)
        if REL[(pc, prole)][0]:
            self.e[pc][y][prole].remove(x)
        else:
            self.e[pc][y][prole] = NONE
        return OK

    def set(self, c: str, role: str, x: int, y: int) -> int:
        many, pc, prole = REL[(c, role)]
        assert not many
        if not self.live(c, x) or (y != NONE and not self.live(pc, y)):
            return NOTFOUND
        old = self.e[c][x][role]
        if old == y:
            return OK
        if REL[(pc, prole)][0]:                       # the one side of a 1:N
            if y == NONE:
                return self.remove(pc, prole, old, x)
            return self.add(pc, prole, y, x)
        if old != NONE:                               # 1:1: previous partners let go
            self.e[pc][old][prole] = NONE
        if y != NONE:
            prev = self.e[pc][y][prole]
            if prev != NONE:
                self.e[c][prev][role] = NONE
            self.e[pc][y][prole] = x
        self.e[c][x][role] = y
        return OK

    # -- what the driver prints -----------------------------------------------
    def line(self, c: str, ref: int) -> str:
        el = self.e[c][ref]
        out = [c, str(ref)]
        for f in FIELDS[c]:
            if f == "root":
                out.append(f"root={show(el['root'])}")
                out.append(f"doc={len(el['doc'])}:{el['doc_hash']:016x}")
            else:
                out.append(f"{f}={el[f]}")
        for role in ROLES[c]:
            v = el[role]
            out.append(f"{role}={show_list(v) if isinstance(v, list) else show(v)}")
        return " ".join(out)

    def dump(self) -> list:
        return sorted(self.line(c, r) for c in CONTAINERS for r in self.e[c])


# ---------------------------------------------------------------------------
# building and running the driver
# ---------------------------------------------------------------------------
def program_flags(prefix_mem: str) -> list:
    """What tests/c/links_driver.c is compiled with over links_<mem>.h: the API's prefix."""
    return [f"-DPREFIX=links_{prefix_mem}", f'-DHEADER="links_{prefix_mem}.h"']


def _build_one(mem: str, cache_root: Path, cc: str, spec_text: Optional[str] = None) -> str:
    """The driver over tests/specs/links_<mem>.p2, or over `spec_text` named `mem`."""
    from p2gen.build import generate

    spec_text = (SPECS / f"links_{mem}.p2").read_text() if spec_text is None else spec_text
    key = hashlib.sha256("\0".join([sources_digest(), cc, " ".join(CFLAGS), spec_text,
                                    DRIVER.read_text()]).encode()).hexdigest()[:24]
    out = cache_root / f"{mem}-{key}"
    exe = out / f"links_{mem}_driver"
    if exe.exists():
        os.utime(out)
        return str(exe)
    out.mkdir(parents=True, exist_ok=True)
    spec = out / f"links_{mem}.p2"
    spec.write_text(spec_text)
    gen = generate(str(spec), str(out), f"links_{mem}")
    build_san_program(cc, str(exe) + ".tmp", [DRIVER, gen.source], out,
                      program_flags=program_flags(mem))
    os.replace(str(exe) + ".tmp", exe)
    return str(exe)


@pytest.fixture(scope="session")
def drivers(request, tmp_path_factory, cc):
    cache = getattr(request.config, "cache", None)   # None under -p no:cacheprovider
    cache_root = (Path(cache.mkdir("p2gen-links")) if cache is not None
                  and os.environ.get("P2GEN_TEST_NO_CACHE") != "1"
                  else tmp_path_factory.mktemp("links"))
    # one pytest-xdist worker prunes and builds at a time; a run's entries (one per memory,
    # fewer than CACHE_KEEP) are the newest, so pruning never removes one in use
    with cache_lock(cache_root):
        entries = sorted((d for d in cache_root.iterdir() if d.is_dir()),
                         key=lambda d: d.stat().st_mtime, reverse=True)
        for old in entries[CACHE_KEEP:]:
            subprocess.run(["rm", "-rf", str(old)])
        with ThreadPoolExecutor(max_workers=2) as pool:
            futs = {mem: pool.submit(_build_one, mem, cache_root, cc) for mem in MEMS}
            return {mem: f.result() for mem, f in futs.items()}


SAN_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
               "SUMMARY: UndefinedBehaviorSanitizer")


@pytest.fixture(scope="session")
def links_env(drivers, tmp_path_factory):
    """Sanitizer options with leak detection on; off only where LeakSanitizer cannot run
    at all (under ptrace), which the probe below detects."""
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = "detect_leaks=1:abort_on_error=0:allocator_may_return_null=1"
    env["UBSAN_OPTIONS"] = "halt_on_error=1:print_stacktrace=1"
    d = tmp_path_factory.mktemp("lsan-probe")
    probe = subprocess.run([drivers[HEAP], str(d)], input="", capture_output=True,
                           text=True, env=env, timeout=TIMEOUT)
    if "LeakSanitizer has encountered a fatal error" in probe.stderr:
        env["ASAN_OPTIONS"] = env["ASAN_OPTIONS"].replace("detect_leaks=1", "detect_leaks=0")
        env["P2GEN_LINKS_NO_LSAN"] = "1"
    else:
        assert probe.returncode == 0, probe.stderr
    return env


class Driver:
    """One driver process, talked to line by line."""

    def __init__(self, exe: str, workdir: Path, env: dict):
        self.log: list = []
        self.err = open(workdir / "driver.stderr", "w+")
        self.p = subprocess.Popen([exe, str(workdir)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=self.err, text=True,
                                  bufsize=1, cwd=str(workdir), env=env)

    def stderr(self) -> str:
        self.err.seek(0)
        return self.err.read()

    def _readline(self) -> str:
        line = self.p.stdout.readline()
        if not line:
            self.p.wait(timeout=TIMEOUT)
            raise AssertionError(f"driver died (exit {self.p.returncode}) after:\n"
                                 + "\n".join(self.log[-25:]) + "\n--- stderr ---\n"
                                 + self.stderr()[-6000:])
        return line.rstrip("\n")

    def cmd(self, line: str) -> str:
        self.log.append(line)
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        return self._readline()

    def dump(self) -> list:
        self.log.append("dump")
        self.p.stdin.write("dump\n")
        self.p.stdin.flush()
        out = []
        while (line := self._readline()) != "end":
            out.append(line)
        return sorted(out)

    def close(self) -> None:
        """EOF: the driver closes the database and exits; nothing may be reported."""
        self.p.stdin.close()
        rc = self.p.wait(timeout=TIMEOUT)
        err = self.stderr()
        self.err.close()
        assert rc == 0 and not any(m in err for m in SAN_MARKERS), (
            f"driver exit {rc} after:\n" + "\n".join(self.log[-25:]) + "\n--- stderr ---\n"
            + err[-6000:])


@pytest.fixture
def run(drivers, links_env, tmp_path):
    """run(mem) -> a Driver on the test's directory; tests close() it (which checks the
    exit status and the sanitizers' silence)."""
    started = []

    def start(mem: str, workdir: Path = tmp_path) -> Driver:
        d = Driver(drivers[mem], workdir, links_env)
        started.append(d)
        return d

    yield start
    for d in started:   # a test that stopped half-way: just stop its driver
        if d.p.poll() is None:
            d.p.kill()
            d.p.wait()
        d.err.close()


def ok_ref(answer: str) -> int:
    m = re.fullmatch(r"ok (\d+)", answer)
    assert m, f"expected 'ok REF', got {answer!r}"
    return int(m.group(1))


# ---------------------------------------------------------------------------
# randomised, against the model
# ---------------------------------------------------------------------------
class Session:
    """Random commands for one driver, each answer compared with the model."""

    def __init__(self, model: Model, rng: random.Random, mem: str, size: int):
        self.m, self.rng, self.mem, self.size = model, rng, mem, size
        self.d = None
        self.ids = 0

    def expect(self, line: str, want: str) -> str:
        got = self.d.cmd(line)
        assert got == want, self.mismatch(line, want, got)
        return got

    def mismatch(self, line, want, got) -> str:
        return (f"[{self.mem}] command {line!r}: driver said {got!r}, model says {want!r}\n"
                "recent commands:\n  " + "\n  ".join(self.d.log[-40:]))

    def check_dump(self) -> None:
        got, want = self.d.dump(), self.m.dump()
        if got != want:
            diff = [f"- {x}" for x in want if x not in got] + [f"+ {x}" for x in got if x not in want]
            raise AssertionError(f"[{self.mem}] dump differs (- model, + driver):\n"
                                 + "\n".join(diff[:40]) + "\nrecent commands:\n  "
                                 + "\n  ".join(self.d.log[-40:]))

    # -- picking references ---------------------------------------------------
    def wild(self, c: str) -> int:
        if c == "atoms":   # odd: misaligned for malloc storage, refused without a read
            return self.rng.choice([1, 17, 4097, 999_999_999_999_999, NONE])
        return self.rng.choice([NONE, 1_000_000, 1 << 40, 4096])

    def pick(self, c: str) -> int:
        live = list(self.m.e[c])
        r = self.rng.random()
        if live and r < 0.84:
            return self.rng.choice(live)
        if c != "atoms" and r < 0.93 and self.m.dead(c):
            return self.rng.choice(self.m.dead(c))
        if r < 0.96:   # a live reference of another container
            others = [x for o in CONTAINERS if o != c for x in self.m.e[o]
                      if c != "atoms" or o != "atoms"]
            if others:
                return self.rng.choice(others)
        return self.wild(c)

    def pick_partner(self, c: str) -> int:
        """A partner for a one-role, or NONE."""
        return NONE if self.rng.random() < 0.12 else self.pick(c)

    # -- one random step ------------------------------------------------------
    def step(self) -> None:
        rng, m = self.rng, self.m
        counts = {c: len(m.e[c]) for c in CONTAINERS}
        grow = 4.0 if min(counts.values()) < self.size // 3 else (
            1.0 if max(counts.values()) < self.size else 0.2)
        ops = {
            "ins": 9 * grow, "del": 2.5, "cdel": 0.5, "upd": 2, "cupd": 1, "setf": 2,
            "setroot": 2, "settext": 3, "gettext": 1, "add": 16, "rem": 7, "set": 8,
            "one": 1, "many": 1, "count": 0.5, "dump": 0.6,
            "reopen": 0.5 if survives(self.mem) else 0,
        }
        op = rng.choices(list(ops), weights=list(ops.values()))[0]
        getattr(self, "op_" + op)()

    def op_ins(self):
        c = self.rng.choice(CONTAINERS)
        self.ids += 1
        if c == "comps":
            root = NONE if self.rng.random() < 0.4 else self.pick("atoms")
            line = f"ins comps {self.ids} {show(root)}"
            if not self.m.root_ok(root):
                self.expect(line, f"rc {NOTFOUND}")
                return
            vals = [self.ids, root]
        elif c == "atoms":
            x = self.rng.randrange(-5, 100)
            line, vals = f"ins atoms {self.ids} {x}", [self.ids, x]
        else:
            n = self.rng.randrange(0, 1000)
            line, vals = f"ins conns {n}", [n]
        self.m.insert(c, ok_ref(self.d.cmd(line)), vals)

    def op_del(self, how="del"):
        c = self.rng.choice(CONTAINERS)
        r = self.pick(c)
        self.expect(f"{how} {c} {show(r)}", f"rc {self.m.delete(c, r)}")

    def op_cdel(self):
        self.op_del("cdel")

    def op_upd(self, how="upd"):
        c = "comps" if how == "cupd" else self.rng.choice(CONTAINERS)
        r = self.pick(c)
        self.ids += 1
        if c == "comps":
            vals = [self.ids, NONE if self.rng.random() < 0.4 else self.pick("atoms")]
        elif c == "atoms":
            vals = [self.ids, self.rng.randrange(-5, 100)]
        else:
            vals = [self.rng.randrange(0, 1000)]
        line = f"{how} {c} {show(r)} " + " ".join(show(v) if f == "root" else str(v)
                                                   for f, v in zip(FIELDS[c], vals))
        self.expect(line, f"rc {self.m.update(c, r, vals)}")

    def op_cupd(self):
        self.op_upd("cupd")

    def op_setf(self):
        c, f, cmd = self.rng.choice([("comps", "id", "setid comps"), ("atoms", "id", "setid atoms"),
                                     ("atoms", "x", "setx atoms"), ("conns", "len", "setlen conns")])
        r = self.pick(c)
        if c == "comps" and self.m.live(c, r) and not self.m.root_ok(self.m.e[c][r]["root"]):
            return   # root names a deleted atom: see test_stale_root_does_not_block_other_setters
        v = self.rng.randrange(-5, 1000)
        self.expect(f"{cmd} {show(r)} {v}", f"rc {self.m.set_field(c, r, f, v)}")

    def op_setroot(self):
        r, v = self.pick("comps"), self.pick_partner("atoms")
        self.expect(f"setroot {show(r)} {show(v)}", f"rc {self.m.set_field('comps', r, 'root', v)}")

    def op_settext(self):
        r = self.pick("comps")
        if self.rng.random() < 0.1:
            self.expect(f"settextnull {show(r)}", f"rc {self.m.set_text(r, b'')}")
            return
        n = self.rng.choice([0, 1, 2, 7, 16, 63, 200, 1000]) if self.rng.random() < 0.97 else 5000
        seed = self.rng.randrange(0, 1000)
        self.expect(f"settext {show(r)} {n} {seed}", f"rc {self.m.set_text(r, make_text(n, seed))}")

    def op_gettext(self):
        r = self.pick("comps")
        want = (f"rc {OK} {len(self.m.e['comps'][r]['doc'])} {self.m.e['comps'][r]['doc_hash']:016x}"
                if self.m.live("comps", r) else f"rc {NOTFOUND}")
        self.expect(f"gettext {show(r)}", want)

    def roles(self, many: bool) -> list:
        return [k for k, v in REL.items() if v[0] == many]

    def hot(self, c: str) -> int:
        """Mostly the oldest live element: long collections (blocks regrow)."""
        live = list(self.m.e[c])
        return live[0] if live and self.rng.random() < 0.35 else self.pick(c)

    def op_add(self):
        c, role = self.rng.choice(self.roles(True))
        pc = REL[(c, role)][1]
        x, y = self.hot(c), self.pick(pc)
        self.expect(f"add {c} {role} {show(x)} {show(y)}", f"rc {self.m.add(c, role, x, y)}")

    def op_rem(self):
        c, role = self.rng.choice(self.roles(True))
        pc = REL[(c, role)][1]
        holders = [r for r, el in self.m.e[c].items() if el[role]]
        x = self.rng.choice(holders) if holders and self.rng.random() < 0.7 else self.pick(c)
        held = self.m.e[c][x][role] if self.m.live(c, x) else []
        y = self.rng.choice(held) if held and self.rng.random() < 0.7 else self.pick(pc)
        self.expect(f"rem {c} {role} {show(x)} {show(y)}", f"rc {self.m.remove(c, role, x, y)}")

    def op_set(self):
        c, role = self.rng.choice(self.roles(False))
        pc = REL[(c, role)][1]
        x, y = self.pick(c), self.pick_partner(pc)
        self.expect(f"set {c} {role} {show(x)} {show(y)}", f"rc {self.m.set(c, role, x, y)}")

    def op_one(self):
        c, role = self.rng.choice(self.roles(False))
        x = self.pick(c)
        self.expect(f"one {c} {role} {show(x)}",
                    f"ref {show(self.m.e[c][x][role] if self.m.live(c, x) else NONE)}")

    def op_many(self):
        c, role = self.rng.choice(self.roles(True))
        x = self.pick(c)
        if self.m.live(c, x):
            v = self.m.e[c][x][role]
            want = f"rc {OK} n={len(v)} {show_list(v)}"
        else:
            want = f"rc {NOTFOUND} n=0 []"
        self.expect(f"many {c} {role} {show(x)}", want)

    def op_count(self):
        c = self.rng.choice(CONTAINERS)
        self.expect(f"count {c}", f"n {len(self.m.e[c])}")

    def op_dump(self):
        self.check_dump()

    def op_reopen(self):
        self.expect("reopen", f"rc {OK}")
        self.check_dump()


# (seed, ops, size): size ~ elements per container the sequence hovers around; small
# sizes make repeats, self-links and bag multiplicities frequent
RANDOM_CASES = [(1, 3000, 6), (2, 3000, 24), (3, 3000, 60), (4, 3000, 10), (5, 3000, 3),
                (6, 3000, 16), (7, 3000, 40), (8, 4000, 120)]


@pytest.mark.parametrize("mem", MEMS)
@pytest.mark.parametrize("seed,ops,size", RANDOM_CASES, ids=[f"seed{c[0]}" for c in RANDOM_CASES])
def test_random_against_model(run, tmp_path, mem, seed, ops, size):
    model = Model()
    s = Session(model, random.Random(seed * 1000 + MEMS.index(mem)), mem, size)
    # persistent: three processes on one file, each starting from what the last left
    parts = 3 if survives(mem) else 1
    for part in range(parts):
        s.d = run(mem)
        if part:
            s.check_dump()
        for _ in range(ops // parts):
            s.step()
        s.check_dump()
        s.d.close()   # transient: LeakSanitizer checks that close freed everything
    if survives(mem):
        assert (tmp_path / "links.db").exists()


def test_leak_sanitizer_is_live(drivers, links_env, tmp_path):
    """The leak checks above mean something: a deliberate leak is reported."""
    if links_env.get("P2GEN_LINKS_NO_LSAN"):
        pytest.skip("LeakSanitizer cannot run here (ptrace)")
    proc = subprocess.run([drivers[HEAP], str(tmp_path)], input="leak\n",
                          capture_output=True, text=True, env=links_env, timeout=TIMEOUT)
    assert proc.stdout == "leaked\n"
    assert proc.returncode != 0 and "LeakSanitizer" in proc.stderr


# ---------------------------------------------------------------------------
# targeted
# ---------------------------------------------------------------------------
def hexof(data: bytes) -> str:
    return data.hex()


@pytest.mark.parametrize("mem", MEMS)
def test_text_round_trip(run, mem):
    d = run(mem)
    c = ok_ref(d.cmd("ins comps 1 N"))
    other = ok_ref(d.cmd("ins comps 2 N"))
    # a new element's text is empty, whatever handle the inserted record carried
    assert d.cmd(f"gettexthex {c}") == "rc 0 0 "
    for n, seed in [(5, 2), (5, 3), (0, 4), (1, 1), (300, 9)]:
        assert d.cmd(f"settext {c} {n} {seed}") == "rc 0"
        assert d.cmd(f"gettexthex {c}") == f"rc 0 {n} {hexof(make_text(n, seed))}"
    assert d.cmd(f"settextnull {c}") == "rc 0"
    assert d.cmd(f"gettexthex {c}") == "rc 0 0 "
    big = make_text(100 * 1024, 7)          # binary, NULs inside
    big2 = make_text(100 * 1024 + 3, 8)
    assert d.cmd(f"settext {c} {len(big)} 7") == "rc 0"
    assert d.cmd(f"settext {other} {len(big2)} 8") == "rc 0"
    assert d.cmd(f"gettext {c}") == f"rc 0 {len(big)} {fnv(big):016x}"
    assert d.cmd(f"gettext {other}") == f"rc 0 {len(big2)} {fnv(big2):016x}"
    # updates of other fields (whole record with a bogus handle, setters, cursor) keep it
    a = ok_ref(d.cmd("ins atoms 1 1"))
    for line in [f"upd comps {c} 11 N", f"setid comps {c} 12", f"setroot {c} {a}",
                 f"cupd comps {c} 13 {a}", f"upd comps {c} 14 N", f"setroot {c} N"]:
        assert d.cmd(line) == "rc 0", line
        assert d.cmd(f"gettext {c}") == f"rc 0 {len(big)} {fnv(big):016x}", line
    # relationships and deleting another element leave it alone too
    assert d.cmd(f"add comps users {c} {other}") == "rc 0"
    assert d.cmd(f"del comps {other}") == "rc 0"
    assert d.cmd(f"gettext {c}") == f"rc 0 {len(big)} {fnv(big):016x}"
    # no such element
    assert d.cmd(f"settext {other} 3 2") == f"rc {NOTFOUND}"
    assert d.cmd(f"gettext {other}") == f"rc {NOTFOUND}"
    assert d.cmd("settext 99999 3 2") == f"rc {NOTFOUND}"
    # a reused slot starts with an empty text, not the deleted element's
    again = ok_ref(d.cmd("ins comps 3 N"))
    assert d.cmd(f"gettext {again}") == f"rc 0 0 {fnv(b''):016x}"
    if survives(mem):
        assert d.cmd("reopen") == "rc 0"
        assert d.cmd(f"gettext {c}") == f"rc 0 {len(big)} {fnv(big):016x}"
        assert d.cmd(f"gettexthex {again}") == "rc 0 0 "
    # many replacements: every old block is freed (LeakSanitizer / file growth)
    for i in range(200):
        assert d.cmd(f"settext {c} {i * 37 % 500} {i}") == "rc 0"
    assert d.cmd(f"gettexthex {c}") == f"rc 0 {199 * 37 % 500} {hexof(make_text(199 * 37 % 500, 199))}"
    d.close()


@pytest.mark.parametrize("mem", MEMS)
def test_ref_field_validation(run, mem):
    d = run(mem)
    a = ok_ref(d.cmd("ins atoms 1 1"))
    conn = ok_ref(d.cmd("ins conns 5"))
    for bad in ["1", "17", "4097", str(a + 1), "999999999999999"]:   # never an atom
        assert d.cmd(f"ins comps 1 {bad}") == f"rc {NOTFOUND}", bad
    assert d.cmd("count comps") == "n 0"
    c = ok_ref(d.cmd(f"ins comps 1 {a}"))
    n = ok_ref(d.cmd("ins comps 2 N"))
    assert d.cmd(f"setroot {c} 17") == f"rc {NOTFOUND}"
    assert d.cmd(f"upd comps {c} 3 17") == f"rc {NOTFOUND}"
    assert d.cmd(f"cupd comps {c} 3 17") == f"rc {NOTFOUND}"
    assert d.cmd(f"setroot {n} {conn}") == f"rc {NOTFOUND}"     # a conns reference
    assert d.cmd(f"setroot 4242 {a}") == f"rc {NOTFOUND}"       # no such comp
    line = [x for x in d.dump() if x.startswith(f"comps {c} ")][0]
    assert f"id=1 root={a} " in line                            # refused: unchanged
    assert d.cmd(f"setroot {n} {a}") == "rc 0"
    assert d.cmd(f"setroot {n} N") == "rc 0"
    assert d.cmd(f"upd comps {n} 2 {a}") == "rc 0"
    if survives(mem):
        # a freshly deleted atom (nothing allocated since) is recognised as dead
        b = ok_ref(d.cmd("ins atoms 2 2"))
        assert d.cmd(f"del atoms {b}") == "rc 0"
        assert d.cmd(f"ins comps 9 {b}") == f"rc {NOTFOUND}"
        assert d.cmd(f"setroot {n} {b}") == f"rc {NOTFOUND}"
        assert d.cmd(f"add comps parts {c} {b}") == f"rc {NOTFOUND}"
        assert d.cmd(f"set comps twin {c} {b}") == f"rc {NOTFOUND}"
    # a plain ref is not maintained: deleting its target leaves the number behind
    assert d.cmd(f"del atoms {a}") == "rc 0"
    dump = d.dump()
    assert any(x.startswith(f"comps {c} id=1 root={a} ") for x in dump), dump
    assert any(x.startswith(f"comps {n} id=2 root={a} ") for x in dump), dump
    d.close()


# setting an unrelated field must not re-check a stale `root` (target deleted): only
# changed ref fields are checked (over transient malloc the check would read freed memory)
def test_stale_root_does_not_block_other_setters(run):
    d = run(FILE)
    a = ok_ref(d.cmd("ins atoms 1 1"))
    c = ok_ref(d.cmd(f"ins comps 1 {a}"))
    assert d.cmd(f"del atoms {a}") == "rc 0"
    assert d.cmd(f"setid comps {c} 5") == "rc 0"
    d.close()


@pytest.mark.parametrize("mem", MEMS)
def test_deleting_an_owner_clears_its_members(run, mem):
    d = run(mem)
    c = ok_ref(d.cmd("ins comps 1 N"))
    atoms = [ok_ref(d.cmd(f"ins atoms {i} 0")) for i in range(4)]
    conns = [ok_ref(d.cmd(f"ins conns {i}")) for i in range(3)]
    owner = atoms[0]
    for y in atoms[1:]:
        assert d.cmd(f"add comps parts {c} {y}") == "rc 0"           # ilist
        assert d.cmd(f"set atoms parent {y} {owner}") == "rc 0"      # ilist, self
    assert d.cmd(f"add atoms kids {owner} {owner}") == "rc 0"        # its own kid
    for z in conns:
        assert d.cmd(f"add atoms to {owner} {z}") == "rc 0"          # refarray 1:N
        assert d.cmd(f"set conns to {z} {owner}") == "rc 0"          # ilist
    assert d.cmd(f"set atoms twin_of {owner} {c}") == "rc 0"         # 1:1
    assert d.cmd(f"many atoms kids {owner}") == f"rc 0 n=4 {show_list(atoms[1:] + [owner])}"
    # re-adding moves to the end; set to the current owner does not move
    assert d.cmd(f"add atoms to {owner} {conns[0]}") == "rc 0"
    assert d.cmd(f"many atoms to {owner}") == f"rc 0 n=3 {show_list(conns[1:] + conns[:1])}"
    assert d.cmd(f"set conns from {conns[1]} {owner}") == "rc 0"
    assert d.cmd(f"many atoms to {owner}") == f"rc 0 n=3 {show_list(conns[1:] + conns[:1])}"
    assert d.cmd(f"del atoms {owner}") == "rc 0"
    for y in atoms[1:]:
        assert d.cmd(f"one atoms parent {y}") == "ref N"
        assert d.cmd(f"one atoms part_of {y}") == f"ref {c}"
    for z in conns:
        assert d.cmd(f"one conns from {z}") == "ref N"
        assert d.cmd(f"one conns to {z}") == "ref N"
    assert d.cmd(f"one comps twin {c}") == "ref N"
    assert d.cmd(f"del comps {c}") == "rc 0"
    for y in atoms[1:]:
        assert d.cmd(f"one atoms part_of {y}") == "ref N"
    # the members are free to join someone else
    c2 = ok_ref(d.cmd("ins comps 2 N"))
    assert d.cmd(f"set atoms part_of {atoms[1]} {c2}") == "rc 0"
    assert d.cmd(f"many comps parts {c2}") == f"rc 0 n=1 [{atoms[1]}]"
    if survives(mem):
        assert d.cmd("reopen") == "rc 0"
        assert d.cmd(f"many comps parts {c2}") == f"rc 0 n=1 [{atoms[1]}]"
    d.close()


@pytest.mark.parametrize("mem", MEMS)
def test_bag_multiplicity_on_delete(run, mem):
    d = run(mem)
    x, y, z = (ok_ref(d.cmd(f"ins comps {i} N")) for i in range(3))
    # x uses y twice (and itself), z uses y once; capacity 1 means the blocks grow
    for o, m in [(x, y), (x, x), (z, y), (x, y), (y, x)]:
        assert d.cmd(f"add comps users {o} {m}") == "rc 0"
    assert d.cmd(f"many comps users {x}") == f"rc 0 n=3 {show_list([y, x, y])}"
    assert d.cmd(f"many comps used_by {y}") == f"rc 0 n=3 {show_list([x, z, x])}"
    assert d.cmd(f"many comps used_by {x}") == f"rc 0 n=2 {show_list([x, y])}"
    # remove takes one occurrence on each side
    assert d.cmd(f"rem comps used_by {y} {x}") == "rc 0"
    assert d.cmd(f"many comps users {x}") == f"rc 0 n=2 {show_list([x, y])}"
    assert d.cmd(f"many comps used_by {y}") == f"rc 0 n=2 {show_list([z, x])}"
    assert d.cmd(f"add comps used_by {y} {x}") == "rc 0"             # back to twice
    assert d.cmd(f"many comps users {x}") == f"rc 0 n=3 {show_list([x, y, y])}"
    # deleting y (held twice by x) removes both mirror occurrences
    assert d.cmd(f"del comps {y}") == "rc 0"
    assert d.cmd(f"many comps users {x}") == f"rc 0 n=1 [{x}]"
    assert d.cmd(f"many comps users {z}") == "rc 0 n=0 []"
    assert d.cmd(f"many comps used_by {x}") == f"rc 0 n=1 [{x}]"
    assert d.cmd(f"rem comps users {x} {y}") == f"rc {NOTFOUND}"      # dead member
    assert d.cmd(f"add comps users {x} {y}") == f"rc {NOTFOUND}"
    assert d.cmd(f"add comps users {y} {x}") == f"rc {NOTFOUND}"      # dead owner
    assert d.cmd(f"rem comps users {z} {x}") == f"rc {NOTFOUND}"      # not held
    # and the other direction: x held twice in z's used_by, then x deleted
    assert d.cmd(f"add comps users {x} {z}") == "rc 0"
    assert d.cmd(f"add comps used_by {z} {x}") == "rc 0"
    assert d.cmd(f"many comps used_by {z}") == f"rc 0 n=2 {show_list([x, x])}"
    assert d.cmd(f"del comps {x}") == "rc 0"
    assert d.cmd(f"many comps used_by {z}") == "rc 0 n=0 []"
    assert d.dump() == [f"comps {z} id=2 root=N doc=0:{fnv(b''):016x} parts=[] users=[] "
                        f"used_by=[] twin=N"]
    # growth: many occurrences in one block, then all of them go at once
    w = ok_ref(d.cmd("ins comps 9 N"))
    for i in range(70):
        assert d.cmd(f"add comps users {z} {w if i % 3 else z}") == "rc 0"
    assert d.cmd(f"many comps used_by {w}").startswith("rc 0 n=46 ")
    if survives(mem):
        assert d.cmd("reopen") == "rc 0"
    assert d.cmd(f"del comps {w}") == "rc 0"
    assert d.cmd(f"many comps users {z}") == f"rc 0 n=24 {show_list([z] * 24)}"
    d.close()


@pytest.mark.parametrize("mem", MEMS)
def test_ilist_walk_survives_deleting_each_member(run, mem):
    """ilist: 'the member last handed out may be removed or deleted during the walk'."""
    d = run(mem)
    c = ok_ref(d.cmd("ins comps 1 N"))
    boss = ok_ref(d.cmd("ins atoms 0 0"))
    parts = [ok_ref(d.cmd(f"ins atoms {i} 0")) for i in range(1, 8)]
    conns = [ok_ref(d.cmd(f"ins conns {i}")) for i in range(6)]
    for y in parts:
        assert d.cmd(f"add comps parts {c} {y}") == "rc 0"
    for y in parts[:4]:
        assert d.cmd(f"add atoms kids {boss} {y}") == "rc 0"
    for z in conns:
        assert d.cmd(f"add atoms from {boss} {z}") == "rc 0"
        assert d.cmd(f"add atoms to {boss} {z}") == "rc 0"
    assert d.cmd(f"walkdel atoms from {boss}") == f"rc 0 {show_list(conns)}"
    assert d.cmd(f"many atoms to {boss}") == "rc 0 n=0 []"
    assert d.cmd(f"walkdel atoms kids {boss}") == f"rc 0 {show_list(parts[:4])}"
    assert d.cmd(f"many comps parts {c}") == f"rc 0 n=3 {show_list(parts[4:])}"
    assert d.cmd(f"walkdel comps parts {c}") == f"rc 0 {show_list(parts[4:])}"
    assert d.dump() == sorted([
        f"comps {c} id=1 root=N doc=0:{fnv(b''):016x} parts=[] users=[] used_by=[] twin=N",
        f"atoms {boss} id=0 x=0 part_of=N to=[] from=[] twin_of=N kids=[] parent=N"])
    d.close()


def test_persistent_file_remembers_the_relationship_layout(drivers, links_env, tmp_path, cc):
    """A file written with one relationship layer is refused (P2_EMISMATCH) by a build
    whose only difference is another layer for one relationship."""
    from p2gen.build import generate

    spec = (SPECS / "links_persistent.p2").read_text()
    variant = spec.replace("atoms.parent = ilist;", "atoms.parent = refarray;")
    assert variant != spec
    out = tmp_path / "variant"
    out.mkdir()
    (out / "links_persistent.p2").write_text(variant)
    gen = generate(str(out / "links_persistent.p2"), str(out), "links_persistent")
    exe = str(build_san_program(cc, out / "driver", [DRIVER, gen.source], out,
                                program_flags=program_flags("persistent")))
    data = tmp_path / "data"
    data.mkdir()
    first = subprocess.run([drivers["persistent"], str(data)], input="ins atoms 1 1\n",
                           capture_output=True, text=True, env=links_env, timeout=TIMEOUT)
    assert first.returncode == 0 and first.stdout.startswith("ok "), first.stderr
    second = subprocess.run([exe, str(data)], input="dump\n", capture_output=True, text=True,
                            env=links_env, timeout=TIMEOUT)
    assert second.returncode == 3 and "different spec" in second.stderr, second.stderr


@pytest.mark.parametrize("mem", MEMS)
def test_one_to_one(run, mem):
    d = run(mem)
    c1, c2 = (ok_ref(d.cmd(f"ins comps {i} N")) for i in range(2))
    a1, a2 = (ok_ref(d.cmd(f"ins atoms {i} 0")) for i in range(2))
    assert d.cmd(f"set comps twin {c1} {a1}") == "rc 0"
    assert d.cmd(f"set atoms twin_of {a1} {c2}") == "rc 0"    # c1 lets go
    assert d.cmd(f"one comps twin {c1}") == "ref N"
    assert d.cmd(f"one comps twin {c2}") == f"ref {a1}"
    assert d.cmd(f"set comps twin {c2} {a2}") == "rc 0"        # a1 lets go
    assert d.cmd(f"one atoms twin_of {a1}") == "ref N"
    assert d.cmd(f"one atoms twin_of {a2}") == f"ref {c2}"
    assert d.cmd(f"set comps twin {c2} 17") == f"rc {NOTFOUND}"
    assert d.cmd(f"set comps twin {c2} N") == "rc 0"
    assert d.cmd(f"one atoms twin_of {a2}") == "ref N"
    assert d.cmd(f"set comps twin {c1} {a2}") == "rc 0"
    assert d.cmd(f"del comps {c1}") == "rc 0"
    assert d.cmd(f"one atoms twin_of {a2}") == "ref N"
    d.close()


# ---------------------------------------------------------------------------
# the checker
# ---------------------------------------------------------------------------
BASE = """record r { id: i32; name: char[4]; }
record s { k: i32; }
container a of r = top2ds[array[transient]];
container b of s = top2ds[array[transient]];
"""
CHECK_CASES = {
    # name: (spec, line:col, message fragment)
    "unknown container": (BASE + "relationship x one a.kids to many nope.owner = ilist;\n",
                          "5:35", "relationship 'x': container 'nope' is not declared"),
    "non-rel layer": (BASE + "relationship x one a.kids to many b.owner = hash;\n",
                      "5:45", "got 'hash' (realm 'ds')"),
    "layer below a rel layer": (BASE + "relationship x one a.kids to many b.owner = ilist[array];\n",
                                "5:51", "layer 'ilist' (realm 'rel') takes nothing below it"),
    "ilist on M:N": (BASE + "relationship x many a.kids to many b.owner = ilist;\n",
                     "5:46", "relationship 'x' is M:N: layer 'ilist' stores one-to-many"),
    "ilist on 1:1": (BASE + "relationship x one a.kids to one b.owner = ilist;\n",
                     "5:44", "relationship 'x' is 1:1: layer 'ilist' stores one-to-many"),
    "role is a field": (BASE + "relationship x one a.name to many b.owner = ilist;\n",
                        "5:22", "role 'name' of container 'a' is a field of record 'r'"),
    "role is another role": (BASE + "relationship x one a.kids to many b.owner = ilist;\n"
                             "relationship y one a.kids to many b.other = refarray;\n",
                             "6:22", "role 'kids' of container 'a' is already a role of 'a' "
                                     "in relationship 'x'"),
    "role is reserved": (BASE + "relationship x one a.count to many b.owner = ilist;\n",
                         "5:22", "role 'count' of container 'a' is taken by the generated API"),
    "into qsort storage": ("record r { id: i32; }\n"
                           "container a of r = top2ds[array[transient]];\n"
                           "container q of r = top2ds[qsort(key = id)[transient]];\n"
                           "relationship x one a.kids to many q.owner = refarray;\n",
                           "4:14", "points into container 'q', whose storage 'qsort' moves"),
    "transient to persistent relationship": (
        "record r { id: i32; }\n"
        "container a of r = top2ds[array[transient]];\n"
        'container p of r = top2ds[array[persistent]] with persistent(file = "p.db");\n'
        "relationship x one a.kids to many p.owner = ilist;\n",
        "4:14", "links container 'a' (transient memory) with 'p' (file \"p.db\")"),
    "transient to persistent ref field": (
        "record r { id: i32; }\n"
        "record t { id: i32; to: ref p; }\n"
        "container a of t = top2ds[array[transient]];\n"
        'container p of r = top2ds[array[persistent]] with persistent(file = "p.db");\n',
        "2:21", "field 'to' (ref p) of container 'a' links container 'a' (transient memory)"),
    "persistent in different files": (
        "record r { id: i32; }\n"
        'container p of r = top2ds[array[persistent]] with persistent(file = "p.db");\n'
        'container o of r = top2ds[array[persistent]] with persistent(file = "o.db");\n'
        "relationship x one p.kids to many o.owner = refarray;\n",
        "4:14", "links container 'p' (file \"p.db\") with 'o' (file \"o.db\")"),
    "ref to an undeclared container": (
        "record r { id: i32; to: ref nowhere; }\n"
        "container a of r = top2ds[array[transient]];\n",
        "1:21", "is a ref to container 'nowhere', which is not declared"),
    "text in a where clause": (
        "record r { id: i32; doc: text; }\n"
        "container a of r = top2ds_qualify[array[transient]];\n"
        'cursor c on a where doc == "x";\n',
        "3:21", "field 'doc' is text (variable-length)"),
    "order by text": (
        "record r { id: i32; doc: text; }\n"
        "container a of r = top2ds_qualify[array[transient]];\n"
        "cursor c on a where id > 1 order by doc;\n",
        "3:37", "cannot order by 'doc': it is text"),
    "role with a set_ prefix": (BASE + "relationship x one a.set_foo to many b.owner = refarray;\n",
                                "5:22", "role 'set_foo' of container 'a' is taken by the generated"),
    "refarray capacity 0": (BASE + "relationship x many a.kids to many b.owner = refarray(capacity = 0);\n",
                            "5:66", "parameter 'capacity' of layer 'refarray' must be in 1 .."),
    "text as a hash key": (
        "record r { id: i32; doc: text; }\n"
        "container a of r = top2ds_qualify[hash[array[transient]]] with hash(key = doc);\n",
        "2:75", "parameter 'key' of layer 'hash': field 'doc' is text"),
}


def p2gen_check(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "p2gen.cli", "check", str(path)],
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("name", list(CHECK_CASES))
def test_checker_errors(tmp_path, name):
    spec, where, fragment = CHECK_CASES[name]
    path = tmp_path / "bad.p2"
    path.write_text(spec)
    proc = p2gen_check(path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"bad.p2:{where}: error: " in proc.stderr, proc.stderr
    assert fragment in proc.stderr, proc.stderr


def test_checker_self_relationship_same_role_twice(tmp_path):
    path = tmp_path / "bad.p2"
    path.write_text(BASE + "relationship x one a.kids to many a.kids = ilist;\n")
    proc = p2gen_check(path)
    assert proc.returncode == 1 and "bad.p2:5:" in proc.stderr and "'kids'" in proc.stderr, \
        proc.stdout + proc.stderr


@pytest.mark.parametrize("mem", MEMS)
def test_specs_check_clean(mem):
    proc = p2gen_check(SPECS / f"links_{mem}.p2")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


def test_every_rel_layer_is_in_the_schema():
    """Every registered layer of realm rel stores some relationship of the schema, so the
    random sequences above run through it."""
    from p2gen.check import check
    from p2gen.layers import LAYERS
    from p2gen.parser import parse
    for mem in MEMS:
        path = SPECS / f"links_{mem}.p2"
        checked = check(parse(path.read_text(), str(path)), f"links_{mem}")
        used = {ri.layer.name for ri in checked.relationships}
        for name, layer in LAYERS.items():
            assert layer.realm != "rel" or name in used, (
                f"layer '{name}' stores no relationship of {path.name}: add one to "
                f"tests/specs/links_*.p2 and the model's REL in tests/layers/test_links.py")


# ---------------------------------------------------------------------------
# relocation: each memory layer that can relocate its file in memory (`relocate_param`)
# runs the schema with it on: the relationships' links, `text` handles and `ref` fields
# are moved with the containers' own links
# ---------------------------------------------------------------------------
RELOCATING = [n for n in MEMS if LAYERS[n].relocate_param]
ADDR_MIN = 1 << 44          # a reference this large is an address (atoms are over malloc)


def canonical(dump: list) -> list:
    """A dump with every address replaced by its rank among the dump's addresses: one
    delta moves them all and keeps their order, so a relocated database dumps the same."""
    nums = sorted({int(t) for line in dump for t in re.findall(r"\d+", line) if int(t) >= ADDR_MIN})
    rank = {n: i for i, n in enumerate(nums)}
    return sorted(re.sub(r"\d+", lambda m: f"@{rank[int(m[0])]}" if int(m[0]) in rank else m[0], line)
                  for line in dump)


@pytest.mark.parametrize("mem", RELOCATING)
def test_relocation_moves_every_link(mem, tmp_path, cc, links_env, tmp_path_factory):
    """Filled at random (every relationship, texts, ref fields), then opened in fresh
    processes that relocate the file (forced through the layer's `relocate_env`): the
    open's integrity check passes and the database dumps as before, addresses moved by
    one delta; a relocated process that writes leaves the file at its new base, which
    the next process opens as it is."""
    layer = LAYERS[mem]
    text = (SPECS / f"links_{mem}.p2").read_text()
    text = re.sub(r"\b" + mem + r"\(([^)]*)\)", lambda m: f"{mem}({m[1]}, {layer.relocate_param} = true)", text)
    assert f"{layer.relocate_param} = true" in text
    exe = _build_one(f"{mem}_relocate", tmp_path_factory.mktemp("links-reloc"), cc, text)
    forced = dict(links_env, **{layer.relocate_env: "100"})
    s = Session(Model(), random.Random(77), mem, 24)
    s.d = Driver(exe, tmp_path, links_env)
    for _ in range(1500):
        s.step()
    s.check_dump()
    before = s.d.dump()
    s.d.close()
    data = (tmp_path / "links.db").read_bytes()
    assert any(int(t) >= ADDR_MIN for line in before for t in re.findall(r"\d+", line)), "no address to move"
    d = Driver(exe, tmp_path, forced)        # relocated, reads only: the file stays as it was
    after = d.dump()
    d.close()
    assert after != before and canonical(after) == canonical(before)
    assert (tmp_path / "links.db").read_bytes() == data
    d = Driver(exe, tmp_path, forced)        # relocated, writes: the file moves
    comp = next(line.split()[1] for line in after if line.startswith("comps "))
    assert d.cmd(f"settext {comp} 40 3") == "rc 0"
    moved = d.dump()
    d.close()
    d = Driver(exe, tmp_path, links_env)     # opened where the last process left it
    assert d.dump() == moved and canonical(moved) != canonical(before)
    d.close()

