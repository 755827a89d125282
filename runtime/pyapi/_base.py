"""p2gen.runtime.pyapi: constants every part reads: the return codes, NOREF, the fast module's API level."""
from __future__ import annotations

from ..codes import CODES


# The return codes, one module constant per row of their table (P2_ERROR_LIST in
# p2_runtime.h, read by p2gen.runtime.codes): P2_OK = 0, P2_END = 1, ..., P2_ECONFLICT = 12.
globals().update((c.name, c.value) for c in CODES)
NOREF = (1 << 64) - 1    # <prefix>_NOREF: a ref field or one-role naming no element
NOREF32 = (1 << 32) - 1  # <prefix>_NOREF32: the same in a ref field over 32-bit links
FAST_API = 6              # the C paths' module this layer drives (generator/pyfast.API)
_MISSING = object()   # no value: find() without a positional one (None is a ref key's
                      # none), a field without a default
TEXT_MAX = 1 << 40        # the generated set_<text> refuses texts this long (P2_ERANGE)
