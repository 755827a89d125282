"""The runtime's cached object (p2gen.toolchain.runtime_object): builds whose flags differ
only in what the runtime never sees share one object, so the suite, the benchmarks and
users' builds compile p2_runtime.c once per flag set that matters."""
from __future__ import annotations

import shlex

from p2gen.toolchain import runtime_object


def test_flags_the_runtime_never_sees_share_one_object(cc, tmp_path):
    cmd = shlex.split(cc)
    base = ["-std=c11", "-O1", "-g", "-Wall", "-Wextra", "-Werror"]
    first = runtime_object(cmd, base + ["-g0", "-O0"], cache=str(tmp_path))
    # a spec's include directory, its header's inline switch, levels overridden by later ones
    same = [base + ["-g0", "-O0", "-I", "/nowhere", "-DDP_INLINE"],
            ["-std=c11", "-O3", "-g", "-Wall", "-Wextra", "-Werror", "-g0", "-O0", "-Iinc"]]
    for flags in same:
        assert runtime_object(cmd, flags, cache=str(tmp_path)) == first, flags
    assert len(list(tmp_path.glob("p2_runtime-*.o"))) == 1
    # a macro the runtime reads, another last level: another object
    for flags in (base + ["-g0", "-O0", "-DP2_FAULT_INJECT"], base + ["-g0", "-O2"],
                  base + ["-O0"]):
        assert runtime_object(cmd, flags, cache=str(tmp_path)) != first, flags
    assert len(list(tmp_path.glob("p2_runtime-*.o"))) == 4
