from .top2ds import Top2ds


class Top2dsQualify(Top2ds):
    name = "top2ds_qualify"
    narrow_links = True   # keeps no reference in memory
    realm = "top"
    below = "ds"
    role = "top"
    qualifies = True
    doc = "top2ds and qualify fused into one layer (P2's usual top of an equation)."
