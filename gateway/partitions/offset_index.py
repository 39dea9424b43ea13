"""Offsets of a partition's batches, by Dafka sequence.

Sequences are dense (one per batch), so the index is three flat arrays
indexed by `sequence - first_sequence`: the batch's base offset, the
largest timestamp seen up to and including it and the bytes of all
batches up to and including it (so that a read from the stores asks for
no more batches than a fetch can use). The arrays only grow at the end
and are sorted, so lookups are bisections: 24 bytes a batch.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right


class OffsetIndex:
    def __init__(self, first_sequence: int = 0, next_offset: int = 0):
        self.first_sequence = first_sequence
        self.next_offset = next_offset
        self._base_offsets = array("q")
        self._max_timestamps = array("q")  # running maximum: sorted
        self._byte_ends = array("q")  # running sum of batch sizes: sorted
        self._dropped_bytes = 0  # of the batches dropped: where the running sum starts

    def __len__(self) -> int:
        return len(self._base_offsets)

    @property
    def last_sequence(self) -> int | None:
        return self.first_sequence + len(self) - 1 if len(self) else None

    @property
    def size_bytes(self) -> int:
        """Bytes of the batches indexed."""
        return self._byte_ends[-1] - self._dropped_bytes if len(self) else 0

    @property
    def first_offset(self) -> int:
        return self._base_offsets[0] if len(self) else self.next_offset

    @property
    def next_sequence(self) -> int:
        return self.first_sequence + len(self)

    def add(self, sequence: int, base_offset: int, offset_count: int, max_timestamp: int,
            size: int) -> None:
        if sequence != self.next_sequence or base_offset != self.next_offset:
            raise ValueError(
                f"batch at sequence {sequence} offset {base_offset} does not follow "
                f"sequence {self.next_sequence} offset {self.next_offset}"
            )
        running, byte_end = (self._max_timestamps[-1], self._byte_ends[-1]) if len(self) else (-1, 0)
        self._base_offsets.append(base_offset)
        self._max_timestamps.append(max(running, max_timestamp))
        self._byte_ends.append(byte_end + size)
        self.next_offset = base_offset + offset_count

    def sequence_of(self, offset: int) -> int:
        """The sequence of the batch holding `offset` (which must be indexed)."""
        if not len(self) or offset < self._base_offsets[0] or offset >= self.next_offset:
            raise KeyError(offset)
        return self.first_sequence + bisect_right(self._base_offsets, offset) - 1

    def range_of(self, sequence: int) -> tuple[int, int]:
        """(base offset, last offset) of the batch at `sequence`."""
        position = sequence - self.first_sequence
        if not 0 <= position < len(self):
            raise KeyError(sequence)
        end = self._base_offsets[position + 1] if position + 1 < len(self) else self.next_offset
        return self._base_offsets[position], end - 1

    def batches_within(self, sequence: int, max_bytes: int) -> int:
        """How many batches from `sequence` on fit in `max_bytes`; at least one."""
        position = sequence - self.first_sequence
        return max(bisect_right(self._byte_ends, self._start(position) + max_bytes, position) - position, 1)

    def size_of(self, sequence: int) -> int:
        """Bytes of the batch at `sequence` (which must be indexed) as it was added."""
        position = sequence - self.first_sequence
        return self._byte_ends[position] - self._start(position)

    def first_past(self, sequence: int, max_bytes: int) -> int | None:
        """The first batch after `sequence` that would take the bytes from `sequence` past
        `max_bytes` (None if none): where Kafka's log, whose segment started at `sequence`,
        rolled when that batch was appended."""
        position = sequence - self.first_sequence
        if not 0 <= position < len(self):
            return None
        past = bisect_right(self._byte_ends, self._start(position) + max_bytes, position + 1)
        return None if past == len(self) else self.first_sequence + past

    def _start(self, position: int) -> int:
        """The running byte sum before the batch at `position`: the running sums go on from the
        batches dropped."""
        return self._byte_ends[position - 1] if position > 0 else self._dropped_bytes

    def first_reaching(self, timestamp: int) -> int | None:
        """The first sequence whose batch, or an earlier one, has a timestamp >= `timestamp`."""
        position = bisect_left(self._max_timestamps, timestamp)
        return None if position == len(self) else self.first_sequence + position

    def max_timestamp(self) -> int:
        return self._max_timestamps[-1] if len(self) else -1

    def first_with_max_timestamp(self) -> int | None:
        """The sequence of the first batch that holds the partition's largest timestamp."""
        return self.first_reaching(self.max_timestamp()) if len(self) else None

    def expired(self, now_ms: int, retention_ms: int, retention_bytes: int) -> int:
        """How many leading batches retention lets go, as Kafka's log cleaner would:
        those whose newest timestamp is older than `retention_ms`, and the oldest
        ones as long as at least `retention_bytes` remain (-1: no limit)."""
        by_time = bisect_left(self._max_timestamps, now_ms - retention_ms) if retention_ms >= 0 else 0
        by_size = 0
        if retention_bytes >= 0 and len(self):
            by_size = bisect_right(self._byte_ends, self._byte_ends[-1] - retention_bytes)
        return max(by_time, by_size)

    def columns(self) -> tuple[array, array, array]:
        """Copies of the base offsets, running maximum timestamps and running byte ends."""
        return array("q", self._base_offsets), array("q", self._max_timestamps), array("q", self._byte_ends)

    @property
    def dropped_bytes(self) -> int:
        return self._dropped_bytes

    @classmethod
    def restored(cls, first_sequence: int, next_offset: int, dropped_bytes: int,
                 columns: tuple[array, array, array]) -> OffsetIndex:
        """The index `columns` describe, as a checkpoint kept it."""
        index = cls(first_sequence, next_offset)
        index._base_offsets, index._max_timestamps, index._byte_ends = columns
        index._dropped_bytes = dropped_bytes
        return index

    def drop_before(self, sequence: int) -> None:
        """Forget batches below `sequence` (retention or DeleteRecords moved past them)."""
        cut = min(max(sequence - self.first_sequence, 0), len(self))
        if cut:
            self._dropped_bytes = self._byte_ends[cut - 1]
        del self._base_offsets[:cut]
        del self._max_timestamps[:cut]
        del self._byte_ends[:cut]
        self.first_sequence += cut
