"""The runtime's cached object (p2gen.toolchain.runtime_object): builds whose flags differ
only in what the runtime never sees share one object, so the suite, the benchmarks and
users' builds compile p2_runtime.c once per flag set that matters."""
from __future__ import annotations

import shlex
from concurrent.futures import ThreadPoolExecutor

import pytest

from p2gen.toolchain import cached_object, runtime_object


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


def test_a_source_is_compiled_once_for_its_texts_compiler_and_flags(cc, tmp_path):
    """cached_object (what the tests' OO7 programs share their objects through): the same
    source and headers compiled once, whichever directory they came from and however many
    threads ask at once; another header text or flag, another object; what it includes
    is given as texts, never found through the caller's include directories."""
    cache = tmp_path / "cache"
    cmd = shlex.split(cc)
    files = {"d/main.c": '#include "../v.h"\nint f(void) { return V; }\n', "v.h": "#define V 1\n"}
    with ThreadPoolExecutor(4) as pool:
        objs = set(pool.map(lambda _: cached_object(cmd, ["-std=c11", "-O0"], "d/main.c", files,
                                                    str(cache)), range(4)))
    assert len(objs) == 1 and len(list(cache.glob("main-*.o"))) == 1
    (first,) = objs
    assert cached_object(cmd, ["-std=c11", "-O0"], "d/main.c", dict(files), str(cache)) == first
    other = cached_object(cmd, ["-std=c11", "-O0"], "d/main.c", {**files, "v.h": "#define V 2\n"},
                          str(cache))
    assert other != first
    assert cached_object(cmd, ["-std=c11", "-O1"], "d/main.c", files, str(cache)) not in (first, other)
    assert len(list(cache.glob("main-*.o"))) == 3
    with pytest.raises(ValueError, match="-I"):
        cached_object(cmd, ["-I", str(tmp_path)], "d/main.c", files, str(cache))
