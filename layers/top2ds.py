from .base import Layer


class Top2ds(Layer):
    name = "top2ds"
    narrow_links = True   # keeps no reference in memory
    realm = "top"
    below = "ds"
    role = "top"
    doc = ("Maps the container and cursor API onto the ds layers below: insert, find, "
           "update, delete, count, and cursors along the cheapest access path. Cursors "
           "without a where-clause only; put qualify above (or use top2ds_qualify) for "
           "predicates.")

    # a cursor remembers the elements its updates move ahead in its walk (and, over storage
    # whose references shift, remaps them on a delete): that memory may not grow
    errors = {"cursor_update": {"P2_ENOMEM"}}

    def op_errors(self, inst, op):
        if op == "cursor_delete" and not inst.container.storage.layer.stable_refs:
            return frozenset({"P2_ENOMEM"})
        return super().op_errors(inst, op)
