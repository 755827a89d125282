from .base import ElemField, Layer, PathOption


class DList(Layer):
    name = "dlist"
    realm = "ds"
    below = "ds"
    role = "index"
    doc = "A doubly linked list threaded through the elements, in insertion order."

    def elem_fields(self, inst):
        t = inst.tag
        return [ElemField("uint64_t", f"_{t}_next", "next element in insertion order"),
                ElemField("uint64_t", f"_{t}_prev", "previous element")]

    def root_fields(self, inst):
        t = inst.tag
        return [ElemField("uint64_t", f"{t}_head", "first element"),
                ElemField("uint64_t", f"{t}_tail", "last element")]

    def paths(self, inst, query):
        return [PathOption(inst, "scan", query.n * 1.05, "dlist: walk in insertion order")]
