from .base import Layer


class Qualify(Layer):
    name = "qualify"
    narrow_links = True   # keeps no reference in memory
    realm = "top"
    below = "top"
    role = "top"
    qualifies = True
    doc = ("Adds predicates to cursors: the part of a where-clause that the chosen access "
           "path does not guarantee is evaluated here, element by element.")
