from .base import ElemField, Layer


class DelFlag(Layer):
    name = "delflag"
    narrow_links = True   # keeps no reference in memory
    realm = "top"
    below = "top"
    role = "top"
    defers_delete = True
    doc = ("Logical deletion: delete marks the element with a flag instead of removing it; "
           "every read skips marked elements, and <container>_purge removes them for real.")

    def elem_fields(self, inst):
        return [ElemField("uint8_t", f"_{inst.tag}_deleted", "1 once logically deleted")]

    def root_fields(self, inst):
        return [ElemField("uint64_t", f"{inst.tag}_ndeleted", "elements marked deleted")]
