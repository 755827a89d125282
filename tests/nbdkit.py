"""An NBD server for the page-server tests: the real engine (nbdkit, its `file` plugin
over a sparse file, so that a test can read, reset or damage the image), started on a free
loopback port and stopped by its pid. Never a mock. The start and stop live in
p2gen.bench.engines (bench/engines.py), which `p2gen bench acob` shares.

ENGINE_MISSING says why the tests cannot run here (naming the Debian package), or is None.
"""
from p2gen.bench.engines import NBD_MISSING as ENGINE_MISSING, NbdServer, free_port

__all__ = ["ENGINE_MISSING", "NbdServer", "free_port"]
