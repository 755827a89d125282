from .base import Layer


class Transient(Layer):
    name = "transient"
    realm = "mem"
    below = None
    role = "mem"
    errors = {"alloc": {"P2_ENOMEM"}}
    doc = ("Heap memory (calloc/realloc/free). References are raw pointers; the container "
           "lives as long as the open database handle.")
