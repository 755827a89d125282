from .base import MemLayer, ParamSpec, pointer_map
from .persistent import Persistent, explain_alloc


class Mapped(MemLayer):
    """mapped: mem. A file mapped at a fixed address (QuickStore, ObjectStore): the
    references stored in it are raw virtual addresses, so resolving one is a cast and the
    code the layers above generate is the `transient` layer's (no base to add). The file
    records its base (runtime/p2_runtime.h, section fixed); opening maps it there with
    MAP_FIXED_NOREPLACE, inside an address range the runtime keeps for such files. If that
    range is taken in the process, the open refuses (relocate = false) or relocates the
    image in memory (relocate = true; layers/README.md, "The memory layers": a private
    mapping elsewhere, every address moved by one delta by the pointer maps of
    layers/base.py, `pointer_map`; never written back unless the open writes, and then
    the file is rewritten at its new base at close)."""
    name = "mapped"
    below = None
    file_param = "file"
    reserve_param = "reserve"
    verify_open_param = "verify_open"
    alloc_param = "alloc"
    survives_restart = True     # references are addresses the file is always mapped at
    seg_allocator = True        # blocks come from the file segment; a reference is base + offset
    maps_anywhere = False       # ... so the file must be mapped where it was made
    local_file = True           # a file on this machine, which the runtime maps
    relocate_param = "relocate"             # ... or relocated in memory, if the spec says so
    relocate_env = "P2_MAPPED_RELOCATE"     # read by runtime/p2_runtime.c (forced_relocation)
    # out of reserved address space or of mappable memory; the file cannot grow (disk full)
    errors = {"alloc": {"P2_ENOMEM", "P2_EIO"}}
    # persistent's parameters but `links`: a raw address is as wide as a pointer
    params = tuple(p for p in Persistent.params if p.name != Persistent.links_param) + (
        ParamSpec("relocate", "bool", False, show_default=False,
                  doc="when the address range the file records is taken in the process: "
                      "true maps the file elsewhere, privately, and moves every address "
                      "stored in it by one delta in memory, by the pointer maps the "
                      "generator derives from the layers' declared links (never written "
                      "back: an open that only reads leaves the file unchanged; one that "
                      "writes rewrites the file at close, recording the new base); false "
                      "refuses to open. With true, P2_MAPPED_RELOCATE=P (1 to 100) forces "
                      "relocating P % of the file, for measurements"),
    )
    doc = ("A file mapped with mmap(MAP_SHARED) at the fixed address recorded in its header. "
           "References are raw virtual addresses (the generated code is the transient "
           "layer's: no base to add), so the file can only be used where it was made: "
           "open maps it there with MAP_FIXED_NOREPLACE inside an address range the runtime "
           "keeps for mapped files (32 to 80 TiB); if that range is taken in the process it "
           "refuses, or with relocate = true maps the file elsewhere privately and moves "
           "every stored address by one delta in memory (pointer maps derived from the "
           "layers' declared links; an open that only reads leaves the file as it was, one "
           "that writes rewrites it at its new base at close). A recorded base the runtime "
           "never chooses is refused either way. Otherwise as persistent: header checks, "
           "not-cleanly-closed files refused, and (unless verify_open = false) the "
           "integrity check at open.")

    def validate(self, inst, ctx):
        if not inst.params["file"]:
            ctx.error(f"parameter 'file' of layer '{self.name}' must not be empty",
                      inst.param_pos("file"))
        if inst.params.get("relocate"):
            for li in inst.container.chain:
                if li.layer.unmapped_refs:
                    ctx.error(f"mapped(relocate = true) moves every address stored in the "
                              f"file by the links its layers declare, but layer '{li.name}' "
                              f"of container '{inst.container.name}' cannot be relocated: "
                              f"{li.layer.unmapped_refs}; use relocate = false",
                              inst.param_pos("relocate"))

    def explain_file(self, inst):
        return explain_alloc(inst)

    def pointer_maps(self, containers, spec_containers) -> list:
        """The PointerMap of each of `containers` (one file), for relocating it."""
        return [pointer_map(c, spec_containers) for c in containers]
