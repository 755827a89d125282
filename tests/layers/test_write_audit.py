"""The write-intent hook is complete: every byte the generated code (and the runtime's
allocator) changes in a persistent file is announced before it is written.

An audit build (every unit compiled with P2_WRITE_AUDIT, p2_runtime.h) watches each
plain persistent file it opens: the hook records the announced ranges, and after each
command of the harness (or of the links driver) the mapping is compared with a copy
taken after the previous one. A changed byte that no announcement covers, or an
announcement outside the mapping, stops the program with the offset, the part of the
file (a block, the header's allocator fields, ...) and the command. Driven here over:
every container of the differential matrix's persistent spec (every storage, index and
top layer the registry gives, and the record with the other field types), random
operations against the model with reopen, sync and close; the example specs with files;
and the relationships (ilist, refarray 1:N, M:N, 1:1), texts and ref fields of
tests/specs/links_persistent.p2. The harness builds here are plain and unoptimised, to
build quickly: the sanitizers' runs of the same code are the differential and links
suites'. A control proves the audit can fail: the generated code compiled without its
announcements (the runtime and harness with the audit) is caught at the open that creates
its containers.
"""
from __future__ import annotations

import random
import shlex
import subprocess
from pathlib import Path

import pytest

import test_differential as td
import test_links as tl
from conftest import DEBUG_FLAG, build_san_program, runtime_obj
from model import ContainerModel

from p2gen.build import generate
from p2gen.harness import HARNESS_CFLAGS, run_harness, write_harness

ROOT = Path(__file__).resolve().parents[2]
AUDIT = ("-DP2_WRITE_AUDIT",)
FAST = ("-O0",)   # harness builds: the audit needs no optimisation, and they build quicker


@pytest.fixture(scope="module")
def matrix_build(harness_builder):
    """The differential matrix's persistent spec (every runnable container), audited."""
    containers = td.runnable("persistent")
    assert containers, "the matrix has no persistent container"
    return harness_builder(td.spec_text(containers), "dwa", sanitize=False,
                           extra_cflags=AUDIT + FAST)


def interleaved_ops(rng: random.Random, checked, per_container: int, weights: dict,
                    reopen: float = 0.004) -> tuple:
    """Every container's random operations, interleaved; sync, and close with open,
    now and then for all of them."""
    streams, models = [], []
    weights = {**weights, "reopen": 0, "open2": 0, "sync": 0}
    for info in checked.containers:
        cm = ContainerModel(info, checked.plans)
        streams.append(td.OpGen(rng, cm, cm.persistent, weights).ops(per_container))
        models.append(cm)
    ops: list = []
    while any(streams):
        ops.append(rng.choice([s for s in streams if s]).pop(0))
        if rng.random() < reopen:
            ops.append(td.Op("sync", "ok", model=models[0]))
        if rng.random() < reopen:
            ops.append(td.Op("close", "close", model=models[0]))
            ops.append(td.Op("open {dir}", "open", model=models[0]))
    return models, ops


@pytest.mark.parametrize("seed", [1, 2])
def test_matrix_announces_every_write(seed, matrix_build, san_env, tmp_path):
    """Every storage / index / top combination of the matrix, persistent: inserts,
    updates (keys too: relinks and moves), setters, deletes, cursor deletes and updates,
    purges, reserve, growth of every block, sync, reopen -- all announced."""
    rng = random.Random(f"write-audit/{seed}")
    weights = {"insert": 3.0} if seed == 1 else \
              {"insert": 1.0, "delete": 1.5, "cdelete": 1.2, "cupdall": 1.0, "purge": 1.0}
    models, ops = interleaved_ops(rng, matrix_build.checked, 60, weights)
    td.run_ops(matrix_build.exe, models, ops, tmp_path, san_env, 2, rng)


@pytest.mark.parametrize("name", [n for n in td.EXAMPLE_SPECS
                                  if "persistent" in (ROOT / "type_equations" / n).read_text()])
def test_example_specs_announce_every_write(name, harness_builder, san_env, tmp_path):
    path = ROOT / "type_equations" / name
    built = harness_builder(path.read_text(), f"{path.stem}_wa", sanitize=False,
                            extra_cflags=AUDIT + FAST)
    rng = random.Random(f"write-audit/{name}")
    models, ops = interleaved_ops(rng, built.checked, 120, {}, reopen=0.02)
    td.run_ops(built.exe, models, ops, tmp_path, san_env, 2, rng)


@pytest.fixture(scope="module")
def links_driver(tmp_path_factory, cc):
    out = tmp_path_factory.mktemp("links-audit")
    spec = out / "links_persistent.p2"
    spec.write_text((tl.SPECS / "links_persistent.p2").read_text())
    gen = generate(str(spec), str(out), "links_persistent")
    return str(build_san_program(cc, out / "links_persistent_driver", [tl.DRIVER, gen.source],
                                 out, AUDIT, tl.program_flags("persistent")))


@pytest.mark.parametrize("seed,size", [(1, 8), (2, 40)])
def test_relationships_and_texts_announce_every_write(seed, size, links_driver, tmp_path, san_env):
    """ilist and refarray links (adds, removes, sets, unlinks on delete, growth of the
    reference blocks), texts (set, replace, free on delete) and ref fields, persistent,
    over three processes on one file."""
    model = tl.Model()
    s = tl.Session(model, random.Random(f"write-audit-links/{seed}"), "persistent", size)
    for part in range(3):
        s.d = tl.Driver(links_driver, tmp_path, san_env)
        if part:
            s.check_dump()
        for _ in range(400):
            s.step()
        s.check_dump()
        s.d.close()


def test_audit_catches_unannounced_writes(harness_builder, cc, san_env, tmp_path):
    """The control: the generated code compiled without its announcements (the runtime
    and the harness with the audit) is stopped at the open that creates the file (the
    containers' roots), with the offsets and the command; the allocator's own writes, still announced, are not reported."""
    built = harness_builder(td.spec_text(td.runnable("persistent")[:1]), "dwa_ctl",
                            sanitize=False, extra_cflags=AUDIT + FAST)
    gen = built.gen
    src = write_harness(gen)
    exe = str(tmp_path / "unannounced")
    flags = [*HARNESS_CFLAGS, "-I", gen.out_dir]
    # the runtime audited: the object the harness above links (its flags, the builder's order)
    objs = [runtime_obj(cc, [*HARNESS_CFLAGS, *AUDIT, *FAST, DEBUG_FLAG])]
    for unit, audit in ((src, True), (gen.source, False)):
        obj = str(tmp_path / (Path(unit).stem + ".o"))
        subprocess.run([*shlex.split(cc), *flags, *(AUDIT if audit else ()), *FAST, DEBUG_FLAG,
                        "-c", unit, "-o", obj], check=True, capture_output=True)
        objs.append(obj)
    subprocess.run([*shlex.split(cc), *flags, *objs, "-o", exe], check=True, capture_output=True)
    name = built.checked.containers[0].name
    proc = run_harness(exe, ["open .", f"insert {name} 1 2 3 ab 0.5"], cwd=str(tmp_path),
                       env=san_env)
    assert proc.returncode == 3, (proc.returncode, proc.stdout, proc.stderr)
    # the open that creates the file writes the containers' roots
    assert "`open .` changed bytes [" in proc.stderr, proc.stderr
    assert "without announcing them" in proc.stderr
    assert "allocator" not in proc.stderr, proc.stderr
    # the same program with the announcements compiled in passes
    (tmp_path / "announced").mkdir()
    ok = run_harness(built.exe, ["open .", f"insert {name} 1 2 3 ab 0.5"],
                     cwd=str(tmp_path / "announced"), env=san_env)
    assert ok.returncode == 0, ok.stderr
