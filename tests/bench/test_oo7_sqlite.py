"""OO7 on SQLite (bench/oo7/oo7_sqlite.cc) and on LMDB (bench/oo7/oo7_lmdb.cc): the SQLITE system passes the conformance checker
(bench/oo7/oo7_conform.cc) built with ASan/UBSan and -Werror -- every check of spec section
5 (/work/shared/specs/oo7.md) plus every read-only result identical to HAND's -- on tiny at
fanouts 3 and 9 and on small at fanout 3, and the file it wrote reopens whole in a fresh
process.

SQLITE is registered twice (persistent: <dir>/oo7.sqlite, and transient: :memory:), so the
checker needs `--mem` to pick one; the tests select explicitly, check the persistent one's
file exists, run the transient one on tiny, and check that the bare name is refused as
ambiguous.

The durable peers pass the same checks: SQLITE-WAL and SQLITE-WAL100 (a COMMIT per 100
transactions that wrote), LMDB (no sync), LMDB-SYNC and LMDB-SYNC100, each on tiny, with the
file reopened whole in a fresh process; LMDB-SYNC also on small with the exact results.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import oo7kit
from oo7kit import assert_all_passed, run

ROOT = Path(__file__).resolve().parents[2]
OO7 = ROOT / "bench" / "oo7"
SOURCES = ("oo7_common.cc", "oo7_hand.cc", "oo7_sqlite.cc", "oo7_lmdb.cc", "oo7_conform.cc")
DB_FILE = "oo7.sqlite"


def _why_not() -> str | None:
    if not (shutil.which("c++") or shutil.which("g++")):
        return "no C++ compiler"
    if not any(os.path.exists(os.path.join(d, "sqlite3.h")) for d in ("/usr/include", "/usr/local/include")):
        return "sqlite3.h not installed (apt-get install libsqlite3-dev)"
    if not any(os.path.exists(os.path.join(d, "lmdb.h")) for d in ("/usr/include", "/usr/local/include")):
        return "lmdb.h not installed (apt-get install liblmdb-dev)"
    return None


@pytest.fixture(scope="module")
def conform(request, tmp_path_factory) -> str:
    """The checker with HAND, SQLite's and LMDB's systems, sanitized (oo7kit.checker: no
    -O; SQLite and LMDB themselves are the system's libraries, not instrumented, so the
    checks still run in seconds)."""
    why = _why_not()
    if why:
        pytest.skip(why)
    return oo7kit.checker(oo7kit.object_cache(request.config, tmp_path_factory),
                          "oo7_conform_sqlite", SOURCES, ["-lsqlite3", "-llmdb"])


def check_sqlite(conform: str, env: dict, dbdir: Path, size: str, fanout: int,
                 mem: str = "persistent", system: str = "SQLITE", db_file: str = DB_FILE) -> dict:
    proc, results = run(conform, env, "--size", size, "--fanout", str(fanout),
                        "--system", system, "--mem", mem, "--dir", str(dbdir))
    assert_all_passed(proc)
    assert proc.stdout.startswith(f"# {system} {size} fanout {fanout}")
    # the checks that compare with HAND ran
    assert any(k.startswith("same_as_hand.") for k in results)
    if mem == "persistent":
        assert (dbdir / db_file).is_file(), f"the persistent {system} system did not write its file"
        assert results.get("reopened.verify") == "clean"   # the in-process reopen ran
    else:
        assert not (dbdir / DB_FILE).exists(), "the transient SQLITE system wrote a file"
        assert not any(k.startswith("reopened.") for k in results)
    return results


@pytest.mark.parametrize("fanout", [3, 9])
def test_sqlite_conforms_on_tiny(conform, san_env, tmp_path, fanout):
    results = check_sqlite(conform, san_env, tmp_path / "db", "tiny", fanout)
    assert results["counts"] == (
        f"modules=1 manuals=1 complex=40 base=81 composite=50 documents=50 atomic=500 "
        f"connections={500 * fanout} private=243 shared=243")
    assert results["t1"] == str(243 * 10)
    assert results["t1.connections"] == str(243 * 10 * fanout)


def test_sqlite_wal_conforms_on_tiny_and_leaves_a_closed_file(conform, san_env, tmp_path):
    """SQLITE-WAL, the journalled variants' durable peer (journal_mode=WAL,
    synchronous=FULL): the same answers, and the file it leaves is in WAL mode, whole."""
    import sqlite3
    dbdir = tmp_path / "db"
    results = check_sqlite(conform, san_env, dbdir, "tiny", 3, system="SQLITE-WAL")
    assert results["t1"] == str(243 * 10)
    con = sqlite3.connect(dbdir / DB_FILE)
    try:
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert con.execute("SELECT count(*) FROM atomic_part").fetchone()[0] == 500
    finally:
        con.close()


def test_sqlite_transient_conforms_on_tiny(conform, san_env, tmp_path):
    dbdir = tmp_path / "db"
    dbdir.mkdir()
    results = check_sqlite(conform, san_env, dbdir, "tiny", 3, mem="transient")
    assert results["t1"] == str(243 * 10)


def test_checker_needs_mem_for_sqlite(conform, san_env, tmp_path):
    # two systems are called SQLITE: the bare name is ambiguous, and both are offered
    proc, _ = run(conform, san_env, "--size", "tiny", "--fanout", "3", "--system", "SQLITE",
                  "--dir", str(tmp_path))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "SQLITE is ambiguous" in proc.stderr
    assert "SQLITE --mem persistent" in proc.stderr and "SQLITE --mem transient" in proc.stderr
    assert proc.stdout == ""
    proc, _ = run(conform, san_env, "--size", "tiny", "--fanout", "3", "--system", "SQLITE",
                  "--mem", "volatile", "--dir", str(tmp_path))
    assert proc.returncode == 2 and "--mem must be persistent or transient" in proc.stderr
    proc, _ = run(conform, san_env, "--size", "tiny", "--fanout", "3", "--system", "HAND",
                  "--mem", "persistent")
    assert proc.returncode == 2
    assert "no system named HAND with --mem persistent" in proc.stderr
    assert "HAND --mem transient" in proc.stderr


def test_sqlite_conforms_on_small_and_reopens_in_a_fresh_process(conform, san_env, tmp_path):
    dbdir = tmp_path / "db"
    results = check_sqlite(conform, san_env, dbdir, "small", 3)
    assert results["counts"] == ("modules=1 manuals=1 complex=364 base=729 composite=500 "
                                 "documents=500 atomic=10000 connections=30000 private=2187 "
                                 "shared=2187")
    exact = {"t1": 43740, "t1.connections": 131220, "t6": 2187, "t8": 2632, "t9": 0,
             "q1": 10, "q7": 10000, "q8": 10000, "t4": 83106, "t2a": 2187, "t2b": 43740,
             "t2c": 174960, "t3a": 2187, "t3b": 43740, "t3c": 174960, "sm1": 5, "sm2": 5}
    for name, value in exact.items():
        assert results[name] == str(value), name
    assert "composite=505" in results["sm1.counts"] and "private=2197" in results["sm1.counts"]

    # a fresh process opens the file the run left behind (after every update operation
    # restored it) without building: the database is whole
    proc, reopened = run(conform, san_env, "--size", "small", "--fanout", "3", "--system",
                         "SQLITE", "--mem", "persistent", "--dir", str(dbdir), "--reopen-only")
    assert_all_passed(proc)
    assert reopened["reopened.counts"] == results["counts"]
    assert reopened["reopened.verify"] == "clean"
    assert reopened["reopened.t1"] == "43740"
    assert reopened["reopened.q2"] == results["q2"]


@pytest.mark.parametrize("system, fanout, db_file", [
    ("LMDB", 3, "oo7.lmdb"), ("LMDB-SYNC", 9, "oo7.lmdb"), ("LMDB-SYNC100", 3, "oo7.lmdb"),
    ("SQLITE-WAL100", 3, DB_FILE)])
def test_durable_peers_conform_on_tiny_and_reopen(conform, san_env, tmp_path, system, fanout, db_file):
    """Every LMDB setting and SQLite WAL grouped by 100: the same answers as HAND and the
    recorder, and a fresh process finds the database whole (a group's open transaction is
    committed when the database closes)."""
    dbdir = tmp_path / "db"
    results = check_sqlite(conform, san_env, dbdir, "tiny", fanout, system=system, db_file=db_file)
    assert results["counts"] == (
        f"modules=1 manuals=1 complex=40 base=81 composite=50 documents=50 atomic=500 "
        f"connections={500 * fanout} private=243 shared=243")
    assert results["t1"] == str(243 * 10) and results["t1.connections"] == str(243 * 10 * fanout)
    proc, reopened = run(conform, san_env, "--size", "tiny", "--fanout", str(fanout), "--system",
                         system, "--mem", "persistent", "--dir", str(dbdir), "--reopen-only")
    assert_all_passed(proc)
    assert reopened["reopened.counts"] == results["counts"]
    assert reopened["reopened.verify"] == "clean"


def test_lmdb_sync_conforms_on_small(conform, san_env, tmp_path):
    results = check_sqlite(conform, san_env, tmp_path / "db", "small", 3, system="LMDB-SYNC",
                           db_file="oo7.lmdb")
    exact = {"t1": 43740, "t1.connections": 131220, "t6": 2187, "t8": 2632, "t9": 0,
             "q1": 10, "q7": 10000, "q8": 10000, "t4": 83106, "t2a": 2187, "t2b": 43740,
             "t2c": 174960, "t3a": 2187, "t3b": 43740, "t3c": 174960, "sm1": 5, "sm2": 5}
    for name, value in exact.items():
        assert results[name] == str(value), name
    assert "composite=505" in results["sm1.counts"] and "private=2197" in results["sm1.counts"]
