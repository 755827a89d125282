"""An NFS server for the file-server tests: the real engine (NFS-Ganesha 4.3 with its VFS
backend, NFSv3, exporting a temporary directory), with rpcbind, both inside a private
network namespace of their own (rpcbind listens on every address; libnfs reaches it on
127.0.0.1 inside that namespace). The client programs run in the same namespace
(`server.wrap(argv)`); everything is stopped by pid. The start and stop live in
p2gen.bench.engines (bench/engines.py), which `p2gen bench acob` shares.

ENGINE_MISSING says why the tests cannot run here (not root, no namespace, a Debian
package missing, naming it), or is None.
"""
from p2gen.bench.engines import NFS_MISSING as ENGINE_MISSING, NfsServer

__all__ = ["ENGINE_MISSING", "NfsServer"]
