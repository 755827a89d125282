from .base import UNIQUE, ElemField, unique_errors, unique_validate, Layer, ParamSpec, log2n, ordered_paths, range_selectivity, link_ctype


class Avl(Layer):
    name = "avl"
    narrow_links = True   # child links in the memory's link width
    realm = "ds"
    below = "ds"
    role = "index"
    keeps_order = True
    reverse_walk = True   # _range_last / _range_prev: cursors ordered desc
    params = (ParamSpec("key", "field", doc="field the tree is ordered by", composite=True),
              UNIQUE)
    layout = 2   # 2: parent links (the in-order walk climbs them instead of re-descending)
    doc = ("A balanced (AVL) binary tree threaded through the elements, ordered by key "
           "(ties broken by reference): equality and range retrieval in O(log n + k), "
           "scans in key order.")

    def op_errors(self, inst, op):
        return unique_errors(self, inst, op)

    def validate(self, inst, ctx):
        unique_validate(inst, ctx)

    def elem_fields(self, inst):
        t = inst.tag
        lt = link_ctype(inst.container)
        return [ElemField(lt, f"_{t}_left", "left child"),
                ElemField(lt, f"_{t}_right", "right child"),
                ElemField(lt, f"_{t}_parent", "parent (P2_NIL at the root)"),
                ElemField("int32_t", f"_{t}_height", "height of the subtree")]

    def root_fields(self, inst):
        return [ElemField("uint64_t", f"{inst.tag}_root", "root node", ref="elem")]

    def paths(self, inst, query):
        n = query.n
        return ordered_paths(self, inst, query, what="avl",
                             eq_cost=log2n(n) + 1,
                             range_cost=lambda nb: log2n(n) + n * range_selectivity(nb),
                             scan_cost=n * 1.1)
