from .base import ParamSpec
from .journal import Journal


class Wal(Journal):
    """wal: mem over mem (persistent). The record log: the same transactions as `journal`
    (`<spec>_begin`, `_commit`, `_abort`, recovery on open; same parameters), logging the
    bytes a transaction writes instead of the pages it touches.

    How: every layer's writes are announced through the mem contract's write-intent hook
    (`_will_write`, layers/README.md) before they happen, and the allocator announces its
    own. Under this layer the file's own mem layer forwards them to the runtime
    (`write_intent`), which keeps the old value of each byte in memory once per
    transaction (a bitmap per changed page of the bytes already saved) and notes the
    pages. A
    commit logs the announced ranges, merged, with their new bytes -- redo records of 16
    bytes of header each, checksummed, and a commit record, written with one call -- into
    `<file>-wal`, and syncs it as `sync` and `group` say. Redo only on disk, undo only in
    memory: the file is mapped privately (MAP_PRIVATE), so nothing reaches it before a
    checkpoint writes committed pages, and an abort copies the old bytes back (each was
    saved once, so in any order). Checkpoints, replay on open and a torn tail are the page journal's
    (runtime/p2_runtime.h, section journal). What it does not cover: a write the generator
    cannot see (a program writing through a pointer the API gave it) -- the page journal
    catches those by their page faults."""
    name = "wal"
    write_guard = None                 # no page-fault handler to keep on top
    write_intent = True
    spans_files = True                 # p2_seg_commit_all: all the spec's logged files or none
    side_files = {"-wal": "record log"}
    params = Journal.params
    doc = ("Atomic, durable transactions on the persistent file below: a redo log of the "
           "bytes each transaction writes (announced by the layers above), synced at "
           "commit, replayed on open.")
    assert all(isinstance(p, ParamSpec) for p in params)

    def explain_file(self, inst):
        return super().explain_file(inst) + "; logs the bytes each transaction writes"
