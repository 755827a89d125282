from .base import ALLOC, Layer, ParamSpec, SlotMap, log2n, ordered_paths, range_selectivity


class QSort(Layer):
    name = "qsort"
    narrow_links = True   # slot storage: its references are slot numbers, stored in 32 bits
    realm = "ds"
    below = "mem"
    role = "storage"
    keeps_order = True
    reverse_walk = True   # _range_last / _range_prev: position by position down
    stable_refs = False
    relocates = True      # the reference is the position in key order
    # full at 2^32 - 2 slots (P2_ENOMEM), or the array cannot grow
    errors = {"insert": {ALLOC, "P2_ENOMEM"}, "reserve": {ALLOC}}
    params = (
        ParamSpec("key", "field", doc="field the array is kept sorted by"),
        ParamSpec("capacity", "int", 16, min=1, max=(1 << 32) - 2, fuzz=(1, 1 << 16),
                  doc="initial number of slots (the array doubles when full)"),
    )
    doc = ("Elements in an array kept sorted by key; retrieval by binary search. Inserts and "
           "deletes shift elements, so a reference (the position) is only valid until the "
           "next change, and no index layer may sit above qsort.")

    def root_fields(self, inst):
        from .base import ElemField
        t = inst.tag
        return [ElemField("uint64_t", f"{t}_slots", "memory reference of the sorted array "
                           "(cap slots, then the key column)", weak=True, ref="mem"),
                ElemField("uint32_t", f"{t}_cap", "slots allocated", weak=True),
                ElemField("uint32_t", f"{t}_count", "elements, in slots 0..count-1")]

    def column_blocks(self, inst):
        # the key column lies in the slot block, after the cap slots
        t = inst.tag
        return [(f"{inst.p}_keys(db)", f"r->{t}_cap", f"sizeof({inst.p}_key)", "key column")]

    def slot_map(self, inst):
        # the slots past the last element are all zero
        t = inst.tag
        return SlotMap(first=f"{t}_count", end=f"{t}_cap", whole="slot past the end")

    def paths(self, inst, query):
        n = query.n
        # In elements touched, as the other layers count: the binary search reads the key
        # column, whose last log2(keys per 64-byte line) steps stay within one line, so it
        # touches about log2(n / keys per line) lines of it, then the element found.
        key = inst.key_field_obj
        per_line = max(1, 64 // max(1, key.type.bits // 8)) if key is not None else 1
        search = 0.9 * log2n(n / per_line)
        return ordered_paths(self, inst, query, what="qsort (binary search of the key column)",
                             eq_cost=search + 1,
                             range_cost=lambda nb: search + n * range_selectivity(nb),
                             scan_cost=n)
