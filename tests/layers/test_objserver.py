"""The `objserver` memory layer: a database on a Redis server (redis-server, started here
on a free loopback port and stopped by its pid), one key per allocator block, behind a
client object cache of a few objects.

Through the public interface: specs built with `p2gen build`, driven by small C programs
through the generated API, compiled -Wall -Wextra -Werror under ASan and UBSan. What is
checked: a random walk of inserts, finds, updates, deletes and cursor deletes with a cache
of 2 objects (eviction on nearly every reference) against a model in the driver, and the
same database read back by a fresh process; the counters (a miss is one GET; a cold scan
fetches each block once, a warm one none while they fit, and again when they do not); a
malformed URI and storage that keeps a container in one block are checker errors at their
line:column; an unreachable server is an open error naming the URI; several client
processes with optimistic transactions lose no increment and never see a torn state, and
opens beside a client inserting and deleting walk again rather than report corruption; the
Python binding's ConflictError and its retry loop; a server that stalls makes every call
return P2_EIO within the timeout; one that is
SIGTERMed or SIGKILLed, or refuses writes (maxmemory), fails the commit at once and the
handle closes. The
differential matrix (test_differential.py) runs objserver with malloc storage and a
2-object cache against the Python model.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import QUICK_PY_CFLAGS, build_san_program
from nbdkit import free_port
from redis import ENGINE_MISSING, RedisServer

from p2gen.check import check
from p2gen.errors import SpecError, SpecErrors
from p2gen.parser import parse

pytestmark = pytest.mark.skipif(ENGINE_MISSING is not None, reason=ENGINE_MISSING or "")

SPEC = """record item {{ id: u32; grp: i32; score: i64; pad: char[200]; }}
container items of item
    = top2ds_qualify[hash(key = id, buckets = 64)[{storage}[objserver(server = "{uri}", objects = {objects})]]];
cursor by_grp on items where grp == $g;
cursor from_id on items where id >= $lo;
"""

BASIC = r"""#include "os.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static os_db *db;

static void stats(const char *what)
{
    p2_server_stats s;
    if (os_server_stats(db, &s) != P2_OK) { printf("stats failed\n"); exit(3); }
    printf("%s reads=%" PRIu64 " writes=%" PRIu64 " flushes=%" PRIu64 " misses=%" PRIu64
           " hits=%" PRIu64 " evictions=%" PRIu64 " writebacks=%" PRIu64 " rewrites=%" PRIu64
           " resident=%" PRIu64 " dirty=%" PRIu64 " frames=%" PRIu64 " bytes_read=%" PRIu64
           " bundled=%" PRIu64 "\n",
           what, s.reads, s.writes, s.flushes, s.misses, s.hits, s.evictions, s.writebacks,
           s.rewrites, s.resident, s.dirty, s.frames, s.bytes_read, s.bundled);
}

int main(int argc, char **argv)
{
    int rc = os_open(&db, ".");
    printf("open %d %s\n", rc, rc ? os_errmsg(db) : "");
    if (rc != P2_OK) { os_close(db); return 0; }
    for (int i = 1; i < argc; i++) {
        const char *c = argv[i];
        if (!strcmp(c, "fill") || !strcmp(c, "check") || !strcmp(c, "update")) {
            int n = atoi(argv[++i]);
            for (int k = 0; k < n; k++) {
                os_item it;
                memset(&it, 0, sizeof it);
                it.id = (uint32_t)k; it.grp = k % 7; it.score = (int64_t)k * 3;
                snprintf(it.pad, sizeof it.pad, "item %d", k);
                uint64_t ref;
                if (!strcmp(c, "fill")) {
                    rc = os_items_insert(db, &it, &ref);
                } else {
                    const os_item *got = os_items_lookup_id(db, (uint32_t)k, &ref);
                    rc = got && got->score == it.score && !strcmp(got->pad, it.pad) ? P2_OK : P2_NOTFOUND;
                    if (rc == P2_OK && !strcmp(c, "update"))
                        rc = os_items_set_score(db, ref, got->score + 1);
                }
                if (rc != P2_OK) { printf("%s %d: %d %s\n", c, k, rc, os_errmsg(db)); return 2; }
            }
            printf("%s %d ok\n", c, n);
        } else if (!strcmp(c, "scan")) {
            os_from_id_cursor k;
            long n = 0;
            os_from_id_open(db, &k, 0);
            for (const os_item *x; (x = os_from_id_next_rec(&k));) n += x->id != UINT32_MAX;
            printf("scan %ld\n", n);
        } else if (!strcmp(c, "drop")) {
            printf("drop %d\n", os_server_drop(db));
        } else if (!strcmp(c, "reset")) {
            os_server_stats_reset(db);
        } else if (!strcmp(c, "stats")) {
            stats(argv[++i]);
        } else if (!strcmp(c, "sync")) {
            rc = os_sync(db);
            printf("sync %d %s\n", rc, rc ? os_errmsg(db) : "");
        } else if (!strcmp(c, "sleep")) {
            fflush(stdout);
            getchar();     /* the test pauses the server meanwhile */
        }
    }
    rc = os_close(db);
    printf("close %d %s\n", rc, rc ? os_errmsg(NULL) : "");
    return 0;
}
"""

MODEL = r"""/* A random walk of insert/find/update/delete/cursor operations against a model. */
#include "os.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define K 300
static os_db *db;
static int present[K];
static int32_t grp[K];
static int64_t score[K];
static uint64_t rng = 88172645463325252ull;

static uint64_t next(void)
{
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return rng;
}

static void fail(const char *what, int k, int rc)
{
    printf("FAIL %s key %d rc %d %s\n", what, k, rc, os_errmsg(db));
    exit(2);
}

static void fill(os_item *it, int k)
{
    memset(it, 0, sizeof *it);
    it->id = (uint32_t)k; it->grp = grp[k]; it->score = score[k];
    snprintf(it->pad, sizeof it->pad, "item %d grp %d", k, (int)grp[k]);
}

/* Digest of the database through a cursor scan, and of the model: they must agree. */
static void digests(uint64_t *dbd, uint64_t *md, long *n)
{
    os_from_id_cursor c;
    uint64_t d = 0;
    long cnt = 0;
    if (os_from_id_open(db, &c, 0) != P2_OK) fail("cursor open", -1, 0);
    for (const os_item *x; (x = os_from_id_next_rec(&c));) {
        char want[200];
        snprintf(want, sizeof want, "item %u grp %d", x->id, (int)x->grp);
        if (strcmp(want, x->pad)) fail("pad", (int)x->id, 0);
        d += (x->id + 1) * 1000003ull ^ (uint64_t)x->score * 7919u ^ (uint64_t)(x->grp + 100);
        cnt++;
    }
    *dbd = d;
    *n = cnt;
    d = 0;
    for (int k = 0; k < K; k++)
        if (present[k]) d += (k + 1) * 1000003ull ^ (uint64_t)score[k] * 7919u ^ (uint64_t)(grp[k] + 100);
    *md = d;
}

static void check_all(void)
{
    uint64_t a, b;
    long n, m = 0;
    digests(&a, &b, &n);
    for (int k = 0; k < K; k++) m += present[k];
    if (a != b || n != m) { printf("FAIL scan %ld/%ld %" PRIu64 "/%" PRIu64 "\n", n, m, a, b); exit(2); }
    if ((long)os_items_count(db) != m) fail("count", -1, 0);
}

int main(int argc, char **argv)
{
    int rc = os_open(&db, ".");
    printf("open %d %s\n", rc, rc ? os_errmsg(db) : "");
    if (rc != P2_OK) { os_close(db); return 0; }
    if (argc > 2 && !strcmp(argv[1], "walk")) {
        int n = atoi(argv[2]);
        for (int i = 0; i < n; i++) {
            int k = (int)(next() % K);
            unsigned op = (unsigned)(next() % 10);
            os_ref ref;
            const os_item *got = os_items_lookup_id(db, (uint32_t)k, &ref);
            if (!!got != present[k]) fail("lookup presence", k, 0);
            if (got && (got->score != score[k] || got->grp != grp[k])) fail("lookup value", k, 0);
            if (op < 4 && !present[k]) {
                os_item it;
                grp[k] = (int32_t)(next() % 5);
                score[k] = (int64_t)(next() % 100000);
                fill(&it, k);
                if ((rc = os_items_insert(db, &it, &ref)) != P2_OK) fail("insert", k, rc);
                present[k] = 1;
            } else if (op < 6 && present[k]) {
                score[k] = (int64_t)(next() % 100000);
                if ((rc = os_items_set_score(db, ref, score[k])) != P2_OK) fail("set_score", k, rc);
            } else if (op < 7 && present[k]) {
                os_item it;
                grp[k] = (int32_t)(next() % 5);
                fill(&it, k);
                if ((rc = os_items_update(db, &ref, &it)) != P2_OK) fail("update", k, rc);
            } else if (op < 9 && present[k]) {
                if ((rc = os_items_delete(db, ref)) != P2_OK) fail("delete", k, rc);
                present[k] = 0;
            } else if (op == 9) {
                /* a cursor on one group, deleting its elements of odd score as it goes */
                int32_t g = (int32_t)(next() % 5);
                os_by_grp_cursor c;
                if (os_by_grp_open(db, &c, g) != P2_OK) fail("by_grp open", g, 0);
                while (os_by_grp_next(&c) == P2_OK) {
                    const os_item *x = os_by_grp_get(&c);
                    if (!x || x->grp != g || !present[x->id]) fail("by_grp", x ? (int)x->id : -1, 0);
                    if (x->score % 2) {
                        int id = (int)x->id;
                        if ((rc = os_by_grp_delete(&c)) != P2_OK) fail("cursor delete", id, rc);
                        present[id] = 0;
                    }
                }
                os_by_grp_close(&c);
            }
            if (i % 97 == 0) check_all();
            /* a transaction of a few operations: its dirty blocks stay until the commit */
            if (i % 7 == 6 && (rc = os_commit(db)) != P2_OK) fail("commit", -1, rc);
        }
        check_all();
        uint64_t a, b;
        long cnt;
        digests(&a, &b, &cnt);
        printf("walk %d ok digest %" PRIu64 " count %ld\n", n, a, cnt);
    } else if (argc > 1 && !strcmp(argv[1], "digest")) {
        uint64_t a, b;
        long cnt;
        digests(&a, &b, &cnt);
        printf("digest %" PRIu64 " count %ld\n", a, cnt);
    }
    if (argc > 1 && !strcmp(argv[argc - 1], "stats")) {
        p2_server_stats s;
        os_server_stats(db, &s);
        printf("stats reads=%" PRIu64 " misses=%" PRIu64 " resident=%" PRIu64 " evictions=%" PRIu64 "\n",
               s.reads, s.misses, s.resident, s.evictions);
    }
    rc = os_close(db);
    printf("close %d %s\n", rc, rc ? os_errmsg(NULL) : "");
    return 0;
}
"""

@pytest.fixture(scope="module")
def module_server(tmp_path_factory):
    s = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield s
    s.stop()


@pytest.fixture
def server(module_server):
    """The module's redis-server, empty again (no database, no lock)."""
    module_server.flush()
    return module_server


_BUILT: dict = {}


def build(tmp_path: Path, cc: str, uri: str, objects, driver: str = "basic") -> Path:
    """A driver over a spec of `uri` and a cache of `objects` (built once per module)."""
    if (uri, objects, driver) in _BUILT:
        return _BUILT[uri, objects, driver]
    out = tmp_path / f"{driver}_{len(_BUILT)}"
    out.mkdir()
    spec = out / "os.p2"
    spec.write_text(SPEC.format(uri=uri, objects=objects, storage="malloc"))
    subprocess.run([sys.executable, "-m", "p2gen", "build", "--no-compile", str(spec), "-o", str(out)],
                   check=True, capture_output=True, text=True)
    (out / "driver.c").write_text(BASIC if driver == "basic" else MODEL)
    exe = build_san_program(cc, out / "driver", [out / "driver.c", out / "os.c"], out)
    _BUILT[uri, objects, driver] = exe
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


def test_random_walk_against_a_model_with_a_tiny_cache(tmp_path, cc, server):
    exe = build(tmp_path, cc, server.uri(), objects=2, driver="model")
    out = run(exe, "walk", 2500, "stats")
    assert out[0] == "open 0 " and out[-1] == "close 0 ", out
    walk = next(x for x in out if x.startswith("walk "))
    assert walk.startswith("walk 2500 ok"), out
    st = counters(out, "stats")
    # the cache holds 2: nearly every reference to another block is a fetch
    assert st["misses"] > 5000 and st["evictions"] > 5000, st
    # a fresh process reads the same database back from the server (the open verifies it)
    digest = walk.split(" digest ")[1]
    again = run(exe, "digest")
    assert again[1] == f"digest {digest}", (walk, again)


def test_counters_of_cold_and_warm_scans(tmp_path, cc, server):
    big = build(tmp_path, cc, server.uri(), objects=100000)
    out = run(big, "fill", 400)
    assert "fill 400 ok" in out and out[-1] == "close 0 ", out
    out = run(big, "drop", "reset", "scan", "stats", "cold", "scan", "stats", "warm")
    cold, warm = counters(out, "cold"), counters(out, "warm")
    # cold: one GET per block the scan touches (400 elements; the bucket table is not
    # walked by a scan of malloc storage), each a miss; nothing written
    assert cold["reads"] == cold["misses"] == cold["resident"] == 400, cold
    assert cold["bytes_read"] == 400 * 256 and cold["writes"] == 0 and cold["evictions"] == 0
    # warm, everything here: no request, every reference a hit
    assert warm["reads"] == cold["reads"] and warm["misses"] == cold["misses"], warm
    assert warm["hits"] >= cold["hits"] + 400
    # the same database with 4 objects: the second scan fetches every element again
    small = build(tmp_path, cc, server.uri(), objects=4)
    out = run(small, "drop", "reset", "scan", "stats", "cold", "scan", "stats", "warm")
    cold4, warm4 = counters(out, "cold"), counters(out, "warm")
    assert cold4["reads"] == cold4["misses"] == 400, cold4
    assert warm4["reads"] == warm4["misses"] == 800, warm4
    assert warm4["evictions"] >= 800 - 4 - 4 and warm4["resident"] <= 5, warm4
    # updates: each block dirtied is written back once at eviction or sync
    out = run(small, "reset", "update", 400, "sync", "stats", "upd")
    upd = counters(out, "upd")
    assert upd["writebacks"] == upd["writes"] >= 400 and upd["flushes"] == 1, upd


def test_persists_through_the_server(tmp_path, cc, server):
    exe = build(tmp_path, cc, server.uri(), objects=4)
    out = run(exe, "fill", 300, "stats", "built")
    assert out[0] == "open 0 " and "fill 300 ok" in out and out[-1] == "close 0 ", out
    built = counters(out, "built")
    # the open's creation is the first commit (the empty containers: the bucket table),
    # then one transaction: its dirty blocks are never evicted (the server holds
    # committed states only), so the cache overflows; nothing is written before its commit
    assert built["frames"] == 4 and built["resident"] == built["dirty"] == 301, built
    assert built["evictions"] == 0 and built["writes"] == built["flushes"] == 1, built
    out = run(exe, "check", 300, "update", 300, "sync", "stats", "again", "scan")
    assert "check 300 ok" in out and "update 300 ok" in out and "scan 300" in out, out
    # the updates' commit: each element shipped once, in one EXEC
    again = counters(out, "again")
    assert "sync 0 " in out and again["flushes"] == 1 and again["rewrites"] == 0, again
    assert again["writes"] == again["writebacks"] == 300, again
    # 300 elements, one bucket table: one key each, besides the cells and the versions
    assert server.command("DBSIZE") == b":303", server.command("DBSIZE")


def _checker_error(text: str, name: str) -> str:
    with pytest.raises((SpecError, SpecErrors)) as err:
        check(parse(text, f"{name}.p2"), name)
    return str(err.value)


def test_malformed_uri_is_a_checker_error_at_its_position():
    for uri, why in (("nbd://127.0.0.1/x", "not a Redis URI"),
                     ("redis://127.0.0.1:99999/0", "port 99999"),
                     ("redis:///0", "not a Redis URI"),
                     ("redis://127.0.0.1:6379/zero", "database 'zero'")):
        text = SPEC.format(uri=uri, objects=4, storage="malloc")
        msg = _checker_error(text, "bad")
        line = next(i for i, l in enumerate(text.splitlines(), 1) if "server =" in l)
        col = text.splitlines()[line - 1].index("server =") + 1
        assert f'objserver(server = "{uri}")' in msg and why in msg, msg
        assert f"bad.p2:{line}:{col}" in msg or f"bad.p2:{line}:{col + len('server = ')}" in msg, msg


@pytest.mark.parametrize("storage", ["array", "iarray(key = id)", "qsort(key = id)"])
def test_storage_in_one_block_is_refused_naming_malloc(storage):
    text = SPEC.format(uri="redis://127.0.0.1:6379/0", objects=4, storage=storage)
    msg = _checker_error(text, "st")
    name = storage.split("(")[0]
    line = 3
    col = text.splitlines()[line - 1].index(f"[{name}") + 2
    assert f"st.p2:{line}:{col}" in msg, msg
    assert f"storage '{name}'" in msg and "use malloc storage" in msg, msg


def test_unreachable_server_is_an_open_error_naming_it(tmp_path, cc):
    uri = f"redis://127.0.0.1:{free_port()}/0"
    exe = build(tmp_path, cc, uri, objects=4)
    out = run(exe)
    assert out[0].startswith(f"open 6 {uri}: cannot connect to the server"), out


COUNTERS = r"""/* Several clients: writers add 1 to two counters and 2 to the total in each
   transaction, retrying on a conflict; readers check that the counters sum to the total in
   every transaction whose commit succeeds; a churner inserts and deletes other items (the
   roots and the allocator change at each commit) while openers open the database again
   and again (the integrity walk at open meets those commits). */
#define _POSIX_C_SOURCE 200809L
#include "os.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static os_db *db;
static uint64_t rng;
static long gave_up;    /* opens whose integrity walk met commits 8 times in a row */

/* Open, again where the walk at open kept meeting other clients' commits. */
static int open_db(void)
{
    int rc;
    while ((rc = os_open(&db, ".")) == P2_ECONFLICT) {
        gave_up++;
        os_close(db);
    }
    return rc;
}

static uint64_t next(void)
{
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return rng;
}

/* add d to the score of id k: P2_OK, P2_NOTFOUND or an error */
static int add(uint32_t k, int64_t d)
{
    os_ref ref;
    const os_item *it = os_items_lookup_id(db, k, &ref);
    if (!it) return P2_NOTFOUND;
    return os_items_set_score(db, ref, it->score + d);
}

int main(int argc, char **argv)
{
    if (argc < 5) return 2;
    int rc = open_db();
    if (rc != P2_OK) { printf("open %d %s\n", rc, os_errmsg(db)); os_close(db); return 2; }
    const char *what = argv[1];
    int n = atoi(argv[2]), iters = atoi(argv[3]);
    rng = 88172645463325252ull ^ (uint64_t)atoi(argv[4]) * 0x9E3779B97F4A7C15ull;
    long conflicts = 0, ok = 0;
    if (!strcmp(what, "init")) {
        for (int k = 0; k <= n; k++) {
            os_item it;
            memset(&it, 0, sizeof it);
            it.id = (uint32_t)k;
            if ((rc = os_items_insert(db, &it, NULL)) != P2_OK) { printf("insert %d\n", rc); return 2; }
        }
        rc = os_commit(db);
        printf("init %d\n", rc);
    } else if (!strcmp(what, "incr")) {
        for (int i = 0; i < iters; i++) {
            for (;;) {
                uint32_t a = 1 + (uint32_t)(next() % (uint64_t)n), b = 1 + (uint32_t)(next() % (uint64_t)n);
                if ((rc = add(a, 1)) == P2_OK && (rc = add(b, 1)) == P2_OK && (rc = add(0, 2)) == P2_OK)
                    rc = os_commit(db);
                if (rc == P2_OK) break;
                if (rc != P2_ECONFLICT) { printf("incr %d %s\n", rc, os_errmsg(db)); return 2; }
                conflicts++;
                if ((rc = os_abort(db)) != P2_OK) { printf("abort %d %s\n", rc, os_errmsg(db)); return 2; }
            }
        }
        printf("incr done conflicts %ld\n", conflicts);
    } else if (!strcmp(what, "read")) {
        for (int i = 0; i < iters; i++) {
            int64_t sum = 0, total = -1;
            for (int k = 0; k <= n; k++) {
                const os_item *it = os_items_lookup_id(db, (uint32_t)k, NULL);
                if (!it) { printf("read: no %d\n", k); return 2; }
                if (k == 0) total = it->score; else sum += it->score;
            }
            rc = os_commit(db);
            if (rc == P2_OK) {
                if (sum != total) { printf("TORN sum %lld total %lld\n", (long long)sum, (long long)total); return 2; }
                ok++;
            } else if (rc == P2_ECONFLICT) {
                conflicts++;
                if ((rc = os_abort(db)) != P2_OK) { printf("abort %d\n", rc); return 2; }
            } else {
                printf("read %d %s\n", rc, os_errmsg(db));
                return 2;
            }
        }
        printf("read done ok %ld conflicts %ld\n", ok, conflicts);
    } else if (!strcmp(what, "churn")) {
        /* until the file "stop" exists: insert id n + 1 + i, delete the one before */
        long i = 0;
        while (access("stop", F_OK) != 0) {
            os_item it;
            memset(&it, 0, sizeof it);
            it.id = (uint32_t)(n + 1 + i % 50);
            os_ref ref;
            rc = os_items_insert(db, &it, NULL);
            if (rc == P2_OK && i > 0 && os_items_lookup_id(db, (uint32_t)(n + 1 + (i - 1) % 50), &ref))
                rc = os_items_delete(db, ref);
            if (rc == P2_OK) rc = os_commit(db);
            if (rc == P2_OK) i++;
            else if (rc != P2_ECONFLICT) { printf("churn %d %s\n", rc, os_errmsg(db)); return 2; }
            else if ((rc = os_abort(db)) != P2_OK) { printf("abort %d\n", rc); return 2; }
            struct timespec pause = {0, (long)iters * 1000L};   /* iters: microseconds */
            nanosleep(&pause, NULL);
        }
        printf("churn done %ld\n", i);
    } else if (!strcmp(what, "reopen")) {
        /* iters opens, each walked at open; how often the walk went round again (the
           conflicts counter after the open), and opens that gave up (P2_ECONFLICT) */
        long again = 0;
        for (int i = 0; i < iters; i++) {
            if ((rc = os_close(db)) != P2_OK) { printf("close %d\n", rc); return 2; }
            if ((rc = open_db()) != P2_OK) { printf("reopen %d %s\n", rc, os_errmsg(db)); return 2; }
            p2_server_stats st;
            os_server_stats(db, &st);
            again += (long)st.conflicts;
        }
        printf("reopen done again %ld gave_up %ld\n", again, gave_up);
    } else if (!strcmp(what, "sum")) {
        int64_t sum = 0, total = 0;
        for (int k = 0; k <= n; k++) {
            const os_item *it = os_items_lookup_id(db, (uint32_t)k, NULL);
            if (k == 0) total = it->score; else sum += it->score;
        }
        printf("sum %lld total %lld\n", (long long)sum, (long long)total);
    }
    rc = os_close(db);
    if (rc != P2_OK) { printf("close %d\n", rc); return 2; }
    return 0;
}
"""


def test_several_clients_lose_nothing_and_see_no_torn_state(tmp_path, cc, server):
    """Optimistic transactions over one database: 3 writer processes each run 60
    transactions adding 1 to two of 8 counters and 2 to a total (every one of them
    touches the total: they conflict constantly), aborting and retrying on P2_ECONFLICT;
    2 reader processes sum the counters in transactions of their own. Every process built
    with ASan and UBSan. Nothing lost: the total is exactly 2 x 180 and the counters sum to
    it; nothing torn: no reader's successful commit saw counters that do not sum to the
    total. Conflicts happened (the retry path ran), and no p2:lock key exists. Then a
    churner inserts and deletes items (the roots and the allocator move), a commit about
    every 0.5 ms, while 2 processes open the database 40 times each: an open's integrity
    walk (about 0.5 ms) that met a commit walked again (it went round again at least once;
    an open that gave up after 8 walks is P2_ECONFLICT, and opened again) and none took a
    mixed state for corruption."""
    out = tmp_path / "counters"
    out.mkdir()
    spec = out / "os.p2"
    spec.write_text(SPEC.format(uri=server.uri(), objects=4, storage="malloc"))
    subprocess.run([sys.executable, "-m", "p2gen", "build", "--no-compile", str(spec), "-o", str(out)],
                   check=True, capture_output=True, text=True)
    (out / "driver.c").write_text(COUNTERS)
    exe = build_san_program(cc, out / "driver", [out / "driver.c", out / "os.c"], out)
    assert run(exe, "init", 8, 0, 0) == ["init 0"]
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0", UBSAN_OPTIONS="halt_on_error=1")
    procs = [subprocess.Popen([str(exe), "incr", "8", "60", str(w + 1)], cwd=out, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for w in range(3)]
    procs += [subprocess.Popen([str(exe), "read", "8", "80", str(r + 10)], cwd=out, env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE) for r in range(2)]
    results = [p.communicate(timeout=300) for p in procs]
    for p, (o, e) in zip(procs, results):
        assert p.returncode == 0 and "Sanitizer" not in e and "runtime error" not in e, (o, e)
    writers, readers = [o for o, _ in results[:3]], [o for o, _ in results[3:]]
    assert all(o.startswith("incr done") for o in writers), writers
    assert all(o.startswith("read done") for o in readers), readers
    conflicts = sum(int(o.split()[-1]) for o in writers + readers)
    assert conflicts > 0, (writers, readers)
    assert run(exe, "sum", 8, 0, 0) == ["sum 360 total 360"]
    assert server.command("EXISTS", "p2:lock") == b":0"
    churn = subprocess.Popen([str(exe), "churn", "8", "500", "0"], cwd=out, env=env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    opens = [subprocess.Popen([str(exe), "reopen", "8", "40", "0"], cwd=out, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    results = [p.communicate(timeout=300) for p in opens]
    (out / "stop").touch()
    results.append(churn.communicate(timeout=60))
    for p, (o, e) in zip(opens + [churn], results):
        assert p.returncode == 0 and "Sanitizer" not in e and "runtime error" not in e, (o, e)
    assert results[-1][0].startswith("churn done"), results
    assert all(o.startswith("reopen done") for o, _ in results[:2]), results
    # walked again within an open, or 8 times in a row and the open retried (P2_ECONFLICT)
    again = sum(int(o.split()[3]) + int(o.split()[5]) for o, _ in results[:2])
    assert again > 0, results
    assert run(exe, "sum", 8, 0, 0) == ["sum 360 total 360"]


def test_stalled_server_fails_every_call_within_the_timeout(tmp_path, cc, server):
    exe = build(tmp_path, cc, server.uri(), objects=4)
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
    assert sync.startswith(f"sync 6 {server.uri()}: ") and "did not answer" in sync and "400 ms" in sync, lines
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
    assert out[0].startswith(f"open 6 {server.uri()}: ") and "did not answer" in out[0], out


@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
def test_server_gone_fails_every_call_at_once(tmp_path, cc, tmp_path_factory, how):
    """A server that exits (SIGTERM) or is killed (SIGKILL) under a client with dirty
    objects (not stalled: its port refuses): the next request fails at once with the
    connection's error, and every call after it too; the close returns."""
    own = RedisServer(tmp_path_factory.mktemp("gone")).start()
    try:
        exe = build(tmp_path, cc, own.uri(), objects=4)
        run(exe, "fill", 50)
        proc = subprocess.Popen([str(exe), "update", "50", "sleep", "sync"],
                                cwd=exe.parent, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True,
                                env=dict(os.environ, ASAN_OPTIONS="detect_leaks=0"))
        assert proc.stdout.readline().startswith("open 0")
        assert proc.stdout.readline().startswith("update 50 ok")
        if how == "SIGKILL":
            os.kill(own.proc.pid, signal.SIGKILL)
            own.proc.wait()
        own.stop()
        t0 = time.monotonic()
        out, err = proc.communicate("\n", timeout=30)
        assert time.monotonic() - t0 < 3
    finally:
        own.stop()
    lines = out.splitlines()
    assert "Sanitizer" not in err, err
    sync = next(x for x in lines if x.startswith("sync "))
    assert sync.startswith(f"sync 6 {own.uri()}: the connection failed during a commit"), lines
    assert lines[-1].startswith("close 6"), lines


def test_bundling_fetches_allocation_neighbours_in_one_request(tmp_path, cc, server):
    """objserver(bundle = 8): a miss brings the missed block and up to 8 neighbours at
    its stride in one MGET. A cold scan of 400 elements allocated in turn: one request per
    9 elements instead of one per element, every element still read right (the scan's
    count and, in the model walk, every answer)."""
    plain = build(tmp_path, cc, server.uri(), objects=64)
    bundled = build(tmp_path, cc, server.uri(), objects="64, bundle = 8")
    run(plain, "fill", 400)
    out = run(plain, "drop", "reset", "scan", "stats", "cold")
    one = counters(out, "cold")
    assert "scan 400" in out and one["reads"] == one["misses"] == 400 and one["bundled"] == 0, one
    out = run(bundled, "drop", "reset", "scan", "stats", "cold", "check", 400)
    many = counters(out, "cold")
    assert "scan 400" in out and "check 400 ok" in out, out
    # each element fetched once, but for the few the clock evicted between their bundle
    # and their use (fetched again)
    assert many["reads"] == many["misses"] and 400 <= many["misses"] + many["bundled"] <= 420, many
    assert many["reads"] <= 400 // 9 + 8, many
    # the same bytes, give or take the neighbours that were not elements (the bucket table)
    assert one["bytes_read"] <= many["bytes_read"] <= one["bytes_read"] + 30 * 256, (one, many)
    # random operations with a 2-object cache: bundled blocks evict each other at once
    walk = build(tmp_path, cc, server.uri(1), objects="2, bundle = 4", driver="model")
    out = run(walk, "walk", 1500, "stats")
    assert out[1].startswith("walk 1500 ok"), out
    digest = out[1].split(" digest ")[1]
    assert run(walk, "digest")[1] == f"digest {digest}"


def test_server_refusing_writes_fails_the_commit(tmp_path, cc, server):
    """A Redis that refuses writes (maxmemory reached under noeviction: every write is an
    OOM error) under a client with dirty objects: the commit's MULTI ... EXEC is reported
    failed with the server's words, the close returns, no sanitizer report; once the
    server takes writes again the database is there as last committed, nothing of the
    refused commit in it."""
    exe = build(tmp_path, cc, server.uri(), objects=64)
    run(exe, "fill", 50)
    proc = subprocess.Popen([str(exe), "update", "50", "sleep", "sync"],
                            cwd=exe.parent, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, ASAN_OPTIONS="detect_leaks=0"))
    assert proc.stdout.readline().startswith("open 0")
    assert proc.stdout.readline().startswith("update 50 ok")
    assert server.command("CONFIG", "SET", "maxmemory-policy", "noeviction") == b"+OK"
    assert server.command("CONFIG", "SET", "maxmemory", "1") == b"+OK"
    try:
        t0 = time.monotonic()
        out, err = proc.communicate("\n", timeout=30)
        assert time.monotonic() - t0 < 3
    finally:
        assert server.command("CONFIG", "SET", "maxmemory", "0") == b"+OK"
    lines = out.splitlines()
    assert "Sanitizer" not in err and "runtime error" not in err, err
    assert proc.returncode == 0, (proc.returncode, out, err)
    sync = next(x for x in lines if x.startswith("sync "))
    assert sync.startswith(f"sync 6 {server.uri()}: "), lines
    assert "OOM" in sync and lines[-1].startswith("close 6 "), lines
    # the refused commit shipped nothing: the database is as last committed
    out = run(exe, "check", 50)
    assert out[:2] == ["open 0 ", "check 50 ok"], out


def test_python_retries_a_conflict(tmp_path, cc, server):
    """The Python binding over an object server: two handles on one database (as two
    clients would be); the first reads an item, the second commits a change to it, and
    the first's commit of its own change raises ConflictError, which `with
    db.transaction()` turns into an abort; the retry loop README shows then commits on
    the state the second left (nothing lost: 1 + 10 + 100). The second, reading its stale
    copy, is refused at its commit in turn and reads 111 on its retry."""
    import importlib
    from p2gen.build import generate
    from p2gen.pybind import build_python
    from p2gen.runtime.pyapi import ConflictError
    spec = tmp_path / "p2t_osy.p2"
    spec.write_text(SPEC.format(uri=server.uri(), objects=4, storage="malloc"))
    gen = generate(str(spec), str(tmp_path / "out"))
    build_python(gen, cc=cc, extra_cflags=QUICK_PY_CFLAGS)
    sys.path.insert(0, gen.out_dir)
    try:
        mod = importlib.import_module("p2t_osy")
    finally:
        sys.path.remove(gen.out_dir)
    first, second = mod.open(tmp_path), mod.open(tmp_path)
    try:
        with first.transaction():
            first.items.insert(id=1, grp=0, score=1, pad="")
        attempts = 0
        while True:
            try:
                with first.transaction():
                    attempts += 1
                    score = first.items[1].score          # read: in the transaction's read set
                    if attempts == 1:                      # meanwhile another client commits
                        with second.transaction():
                            second.items.update(second.items[1].ref, score=second.items[1].score + 10)
                    first.items.update(first.items[1].ref, score=score + 100)
                break
            except ConflictError:
                continue
        assert attempts == 2
        # the second client's cache still holds the item as it committed it: its reads are
        # checked at the commit, which refuses them (and drops the stale copy); read again
        seen = []
        while True:
            try:
                with second.transaction():
                    seen.append(second.items[1].score)
                break
            except ConflictError:
                continue
        assert seen == [11, 111], seen
    finally:
        first.close()
        second.close()
