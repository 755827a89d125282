"""The server engines the page- and object-server layers run against, started on a free
loopback port and stopped by their pid: nbdkit (an NBD export: its `file` plugin over a
sparse file that a caller can read, reset or damage, or its `memory` plugin) and
redis-server (in memory only), and NFS-Ganesha (an NFSv3 export of a directory, with
rpcbind, both inside a private network namespace). Real engines, never mocks; shared by
the tests (tests/nbdkit.py, tests/redis.py, tests/nfs.py) and `p2gen bench acob`.

NBD_MISSING, REDIS_MISSING and NFS_MISSING say why an engine cannot run here (naming the
Debian package), or are None.
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


def _nfs_missing() -> Optional[str]:
    for tool, package in (("ganesha.nfsd", "nfs-ganesha"), ("rpcbind", "rpcbind"),
                          ("rpcinfo", "rpcbind"), ("unshare", "util-linux"),
                          ("nsenter", "util-linux"), ("ip", "iproute2")):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (Debian package {package}: apt-get install {package})"
    if not any(Path(d, "libfsalvfs.so").exists() for d in ("/usr/lib/x86_64-linux-gnu/ganesha",
                                                          "/usr/lib/aarch64-linux-gnu/ganesha",
                                                          "/usr/lib/ganesha", "/usr/lib64/ganesha")):
        return ("NFS-Ganesha's VFS backend is not installed (Debian package nfs-ganesha-vfs: "
                "apt-get install nfs-ganesha-vfs)")
    try:
        ctypes.CDLL("libnfs.so.13")
    except OSError:
        return "libnfs is not installed (Debian package libnfs13 / libnfs-dev: apt-get install libnfs-dev)"
    if os.geteuid() != 0:
        return ("the NFS server runs in a private network namespace, which needs root "
                "(rpcbind listens on every address, so never on the host's)")
    if subprocess.run(["unshare", "-n", "-m", "true"], capture_output=True).returncode != 0:
        return "no private network namespace here (unshare -n -m fails: a container without CAP_SYS_ADMIN?)"
    return None


NBD_MISSING = _nbd_missing()
REDIS_MISSING = _redis_missing()
NFS_MISSING = _nfs_missing()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(proc: Optional[subprocess.Popen], timeout: float = 10) -> None:
    """SIGCONT (a test may have paused it) and SIGTERM to the engine's pid, SIGKILL if it
    has not exited within `timeout` seconds."""
    if proc is not None and proc.poll() is None:
        os.kill(proc.pid, signal.SIGCONT)
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL when the process that started it dies (a test
    run interrupted leaves no namespace, rpcbind or Ganesha behind)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL)      # PR_SET_PDEATHSIG


def _pause(proc: subprocess.Popen) -> None:
    """SIGSTOP to the engine, returned once every thread of it is stopped (state T): the
    stop is asynchronous, and a test's next request must find the server stalled."""
    os.kill(proc.pid, signal.SIGSTOP)
    deadline = time.monotonic() + 10
    while True:
        states = set()
        for task in Path(f"/proc/{proc.pid}/task").iterdir():
            try:    # "pid (comm) S ...": the state follows the last ")"
                states.add((task / "stat").read_text().rsplit(")", 1)[1].split()[0])
            except (FileNotFoundError, ProcessLookupError):
                pass       # a thread that exited meanwhile
        if states <= {"T", "t"}:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"pid {proc.pid} not stopped 10 s after SIGSTOP (threads in {sorted(states)})")
        time.sleep(0.005)


class _Engine:
    """What both engines share: a process on a loopback port, launched and waited for
    until `_ready()` says it answers, stopped by its pid, paused (SIGSTOP) and resumed."""
    name = "engine"
    port: int
    proc: Optional[subprocess.Popen]

    def _ready(self) -> bool:
        raise NotImplementedError

    def _launch(self, args: list) -> None:
        # a session of its own: the kernel continues a stopped process group that becomes
        # orphaned (SIGHUP, SIGCONT), which would end a test's pause() early
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     start_new_session=True, preexec_fn=_die_with_parent)
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
        _pause(self.proc)

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



GANESHA_CONF = """# NFS-Ganesha for p2gen: NFSv3 only, one export of a directory, VFS backend
NFS_CORE_PARAM {{
    Protocols = 3;
    NFS_Port = {port};
    Mount_Path_Pseudo = true;     # NFSv3 mounts name the pseudo path (/export)
    Enable_NLM = false;
    Enable_RQUOTA = false;
}}
NFSV4 {{ Graceless = true; }}
EXPORT {{
    Export_Id = 1;
    Path = {path};
    Pseudo = /export;
    Protocols = 3;
    Transports = TCP;
    Access_Type = RW;
    Squash = No_Root_Squash;
    SecType = sys;
    FSAL {{ Name = VFS; }}
}}
"""


class NfsServer:
    """NFS-Ganesha exporting the directory `root` (as /export, NFSv3 over TCP) inside a
    private network and mount namespace of its own, with an rpcbind there (libnfs finds
    the ports through it; rpcbind listens on every address and keeps a lock file in /run,
    so each server gets its own namespace and /run). The client programs must run in the
    same namespace: `wrap(argv)` gives the command that does (nsenter). Stopped by pid;
    `pause()` stops Ganesha (SIGSTOP): a server that stalls."""
    name = "ganesha.nfsd"

    def __init__(self, root: Path, port: int = 2049):
        self.root = Path(root)
        self.port = port          # the namespace is private: the standard port is free
        self.holder = self.rpcbind = self.proc = None

    def uri(self, file: str = "db") -> str:
        return f"nfs://127.0.0.1/export/{file}"

    def path(self, file: str = "db") -> Path:
        """The exported file behind uri(file), as the server's disk holds it."""
        return self.root / "export" / file

    def wrap(self, argv: list) -> list:
        """argv run inside the server's network namespace."""
        return ["nsenter", "-t", str(self.holder.pid), "-n", "--", *map(str, argv)]

    def _in_ns(self, argv: list, mount: bool = False, **kw) -> subprocess.Popen:
        ns = ["-n", "-m"] if mount else ["-n"]
        return subprocess.Popen(["nsenter", "-t", str(self.holder.pid), *ns, "--", *argv],
                                preexec_fn=_die_with_parent, start_new_session=True, **kw)

    def start(self) -> "NfsServer":
        (self.root / "export").mkdir(parents=True, exist_ok=True)
        conf = self.root / "ganesha.conf"
        conf.write_text(GANESHA_CONF.format(port=self.port, path=self.root / "export"))
        self.holder = subprocess.Popen(["unshare", "-n", "-m", "--propagation", "private",
                                        "sleep", "infinity"], preexec_fn=_die_with_parent,
                                       start_new_session=True)
        try:
            mine = os.readlink("/proc/self/ns/net")
            deadline = time.monotonic() + 10
            while os.readlink(f"/proc/{self.holder.pid}/ns/net") == mine:
                if time.monotonic() > deadline or self.holder.poll() is not None:
                    raise RuntimeError("unshare did not make a network namespace")
                time.sleep(0.01)
            for argv in (["ip", "link", "set", "lo", "up"], ["mount", "-t", "tmpfs", "p2gen-run", "/run"]):
                if self._in_ns(argv, mount=True, stderr=subprocess.PIPE).wait(timeout=10) != 0:
                    raise RuntimeError(f"cannot {' '.join(argv)} in the NFS server's namespace")
            self.rpcbind = self._in_ns(["rpcbind", "-f", "-w"], mount=True,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            self._wait(["rpcinfo", "-T", "tcp", "127.0.0.1", "portmapper"], self.rpcbind, "rpcbind")
            self.proc = self._in_ns(["ganesha.nfsd", "-F", "-f", str(conf), "-L", str(self.root / "ganesha.log"),
                                     "-p", str(self.root / "ganesha.pid"), "-N", "NIV_WARN"],
                                    mount=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            self._wait(["rpcinfo", "-T", "tcp", "127.0.0.1", "nfs", "3"], self.proc, "ganesha.nfsd")
        except BaseException:
            self.stop()
            raise
        return self

    def _wait(self, probe: list, proc: subprocess.Popen, name: str) -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                log = self.root / "ganesha.log"
                raise RuntimeError(f"{name} exited: {proc.stderr.read().decode()}"
                                   f"{log.read_text()[-2000:] if log.exists() else ''}")
            if self._in_ns(probe, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).wait(timeout=10) == 0:
                return
            time.sleep(0.1)
        raise RuntimeError(f"{name} did not answer in its namespace")

    def stop(self) -> None:
        """Ganesha, rpcbind, then the namespace's holder: each by its pid."""
        for p in (self.proc, self.rpcbind, self.holder):
            _stop(p, timeout=5)
        self.proc = self.rpcbind = self.holder = None

    def pause(self) -> None:
        _pause(self.proc)

    def resume(self) -> None:
        os.kill(self.proc.pid, signal.SIGCONT)

    def remove(self, *files: str) -> None:
        """The exported files `files` gone: the next open creates an empty database."""
        for f in files:
            self.path(f).unlink(missing_ok=True)
