"""Differential, randomised tests of the generated data managers against tests/model.py.

The matrix is {array, iarray, qsort, malloc storage} x {no index, hash, avl, dlist,
odlist, hash+avl} x {transient, persistent}, plus top-layer variants (qualify over top2ds,
delflag, two hash indexes) and containers of a second record with every other field type
as keys (signed iarray key, float hash and qsort keys, u64 avl key, char[1] odlist key,
identity hash). Indexes over qsort are illegal: the checker must say so (naming qsort).
Every legal combination is one container of ONE spec per memory kind (built once, with
its command-line harness p2gen.harness, under ASan and UBSan): over the heap every
container; over each other memory, unless P2GEN_FULL=1, the subset of them that holds
every layer of its full spec for each record type (matrix_runnable). Each test case runs its
own seeded random operation sequence (profiles: growth, balanced, churn, bulk) on its
container, in several harness processes (for persistent containers, fresh processes on
the same directory), with close/open in between, and checks every answer against the
model; over a journalled or record-logged memory the operations include commits and
aborts (an abort must bring back exactly what the last commit, sync or close left). Further tests run every container at once (interleaved, one file), sweep
references, feed the harness garbage, and look at the planner's choices.

Combinations whose layer templates do not exist yet (layers/<name>.c.j2) are skipped, so
the suite goes live as layers land. If one container of a spec fails to generate or to
compile, only its tests fail (with the compiler's message); the rest still run.
"""
from __future__ import annotations

import functools
import os
import random
import re
import shutil
import subprocess
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import pytest

from conftest import DEBUG_FLAG, SAN_QUICK_OPT, STRICT_CFLAGS, compile_strictly
from model import ContainerModel, ModelError, cstr, decode, encode, norm, param_fields
from nbdkit import ENGINE_MISSING, NbdServer, free_port
from redis import ENGINE_MISSING as REDIS_MISSING, RedisServer

from p2gen.check import check
from p2gen.errors import SpecError, SpecErrors
from p2gen.harness import run_harness
from p2gen.layers import LAYERS
from p2gen.parser import parse
from p2gen.plan import plan

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve()
LAYERS_DIR = ROOT / "layers"

# ---------------------------------------------------------------------------
# the matrix
# ---------------------------------------------------------------------------
RECORD = "record item { id: u32; grp: i32; score: i64; name: char[6]; ratio: f64; }"
MAX_KEY = 300

# The axes come from the layer registry: every storage layer, every index layer (alone,
# and hash+avl stacked), every memory layer (one stacked over a file sits on the file
# layer). What this matrix gives their parameters is its own choice: record fields as keys
# -- ordered and hashed by different fields, so that one container's layers disagree on
# order -- and small sizes, so that containers grow. A layer not named here gets its
# required parameters from its signature (`derived_params`); every registered layer of a
# container's realms takes part (test_matrix_covers_every_layer).
CHOSEN_PARAMS = {
    "array": "capacity = 4",
    "iarray": f"key = id, capacity = 8, max_key = {MAX_KEY}",
    "qsort": "key = score, capacity = 4",
    "hash": "key = grp, buckets = 4",
    "avl": "key = score",
    # small nodes: a few entries each, so splits, merges and refills happen constantly
    "btree": "key = score, node = 112",
    "odlist": "key = name",
    "persistent": 'file = "diff.db"',
    # the journal below every layer above it: page tracking must catch every write the
    # structures make (the harness commits before each close)
    "journal": "group = 4",
}
# A memory on a server (its file parameter a URI: `pageserver`) is served by nbdkit on a
# port chosen now, started at its first case and given an export of zeros before each
# (server_mems below); a buffer of 4 pages, so that pages are evicted and fetched again
# all the time.
SERVER_PORT = free_port()
# an object server (`objserver`) by redis-server the same way, its cache 2 objects
REDIS_PORT = free_port()
SERVER_PARAMS = {"pageserver": f'server = "nbd://127.0.0.1:{SERVER_PORT}/diff", pages = 4',
                 "objserver": f'server = "redis://127.0.0.1:{REDIS_PORT}/0", objects = 2'}
CHOSEN_PARAMS.update(SERVER_PARAMS)
ITEM_FIELDS = [("id", "int"), ("grp", "int"), ("score", "int"), ("name", "char"),
               ("ratio", "float")]


def derived_params(name: str) -> str:
    """Values for the required parameters of a layer this matrix has made no choice for."""
    out = []
    for p in LAYERS[name].params:
        if not p.required:
            continue
        if p.kind == "field":
            v = next(f for f, kind in ITEM_FIELDS if kind in p.field_kinds)
        elif p.kind == "str":
            v = f'"diff_{name}.db"'
        elif p.kind == "bool":
            v = "false"
        elif p.kind == "choice":
            v = p.choices[0]
        else:
            v = str(p.min if p.min is not None else 1)
        out.append(f"{p.name} = {v}")
    return ", ".join(out)


def layer_text(name: str) -> str:
    params = CHOSEN_PARAMS.get(name, None)
    params = derived_params(name) if params is None else params
    return f"{name}({params})" if params else name


def _registered(**attrs) -> list:
    return [n for n, l in LAYERS.items() if all(getattr(l, a) == v for a, v in attrs.items())]


STORAGE = {n: (n, layer_text(n)) for n in _registered(realm="ds", role="storage")}
INDEXES = {"none": [], **{n: [(n, layer_text(n))] for n in _registered(realm="ds", role="index")},
           "hash_avl": [("hash", layer_text("hash")), ("avl", layer_text("avl"))]}
# memory, as the mem layers say what they are (layers/base.py, MemLayer): the bottom
# layers, and each layer over a file stacked on the first file layer that has what it
# requires below it (`requires_below`)
BOTTOM_MEMS = _registered(realm="mem", below=None)
_HEAP_MEM = next(n for n in BOTTOM_MEMS if not LAYERS[n].in_file)


def _file_mem_for(over: str) -> str:
    return next(n for n in BOTTOM_MEMS if LAYERS[n].in_file
                and all(getattr(LAYERS[n], a, None) for a in LAYERS[over].requires_below))


MEMS = {**{n: (n, layer_text(n)) for n in _registered(realm="mem", below=None)},
        **{n: (n, f'{layer_text(n)}[{_file_mem_for(n)}(file = "diff{n[0]}.db")]')
           for n in _registered(realm="mem", below="mem")}}
# link widths: each other choice of a bottom mem layer's links parameter is a memory of
# its own (persistent_offset32: the file's references stored in 32 bits)
_LINK_MEMS = {f"{n}_{c}": (n, f"{layer_text(n)[:-1]}, {LAYERS[n].links_param} = {c})"
                                 if layer_text(n).endswith(")")
                                 else f"{n}({LAYERS[n].links_param} = {c})")
              for n in BOTTOM_MEMS if LAYERS[n].links_param
              for p in LAYERS[n].params if p.name == LAYERS[n].links_param
              for c in p.choices if c != p.default}
MEMS.update(_LINK_MEMS)
# relocation: each bottom mem layer that can relocate its file in memory (its
# `relocate_param`) gets a memory with it on, run with its `relocate_env` forcing it, so
# that every open -- in each fresh process and at every reopen -- maps the file away from
# its recorded base and moves every address in it (test_differential_relocated)
RELOC_MEMS = {f"{n}_relocate": (n, f"{layer_text(n)[:-1]}, {LAYERS[n].relocate_param} = true)")
              for n in BOTTOM_MEMS if LAYERS[n].relocate_param}
ALL_MEMS = {**MEMS, **RELOC_MEMS}
SEEDS = (1, 2, 3, 4)
# Every seed over the heap and over the plain file; the other memories (a layer over the
# file, another link width, fixed addresses) run the same layers above them, so they take
# half the seeds unless P2GEN_SOAK=1 (the suite's time budget).
SOAK = os.environ.get("P2GEN_SOAK", "") not in ("", "0")
# allocator size classes: each other choice of a bottom mem layer's alloc parameter is a
# memory of its own (persistent_exact: blocks rounded to 16 bytes, not powers of two), in
# the soak only (the layers above run the same code; tests/runtime/test_alloc_policy.py drives
# the policy through a spec of texts, malloc and refarray vectors in the suite)
_ALLOC_MEMS = {f"{n}_{c}": (n, f"{layer_text(n)[:-1]}, {LAYERS[n].alloc_param} = {c})")
               for n in BOTTOM_MEMS if LAYERS[n].alloc_param and LAYERS[n].maps_anywhere
               for p in LAYERS[n].params if p.name == LAYERS[n].alloc_param
               for c in p.choices if c != p.default} if SOAK else {}
MEMS.update(_ALLOC_MEMS)
ALL_MEMS.update(_ALLOC_MEMS)
FULL_SEED_MEMS = (_HEAP_MEM, next(n for n in BOTTOM_MEMS if LAYERS[n].in_file))


# The memory axis: the heap holds every container of the matrix (every pair of storage and
# index); every other memory, by default, the covering subset inline_runnable(mem) chooses
# -- every layer of its full spec in some container of each record type -- so each memory
# layer is still driven under every layer above it, in a spec (and harness) about a quarter
# of the size. The heap and the plain file (FULL_SEED_MEMS) run every seed. A layer's code
# over a file differs from its code over the heap in how it stores references, which each
# layer's container over the file drives; how an index meets its storage is generated
# from the same templates over every memory. P2GEN_FULL=1 (or P2GEN_SOAK=1) puts every
# container on every memory.
FULL = SOAK or os.environ.get("P2GEN_FULL", "") not in ("", "0")


def seeds_for(mem: str) -> tuple:
    return SEEDS if SOAK or mem in FULL_SEED_MEMS else SEEDS[:2]


def matrix_runnable(mem: str) -> list:
    """The containers of the matrix's spec for `mem` (spec_builds): runnable(mem) over the
    heap or with P2GEN_FULL=1, else its covering subset inline_runnable(mem)."""
    return runnable(mem) if FULL or mem == _HEAP_MEM else inline_runnable(mem)


@functools.lru_cache(maxsize=None)
def matrix_names(mem: str) -> frozenset:
    return frozenset(c.name for c in matrix_runnable(mem))


def on_server(mem: str) -> bool:
    """Is the matrix's memory `mem` on a server (its file parameter a URI)?"""
    return bool(LAYERS[ALL_MEMS[mem][0]].file_is_uri)


_SERVER: list = []
_REDIS: list = []


@pytest.fixture(autouse=True)
def server_mems(request, tmp_path_factory, san_env):
    """A case over a memory on a server gets an export of zeros (a fresh database, as a
    fresh directory is for a file), from the one nbdkit of this process; skipped where the
    engine is not installed, saying which package. Page-server cases take the two fault
    paths in turn (by the case's name): userfaultfd where the kernel gives it, and the
    SIGSEGV one it falls back to (P2_SERVER_FAULTS=sigsegv)."""
    params = getattr(getattr(request.node, "callspec", None), "params", {})
    mem = params.get("mem")
    if mem is None or mem not in ALL_MEMS or not on_server(mem):
        yield
        return
    if "redis://" in ALL_MEMS[mem][1]:
        if REDIS_MISSING:
            pytest.skip(REDIS_MISSING)
        if not _REDIS:
            _REDIS.append(RedisServer(tmp_path_factory.mktemp("redis"), REDIS_PORT).start())
        _REDIS[0].flush()
        yield
        return
    if ENGINE_MISSING:
        pytest.skip(ENGINE_MISSING)
    if not _SERVER:
        image = tmp_path_factory.mktemp("nbd") / "diff.img"
        _SERVER.append(NbdServer(image, SERVER_PORT).start())
    _SERVER[0].reset()
    sigsegv = zlib.crc32(request.node.name.encode()) % 2 == 1
    if sigsegv:
        san_env["P2_SERVER_FAULTS"] = "sigsegv"
    try:
        yield
    finally:
        san_env.pop("P2_SERVER_FAULTS", None)


@pytest.fixture(scope="session", autouse=True)
def _stop_server():
    yield
    for s in _SERVER + _REDIS:
        s.stop()


def on_file(mem: str) -> bool:
    """Is the matrix's memory `mem` a file (a file layer, or a layer stacked on one)?"""
    layer = LAYERS[ALL_MEMS[mem][0]]
    return layer.in_file or layer.below == "mem"


def wide_layers(layers: list, mem: str) -> list:
    """The layers of `layers` that store 64-bit links, where memory `mem` stores narrower
    ones: the checker refuses them there (naming the layer and the links parameter); and,
    where `mem` takes only a block per element, the storage that keeps one
    (one_block_storage), which the checker refuses too."""
    if mem not in _LINK_MEMS:
        return one_block_storage(layers, mem)
    return [n for n in layers if LAYERS[n].realm != "mem" and not LAYERS[n].narrow_links]


def one_block_storage(layers: list, mem: str) -> list:
    """The storage of `layers` keeping a container in one block, where memory `mem` takes
    only a block per element (objserver): the checker refuses it there, naming malloc."""
    if not LAYERS[ALL_MEMS[mem][0]].block_per_element:
        return []
    return [n for n in layers if LAYERS[n].realm == "ds" and LAYERS[n].role == "storage"
            and not LAYERS[n].addressed_refs]

OPS_PER_SEED = 600
HARNESS_TIMEOUT = 60


@dataclass
class ContainerSpec:
    name: str
    layers: list           # layer names, outermost first
    equation: str
    cursors: list = field(default_factory=list)   # (name, text after "on <container>")
    record: str = "item"

    def decl(self) -> str:
        lines = [f"container {self.name} of {self.record}\n    = {self.equation};"]
        for cname, body in self.cursors:
            lines.append(f"cursor {cname} on {self.name}{body};")
        return "\n".join(lines)


def _cursors(name: str, layers: list, storage_key: Optional[str]) -> list:
    """The cursors every container gets, plus ordered ones where a layer keeps the order."""
    out = [
        (f"{name}_g", " where grp == $g"),
        (f"{name}_r", " where score >= $lo and score < $hi"),
        (f"{name}_gs", " where grp == $g and score > $s"),
        (f"{name}_n", ' where not (grp == 1) or name == "ab"'),
        (f"{name}_i", " where id == $i"),
        (f"{name}_f", " where ratio < $r and name != $nm"),
    ]
    ordered = ordered_keys(layers, storage_key)
    if "score" in ordered:
        out.append((f"{name}_o", " where grp != $g order by score"))
    if "name" in ordered:
        out.append((f"{name}_on", " where name >= $a order by name"))
        out.append((f"{name}_nr", " where name > $a and name <= $b"))
    if "id" in ordered:
        out.append((f"{name}_oi", " where score != $s order by id"))
    return out


def ordered_keys(layers: list, storage_key: Optional[str]) -> set:
    """The fields some layer of the container keeps its elements ordered by."""
    out = {storage_key} if storage_key else set()
    for n in layers:
        if n in LAYERS and LAYERS[n].keeps_order and LAYERS[n].realm == "ds":
            m = re.search(r"key = (\w+)", layer_text(n))
            if m:
                out.add(m.group(1))
    return out


def combo_container(storage: str, index: str, mem: str) -> ContainerSpec:
    st_name, st_text = STORAGE[storage]
    mem_name, mem_text = ALL_MEMS[mem]
    eq = f"{st_text}[{mem_text}]"
    for _, text in reversed(INDEXES[index]):
        eq = f"{text}[{eq}]"
    eq = f"top2ds_qualify[{eq}]"
    layers = ["top2ds_qualify", "top2ds"] + [n for n, _ in INDEXES[index]] + [st_name, mem_name]
    name = f"c_{storage}_{index}"
    m = re.search(r"key = (\w+)", st_text)
    key = m.group(1) if m and LAYERS[storage].keeps_order else None
    return ContainerSpec(name, layers, eq, _cursors(name, layers, key))


# Top-layer variants: (name, layers, equation with {mem}, storage key)
EXTRAS = {
    "x_qualify": (["qualify", "top2ds", "hash", "array"],
                  "qualify[top2ds[hash(key = grp, buckets = 4)[array(capacity = 4)[{mem}]]]]", None),
    "x_delflag_array": (["qualify", "delflag", "top2ds", "hash", "array"],
                        "qualify[delflag[top2ds[hash(key = grp, buckets = 4)[array(capacity = 4)[{mem}]]]]]",
                        None),
    "x_delflag_iarray": (["qualify", "delflag", "top2ds", "avl", "iarray"],
                         "qualify[delflag[top2ds[avl(key = score)[iarray(key = id, capacity = 8, "
                         f"max_key = {MAX_KEY})[{{mem}}]]]]]", "id"),
    "x_delflag_top": (["delflag", "top2ds_qualify", "top2ds", "hash", "odlist", "malloc"],
                      "delflag[top2ds_qualify[hash(key = grp, buckets = 4)[odlist(key = name)"
                      "[malloc[{mem}]]]]]", None),
    "x_delflag_top_iarray": (["delflag", "top2ds_qualify", "top2ds", "iarray"],
                             "delflag[top2ds_qualify[iarray(key = id, capacity = 8, "
                             f"max_key = {MAX_KEY})[{{mem}}]]]", "id"),
    # slots padded to cache lines: every slot at a multiple of 64 bytes, not of the element,
    # the storage's word and the record first, the index links after the record
    "x_iarray_line": (["top2ds_qualify", "top2ds", "avl", "iarray"],
                      "top2ds_qualify[avl(key = score)[iarray(key = id, capacity = 8, "
                      f"max_key = {MAX_KEY}, slots = line)[{{mem}}]]]", "id"),
    "x_array_line": (["top2ds_qualify", "top2ds", "hash", "avl", "array"],
                     "top2ds_qualify[hash(key = grp, buckets = 4)[avl(key = score)"
                     "[array(capacity = 4, slots = line)[{mem}]]]]", None),
    "x_hash2": (["top2ds_qualify", "top2ds", "hash", "array"],
                "top2ds_qualify[hash(key = grp, buckets = 2, grow = false)[hash(key = name, "
                "buckets = 2)[array(capacity = 4)[{mem}]]]]", None),
    # a hash over a btree of small nodes (splits and merges constantly)
    "x_hash_btree": (["top2ds_qualify", "top2ds", "hash", "btree", "array"],
                     "top2ds_qualify[hash(key = grp, buckets = 4)[btree(key = score, node = 112)"
                     "[array(capacity = 4)[{mem}]]]]", None),
}


# A second record with the other field types, in containers whose keys are of those types
# (signed iarray key, float hash / qsort keys, u64 avl key, char[1] odlist key, identity
# hash over u64) and cursors comparing them (also field with field).
RECORD2 = "record pt { k: i16; s: i8; f: f32; big: u64; tag: char[1]; d: f64; }"
PT_MAX_KEY = 50
PT_EXTRAS = {
    "y_iarray_hash_f": (["top2ds_qualify", "top2ds", "hash", "iarray"],
                        "top2ds_qualify[hash(key = f, buckets = 2)[iarray(key = k, capacity = 2, "
                        f"max_key = {PT_MAX_KEY})[{{mem}}]]]", ["k"]),
    "y_avl_big_odlist_tag": (["top2ds_qualify", "top2ds", "avl", "odlist", "malloc"],
                             "top2ds_qualify[avl(key = big)[odlist(key = tag)[malloc[{mem}]]]]",
                             ["big", "tag"]),
    "y_qsort_f": (["top2ds_qualify", "top2ds", "qsort"],
                  "top2ds_qualify[qsort(key = f, capacity = 1)[{mem}]]", ["f"]),
    "y_avl_s_dlist": (["top2ds_qualify", "top2ds", "avl", "dlist", "array"],
                      "top2ds_qualify[avl(key = s)[dlist[array(capacity = 1)[{mem}]]]]", ["s"]),
    "y_hash_identity": (["top2ds_qualify", "top2ds", "hash", "array"],
                        "top2ds_qualify[hash(key = big, fn = identity, buckets = 1)[array[{mem}]]]",
                        []),
    "y_btree_f_btree_tag": (["top2ds_qualify", "top2ds", "btree", "btree", "array"],
                            "top2ds_qualify[btree(key = f, node = 96)[btree(key = tag, node = 80)"
                            "[array(capacity = 1)[{mem}]]]]", ["f", "tag"]),
}


def _pt_cursors(name: str, ordered: list) -> list:
    out = [
        (f"{name}_f", " where f >= $lo and f <= $hi"),
        (f"{name}_fe", " where f == $x"),
        (f"{name}_b", " where big > $b or s < $s"),
        (f"{name}_t", " where tag == $t and not (k != $k)"),
        (f"{name}_ff", " where d < f or k <= s"),
    ]
    out += [(f"{name}_o{o}", f" where d != $dd order by {o}") for o in ordered]
    return out


def extra_container(name: str, mem: str) -> ContainerSpec:
    mem_name, mem_text = ALL_MEMS[mem]
    if name in PT_EXTRAS:
        layers, eq, ordered = PT_EXTRAS[name]
        return ContainerSpec(name, layers + [mem_name], eq.format(mem=mem_text),
                             _pt_cursors(name, ordered), record="pt")
    layers, eq, key = EXTRAS[name]
    return ContainerSpec(f"{name}", layers + [mem_name], eq.format(mem=mem_text),
                         _cursors(name, layers, key))


def illegal(storage: str, index: str) -> bool:
    """No index over storage whose references move."""
    return not LAYERS[storage].stable_refs and index != "none"


def missing_templates(layers: list) -> list:
    return [n for n in layers if not (LAYERS_DIR / f"{n}.c.j2").exists()]


def spec_text(containers: list) -> str:
    return "\n\n".join([RECORD, RECORD2] + [c.decl() for c in containers]) + "\n"


def spec_prefix(mem: str) -> str:
    return {"transient": "dt", "persistent": "dp", "journal": "dj"}.get(mem, f"d_{mem}")


def all_cases():
    """(kind, key, mem): every combination, legal or not, and every extra."""
    out = []
    for mem in MEMS:
        for s in STORAGE:
            for i in INDEXES:
                out.append(("combo", (s, i), mem))
        for x in list(EXTRAS) + list(PT_EXTRAS):
            out.append(("extra", x, mem))
    return out


def container_of(kind, key, mem) -> ContainerSpec:
    return combo_container(*key, mem) if kind == "combo" else extra_container(key, mem)


def runnable(mem: str) -> list:
    """The containers of the spec for `mem`: legal, with every template present."""
    out = []
    for kind, key, m in all_cases():
        if m != mem or (kind == "combo" and illegal(*key)):
            continue
        c = container_of(kind, key, mem)
        if not missing_templates(c.layers) and not wide_layers(c.layers, mem):
            out.append(c)
    return out


def case_params():
    params = []
    for kind, key, mem in all_cases():
        label = "-".join(key) if kind == "combo" else key
        if kind == "combo" and illegal(*key):
            params.append(pytest.param(kind, key, mem, None, id=f"{label}-{mem}-illegal"))
            continue
        layers = container_of(kind, key, mem).layers
        if wide_layers(layers, mem):
            params.append(pytest.param(kind, key, mem, None, id=f"{label}-{mem}-refused"))
            continue
        miss = missing_templates(layers)
        marks = [pytest.mark.skip(reason=f"layer template(s) not written yet: "
                                         f"{', '.join(m + '.c.j2' for m in miss)}")] if miss else []
        if not miss and container_of(kind, key, mem).name not in matrix_names(mem):
            continue      # not in this memory's covering subset (P2GEN_FULL=1 runs it)
        for seed in seeds_for(mem):
            params.append(pytest.param(kind, key, mem, seed, id=f"{label}-{mem}-s{seed}", marks=marks))
    return params


# ---------------------------------------------------------------------------
# building: one spec (and harness) per memory kind; a broken container is isolated
# ---------------------------------------------------------------------------
@dataclass
class SpecBuild:
    built: object = None                   # conftest.Built, or None
    errors: dict = field(default_factory=dict)   # container name -> build error text


TINY_TRANSIENT = (RECORD + "\ncontainer c of item = top2ds_qualify[array[transient]];\n")


def _build_isolating(builder, mem: str, containers: list) -> SpecBuild:
    """Build the spec of `containers`; if that fails, find the containers that do not
    build (bisecting) and build the others."""
    prefix = spec_prefix(mem)

    def attempt(cs):
        try:
            return builder(spec_text(cs), prefix), None
        except Exception as e:  # noqa: BLE001 -- any generation or compile failure
            return None, str(e)

    if not containers:
        return SpecBuild()
    built, err = attempt(containers)
    if built is not None:
        return SpecBuild(built)
    errors: dict = {}
    first, first_err = attempt(containers[:1])
    if first is None and attempt(containers[-1:])[0] is None:
        # the first and the last fail alone: most likely everything does
        return SpecBuild(None, {c.name: first_err for c in containers})

    def bisect(cs, why):
        if len(cs) == 1:
            errors[cs[0].name] = why
            return
        mid = len(cs) // 2
        for half in (cs[:mid], cs[mid:]):
            b, e = attempt(half)
            if b is None:
                bisect(half, e)

    bisect(containers, err)
    good = [c for c in containers if c.name not in errors]
    out = SpecBuild(None, errors)
    if good:
        out.built, e = attempt(good)
        if out.built is None:
            for c in good:
                errors[c.name] = f"builds, but not together with the others: {e}"
    return out


def quick(harness_builder, strict: bool = False, extra_cflags: tuple = (),
          library: bool = True):
    """builder(text, prefix) of this file's harnesses: under ASan/UBSan at SAN_QUICK_OPT
    (-O0: these specs are large, their compile is most of the matrix's cost); with
    `strict` the spec's C and harness also compiled plainly at -O1 -Werror (conftest), so
    what only the optimiser warns about still fails the build."""
    def builder(text, prefix):
        return harness_builder(text, prefix, extra_cflags=extra_cflags, opt=SAN_QUICK_OPT,
                               strict=strict, library=library)
    return builder


class MemBuilds(dict):
    """mem -> SpecBuild: the memories on a file or the heap that the collected tests name
    (`eager`) all built in the background, two at a time, from the first ask on (a test
    waits for its own memory's spec only, so no test's setup pays for all of them); any
    other memory, and one on a server, only when a test asks for it (a run of a few tests,
    `-k`, builds only what they use). A server's spec names this process's server port, so
    each process builds its own: conftest's scheduler keeps its tests on one worker, and
    the other never builds it."""

    def __init__(self, build, mems: dict, containers, eager=None):
        super().__init__()
        eager = [m for m in mems if not on_server(m) and (eager is None or m in eager)]
        pool = ThreadPoolExecutor(max_workers=2)
        self._pending = {m: pool.submit(_build_isolating, build, m, containers(m))
                         for m in eager}
        pool.shutdown(wait=False)
        self._lazy = {m: (lambda m=m: _build_isolating(build, m, containers(m)))
                      for m in mems if m not in self._pending}

    def __missing__(self, mem):
        if mem in self._pending:
            built = self[mem] = self._pending.pop(mem).result()
        elif mem in self._lazy:
            built = self[mem] = self._lazy.pop(mem)()
        else:
            raise KeyError(mem)
        return built


def collected_mems(request, fixture: str, way: str) -> set:
    """The memories of the collected tests (after -k) of this file that use `fixture`,
    directly or as `builds`' `way`."""
    out = set()
    for item in request.session.items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        if Path(str(item.fspath)).resolve() == HERE and "mem" in params and \
                (fixture in item.fixturenames or params.get("builds") == way):
            out.add(params["mem"])
    return out


@pytest.fixture(scope="session")
def spec_builds(request, harness_builder):
    """One spec per memory holding the matrix's containers (matrix_runnable), its harness
    built sanitized at -O0 and its C compiled strictly at -O1 (quick)."""
    return MemBuilds(quick(harness_builder, strict=True), MEMS, matrix_runnable,
                     collected_mems(request, "spec_builds", "call"))


def inline_flag(prefix: str) -> str:
    return f"-D{prefix.upper()}_INLINE"


def inline_runnable(mem: str) -> list:
    """The containers of the inline spec for `mem`: a subset of runnable(mem) in which every
    layer of the full spec stands in some container of each record type (chosen greedily,
    the container adding the most (layer, record) pairs first, so a new layer takes part by
    itself). The inline path compiles the same layer code as the library, only static
    inline in the harness's translation unit: each layer once per record type covers it,
    and the spec, under ASan a several times smaller translation unit, builds in a
    fraction of the time of all the containers'."""
    cs = runnable(mem)
    need = {(l, c.record) for c in cs for l in c.layers}
    chosen, got = [], set()
    while got != need:
        best = max(cs, key=lambda c: len({(l, c.record) for l in c.layers} - got))
        chosen.append(best)
        got |= {(l, best.record) for l in best.layers}
    return [c for c in cs if c in chosen]      # in the full spec's order


@pytest.fixture(scope="session")
def spec_builds_inline(request, harness_builder):
    """Specs of inline_runnable(mem), the harness compiled with <PREFIX>_INLINE: the whole
    API static inline in the harness's own translation unit, as the README's C example
    builds; the library's C is neither compiled nor linked (library=False), so the link
    itself shows the harness calls none of its functions."""
    def builder(text, prefix):
        return quick(harness_builder, extra_cflags=(inline_flag(prefix),),
                     library=False)(text, prefix)
    return MemBuilds(builder, MEMS, inline_runnable,
                     collected_mems(request, "spec_builds_inline", "inline"))


@pytest.fixture(params=["call", "inline"])
def builds(request):
    """spec_builds (calls into the library) or spec_builds_inline."""
    return request.getfixturevalue("spec_builds" if request.param == "call" else "spec_builds_inline")


# ---------------------------------------------------------------------------
# random operations
# ---------------------------------------------------------------------------
NAMES = [b"", b"a", b"ab", b"abc", b"b", b"zz", b"abcdef", b"q\x00z", b"\xffa", b"a b", b'"\\']
TOO_LONG = b"abcdefg"
RATIOS = [0.0, -0.0, 0.5, 1e-300, 3.141592653589793, -2.5, 1e300, 0.1]
BOGUS_REFS = [2**64 - 1, 2**63 + 8, 1 << 40, (1 << 33) | 8]


def draw(rng: random.Random, fname: str, allow_long: bool = False, common: bool = False):
    """A random value for field `fname`: mostly from a small domain (so that keys
    collide, duplicates and hash collisions happen), sometimes at the edges. `common`:
    only the small domain (for values that should often match an element)."""
    r = 0.0 if common else rng.random()
    if fname == "id":
        if r < 0.6:
            return rng.randint(0, 60 if common else 120)
        if r < 0.85:
            return rng.randint(121, MAX_KEY)
        if r < 0.95:
            return rng.randint(MAX_KEY - 5, MAX_KEY + 10)
        return rng.choice([1000, 2**32 - 1])
    if fname == "grp":
        return rng.randint(-2, 5)
    if fname == "score":
        if r < 0.85:
            return rng.randint(-10, 25)
        if r < 0.95:
            return rng.choice([-2**63, 2**63 - 1, 2**40])
        return rng.randint(-1000, 1000)
    if fname == "name":
        if allow_long and rng.random() < 0.04:
            return TOO_LONG
        return rng.choice(NAMES)
    if fname == "ratio":
        return rng.choice(RATIOS)
    # record pt
    if fname == "k":
        if r < 0.9:
            return rng.randint(-2, PT_MAX_KEY + 3)
        return rng.choice([-32768, 32767, 1000])
    if fname == "s":
        return rng.randint(-3, 3) if r < 0.85 else rng.choice([-128, 127])
    if fname == "big":
        return rng.randint(0, 6) if r < 0.8 else rng.choice([2**32, 2**63, 2**64 - 1])
    if fname == "tag":
        if allow_long and rng.random() < 0.04:
            return b"ab"
        return rng.choice([b"", b"a", b"b", b"\xff"])
    if fname in ("f", "d"):
        return rng.choice(FLOATS)
    raise AssertionError(fname)


# f32 rounding (0.1, 16777217), denormals, signed zeros, extremes
FLOATS = [0.0, -0.0, 0.1, 1.5, -1.5, 16777217.0, 1e-45, 3.4e38, -3.4e38, 2.0]
KNOWN_RECORDS = ("item", "pt")


def draw_typed(rng: random.Random, t, allow_long: bool = False, common: bool = False,
               top: Optional[int] = None):
    """A random value of type `t` for fields of records this file does not know (example
    specs): small values, sometimes the type's extremes (up to `top` if given)."""
    if t.kind == "int":
        lo = -3 if t.signed else 0
        if common or rng.random() < 0.9:
            return rng.randint(lo, 8)
        hi = t.max_value if top is None else top
        return rng.choice([t.min_value if top is None else lo, hi])
    if t.kind == "float":
        return rng.choice(FLOATS)
    if allow_long and rng.random() < 0.04:
        return b"x" * (t.length + 1)
    return rng.choice([b"", b"a", b"ab", b"b", b"\xff", b"z" * t.length])


# Per seed, a mix of operations: growth (big containers: hash and slot arrays grow, trees
# get deep), balance, and churn (many deletes: free lists, rebalancing, empty containers).
# Seed 4 ("bulk") grows containers to hundreds or thousands of elements (the persistent
# file grows past its first extent) with few, hence cheap, full walks.
PROFILES = {1: {"insert": 3.0, "delete": 0.5, "cdelete": 0.4},
            2: {},
            3: {"insert": 0.8, "delete": 1.8, "cdelete": 1.5, "reopen": 2.0},
            4: {"insert": 12.0, "delete": 0.5, "cdelete": 0.05, "cursor": 0.3, "all": 0.1,
                "cupdall": 0.2, "cupdadd": 0.2, "reopen": 0.3, "get": 0.3, "junk": 0.2}}
OPS = {4: 2500}


@dataclass
class Op:
    cmd: str
    kind: str
    args: dict = field(default_factory=dict)
    model: object = None      # the ContainerModel it concerns


def add_wrapped(t, v, d):
    """v + d stored in a field of type t, as the harness's cupdadd computes it (integers
    wrap like C's unsigned arithmetic, floats are added in double then stored)."""
    if t.kind == "float":
        return norm(t, float(v) + float(d))
    bits = t.bits
    lo = -(1 << (bits - 1)) if t.signed else 0
    return (int(v) + int(d) - lo) % (1 << bits) + lo


class OpGen:
    """Random operations on one container; state-independent except for open/closed."""

    WEIGHTS = {"insert": 30, "find": 6, "count": 4, "cursor": 14, "all": 4, "cdelete": 4,
               "cupdate": 5, "cupdall": 2, "cupdadd": 3, "update": 8, "set": 6, "delete": 7, "get": 1,
               "purge": 1, "junk": 1, "sync": 1, "reopen": 1.5, "open2": 0.5, "insert_many": 3}

    def __init__(self, rng: random.Random, cm: ContainerModel, persistent: bool,
                 profile: Optional[dict] = None, slot_base: int = 0):
        self.rng = rng
        # the harness's slots for this container's held cursors (hold / step / drop):
        # slot_base and slot_base + 1, apart from other containers' in one harness
        self.slot_base = slot_base
        self.cm = cm
        self.c = cm.name
        self.persistent = persistent
        self.fields = cm.fields
        self.types = dict(zip(cm.fields, cm.types))
        self.cursors = sorted(cm.cursors)             # user cursors and "all"
        self.keys = cm.info.key_fields()
        # cupdall sets one field of every element of a walk: any field but a unique key
        # (the second update would fail, after an unpredictable first one)
        self.free_fields = [f for i, f in enumerate(self.fields) if i != cm.unique]
        # cupdadd adds a delta to a number field of every element of a walk: the unique
        # iarray key and the order keys above all (each element must be met once)
        self.number_fields = [f for f in self.fields if self.types[f].kind != "char"]
        kinds = {k: w * (profile or {}).get(k, 1.0) for k, w in self.WEIGHTS.items()}
        if not cm.delflag:
            kinds.pop("purge")
        if not persistent:
            kinds.pop("sync")
        if any(li.layer.transactions for li in cm.info.mems):
            # a journalled or record-logged memory: commits and aborts among the changes,
            # and cursors held open across an abort (with growth or not) or a commit
            kinds.update(commit=3.0, abort=2.0, hold_abort=1.5, hold_commit=0.7)
        if not self.keys:
            kinds.pop("find")
        self.kinds = list(kinds)
        self.weights = [kinds[k] for k in self.kinds]

    def draw(self, fname: str, allow_long: bool = False, common: bool = False):
        if self.cm.record.name in KNOWN_RECORDS:
            return draw(self.rng, fname, allow_long, common)
        t = self.types[fname]
        top = None
        if self.cm.unique is not None and fname == self.fields[self.cm.unique]:
            top = self.cm.max_key + 1   # a bigger key would grow the slot array enormously
        return draw_typed(self.rng, t, allow_long, common, top)

    def tok(self, fname, v) -> str:
        return encode(self.types[fname], v)

    def cursor_with_params(self):
        name = self.rng.choice(self.cursors)
        cur = self.cm.cursors[name]
        pf = param_fields(cur.where)
        values = {}
        for pname, _t in cur.params:
            values[pname] = self.draw(pf[pname], allow_long=True)
        hname = f"{self.c}.all" if cur.synthetic == "all" else name
        toks = [encode(t, values[p]) for p, t in cur.params]
        return name, hname, values, toks

    def record(self, allow_long=False):
        return [self.draw(f, allow_long) for f in self.fields]

    def one(self) -> list:
        rng, c = self.rng, self.c
        kind = rng.choices(self.kinds, self.weights)[0]
        if kind == "insert":
            vals = self.record(allow_long=True)
            toks = " ".join(self.tok(f, v) for f, v in zip(self.fields, vals))
            return [Op(f"insert {c} {toks}", "insert", {"values": vals})]
        if kind == "insert_many":
            # a batch, now and then repeating a row (a unique key's duplicate stops it there)
            rows = [self.record() for _ in range(rng.randint(0, 6))]
            if rows and rng.random() < 0.3:
                rows.insert(rng.randrange(len(rows) + 1), rng.choice(rows))
            toks = " ".join(self.tok(f, v) for r in rows for f, v in zip(self.fields, r))
            return [Op(f"insert_many {c} {len(rows)} {toks}".rstrip(), "insert_many",
                       {"rows": rows})]
        if kind == "find":
            key = rng.choice(self.keys)
            v = self.draw(key, allow_long=True)
            return [Op(f"find {c} {key} {self.tok(key, v)}", "find", {"field": key, "value": v})]
        if kind == "count":
            if rng.random() < 0.25:  # a size hint now and then: must change nothing
                return [Op(f"reserve {c} {rng.choice([0, 5, 64, 700, 3000])}", "reserve"),
                        Op(f"count {c}", "count")]
            return [Op(f"count {c}", "count")]
        if kind == "cupdadd":
            name, hname, values, toks = self.cursor_with_params()
            path = self.cm.plans[self.cm.cursors[name]].path
            lk = path.layer.key_field_obj
            keyish = [f for f in (path.ordered_by, lk.name if lk is not None else None,
                                  self.cm.info.storage.params.get("key"))
                      if f in self.number_fields]
            f = rng.choice(keyish) if keyish and rng.random() < 0.8 else \
                rng.choice(self.number_fields)
            t = self.types[f]
            if t.kind == "float":
                d = rng.choice([0.5, 3.0, 1000.0, -2.0, -0.25])
            else:
                lo = -(1 << (t.bits - 1)) if t.signed else 0
                hi = (1 << (t.bits - 1)) - 1 if t.signed else (1 << t.bits) - 1
                d = rng.choice([x for x in (1, 2, 7, 40, 250, -1, -3, -100) if lo <= x <= hi])
            args = {"cursor": name, "params": values, "field": f, "delta": d}
            return [Op(" ".join(["cupdadd", hname] + toks + [f, self.tok(f, d)]), kind, args)]
        if kind in ("cursor", "cdelete", "cupdate", "cupdall"):
            name, hname, values, toks = self.cursor_with_params()
            args = {"cursor": name, "params": values}
            if kind == "cursor":
                return [Op(" ".join(["cursor", hname] + toks), "cursor", args)]
            if kind == "cdelete":
                every = rng.choice([1, 2, 3, 4])
                args["every"] = every
                return [Op(" ".join(["cdelete", hname] + toks + [str(every)]), "cdelete", args)]
            f = rng.choice(self.free_fields if kind == "cupdall" else self.fields)
            v = self.draw(f, allow_long=True)
            args.update(field=f, value=v)
            return [Op(" ".join([kind, hname] + toks + [f, self.tok(f, v)]), kind, args)]
        if kind == "all":
            return [Op(f"all {c}", "all")]
        if kind in ("update", "set"):
            f, f2 = rng.choice(self.fields), rng.choice(self.fields)
            v, v2 = self.draw(f, common=True), self.draw(f2, allow_long=True)
            return [Op(f"{kind} {c} {f} {self.tok(f, v)} {f2} {self.tok(f2, v2)}", kind,
                       {"field": f, "value": v, "field2": f2, "value2": v2})]
        if kind == "delete":
            f = rng.choice(self.fields)
            v = self.draw(f, common=True)
            return [Op(f"delete {c} {f} {self.tok(f, v)}", "delete", {"field": f, "value": v})]
        if kind == "get":
            return [Op(f"get {c} {rng.choice(BOGUS_REFS)}", "get")]
        if kind == "purge":
            return [Op(f"purge {c}", "purge")]
        if kind == "junk":
            vals = [self.tok(f, v) for f, v in zip(self.fields, self.record())]
            return [Op(rng.choice([f"frobnicate {c}", f"insert {c} " + " ".join(vals[1:]),
                                   "count nosuch", "cursor nosuch_cursor 1",
                                   f"find {c} nosuchfield 1",
                                   f"insert {c} zz " + " ".join(vals[1:]),
                                   f"cdelete {c}.all 0"]),
                       "junk")]
        if kind == "sync":
            return [Op("sync", "ok")]
        if kind in ("commit", "abort"):
            return [Op(kind, kind)]
        if kind in ("hold_abort", "hold_commit"):
            return self.hold_group(kind == "hold_abort")
        if kind == "open2":
            # a second handle is refused, except over a memory for several clients
            shared = any(li.layer.several_clients for li in self.cm.info.mems)
            return [Op("open2 {dir}", "open2", {"busy": self.persistent and not shared})]
        # reopen: close, a few calls on the closed database, open again
        ops = [Op("close", "close")]
        for _ in range(rng.randint(1, 3)):
            name, hname, values, toks = self.cursor_with_params()
            vals = self.record()
            ops.append(rng.choice([
                Op(f"count {c}", "closed_count"),
                Op(" ".join(["cursor", hname] + [encode(t, self.draw(param_fields(
                    self.cm.cursors[name].where)[p])) for p, t in self.cm.cursors[name].params]),
                   "closed"),
                Op(f"insert {c} " + " ".join(self.tok(f, v) for f, v in zip(self.fields, vals)),
                   "closed"),
                Op(f"all {c}", "closed"),
                Op(f"get {c} 0", "closed"),
                Op("sync", "closed"),
                Op("close", "closed"),
                Op(f"delete {c} {self.fields[0]} {self.tok(self.fields[0], vals[0])}",
                   "closed"),
            ]))
        ops.append(Op("open {dir}", "open"))
        return ops

    def hold_group(self, abort: bool) -> list:
        """One or two cursors opened and stepped a little (hold), then an abort (after
        growth of the container, inserts that grow its slots, buckets or nodes, or none)
        or a commit, then a step or two of each and drop. After the abort every step must
        answer P2_ECLOSED (an abort closes every open cursor); a commit leaves them open,
        each step going on with its walk."""
        rng, c = self.rng, self.c
        ops, slots = [], [self.slot_base + j for j in range(rng.randint(1, 2))]
        for slot in slots:
            name, hname, values, toks = self.cursor_with_params()
            steps = rng.choice([0, 1, 2, 5, 40])
            ops.append(Op(" ".join(["hold", str(slot), hname] + toks + [str(steps)]), "hold",
                          {"slot": slot, "cursor": name, "params": values, "steps": steps}))
        if abort:
            for _ in range(rng.choice([0, 0, 3, 40])):
                vals = self.record()
                ops.append(Op(f"insert {c} " + " ".join(self.tok(f, v) for f, v in
                                                        zip(self.fields, vals)),
                              "insert", {"values": vals}))
            ops.append(Op("abort", "abort"))
        else:
            ops.append(Op("commit", "commit"))
        for _ in range(rng.randint(1, 2)):
            ops += [Op(f"step {slot}", "step", {"slot": slot}) for slot in slots]
        ops += [Op(f"drop {slot}", "drop", {"slot": slot}) for slot in slots]
        return ops

    def groups(self, n: int) -> list:
        """About n operations, in groups to keep together (close .. open)."""
        out: list = []
        count = 0
        while count < n:
            group = self.one()
            for op in group:
                op.model = self.cm
            out.append(group)
            count += len(group)
        return out

    def ops(self, n: int) -> list:
        return [op for group in self.groups(n) for op in group]


# ---------------------------------------------------------------------------
# checking the harness's answers against the model
# ---------------------------------------------------------------------------
class Mismatch(AssertionError):
    pass


class Answers:
    def __init__(self, lines: list):
        self.lines = lines
        self.pos = 0

    def next(self) -> str:
        if self.pos >= len(self.lines):
            raise Mismatch("the harness's output ended early")
        line = self.lines[self.pos]
        self.pos += 1
        if line.startswith("bug"):
            raise Mismatch(f"harness self-check failed: {line}")
        return line


class Held:
    """A cursor held open across commands (the harness's hold / step / drop): the
    elements its walk has still to meet, and whether an abort closed it."""

    def __init__(self, name: str, rest: list):
        self.name = name
        self.rest = rest
        self.closed = False

    def take(self, cm: ContainerModel, rec: tuple) -> None:
        """The walk met rec: one it had still to meet, and in order the first of them."""
        if rec not in self.rest:
            raise Mismatch(f"held cursor {self.name}: met {cm.show(rec)}, which does not "
                           f"match or was met before")
        k = cm.order_key(self.name)
        if k is not None:
            first = (max if cm.descending(self.name) else min)(r[k] for r in self.rest)
            if rec[k] != first:
                raise Mismatch(f"held cursor {self.name}: met {cm.show(rec)} before an "
                               f"element whose {cm.fields[k]} is {first!r}")
        self.rest.remove(rec)


class Checker:
    def __init__(self, cm: ContainerModel):
        self.cm = cm
        self.types = cm.types
        self.held: dict = {}       # slot -> Held (the harness's held cursors of cm)

    def aborted(self) -> None:
        """An abort closes every open cursor."""
        for h in self.held.values():
            h.closed = True

    def closed(self) -> None:
        """A close (and the end of a harness process) drops every held cursor."""
        self.held.clear()

    def rec(self, line: str, tag: str) -> tuple:
        parts = line.split(" ")
        if parts[0] != tag or len(parts) != 1 + len(self.types):
            raise Mismatch(f"expected a '{tag} ...' line with {len(self.types)} values, got {line!r}")
        return tuple(decode(t, tok) for t, tok in zip(self.types, parts[1:]))

    @staticmethod
    def expect(line: str, want: str) -> None:
        if want == "ok":
            ok = line == "ok"
        else:  # "err CODE" (message free) or a whole line
            ok = line == want or (want.startswith("err ") and line.startswith(want + " "))
        if not ok:
            raise Mismatch(f"expected {want!r}, got {line!r}")

    def expect_code(self, line: str, code: Optional[str]) -> None:
        self.expect(line, "ok" if code is None else f"err {code}")

    def char_param_error(self, cursor: str, params: dict) -> bool:
        cur = self.cm.cursors[cursor]
        return any(t.kind == "char" and len(cstr(params[p])) > t.length for p, t in cur.params)

    def norm_params(self, cursor: str, params: dict) -> dict:
        cur = self.cm.cursors[cursor]
        return {p: norm(t, params[p]) for p, t in cur.params}

    def step_cupdadd(self, name: str, want: list, fi: int, t, delta, ans: Answers) -> None:
        """cupdadd: the walk meets each element matching at the start exactly once (in
        order, for an ordered cursor), whatever its update does to its place in the walk;
        each update succeeds or fails as the model says, and a failure ends the walk."""
        cm = self.cm
        rest = list(want)
        met = []
        while True:
            line = ans.next()
            if line.startswith("updated "):
                cm.check_order(name, met)
                if rest:
                    raise Mismatch(f"cupdadd {name}: the walk ended without meeting "
                                   f"{[cm.show(r) for r in rest][:5]}")
                return self.expect(line, f"updated {len(want)} of {len(want)}")
            old = self.rec(line, "upd")
            if old not in rest:
                why = "met twice" if old in met else "not matching"
                raise Mismatch(f"cupdadd {name}: {cm.show(old)} {why} (met so far: "
                               f"{[cm.show(r) for r in met][-5:]})")
            rest.remove(old)
            met.append(old)
            err = cm.update(old, cm.replace(old, cm.fields[fi], add_wrapped(t, old[fi], delta)))
            if err is not None:
                cm.check_order(name, met)
                return self.expect_code(ans.next(), err)

    def step(self, op: Op, ans: Answers) -> None:
        cm, a = self.cm, op.args
        k = op.kind
        if k == "insert":
            t_ok = all(len(v) <= t.length for v, t in zip(a["values"], self.types)
                       if t.kind == "char")
            line = ans.next()
            if not t_ok:
                return self.expect(line, "err EINVAL")
            return self.expect_code(line, cm.insert(cm.make(a["values"])))
        if k == "insert_many":
            # the rows go in as insert puts them, in order, up to the first that fails
            done, code = 0, None
            for row in a["rows"]:
                code = cm.insert(cm.make(row))
                if code is not None:
                    break
                done += 1
            self.expect(ans.next(), f"many {done}")
            return self.expect_code(ans.next(), code)
        if k == "count":
            return self.expect(ans.next(), f"count {len(cm.recs)}")
        if k == "reserve":
            return self.expect(ans.next(), "ok")
        if k == "closed_count":
            return self.expect(ans.next(), "count 0")
        if k == "closed":
            return self.expect(ans.next(), "err ECLOSED")
        if k == "junk":
            return self.expect(ans.next(), "err EINVAL")
        if k == "get":
            return self.expect(ans.next(), "err NOTFOUND")
        if k in ("ok", "commit", "abort"):     # run_ops tells every model of a commit or abort
            return self.expect(ans.next(), "ok")
        if k == "hold":
            name, params, slot = a["cursor"], a["params"], a["slot"]
            self.held.pop(slot, None)           # the harness drops what the slot held
            if self.char_param_error(name, params):
                return self.expect(ans.next(), "err ERANGE")
            h = Held(name, cm.matches(name, self.norm_params(name, params)))
            want = min(a["steps"], len(h.rest))
            while True:
                line = ans.next()
                if line.startswith("held "):
                    break
                h.take(cm, self.rec(line, "rec"))
            self.held[slot] = h
            return self.expect(line, f"held {slot} {want}")
        if k == "step":
            h = self.held.get(a["slot"])
            line = ans.next()
            if h is None:        # its open failed, or a close dropped it
                return self.expect(line, "err EINVAL")
            if h.closed:         # the harness checks every other call of it says closed too
                return self.expect(line, "err ECLOSED")
            if not h.rest:
                return self.expect(line, "end")
            return h.take(cm, self.rec(line, "rec"))
        if k == "drop":
            self.held.pop(a["slot"], None)
            return self.expect(ans.next(), "ok")
        if k == "close":   # run_ops tells every model
            return self.expect(ans.next(), "ok")
        if k == "open":
            return self.expect(ans.next(), "ok")
        if k == "open2":
            return self.expect(ans.next(), "err EBUSY" if a["busy"] else "ok")
        if k == "purge":
            return self.expect(ans.next(), f"purged {cm.purge()}")
        if k == "find":
            t = self.types[cm.index[a["field"]]]
            v = norm(t, a["value"])
            want = [] if (t.kind == "char" and len(v) > t.length) else cm.where(a["field"], v)
            line = ans.next()
            if not want:
                return self.expect(line, "notfound")
            got = self.rec(line, "rec")
            if got not in want:
                raise Mismatch(f"find returned {cm.show(got)}, not one of {len(want)} matches")
            return None
        if k in ("cursor", "all"):
            name = a.get("cursor", "all")
            params = a.get("params", {})
            if name != "all" and self.char_param_error(name, params):
                return self.expect(ans.next(), "err ERANGE")
            want = cm.matches(name, self.norm_params(name, params))
            got = []
            while True:
                line = ans.next()
                if line.startswith("end "):
                    break
                got.append(self.rec(line, "rec"))
            cm.same_multiset(got, want, f"cursor {name}")
            cm.check_order(name, got)
            return self.expect(line, f"end {len(want)}")
        if k in ("cdelete", "cupdate", "cupdall", "cupdadd"):
            name, params = a["cursor"], a["params"]
            if self.char_param_error(name, params):
                return self.expect(ans.next(), "err ERANGE")
            want = cm.matches(name, self.norm_params(name, params))
            if k == "cdelete":
                deleted = []
                while True:
                    line = ans.next()
                    if not line.startswith("del "):
                        break
                    deleted.append(self.rec(line, "del"))
                self.expect(line, f"deleted {len(want) // a['every']} of {len(want)}")
                rest = list(want)
                for r in deleted:
                    if r not in rest:
                        raise Mismatch(f"cdelete deleted {cm.show(r)}, which does not match")
                    rest.remove(r)
                    cm.delete(r)
                cm.check_order(name, deleted)
                return None
            fi = cm.index[a["field"]]
            t = self.types[fi]
            if k == "cupdadd":
                return self.step_cupdadd(name, want, fi, t, a["delta"], ans)
            if k == "cupdall":
                if want and t.kind == "char" and len(a["value"]) > t.length:
                    return self.expect(ans.next(), "err EINVAL")
                # Every element matching at the start is met exactly once, also when its
                # update moved it further along the walk (the Halloween problem).
                self.expect(ans.next(), f"updated {len(want)} of {len(want)}")
                for r in want:
                    assert cm.update(r, cm.replace(r, a["field"], a["value"])) is None
                return None
            if not want:
                return self.expect(ans.next(), "none")
            old = self.rec(ans.next(), "upd")
            if old not in want:
                raise Mismatch(f"cupdate {name} updated {cm.show(old)}, which does not match")
            ok_ = cm.order_key(name)
            if ok_ is not None and cm.descending(name):
                if old[ok_] != max(r[ok_] for r in want):
                    raise Mismatch(f"cupdate {name}: the first element in descending order "
                                   f"is not the largest")
            elif ok_ is not None and old[ok_] != min(r[ok_] for r in want):
                raise Mismatch(f"cupdate {name}: the first element in order is not the smallest")
            if t.kind == "char" and len(a["value"]) > t.length:
                return self.expect(ans.next(), "err EINVAL")
            return self.expect_code(ans.next(), cm.update(old, cm.replace(old, a["field"], a["value"])))
        if k in ("update", "set", "delete"):
            want = cm.where(a["field"], a["value"])
            line = ans.next()
            if not want:
                return self.expect(line, "none")
            old = self.rec(line, "del" if k == "delete" else "upd")
            if old not in want:
                why = (f"whose {a['field']} is not {a['value']!r}" if old in cm.recs
                       else "which the model does not hold")
                raise Mismatch(f"{k} acted on {cm.show(old)}, {why}")
            if k == "delete":
                cm.delete(old)
                return self.expect(ans.next(), "ok")
            t = self.types[cm.index[a["field2"]]]
            v2 = a["value2"]
            if t.kind == "char":
                if k == "set":
                    v2 = cstr(v2)
                    if len(v2) > t.length:
                        return self.expect(ans.next(), "err ERANGE")
                elif len(v2) > t.length:
                    return self.expect(ans.next(), "err EINVAL")
            return self.expect_code(ans.next(), cm.update(old, cm.replace(old, a["field2"], v2)))
        raise AssertionError(k)


# ---------------------------------------------------------------------------
# running
# ---------------------------------------------------------------------------
def split_points(rng: random.Random, ops: list, parts: int) -> list:
    """Where new harness processes start (the database is open there): [0, ..., len]."""
    ok, closed, held = [], False, set()
    for i, op in enumerate(ops):
        if not closed and i > 0 and not held:    # a held cursor lives in one process
            ok.append(i)
        if op.kind == "close":
            closed = True
            held.clear()
        elif op.kind == "open":
            closed = False
        elif op.kind == "hold":
            held.add(op.args["slot"])
        elif op.kind == "drop":
            held.discard(op.args["slot"])
    picks = sorted(rng.sample(ok, min(parts - 1, len(ok))))
    return [0] + picks + [len(ops)]


def context(ops: list, i: int, n: int = 8) -> str:
    lo = max(0, i - n)
    return "\n".join(f"  {'>>' if j == i else '  '} {j}: {ops[j].cmd}"
                     for j in range(lo, min(i + 2, len(ops))))


def run_ops(exe: str, models: list, ops: list, workdir: Path, env: dict,
            processes: int, rng: random.Random) -> None:
    """Run `ops` (each Op's `model` says which container model it concerns) in
    `processes` harness processes one after the other, checking every answer.
    close / open act on every model."""
    checkers = {id(cm): Checker(cm) for cm in models}
    bounds = split_points(rng, ops, processes)
    dirarg = str(workdir) if any(cm.persistent for cm in models) else ""
    for seg, (lo, hi) in enumerate(zip(bounds, bounds[1:])):
        cmds = [f"open {dirarg}".strip()] + [
            op.cmd.replace("{dir}", dirarg).strip() if op.kind in ("open", "open2") else op.cmd
            for op in ops[lo:hi]]
        # the integrity checker must find every structure consistent at the segment's end
        is_open = True
        for op in ops[lo:hi]:
            if op.kind == "close":
                is_open = False
            elif op.kind == "open":
                is_open = True
        if is_open:
            cmds.append("verify")
        try:
            proc = run_harness(exe, cmds, cwd=str(workdir), env=env, timeout=HARNESS_TIMEOUT)
            stdout, stderr, rc = proc.stdout, proc.stderr, proc.returncode
        except subprocess.TimeoutExpired as e:   # e.g. a cursor walking a cycle
            def text(b):
                return b.decode(errors="replace") if isinstance(b, bytes) else (b or "")
            stdout, rc = text(e.stdout), "timeout"
            stderr = f"(killed after {HARNESS_TIMEOUT} s: an endless loop?)\n{text(e.stderr)}"
        lines = stdout.splitlines()
        ans = Answers(lines)
        crashed = rc != 0 or "Sanitizer" in stderr or "runtime error" in stderr
        i = lo
        try:
            Checker.expect(ans.next(), "ok")          # the segment's open
            for i in range(lo, hi):
                op = ops[i]
                # over a journal or record log: commit, sync and close (the harness commits
                # first) are commits; an abort comes back to the last one
                if op.kind in ("commit", "close") or (op.kind == "ok" and op.cmd == "sync"):
                    for cm in models:
                        cm.committed()
                elif op.kind == "abort":
                    for cm in models:
                        cm.aborted()
                    for ch in checkers.values():
                        ch.aborted()
                if op.kind == "close":
                    for cm in models:
                        cm.closed()
                    for ch in checkers.values():
                        ch.closed()
                checkers[id(op.model)].step(op, ans)
            if is_open:
                i = hi - 1
                Checker.expect(ans.next(), "verify ok")
            if ans.pos != len(lines):
                raise Mismatch(f"unexpected extra output: {lines[ans.pos:ans.pos + 3]}")
        except (Mismatch, ModelError) as e:
            tail = f"\nstderr:\n{stderr[-3000:]}" if crashed or stderr else ""
            raise AssertionError(
                f"{ops[i].model.name}: process {seg + 1}, op {i} ({ops[i].cmd!r}): {e}\n"
                f"recent commands:\n{context(ops, i)}{tail}") from None
        if crashed:
            raise AssertionError(f"process {seg + 1} exited {rc}:\n{stderr[-4000:]}")
        for cm in models:
            cm.committed()   # the harness closes at end of input, committing first
            cm.closed()
        for ch in checkers.values():
            ch.closed()


def unrelocatable(layers: list) -> list:
    """The layers of `layers` whose stored references are not all declared (a pointer
    map cannot move them): the checker refuses them under relocation."""
    return [n for n in layers if n in LAYERS and LAYERS[n].unmapped_refs]


def links_blocks(layers: list) -> bool:
    """Does a layer of `layers` link blocks of the memory among themselves (a tree's nodes:
    its signature overrides `block_graphs`), so that their references are addresses
    whatever the storage?"""
    from p2gen.layers.base import Layer
    return any(n in LAYERS and type(LAYERS[n]).block_graphs is not Layer.block_graphs for n in layers)


def reloc_containers(mem: str) -> list:
    """The matrix's containers run under relocation: every one whose storage's references
    are addresses (so the pointer maps of every layer above it are in use), every one with
    a layer linking blocks among themselves (`links_blocks`), and each storage alone (its
    slot block); those the checker refuses (`unrelocatable`) apart."""
    out = []
    for kind, key, _m in all_cases():
        if _m != next(iter(MEMS)) or (kind == "combo" and illegal(*key)):
            continue
        c = container_of(kind, key, mem)
        storage = next(n for n in c.layers if n in LAYERS and LAYERS[n].role == "storage")
        if missing_templates(c.layers):
            continue
        if LAYERS[storage].addressed_refs or (kind == "combo" and key[1] == "none") or \
                links_blocks(c.layers) or unrelocatable(c.layers):
            out.append((kind, key, c))
    return out


def reloc_params():
    params = []
    for mem in RELOC_MEMS:
        for kind, key, c in reloc_containers(mem):
            label = "-".join(key) if kind == "combo" else key
            params.append(pytest.param(kind, key, mem, id=f"{label}-{mem}"
                                       + ("-refused" if unrelocatable(c.layers) else "")))
    return params


@pytest.fixture(scope="session")
def reloc_builds(harness_builder):
    return {mem: _build_isolating(quick(harness_builder), mem,
                                  [c for _k, _key, c in reloc_containers(mem)
                                   if not unrelocatable(c.layers)])
            for mem in RELOC_MEMS}


@pytest.mark.parametrize("kind,key,mem", reloc_params())
def test_differential_relocated(kind, key, mem, reloc_builds, san_env, tmp_path):
    """The random operations of test_differential (one seed: three processes, reopens
    within them), every open relocating the file (forced through the layer's
    `relocate_env`): the answers match the model, and the integrity check passes at each
    process's end and at every open (verify_open), so every address was moved."""
    container = container_of(kind, key, mem)
    layer = LAYERS[ALL_MEMS[mem][0]]
    bad = unrelocatable(container.layers)
    if bad:
        with pytest.raises((SpecError, SpecErrors)) as err:
            check(parse(spec_text([container]), "refused.p2"), "refused")
        assert f"layer '{bad[0]}'" in str(err.value) and f"{layer.relocate_param} = " in str(err.value)
        pytest.skip(f"refused by the checker: {str(err.value).splitlines()[0]}")
    build = reloc_builds[mem]
    if container.name in build.errors:
        pytest.fail(f"container {container.name} does not build:\n{build.errors[container.name]}",
                    pytrace=False)
    info = build.built.checked.container(container.name)
    cm = ContainerModel(info, build.built.checked.plans)
    rng = random.Random(f"{container.name}/{mem}/relocated")
    ops = OpGen(rng, cm, cm.persistent, PROFILES.get(1)).ops(OPS.get(1, OPS_PER_SEED))
    env = dict(san_env, **{layer.relocate_env: "100"})
    run_ops(build.built.exe, [cm], ops, tmp_path, env, 3, rng)


@pytest.mark.parametrize("kind,key,mem,seed", case_params())
def test_differential(kind, key, mem, seed, spec_builds, san_env, tmp_path):
    container = container_of(kind, key, mem)
    if seed is None:
        # an index over qsort, or a layer storing 64-bit links over 32-bit memory: the
        # checker must refuse it, naming qsort or the layer and the links parameter
        with pytest.raises((SpecError, SpecErrors)) as err:
            check(parse(spec_text([container]), "illegal.p2"), "illegal")
        wide = wide_layers(container.layers, mem)
        if one_block_storage(container.layers, mem):
            assert "use malloc storage" in str(err.value)
        elif wide:
            assert f"layer '{wide[0]}'" in str(err.value) and "links = " in str(err.value)
        else:
            assert "qsort" in str(err.value)
        pytest.skip(f"illegal combination, rejected by the checker: {str(err.value).splitlines()[0]}")
    build = spec_builds[mem]
    if container.name in build.errors:
        pytest.fail(f"container {container.name} does not build:\n{build.errors[container.name]}",
                    pytrace=False)
    checked = build.built.checked
    info = checked.container(container.name)
    cm = ContainerModel(info, build.built.checked.plans)
    rng = random.Random(f"{container.name}/{mem}/{seed}")
    ops = OpGen(rng, cm, cm.persistent, PROFILES.get(seed)).ops(OPS.get(seed, OPS_PER_SEED))
    run_ops(build.built.exe, [cm], ops, tmp_path, san_env, 3 if cm.persistent else 2, rng)


@pytest.mark.parametrize("mem", list(MEMS))
def test_all_containers_interleaved(mem, builds, san_env, tmp_path):
    """Every container of the spec at once, operations interleaved, in one file when
    persistent: a layer that writes outside its own container (or another container's
    root) shows up here. Close/open is global. The harness built both ways: calling
    into the library (every container) and with the API inline (<PREFIX>_INLINE; the
    containers of inline_runnable: every layer of the spec, for each record type)."""
    build = builds[mem]
    if build.built is None:
        pytest.skip("no container of this spec builds")
    checked = build.built.checked
    rng = random.Random(f"interleaved/{mem}")
    streams = []
    for i, info in enumerate(checked.containers):
        cm = ContainerModel(info, build.built.checked.plans)
        gen = OpGen(rng, cm, cm.persistent, {"reopen": 0, "open2": 0, "sync": 0, "insert": 2.0},
                    slot_base=2 * i)
        streams.append(gen.ops(150))
    models = [s[0].model for s in streams]
    ops: list = []
    while any(streams):
        stream = rng.choice([s for s in streams if s])
        ops.append(stream.pop(0))
        if rng.random() < 0.004:
            ops.append(Op("close", "close", model=models[0]))
            if on_file(mem):
                ops.append(Op("sync", "closed", model=models[0]))
            ops.append(Op("open {dir}", "open", model=models[0]))
    run_ops(build.built.exe, models, ops, tmp_path, san_env, 3, rng)


@pytest.mark.parametrize("mem", BOTTOM_MEMS)
def test_cursor_key_updates_meet_each_element_once(mem, spec_builds, san_env, tmp_path):
    """The Halloween problem, for every container and every cursor of the spec (so every
    layer serving every kind of path: storage scans of iarray and qsort, hash eq and scan,
    avl / odlist / qsort / iarray ranges, dlist scans): a walk that adds to the key it is
    ordered or hashed by (a positive delta moves each element ahead of the cursor), to
    the iarray key (the element moves to another slot) or sets a char key (odlist) meets
    every element exactly once; the model checks each step, the order and the errors
    (EDUP / ERANGE over iarray end the walk where the model says)."""
    build = spec_builds[mem]
    if build.built is None:
        pytest.skip("no container of this spec builds")
    rng = random.Random(f"halloween/{mem}")
    models, ops = halloween_ops(build, rng)
    run_ops(build.built.exe, models, ops, tmp_path, san_env, 1, rng)


def halloween_ops(build: SpecBuild, rng: random.Random, signs: tuple = (1,)) -> tuple:
    """For every container of the spec: 24 inserts, then for every cursor and every field
    its walk is ordered, hashed or stored by, two walks that change that field under the
    cursor (cupdadd with delta `signs[i] * 7` (0.5 for floats) for the i-th walk, or
    cupdall of a char key), each followed by a look at every element. (models, ops)."""
    models, ops = [], []
    for info in build.built.checked.containers:
        cm = ContainerModel(info, build.built.checked.plans)
        models.append(cm)
        gen = OpGen(rng, cm, cm.persistent)
        for i in range(24):
            vals = gen.record()
            if cm.unique is not None:   # distinct keys 3 apart: +7 never lands on another
                vals[cm.unique] = 3 * i + 1
            ops.append(Op(f"insert {cm.name} " + " ".join(gen.tok(f, v) for f, v in
                                                          zip(gen.fields, vals)),
                          "insert", {"values": vals}, cm))
        for name in sorted(cm.cursors):
            cur = cm.cursors[name]
            path = cm.plans[cur].path
            lk = path.layer.key_field_obj
            keys = {f for f in (path.ordered_by, lk.name if lk is not None else None,
                                info.storage.params.get("key")) if f is not None}
            hname = f"{cm.name}.all" if cur.synthetic == "all" else name
            pf = param_fields(cur.where)
            for f in sorted(keys):
                for j in range(2):
                    values = {p: gen.draw(pf[p]) for p, _t in cur.params}
                    toks = [encode(t, values[p]) for p, t in cur.params]
                    args = {"cursor": name, "params": values, "field": f}
                    if gen.types[f].kind == "char":
                        v = rng.choice(NAMES[:7])
                        args["value"] = v
                        ops.append(Op(" ".join(["cupdall", hname] + toks + [f, gen.tok(f, v)]),
                                      "cupdall", args, cm))
                        continue
                    t = gen.types[f]
                    d = signs[j % len(signs)] * (0.5 if t.kind == "float" else 7)
                    if d < 0 and t.kind == "int" and not t.signed:
                        d += 1 << t.bits   # lowers an unsigned field: it wraps as in C
                    args["delta"] = d
                    ops.append(Op(" ".join(["cupdadd", hname] + toks + [f, gen.tok(f, d)]),
                                  "cupdadd", args, cm))
                    ops.append(Op(f"all {cm.name}", "all", {}, cm))
    return models, ops


@pytest.mark.parametrize("mem", list(MEMS))
def test_reference_sweep(mem, builds, san_env, tmp_path):
    """_get / _at on every small reference (and, over persistent malloc storage, every
    aligned offset of the file): each answers with an element the model holds or
    P2_NOTFOUND, never crashes; where references are small (slots, keys, positions) every
    element is found exactly once."""
    build = builds[mem]
    if build.built is None:
        pytest.skip("no container of this spec builds")
    rng = random.Random(f"sweep/{mem}")
    dirarg = str(tmp_path) if on_file(mem) else ""
    cmds, plan_ = [f"open {dirarg}".strip()], []
    models = []
    for info in build.built.checked.containers:
        cm = ContainerModel(info, build.built.checked.plans)
        models.append(cm)
        gen = OpGen(rng, cm, cm.persistent)
        for _ in range(60):
            vals = gen.record()
            cmds.append(f"insert {cm.name} " + " ".join(gen.tok(f, v) for f, v in zip(gen.fields, vals)))
            plan_.append((cm, "insert", vals))
        for _ in range(10):
            f = rng.choice(gen.fields)
            v = gen.draw(f, common=True)
            cmds.append(f"delete {cm.name} {f} {gen.tok(f, v)}")
            plan_.append((cm, "delete", (f, v)))
        small = not info.storage.layer.addressed_refs
        refs = list(range(0, 400)) + BOGUS_REFS
        if info.storage.layer.addressed_refs and on_file(mem):
            refs += list(range(4096, 1 << 17, 16))
        for r in refs:
            cmds.append(f"get {cm.name} {r}")
        plan_.append((cm, "sweep", (refs, small)))
    proc = run_harness(build.built.exe, cmds, cwd=str(tmp_path), env=san_env, timeout=HARNESS_TIMEOUT)
    assert proc.returncode == 0 and "Sanitizer" not in proc.stderr and \
        "runtime error" not in proc.stderr, proc.stderr[-3000:]
    ans = Answers(proc.stdout.splitlines())
    Checker.expect(ans.next(), "ok")
    failures = []
    for cm, what, arg in plan_:
        chk = Checker(cm)
        if what == "insert":
            line = ans.next()
            if all(len(v) <= t.length for v, t in zip(arg, cm.types) if t.kind == "char"):
                chk.expect_code(line, cm.insert(cm.make(arg)))
            continue
        if what == "delete":
            want = cm.where(*arg)
            line = ans.next()
            if want:
                cm.delete(chk.rec(line, "del"))
                Checker.expect(ans.next(), "ok")
            else:
                Checker.expect(line, "none")
            continue
        refs, small = arg
        found, bad = [], []
        for r in refs:
            line = ans.next()
            if line.startswith("rec "):
                rec = chk.rec(line, "rec")
                found.append(rec)
                if rec not in cm.recs:
                    bad.append(f"get {cm.name} {r} -> {cm.show(rec)}, not one of its elements")
            elif not line.startswith("err NOTFOUND "):
                bad.append(f"get {cm.name} {r} -> {line!r}")
        try:
            if small:
                cm.same_multiset(found, cm.recs, f"{cm.name}: elements found by reference")
            elif len(found) > len(cm.recs):
                bad.append(f"{len(found)} references lead to an element; it has {len(cm.recs)}")
        except ModelError as e:
            bad.append(str(e))
        if bad:
            failures.append(f"{cm.name} ({cm.info.equation_text()}): " + "; ".join(bad[:3]))
    assert not failures, "references of nothing accepted as elements:\n" + "\n".join(failures)


@pytest.mark.parametrize("mem", list(MEMS))
def test_inline_harness_calls_no_library_function(mem, spec_builds, spec_builds_inline):
    """With <PREFIX>_INLINE the harness's object file defines the API itself: it refers to
    no <prefix>_ function of the library (built the other way, it refers to all it uses),
    so the inline tests above test the inline code."""
    if not shutil.which("nm"):
        pytest.skip("no nm")
    prefix = spec_prefix(mem)

    def undefined(build):
        if build.built is None:
            pytest.skip("no container of this spec builds")
        objs = list(Path(build.built.exe).parent.glob(f"{prefix}_harness.h*.o"))
        assert objs, "harness object not found"
        out = subprocess.run(["nm", "-u", str(objs[0])], capture_output=True, text=True).stdout
        return {l.split()[-1] for l in out.splitlines() if l.split()[-1].startswith(prefix + "_")}
    assert undefined(spec_builds[mem])
    assert undefined(spec_builds_inline[mem]) == set()


def test_harness_survives_garbage(spec_builds, san_env, tmp_path):
    """Malformed commands are answered with err EINVAL, one line each; nothing crashes."""
    build = spec_builds[_HEAP_MEM]
    if build.built is None:
        pytest.skip(f"the {_HEAP_MEM} spec does not build")
    c = build.built.checked.containers[0].name
    rng = random.Random(99)
    junk = ["", "   ", "# a comment", "frobnicate", "insert", f"insert {c}", f"insert {c} 1 2 3",
            f"insert {c} 1 2 3 \"abc 0.5", f"insert {c} 1 2 3 \"a\\q\" 0.5",
            f"insert {c} 1 2 3 \"a\\x4\" 0.5", f"insert {c} 1 2 3 abc 0.5",
            f"insert {c} -1 2 3 \"a\" 0.5", f"insert {c} 4294967296 2 3 \"a\" 0.5",
            f"insert {c} 1 2147483648 3 \"a\" 0.5", f"insert {c} 1 2 99999999999999999999 \"a\" 0.5",
            f"insert {c} 1 2 3 \"a\" zero", f"insert {c} 1 2 3 \"abcdefgh\" 0.5",
            f"insert {c} 1 2 3 \"a\" 0.5 extra", "count", f"count {c} x", "count nosuch",
            f"find {c}", f"find {c} ratio 1", f"find {c} nosuch 1", "cursor", "cursor nosuch",
            f"cursor {c}.all extra", f"cursor {c}_g", f"cursor {c}_g x", f"cdelete {c}.all",
            f"cdelete {c}.all 0", f"cdelete {c}.all -1", f"cupdate {c}.all id", f"cupdall {c}.all nosuch 1",
            f"update {c} id 1", f"update {c} id 1 nosuch 2", f"set {c} id x id 1", f"delete {c}",
            f"delete {c} nosuch 1", f"get {c}", f"get {c} -5", f"get {c} 0x", f"purge {c}",
            "purge nosuch", "open", "open2 a b", "all", f"all {c} {c}", "all nosuch", "sync x",
            "close x", "x" * 70000, " ".join(["t"] * 300), "\t\tinsert\t",
            "".join(chr(rng.randint(1, 255)) for _ in range(200)).replace("\n", " ")]
    cmds = ["open"] + junk + ["count " + c]
    proc = run_harness(build.built.exe, cmds, cwd=str(tmp_path), env=san_env)
    assert proc.returncode == 0 and "Sanitizer" not in proc.stderr and \
        "runtime error" not in proc.stderr, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert lines[0] == "ok" and lines[-1] == "count 0", lines[-3:]
    answered = [cmd for cmd in junk if cmd.strip() and not cmd.strip().startswith("#")]
    body = lines[1:-1]
    assert len(body) == len(answered), (len(body), len(answered), body)
    for cmd, line in zip(answered, body):
        assert line.startswith("err EINVAL ") or line.startswith("err ERANGE ") or \
            line == "none", (cmd[:80], line)


# ---------------------------------------------------------------------------
# descending cursors: every layer that walks its order backwards (`reverse_walk`), over
# every storage it may sit on (and under a hash, as the second index of a stack), on
# every memory; its own spec per memory, so the matrix above is unchanged
# ---------------------------------------------------------------------------
DESC_LAYERS = _registered(realm="ds", reverse_walk=True)
DESC_OPS = 500
# The memories that change what a backward walk reads: the heap, a file (references are
# offsets) and each narrower link width. A walk writes nothing, so the memories that
# differ only in how writes reach the file (a journal) or where it is mapped add nothing.
DESC_MEMS = [_HEAP_MEM, next(n for n in BOTTOM_MEMS if LAYERS[n].in_file and
                             LAYERS[n].maps_anywhere)] + list(_LINK_MEMS)


def _desc_cursors(name: str, key: str) -> list:
    """Walks of the whole order and of ranges with each kind of bound, backwards (and one
    ascending beside them, spelled `asc`)."""
    return [
        (f"{name}_d", f" where grp != $g order by {key} desc"),
        (f"{name}_dr", f" where {key} >= $lo and {key} < $hi order by {key} desc"),
        (f"{name}_dx", f" where {key} > $lo and {key} <= $hi order by {key} desc"),
        (f"{name}_dl", f" where {key} > $lo order by {key} desc"),
        (f"{name}_de", f" where {key} == $x and ratio != $r order by {key} desc"),
        (f"{name}_a", f" where {key} <= $hi order by {key} asc"),
    ]


def desc_cases() -> list:
    """(layer, below): `below` a storage layer, `hash` (a hash index above the layer, over
    array), or None (the layer is the storage)."""
    out = []
    for n in DESC_LAYERS:
        if LAYERS[n].role == "storage":
            out.append((n, None))
            continue
        out += [(n, s) for s in STORAGE if LAYERS[s].stable_refs]
        out.append((n, "hash"))
    return out


def desc_container(layer: str, below: Optional[str], mem: str) -> ContainerSpec:
    mem_name, mem_text = MEMS[mem]
    key = re.search(r"key = (\w+)", layer_text(layer)).group(1)
    if below is None:
        layers, eq = [layer], f"{layer_text(layer)}[{mem_text}]"
    elif below == "hash":
        layers = ["hash", layer, "array"]
        eq = f"{layer_text('hash')}[{layer_text(layer)}[{layer_text('array')}[{mem_text}]]]"
    else:
        layers, eq = [layer, below], f"{layer_text(layer)}[{layer_text(below)}[{mem_text}]]"
    name = f"v_{layer}_{below or 'own'}"
    return ContainerSpec(name, ["top2ds_qualify", "top2ds"] + layers + [mem_name],
                         f"top2ds_qualify[{eq}]", _desc_cursors(name, key))


def desc_runnable(mem: str) -> list:
    return [c for c in (desc_container(l, b, mem) for l, b in desc_cases())
            if not missing_templates(c.layers) and not wide_layers(c.layers, mem)]


@pytest.fixture(scope="session")
def desc_builds(harness_builder):
    """One spec per memory holding every descending container, all built two at a time
    once the first is asked for."""
    pool = ThreadPoolExecutor(max_workers=2)
    futs = {mem: pool.submit(_build_isolating, quick(harness_builder), mem + "_desc",
                             desc_runnable(mem)) for mem in DESC_MEMS}
    pool.shutdown(wait=False)
    return lambda mem: futs[mem].result()


@pytest.mark.parametrize("layer,below,mem", [
    pytest.param(l, b, m, id=f"{l}-{b or 'own'}-{m}") for l, b in desc_cases() for m in DESC_MEMS
    # a layer storing 64-bit links over 32-bit memory is refused (the matrix above checks it)
    if not wide_layers(desc_container(l, b, m).layers, m)])
def test_descending(layer, below, mem, desc_builds, san_env, tmp_path):
    """Random operations through descending cursors (and every other operation) checked
    against the model: each walk in descending key order, deletes and updates under it
    (cdelete, cupdate, cupdall, cupdadd: every element met once), reopen in fresh
    processes."""
    container = desc_container(layer, below, mem)
    build = desc_builds(mem)
    if container.name in build.errors:
        pytest.fail(f"container {container.name} does not build:\n"
                    f"{build.errors[container.name]}", pytrace=False)
    checked = build.built.checked
    info = checked.container(container.name)
    for cur in info.cursors:
        if cur.descending:
            path = checked.plans[cur].path
            assert (path.layer.name, path.descending) == (layer, path.kind == "range"), cur.name
    cm = ContainerModel(info, checked.plans)
    rng = random.Random(f"{container.name}/{mem}/desc")
    ops = OpGen(rng, cm, cm.persistent).ops(DESC_OPS)
    run_ops(build.built.exe, [cm], ops, tmp_path, san_env, 3 if cm.persistent else 2, rng)


@pytest.mark.parametrize("mem", [m for m in DESC_MEMS if m in BOTTOM_MEMS])
def test_descending_key_updates_meet_each_element_once(mem, desc_builds, san_env, tmp_path):
    """The Halloween problem walking backwards: a descending walk that lowers the key it is
    ordered by (each element moves ahead of the cursor, into what is still to come), then
    one that raises it, meets every element exactly once, in order."""
    build = desc_builds(mem)
    if build.built is None:
        pytest.skip("no container of this spec builds")
    rng = random.Random(f"halloween-desc/{mem}")
    models, ops = halloween_ops(build, rng, signs=(-1, 1))
    run_ops(build.built.exe, models, ops, tmp_path, san_env, 1, rng)


EXAMPLE_SPECS = ["paper.p2", "inventory.p2", "qualify_split.p2", "tpcb_hash1.p2"]


@pytest.fixture(scope="session")
def example_builds(harness_builder):
    def one(name):
        path = ROOT / "type_equations" / name
        try:
            return quick(harness_builder)(path.read_text(), path.stem), None
        except Exception as e:  # noqa: BLE001
            return None, str(e)
    present = [n for n in EXAMPLE_SPECS if (ROOT / "type_equations" / n).exists()]
    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(present, pool.map(one, present)))


@pytest.mark.parametrize("name", EXAMPLE_SPECS)
def test_example_spec(name, example_builds, san_env, tmp_path):
    """The harness of each example spec in type_equations/, driven against the model on
    every container at once (random values by field type)."""
    if name not in example_builds:
        pytest.skip(f"type_equations/{name} does not exist")
    built, err = example_builds[name]
    if built is None:
        pytest.fail(f"type_equations/{name} does not build:\n{err}", pytrace=False)
    rng = random.Random(f"example/{name}")
    has_files = bool(built.checked.files)
    streams = []
    for info in built.checked.containers:
        cm = ContainerModel(info, built.checked.plans)
        streams.append(OpGen(rng, cm, has_files, {"reopen": 0.5}).groups(250))
    models = [s[0][0].model for s in streams]
    ops: list = []
    while any(streams):
        ops.extend(rng.choice([s for s in streams if s]).pop(0))
    run_ops(built.exe, models, ops, tmp_path, san_env, 3, rng)


def test_matrix_covers_every_layer():
    """Every registered layer of the realms a container's equation is made of (mem, ds,
    top) stands in the equation of some container of the matrix, whose axes are derived
    from the registry and whose top-layer variants are chosen by hand. (Relationships'
    layers: tests/layers/test_links.py.)"""
    used = set()
    for mem in MEMS:
        checked = check(parse(spec_text(runnable(mem)), "cover.p2"), "cover")
        used |= {li.name for info in checked.containers for li in info.chain}
    for name, layer in LAYERS.items():
        if layer.realm != "rel":
            assert name in used, (
                f"layer '{name}' is in no container of the differential matrix: it takes part "
                f"by itself if it is a storage, index or mem layer; a top layer needs an entry "
                f"in EXTRAS (tests/layers/test_differential.py)")


@pytest.mark.parametrize("mem", list(MEMS))
def test_inline_spec_covers_every_layer(mem):
    """The inline harness's spec (a subset of the containers) holds, as the checker reads
    its equations, every layer the full spec of the memory holds, for each record type."""
    def layers(containers):
        checked = check(parse(spec_text(containers), "cover.p2"), "cover")
        return {(li.name, info.record.name) for info in checked.containers for li in info.chain}
    full, inline = runnable(mem), inline_runnable(mem)
    assert len(inline) < len(full)
    assert layers(inline) == layers(full)


# ---------------------------------------------------------------------------
# the planner's choices, lightly (no C involved)
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("storage,index", [(s, i) for s in STORAGE for i in INDEXES
                                           if not illegal(s, i)])
def test_plans(storage, index):
    c = combo_container(storage, index, _HEAP_MEM)
    checked = plan(check(parse(spec_text([c]), "plans.p2"), "plans"))
    info = checked.container(c.name)
    paths = {k.name[len(c.name) + 1:]: checked.plans[k].path for k in info.cursors if not k.synthetic}
    idx = [n for n, _ in INDEXES[index]]
    if "hash" in idx:
        assert (paths["g"].layer.name, paths["g"].kind) == ("hash", "eq")
        assert paths["gs"].layer.name == "hash"
    if "avl" in idx:
        assert (paths["r"].layer.name, paths["r"].kind) == ("avl", "range")
    elif storage == "qsort":
        assert (paths["r"].layer.name, paths["r"].kind) == ("qsort", "range")
    if storage == "iarray":
        assert paths["i"].layer.name == "iarray" and paths["i"].kind in ("eq", "range")
        assert paths["oi"].ordered_by == "id"
    if "o" in paths:
        assert paths["o"].ordered_by == "score"
    if "on" in paths:
        assert paths["on"].layer.name == "odlist" and paths["on"].ordered_by == "name"
    # a predicate no layer can serve: a full walk (a scan, or an ordered layer's
    # unbounded range)
    assert paths["n"].eq is None and paths["n"].lo is None and paths["n"].hi is None
    # finds are planned on their own key's layer when it offers a path
    for key, cur in info.finds.items():
        path = checked.plans[cur].path
        assert path.layer.key_field_obj is None or \
            path.layer.key_field_obj.name == key or path.kind == "scan"


def test_transient_only_spec_compiles_strictly(cc, tmp_path):
    """A spec without persistent containers must compile with the default strict flags
    (regression: <prefix>_open once left its `dir` parameter unused)."""
    from p2gen.build import compile_objects, generate
    spec = tmp_path / "tiny.p2"
    spec.write_text(TINY_TRANSIENT)
    gen = generate(str(spec), str(tmp_path / "out"), "tiny")
    compile_objects(gen, cc=cc)


@pytest.mark.parametrize("mem", list(MEMS))
def test_matrix_spec_compiles_strictly(mem, spec_builds):
    """The matrix's harnesses are built under ASan/UBSan at -O0 (quick); each spec's C and
    harness also went through the plain -O1 -Werror compile, where the optimiser's
    warnings are."""
    build = spec_builds[mem]
    if build.built is None:
        pytest.skip("no container of this spec builds")
    assert build.built.strict == STRICT_CFLAGS
    assert "-O1" in STRICT_CFLAGS and "-Werror" in STRICT_CFLAGS
    assert not any(f.startswith("-fsanitize") for f in STRICT_CFLAGS)


MAYBE_UNINITIALIZED = """int g(void);
int f(int n) { int x; for (int i = 0; i < n; i++) x = g(); return x; }
"""


def test_strict_compile_catches_what_only_the_optimiser_warns(cc, tmp_path):
    """What the -O0 sanitized build lets through (a variable only the optimiser's flow
    analysis sees may be used uninitialized), the strict compile of the matrix refuses."""
    from p2gen.errors import BuildError
    from p2gen.harness import HARNESS_CFLAGS, SANITIZE_CFLAGS
    unit = tmp_path / "maybe.c"
    unit.write_text(MAYBE_UNINITIALIZED)
    quick_flags = [*HARNESS_CFLAGS, *SANITIZE_CFLAGS, DEBUG_FLAG, SAN_QUICK_OPT]
    r = subprocess.run([cc, *quick_flags, "-c", str(unit), "-o", os.devnull],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    with pytest.raises(BuildError, match="maybe-uninitialized"):
        compile_strictly(cc, [unit], tmp_path)
