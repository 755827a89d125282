from .base import MemLayer, ParamSpec


class Journal(MemLayer):
    """journal: mem over mem (persistent). Atomic, durable transactions on a persistent
    file: `<spec>_begin`, `_commit`, `_abort`; recovery on open.

    Why at the memory level, right above `persistent`: every layer above it -- storage,
    indexes, relationships, texts, the allocator's own bookkeeping -- changes the file
    only by writing memory, so journalling memory pages covers all of them with one
    mechanism, needs nothing from them, and keeps them unchanged (their generated code is
    the same with or without a journal; the cost shows in the benchmarks as exactly the
    journal's). The runtime maps the file privately and read-only, learns which pages a
    transaction writes from their first write fault, appends those pages to a redo
    journal `<file>-journal` at commit (checksummed page records, then a checksummed
    commit record) and syncs it; the pages go into the file itself at checkpoints. Opening replays the
    complete transactions of the journal and drops a torn tail (runtime/p2_runtime.h,
    section journal)."""
    name = "journal"
    below = "mem"
    # whether references survive a restart is the business of the file's layer below
    transactions = True
    write_guard = "journal_guard"
    side_files = {"-journal": "journal"}       # <file>-journal: the redo journal
    # a file it maps itself, wherever the kernel puts it
    requires_below = ("file_param", "maps_anywhere", "logs_below")
    requires_why = ("journals a file it maps anywhere, or a page server's export",
                    "is not a file that may be mapped anywhere, nor a page server")
    params = (
        ParamSpec("sync", "bool", True,
                  doc="fdatasync the journal when a group of commits ends; false (nosync) "
                      "survives a process crash but not an OS crash or power loss"),
        ParamSpec("group", "int", 1, min=1, max=1 << 20,
                  doc="group commit: commits per journal flush; a commit returned before "
                      "its group was flushed survives a process crash, and an OS crash "
                      "loses at most that group"),
        ParamSpec("checkpoint", "int", 4 << 20, min=1 << 16, max=1 << 48, fuzz=(1 << 16, 1 << 30),
                  doc="journal bytes after which the committed pages are written into the "
                      "file, it is synced and the journal starts again (as SQLite's WAL "
                      "checkpoints at 1000 pages)"),
    )
    doc = ("Atomic, durable transactions on the persistent file below: a redo journal of "
           "the pages each transaction writes, synced at commit, replayed on open.")

    def explain_file(self, inst):
        j = inst.params
        how = ("fdatasync every commit" if j["group"] == 1 else
               f"group commit: fdatasync every {j['group']} commits") if j["sync"] else \
            "nosync: never fdatasync (survives a process crash, not an OS crash)"
        across = ("a transaction over several of the spec's files commits in all of them or "
                  "none" if self.spans_files else
                  "atomic per file: a transaction over several files commits each by itself")
        return (f"{self.name}(sync={'true' if j['sync'] else 'false'}, group={j['group']}, "
                f"checkpoint={j['checkpoint']}) -- {how}; {across}")
