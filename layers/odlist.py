from .base import ElemField, Layer, ParamSpec, ordered_paths, link_ctype


class ODList(Layer):
    name = "odlist"
    narrow_links = True   # element links and list ends in the memory's link width
    realm = "ds"
    below = "ds"
    role = "index"
    keeps_order = True
    reverse_walk = True   # _range_last / _range_prev: back links from the tail
    params = (ParamSpec("key", "field", doc="field the list is kept ordered by",
                        composite=True),)
    doc = ("A doubly linked list threaded through the elements, kept ordered by key "
           "(inserts walk the list): ordered scans, ranges stop early.")

    def elem_fields(self, inst):
        t = inst.tag
        return [ElemField(link_ctype(inst.container), f"_{t}_next", "next element in key order"),
                ElemField(link_ctype(inst.container), f"_{t}_prev", "previous element")]

    def root_fields(self, inst):
        t = inst.tag
        return [ElemField(link_ctype(inst.container), f"{t}_head", "first element"),
                ElemField(link_ctype(inst.container), f"{t}_tail", "last element (appending in key order is O(1))")]

    def paths(self, inst, query):
        n = query.n
        return ordered_paths(self, inst, query, what="odlist",
                             eq_cost=n / 2, range_cost=lambda nb: n / 2 if nb else n,
                             scan_cost=n * 1.1)
