"""`journal` and `wal` over `pageserver(log = ...)`: durable commits and several clients,
against a real nbdkit (its file plugin serving a directory: the database and its log are
two exports of one server, started here on a free loopback port, stopped by its pid).

Through the public interface: a spec built with `p2gen build`, driven by a small C program
through the generated API, -Wall -Wextra -Werror under ASan and UBSan. A transaction writes
one counter value into every record (several pages, more than the 4-frame buffer holds, so
the buffer keeps the transaction's pages past its size: no steal). Checked:
- a writer SIGKILLed at random points of its commits, reopened: every record holds the
  same value, the last one whose commit returned or the one in flight (its commit point
  passed), never a mix; the new writer takes the dead one's lease at once (its pid is
  gone) and writes back the last commit from the log first;
- abort drops the transaction; close and reopen keep the committed state;
- a second writer is refused with P2_EBUSY naming the holder; a writer stopped (SIGSTOP)
  past its lease is taken over, and once resumed its commit is refused, nothing lost;
- readers in other processes while a writer commits: every read transaction that its
  commit accepts saw one committed value in every record, never going back;
- the data export failing its writes after the commit point (nbdkit's error filter, its
  trigger file, on a second server so that the log export still writes): the commit
  returns P2_EIO saying the commit is durable on the log, the next begin is refused, and
  the next writer's open (the server healthy again) writes it back from the log;
- the checker: a journal over a pageserver without a log, a log without a journal, wal
  over several page-server files.
"""
from __future__ import annotations

import os
import random
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

NREC = 60          # 60 records of 232 bytes: 4 pages of the array, plus the hash's

SPEC = """record ctr {{ id: u32; val: i64; pad: char[212]; }}
container ctrs of ctr
    = top2ds_qualify[hash(key = id, buckets = 64)[array(capacity = 16)[{txn}[pageserver(server = "{db}", log = "{log}", pages = 4, verify_open = false)]]]];
"""

DRIVER = r"""
#define _DEFAULT_SOURCE
#include "pt.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NREC @NREC@

/* every record's value, or -1 if they differ (a state no commit made) */
static long long read_all(pt_db *db)
{
    long long v = -2;
    for (uint32_t k = 0; k < NREC; k++) {
        uint64_t ref;
        const pt_ctr *c = pt_ctrs_lookup_id(db, k, &ref);
        if (!c) return -3;
        if (v == -2) v = c->val;
        else if (c->val != v) return -1;
    }
    return v;
}

static int write_all(pt_db *db, long long v)
{
    for (uint32_t k = 0; k < NREC; k++) {
        uint64_t ref;
        const pt_ctr *c = pt_ctrs_lookup_id(db, k, &ref);
        int rc;
        if (c) {
            rc = pt_ctrs_set_val(db, ref, v);
        } else {
            pt_ctr n;
            memset(&n, 0, sizeof n);
            n.id = k; n.val = v;
            snprintf(n.pad, sizeof n.pad, "record %u", (unsigned)k);
            rc = pt_ctrs_insert(db, &n, &ref);
        }
        if (rc != P2_OK) return rc;
    }
    return P2_OK;
}

/* writer N [stop]: commits N transactions, each the next value (from the current one);
   check: prints the state; abort V: writes V everywhere then aborts;
   reader N: N read transactions, prints how many were accepted and the values' order */
int main(int argc, char **argv)
{
    pt_db *db;
    const char *cmd = argv[1];
    int rc = !strcmp(cmd, "reader") ? pt_open_reader_unchecked(&db, ".") : pt_open(&db, ".");
    printf("open %d %s\n", rc, rc ? pt_errmsg(db) : "");
    fflush(stdout);
    if (rc != P2_OK) { pt_close(db); return 0; }
    if (!strcmp(cmd, "writer")) {
        long n = atol(argv[2]);
        long long v = read_all(db);
        if (v == -3) v = 0;
        printf("start %lld\n", v);
        fflush(stdout);
        if (argc > 3) getchar();      /* the test stops and resumes this process meanwhile */
        for (long i = 0; i < n; i++) {
            if ((rc = pt_begin(db)) != P2_OK || (rc = write_all(db, v + 1)) != P2_OK ||
                (rc = pt_commit(db)) != P2_OK) {
                printf("failed %d %s\n", rc, pt_errmsg(db));
                pt_abort(db);
                rc = pt_begin(db);           /* after a failed commit: refused, or not */
                if (rc == P2_OK) rc = write_all(db, v + 2);
                printf("again %d %s\n", rc, rc ? pt_errmsg(db) : "");
                break;
            }
            printf("committed %lld\n", ++v);
            fflush(stdout);
        }
    } else if (!strcmp(cmd, "check")) {
        printf("state %lld\n", read_all(db));
    } else if (!strcmp(cmd, "abort")) {
        rc = write_all(db, atol(argv[2]));
        printf("wrote %d, inside %lld\n", rc, read_all(db));
        rc = pt_abort(db);
        printf("abort %d, after %lld\n", rc, read_all(db));
    } else if (!strcmp(cmd, "reader")) {
        long n = atol(argv[2]), ok = 0, retried = 0;
        long long last = -1;
        for (long i = 0; i < n; i++) {
            if ((rc = pt_begin(db)) != P2_OK) { printf("begin %d %s\n", rc, pt_errmsg(db)); break; }
            long long v = read_all(db);
            rc = pt_commit(db);
            if (rc == P2_EBUSY) { retried++; continue; }
            if (rc != P2_OK) { printf("commit %d %s\n", rc, pt_errmsg(db)); break; }
            if (v < 0 || v < last) { printf("BAD %lld after %lld\n", v, last); break; }
            last = v;
            ok++;
            usleep(1000);
        }
        printf("reader ok=%ld retried=%ld last=%lld\n", ok, retried, last);
    }
    rc = pt_close(db);
    printf("close %d\n", rc);
    return 0;
}
""".replace("@NREC@", str(NREC))

@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = NbdServer(tmp_path_factory.mktemp("nbd") / "exports", size=16 << 20, plugin="dir").start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def drivers(tmp_path_factory, server, cc):
    """The driver over journal and over wal (built once for the module)."""
    return {txn: build_driver(tmp_path_factory.mktemp(txn), cc, txn, server.uri(f"{txn}-db"),
                              server.uri(f"{txn}-log"))
            for txn in ("journal", "wal")}


def build_driver(d: Path, cc: str, txn: str, db: str, log: str, extra: str = "") -> Path:
    """The driver over `txn` over a pageserver on `db` and `log`, `extra` more of its
    parameters."""
    (d / "pt.p2").write_text(SPEC.format(txn=txn, db=db, log=log).replace(
        "verify_open = false", "verify_open = false" + extra))
    subprocess.run([sys.executable, "-m", "p2gen", "build", "--no-compile", str(d / "pt.p2"), "-o", str(d)],
                   check=True, capture_output=True, text=True)
    (d / "driver.c").write_text(DRIVER)
    return build_san_program(cc, d / "driver", [d / "driver.c", d / "pt.c"], d)


def env(**extra) -> dict:
    return dict(os.environ, ASAN_OPTIONS="detect_leaks=0", UBSAN_OPTIONS="halt_on_error=1",
                **{k: str(v) for k, v in extra.items()})


def run(exe: Path, *args, timeout=60, **extra) -> list:
    proc = subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True,
                          env=env(**extra), cwd=exe.parent, timeout=timeout)
    assert "Sanitizer" not in proc.stderr and "runtime error" not in proc.stderr, proc.stderr
    assert proc.returncode == 0, (proc.returncode, proc.stdout, proc.stderr)
    return proc.stdout.splitlines()


def spawn(exe: Path, *args, stdin=None, **extra) -> subprocess.Popen:
    return subprocess.Popen([str(exe), *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=stdin, text=True, env=env(**extra),
                            cwd=exe.parent)


def read_until(proc: subprocess.Popen, prefix: str) -> list:
    lines = []
    while True:
        line = proc.stdout.readline()
        assert line, (lines, proc.stderr.read() if proc.poll() is not None else "")
        lines.append(line.strip())
        if line.startswith(prefix):
            return lines


def state(exe: Path) -> int:
    out = run(exe, "check")
    assert out[0] == "open 0 " and out[-1] == "close 0", out
    return int(out[1].split()[1])


@pytest.mark.parametrize("txn", ["journal", "wal", "wal-ranges"])
def test_sigkill_in_commits_keeps_the_last_committed_state(server, drivers, txn, tmp_path, cc):
    """(wal-ranges: wal over pageserver(ship = ranges), whose commits write back the
    announced byte ranges of their pages, the log holding the pages whole.)"""
    if txn == "wal-ranges":
        exe = build_driver(tmp_path, cc, "wal", server.uri(f"{txn}-db"), server.uri(f"{txn}-log"),
                           ", ship = ranges")
    else:
        exe = drivers[txn]
    server.reset_exports(f"{txn}-db", f"{txn}-log")
    out = run(exe, "writer", 3)
    assert out[-2:] == ["committed 3", "close 0"], out
    assert state(exe) == 3
    rnd = random.Random(36)
    last = 3
    for _ in range(6):
        child = spawn(exe, "writer", 1_000_000)
        read_until(child, "start")
        time.sleep(rnd.uniform(0.02, 0.4))       # somewhere in a commit, or between two
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        printed = [int(x.split()[1]) for x in child.stdout.read().split("\n") if x.startswith("committed")]
        assert "Sanitizer" not in child.stderr.read()
        done = printed[-1] if printed else last
        got = state(exe)       # the reopen takes the dead writer's lease, recovers from the log
        # the last commit that returned, or the one in flight whose commit point was reached
        assert got in (done, done + 1), (got, done)
        last = got
    assert last > 3


def test_abort_and_reopen(server, drivers):
    exe = drivers["journal"]
    server.reset_exports("journal-db", "journal-log")
    run(exe, "writer", 2)
    out = run(exe, "abort", 77)
    assert out[1] == "wrote 0, inside 77" and out[2] == "abort 0, after 2", out
    assert state(exe) == 2
    # the log's last record is an older commit than the data holds: not replayed again
    run(exe, "writer", 1)
    assert state(exe) == 3


def test_one_writer_at_a_time_and_lease_takeover(server, drivers):
    exe = drivers["journal"]
    server.reset_exports("journal-db", "journal-log")
    run(exe, "writer", 1)
    first = spawn(exe, "writer", 5, "stop", stdin=subprocess.PIPE, P2_SERVER_LEASE_MS=400)
    read_until(first, "start")
    out = run(exe, "writer", 1)
    assert out[0].startswith("open 11 ") and f"pid {first.pid} on " in out[0], out
    assert "another writer holds the lease" in out[0]
    os.kill(first.pid, signal.SIGSTOP)            # a writer that stalls past its lease
    time.sleep(0.6)
    out = run(exe, "writer", 2)                   # takes it over
    assert out[0] == "open 0 " and out[-2:] == ["committed 3", "close 0"], out
    os.kill(first.pid, signal.SIGCONT)
    rest, err = first.communicate("\n", timeout=30)
    assert "Sanitizer" not in err
    assert "failed 11" in rest and "lease ran out" in rest, rest
    assert state(exe) == 3                        # nothing of either writer lost


def test_readers_see_only_committed_states(server, drivers):
    exe = drivers["wal"]
    server.reset_exports("wal-db", "wal-log")
    run(exe, "writer", 1)
    writer = spawn(exe, "writer", 150)
    readers = [spawn(exe, "reader", 150) for _ in range(2)]
    outs = [r.communicate(timeout=120) for r in readers]
    wout, werr = writer.communicate(timeout=120)
    assert "committed 151" in wout and "Sanitizer" not in werr, (wout, werr)
    for o, e in outs:
        assert "Sanitizer" not in e and "runtime error" not in e, e
        line = next(x for x in o.splitlines() if x.startswith("reader"))
        ok = int(line.split()[1].split("=")[1])
        assert "BAD" not in o and ok > 0, o
    # a reader may not commit changes, and never creates a database
    server.reset_exports("wal-db", "wal-log")
    out = run(exe, "reader", 1)
    assert out[0].startswith("open 9 ") and "a reader cannot create" in out[0], out


def test_write_back_failing_after_the_commit_point_loses_nothing(tmp_path, cc, server):
    """The data export (a second nbdkit, its error filter failing every write while the
    trigger file exists) refuses the write-back of a commit whose record is already on the
    log export: the commit returns P2_EIO saying it is durable on the log, the next begin
    is refused, and once the server writes again the next writer's open writes the commit
    back from the log: its value in every record."""
    trigger = tmp_path / "trigger"
    data = NbdServer(tmp_path / "data", port=free_port(), size=16 << 20, filters=("error",),
                     plugin="dir")
    data.reset_exports("db")
    data.start(("error=EIO", "error-pwrite-rate=1", f"error-pwrite-file={trigger}"))
    try:
        server.reset_exports("faulty-log")
        exe = build_driver(tmp_path, cc, "journal", data.uri("db"), server.uri("faulty-log"))
        assert run(exe, "writer", 2)[-2:] == ["committed 2", "close 0"]
        child = spawn(exe, "writer", 1, "stop", stdin=subprocess.PIPE)
        read_until(child, "start 2")
        trigger.touch()               # no steal: nothing reached the data export before
        out, err = child.communicate("\n", timeout=60)
        assert "Sanitizer" not in err and child.returncode == 0, err
        failed = next(x for x in out.splitlines() if x.startswith("failed"))
        # (the commit's generation: the database's creation was the first)
        assert failed.startswith("failed 6 ") and "commit 4 is durable on the log export" in failed
        assert server.uri("faulty-log") in failed and "Input/output error" in failed, out
        assert "next open writes it back from the log" in failed, out
        again = next(x for x in out.splitlines() if x.startswith("again"))
        assert again.startswith("again 6 ") and "commit 4 is durable" in again, out
        assert out.splitlines()[-1].startswith("close 6"), out
        trigger.unlink()
        # the failed writer's process is gone: its lease is taken at once, the commit replayed
        assert state(exe) == 3
        assert run(exe, "writer", 1)[-2:] == ["committed 4", "close 0"]
        assert state(exe) == 4
    finally:
        data.stop()
        trigger.unlink(missing_ok=True)


def _check_errors(text: str) -> str:
    try:
        check(parse(text, "t.p2"))
    except (SpecError, SpecErrors) as e:
        return str(e)
    return ""


def test_checker_pairs_the_log_with_a_journal():
    base = ('record r { id: u32; }\ncontainer c of r = top2ds_qualify[array[%s]];\n')
    no_log = base % 'journal[pageserver(server = "nbd://h:1/db")]'
    assert "keeps its log on a second export" in _check_errors(no_log)
    no_journal = base % 'pageserver(server = "nbd://h:1/db", log = "nbd://h:1/log")'
    assert "is the log of a journal or wal" in _check_errors(no_journal)
    same = base % 'journal[pageserver(server = "nbd://h:1/db", log = "nbd://h:1/db")]'
    assert "an export of its own" in _check_errors(same)
    bad = base % 'wal[pageserver(server = "nbd://h:1/db", log = "nbd:/x")]'
    assert "not a server URI" in _check_errors(bad)
    assert _check_errors(base % 'wal[pageserver(server = "nbd://h:1/db", log = "nbd://h:1/log")]') == ""


def test_checker_refuses_wal_over_several_server_files():
    """wal commits the spec's logged files together (p2_wal_resolve at open reads each
    file's log): over page servers, whose logs are exports, it is refused at the layer."""
    text = ('record r { id: u32; }\n'
            'container a of r = top2ds_qualify[array[wal[pageserver(server = "nbd://h:1/a", '
            'log = "nbd://h:1/alog")]]];\n'
            'container b of r = top2ds_qualify[array[wal[pageserver(server = "nbd://h:1/b", '
            'log = "nbd://h:1/blog")]]];\n')
    msg = _check_errors(text)
    line2 = text.splitlines()[1]
    assert f"t.p2:2:{line2.index('wal[') + 1}" in msg, msg
    assert "layer 'wal' over 'pageserver' (\"nbd://h:1/a\")" in msg and '"nbd://h:1/b"' in msg, msg
    assert "cannot take part in" in msg and "use journal" in msg, msg
    # journal commits each file by itself: allowed; wal over one server file: allowed
    assert _check_errors(text.replace("wal[", "journal[")) == ""
    assert _check_errors(text.split("container b")[0]) == ""
