"""A Redis server for the object-server tests: the real engine (Debian's redis-server,
nothing saved to disk), started on a free loopback port and stopped by its pid. Never a
mock.

ENGINE_MISSING says why the tests cannot run here (naming the Debian package), or is None.
"""
from __future__ import annotations

import ctypes
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from nbdkit import free_port


def _missing():
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


ENGINE_MISSING = _missing()


class RedisServer:
    """redis-server on 127.0.0.1:`port`, in memory only (no RDB, no AOF), its working
    directory `workdir`."""

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
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"redis-server exited: {self.proc.stderr.read().decode()}")
            try:
                if self.command("PING") == b"+PONG":
                    return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"redis-server did not answer on port {self.port}")

    def command(self, *args: str) -> bytes:
        """One command in the Redis protocol; the first line of the answer (enough for the
        tests' FLUSHALL, DEL, PING, DBSIZE, HLEN, SET)."""
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

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.proc = None

    def pause(self) -> None:
        """Stop the server's process (SIGSTOP): a server that stalls."""
        os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.kill(self.proc.pid, signal.SIGCONT)
