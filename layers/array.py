from .base import (ALLOC, ElemField, Layer, ParamSpec, PathOption, SlotMap, leads_line_slots,
                   line_slots_param)


class Array(Layer):
    name = "array"
    narrow_links = True   # slot storage: its references are slot numbers, stored in 32 bits
    realm = "ds"
    below = "mem"
    role = "storage"
    # full at 2^32 - 2 slots (P2_ENOMEM), or the slot block cannot grow
    errors = {"insert": {ALLOC, "P2_ENOMEM"}, "reserve": {ALLOC}}
    params = (ParamSpec("capacity", "int", 16, min=1, max=(1 << 32) - 2, fuzz=(1, 1 << 16),
                        doc="initial number of slots (the array doubles when full)"),
              line_slots_param("free-list word"),)
    doc = ("Elements in a growable array of slots; deleted slots go on a free list and are "
           "reused. An element's reference is its slot number, stable for its lifetime.")

    def elem_fields(self, inst):
        return [ElemField("uint32_t", f"_{inst.tag}_next_free",
                          "free-list link; P2_ARRAY_LIVE while the slot holds an element")]

    def root_fields(self, inst):
        t = inst.tag
        return [ElemField("uint64_t", f"{t}_slots", "memory reference of the slot array",
                           weak=True, ref="mem"),
                ElemField("uint32_t", f"{t}_cap", "slots allocated", weak=True),
                ElemField("uint32_t", f"{t}_hwm", "slots ever used (high-water mark)"),
                ElemField("uint32_t", f"{t}_count", "live elements"),
                ElemField("uint32_t", f"{t}_free", "head of the free-slot list")]

    def handle_fields(self, inst):
        # A root in a file is one load further from db than a root in the handle, and the
        # slot block one more: the block's address, kept in the handle, makes an element
        # one load from db, as on the heap (where the root is in the handle); so does the
        # high-water mark for _valid (every _at, every call given a reference), at the
        # price of one store to the handle per insert that moves it.
        if not inst.container.persistent:
            return []
        t = inst.tag
        return [ElemField("p2_addr", f"{t}_blk", "copy of the root's slot block, resolved (NULL: none)"),
                ElemField("uint32_t", f"{t}_hwm", "copy of the root's high-water mark, at most its capacity (_valid's bound)")]

    def mirrors_root(self, inst):
        return inst.container.persistent

    def leads_element(self, inst):
        return leads_line_slots(inst)

    def slot_map(self, inst):
        # every slot ever used: the free-list link is LIVE or a link the check follows
        f = f"_{inst.tag}_next_free"
        return SlotMap(end=f"{inst.tag}_hwm", fields=((f, f"slot {f}"),))

    def paths(self, inst, query):
        return [PathOption(inst, "scan", query.n, "array: scan every slot")]
