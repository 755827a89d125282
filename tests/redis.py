"""A Redis server for the object-server tests: the real engine (Debian's redis-server,
nothing saved to disk), started on a free loopback port and stopped by its pid. Never a
mock. The start and stop live in p2gen.bench.engines (bench/engines.py), which
`p2gen bench acob` shares.

ENGINE_MISSING says why the tests cannot run here (naming the Debian package), or is None.
"""
from p2gen.bench.engines import REDIS_MISSING as ENGINE_MISSING, RedisServer

__all__ = ["ENGINE_MISSING", "RedisServer"]
