"""The byte model: the size of the reference variant's files (SEGMENTED,
type_equations/labflow/segmented.p2) as the log's writes make them grow. The generator
places the cut points with it and the reference model (model.py) recomputes it from the
same writes, without a build of the variant [choice].

The files grow in steps, not in proportion to the records: every slot block doubles when it
fills (an array copies itself elsewhere and frees its old block unless it is last in the
file), the hash layers' bucket arrays double, and freed blocks are handed out again to later
blocks and texts. So this follows the writes through the same allocator the persistent
runtime has (runtime/p2_runtime.c, section 4.3: exact 16-byte classes up to 2,048 bytes cut
from free 4 KiB pieces or taken at the end, first-fit address-ordered large blocks with
coalescing, in-place growth at the end or into a free neighbour, files grown by 1/32 of
their size in 64 KiB granules) and the same layers (iarray: slot = oid, growing to double;
array: grows to double when full; hash: buckets doubled past one element per bucket, the new
array allocated before the old one is freed). It keeps offsets and sizes only, no contents.

ELEM_* and ROOT_* are the generated variant's sizes (sizeof the elements and roots);
tests/bench/test_labflow_bench.py replays the variant and holds its files to the spec's 10 % of
the budget at the cut points, so a layout change that would move them fails there.
"""
from __future__ import annotations

import bisect

HEADER = 4096               # P2_SEG_HEADER_SIZE
GRANULE = 64 << 10          # P2_SEG_GRANULE
GROW_SHIFT = 5              # SEG_GROW_SHIFT: a file grows by 1/32 of its mapped size
CLASS = 16                  # SEG_ALIGN: exact small classes are multiples of 16
SMALL_MAX = 2048
PIECE = 4096                # LARGE_UNIT: large blocks are multiples of it; small ones are cut from it
CLASS_TABLE = 128 * 8       # the exact classes' free-list heads, first block of the file

INITIAL_SLOTS = 4096        # capacity = 4096 in the equations
INITIAL_BUCKETS = 4096      # buckets = 4096
BUCKET = 4                  # a 32-bit link (links = offset32)
DICT_SLOTS = 64
ELEM_MATERIAL = 72          # record 40 B + name hash link + (state, oid) AVL links + slot flag
ELEM_STEP = 40              # record 32 B (the payload a 32-bit text handle) + slot flag
ELEM_INVOLVES = 40          # record 16 B + (mat, when) AVL links + step hash link + slot flag
ELEM_LATEST = 20            # record 12 B + (mat, kind) hash link + slot flag
ELEM_DICT = 36              # dict_kind, dict_attr
# roots in the order of the spec's containers in each file
ROOTS_HOT = (48, 56, 48, 24, 24)   # materials, involves_rows, latests, dict_kinds, dict_attrs
ROOTS_COLD = (16,)                 # steps


def _round(n: int, unit: int) -> int:
    return -(-n // unit) * unit


def block_size(size: int) -> int:
    """The block a request of `size` bytes takes (exact classes)."""
    return max(CLASS, _round(size, CLASS)) if size <= SMALL_MAX else _round(size, PIECE)


class Segment:
    """One persistent file's allocator: its end (brk), mapped size and free blocks."""

    def __init__(self) -> None:
        self.mapped = 0
        self.brk = HEADER
        self.free_off: list[int] = []       # address-ordered large free blocks
        self.free_size: list[int] = []
        self.small: dict[int, int] = {}     # free small blocks per class size
        self._grow(HEADER)
        self._brk_take(CLASS_TABLE)

    # -- the file's end ----------------------------------------------------------------
    def _grow(self, need: int) -> None:
        if need <= self.mapped:
            return
        step = max(self.mapped >> GROW_SHIFT, GRANULE)
        self.mapped = _round(need + step, GRANULE)

    def _brk_take(self, bs: int) -> int:
        off = self.brk
        self._grow(off + bs)
        self.brk = off + bs
        return off

    # -- large blocks ------------------------------------------------------------------
    def _large_take(self, bs: int) -> int:
        """First fit; the tail of a bigger block. 0: none big enough."""
        for i, size in enumerate(self.free_size):
            if size >= bs:
                off = self.free_off[i]
                if size == bs:
                    del self.free_off[i], self.free_size[i]
                    return off
                self.free_size[i] = size - bs
                return off + size - bs
        return 0

    def _large_release(self, off: int, bs: int) -> None:
        i = bisect.bisect_left(self.free_off, off)
        if i < len(self.free_off) and off + bs == self.free_off[i]:
            bs += self.free_size[i]
            del self.free_off[i], self.free_size[i]
        if i > 0 and self.free_off[i - 1] + self.free_size[i - 1] == off:
            self.free_size[i - 1] += bs
        else:
            self.free_off.insert(i, off)
            self.free_size.insert(i, bs)

    def _take_at(self, at: int, extra: int) -> bool:
        i = bisect.bisect_left(self.free_off, at)
        if i == len(self.free_off) or self.free_off[i] != at or self.free_size[i] < extra:
            return False
        if self.free_size[i] == extra:
            del self.free_off[i], self.free_size[i]
        else:
            self.free_off[i] += extra
            self.free_size[i] -= extra
        return True

    # -- the allocator's API -----------------------------------------------------------
    def alloc(self, size: int) -> int:
        bs = block_size(size)
        if bs <= SMALL_MAX:
            if self.small.get(bs):
                self.small[bs] -= 1
                return -1                   # a recycled small block: its offset is not needed
            chunk = self._large_take(PIECE)
            if chunk:
                fit = PIECE // bs * bs
                if fit < PIECE:
                    self.small[PIECE - fit] = self.small.get(PIECE - fit, 0) + 1
                self.small[bs] = self.small.get(bs, 0) + fit // bs - 1
                return chunk
            return self._brk_take(bs)
        return self._large_take(bs) or self._brk_take(bs)

    def free(self, off: int, size: int) -> None:
        bs = block_size(size)
        if bs <= SMALL_MAX:
            self.small[bs] = self.small.get(bs, 0) + 1
        else:
            self._large_release(off, bs)

    def realloc(self, off: int, old: int, new: int) -> int:
        """A large block grown (the only kind this workload grows)."""
        ob, nb = block_size(old), block_size(new)
        if nb == ob:
            return off
        if ob > SMALL_MAX:
            end = off + ob
            if end == self.brk:
                self._grow(off + nb)
                self.brk = off + nb
                return off
            if self._take_at(end, nb - ob):
                return off
        moved = self.alloc(new)
        self.free(off, old)
        return moved


class _Slots:
    """A slot block (array, iarray, a dictionary's array) and optionally a hash layer's
    buckets over it."""

    def __init__(self, seg: Segment, elem: int, cap: int, hashed: bool) -> None:
        self.seg, self.elem, self.cap, self.count = seg, elem, cap, 0
        self.off = seg.alloc(cap * elem)
        self.nbuckets = INITIAL_BUCKETS if hashed else 0
        self.buckets = seg.alloc(self.nbuckets * BUCKET) if hashed else 0

    def insert(self, slot: int | None = None) -> None:
        """One element: at `slot` (iarray: the key) or appended (array)."""
        need = self.count if slot is None else slot
        if need >= self.cap:
            ncap = max(2 * self.cap, need + 1)
            self.off = self.seg.realloc(self.off, self.cap * self.elem, ncap * self.elem)
            self.cap = ncap
        self.count += 1
        if self.nbuckets and self.count > self.nbuckets:
            fresh = self.seg.alloc(2 * self.nbuckets * BUCKET)
            self.seg.free(self.buckets, self.nbuckets * BUCKET)
            self.buckets, self.nbuckets = fresh, 2 * self.nbuckets


class ReferenceFiles:
    """The reference variant's two files, fed the log's writes in order; `size()` is the
    sum of their sizes."""

    def __init__(self) -> None:
        self.hot, self.cold = Segment(), Segment()
        for r in ROOTS_HOT:
            self.hot.alloc(r)
        for r in ROOTS_COLD:
            self.cold.alloc(r)
        # each container's create, in the spec's order: the slot block, then the buckets
        self.materials = _Slots(self.hot, ELEM_MATERIAL, INITIAL_SLOTS, True)
        self.steps = _Slots(self.cold, ELEM_STEP, INITIAL_SLOTS, False)
        self.involves = _Slots(self.hot, ELEM_INVOLVES, INITIAL_SLOTS, True)
        self.latests = _Slots(self.hot, ELEM_LATEST, INITIAL_SLOTS, True)
        self.kinds = _Slots(self.hot, ELEM_DICT, DICT_SLOTS, False)
        self.attrs = _Slots(self.hot, ELEM_DICT, DICT_SLOTS, False)

    def material(self, oid: int) -> None:
        self.materials.insert(oid)

    def step(self, oid: int, payload_len: int, new_latest: list[bool]) -> None:
        """A step with its payload; new_latest: per material it involves, whether its
        (material, kind) pair gets its first latest row."""
        self.steps.insert(oid)
        if payload_len:
            self.cold.alloc(payload_len + 1)     # a text keeps a NUL after its bytes
        for new in new_latest:
            self.involves.insert()
            if new:
                self.latests.insert()

    def dictionary(self, kinds: int, attrs: int) -> None:
        for _ in range(kinds):
            self.kinds.insert()
        for _ in range(attrs):
            self.attrs.insert()

    def size(self) -> int:
        return self.hot.mapped + self.cold.mapped
