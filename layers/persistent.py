from .base import Layer, ParamSpec


class Persistent(Layer):
    name = "persistent"
    realm = "mem"
    below = None
    role = "mem"
    params = (
        ParamSpec("file", "str", doc="path of the database file (relative paths resolve "
                                     "against the directory given to open, else the cwd)"),
        ParamSpec("reserve", "int", 1 << 36, min=1 << 20, max=1 << 60,
                  doc="bytes of address space reserved so the mapping never moves"),
    )
    doc = ("A file mapped with mmap(MAP_SHARED) that grows by extending the mapping. "
           "References are offsets from the segment base, so the file is valid wherever it "
           "is mapped. All containers of a spec that name the same file share it. The file "
           "header holds magic, version, spec fingerprint, container roots and a checksum; "
           "mismatched, truncated, corrupt or not-cleanly-closed files are refused.")

    def validate(self, inst, ctx):
        if not inst.params["file"]:
            ctx.error("parameter 'file' of layer 'persistent' must not be empty",
                      inst.param_pos("file"))
