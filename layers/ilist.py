from .base import ElemField, RelLayer, link_ctype


class IList(RelLayer):
    """ilist: rel. A one-to-many relationship as an intrusive doubly linked list: the
    owner (the `one` end, whose role is the collection) keeps head, tail and count; each
    member keeps its owner and its neighbours. Linking, unlinking and reaching the owner
    are O(1) with no allocation; a walk touches only the members themselves, in the order
    they were added."""
    name = "ilist"
    narrow_links = True   # member and owner links in the memory's link width
    kinds = ("1:N",)
    # linking and unlinking only rewrite fields of the elements: nothing to allocate
    errors = {"remove": {"P2_NOTFOUND"}}
    walk_survives_removal = True   # the walk holds the next member before handing one out
    orders = True   # `order by FIELD`: members kept sorted on the list (ties: order of joining)
    doc = ("one-to-many as an intrusive doubly linked list through the members; "
           "O(1) add/remove, no allocation")

    def unsupported(self, ri):
        if ri.kind != "1:N":
            return ("layer 'ilist' stores one-to-many relationships only (each member is on "
                    "one owner's list); use refarray")
        return None

    def role_fields(self, role):
        r = role.rel.name
        if role.many:   # the owner
            # links to members, in the width of the memory (one for both ends)
            lt = link_ctype(role.container)
            return [ElemField(lt, f"_{r}_head", f"first of {role.name}"),
                    ElemField(lt, f"_{r}_tail", f"last of {role.name}"),
                    ElemField("uint64_t", f"_{r}_count", f"size of {role.name}")]
        lt = link_ctype(role.container)
        return [ElemField(lt, f"_{r}_owner", f"{role.name} (the owner)"),
                ElemField(lt, f"_{r}_next", f"next member of the owner's "
                                                     f"{role.partner.name}"),
                ElemField(lt, f"_{r}_prev", f"previous member")]

    def role_cost(self, role):
        if role.many and role.order is not None:
            return (f"walk O(k) in the order of {role.order.name}{' desc' if role.descending else ''}, from a bound O(skipped) from "
                    f"the end the walk starts at; add O(1) at either end, else O(k) back from "
                    f"the tail; an update of {role.order.name} moves the member (the same)")
        if role.many:
            return ("walk O(k), each step reads the next member's links; add/remove O(1), "
                    "no allocation")
        return "owner O(1) (a field of the element); set O(1)"
