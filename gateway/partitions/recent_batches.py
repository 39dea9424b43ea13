"""The last batches appended to a partition, kept in memory for fetches at the log end.

Each batch is a plain tuple of ints and a copy of its bytes. CPython's collector stops
tracking such a tuple the first time it sees it, so a tail of hundreds of thousands of
small batches costs no collection time; objects per batch (with views of the request's
buffer) did: a fifth of the gateway's CPU at 10,000 small batches a second, in full
collections scanning every batch of the tail, and each view held its request's whole
receive buffer alive. The copy is the cheaper of the two even for large batches.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StoredBatch:
    base_offset: int
    last_offset: int
    sequence: int
    data: bytes | memoryview


class RecentBatches:
    """Batches by Dafka sequence, consecutive, at most `limit` bytes of them (the last always)."""

    def __init__(self, limit: int):
        self.limit = limit
        self.bytes = 0
        self._entries: list[tuple[int, int, int, bytes]] = []  # (sequence, base offset, last offset, data)
        self._start = 0  # entries before it are dropped; the list is cut when they are half of it

    def __len__(self) -> int:
        return len(self._entries) - self._start

    @property
    def first_sequence(self) -> int | None:
        return self._entries[self._start][0] if len(self) else None

    def append(self, sequence: int, base_offset: int, last_offset: int, data) -> None:
        self._entries.append((sequence, base_offset, last_offset, bytes(data)))
        self.bytes += len(data)
        self.keep_within(self.limit)

    def keep_within(self, limit: int) -> None:
        """Drop the oldest batches while they are over `limit` bytes, keeping the last one."""
        self.limit = limit
        while self.bytes > limit and len(self) > 1:
            self._drop_first()
        self._cut()

    def drop_below(self, sequence: int) -> None:
        while len(self) and self._entries[self._start][0] < sequence:
            self._drop_first()
        self._cut()

    def since(self, sequence: int, max_bytes: int) -> list[StoredBatch]:
        """The batches from `sequence` (held here) on, as far as the first that reaches past
        `max_bytes` in all, so that a reader can tell where its bytes end."""
        entries = self._entries
        found = []
        size = 0
        for position in range(self._start + sequence - entries[self._start][0], len(entries)):
            sequence, base_offset, last_offset, data = entries[position]
            found.append(StoredBatch(base_offset, last_offset, sequence, data))
            size += len(data)
            if size > max_bytes:
                break
        return found

    def _drop_first(self) -> None:
        self.bytes -= len(self._entries[self._start][3])
        self._start += 1

    def _cut(self) -> None:
        if self._start > len(self._entries) // 2:
            del self._entries[: self._start]
            self._start = 0
