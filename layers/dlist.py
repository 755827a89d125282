from .base import ElemField, Layer, PathOption, link_ctype


class DList(Layer):
    name = "dlist"
    narrow_links = True   # element links and list ends in the memory's link width
    realm = "ds"
    below = "ds"
    role = "index"
    doc = "A doubly linked list threaded through the elements, in insertion order."

    def elem_fields(self, inst):
        t = inst.tag
        return [ElemField(link_ctype(inst.container), f"_{t}_next", "next element in insertion order"),
                ElemField(link_ctype(inst.container), f"_{t}_prev", "previous element")]

    def root_fields(self, inst):
        t = inst.tag
        return [ElemField(link_ctype(inst.container), f"{t}_head", "first element"),
                ElemField(link_ctype(inst.container), f"{t}_tail", "last element")]

    def paths(self, inst, query):
        return [PathOption(inst, "scan", query.n * 1.05, "dlist: walk in insertion order")]
