"""The `pageserver` memory layer: a database on an NBD server (nbdkit, started here on a
free loopback port and stopped by its pid) behind a client buffer of a few frames.

Through the public interface: specs built with `p2gen build`, driven by a small C program
through the generated API, compiled -Wall -Wextra -Werror under ASan and UBSan. What is
checked: every record back after close and reopen in a fresh process (through the
server); the counters of the server's requests and the buffer (a cold scan reads each
page it touches once, a warm one none while the pages fit, and again once they do not;
write-backs, rewrites); a malformed URI is a checker error at its line:column; an
unreachable server an open error naming the URI; a damaged image is refused by the
integrity checks; a server that stalls makes every call return P2_EIO within the timeout;
a second client is refused; the server failing writes or reads (nbdkit's error filter,
toggled by its trigger file), answering late (delay filter) or SIGKILLed under a client:
the calls return P2_EIO within the timeout, a failed sync is reported and the handle
closes without a sanitizer report. Pages fault in through userfaultfd where the kernel
gives this process one, else through SIGSEGV: the tests marked `faults` run both ways
(P2_SERVER_FAULTS=sigsegv forces the second), the counters saying which was taken. The
differential matrix (test_differential.py) runs every layer over `pageserver` with a
4-page buffer against the Python model, its cases taking the two paths in turn.
"""
from __future__ import annotations

import ctypes
import os
import platform
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import build_san_program
from nbdkit import ENGINE_MISSING, NbdServer, free_port

from p2gen.check import check
from p2gen.errors import SpecError, SpecErrors
from p2gen.parser import parse

pytestmark = pytest.mark.skipif(ENGINE_MISSING is not None, reason=ENGINE_MISSING or "")

SPEC = """record item {{ id: u32; grp: i32; score: i64; pad: char[200]; }}
container items of item
    = top2ds_qualify[hash(key = id, buckets = 64)[array(capacity = 16)[pageserver(server = "{uri}", pages = {pages}{extra})]]];
cursor by_grp on items where grp == $g;
cursor from_id on items where id >= $lo;
"""

DRIVER = r"""
#define _POSIX_C_SOURCE 200809L   /* setenv */
#include "ps.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ps_db *db;

static void stats(const char *what)
{
    p2_server_stats s;
    if (ps_server_stats(db, &s) != P2_OK) { printf("stats failed\n"); exit(3); }
    printf("%s reads=%" PRIu64 " writes=%" PRIu64 " flushes=%" PRIu64 " misses=%" PRIu64
           " hits=%" PRIu64 " evictions=%" PRIu64 " writebacks=%" PRIu64 " rewrites=%" PRIu64
           " resident=%" PRIu64 " dirty=%" PRIu64 " frames=%" PRIu64 " bytes_read=%" PRIu64
           " userfaultfd=%" PRIu64 " bytes_written=%" PRIu64 " ranges=%" PRIu64
           " bundled=%" PRIu64 "\n",
           what, s.reads, s.writes, s.flushes, s.misses, s.hits, s.evictions, s.writebacks,
           s.rewrites, s.resident, s.dirty, s.frames, s.bytes_read, s.userfaultfd,
           s.bytes_written, s.ranges, s.bundled);
}

static uint64_t lcg(uint64_t *x)
{
    *x = *x * 6364136223846793005ull + 1442695040888963407ull;
    return *x >> 33;
}

/* commands: fill N | check N | scan | update N | drop | reset | stats W | sync | close |
   random SEED N (N inserts, updates of a field and deletes, as test_pageserver.py's model) |
   dump (every item, one line each) | fault SPEC (P2_FAULT from here: -DP2_FAULT_INJECT) */
int main(int argc, char **argv)
{
    int rc = ps_open(&db, ".");
    printf("open %d %s\n", rc, rc ? ps_errmsg(db) : "");
    if (rc != P2_OK) { ps_close(db); return 0; }
    for (int i = 1; i < argc; i++) {
        const char *c = argv[i];
        if (!strcmp(c, "fill") || !strcmp(c, "check") || !strcmp(c, "update")) {
            int n = atoi(argv[++i]);
            for (int k = 0; k < n; k++) {
                ps_item it;
                memset(&it, 0, sizeof it);
                it.id = (uint32_t)k; it.grp = k % 7; it.score = (int64_t)k * 3;
                snprintf(it.pad, sizeof it.pad, "item %d", k);
                uint64_t ref;
                if (!strcmp(c, "fill")) {
                    rc = ps_items_insert(db, &it, &ref);
                } else {
                    const ps_item *got = ps_items_lookup_id(db, (uint32_t)k, &ref);
                    rc = got && got->score == it.score && !strcmp(got->pad, it.pad) ? P2_OK : P2_NOTFOUND;
                    if (rc == P2_OK && !strcmp(c, "update"))
                        rc = ps_items_set_score(db, ref, got->score + 1);
                }
                if (rc != P2_OK) { printf("%s %d: %d %s\n", c, k, rc, ps_errmsg(db)); goto done; }
            }
            printf("%s %d ok\n", c, n);
        } else if (!strcmp(c, "scan")) {
            ps_from_id_cursor k;
            long n = 0;
            ps_from_id_open(db, &k, 0);
            for (const ps_item *x; (x = ps_from_id_next_rec(&k));) n += x->id != UINT32_MAX;
            printf("scan %ld\n", n);
        } else if (!strcmp(c, "random")) {
            uint64_t x = strtoull(argv[++i], NULL, 10);
            int n = atoi(argv[++i]);
            for (int k = 0; k < n && rc == P2_OK; k++) {
                uint32_t r = (uint32_t)(lcg(&x) % 10), id = (uint32_t)(lcg(&x) % 400);
                ps_ref ref;
                const ps_item *got = ps_items_lookup_id(db, id, &ref);
                if (r < 5 && !got) {
                    ps_item it;
                    memset(&it, 0, sizeof it);
                    it.id = id; it.grp = (int32_t)(id % 7); it.score = (int64_t)(lcg(&x) % 1000);
                    snprintf(it.pad, sizeof it.pad, "item %u", (unsigned)id);
                    rc = ps_items_insert(db, &it, &ref);
                } else if (r < 8 && got) {
                    rc = ps_items_set_score(db, ref, (int64_t)(lcg(&x) % 100000));
                } else if (r < 9 && got) {
                    char pad[200];
                    snprintf(pad, sizeof pad, "pad %u %u", (unsigned)id, (unsigned)lcg(&x));
                    rc = ps_items_set_pad(db, ref, pad);
                } else if (got) {
                    rc = ps_items_delete(db, ref);
                }
            }
            printf("random %d %s\n", rc, rc ? ps_errmsg(db) : "");
            if (rc != P2_OK) goto done;
        } else if (!strcmp(c, "dump")) {
            ps_from_id_cursor k;
            ps_from_id_open(db, &k, 0);
            for (const ps_item *x; (x = ps_from_id_next_rec(&k));)
                printf("item %u %d %" PRId64 " %s\n", (unsigned)x->id, (int)x->grp, x->score, x->pad);
        } else if (!strcmp(c, "drop")) {
            printf("drop %d\n", ps_server_drop(db));
        } else if (!strcmp(c, "reset")) {
            ps_server_stats_reset(db);
        } else if (!strcmp(c, "fault")) {
            setenv("P2_FAULT", argv[++i], 1);
        } else if (!strcmp(c, "stats")) {
            stats(argv[++i]);
        } else if (!strcmp(c, "sync")) {
            rc = ps_sync(db);
            printf("sync %d %s\n", rc, rc ? ps_errmsg(db) : "");
        } else if (!strcmp(c, "sleep")) {
            fflush(stdout);
            getchar();     /* the test pauses the server meanwhile */
        }
    }
done:      /* a failed command: the handle is closed all the same */
    rc = ps_close(db);
    printf("close %d %s\n", rc, rc ? ps_errmsg(NULL) : "");
    return 0;
}
"""

@pytest.fixture(scope="module")
def module_server(tmp_path_factory):
    s = NbdServer(tmp_path_factory.mktemp("nbd") / "image.img", size=64 << 20).start()
    yield s
    s.stop()


@pytest.fixture
def server(module_server):
    """The module's nbdkit, its export all zeros again (an empty database)."""
    module_server.reset()
    return module_server


def _kernel_gives_userfaultfd() -> bool:
    """Does the kernel give this process a userfaultfd (asked directly, not through p2gen)?"""
    nr = {"x86_64": 323, "aarch64": 282}.get(platform.machine())
    if nr is None:
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.syscall(nr, os.O_CLOEXEC | os.O_NONBLOCK)
    if fd < 0:
        fd = libc.syscall(nr, os.O_CLOEXEC | os.O_NONBLOCK | 1)    # UFFD_USER_MODE_ONLY
    if fd < 0:
        return False
    os.close(fd)
    return True


UFFD = _kernel_gives_userfaultfd()
# the two fault paths: (the environment that asks for it, the counter's value expected)
FAULTS = {"userfaultfd": ({}, 1 if UFFD else 0),
          "sigsegv": ({"P2_SERVER_FAULTS": "sigsegv"}, 0)}
faults = pytest.mark.parametrize("faults", list(FAULTS))

_BUILT: dict = {}


def build(tmp_path: Path, cc: str, uri: str, pages: int, name: str = "b", extra: str = "",
          cflags: tuple = ()) -> Path:
    """The driver over a spec of `uri` and `pages` frames, `extra` more parameters of
    pageserver, `cflags` the runtime's defines (FI) (built once per module)."""
    if (uri, pages, extra, cflags) in _BUILT:
        return _BUILT[uri, pages, extra, cflags]
    out = tmp_path / name
    out.mkdir()
    spec = out / "ps.p2"
    spec.write_text(SPEC.format(uri=uri, pages=pages, extra=extra))
    subprocess.run([sys.executable, "-m", "p2gen", "build", "--no-compile", str(spec), "-o", str(out)],
                   check=True, capture_output=True, text=True)
    (out / "driver.c").write_text(DRIVER)
    exe = build_san_program(cc, out / "driver", [out / "driver.c", out / "ps.c"], out, cflags)
    _BUILT[uri, pages, extra, cflags] = exe
    return exe


def run(exe: Path, *cmds, env=None, timeout=120, input=None) -> list:
    e = dict(os.environ, ASAN_OPTIONS="detect_leaks=0", UBSAN_OPTIONS="halt_on_error=1",
             **(env or {}))
    proc = subprocess.run([str(exe), *map(str, cmds)], capture_output=True, text=True, env=e,
                          cwd=exe.parent, timeout=timeout, input=input)
    assert "Sanitizer" not in proc.stderr and "runtime error" not in proc.stderr, proc.stderr
    assert proc.returncode == 0, (proc.returncode, proc.stdout, proc.stderr)
    return proc.stdout.splitlines()


def counters(lines, what) -> dict:
    line = next(x for x in lines if x.startswith(what + " "))
    return {k: int(v) for k, v in (kv.split("=") for kv in line.split()[1:])}


@faults
def test_persists_through_the_server_with_a_tiny_buffer(tmp_path, cc, server, faults):
    env, uffd = FAULTS[faults]
    exe = build(tmp_path, cc, server.uri(), pages=4)
    out = run(exe, "fill", 600, "stats", "built", env=env)
    assert out[0] == "open 0 " and "fill 600 ok" in out and out[-1] == "close 0 ", out
    built = counters(out, "built")
    assert built["userfaultfd"] == uffd, built
    assert built["frames"] == 4 and built["resident"] <= 4 and built["evictions"] > 0
    assert built["writebacks"] > 0 and built["rewrites"] > 0      # pages evicted dirty twice
    # a fresh process: every record, through the server (the open verifies the database)
    out = run(exe, "check", 600, "update", 600, "scan", env=env)
    assert "check 600 ok" in out and "update 600 ok" in out and "scan 600" in out, out
    out = run(exe, "check", 0, "scan", env=env)
    assert "scan 600" in out and out[-1] == "close 0 ", out
    # the image on the server is a clean p2gen file
    head = (server.image).read_bytes()[:24]
    assert head[:8] == b"P2GENDB\0" and head[20:24] == b"\0\0\0\0"     # state CLEAN


class Model:
    """The driver's `random SEED N` in Python: id -> (grp, score, pad)."""

    def __init__(self):
        self.items: dict = {}

    def run(self, seed: int, n: int) -> None:
        x = seed

        def lcg() -> int:
            nonlocal x
            x = (x * 6364136223846793005 + 1442695040888963407) % (1 << 64)
            return x >> 33
        for _ in range(n):
            r, i = lcg() % 10, lcg() % 400
            got = self.items.get(i)
            if r < 5 and got is None:
                self.items[i] = (i % 7, lcg() % 1000, f"item {i}")
            elif r < 8 and got is not None:
                self.items[i] = (got[0], lcg() % 100000, got[2])
            elif r < 9 and got is not None:
                self.items[i] = (got[0], got[1], f"pad {i} {lcg() % (1 << 32)}")
            elif got is not None:
                del self.items[i]

    def dump(self) -> list:
        return sorted(f"item {i} {g} {s} {p}" for i, (g, s, p) in self.items.items())


def test_ship_ranges_writes_back_the_same_database_in_fewer_bytes(tmp_path, cc, server):
    """pageserver(ship = ranges), the hybrid: random inserts, updates and deletes over a
    4-page buffer (pages evicted dirty all the time), in three processes: every record as
    the model says, the server's image byte for byte the one ship = pages leaves (past the
    header's page, which names the spec), in fewer bytes written, as ranges."""
    runs = ((36, 700), (37, 500), (38, 500))
    model = Model()
    for seed, n in runs:
        model.run(seed, n)
    images, shipped = {}, {}
    for ship in ("pages", "ranges"):
        server.reset()
        exe = build(tmp_path, cc, server.uri(), pages=4, name=f"ship_{ship}", extra=f", ship = {ship}")
        written = ranges = 0
        for seed, n in runs:
            out = run(exe, "reset", "random", seed, n, "sync", "stats", "w")
            assert f"random 0 " in out and out[-1] == "close 0 ", out
            c = counters(out, "w")
            written, ranges = written + c["bytes_written"], ranges + c["ranges"]
        dump = [x for x in run(exe, "dump") if x.startswith("item ")]
        assert sorted(dump) == model.dump(), (ship, len(dump), len(model.dump()))
        images[ship] = server.image.read_bytes()
        shipped[ship] = (written, ranges)
    assert images["pages"][4096:] == images["ranges"][4096:]
    assert shipped["pages"][1] == 0 and shipped["ranges"][1] > 0, shipped
    assert shipped["ranges"][0] < shipped["pages"][0] / 2, shipped


def _scores(lines) -> dict:
    return {int(x.split()[1]): int(x.split()[3]) for x in lines if x.startswith("item ")}


def test_ship_ranges_keeps_evicted_ranges_until_the_sync(tmp_path, cc, server):
    """ship = ranges over a 4-page buffer: an update of every item evicts every page dirty,
    and each keeps its announced ranges in the client (the pending store) rather than
    writing them: nothing is written before the sync, and a dump in the same process,
    fetching the pages again, reads every new score. A crash before the sync (SIGKILL)
    loses them all: the image past its header is as before. The sync writes each page once
    (no rewrites), and a fresh process reads the new scores; with the store bounded to
    3,000 bytes (P2_SERVER_PENDING_BYTES) ranges are written before the sync, and the
    database is the same, the fill before it too (a page written back at an eviction keeps
    its announced granules until the sync: the hash's growth announces a block, then makes
    hundreds of notices before it writes there)."""
    exe = build(tmp_path, cc, server.uri(), pages=4, name="ship_ranges", extra=", ship = ranges")
    new = {k: 3 * k + 1 for k in range(600)}
    run(exe, "fill", 600)
    before = server.image.read_bytes()
    proc = driver(exe, "reset", "update", 600, "stats", "s", "dump", "sleep")
    lines: list = []
    while sum(x.startswith("item ") for x in lines) < 600:
        lines.append(proc.stdout.readline().rstrip("\n"))
        assert lines[-1] or proc.poll() is None, lines
    s = counters(lines, "s")
    assert s["evictions"] > 30 and s["writes"] == s["bytes_written"] == 0, s
    assert _scores(lines) == new
    proc.kill()
    proc.communicate(timeout=30)
    assert server.image.read_bytes()[4096:] == before[4096:]
    for env, kept in (({}, True), ({"P2_SERVER_PENDING_BYTES": "3000"}, False)):
        server.reset()
        run(exe, "fill", 600, env=env)
        out = run(exe, "reset", "update", 600, "stats", "s", "sync", "stats", "t", env=env)
        s, t = counters(out, "s"), counters(out, "t")
        assert (s["writes"] == 0) == kept and t["writes"] > s["writes"], (env, s, t)
        if kept:
            assert t["rewrites"] == 0 and t["writebacks"] <= 40, t
        assert _scores(run(exe, "dump")) == new, env


@faults
def test_counters_of_cold_and_warm_scans(tmp_path, cc, server, faults):
    env, uffd = FAULTS[faults]
    big = build(tmp_path, cc, server.uri(), pages=4096, name="big")
    run(big, "fill", 400, env=env)
    out = run(big, "drop", "reset", "scan", "stats", "cold", "scan", "stats", "warm", env=env)
    cold, warm = counters(out, "cold"), counters(out, "warm")
    assert cold["userfaultfd"] == uffd, cold
    # cold: one read per page the scan touches, each a miss, no write; the buffer holds them
    assert cold["reads"] == cold["misses"] == cold["resident"] > 10, cold
    assert cold["bytes_read"] == 4096 * cold["reads"] and cold["writes"] == 0
    assert cold["evictions"] == 0 and cold["hits"] == 0
    # warm, everything resident: no request, no fault the buffer sees
    assert warm["reads"] == cold["reads"] and warm["misses"] == cold["misses"], warm
    # the same database with 4 frames: the second scan reads again
    exe = build(tmp_path, cc, server.uri(), pages=4, name="small2")
    out = run(exe, "drop", "reset", "scan", "stats", "cold", "scan", "stats", "warm", env=env)
    cold4, warm4 = counters(out, "cold"), counters(out, "warm")
    assert cold4["reads"] == cold4["misses"] >= cold["reads"]
    assert warm4["reads"] >= 2 * cold["reads"] - 8, (cold4, warm4)
    assert warm4["evictions"] == warm4["misses"] - warm4["resident"] and warm4["resident"] == 4


def test_malformed_uri_is_a_checker_error_at_its_position():
    for uri, why in (("http://127.0.0.1/x", "not a server URI"),
                     ("nbd://127.0.0.1:99999/x", "port 99999"),
                     ("nbd:///x", "not a server URI")):
        text = SPEC.format(uri=uri, pages=4, extra="")
        with pytest.raises((SpecError, SpecErrors)) as err:
            check(parse(text, "bad.p2"), "bad")
        msg = str(err.value)
        line = next(i for i, l in enumerate(text.splitlines(), 1) if "server =" in l)
        col = text.splitlines()[line - 1].index("server =") + 1
        assert f'pageserver(server = "{uri}")' in msg and why in msg, msg
        assert f"bad.p2:{line}:" in msg, msg
        assert f":{line}:{col}" in msg or f":{line}:{col + len('server = ')}" in msg, msg


def test_journal_over_pageserver_without_a_log_is_refused():
    """A journal over a page server keeps its log on a second export, named by
    pageserver(log = ...) (test_pageserver_txn.py): without one, the checker says so."""
    text = SPEC.format(uri="nbd://127.0.0.1:1/x", pages=4, extra="").replace(
        "[pageserver(", "[journal[pageserver(").replace("pages = 4)]]]", "pages = 4)]]]]")
    with pytest.raises((SpecError, SpecErrors)) as err:
        check(parse(text, "j.p2"), "j")
    assert "layer 'journal' over 'pageserver' keeps its log on a second export" in str(err.value)


def test_unreachable_server_is_an_open_error_naming_it(tmp_path, cc):
    uri = f"nbd://127.0.0.1:{free_port()}/x"
    exe = build(tmp_path, cc, uri, pages=4)
    out = run(exe)
    assert out[0].startswith("open 6 ") and uri in out[0] and "cannot connect" in out[0], out


def test_damaged_image_is_refused(tmp_path, cc, server):
    exe = build(tmp_path, cc, server.uri(), pages=8)
    run(exe, "fill", 300)
    image = server.image
    good = image.read_bytes()[:1 << 20]
    # a container's blocks overwritten: the integrity check at open refuses the database
    with open(image, "r+b") as f:
        f.seek(8192)
        f.write(b"\xa5" * 8192)
    out = run(exe)
    assert out[0].startswith("open 7 ") and server.uri() in out[0], out
    assert "corrupt" in out[0], out
    # the header's magic: not a p2gen database (the local file's message, the URI first)
    with open(image, "r+b") as f:
        f.write(good)
        f.seek(0)
        f.write(b"NOTP2GEN")
    out = run(exe)
    assert out[0].startswith(f"open 7 {server.uri()}: not a p2gen database"), out


def test_second_client_is_refused(tmp_path, cc, server):
    exe = build(tmp_path, cc, server.uri(), pages=8)
    run(exe, "fill", 10)
    first = subprocess.Popen([str(exe), "sleep"], cwd=exe.parent, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True,
                             env=dict(os.environ, ASAN_OPTIONS="detect_leaks=0"))
    assert first.stdout.readline().startswith("open 0")
    out = run(exe)
    assert out[0].startswith("open 11 ") and "in use by another client" in out[0], out
    first.communicate("\n", timeout=60)
    assert run(exe, "check", 10)[1] == "check 10 ok"


def test_stalled_server_fails_every_call_within_the_timeout(tmp_path, cc, server):
    exe = build(tmp_path, cc, server.uri(), pages=8)
    run(exe, "fill", 50)
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0", P2_SERVER_TIMEOUT_MS="400")
    proc = subprocess.Popen([str(exe), "update", "50", "sleep", "sync"],
                            cwd=exe.parent, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdout.readline().startswith("open 0")
    assert proc.stdout.readline().startswith("update 50 ok")
    server.pause()
    try:
        t0 = time.monotonic()
        out, err = proc.communicate("\n", timeout=30)
        took = time.monotonic() - t0
    finally:
        server.resume()
    lines = out.splitlines()
    assert "Sanitizer" not in err, err
    sync = next(x for x in lines if x.startswith("sync "))
    assert sync.startswith("sync 6 ") and "did not answer" in sync and "400 ms" in sync, lines
    assert lines[-1].startswith("close 6"), lines      # the close fails at once too
    assert took < 3, took
    # an open against the stalled server: an error within the timeout
    server.pause()
    try:
        t0 = time.monotonic()
        out = run(exe, env={"P2_SERVER_TIMEOUT_MS": "400"})
        assert time.monotonic() - t0 < 3
    finally:
        server.resume()
    assert out[0].startswith("open 6 ") and server.uri() in out[0], out


# --- faults injected by the server (nbdkit's error and delay filters) or its death -------

@pytest.fixture(scope="module")
def faulty(tmp_path_factory):
    """An image and a port that every fault test restarts nbdkit on with its own filters,
    so that one driver build (its URI fixed) serves them all."""
    d = tmp_path_factory.mktemp("faulty")
    return d / "image.img", free_port(), d / "trigger"


def faulty_server(faulty, filters=(), extra=()) -> NbdServer:
    image, port, _ = faulty
    return NbdServer(image, port=port, size=64 << 20, filters=filters).start(extra)


def driver(exe: Path, *cmds, env=None) -> subprocess.Popen:
    e = dict(os.environ, ASAN_OPTIONS="detect_leaks=0", UBSAN_OPTIONS="halt_on_error=1",
             **(env or {}))
    return subprocess.Popen([str(exe), *map(str, cmds)], cwd=exe.parent, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e)


def finish(proc: subprocess.Popen, limit: float = 3) -> list:
    """The driver let on from its `sleep`: it ends within `limit` seconds, cleanly (exit 0,
    no sanitizer report); its output."""
    t0 = time.monotonic()
    out, err = proc.communicate("\n", timeout=30)
    assert time.monotonic() - t0 < limit, (time.monotonic() - t0, out)
    assert "Sanitizer" not in err and "runtime error" not in err, err
    assert proc.returncode == 0, (proc.returncode, out, err)
    return out.splitlines()


def test_write_errors_fail_the_commit_and_the_close(tmp_path, cc, faulty):
    """nbdkit's error filter fails every write while its trigger file exists: the sync
    that writes the update back returns P2_EIO saying so, the close fails as well and
    returns, and the database is left marked open (refused as a crashed client's)."""
    _, _, trigger = faulty
    trigger.unlink(missing_ok=True)
    srv = faulty_server(faulty, ("error",), ("error=EIO", "error-pwrite-rate=1",
                                             f"error-pwrite-file={trigger}"))
    try:
        srv.reset()
        exe = build(tmp_path, cc, srv.uri(), pages=4096, name="faulty_big")
        assert run(exe, "fill", 50)[-1] == "close 0 "
        proc = driver(exe, "update", 50, "sleep", "sync")
        assert proc.stdout.readline().startswith("open 0")
        assert proc.stdout.readline().startswith("update 50 ok")
        trigger.touch()              # from now on every write fails
        lines = finish(proc)
        sync = next(x for x in lines if x.startswith("sync "))
        assert sync.startswith(f"sync 6 {srv.uri()}") and "Input/output error" in sync, lines
        assert lines[-1].startswith("close 6 "), lines
        trigger.unlink()
        out = run(exe, "check", 50)
        assert out[0].startswith("open 11 ") and "crashed without closing" in out[0], out
    finally:
        srv.stop()
        trigger.unlink(missing_ok=True)


@faults
def test_read_errors_inside_faults_fail_the_next_calls(tmp_path, cc, faulty, faults):
    """Reads fail once the driver is open (error filter, trigger file): a page that cannot
    be brought in inside a fault reads as zeros (a pointer dereference cannot return an
    error), the segment is failed, and the sync and close after it return P2_EIO naming
    the fault; the database is left marked open (nothing written after the failure)."""
    _, _, trigger = faulty
    trigger.unlink(missing_ok=True)
    srv = faulty_server(faulty, ("error",), ("error=EIO", "error-pread-rate=1",
                                             f"error-pread-file={trigger}"))
    try:
        srv.reset()
        exe = build(tmp_path, cc, srv.uri(), pages=8, name="faulty_small")
        assert run(exe, "fill", 50)[-1] == "close 0 "
        proc = driver(exe, "drop", "sleep", "scan", "sync", env=FAULTS[faults][0])
        assert proc.stdout.readline().startswith("open 0")
        assert proc.stdout.readline().startswith("drop 0")     # the buffer empty
        trigger.touch()
        lines = finish(proc)
        scan = next(x for x in lines if x.startswith("scan "))
        assert int(scan.split()[1]) < 50, lines          # zeros where the pages failed
        sync = next(x for x in lines if x.startswith("sync "))
        assert sync.startswith("sync 6 ") and "inside a fault" in sync, lines
        assert lines[-1].startswith("close 6 "), lines
        trigger.unlink()
        # nothing was written after the failure, but the header is marked open
        out = run(exe)
        assert out[0].startswith("open 11 ") and "crashed without closing" in out[0], out
    finally:
        srv.stop()
        trigger.unlink(missing_ok=True)


def test_slow_reads_time_out(tmp_path, cc, faulty):
    """nbdkit's delay filter holds every read 1.5 s, past P2_SERVER_TIMEOUT_MS = 300: the
    open fails within the timeout naming the URI (its header read) and the handle closes."""
    srv = faulty_server(faulty, ("delay",), ("delay-read=1500ms",))
    try:
        exe = build(tmp_path, cc, srv.uri(), pages=8, name="faulty_small")
        t0 = time.monotonic()
        out = run(exe, "scan", env={"P2_SERVER_TIMEOUT_MS": "300"})
        assert time.monotonic() - t0 < 1.4
        assert out[0].startswith(f"open 6 {srv.uri()}") and "did not answer" in out[0], out
        assert "300 ms" in out[0] and len(out) == 1, out
    finally:
        srv.stop()


def test_server_killed_mid_run_fails_every_call_at_once(tmp_path, cc, faulty):
    """nbdkit SIGKILLed under an open client with dirty pages: the sync returns P2_EIO at
    once (the connection's error, not the timeout) and the close returns too."""
    srv = faulty_server(faulty)
    try:
        srv.reset()
        exe = build(tmp_path, cc, srv.uri(), pages=4096, name="faulty_big")
        assert run(exe, "fill", 50)[-1] == "close 0 "
        proc = driver(exe, "update", 50, "sleep", "sync", env={"P2_SERVER_TIMEOUT_MS": "20000"})
        assert proc.stdout.readline().startswith("open 0")
        assert proc.stdout.readline().startswith("update 50 ok")
        os.kill(srv.proc.pid, signal.SIGKILL)
        srv.proc.wait()
        lines = finish(proc)
        sync = next(x for x in lines if x.startswith("sync "))
        assert sync.startswith(f"sync 6 {srv.uri()}"), lines
        assert lines[-1].startswith("close 6 "), lines
    finally:
        srv.stop()


# --- system calls failing inside faults (the runtime's fault injection, -DP2_FAULT_INJECT) --

FI = ("-DP2_FAULT_INJECT",)


@pytest.fixture(scope="module")
def fi_db(tmp_path_factory, cc):
    """A database of 1000 items (96 pages) in a local file (pageserver over file:///PATH: the page
    server's buffer, faults and read-ahead without a server) behind 32 frames, and the
    driver built with fault injection; its pristine image, copied back before each run
    (a run whose segment fails leaves the file marked open)."""
    d = tmp_path_factory.mktemp("fi")
    db = d / "db.p2db"
    exe = build(d, cc, f"file://{db}", pages=32, name="fi", cflags=FI)
    assert run(exe, "fill", 1000)[-1] == "close 0 "
    pristine = d / "pristine"
    pristine.write_bytes(db.read_bytes())
    return exe, db, pristine


def _fi_run(fi_db, env, *cmds):
    """The driver after the pristine image is copied back, read-ahead on (8 pages):
    (exit status, output lines, stderr); a run that hangs fails the test."""
    exe, db, pristine = fi_db
    db.write_bytes(pristine.read_bytes())
    e = dict(os.environ, ASAN_OPTIONS="detect_leaks=0", UBSAN_OPTIONS="halt_on_error=1",
             P2_SERVER_READAHEAD="8", **env)
    proc = subprocess.run([str(exe), *cmds], capture_output=True, text=True, env=e,
                          cwd=exe.parent, timeout=60)
    return proc.returncode, proc.stdout.splitlines(), proc.stderr


@pytest.mark.parametrize("faults, call", [("userfaultfd", "uffdio_copy"), ("sigsegv", "mprotect")])
def test_a_page_not_placed_is_left_out_and_its_frame_given_back(fi_db, faults, call):
    """The Nth placing of a page during a cold scan with read-ahead fails (UFFDIO_COPY
    under userfaultfd, mprotect under SIGSEGV), for N = 1..16: the scan and a second one
    run to their end (a page left out faults in again, rather than faulting forever), the
    buffer's frames are all in use by resident pages at the end (none kept by a page that
    never arrived), and the sync and close report the failure (P2_EIO, naming the call).
    Under SIGSEGV a failure on the toucher's own page cannot be survived (nothing can be
    given to it): that run is ended by the signal; a read-ahead page's failure must not."""
    if faults == "userfaultfd" and not UFFD:
        pytest.skip("the kernel gives this process no userfaultfd")
    env = FAULTS[faults][0]
    survived = 0
    for n in range(1, 17):
        rc, out, err = _fi_run(fi_db, env, "drop", "reset", "fault", f"{call}:{n}", "scan",
                               "stats", "s", "fault", "", "scan", "sync")
        if rc != 0:
            assert faults == "sigsegv" and "SEGV" in err, (n, rc, out, err)
            continue
        assert "runtime error" not in err and "Sanitizer" not in err, (n, err)
        scans = [x for x in out if x.startswith("scan ")]
        assert len(scans) == 2, (n, out)
        s = counters(out, "s")
        assert s["resident"] == s["frames"] == 32, (n, s)
        sync = next(x for x in out if x.startswith("sync "))
        if "could not be placed" in sync:
            assert sync.startswith("sync 6 ") and f"({call if call == 'mprotect' else 'UFFDIO_COPY'}: " in sync, sync
            assert out[-1].startswith("close 6 "), out
            survived += 1
    assert survived > 0      # some run failed a read-ahead page's placing and went on


def test_bundled_counts_only_pages_that_arrived(fi_db):
    """Reads fail from the Nth one of a cold scan with read-ahead on (pread of the file
    backend), for N = 2..12: every page counted as brought in by read-ahead (bundled) is one
    whose read succeeded, beside the miss's own page that came with it (bundled <= reads -
    1: the first miss reads alone); a failed run's pages, given zeros, are not counted."""
    base = counters(_fi_run(fi_db, {}, "drop", "reset", "scan", "stats", "s")[1], "s")
    assert base["bundled"] > 0 and base["reads"] == base["misses"] + base["bundled"], base
    for n in range(2, 13):
        rc, out, err = _fi_run(fi_db, {}, "drop", "reset", "fault", f"pread:{n}-", "scan",
                               "stats", "s", "sync")
        assert rc == 0 and "Sanitizer" not in err, (n, rc, err)
        s = counters(out, "s")
        assert s["reads"] == n - 1, (n, s)
        assert s["bundled"] <= s["reads"] - 1, (n, s)
        assert next(x for x in out if x.startswith("sync ")).startswith("sync 6 "), out


def test_a_failed_write_back_fails_the_segment_and_nothing_more_is_written(fi_db):
    """Every item updated (the 32 frames left dirty), then the Nth write-back of a scan
    with read-ahead fails (pwrite of the file backend), for N = 1..4, whether it frees a
    frame for the miss's page or for a page read ahead: the segment fails naming the
    write-back, the sync and close return P2_EIO, and nothing more reaches the file after
    the failure: the writes counted are the N - 1 before it, after the scan and after the
    sync, and the close leaves the image as it was."""
    exe, db, pristine = fi_db
    seen = set()
    for n in range(1, 5):
        db.write_bytes(pristine.read_bytes())
        proc = driver(exe, "update", 1000, "reset", "fault", f"pwrite:{n}", "scan", "stats", "s",
                      "sync", "stats", "t", "sleep", env={"P2_SERVER_READAHEAD": "8"})
        lines = []
        while not (lines and lines[-1].startswith("t ")):
            lines.append(proc.stdout.readline().rstrip("\n"))
            assert lines[-1] or proc.poll() is None, lines
        at_failure = db.read_bytes()
        lines += finish(proc)
        assert db.read_bytes() == at_failure, n           # the close wrote nothing
        s, t = counters(lines, "s"), counters(lines, "t")
        assert s["writes"] == t["writes"] == n - 1, (n, s, t)
        sync = next(x for x in lines if x.startswith("sync "))
        assert sync.startswith("sync 6 ") and "could not be written back" in sync, (n, sync)
        seen.add("a read-ahead" if "for a read-ahead" in sync else "a miss")
        assert lines[-1].startswith("close 6 "), lines
    assert seen == {"a read-ahead", "a miss"}, seen
