"""The file server: `pageserver(server = "nfs://HOST/EXPORT/FILE")`, the page-server
machinery over a file of an NFSv3 export, against a real NFS-Ganesha (VFS backend,
exporting a temporary directory) and rpcbind in a private network namespace, one per
module (tests/nfs.py); the client programs run inside that namespace.

Through the public interface: specs built with `p2gen build`, driven by the C programs of
test_pageserver.py and test_pageserver_txn.py through the generated API, -Wall -Wextra
-Werror under ASan and UBSan. Checked:
- inserts, updates and deletes over a 4-frame buffer (eviction all the time), in three
  processes: every record as the Python model says, the file on the server's disk a
  clean p2gen database; with writes = unstable, each sync one COMMIT; with writes = sync
  (every WRITE FILE_SYNC, the paper's NFS) none, the same records;
- a journal over the file server, the log on a second file: commits, abort, reopen (wal
  shares the same log machinery, pagelog.c, tested over nbd);
- Ganesha stopped (SIGSTOP) under a client: sync and close fail with P2_EIO naming the
  URI within the timeout, an open as well (the whole mount and open under one deadline);
  no server at the address: an open error at once; the file handle released when the
  backend dies or the open fails after the file was opened (LeakSanitizer on);
- malformed nfs URIs and writes = sync off NFS refused by the checker, the URI named.
"""
from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from nfs import ENGINE_MISSING, NfsServer

import test_pageserver as ps
import test_pageserver_txn as pt

pytestmark = pytest.mark.skipif(ENGINE_MISSING is not None, reason=ENGINE_MISSING or "")


@pytest.fixture(scope="module")
def nfs(tmp_path_factory):
    s = NfsServer(tmp_path_factory.mktemp("nfs")).start()
    yield s
    s.stop()


def run(server: NfsServer, exe: Path, *cmds, env=None, timeout=120) -> list:
    """The driver inside the server's namespace, under the sanitizers."""
    e = dict(os.environ, ASAN_OPTIONS="detect_leaks=0", UBSAN_OPTIONS="halt_on_error=1")
    e.update(env or {})
    proc = subprocess.run(server.wrap([exe, *cmds]), capture_output=True, text=True, env=e,
                          cwd=exe.parent, timeout=timeout)
    assert "Sanitizer" not in proc.stderr and "runtime error" not in proc.stderr, proc.stderr
    assert proc.returncode == 0, (proc.returncode, proc.stdout, proc.stderr)
    return proc.stdout.splitlines()


@pytest.mark.parametrize("writes", ["unstable", "sync"])
def test_persists_over_nfs_with_a_tiny_buffer(tmp_path, cc, nfs, writes):
    name = f"db-{writes}"
    nfs.remove(name)
    exe = ps.build(tmp_path, cc, nfs.uri(name), pages=4, name=writes, extra=f", writes = {writes}")
    model = ps.Model()
    for seed, n in ((36, 500), (37, 400), (38, 400)):
        model.run(seed, n)
        out = run(nfs, exe, "reset", "random", seed, n, "sync", "stats", "w")
        assert out[0] == "open 0 " and "random 0 " in out and out[-1] == "close 0 ", out
        c = ps.counters(out, "w")
        assert c["evictions"] > 0 and c["writebacks"] > 0 and c["resident"] <= 4, c
        # unstable writes: one COMMIT at the sync (close finds nothing dirty); FILE_SYNC: none
        assert c["flushes"] == (1 if writes == "unstable" else 0), c
    dump = [x for x in run(nfs, exe, "dump") if x.startswith("item ")]
    assert sorted(dump) == model.dump(), (len(dump), len(model.dump()))
    head = nfs.path(name).read_bytes()[:24]      # the server's disk: a clean p2gen file
    assert head[:8] == b"P2GENDB\0" and head[20:24] == b"\0\0\0\0"


def test_transactions_over_the_file_server(tmp_path, cc, nfs, txn="journal"):
    nfs.remove(f"{txn}-db", f"{txn}-log")
    exe = pt.build_driver(tmp_path, cc, txn, nfs.uri(f"{txn}-db"), nfs.uri(f"{txn}-log"))
    out = run(nfs, exe, "writer", 3)
    assert out[0] == "open 0 " and "committed 3" in out and out[-1] == "close 0", out
    out = run(nfs, exe, "abort", 99)
    assert "wrote 0, inside 99" in out and "abort 0, after 3" in out, out
    assert "state 3" in run(nfs, exe, "check")
    assert nfs.path(f"{txn}-log").stat().st_size > 0       # the log is a file of its own


LEAKS = "detect_leaks=1:abort_on_error=0"


def _no_leak(err: str) -> None:
    """No sanitizer report; LeakSanitizer ran (it cannot under ptrace: then it says so)."""
    if "LeakSanitizer has encountered a fatal error" in err:
        pytest.skip("LeakSanitizer cannot run here (under ptrace)")
    assert "Sanitizer" not in err and "runtime error" not in err, err


def test_stopped_server_fails_every_call_within_the_timeout(tmp_path, cc, nfs):
    """Ganesha stopped under a client with dirty pages: the sync and the close fail within
    the timeout, the dead backend's context and file handle released (LeakSanitizer on);
    an open against it fails within the timeout too, the whole mount and open under one
    deadline: about as long as an open of a running server plus the timeout, where
    libnfs's own timeout (whole seconds, per request) took 1 to 2 s a request."""
    nfs.remove("db-unstable")      # the first test's build (built once per module)
    exe = ps.build(tmp_path, cc, nfs.uri("db-unstable"), pages=4, name="unstable", extra=", writes = unstable")
    run(nfs, exe, "fill", 50)
    t0 = time.monotonic()
    assert run(nfs, exe)[0] == "open 0 "
    took_ok = time.monotonic() - t0
    env = dict(os.environ, ASAN_OPTIONS=LEAKS, P2_SERVER_TIMEOUT_MS="500")
    proc = subprocess.Popen(nfs.wrap([exe, "update", "50", "sleep", "sync"]), cwd=exe.parent,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    assert proc.stdout.readline().startswith("open 0")
    assert proc.stdout.readline().startswith("update 50 ok")
    nfs.pause()
    try:
        t0 = time.monotonic()
        out, err = proc.communicate("\n", timeout=30)
        took = time.monotonic() - t0
        _no_leak(err)
        lines = out.splitlines()
        sync = next(x for x in lines if x.startswith("sync "))
        assert sync.startswith(f"sync 6 {nfs.uri('db-unstable')}") and "did not answer" in sync, lines
        assert lines[-1].startswith("close 6"), lines
        assert took < 3, took
        # an open against the stopped server: the open's deadline bounds it
        t0 = time.monotonic()
        out = run(nfs, exe, env={"P2_SERVER_TIMEOUT_MS": "300", "ASAN_OPTIONS": LEAKS})
        took = time.monotonic() - t0
        assert out[0].startswith(f"open 6 {nfs.uri('db-unstable')}") and "within 300 ms" in out[0], out
        assert took < took_ok + 0.3 + 0.5, (took, took_ok)
    finally:
        nfs.resume()


def test_open_failing_after_the_file_is_open_releases_it(tmp_path, cc, nfs):
    """The file's attributes cannot be read at the open (the runtime's fault injection,
    P2_FAULT=nfs_fstat:1): an open error naming the URI, and the file handle libnfs gave
    released with the context (LeakSanitizer on)."""
    nfs.remove("db-fi")
    exe = ps.build(tmp_path, cc, nfs.uri("db-fi"), pages=4, name="fi", cflags=ps.FI)
    e = dict(os.environ, ASAN_OPTIONS=LEAKS, UBSAN_OPTIONS="halt_on_error=1", P2_FAULT="nfs_fstat:1")
    proc = subprocess.run(nfs.wrap([exe]), capture_output=True, text=True, env=e, cwd=exe.parent,
                          timeout=60)
    _no_leak(proc.stderr)
    out = proc.stdout.splitlines()
    assert out[0].startswith(f"open 6 {nfs.uri('db-fi')}: cannot learn the file's size"), out
    assert proc.returncode == 0, (proc.returncode, out)


def test_no_server_at_the_address_is_an_open_error_naming_it(tmp_path, cc, nfs):
    uri = "nfs://192.0.2.1/export/none"     # TEST-NET-1: no route from inside the namespace
    exe = ps.build(tmp_path, cc, uri, pages=4)
    t0 = time.monotonic()
    out = run(nfs, exe)
    assert time.monotonic() - t0 < 10
    assert out[0].startswith(f"open 6 {uri}: cannot mount the export"), out


@pytest.mark.parametrize("uri, why", [
    ("nfs://127.0.0.1:2049/export/db", "a port: libnfs finds"),
    ("nfs://127.0.0.1/db", "no export and file"),
    ("nfs:///export/db", "not an NFS URI"),
    ("nfs://127.0.0.1/export/", "no export and file"),
])
def test_malformed_nfs_uri_is_refused_by_the_checker(uri, why):
    msg = pt._check_errors(ps.SPEC.format(uri=uri, pages=4, extra=""))
    assert f'pageserver(server = "{uri}")' in msg and why in msg and "3:" in msg, msg


def test_sync_writes_are_refused_off_nfs():
    msg = pt._check_errors(ps.SPEC.format(uri="nbd://127.0.0.1:1/x", pages=4, extra=", writes = sync"))
    assert "writes = sync" in msg and "nbd://127.0.0.1:1/x" in msg, msg
