"""OO7 through the generated data managers: the variants of type_equations/oo7/ (a
covering subset and the main ones; all of them with P2GEN_FULL=1; see CHECKED) are
generated as `p2gen bench oo7` does (p2gen.bench.oo7.run: the same names and prefixes),
compiled with -Werror, and linked with bench/oo7/oo7_p2.cc (once per variant), the shared
generator, HAND and the conformance checker (oo7_conform.cc) into one ASan/UBSan binary.

- every variant passes every check of the checker (spec section 5 of
  /work/shared/specs/oo7.md, plus every read-only result identical to HAND's) on tiny at
  fanouts 3 and 9;
- the main variants (HASH/ILIST persistent, clustered and transient, HASH/REFARRAY) do on small at
  fanout 3, with the spec's exact numbers pinned here;
- every persistent variant's file reopens whole in a fresh process (`--reopen-only`: a
  new process maps it wherever ASLR puts it, so the file may hold no absolute address);
- a file written by one variant is refused by another (the spec/equation fingerprint
  differs): a clear message and exit status, no sanitizer report, the file untouched.

Its objects and the binary are tests/oo7kit.py's: each compiled once per session and shared
with the crash tests' OO7 child through the toolchain's object cache in .pytest_cache, keyed
by every input, so a rerun after editing one file recompiles only what depends on it
(P2GEN_TEST_NO_CACHE=1: no cache).
"""
from __future__ import annotations

import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import oo7kit
from oo7kit import VARIANTS, assert_all_passed, run
from speccover import covering

from p2gen.bench.oo7 import run as bo

OO7 = oo7kit.OO7
SHARED = ("oo7_common.cc", "oo7_hand.cc", "oo7_conform.cc")
MAIN = ("hash_ilist_persistent", "hash_ilist_transient", "hash_refarray_persistent",
        "hash_ilist_journal", "hash_ilist_clustered_persistent")
# The variants built and checked: a covering subset of their specs (tests/speccover.py:
# every layer, parameter and shape some variant has), the main ones and the refusal
# test's reader; every variant with P2GEN_FULL=1. test_oo7_bench runs them all (every
# operation, the same counts as HAND), unsanitized.
_CHOSEN = {Path(s).stem for s in covering(sorted({v.spec for v in VARIANTS}))}
CHECKED = [v for v in VARIANTS if Path(v.spec).stem in _CHOSEN | set(MAIN) | {"avl_ilist_persistent"}]


def _stem(v: bo.Variant) -> str:
    return Path(v.spec).stem


def _vid(v: bo.Variant) -> str:
    return _stem(v)


def _why_not() -> str | None:
    if not (shutil.which("c++") and (os.environ.get("CC") or shutil.which("cc"))):
        return "no C/C++ compiler"
    if not (OO7 / bo.P2_DRIVER).exists():
        return f"bench/oo7/{bo.P2_DRIVER} missing"
    if not VARIANTS:
        return "no variant in type_equations/oo7/"
    return None


@pytest.fixture(scope="module")
def conform(request, tmp_path_factory) -> str:
    """The sanitized conformance binary with the CHECKED variants and HAND."""
    why = _why_not()
    if why:
        pytest.skip(why)
    from p2gen.build import generate
    cache = oo7kit.object_cache(request.config, tmp_path_factory)
    gen_dir = tmp_path_factory.mktemp("oo7_generated") / "gen"
    gens = [(v, generate(v.spec, str(gen_dir), v.prefix)) for v in CHECKED]
    # each variant's C and its driver, then HAND, the checker and the shared code; the
    # largest first (the generated sources and the checker dominate)
    tasks = [(oo7kit.generated_object, cache, g) for v, g in gens]
    tasks += [(oo7kit.driver_object, cache, OO7 / bo.P2_DRIVER, v, g) for v, g in gens]
    tasks += [(oo7kit.driver_object, cache, OO7 / src) for src in SHARED]
    tasks.sort(key=lambda t: -Path(getattr(t[2], "source", t[2])).stat().st_size)
    with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
        objs = list(pool.map(lambda t: t[0](*t[1:]), tasks))
    return oo7kit.link(cache, "oo7_conform", objs)


def sel(v: bo.Variant) -> tuple[str, ...]:
    return ("--system", v.name, "--mem", v.mem)


def check_variant(exe: str, env: dict, v: bo.Variant, dbdir: Path, size: str, fanout: int) -> dict:
    dbdir.mkdir(parents=True, exist_ok=True)
    proc, results = run(exe, env, "--size", size, "--fanout", str(fanout), *sel(v),
                        "--dir", str(dbdir))
    assert_all_passed(proc)
    assert proc.stdout.startswith(f"# {v.name} {size} fanout {fanout}")
    assert any(k.startswith("same_as_hand.") for k in results), "the comparison with HAND did not run"
    if v.persistent:
        assert (dbdir / "oo7.db").is_file(), f"{v.prefix} wrote no oo7.db"
        assert results.get("reopened.verify") == "clean"      # the in-process reopen ran
    else:
        assert not any(dbdir.iterdir()), f"the transient {v.prefix} wrote files"
        assert not any(k.startswith("reopened.") for k in results)
    return results


def check_reopen(exe: str, env: dict, v: bo.Variant, dbdir: Path, size: str, fanout: int,
                 built: dict) -> dict:
    """--reopen-only in a fresh process on the directory a full run left."""
    proc, reopened = run(exe, env, "--size", size, "--fanout", str(fanout), *sel(v),
                         "--dir", str(dbdir), "--reopen-only")
    assert_all_passed(proc)
    assert not proc.stdout.startswith("#"), "--reopen-only built a database"
    assert reopened["reopened.counts"] == built["counts"]
    assert reopened["reopened.verify"] == "clean"
    for k in ("t1", "t1.connections", "t6", "q7", "q2", "q3"):
        assert reopened["reopened." + k] == built[k], k
    return reopened


@pytest.mark.parametrize("fanout", [3, 9])
@pytest.mark.parametrize("v", CHECKED, ids=_vid)
def test_variant_conforms_on_tiny(conform, san_env, tmp_path, v, fanout):
    dbdir = tmp_path / "db"
    results = check_variant(conform, san_env, v, dbdir, "tiny", fanout)
    # tiny: 40 complex, 81 base, 50 composite parts of 10 atomic parts
    assert results["counts"] == (
        f"modules=1 manuals=1 complex=40 base=81 composite=50 documents=50 atomic=500 "
        f"connections={500 * fanout} private=243 shared=243")
    assert results["t1"] == str(243 * 10)
    assert results["t1.connections"] == str(243 * 10 * fanout)
    assert results["t6"] == "243" and results["q7"] == "500" and results["q8"] == "500"
    if v.persistent:
        check_reopen(conform, san_env, v, dbdir, "tiny", fanout, results)


SMALL_EXACT = {"t1": 43740, "t1.connections": 131220, "t6": 2187, "t8": 2632, "t9": 0,
               "q1": 10, "q7": 10000, "q8": 10000, "t4": 83106,
               "t2a": 2187, "t2b": 43740, "t2c": 174960, "t3a": 2187, "t3b": 43740,
               "t3c": 174960, "sm1": 5, "sm2": 5}
SMALL_COUNTS = ("modules=1 manuals=1 complex=364 base=729 composite=500 documents=500 "
                "atomic=10000 connections=30000 private=2187 shared=2187")


@pytest.mark.parametrize("v", [v for v in CHECKED if _stem(v) in MAIN], ids=_vid)
def test_main_variant_conforms_on_small_with_the_published_counts(conform, san_env, tmp_path, v):
    dbdir = tmp_path / "db"
    results = check_variant(conform, san_env, v, dbdir, "small", 3)
    assert results["counts"] == SMALL_COUNTS
    for name, value in SMALL_EXACT.items():
        assert results[name] == str(value), name
    assert "composite=505" in results["sm1.counts"] and "atomic=10100" in results["sm1.counts"]
    assert "private=2197" in results["sm1.counts"]
    if v.persistent:
        reopened = check_reopen(conform, san_env, v, dbdir, "small", 3, results)
        assert reopened["reopened.counts"] == SMALL_COUNTS
        assert reopened["reopened.t1"] == "43740" and reopened["reopened.t6"] == "2187"
        assert reopened["reopened.q7"] == "10000"


def test_the_main_variants_are_in_the_manifest():
    if _why_not():
        pytest.skip(_why_not())
    assert sorted(_stem(v) for v in VARIANTS if _stem(v) in MAIN) == sorted(MAIN)


def _variant(stem: str) -> bo.Variant:
    for v in CHECKED:
        if _stem(v) == stem:
            return v
    pytest.skip(f"no variant {stem} in type_equations/oo7/")


@pytest.mark.parametrize("writer,reader", [
    ("hash_refarray_persistent", "hash_ilist_persistent"),
    ("hash_ilist_persistent", "hash_refarray_persistent"),
    ("hash_ilist_persistent", "avl_ilist_persistent"),
])
def test_a_file_of_another_variant_is_refused(conform, san_env, tmp_path, writer, reader):
    w, r = _variant(writer), _variant(reader)
    dbdir = tmp_path / "db"
    built = check_variant(conform, san_env, w, dbdir, "tiny", 3)
    db_file = dbdir / "oo7.db"
    before = db_file.read_bytes()

    proc, results = run(conform, san_env, "--size", "tiny", "--fanout", "3", *sel(r),
                        "--dir", str(dbdir), "--reopen-only")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out                       # a failed check, not a crash
    assert results == {}, "the other variant's checks ran on a foreign file"
    fails = [l for l in proc.stdout.splitlines() if l.startswith("FAIL")]
    assert len(fails) == 1 and fails[0].startswith(f"FAIL exception: {r.name} open: "), out
    assert "different spec or equation" in fails[0] and "fingerprint" in fails[0], out
    assert str(db_file) in fails[0], out                   # which file
    assert proc.stdout.rstrip().endswith("0 passed, 1 failed")
    for crash in ("AddressSanitizer", "LeakSanitizer", "runtime error:", "Segmentation"):
        assert crash not in proc.stderr, out
    assert db_file.read_bytes() == before, "the refused open changed the file"
    assert sorted(p.name for p in dbdir.iterdir()) == ["oo7.db"], "the refused open left files"
    # and the writer still opens it
    check_reopen(conform, san_env, w, dbdir, "tiny", 3, built)


def test_a_shared_name_needs_mem(conform, san_env, tmp_path):
    names = [v.name for v in CHECKED]
    shared = sorted({n for n in names if names.count(n) > 1})
    if not shared:
        pytest.skip("no two variants share a name")
    name = shared[0]
    proc, _ = run(conform, san_env, "--size", "tiny", "--fanout", "3", "--system", name,
                  "--dir", str(tmp_path))
    assert proc.returncode == 2 and proc.stdout == ""
    assert f"{name} is ambiguous" in proc.stderr
    for v in CHECKED:
        if v.name == name:
            assert f"{name} --mem {v.mem}" in proc.stderr
