from .base import UNIQUE, unique_errors, unique_validate, ALLOC, ElemField, Layer, ParamSpec, PathOption, composite_eq_path, link_ctype


class Hash(Layer):
    name = "hash"
    realm = "ds"
    below = "ds"
    role = "index"
    # only reserve grows the buckets on demand; the doubling after an insert is a hint
    # (out of memory there leaves chains longer)
    errors = {"reserve": {ALLOC}}
    narrow_links = True   # chains and buckets in the memory's link width
    params = (
        ParamSpec("key", "field", doc="field hashed", composite=True),
        ParamSpec("buckets", "int", 1024, min=1, max=1 << 31,
                  doc="initial bucket count (rounded up to a power of two)"),
        ParamSpec("fn", "choice", "default", choices=("default", "identity"),
                  doc="hash function: a general-purpose mixer, or the key itself "
                      "(integer keys; no collisions for dense ids)"),
        ParamSpec("grow", "bool", True,
                  doc="double the buckets when elements outnumber them"),
        UNIQUE,
    )
    doc = ("A chained hash table over the layer below: an array of buckets, each a singly "
           "linked list threaded through the elements. O(1) equality retrieval on its key.")

    def op_errors(self, inst, op):
        return unique_errors(self, inst, op)

    def validate(self, inst, ctx):
        unique_validate(inst, ctx)
        key = inst.key_field_obj
        if inst.params["fn"] == "identity" and key is not None and key.type.kind == "composite":
            ctx.error(f"hash function 'identity' needs an integer key; the key "
                      f"{key.text()} is composite", inst.param_pos("fn"))
        elif inst.params["fn"] == "identity" and key is not None and key.type.kind != "int":
            ctx.error(f"hash function 'identity' needs an integer key; field '{key.name}' "
                      f"is {key.type.spelled()}", inst.param_pos("fn"))

    def elem_fields(self, inst):
        return [ElemField(link_ctype(inst.container), f"_{inst.tag}_next",
                          "next element in the same bucket")]

    def root_fields(self, inst):
        t = inst.tag
        return [ElemField("uint64_t", f"{t}_buckets", "memory reference of the bucket array",
                           weak=True),
                ElemField("uint64_t", f"{t}_nbuckets", "bucket count (a power of two)"),
                ElemField("uint64_t", f"{t}_count", "elements linked in")]

    def reference_blocks(self, inst):
        return [(f"{inst.tag}_buckets", f"{inst.tag}_nbuckets")]

    def paths(self, inst, query):
        if inst.key_field_obj is not None and inst.key_field_obj.type.kind == "composite":
            return composite_eq_path(inst, query, 1.5, "hash")
        key = self.key_field(inst)
        eqs = [c for c in query.conjuncts_on(key) if c.op == "=="]
        if not eqs:
            return []
        c = eqs[0]
        return [PathOption(inst, "eq", 1.5, f"hash: {key} == {c.value_text} picks one bucket",
                           eq=c, consumed=[c])]

    def not_applicable(self, inst, query):
        k = inst.key_field_obj
        if k is not None and k.type.kind == "composite":
            return f"no equality on every field of its key {k.text()}"
        return f"no equality on its key '{self.key_field(inst)}'"
