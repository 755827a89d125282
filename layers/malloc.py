from .base import ALLOC, ElemField, Layer, PathOption


class Malloc(Layer):
    name = "malloc"
    realm = "ds"
    below = "mem"
    role = "storage"
    errors = {"insert": {ALLOC}}
    addressed_refs = True
    doc = ("One allocation per element from the memory layer, all elements on a doubly "
           "linked list for scans (in insertion order). References are memory references "
           "(pointers or file offsets), stable for an element's lifetime; a reference to a "
           "deleted element is detected on a best-effort basis only.")

    def elem_fields(self, inst):
        t = inst.tag
        return [ElemField("uint64_t", f"_{t}_next", "next element in the all-elements list",
                          ref="elem"),
                ElemField("uint64_t", f"_{t}_prev", "previous element", ref="elem"),
                ElemField("uint32_t", f"_{t}_magic", "<prefix>_LIVE while allocated")]

    def root_fields(self, inst):
        t = inst.tag
        out = [ElemField("uint64_t", f"{t}_head", "first element (oldest)", ref="elem"),
               ElemField("uint64_t", f"{t}_tail", "last element (newest)", ref="elem"),
               ElemField("uint64_t", f"{t}_count", "live elements")]
        if not inst.container.mem.layer.seg_allocator:
            # on the heap nothing bounds a pointer: remember where elements ever were, so
            # that references far outside are refused without being dereferenced
            out += [ElemField("uint64_t", f"{t}_lo", "lowest element address ever allocated"),
                    ElemField("uint64_t", f"{t}_hi", "highest element address ever allocated")]
        return out

    def paths(self, inst, query):
        return [PathOption(inst, "scan", query.n * 1.2, "malloc: walk the element list")]
