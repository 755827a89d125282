"""An NBD server for the page-server tests: the real engine (nbdkit, its `file` plugin
over a sparse file, so that a test can read, reset or damage the image), started on a free
loopback port and stopped by its pid. Never a mock.

ENGINE_MISSING says why the tests cannot run here (naming the Debian package), or is None.
"""
from __future__ import annotations

import ctypes.util
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path


def _missing():
    if shutil.which("nbdkit") is None:
        return "nbdkit is not installed (Debian package nbdkit: apt-get install nbdkit)"
    try:
        ctypes.CDLL("libnbd.so.0")
    except OSError:
        return "libnbd is not installed (Debian package libnbd0 / libnbd-dev: apt-get install libnbd-dev)"
    return None


ENGINE_MISSING = _missing()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class NbdServer:
    """nbdkit serving `image` (created sparse, `size` bytes) on 127.0.0.1:`port`."""

    def __init__(self, image: Path, port: int = 0, size: int = 256 << 20, filters: tuple = ()):
        self.image, self.size, self.filters = Path(image), size, filters
        self.port = port or free_port()
        self.proc = None
        if not self.image.exists():
            self.reset()

    def uri(self, export: str = "x") -> str:
        return f"nbd://127.0.0.1:{self.port}/{export}"

    def start(self, extra: tuple = ()) -> "NbdServer":
        args = ["nbdkit", "--exit-with-parent", "-f", "-p", str(self.port), "-i", "127.0.0.1"]
        for f in self.filters:
            args += ["--filter", f]
        args += ["file", str(self.image), *extra]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"nbdkit exited: {self.proc.stderr.read().decode()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"nbdkit did not listen on port {self.port}")

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

    def reset(self) -> None:
        """An export of zeros (an empty database), the same size."""
        with open(self.image, "wb") as f:
            f.truncate(self.size)
