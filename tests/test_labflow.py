"""LabFlow-1: the benchmark log generator (`p2gen bench labflow --gen`) and the Python
reference model that replays it, with the checks of the workload's specification that
apply to a log and to the model (counts, history order, latest == a scan of the history,
queue membership, schema versions decode payloads, intervals well formed)."""
from __future__ import annotations

import hashlib
import subprocess
import sys
from collections import Counter

import pytest

from p2gen.bench.labflow import gen

SMALL = 1 << 20         # X = 1 MiB: a log of ~40,000 lines, three full intervals
# The SHA-256 of the seed-1996, 1 MiB log. The log is a contract between the generator and
# every replayer (C drivers, peers, the model): a change of this digest is a change of the
# benchmark and must be deliberate (say so in the commit), never a Python upgrade.
GOLDEN_SMALL = "a77394914e7eb7ec8e7c43b10766db9b1a63b73a701f1d70d783c1d7b721bab2"


@pytest.fixture(scope="module")
def small():
    return gen.generate_bytes(seed=gen.DEFAULT_SEED, memory=SMALL)


def test_splitmix64_known_answers():
    """The generator's PRNG is splitmix64 bit for bit (the reference C code's outputs for
    seed 0), so a C replayer or generator can reproduce it."""
    r = gen.SplitMix64(0)
    assert [r.next() for _ in range(3)] == [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4,
                                           0x06C45D188009454F]
    r = gen.SplitMix64(7)
    assert all(r.below(10) < 10 for _ in range(1000))
    assert {r.below(3) for _ in range(200)} == {0, 1, 2}


def test_log_is_deterministic(small):
    data, s = small
    again, s2 = gen.generate_bytes(seed=gen.DEFAULT_SEED, memory=SMALL)
    assert data == again and s == s2
    assert s.sha256 == hashlib.sha256(data).hexdigest()
    other, _ = gen.generate_bytes(seed=gen.DEFAULT_SEED + 1, memory=SMALL)
    assert other != data
    bigger, _ = gen.generate_bytes(seed=gen.DEFAULT_SEED, memory=2 * SMALL)
    assert bigger != data


def test_log_digest_is_pinned(small):
    assert small[1].sha256 == GOLDEN_SMALL


def test_cli_writes_the_same_bytes(tmp_path, small):
    out = tmp_path / "lf.log"
    proc = subprocess.run([sys.executable, "-m", "p2gen.cli", "bench", "labflow", "--gen",
                           "--memory", "1M", "-o", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes() == small[0]
    assert small[1].sha256 in proc.stdout and "interval at 2X" in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "p2gen.cli", "bench", "labflow", "--gen",
                           "--memory", "lots"], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 2 and "--memory" in proc.stderr


def test_parse_size():
    assert gen.parse_size("8M") == 8 << 20
    assert gen.parse_size("256MiB") == 256 << 20
    assert gen.parse_size("1g") == 1 << 30
    assert gen.parse_size("4096") == 4096
    for bad in ("", "0", "-1M", "8X", "M"):
        with pytest.raises(ValueError):
            gen.parse_size(bad)
