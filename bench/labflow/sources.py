"""What the LabFlow-1 replay binary is built from: the driver's sources, each peer system's
source and the libraries it links, for the benchmark runner and the tests.

A binary is the driver (DRIVER_SOURCES) plus any set of systems, each registering itself
(lf::Registration): the peers below and the generated variants' backend
(labflow_p2.cc, compiled once per variant), which the runner adds itself. Every file
includes "labflow.h" from this directory and "../flags.h" from bench/.
"""
from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent

DRIVER_SOURCES = ("labflow_main.cc", "labflow_common.cc")
PEER_SOURCES = {"HAND": "labflow_hand.cc", "SQLITE": "labflow_sqlite.cc", "LMDB": "labflow_lmdb.cc"}
# the header each peer needs (to skip it where its library is not installed) and its libraries
PEER_HEADERS = {"HAND": None, "SQLITE": "sqlite3.h", "LMDB": "lmdb.h"}
PEER_LIBS = {"HAND": (), "SQLITE": ("-lsqlite3",), "LMDB": ("-llmdb",)}
DRIVER_HEADERS = ("benchmark/benchmark.h",)
DRIVER_LIBS = ("-lbenchmark", "-lpthread")
# everything a binary with every peer links (libraries last)
LIBS = tuple(lib for p in PEER_SOURCES for lib in PEER_LIBS[p]) + DRIVER_LIBS
CXXFLAGS = ("-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror")
SANITIZE = ("-fsanitize=address,undefined", "-fno-omit-frame-pointer")


def sources(peers=tuple(PEER_SOURCES)) -> list[Path]:
    """The driver's and these peers' source files (absolute paths)."""
    return [HERE / s for s in DRIVER_SOURCES] + [HERE / PEER_SOURCES[p] for p in peers]


def libs(peers=tuple(PEER_SOURCES)) -> list[str]:
    """The link flags of the driver and these peers (libraries last)."""
    out: list[str] = []
    for p in peers:
        out.extend(PEER_LIBS[p])
    return out + list(DRIVER_LIBS)


def missing_headers(peers=tuple(PEER_SOURCES), include_dirs=("/usr/include", "/usr/local/include")) -> list[str]:
    """The headers of the driver and these peers not found in `include_dirs`."""
    want = list(DRIVER_HEADERS) + [PEER_HEADERS[p] for p in peers if PEER_HEADERS[p]]
    return [h for h in want if not any((Path(d) / h).exists() for d in include_dirs)]
