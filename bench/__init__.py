"""p2gen.bench: the benchmarks, and the Python that builds and runs them.

Each benchmark lives in one directory with its drivers beside the code that runs it:
`tpcb/` (TPC-B: C/C++ drivers under Google Benchmark, `run.py` behind `p2gen bench tpcb`),
`oo7/` (OO7: `p2gen bench oo7`), `range/` (range scans through the ordered layers:
`p2gen bench range`) and `python/` (the generated Python module against sqlite3,
dict and lmdb: `p2gen bench python`), `labflow/` (LabFlow-1: the workflow-history log
generator behind `p2gen bench labflow --gen` and the Python reference model that replays
it), `acob/` (ACOB: a local file, a page server and an object server, `p2gen bench
acob`, on the engines `engines.py` starts: nbdkit and redis-server on loopback, as the
tests start theirs); `cli.py` declares the `p2gen bench` commands and their options (added under the
compiler's command group, generator/cli.py); `common.py` holds what their runners share (building variants as users build them,
incremental builds, running Google Benchmark and loading its JSON, medians and ratios,
number formats, the Markdown reports' pieces and plots), and the C++ headers beside it
what their drivers share (`flags.h` the drivers' flags, `bench_main.h` main()'s
scaffolding, `sqlite_util.h` and `lmdb_util.h` the SQLite and LMDB helpers of the
reference systems, `p2_variant.h` the head of a generated variant's driver, `splitmix64.h`
the drivers' random stream). The variants benchmarked
are the specs of `type_equations/tpcb/` and `type_equations/oo7/` (range scans: `range/*.p2`). Drivers and specs ship as
package data, so `p2gen bench ...` runs from an installed package as from a checkout.
"""
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent


def spec_dir(name: str) -> Path:
    """The directory of benchmark variant specs `type_equations/<name>/`: the checkout's or
    the installed package's copy (p2gen.type_equations)."""
    from .. import type_equations
    return Path(next(iter(type_equations.__path__))).resolve() / name
