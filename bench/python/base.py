"""What the Python benchmark's systems share, in both workloads (run.py's TPC-B-like one,
oo7.py's OO7): a stdlib sqlite3 database started empty, in memory or in a file, and
counting the keys a lookup finds."""
from __future__ import annotations

import os
import sqlite3
from typing import Callable, Iterable


class SqliteBase:
    """A system over stdlib sqlite3 at path (":memory:": in memory, named sqlite-mem, else
    sqlite-file); connect() starts it from an empty database."""

    def __init__(self, path: str):
        self.path = path
        self.name = "sqlite-mem" if path == ":memory:" else "sqlite-file"

    def connect(self) -> sqlite3.Connection:
        if self.path != ":memory:" and os.path.exists(self.path):
            os.remove(self.path)
        self.conn = sqlite3.connect(self.path)
        return self.conn

    def close(self):
        self.conn.close()


def count_found(lookup: Callable, keys: Iterable) -> int:
    """How many of keys lookup(key) finds (returns other than None)."""
    n = 0
    for k in keys:
        if lookup(k) is not None:
            n += 1
    return n
