"""Ordered roles (`relationship ... one users.posts order by time desc to many posts.author
= ilist;`) and their merge (the feed), end to end through the generated C API.

tests/c/ordered_driver.c, a command interpreter over the API, is compiled with -Wall
-Wextra -Werror under ASan + UBSan against two specs (time an i64 ordered descending, and
an f64 ordered ascending) and every answer is checked against `Model`, sorted Python
lists: walks in order and in reverse, from bounds, under inserts, deletes, moves between
owners, removals and updates of the ordering field (by its setter and by a whole-record
update), and merges of several owners' roles (`_top` and `_merge_next`).

The tie rule checked: members with equal time come in the order they joined the role
(added, or last had their time changed to a different value); a reverse walk is the exact
reverse; a merge orders ties across owners by their position in the owners given, and a
reverse merge is the exact reverse of the forward one.
"""
from __future__ import annotations

import hashlib
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Optional

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import DEBUG_FLAG, runtime_obj, sources_digest

ROOT = Path(__file__).resolve().parents[2]
DRIVER = ROOT / "tests" / "c" / "ordered_driver.c"
CFLAGS = ["-std=c11", "-O1", DEBUG_FLAG, "-Wall", "-Wextra", "-Werror",
          "-fsanitize=address,undefined", "-fno-omit-frame-pointer",
          "-fno-sanitize-recover=undefined"]
OK, NOTFOUND = 0, 2

SPEC = """
record user {{ id: u32; }}
record post {{ id: u32; time: {t}; likes: u32 = 0; }}
container users of user = top2ds_qualify[hash[array[{mem}]]] with hash(key = id, unique = true){file};
container posts of post = top2ds_qualify[hash[{store}[{mem}]]] with hash(key = id, unique = true){file};
relationship wrote one users.posts order by time{d} to many posts.author = ilist;
"""
# name -> (time's type, descending, memory): the file variant in 32-bit links, its file
# checked by `p2gen verify` (the members' order included) after each run
VARIANTS = {"desc_i64": ("i64", True, "transient"), "asc_f64": ("f64", False, "transient"),
            "desc_i64_file": ("i64", True, "persistent")}


def spec_text(name: str) -> str:
    t, desc, mem = VARIANTS[name]
    file = ', persistent(file = "ord.db", links = offset32)' if mem == "persistent" else ""
    return SPEC.format(t=t, d=" desc" if desc else "", mem=mem, file=file,
                       store="malloc" if mem == "transient" else "array")


def build(name: str, root: Path, cc: str) -> str:
    from p2gen.build import generate
    t = VARIANTS[name][0]
    text = spec_text(name)
    ctype = {"i64": "int64_t", "f64": "double"}[t]
    key = hashlib.sha256("\0".join([sources_digest(), cc, " ".join(CFLAGS), text,
                                    DRIVER.read_text()]).encode()).hexdigest()[:20]
    out = root / f"{name}-{key}"
    exe = out / "driver"
    if exe.exists():
        return str(exe)
    out.mkdir(parents=True, exist_ok=True)
    (out / "ord.p2").write_text(text)
    gen = generate(str(out / "ord.p2"), str(out), "ord")
    cmd = [*shlex.split(cc), *CFLAGS, "-DPREFIX=ord", '-DHEADER="ord.h"', f"-DKT={ctype}",
           "-I", str(out), str(DRIVER), gen.source, runtime_obj(cc, CFLAGS), "-o", f"{exe}.tmp"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, f"{shlex.join(cmd)}\n{proc.stderr}"
    os.replace(f"{exe}.tmp", exe)
    return str(exe)


@pytest.fixture(scope="module", params=sorted(VARIANTS))
def driver(request, tmp_path_factory, cc):
    cache = getattr(request.config, "cache", None)
    root = (Path(cache.mkdir("p2gen-ordered")) if cache is not None
            else tmp_path_factory.mktemp("ordered"))
    return request.param, build(request.param, root, cc)


class Model:
    """The role as sorted lists: each post's (time, author, seq); seq is the moment it
    joined its author's role (the tie rule)."""

    def __init__(self, desc: bool):
        self.desc = desc
        self.users: set = set()
        self.posts: dict = {}     # pid -> [time, author or None, seq]
        self.clock = 0

    def _join(self, pid, uid):
        self.clock += 1
        self.posts[pid][1], self.posts[pid][2] = uid, self.clock

    def cmd(self, c: str, *a) -> str:
        if c == "u":
            if a[0] in self.users:
                return "dup"
            self.users.add(a[0])
            return str(OK)
        if c == "p":
            pid, uid, t = a
            if pid in self.posts:
                return "dup"
            self.posts[pid] = [t, None, 0]
            if uid is not None:
                if uid not in self.users:
                    return str(NOTFOUND)
                self._join(pid, uid)
            return str(OK)
        if c in ("t", "U"):
            pid, t = a
            if pid not in self.posts:
                return str(NOTFOUND)
            if self.posts[pid][0] != t:
                self.posts[pid][0] = t
                if self.posts[pid][1] is not None:
                    self._join(pid, self.posts[pid][1])
            return str(OK)
        if c == "a":
            pid, uid = a
            if pid not in self.posts or (uid is not None and uid not in self.users):
                return str(NOTFOUND)
            if self.posts[pid][1] != uid:
                if uid is None:
                    self.posts[pid][1] = None
                else:
                    self._join(pid, uid)
            return str(OK)
        if c == "r":
            uid, pid = a
            if uid not in self.users:
                return str(NOTFOUND)
            if pid not in self.posts or self.posts[pid][1] != uid:
                return str(NOTFOUND)
            self.posts[pid][1] = None
            return str(OK)
        if c == "d":
            if a[0] not in self.posts:
                return str(NOTFOUND)
            del self.posts[a[0]]
            return str(OK)
        if c == "D":
            if a[0] not in self.users:
                return str(NOTFOUND)
            self.users.discard(a[0])
            for p in self.posts.values():
                if p[1] == a[0]:
                    p[1] = None
            return str(OK)
        raise AssertionError(c)

    def walk(self, uid, rev=False, lo=None, hi=None) -> list:
        mine = [(pid, p) for pid, p in self.posts.items() if p[1] == uid
                and (lo is None or p[0] >= lo) and (hi is None or p[0] <= hi)]
        mine.sort(key=lambda x: ((-x[1][0] if self.desc else x[1][0]), x[1][2]))
        out = [pid for pid, _ in mine]
        return out[::-1] if rev else out

    def merge(self, owners, rev=False, lo=None, hi=None) -> list:
        rows = []
        for i, uid in enumerate(owners):
            for j, pid in enumerate(self.walk(uid, False, lo, hi)):
                t = self.posts[pid][0]
                rows.append(((-t if self.desc else t), i, j, pid))
        out = [r[3] for r in sorted(rows)]
        return out[::-1] if rev else out


def show(v) -> str:
    return "-" if v is None else (str(v) if isinstance(v, int) else repr(v))


class Session:
    def __init__(self, exe: str, desc: bool, tmp: Path, spec: Optional[str] = None):
        self.exe, self.tmp, self.model, self.spec = exe, tmp, Model(desc), spec
        self.lines: list = []
        self.want: list = []

    def do(self, c: str, *a) -> None:
        self.lines.append(" ".join([c, *map(show, a)]))
        self.want.append(self.model.cmd(c, *a))

    def walk(self, uid, rev=0, lo=None, hi=None, rec=False) -> None:
        self.lines.append(" ".join(["W" if rec else "w", str(uid), str(rev), show(lo), show(hi)]))
        self.want.append(" ".join(map(str, self.model.walk(uid, bool(rev), lo, hi)))
                         if uid in self.model.users else f"rc {NOTFOUND}")

    def top(self, owners, k, rev=0, lo=None, hi=None) -> None:
        self.lines.append(" ".join(["f", str(rev), show(lo), show(hi), str(k), *map(str, owners)]))
        self.want.append(" ".join(map(str, self.model.merge(owners, bool(rev), lo, hi)[:k])))

    def merge(self, owners, rev=0, lo=None, hi=None) -> None:
        self.lines.append(" ".join(["m", str(rev), show(lo), show(hi), *map(str, owners)]))
        self.want.append(" ".join(map(str, self.model.merge(owners, bool(rev), lo, hi))))

    def count(self, uid) -> None:
        self.lines.append(f"c {uid}")
        self.want.append(str(len(self.model.walk(uid))))

    def check(self) -> None:
        proc = subprocess.run([self.exe], input="\n".join(self.lines) + "\n", cwd=self.tmp,
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr[-3000:]
        got = proc.stdout.splitlines()
        for i, (line, want) in enumerate(zip(self.lines, self.want)):
            if want == "dup":
                continue
            assert got[i] == want, f"command {i}: {line!r}: got {got[i]!r}, want {want!r}\n" + \
                "\n".join(self.lines[:i + 1])
        assert len(got) == len(self.want)
        if self.spec is not None:      # a file: its integrity check, the order included
            spec = self.tmp / "ord.p2"
            spec.write_text(self.spec)
            v = subprocess.run([sys.executable, "-m", "p2gen", "verify", str(spec), "--dir",
                                str(self.tmp)], capture_output=True, text=True, timeout=300)
            assert v.returncode == 0, v.stdout + v.stderr
            (self.tmp / "ord.db").unlink()


def session(driver, tmp_path) -> Session:
    name, exe = driver
    return Session(exe, VARIANTS[name][1], tmp_path,
                   spec_text(name) if VARIANTS[name][2] == "persistent" else None)


def test_walks_bounds_ties_and_moves(driver, tmp_path):
    s = session(driver, tmp_path)
    for u in (1, 2, 3):
        s.do("u", u)
    for pid, uid, t in [(10, 1, 5), (11, 1, 9), (12, 1, 1), (13, 1, 5), (14, 1, 7), (15, 1, 5),
                        (20, 2, 3), (21, 2, 9), (22, 2, 5), (30, 3, 5), (31, None, 4)]:
        s.do("p", pid, uid, t)
    for rev in (0, 1):
        s.walk(1, rev)
        s.walk(1, rev, rec=True)
        s.walk(1, rev, lo=5)          # where time >= 5
        s.walk(1, rev, hi=5)
        s.walk(1, rev, lo=5, hi=7)
        s.walk(1, rev, lo=6, hi=6)    # nothing
        s.walk(1, rev, lo=9, hi=1)    # an empty range
    s.count(1)
    s.do("t", 12, 8)          # moves to its place
    s.do("t", 13, 5)          # the same time: stays where it is
    s.do("U", 10, 5)          # an update that leaves time: stays
    s.do("U", 15, 6)
    s.do("U", 15, 5)          # back to 5: after 10 and 13 now (joined last)
    s.walk(1)
    s.walk(1, 1)
    s.do("a", 21, 1)          # from user 2 to user 1
    s.do("a", 31, 2)          # a post without an author gets one
    s.do("r", 1, 11)
    s.do("r", 1, 11)          # not there any more
    s.do("d", 14)
    s.walk(1)
    s.walk(2, 1, lo=4)
    for rev in (0, 1):
        s.merge([1, 2, 3], rev)
        s.merge([3, 2, 1], rev, lo=4, hi=8)
        s.top([1, 2, 3], 3, rev)
        s.top([2, 1], 100, rev, lo=5)
    s.top([], 5)
    s.merge([1, 1])           # an owner given twice is walked twice
    s.do("D", 2)
    s.walk(2)                 # a user that is gone
    s.merge([1, 3])
    s.check()


def test_appends_at_both_ends_stay_cheap_and_right(driver, tmp_path):
    """Newest-first inserts (the common case) and oldest-first ones, interleaved: the list
    stays sorted (the O(1) paths at either end)."""
    s = session(driver, tmp_path)
    s.do("u", 1)
    for i in range(200):
        s.do("p", 1000 + i, 1, i if i % 2 else -i)
    s.walk(1)
    s.walk(1, 1, lo=-50, hi=50)
    s.count(1)
    s.check()


ops = st.one_of(
    st.tuples(st.just("p"), st.integers(0, 30), st.one_of(st.none(), st.integers(0, 4)),
              st.integers(0, 6)),
    st.tuples(st.just("t"), st.integers(0, 30), st.integers(0, 6)),
    st.tuples(st.just("U"), st.integers(0, 30), st.integers(0, 6)),
    st.tuples(st.just("a"), st.integers(0, 30), st.one_of(st.none(), st.integers(0, 4))),
    st.tuples(st.just("r"), st.integers(0, 4), st.integers(0, 30)),
    st.tuples(st.just("d"), st.integers(0, 30)),
    st.tuples(st.just("D"), st.integers(0, 4)),
    st.tuples(st.just("u"), st.integers(0, 4)),
    st.tuples(st.just("w"), st.integers(0, 4), st.integers(0, 1),
              st.one_of(st.none(), st.integers(0, 6)), st.one_of(st.none(), st.integers(0, 6))),
    st.tuples(st.just("m"), st.lists(st.integers(0, 4), max_size=4), st.integers(0, 1),
              st.one_of(st.none(), st.integers(0, 6)), st.integers(0, 8)),
)


@settings(max_examples=int(os.environ.get("P2GEN_ORDERED_EXAMPLES", "25")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seq=st.lists(ops, max_size=80))
def test_random_sequences_against_the_model(driver, tmp_path, seq):
    """Random sequences of inserts, deletes, moves, removals, updates of time, walks and
    merges over a few users and posts with few distinct times (many ties)."""
    s = session(driver, tmp_path)
    for u in range(3):
        s.do("u", u)
    for op in seq:
        c = op[0]
        if c == "p":
            if op[1] in s.model.posts:
                continue
            s.do("p", op[1], op[2], op[3])
        elif c == "u":
            if op[1] in s.model.users:
                continue
            s.do("u", op[1])
        elif c in ("t", "U", "a"):
            if op[1] not in s.model.posts:
                continue          # the driver's look-up of a missing post is no element
            s.do(c, op[1], op[2])
        elif c == "r":
            if op[2] not in s.model.posts or op[1] not in s.model.users:
                continue
            s.do("r", op[1], op[2])
        elif c == "d":
            if op[1] in s.model.posts:
                s.do("d", op[1])
        elif c == "D":
            if op[1] in s.model.users:
                s.do("D", op[1])
        elif c == "w":
            if op[1] in s.model.users:
                s.walk(op[1], op[2], op[3], op[4])
        elif c == "m":
            owners = [u for u in op[1] if u in s.model.users]
            s.merge(owners, op[2], op[3])
            s.top(owners, op[4], op[2], op[3])
    for u in sorted(s.model.users):
        s.walk(u)
        s.walk(u, 1)
    s.check()


ABORT_SPEC = """
record user { id: u32; }
record post { id: u32; time: i64; }
container users of user = top2ds_qualify[hash[array[journal[persistent]]]] with hash(key = id, unique = true), persistent(file = "j.db");
container posts of post = top2ds_qualify[hash[array[journal[persistent]]]] with hash(key = id, unique = true), persistent(file = "j.db");
relationship wrote one users.posts order by time desc to many posts.author = ilist;
"""

ABORT_MAIN = r"""
#include <stdio.h>
#include "jo.h"
int main(void)
{
    jo_db *db;
    jo_ref u, p, owners[1], y;
    jo_users_posts_merge m;
    jo_users_posts_iter it;
    if (jo_open(&db, ".") != P2_OK) return 2;
    jo_user ur = { .id = 1 };
    jo_users_insert(db, &ur, &u);
    for (int i = 0; i < 3; i++) {
        jo_post pr = { .id = (uint32_t)i, .time = 10 - i };
        jo_posts_insert(db, &pr, &p);
        jo_posts_set_author(db, p, u);
    }
    jo_commit(db);
    owners[0] = u;
    if (jo_users_posts_merge_open(db, &m, owners, 1, 0, NULL, NULL) != P2_OK) return 3;
    if (jo_users_posts_open(db, &it, u) != P2_OK) return 3;
    printf("%d", jo_users_posts_merge_next(&m, &y));
    printf(" %d", jo_users_posts_next(&it, &y));
    jo_abort(db);                         /* closes the merge and the walk */
    printf(" %d", jo_users_posts_merge_next(&m, &y));
    printf(" %d", jo_users_posts_merge_next_rec(&m, &y) == NULL);
    printf(" %d\n", jo_users_posts_next(&it, &y));
    jo_users_posts_merge_close(&m);
    return jo_close(db) == P2_OK ? 0 : 1;
}
"""


def test_an_abort_closes_a_merge(tmp_path, cc):
    """`<spec>_abort` closes an open merge as it closes role walks: P2_ECLOSED from
    _merge_next, NULL from _merge_next_rec; _merge_close still frees it (ASan's leak check)."""
    from p2gen.build import generate
    (tmp_path / "jo.p2").write_text(ABORT_SPEC)
    gen = generate(str(tmp_path / "jo.p2"), str(tmp_path), "jo")
    (tmp_path / "main.c").write_text(ABORT_MAIN)
    exe = tmp_path / "main"
    cmd = [*shlex.split(cc), *CFLAGS, "-I", str(tmp_path), str(tmp_path / "main.c"), gen.source,
           runtime_obj(cc, CFLAGS), "-o", str(exe)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    run = subprocess.run([str(exe)], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    from p2gen.runtime.codes import CODES
    closed = next(c.value for c in CODES if c.name == "P2_ECLOSED")
    assert run.stdout.split() == ["0", "0", str(closed), "1", str(closed)]
