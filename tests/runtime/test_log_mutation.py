"""Crafted logs: the record log (`wal`) and the page journal (`journal`) mutated with their
checksums recomputed (a checksum is not an authentication), opened through the ordinary
API under ASan/UBSan.

- Regression: a range record (or page record) moved to 60 GiB, checksums recomputed, used
  to be replayed there: the data file became 60 GiB (sparse) before anything refused it.
  Replay now checks every record against the data file's size its own transaction
  committed (the header's file_size as the log leaves it at that commit) before it writes
  anything: the open is refused and every file is left byte-identical.
- A refusal after the replay (the data file's header, or the integrity check of the
  generated open) puts back what the replay wrote: every file byte-identical.
- The mutator: offsets, lengths, sequence numbers, commit counts and sizes, dropped and
  duplicated records, the header's file_size in a record, each with every checksum
  recomputed; each result opened with `open`, read, changed and closed. Pass: no
  sanitizer report, no signal; a refused open leaves every file byte-identical; an
  accepted one never grows the data file beyond the sizes the log committed.
  LOG_MUTANTS results per log kind in CI (seeded); P2GEN_SOAK=1 multiplies them by 20.
"""
from __future__ import annotations

import hashlib
import os
import random
import shutil
import struct
import zlib
from pathlib import Path

import pytest

from conftest import SAN_QUICK_FLAGS, run_clean

SPEC = """
record item { id: u32; v: i64; name: char[12]; }
container items of item
    = top2ds_qualify[hash(key = id, buckets = 4)[avl(key = v)[array(capacity = 2)[wal[persistent(file = "w.db")]]]]];
"""
PAGE_SPEC = SPEC.replace("wal[", "journal[")

REC_PAGE, REC_COMMIT, REC_RANGE, REC_XACT = 0x50414745, 0x434F4D54, 0x52414E47, 0x58414354
LOG_HDR = 64
OFF_BITS = 46
FILE_SIZE_AT = 32          # struct p2_seg_header.file_size
SOAK = os.environ.get("P2GEN_SOAK", "") not in ("", "0")
LOG_MUTANTS = 40 * (20 if SOAK else 1)


def crc32c(data: bytes, crc: int = 0) -> int:
    table = _C32C
    crc ^= 0xFFFFFFFF
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _c32c_table():
    t = []
    for b in range(256):
        c = b
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
        t.append(c)
    return t


_C32C = _c32c_table()


class Log:
    """A log as a list of transactions, each a list of records, rewritten with every
    checksum recomputed (as an attacker would). Records: ("range", at, data),
    ("page", pgno, data); each transaction ends with its commit's seq and npages, which
    `bytes` recomputes unless told to keep a mutated value."""

    def __init__(self, data: bytes, page: bool):
        self.page = page
        self.header = bytearray(data[:LOG_HDR])
        self.version = struct.unpack_from("<I", data, 8)[0]
        self.pgsize = struct.unpack_from("<I", data, 12)[0]
        self.base_seq = struct.unpack_from("<Q", data, 24)[0]
        self.txs = []          # [{"recs": [...], "seq": s, "npages": None}]
        off, recs, seq = LOG_HDR, [], self.base_seq + 1
        while off + 16 <= len(data):
            magic = struct.unpack_from("<I", data, off)[0]
            if magic == REC_RANGE and not page:
                where = struct.unpack_from("<Q", data, off + 8)[0]
                n = (where >> OFF_BITS) + 1
                recs.append(["range", where & ((1 << OFF_BITS) - 1), bytes(data[off + 16:off + 16 + n])])
                off += 16 + (n + 7) // 8 * 8
            elif magic == REC_PAGE and page:
                s, pgno = struct.unpack_from("<QQ", data, off + 8)
                if s != seq:
                    break
                recs.append(["page", pgno, bytes(data[off + 24:off + 24 + self.pgsize])])
                off += 24 + self.pgsize
            elif magic == REC_COMMIT:
                s = struct.unpack_from("<Q", data, off + 8)[0]
                if s != seq:
                    break
                self.txs.append({"recs": recs, "seq": s, "npages": None})
                recs, seq = [], seq + 1
                off += 32
            else:
                break

    def crc(self, data: bytes, crc: int = 0) -> int:
        return crc32c(data, crc) if (not self.page and self.version == 2) else zlib.crc32(data, crc)

    def bytes(self) -> bytes:
        out = bytearray(self.header)
        for tx in self.txs:
            chain = 0
            for kind, at, data in tx["recs"]:
                if kind == "range":
                    n = len(data)
                    where = (at & ((1 << OFF_BITS) - 1)) | ((n - 1) << OFF_BITS)
                    c = self.crc(data, self.crc(struct.pack("<QQ", tx["seq"], where)))
                    out += struct.pack("<IIQ", REC_RANGE, c, where) + data + bytes((-n) % 8)
                else:
                    c = zlib.crc32(data, zlib.crc32(struct.pack("<QQ", tx["seq"], at)))
                    out += struct.pack("<IIQQ", REC_PAGE, c, tx["seq"], at) + data
                chain = self.crc(struct.pack("<I", c), chain)
            npages = len(tx["recs"]) if tx["npages"] is None else tx["npages"]
            rec = bytearray(struct.pack("<IIQQII", REC_COMMIT, 0, tx["seq"], npages, chain, 0))
            struct.pack_into("<I", rec, 4, self.crc(bytes(rec)))
            out += rec
        return bytes(out)


def load_cmds(n):
    return ["open"] + [f'insert items {k} {k} "n{k}"' for k in range(n)] + ["commit"]


def crashed(exe, d: Path):
    """A log of a load and updates that grow the file, left by a crash."""
    cmds = load_cmds(10)
    for t in range(12):
        cmds += [f"set items id {t % 10} v {100 + t}", "commit"]
    cmds += [f'insert items {k} {k} "n{k}"' for k in range(10, 40)] + ["commit"]
    cmds += ["set items id 3 v 7", "commit"]
    run_clean(exe, cmds + ["crash"], d)


def digests(d: Path) -> dict:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.iterdir())}


def sizes(d: Path) -> dict:
    return {p.name: p.stat().st_size for p in sorted(d.iterdir())}


def open_read_close(exe, d: Path):
    """open, read everything, change something, commit, close: the first line."""
    proc, out = run_clean(exe, ["open", "all items", 'insert items 99 1 "z"', "commit", "close"], d)
    return out[0] if out else ""


@pytest.fixture(scope="module")
def exes(harness_builder):
    return {"wal": harness_builder(SPEC, "lm").exe, "journal": harness_builder(PAGE_SPEC, "lmj").exe}


@pytest.fixture(scope="module")
def sources(exes, tmp_path_factory):
    out = {}
    for kind, exe in exes.items():
        d = tmp_path_factory.mktemp(f"src_{kind}")
        crashed(exe, d)
        out[kind] = d
    return out


def log_name(kind):
    return "w.db-wal" if kind == "wal" else "w.db-journal"


def place(src: Path, d: Path, kind: str, log: bytes):
    shutil.copytree(src, d)
    (d / log_name(kind)).write_bytes(log)


@pytest.mark.parametrize("kind", ["wal", "journal"])
def test_a_record_far_beyond_the_file_is_refused_and_nothing_grows(exes, sources, tmp_path, kind):
    """The issue's attack: the last transaction's record moved to 60 GiB."""
    src = sources[kind]
    log = Log((src / log_name(kind)).read_bytes(), kind == "journal")
    assert len(log.txs) >= 3
    far = 60 << 30
    rec = log.txs[-1]["recs"][-1]
    rec[1] = far if kind == "wal" else far // log.pgsize
    d = tmp_path / "far"
    place(src, d, kind, log.bytes())
    before, size0 = digests(d), (d / "w.db").stat().st_size
    first = open_read_close(exes[kind], d)
    assert (d / "w.db").stat().st_size == size0, "the replay grew the data file"
    assert first.startswith("err EFORMAT"), first
    assert "beyond" in first, first
    assert digests(d) == before


@pytest.mark.parametrize("kind", ["wal", "journal"])
def test_a_record_in_the_middle_beyond_the_file_is_refused(exes, sources, tmp_path, kind):
    """The same in an earlier transaction, with committed ones after it, and in a record
    just past the committed size (not only far away)."""
    src = sources[kind]
    log = Log((src / log_name(kind)).read_bytes(), kind == "journal")
    committed = struct.unpack_from("<Q", (src / "w.db").read_bytes(), FILE_SIZE_AT)[0]
    for tx in log.txs:          # the largest size the log commits
        for k, at, data in tx["recs"]:
            start = at if k == "range" else at * log.pgsize
            if start <= FILE_SIZE_AT and start + len(data) >= FILE_SIZE_AT + 8:
                committed = max(committed, struct.unpack_from("<Q", data, FILE_SIZE_AT - start)[0])
    rec = log.txs[2]["recs"][0]
    rec[1] = committed if kind == "wal" else committed // log.pgsize
    d = tmp_path / "mid"
    place(src, d, kind, log.bytes())
    before = digests(d)
    first = open_read_close(exes[kind], d)
    assert first.startswith("err EFORMAT") and "beyond" in first, first
    assert digests(d) == before


def test_a_refusal_after_the_replay_leaves_the_files_byte_identical(exes, sources, tmp_path):
    """A log whose transactions are valid records but whose replayed header is not a
    header of this spec (its fingerprint changed in a logged range): the replay ran, the
    open refused the result; the files must be as they were."""
    kind = "wal"
    src = sources[kind]
    log = Log((src / log_name(kind)).read_bytes(), False)
    data = bytearray(8)
    struct.pack_into("<Q", data, 0, 0x0123456789ABCDEF)
    log.txs[-1]["recs"].append(["range", 24, bytes(data)])     # header.fingerprint
    d = tmp_path / "fp"
    place(src, d, kind, log.bytes())
    before = digests(d)
    first = open_read_close(exes[kind], d)
    assert first.startswith("err"), first
    assert digests(d) == before


def test_an_integrity_check_refusal_after_the_replay_leaves_the_files_byte_identical(exes, sources, tmp_path):
    """A logged range that breaks a structure the integrity check walks (a hash chain link
    pointed far outside the file): the header is fine, the generated open's check refuses
    after the replay; the teardown must put back what the replay wrote."""
    kind = "wal"
    src = sources[kind]
    d = tmp_path / "ic"
    shutil.copytree(src, d)
    # where the replay would leave element 7's record: find it in the replayed image
    # (a copy of the directory opened and closed), then log a write of its hash link
    probe = tmp_path / "probe"
    shutil.copytree(src, probe)
    run_clean(exes[kind], ["open", "close"], probe)
    image = (probe / "w.db").read_bytes()
    pos = image.rfind(b"n7\0")
    assert pos > 0
    log = Log((src / log_name(kind)).read_bytes(), False)
    log.txs[-1]["recs"].append(["range", pos - 40, (1 << 40).to_bytes(8, "little")])
    (d / log_name(kind)).write_bytes(log.bytes())
    before = digests(d)
    first = open_read_close(exes[kind], d)
    assert first.startswith("err EFORMAT") and "corrupt" in first, first
    assert digests(d) == before
    # and the unmodified log still replays (nothing was lost by the refusal)
    (d / log_name(kind)).write_bytes((src / log_name(kind)).read_bytes())
    first = open_read_close(exes[kind], d)
    assert first == "ok", first


def mutate(rnd: random.Random, log: Log, data_size: int) -> str:
    """One mutation of `log`, checksums to be recomputed: its name."""
    txs = log.txs
    ti = rnd.randrange(len(txs))
    tx = txs[ti]
    what = rnd.randrange(10)
    unit = 1 if not log.page else log.pgsize
    if what == 0 and tx["recs"]:                             # an offset anywhere
        r = rnd.choice(tx["recs"])
        r[1] = rnd.choice([data_size // unit, (1 << 36) // unit, rnd.randrange(max(1, 4 * data_size // unit)),
                           ((1 << OFF_BITS) - 1) // unit, r[1] + 1, max(0, r[1] - 1)])
        return "offset"
    if what == 1 and tx["recs"] and not log.page:            # a length
        r = rnd.choice(tx["recs"])
        n = rnd.choice([1, len(r[2]) + 8, 4096, 1 << 17, (1 << 18)])
        r[2] = (r[2] * (n // max(1, len(r[2])) + 1))[:n]
        return "length"
    if what == 2:                                            # a sequence number
        tx["seq"] += rnd.choice([-1, 1, 2, 1 << 40])
        return "seq"
    if what == 3:                                            # a commit's record count
        tx["npages"] = len(tx["recs"]) + rnd.choice([-1, 1, 5])
        return "npages"
    if what == 4 and tx["recs"]:                             # a record dropped
        del tx["recs"][rnd.randrange(len(tx["recs"]))]
        return "drop"
    if what == 5 and tx["recs"]:                             # a record duplicated
        r = rnd.choice(tx["recs"])
        tx["recs"].insert(rnd.randrange(len(tx["recs"]) + 1), list(r))
        return "duplicate"
    if what == 6:                                            # a transaction dropped
        del txs[ti]
        return "drop tx"
    if what == 7:                                            # a transaction duplicated
        txs.insert(ti, {"recs": [list(r) for r in tx["recs"]], "seq": tx["seq"], "npages": None})
        return "duplicate tx"
    if what == 8:                                            # the committed size
        size = rnd.choice([0, 4096, data_size // 2, data_size * 4, 1 << 36, (1 << 64) - 4096])
        b = struct.pack("<Q", size)
        if log.page:
            for r in tx["recs"]:
                if r[1] == 0:
                    r[2] = r[2][:FILE_SIZE_AT] + b + r[2][FILE_SIZE_AT + 8:]
                    return "size"
            tx["recs"].append(["page", 0, bytes(log.pgsize)[:FILE_SIZE_AT] + b + bytes(log.pgsize - FILE_SIZE_AT - 8)])
        else:
            tx["recs"].append(["range", FILE_SIZE_AT, b])
        return "size"
    # a record moved past the committed size, and the size raised to cover it
    far = rnd.choice([1 << 30, 1 << 36])
    b = struct.pack("<Q", far + (1 << 20))
    if log.page:
        tx["recs"].append(["page", far // log.pgsize, bytes(log.pgsize)])
    else:
        tx["recs"] += [["range", FILE_SIZE_AT, b], ["range", far, b"x" * 8]]
    return "size and offset"


@pytest.mark.parametrize("kind", ["wal", "journal"])
def test_mutated_logs_through_the_api(exes, sources, tmp_path, kind):
    src = sources[kind]
    base = Log((src / log_name(kind)).read_bytes(), kind == "journal")
    data_size = (src / "w.db").stat().st_size
    rnd = random.Random(20261206 + (kind == "journal"))
    seen = {}
    for i in range(LOG_MUTANTS):
        log = Log((src / log_name(kind)).read_bytes(), kind == "journal")
        names = [mutate(rnd, log, data_size) for _ in range(rnd.choice([1, 1, 2, 3]))]
        mutated = log.bytes()
        d = tmp_path / f"m{i}"
        place(src, d, kind, mutated)
        before = digests(d)
        first = open_read_close(exes[kind], d)
        seen[first.split(":")[0][:60]] = seen.get(first.split(":")[0][:60], 0) + 1
        if first != "ok":
            assert first.startswith("err"), (names, first)
            assert digests(d) == before, (names, first)
        else:
            # accepted: the file is no larger than the largest size some log committed
            # (the sizes in its header records) and never near the reservation
            assert (d / "w.db").stat().st_size < (1 << 30), (names, sizes(d))
        shutil.rmtree(d)
    assert len(base.txs) >= 3
    assert any(k.startswith("err") for k in seen) and "ok" in seen, seen


def test_verify_and_recover_apply_the_same_check(exes, sources, tmp_path, cc):
    """`p2gen verify` opens through the same replay: it refuses the crafted log with the
    files left byte-identical; `p2gen recover` keeps the transactions before the crafted
    record and drops it with those after it."""
    import subprocess
    from p2gen.harness import sanitizer_env
    from p2gen.recover import build_recoverer
    from p2gen.verify import build_verifier
    spec = tmp_path / "lm.p2"
    spec.write_text(SPEC)
    cache = tmp_path / "cache"
    vexe = build_verifier(str(spec), str(cache), "lm", cc, True, SAN_QUICK_FLAGS)
    rexe = build_recoverer(str(spec), str(cache), "lm", cc, True, SAN_QUICK_FLAGS)
    kind = "wal"
    src = sources[kind]
    log = Log((src / log_name(kind)).read_bytes(), False)
    n = len(log.txs)
    log.txs[n - 3]["recs"][0][1] = 1 << 35
    d = tmp_path / "db"
    place(src, d, kind, log.bytes())
    before = digests(d)
    proc = subprocess.run([vexe, str(d)], capture_output=True, text=True, env=sanitizer_env())
    assert "Sanitizer" not in proc.stderr and "runtime error" not in proc.stderr, proc.stderr
    assert proc.returncode != 0 and "beyond" in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    assert digests(d) == before
    proc = subprocess.run([rexe, str(d)], capture_output=True, text=True, env=sanitizer_env())
    assert "Sanitizer" not in proc.stderr and "runtime error" not in proc.stderr, proc.stderr
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "3 committed from the damage on are dropped" in proc.stdout, proc.stdout
    assert (d / "w.db").stat().st_size < (1 << 30)
    _, out = run_clean(exes[kind], ["open", "find items id 3", "close"], d)
    assert out[0] == "ok", out
