"""The server engines the page- and object-server layers run against, started on a free
loopback port and stopped by their pid: nbdkit (an NBD export: its `file` plugin over a
sparse file that a caller can read, reset or damage, or its `memory` plugin) and
redis-server (in memory only). Real engines, never mocks; shared by the tests
(tests/nbdkit.py, tests/redis.py) and `p2gen bench acob`.

NBD_MISSING and REDIS_MISSING say why an engine cannot run here (naming the Debian
package), or are None.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Optional


def _nbd_missing() -> Optional[str]:
    if shutil.which("nbdkit") is None:
        return "nbdkit is not installed (Debian package nbdkit: apt-get install nbdkit)"
    try:
        ctypes.CDLL("libnbd.so.0")
    except OSError:
        return "libnbd is not installed (Debian package libnbd0 / libnbd-dev: apt-get install libnbd-dev)"
    return None


def _redis_missing() -> Optional[str]:
    if shutil.which("redis-server") is None:
        return "redis-server is not installed (Debian package redis-server: apt-get install redis-server)"
    for name in ("libhiredis.so.0.14", "libhiredis.so.1.1.0", "libhiredis.so"):
        try:
            ctypes.CDLL(name)
            return None
        except OSError:
            pass
    return ("hiredis is not installed (Debian package libhiredis0.14 / libhiredis-dev: "
            "apt-get install libhiredis-dev)")


NBD_MISSING = _nbd_missing()
REDIS_MISSING = _redis_missing()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(proc: Optional[subprocess.Popen]) -> None:
    """SIGTERM to the engine's pid, SIGKILL if it has not exited within 10 s."""
    if proc is not None and proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()


class _Engine:
    """What both engines share: a process on a loopback port, launched and waited for
    until `_ready()` says it answers, stopped by its pid, paused (SIGSTOP) and resumed."""
    name = "engine"
    port: int
    proc: Optional[subprocess.Popen]

    def _ready(self) -> bool:
        raise NotImplementedError

    def _launch(self, args: list) -> None:
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited: {self.proc.stderr.read().decode()}")
            try:
                if self._ready():
                    return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"{self.name} did not answer on port {self.port}")

    def stop(self) -> None:
        _stop(self.proc)
        self.proc = None

    def pause(self) -> None:
        """Stop the server's process (SIGSTOP): a server that stalls."""
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.kill(self.proc.pid, signal.SIGCONT)


class NbdServer(_Engine):
    """nbdkit on 127.0.0.1:`port`: plugin "file" serves `image` (created sparse, `size`
    bytes); plugin "memory" serves `size` bytes of zeros held in the server (image unused),
    zeros again at every start; plugin "dir" serves every file of the directory `image`
    as the export of its name (nbdkit's file plugin, dir=), each created sparse, `size`
    bytes, by `reset(*names)`. `filters`: nbdkit filters (e.g. "delay"), whose parameters
    go in start's `extra`."""
    name = "nbdkit"

    def __init__(self, image: Optional[Path] = None, port: int = 0, size: int = 256 << 20,
                 filters: tuple = (), plugin: str = "file"):
        if plugin not in ("file", "memory", "dir"):
            raise ValueError(f"nbdkit plugin {plugin!r}: file, memory or dir")
        if plugin in ("file", "dir") and image is None:
            raise ValueError("nbdkit's file plugin needs an image")
        self.image = Path(image) if image is not None else None
        self.size, self.filters, self.plugin = size, filters, plugin
        self.port = port or free_port()
        self.proc = None
        if plugin == "file" and not self.image.exists():
            self.reset()

    def uri(self, export: str = "x") -> str:
        return f"nbd://127.0.0.1:{self.port}/{export}"

    def start(self, extra: tuple = ()) -> "NbdServer":
        args = ["nbdkit", "--exit-with-parent", "-f", "-p", str(self.port), "-i", "127.0.0.1"]
        for f in self.filters:
            args += ["--filter", f]
        if self.plugin == "file":
            args += ["file", str(self.image), *extra]
        elif self.plugin == "dir":
            self.image.mkdir(parents=True, exist_ok=True)
            args += ["file", f"dir={self.image}", *extra]
        else:
            args += ["memory", str(self.size), *extra]
        self._launch(args)
        return self

    def _ready(self) -> bool:
        socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
        return True

    def reset(self) -> None:
        """An export of zeros (an empty database), the same size (file plugin; the memory
        plugin's export is zeros at every start)."""
        if self.plugin == "memory":
            raise ValueError("reset: restart a memory export instead")
        if self.plugin == "dir":
            raise ValueError("reset: a directory's exports are reset by reset_exports(names)")
        with open(self.image, "wb") as f:
            f.truncate(self.size)

    def reset_exports(self, *names: str) -> None:
        """Plugin "dir": the exports `names`, zeros, `size` bytes each."""
        self.image.mkdir(parents=True, exist_ok=True)
        for name in names:
            with open(self.image / name, "wb") as f:
                f.truncate(self.size)


class RedisServer(_Engine):
    """redis-server on 127.0.0.1:`port`, in memory only (no RDB, no AOF), its working
    directory `workdir`."""
    name = "redis-server"

    def __init__(self, workdir: Path, port: int = 0):
        self.workdir = Path(workdir)
        self.port = port or free_port()
        self.proc = None

    def uri(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def start(self) -> "RedisServer":
        self.workdir.mkdir(parents=True, exist_ok=True)
        args = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
                "--save", "", "--appendonly", "no", "--dir", str(self.workdir),
                "--daemonize", "no", "--loglevel", "warning"]
        self._launch(args)
        return self

    def _ready(self) -> bool:
        return self.command("PING") == b"+PONG"

    def command(self, *args: str) -> bytes:
        """One command in the Redis protocol; the first line of the answer (enough for
        FLUSHALL, DEL, PING, DBSIZE, HLEN, SET)."""
        req = f"*{len(args)}\r\n".encode() + b"".join(
            f"${len(a.encode())}\r\n".encode() + a.encode() + b"\r\n" for a in args)
        with socket.create_connection(("127.0.0.1", self.port), timeout=2) as s:
            s.sendall(req)
            buf = b""
            while b"\r\n" not in buf:
                chunk = s.recv(4096)
                if not chunk:
                    break
                buf += chunk
        return buf.split(b"\r\n", 1)[0]

    def flush(self) -> None:
        """Every database empty: no p2gen database, no lock."""
        assert self.command("FLUSHALL") == b"+OK"

