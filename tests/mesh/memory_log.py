"""An in-memory stand-in for StoreLog, for in-process tests of the nodes."""

from collections import namedtuple

Entry = namedtuple("Entry", "sequence timestamp_ms content")


class MemoryLog:
    def __init__(self):
        self.entries: dict[tuple[str, str], list[Entry]] = {}
        self.syncs = 0

    def partitions(self):
        return list(self.entries)

    def first(self, subject, address):
        entries = self.entries.get((subject, address))
        return entries[0].sequence if entries else None

    def head(self, subject, address):
        entries = self.entries.get((subject, address))
        return entries[-1].sequence if entries else None

    def append_many(self, subject, address, first, contents, timestamp_ms):
        entries = self.entries.setdefault((subject, address), [])
        assert not entries or first == entries[-1].sequence + 1
        entries += [Entry(sequence, timestamp_ms, bytes(content)) for sequence, content in enumerate(contents, first)]

    def truncate_from(self, subject, address, sequence):
        entries = self.entries.get((subject, address), [])
        entries[:] = [entry for entry in entries if entry.sequence < sequence]

    def sync(self):
        self.syncs += 1
        return True

    def fsync_due(self):
        return True

    def read(self, subject, address, sequence, max_count, max_bytes):
        entries = self.entries.get((subject, address), [])
        if not entries or sequence < entries[0].sequence:
            return iter(())
        start = sequence - entries[0].sequence
        return iter(entries[start : start + max_count])

    def close(self):
        pass
