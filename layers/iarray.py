from .base import (ALLOC, ElemField, Layer, ParamSpec, PathOption, SlotMap, leads_line_slots,
                   line_slots_param, ordered_paths, range_selectivity)


MAX_KEY = (1 << 32) - 2   # slots are counted in 32 bits
GROWTH = 1024             # default max_key: the slot block grows to at most this many times
                          # its initial capacity


class IArray(Layer):
    name = "iarray"
    narrow_links = True   # slot storage: its references are slot numbers, stored in 32 bits
    realm = "ds"
    below = "mem"
    role = "storage"
    keeps_order = True
    reverse_walk = True   # _range_last / _range_prev: occupied slots downwards
    relocates = True      # the reference is the key
    unique_key = True     # a slot holds one element
    # a key above max_key or below 0 (P2_ERANGE), a key already present (P2_EDUP), or the
    # slot block cannot grow to the key
    errors = {"insert": {"P2_ERANGE", "P2_EDUP", ALLOC},
              "update": {"P2_ERANGE", "P2_EDUP", ALLOC}, "reserve": {ALLOC}}
    params = (
        ParamSpec("key", "field", doc="integer field whose value is the slot index",
                  field_kinds=("int",)),
        ParamSpec("capacity", "int", 1024, min=1, max=(1 << 32) - 2, fuzz=(1, 1 << 16),
                  doc="initial number of slots (grows to fit larger keys)"),
        ParamSpec("max_key", "int", None, min=0, max=MAX_KEY,
                  default_text=f"{GROWTH} * capacity - 1",
                  doc="largest key accepted; larger keys are refused with P2_ERANGE. A key "
                      "is a slot number, so the largest key decides how big the slot block "
                      "may grow: by default it may grow to "
                      f"{GROWTH} times its initial capacity (keys up to 1,048,575 with the "
                      "default capacity) rather than let one insert of a large key allocate "
                      f"gigabytes; give max_key (up to {MAX_KEY}) for larger keys"),
        line_slots_param("valid flag"),
    )
    doc = ("Elements in an array indexed by their key (slot = key) with a valid flag per "
           "slot: O(1) keyed access, keys unique, scans come out in key order.")

    def validate(self, inst, ctx):
        if inst.params["max_key"] is None:        # not given: proportionate to capacity
            inst.params["max_key"] = min(GROWTH * inst.params["capacity"] - 1, MAX_KEY)

    def key_bound(self, inst):
        return inst.params["max_key"]

    def elem_fields(self, inst):
        return [ElemField("uint8_t", f"_{inst.tag}_valid", "1 while the slot holds an element")]

    def root_fields(self, inst):
        t = inst.tag
        return [ElemField("uint64_t", f"{t}_slots", "memory reference of the slot array",
                           weak=True, ref="mem"),
                ElemField("uint32_t", f"{t}_cap", "slots allocated", weak=True),
                ElemField("uint32_t", f"{t}_count", "valid elements")]

    def handle_fields(self, inst):
        # A root in a file is one load further from db than a root in the handle, and the
        # slot block one more: the block's address and bound, kept in the handle, make an
        # element one load from db, as on the heap (where the root is in the handle).
        if not inst.container.persistent:
            return []
        t = inst.tag
        return [ElemField("p2_addr", f"{t}_blk", "copy of the root's slot block, resolved (NULL: none)"),
                ElemField("uint32_t", f"{t}_cap", "copy of the root's cap (0: no slot block)")]

    def mirrors_root(self, inst):
        return inst.container.persistent

    def leads_element(self, inst):
        return leads_line_slots(inst)

    def slot_map(self, inst):
        # every slot: a valid one's flag and key (its slot number), an empty one all zero
        t = inst.tag
        return SlotMap(end=f"{t}_cap", flag=f"_{t}_valid",
                       fields=((f"_{t}_valid", f"slot _{t}_valid"),
                               (f"rec.{inst.key_field_obj.name}", "slot key")),
                       whole="empty slot")

    def paths(self, inst, query):
        cap = max(inst.params["capacity"], query.n)
        paths = ordered_paths(self, inst, query, what="iarray", eq_cost=1.0,
                              range_cost=lambda nb: cap * range_selectivity(nb),
                              scan_cost=cap)
        # equality is one slot: a direct look-up, not a range walk to the next valid slot
        for i, p in enumerate(paths):
            if p.lo is not None and p.lo is p.hi:
                key = self.key_field(inst)
                paths[i] = PathOption(inst, "eq", 1.0,
                                      f"iarray: {key} == {p.lo.value_text} is slot {p.lo.value_text}",
                                      ordered_by=key, eq=p.lo, consumed=[p.lo])
        return paths
