import re

from .base import MemLayer, ParamSpec
from .persistent import ALLOC_PARAM, Persistent, explain_alloc

# The URIs the runtime serves an object server from (runtime/src/backend.c,
# redis_uri_parse: the same rules)
REDIS_URI = re.compile(r"redis://(?P<host>[^/:]+)(?::(?P<port>[0-9]+))?(?:/(?P<db>[^/]*))?\Z")


def uri_problem(uri: str):
    """What is wrong with an `objserver(server = ...)` URI, or None."""
    m = REDIS_URI.match(uri)
    if m is None:
        return "not a Redis URI: redis://HOST[:PORT][/DB]"
    port = m.group("port")
    if port is not None and not 1 <= int(port) <= 65535:
        return f"port {port} is not a number from 1 to 65535"
    db = m.group("db")
    if db and not db.isdigit():
        return f"database '{db}' is not a number: redis://HOST[:PORT][/DB]"
    return None


class ObjServer(MemLayer):
    """objserver: mem. The database's blocks on a Redis server, one key per allocator
    block (an object), behind a client cache of `objects` objects, as the object server of
    DeWitt, Futtersack, Maier and Velez: `_ptr` looks the block up in the cache (a
    software check) and fetches it on a miss; writes are known from the write-intent
    notices; sync and close ship every dirty object in one MULTI ... EXEC
    (runtime/p2_runtime.h, section objserver). The format, the allocator and the
    references are persistent's (offsets), so the layers above are persistent's; only
    storage that gives each element its own block (malloc) is taken."""
    name = "objserver"
    below = None
    file_param = "server"
    file_is_uri = True          # the server's URI: not a path, never joined to open's dir
    reserve_param = "reserve"
    verify_open_param = "verify_open"
    alloc_param = "alloc"
    survives_restart = True     # references are offsets, as in persistent
    seg_allocator = True
    maps_anywhere = True
    write_intent = True         # every write is announced: it is how a block turns dirty
    call_enter = "p2_obj_enter"  # the API unpins the cache on entry
    transactions = True         # <prefix>_begin, _commit, _abort: optimistic,
    several_clients = True      # so several clients at once (no lock, no P2_EBUSY)
    block_per_element = True    # the unit is the block: malloc storage only
    # out of reserved memory, or the server failed (every call fails once it has)
    errors = {"alloc": {"P2_ENOMEM", "P2_EIO"}}
    params = (
        ParamSpec("server", "str",
                  doc="the server: redis://HOST[:PORT][/DB] (a Redis server and the number "
                      "of one of its databases, 0 by default; hiredis, the Debian package "
                      "libhiredis0.14, is loaded at open). A database with no p2:meta key "
                      "is empty: open creates the database there"),
        ParamSpec("objects", "int", 4096, min=1, max=1 << 24, fuzz=(1, 64),
                  doc="objects of the client cache: at most this many blocks are in memory "
                      "between calls into the API (those a call touches stay until the "
                      "next call); touching another evicts one (clock replacement)"),
        ParamSpec("bundle", "int", 0, min=0, max=64, fuzz=(0, 8),
                  doc="bundling: each miss also fetches, in the same request (one MGET), "
                      "up to this many allocation neighbours after the missed block (at "
                      "the stride of the last block fetched: a container's elements "
                      "allocated in turn) that the server holds and the client does not; "
                      "0: one GET per miss"),
        ParamSpec("reserve", "int", 1 << 32, min=1 << 20, max=Persistent.params[1].max,
                  fuzz=(1 << 20, 1 << 30),
                  doc="the most bytes the database may use (default 4 GiB)"),
        ALLOC_PARAM,
        ParamSpec("verify_open", "bool", True,
                  doc="walk the whole database with <prefix>_verify when open finds one on "
                      "the server, and refuse it if damaged (every object is fetched once)"),
    )
    doc = ("A database on an object server: every allocator block a Redis key, behind a "
           "client cache of `objects` objects (fetched on a miss, clock replacement, "
           "write-back of a dirty victim; sync and close ship the dirty blocks in one "
           "MULTI ... EXEC). References are offsets, as in persistent; the header, its "
           "checks and the integrity check at open are persistent's. Only malloc storage "
           "(one block per element) is taken under it.")

    def validate(self, inst, ctx):
        uri = inst.params["server"]
        why = uri_problem(uri)
        if why is not None:
            ctx.error(f"objserver(server = \"{uri}\"): {why}", inst.param_pos("server"))
        st = inst.container.storage
        if self.block_per_element and not st.layer.addressed_refs:
            ctx.error(f"objserver's unit is the allocator block, but storage '{st.name}' of "
                      f"container '{inst.container.name}' keeps the whole container in one "
                      f"block (every element would travel with each one): use malloc storage "
                      f"(one block per element) over objserver", st.pos)

    def explain_file(self, inst):
        return (f"client cache of {inst.params['objects']} objects (one per allocator block, "
                f"fetched on a miss, clock replacement, dirty ones shipped at sync in one "
                f"MULTI ... EXEC); {explain_alloc(inst)}")
