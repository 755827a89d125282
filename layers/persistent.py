from .base import MAX_RESERVE, MemLayer, ParamSpec

# With 32-bit links a memory reference is stored as offset >> 3 in 32 bits, and UINT32_MAX
# stands for none: a file of at most 32 GiB (its last 8 bytes' offset is never a block).
LINK32_LIMIT = 1 << 35

# The file allocator's size classes (runtime/p2_runtime.h, section alloc), a parameter of
# every memory layer whose blocks come from the file segment (persistent, mapped).
ALLOC_PARAM = ParamSpec(
    "alloc", "choice", "pow2", choices=("pow2", "exact"), show_default=False,
    doc="the size classes of the file's allocator, which every block of the file comes "
        "from (element storage, array slot vectors, hash bucket tables, btree nodes, "
        "malloc elements, texts, relationship vectors, container roots): pow2 rounds a "
        "block of up to 2048 bytes up to a power of two (a 40-byte element takes 64 "
        "bytes, a 300-byte text 512), as the segregated allocator of Texas did; exact "
        "rounds it only to the 16-byte granule (48 and 304 bytes), one free list per "
        "multiple of 16, so the file is smaller. Larger blocks are 4 KiB pages either "
        "way. Fixed when the file is created: a file is refused by a program of the "
        "other policy")

ALLOC_SAYS = {"pow2": "power-of-two size classes (16, 32, 64, ..., 2048 bytes)",
              "exact": "exact size classes (every multiple of 16 bytes up to 2048)"}


def explain_alloc(inst) -> str:
    """What `p2gen explain` says of a file's allocator."""
    policy = inst.params.get("alloc", "pow2")
    return (f"allocator (alloc = {policy}): blocks up to 2048 bytes in {ALLOC_SAYS[policy]}, "
            f"larger ones in 4 KiB pages")


class Persistent(MemLayer):
    name = "persistent"
    below = None
    file_param = "file"
    reserve_param = "reserve"
    verify_open_param = "verify_open"
    links_param = "links"
    alloc_param = "alloc"
    survives_restart = True     # references are offsets from the file's base
    seg_allocator = True
    maps_anywhere = True        # ... from the segment base, wherever it is mapped
    local_file = True           # a file on this machine, which the runtime maps
    # out of reserved address space or of mappable memory; the file cannot grow (disk full)
    errors = {"alloc": {"P2_ENOMEM", "P2_EIO"}}
    params = (
        ParamSpec("file", "str", doc="path of the database file (relative paths resolve "
                                     "against the directory given to open, else the cwd)"),
        ParamSpec("reserve", "int", 1 << 36, min=1 << 20, max=MAX_RESERVE, fuzz=(1 << 20, 1 << 40),
                  doc="bytes of address space reserved so the mapping never moves: the "
                      "largest the file can grow (default 64 GiB; at most 64 TiB, and all "
                      "files of a spec together at most that, half of the 128 TiB a 64-bit "
                      "Linux process can map)"),
        ParamSpec("links", "choice", "offset64", choices=("offset64", "offset32"), show_default=False,
                  doc="how wide every reference stored in the file is (element links, "
                      "bucket and reference blocks, relationship links): offset64, the "
                      "64-bit offset from the base; offset32, 32 bits counting 8-byte "
                      "units, so links take half the room and the file holds at most 32 "
                      "GiB (reserve defaults to that, and no more may be given). Only "
                      "equations whose layers store their links in the width their memory "
                      "gives are accepted with offset32"),
        ALLOC_PARAM,
        ParamSpec("verify_open", "bool", True,
                  doc="walk the whole database with <prefix>_verify when open reads it from "
                      "an existing file, and refuse it if damaged: a crafted or corrupt file "
                      "then cannot make any call crash or write outside the mapping. Open "
                      "costs a read of the file (~10 ns per element when cached). false: "
                      "for files only trusted programs write; open is O(1), but a damaged "
                      "file may crash the process"),
    )
    doc = ("A file mapped with mmap(MAP_SHARED) that grows by extending the mapping. "
           "References are offsets from the segment base, so the file is valid wherever it "
           "is mapped. All containers of a spec that name the same file share it. The file "
           "header holds magic, version, spec fingerprint, container roots and a checksum; "
           "mismatched, truncated, corrupt or not-cleanly-closed files are refused, and (unless "
           "verify_open = false) so is a database whose structures fail the integrity check.")

    def validate(self, inst, ctx):
        if not inst.params["file"]:
            ctx.error(f"parameter 'file' of layer '{self.name}' must not be empty",
                      inst.param_pos("file"))
        limit = self.link_limit(inst)
        if limit is not None:
            if "reserve" not in inst.param_positions:
                inst.params["reserve"] = limit      # the default, as far as links reach
            elif inst.params["reserve"] > limit:
                ctx.error(f"{self.name}(reserve = {inst.params['reserve']}) is more than a "
                          f"file with {self.name}(links = {inst.params['links']}) can hold: "
                          f"its references reach {limit} bytes (32 GiB); lower reserve or "
                          f"use links = offset64", inst.param_pos("reserve"))

    def explain_file(self, inst):
        return explain_alloc(inst)

    def link_bits(self, inst):
        return 32 if inst.params.get("links") == "offset32" else 64

    def link_limit(self, inst):
        return LINK32_LIMIT if self.link_bits(inst) == 32 else None
