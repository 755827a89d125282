"""Transactions from Python: a journalled spec's module has Database.begin/commit/abort,
and what a commit made durable survives a process that dies without closing."""
from __future__ import annotations

import importlib
import subprocess
import sys
import textwrap

import pytest

from p2gen.runtime import pyapi
from p2gen.build import generate
from conftest import QUICK_PY_CFLAGS
from p2gen.pybind import build_python

SPEC = """
record account { id: u32 = 0; balance: i64 = 0; note: text = ""; }
container p2tj_accounts of account = top2ds_qualify[hash[array[journal[persistent]]]]
    with hash(key = id), persistent(file = "p2tj.db");
"""


@pytest.fixture(scope="module")
def gen(tmp_path_factory):
    root = tmp_path_factory.mktemp("pyjournal")
    spec = root / "p2tj.p2"
    spec.write_text(textwrap.dedent(SPEC))
    g = generate(str(spec), str(root / "out"))
    build_python(g, extra_cflags=QUICK_PY_CFLAGS)
    return g


@pytest.fixture
def mod(gen):
    sys.path.insert(0, gen.out_dir)
    try:
        yield importlib.import_module("p2tj")
    finally:
        sys.path.remove(gen.out_dir)


def test_commit_abort_begin(mod, tmp_path):
    with mod.open(str(tmp_path)) as db:
        db.p2tj_accounts.insert(id=1, balance=5, note="kept")
        db.commit()
        db.p2tj_accounts.insert(id=2, balance=6, note="dropped")
        assert len(db.p2tj_accounts) == 2
        db.abort()
        assert len(db.p2tj_accounts) == 1
        assert db.p2tj_accounts.find(1).note == "kept"
        assert db.p2tj_accounts.find(2) is None
        db.begin()                                  # nothing pending: fine
        db.p2tj_accounts.update(db.p2tj_accounts.find(1), balance=7)
        with pytest.raises(pyapi.P2Error, match="commit or abort"):
            db.begin()                              # changes pending
        db.commit()
    with mod.open(str(tmp_path)) as db:
        assert db.p2tj_accounts.find(1).balance == 7
        assert db.verify() == []                    # the integrity checker, from Python


def test_commit_survives_a_process_that_dies_without_closing(gen, tmp_path):
    child = f"""
import os, sys
sys.path.insert(0, {gen.out_dir!r})
import p2tj
db = p2tj.open({str(tmp_path)!r})
db.p2tj_accounts.insert(id=10, balance=1, note="committed")
db.commit()
db.p2tj_accounts.insert(id=11, balance=2, note="never committed")
os._exit(0)                                        # no close, no flush: as if killed
"""
    subprocess.run([sys.executable, "-c", child], check=True, timeout=120)
    sys.path.insert(0, gen.out_dir)
    try:
        mod = importlib.import_module("p2tj")
    finally:
        sys.path.remove(gen.out_dir)
    with mod.open(str(tmp_path)) as db:
        assert db.p2tj_accounts.find(10).note == "committed"
        assert db.p2tj_accounts.find(11) is None
        assert len(db.p2tj_accounts) == 1


def _cut_creation_short(path, journal):
    """The files as a process killed while creating the data file leaves them: the
    journal's header and nothing after it (it is made, and synced, first), the data file
    no larger than its first growth (128 KiB) and without the magic, which creation stores
    last."""
    if journal is not None:
        with open(journal, "r+b") as f:
            f.truncate(64)                          # LOG_HDR_SIZE
    with open(path, "r+b") as f:
        f.truncate(128 << 10)
        f.seek(0)
        f.write(bytes(8))


@pytest.mark.parametrize("commit", [False, True])
def test_a_creation_cut_short_starts_again_unless_something_was_committed(gen, mod, tmp_path,
                                                                          commit):
    """A journalled file whose creating process died before the file had its magic (seen
    in the crash suite: a kill during the load) opens as a new database when its journal
    never committed anything; with a committed transaction in the journal the journal's
    replay brings the file back, the committed record in it."""
    child = f"""
import os, sys
sys.path.insert(0, {gen.out_dir!r})
import p2tj
db = p2tj.open({str(tmp_path)!r})
if {commit!r}:
    db.p2tj_accounts.insert(id=10, balance=1, note="committed")
    db.commit()
os._exit(0)                                        # no close: the journal stays
"""
    subprocess.run([sys.executable, "-c", child], check=True, timeout=120)
    if commit:
        # the journal holds the committed pages, the header's among them: replayed
        _cut_creation_short(tmp_path / "p2tj.db", None)
        with mod.open(str(tmp_path)) as db:
            assert db.p2tj_accounts.find(10).note == "committed"
            assert len(db.p2tj_accounts) == 1 and db.verify() == []
        return
    _cut_creation_short(tmp_path / "p2tj.db", tmp_path / "p2tj.db-journal")
    with mod.open(str(tmp_path)) as db:
        assert len(db.p2tj_accounts) == 0
        db.p2tj_accounts.insert(id=1, balance=2, note="after")
        db.commit()
    with mod.open(str(tmp_path)) as db:
        assert db.p2tj_accounts.find(1).note == "after" and db.verify() == []


def test_transactions_need_a_journal(tmp_path):
    spec = tmp_path / "p2tn.p2"
    spec.write_text("record r { a: u32; }\ncontainer p2tn_c of r = top2ds[array[transient]];\n")
    g = generate(str(spec), str(tmp_path / "out"))
    build_python(g, extra_cflags=QUICK_PY_CFLAGS)
    sys.path.insert(0, g.out_dir)
    try:
        mod = importlib.import_module("p2tn")
    finally:
        sys.path.remove(g.out_dir)
    with mod.open() as db:
        assert not hasattr(db, "commit") and not hasattr(db, "transaction")


# ---------------------------------------------------------------------------
# hostile hosts: other SIGSEGV handlers, threads. Each runs in a
# child process with a timeout: a crash or a hang fails the test instead of the run.
# ---------------------------------------------------------------------------
def _child(gen, tmp_path, body: str, timeout: int = 120):
    code = (f"import sys\nsys.path.insert(0, {gen.out_dir!r})\nimport p2tj\n"
            f"DIR = {str(tmp_path)!r}\n" + textwrap.dedent(body))
    try:
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"the child hung (killed after {timeout} s): {e.stderr!r}")


WRITES = """
acc = db.p2tj_accounts
for i in range(300):
    acc.insert(id=i, balance=i, note="n" * (i % 50))
db.commit()
for r in list(acc):
    acc.update(r, balance=r.balance + 1)
db.commit()
assert sum(r.balance for r in acc if r.id < 300) == sum(range(1, 301)), "lost updates"
assert db.verify() == []
db.close()
with p2tj.open(DIR) as db2:
    assert len(db2.p2tj_accounts) == 301 and db2.p2tj_accounts.find(7).balance == 8
print("ok")
"""


@pytest.mark.parametrize("install", [
    "import faulthandler; faulthandler.enable()",
    "import signal; signal.signal(signal.SIGSEGV, lambda *a: None)",
    "import signal; signal.signal(signal.SIGSEGV, signal.SIG_DFL)",
])
def test_a_sigsegv_handler_installed_after_open_does_not_break_writes(gen, tmp_path, install):
    """faulthandler.enable() (as pytest does), a Python-level SIGSEGV handler or the
    default action, installed while a journalled database is open: writes go on (the
    binding puts the journal's handler back on top before each call), no crash, no hang."""
    r = _child(gen, tmp_path, f"db = p2tj.open(DIR)\ndb.p2tj_accounts.insert(id=1000)\n"
                              f"db.commit()\n{install}\n" + WRITES)
    assert r.returncode == 0 and r.stdout.strip() == "ok", (r.returncode, r.stderr[-3000:])
    assert "Fatal Python error" not in r.stderr


def test_faulthandler_still_reports_a_real_crash(gen, tmp_path):
    """With the journal's handler back on top of faulthandler's, a genuine segmentation
    fault still reaches faulthandler (its report) and kills the process: no endless
    re-raising between the two handlers."""
    r = _child(gen, tmp_path, """
        import ctypes, faulthandler
        db = p2tj.open(DIR)
        faulthandler.enable()
        db.p2tj_accounts.insert(id=1, balance=2)    # the journal's handler goes back on top
        db.commit()
        print("wrote", flush=True)
        ctypes.string_at(0)                          # a real crash
        print("survived")
        """)
    assert r.stdout.strip() == "wrote", (r.stdout, r.stderr[-2000:])
    assert r.returncode != 0 and "Fatal Python error: Segmentation fault" in r.stderr


def test_threads_sharing_one_database_are_serialised(gen, tmp_path):
    """Four threads on one journalled Database (inserts, updates, finds, cursor walks
    with cursor updates, commits): every call runs alone inside C; nothing crashes and
    every thread's work is there."""
    r = _child(gen, tmp_path, """
        import threading, faulthandler
        faulthandler.enable()
        db = p2tj.open(DIR)
        acc = db.p2tj_accounts
        errors = []
        def work(t):
            try:
                for i in range(400):
                    key = t * 10_000 + i
                    acc.insert(id=key, balance=0, note="t%d" % t)
                    r = acc.find(key)
                    acc.update(r, balance=r.balance + 1)
                    if i % 50 == 0:
                        db.commit()
                        len(acc)
                        try:
                            for x in acc:
                                pass
                        except RuntimeError as e:   # another thread changed acc meanwhile
                            assert "changed during iteration" in str(e), e
            except Exception as e:
                errors.append(repr(e))
        threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
        for th in threads: th.start()
        for th in threads: th.join()
        db.commit()
        assert not errors, errors
        print(len(acc), sum(r.balance for r in acc), db.verify())
        """, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    n, total, problems = r.stdout.split(" ", 2)
    assert int(n) == int(total) == 1600 and problems.strip() == "[]", r.stdout


READ_ONLY_COMMIT_C = r"""
#define _POSIX_C_SOURCE 200809L   /* struct sigaction under -std=c11 */
#include "p2tj.h"
#include <signal.h>
#include <stdio.h>

static void foreign(int sig) { (void)sig; }

/* is the installed SIGSEGV handler the foreign one? */
static int foreign_on_top(void)
{
    struct sigaction a;
    sigaction(SIGSEGV, NULL, &a);
    return !(a.sa_flags & SA_SIGINFO) && a.sa_handler == foreign;
}

int main(int argc, char **argv)
{
    p2tj_db *db;
    p2tj_account a = { .id = 1, .balance = 5 };
    p2tj_ref ref;
    (void)argc;
    if (p2tj_open(&db, argv[1]) != P2_OK) return 10;
    if (p2tj_begin(db) != P2_OK) return 11;
    signal(SIGSEGV, foreign);
    if (!foreign_on_top()) return 12;
    /* a transaction that changed nothing: its commit writes nothing, so it leaves the
       handlers alone (no system call) */
    if (p2tj_commit(db) != P2_OK) return 13;
    if (!foreign_on_top()) return 14;
    if (p2tj_begin(db) != P2_OK) return 15;   /* begin puts the journal's back on top */
    if (foreign_on_top()) return 16;
    if (p2tj_p2tj_accounts_insert(db, &a, &ref) != P2_OK) return 17;
    signal(SIGSEGV, foreign);
    if (p2tj_commit(db) != P2_OK) return 18;  /* pages changed: commit checks, and restores */
    if (foreign_on_top()) return 19;
    if (p2tj_close(db) != P2_OK) return 20;
    puts("ok");
    return 0;
}
"""


def test_a_read_only_commit_skips_the_handler_check_and_a_writing_one_does_not(gen, tmp_path):
    """The generated commit of a transaction that changed no page returns at once: no
    sigaction to check the journal's SIGSEGV handler (what made a read-only transaction
    cost two system calls). One that changed pages still checks, and puts the journal's
    handler back on top of one installed since."""
    from p2gen.build import compile_objects
    lib = compile_objects(gen)
    src, exe = tmp_path / "ro.c", tmp_path / "ro"
    src.write_text(READ_ONLY_COMMIT_C)
    subprocess.run(["cc", "-std=c11", "-O1", "-Wall", "-Wextra", "-Werror", f"-I{gen.out_dir}",
                    str(src), lib, "-o", str(exe)], check=True)
    data = tmp_path / "db"
    data.mkdir()
    r = subprocess.run([str(exe), str(data)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "ok", (r.returncode, r.stderr)
