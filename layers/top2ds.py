from .base import Layer


class Top2ds(Layer):
    name = "top2ds"
    realm = "top"
    below = "ds"
    role = "top"
    doc = ("Maps the container and cursor API onto the ds layers below: insert, find, "
           "update, delete, count, and cursors along the cheapest access path. Cursors "
           "without a where-clause only; put qualify above (or use top2ds_qualify) for "
           "predicates.")
