"""Persistent database files through the generated harness: a file is created, filled and
closed; then damaged or foreign files are refused with a clear message (and left
byte-for-byte as they were), and the original still reopens with every record.
"""
from __future__ import annotations

import random
import signal
import subprocess
import time

import pytest

from p2gen.harness import run_harness

RECORD = "record acct { id: u32; grp: i32; bal: i64; tag: char[8]; }\n"
SPEC = RECORD + """container accts of acct
    = top2ds_qualify[hash(key = grp, buckets = 8)[array(capacity = 4)[persistent(file = "pf.db")]]];
cursor by_grp on accts where grp == $g;
"""
# Same file and container name, another record layout / another equation.
SPEC_LAYOUT = SPEC.replace("tag: char[8];", "tag: char[9];")
SPEC_EQUATION = SPEC.replace("buckets = 8", "buckets = 16")
N_RECORDS = 120
HEADER = 4096


def run(exe, cmds, env, cwd):
    proc = run_harness(exe, cmds, cwd=str(cwd), env=env)
    assert "Sanitizer" not in proc.stderr and "runtime error" not in proc.stderr, proc.stderr
    assert proc.returncode == 0, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    assert not any(line.startswith("bug") for line in proc.stdout.splitlines()), proc.stdout
    return proc.stdout.splitlines()


@pytest.fixture(scope="module")
def harness(harness_builder):
    return harness_builder(SPEC, "pf").exe


@pytest.fixture(scope="module")
def pristine(harness, san_env, tmp_path_factory):
    """(bytes of a filled, cleanly closed pf.db, its records as `all` prints them)."""
    d = tmp_path_factory.mktemp("pristine")
    rng = random.Random(7)
    cmds = [f"open {d}"]
    for i in range(N_RECORDS):
        cmds.append(f"insert accts {i} {rng.randint(0, 9)} {rng.randint(-10**12, 10**12)} "
                    f'"t{i}"')
    cmds += [f"delete accts id {i}" for i in range(0, N_RECORDS, 7)]   # free slots too
    cmds += ["sync", "close", f"open {d}", "all accts", "count accts"]
    out = run(harness, cmds, san_env, d)
    recs = sorted(line for line in out if line.startswith("rec "))
    expected = N_RECORDS - len(range(0, N_RECORDS, 7))
    assert len(recs) == expected and out[-1] == f"count {expected}"
    data = (d / "pf.db").read_bytes()
    assert data[:8] == b"P2GENDB\0" and len(data) > 2 * HEADER
    return data, recs


def reopen_all(harness, env, d):
    out = run(harness, [f"open {d}", "all accts"], env, d)
    assert out[0] == "ok", out[:3]
    return sorted(line for line in out if line.startswith("rec "))


def refused(harness, env, d, damaged: bytes, code: str, *fragments):
    """Open a directory whose pf.db is `damaged`: refused with `code`, the message holds
    every fragment and names the file; the file is unchanged afterwards."""
    db = d / "pf.db"
    db.write_bytes(damaged)
    out = run(harness, [f"open {d}", "count accts", "all accts"], env, d)
    assert out[0].startswith(f"err {code} "), out[0]
    msg = out[0]
    assert "pf.db" in msg, msg
    for frag in fragments:
        assert frag in msg, msg
    # nothing was opened: later calls see a closed database
    assert out[1] == "count 0" and out[2].startswith("err ECLOSED"), out
    assert db.read_bytes() == damaged, "a refused file was modified"
    return msg


def restore_and_check(harness, env, d, pristine):
    data, recs = pristine
    (d / "pf.db").write_bytes(data)
    assert reopen_all(harness, env, d) == recs


def test_clean_reopen_has_every_record(harness, san_env, pristine, tmp_path):
    restore_and_check(harness, san_env, tmp_path, pristine)
    # and reopening in a fresh process after that still has them (the reopen changed nothing)
    assert reopen_all(harness, san_env, tmp_path) == pristine[1]


@pytest.mark.parametrize("where", ["1", "8", "100", "header-1", "header", "header+1",
                                   "2*header", "half", "size-4096", "size-1"])
def test_truncated_file_is_refused(harness, san_env, pristine, tmp_path, where):
    data, _ = pristine
    size = len(data)
    cut = eval(where, {}, {"header": HEADER, "size": size, "half": size // 2})  # noqa: S307
    assert 0 < cut < size
    refused(harness, san_env, tmp_path, data[:cut], "EFORMAT", "truncated")
    restore_and_check(harness, san_env, tmp_path, pristine)


HEADER_FIELDS = [0, 7, 8, 12, 16, 20, 24, 31, 32, 40, 48, 112, 120, 124, 127, 128, 255, 256, 300]


@pytest.mark.parametrize("offset", HEADER_FIELDS + sorted(random.Random(2024).sample(range(HEADER), 12)))
def test_flipped_header_byte_is_refused(harness, san_env, pristine, tmp_path, offset):
    data, _ = pristine
    flip = random.Random(offset).randint(1, 255)
    damaged = bytearray(data)
    damaged[offset] ^= flip
    msg = refused(harness, san_env, tmp_path, bytes(damaged), "EFORMAT")
    assert any(w in msg for w in ("checksum", "magic", "version", "not closed cleanly",
                                  "corrupt")), msg
    restore_and_check(harness, san_env, tmp_path, pristine)


@pytest.mark.parametrize("other", ["layout", "equation"])
def test_file_of_another_spec_is_refused(harness_builder, harness, san_env, pristine, tmp_path, other):
    data, _ = pristine
    text = {"layout": SPEC_LAYOUT, "equation": SPEC_EQUATION}[other]
    assert text != SPEC
    exe = harness_builder(text, f"pf_{other}").exe
    refused(exe, san_env, tmp_path, data, "EMISMATCH", "different spec")
    restore_and_check(harness, san_env, tmp_path, pristine)


@pytest.mark.parametrize("content", ["text", "short-text", "zeros", "elf"])
def test_file_that_is_not_a_p2gen_file_is_refused(harness, san_env, pristine, tmp_path, content):
    junk = {
        "text": b"hello, this is not a database\n" * 400,
        "short-text": b"hello\n",
        "zeros": bytes(3 * HEADER),
        "elf": b"\x7fELF" + bytes(range(256)) * 40,
    }[content]
    msg = refused(harness, san_env, tmp_path, junk, "EFORMAT")
    if len(junk) >= HEADER:
        assert "not a p2gen" in msg, msg
    else:
        assert "truncated" in msg, msg
    restore_and_check(harness, san_env, tmp_path, pristine)


def _start(exe, env, cwd):
    return subprocess.Popen([exe], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=str(cwd))


def _wait_state_open(path, seconds=10.0) -> bool:
    """Wait until the header's state field (offset 20) says OPEN."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if path.read_bytes()[20] == 1:
            return True
        time.sleep(0.02)
    return False


def test_file_not_closed_cleanly_is_refused(harness, san_env, pristine, tmp_path):
    data, _ = pristine
    (tmp_path / "pf.db").write_bytes(data)
    proc = _start(harness, san_env, tmp_path)
    try:
        # kill it while the database is open (it never reaches its close)
        proc.stdin.write(f"open {tmp_path}\ninsert accts 9999 1 1 \"x\"\nsync\n")
        proc.stdin.flush()
        assert _wait_state_open(tmp_path / "pf.db"), "the harness never marked the file open"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
    crashed = (tmp_path / "pf.db").read_bytes()
    refused(harness, san_env, tmp_path, crashed, "EFORMAT", "not closed cleanly")
    restore_and_check(harness, san_env, tmp_path, pristine)


def test_file_in_use_is_refused(harness, san_env, pristine, tmp_path):
    data, _ = pristine
    (tmp_path / "pf.db").write_bytes(data)
    holder = _start(harness, san_env, tmp_path)
    try:
        holder.stdin.write(f"open {tmp_path}\n")
        holder.stdin.flush()
        assert _wait_state_open(tmp_path / "pf.db"), "the holder never opened the file"
        before = (tmp_path / "pf.db").read_bytes()
        out = run(harness, [f"open {tmp_path}", "count accts"], san_env, tmp_path)
        assert out[0].startswith("err EBUSY ") and "pf.db" in out[0], out
        assert out[1] == "count 0"
        assert (tmp_path / "pf.db").read_bytes() == before
    finally:
        out, err = holder.communicate("close\n", timeout=60)
    assert holder.returncode == 0 and out.splitlines() == ["ok", "ok"], (out, err)
    assert reopen_all(harness, san_env, tmp_path) == pristine[1]
