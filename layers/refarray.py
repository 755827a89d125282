from .base import ALLOC, ElemField, ParamSpec, RelLayer, link_ctype


class RefArray(RelLayer):
    """refarray: rel. Any relationship (1:1, 1:N, M:N) as arrays of references: a role
    that holds many partners keeps a growable array of their references, allocated in
    its container's memory layer; a role that holds one keeps a single reference. Bags:
    a partner may appear several times, each occurrence mirrored on the other side.
    A walk reads one contiguous array (no member is touched to find the next); removing
    one occurrence searches the array."""
    name = "refarray"
    narrow_links = True   # blocks of references and single references in the memory's link width
    kinds = ("1:1", "1:N", "M:N")
    # adding grows a block of references (P2_ENOMEM also past 2^31 references in one);
    # setting a one role whose partner holds many adds to the partner's block (role_errors)
    errors = {"add": {"P2_ENOMEM", ALLOC}, "remove": {"P2_NOTFOUND"},
              "set": {"P2_ENOMEM", ALLOC}}
    params = (ParamSpec("capacity", "int", 4, "initial array capacity per element",
                        min=1, max=1 << 24),)
    doc = "any multiplicity; collections as growable arrays of references in the memory layer"

    def role_fields(self, role):
        f = f"_{role.rel.name}_{role.name}"
        if role.many:
            return [ElemField(link_ctype(role.container), f"{f}_vec",
                              f"{role.name}: block of references",
                              weak=True),
                    ElemField("uint32_t", f"{f}_len", f"{role.name}: how many"),
                    ElemField("uint32_t", f"{f}_cap", f"{role.name}: room in the block",
                              weak=True)]
        return [ElemField(link_ctype(role.container), f, f"{role.name} (a single reference)")]

    def role_errors(self, role, op):
        if op == "set" and not role.partner.many:
            return frozenset()      # 1:1: two single references are rewritten
        return super().role_errors(role, op)

    def role_owns_block(self, role):
        return role.many

    def role_reference_blocks(self, role):
        f = f"_{role.rel.name}_{role.name}"
        return [(f"{f}_vec", f"{f}_len")] if role.many else []

    def role_cost(self, role):
        if role.many:
            return ("walk O(k) over one contiguous array; add amortised O(1) (the array "
                    "doubles in memory); remove O(k) (search, shift)")
        return "partner O(1) (a field of the element)"
