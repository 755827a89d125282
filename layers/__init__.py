"""The layer library: one signature (<name>.py) and one template (<name>.c.j2) per layer."""
from __future__ import annotations

from .array import Array
from .avl import Avl
from .base import Layer
from .btree import BTree
from .delflag import DelFlag
from .dlist import DList
from .hash import Hash
from .iarray import IArray
from .journal import Journal
from .ilist import IList
from .malloc import Malloc
from .mapped import Mapped
from .objserver import ObjServer
from .odlist import ODList
from .pageserver import PageServer
from .persistent import Persistent
from .qsort import QSort
from .qualify import Qualify
from .refarray import RefArray
from .top2ds import Top2ds
from .top2ds_qualify import Top2dsQualify
from .transient import Transient
from .wal import Wal

LAYERS: dict[str, Layer] = {cls.name: cls() for cls in (
    Transient, Persistent, Journal, Wal, Mapped, PageServer, ObjServer,
    Array, IArray, QSort, Malloc,
    Hash, Avl, BTree, DList, ODList,
    Top2ds, Qualify, Top2dsQualify, DelFlag,
    IList, RefArray,
)}


def get(name: str) -> Layer | None:
    return LAYERS.get(name)
