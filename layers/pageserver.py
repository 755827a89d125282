import re

from .base import MemLayer, ParamSpec
from .persistent import ALLOC_PARAM, Persistent, explain_alloc

# The server URIs the runtime serves (runtime/src/backend.c, backend_uri_ok: the same rules)
NBD_URI = re.compile(r"nbd://(?P<host>[^/:]+)(?::(?P<port>[0-9]+))?(?:/(?P<export>.*))?\Z")
FILE_URI = re.compile(r"file:///.+\Z")
# a file of an NFSv3 export (libnfs finds the ports through the host's rpcbind: no port)
NFS_URI = re.compile(r"nfs://(?P<host>[^/:?]+)(?P<path>/[^?]*)\Z")


def nfs_uri_problem(uri: str):
    """What is wrong with an nfs:// URI, or None (backend.c, nfs_uri_parse: the same rules)."""
    if re.match(r"nfs://[^/]*:", uri):
        return ("a port: libnfs finds the NFS and mount ports through the host's rpcbind "
                "(port 111): nfs://HOST/EXPORT/FILE")
    m = NFS_URI.match(uri)
    if m is None:
        return "not an NFS URI: nfs://HOST/EXPORT/FILE"
    export, _, file = m.group("path").rpartition("/")
    if not export or not file:
        return "no export and file: nfs://HOST/EXPORT/FILE"
    return None


def uri_problem(uri: str):
    """What is wrong with a `server = ...` URI, or None."""
    if FILE_URI.match(uri):
        return None
    if uri.startswith("nfs://"):
        return nfs_uri_problem(uri)
    m = NBD_URI.match(uri)
    if m is None:
        return ("not a server URI: nbd://HOST[:PORT][/EXPORT], nfs://HOST/EXPORT/FILE "
                "(or file:///PATH)")
    port = m.group("port")
    if port is not None and not 1 <= int(port) <= 65535:
        return f"port {port} is not a number from 1 to 65535"
    return None


class PageServer(MemLayer):
    """pageserver: mem. The database's bytes on a server -- an NBD export (nbdkit,
    qemu-nbd, nbd-server) reached with libnbd, or a file of an NFSv3 export (the paper's
    file server: NFS-Ganesha) reached with libnfs -- behind a client buffer of `pages` frames of
    `page` bytes, as the page server of DeWitt, Futtersack, Maier and Velez: the layers
    above fault pages in on first touch (userfaultfd, else a SIGSEGV handler), the clock picks what to evict,
    a dirty victim is written back first, and sync and close write back every dirty page
    (several requests in flight) and flush the server (runtime/p2_runtime.h, section
    server). The format, the allocator and the references are `persistent`'s (offsets from
    the base), so the code generated above it is persistent's, unchanged."""
    name = "pageserver"
    below = None
    file_param = "server"
    file_is_uri = True          # the server's URI: not a path, never joined to open's dir
    reserve_param = "reserve"
    verify_open_param = "verify_open"
    alloc_param = "alloc"
    survives_restart = True     # references are offsets, as in persistent
    log_param = "log"           # a journal or wal above logs on this export (section 9.5)
    seg_allocator = True
    maps_anywhere = True
    # the export is full, or the server failed (every call fails once it has)
    errors = {"alloc": {"P2_ENOMEM", "P2_EIO"}}
    params = (
        ParamSpec("server", "str",
                  doc="the server: nbd://HOST[:PORT][/EXPORT] (an NBD export: nbdkit, "
                      "qemu-nbd, nbd-server; libnbd, the Debian package libnbd0, is loaded "
                      "at open), nfs://HOST/EXPORT/FILE (the file server: a file of an "
                      "NFSv3 export, NFS-Ganesha; libnfs, the Debian package libnfs13, is "
                      "loaded at open; the ports come from the host's rpcbind) or "
                      "file:///PATH (a local file through the same buffer, for "
                      "comparisons). An export of zeros, or a missing NFS file, is empty: "
                      "open creates the database there"),
        ParamSpec("pages", "int", 1024, min=2, max=1 << 24, fuzz=(2, 64),
                  doc="frames of the client buffer: at most this many pages are in memory "
                      "at once; touching another evicts one (clock replacement)"),
        ParamSpec("page", "int", 4096, min=4096, max=8192,
                  doc="bytes of a page, the unit of faults, frames and requests: 4096 or "
                      "8192"),
        ParamSpec("reserve", "int", 1 << 36, min=1 << 20, max=Persistent.params[1].max,
                  fuzz=(1 << 20, 1 << 30),
                  doc="the most bytes the database may use (an NBD export's size lowers "
                      "it: an export does not grow)"),
        ALLOC_PARAM,
        ParamSpec("log", "str", "", show_default=False,
                  doc="a second export (same forms as `server`) for the transactions of a "
                      "`journal` or `wal` stacked on this layer: the writer's lease and "
                      "the last commit's record, written and flushed before the pages go "
                      "back to `server`; required under a journal or wal, refused without "
                      "one"),
        ParamSpec("ship", "choice", "pages", choices=("pages", "ranges"),
                  doc="what goes back to the server: `pages`, every dirty page whole; "
                      "`ranges`, the hybrid the paper calls the naive ideal: pages are read "
                      "whole, but a dirty page goes back as the byte ranges the layers "
                      "announced writing (their write-intent notices), coalesced"),
        ParamSpec("writes", "choice", "unstable", choices=("unstable", "sync"),
                  doc="how an nfs:// server's writes are made durable: `unstable`, NFS "
                      "UNSTABLE writes and one COMMIT at each sync or commit (the default: "
                      "what a write-back buffer needs); `sync`, the paper's file server: "
                      "every write FILE_SYNC, durable before the server answers, and no "
                      "COMMIT. Only for nfs:// servers"),
        ParamSpec("verify_open", "bool", True,
                  doc="walk the whole database with <prefix>_verify when open finds one on "
                      "the server, and refuse it if damaged (every page is read once)"),
    )
    doc = ("A database on a page server: an NBD export behind a client buffer of `pages` "
           "frames (faults on first touch, clock replacement, write-back of dirty pages "
           "on eviction, sync and close). References are offsets, as in persistent; the "
           "header, its checks and the integrity check at open are persistent's.")

    def validate(self, inst, ctx):
        uri = inst.params["server"]
        why = uri_problem(uri)
        if why is not None:
            ctx.error(f"pageserver(server = \"{uri}\"): {why}", inst.param_pos("server"))
        log = inst.params["log"]
        why = uri_problem(log) if log else None
        if why is not None:
            ctx.error(f"pageserver(log = \"{log}\"): {why}", inst.param_pos("log"))
        elif log and log == uri:
            ctx.error(f"pageserver(log = \"{log}\"): the log needs an export of its own, "
                      f"not the database's", inst.param_pos("log"))
        if inst.params["writes"] == "sync" and not uri.startswith("nfs://"):
            ctx.error(f"pageserver(writes = sync): synchronous writes are an NFS server's "
                      f"(nfs://HOST/EXPORT/FILE), not \"{uri}\"'s", inst.param_pos("writes"))
        if inst.params["page"] not in (4096, 8192):
            ctx.error(f"pageserver(page = {inst.params['page']}): a page is 4096 or 8192 bytes",
                      inst.param_pos("page"))

    def explain_file(self, inst):
        back = ("the announced byte ranges of each dirty page" if inst.params["ship"] == "ranges"
                else "dirty pages whole")
        return (f"client buffer of {inst.params['pages']} pages of {inst.params['page']} bytes "
                f"(faults on first touch, clock replacement, write-back of {back}); "
                f"{explain_alloc(inst)}")
