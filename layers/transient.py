from .base import MemLayer


class Transient(MemLayer):
    name = "transient"
    below = None
    # not in a file; references are pointers, meaningless after the process ends
    errors = {"alloc": {"P2_ENOMEM"}}
    doc = ("Heap memory (calloc/realloc/free). References are raw pointers; the container "
           "lives as long as the open database handle.")
