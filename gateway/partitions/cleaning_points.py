"""How far the stores may clean a compacted partition: the gateway's half of Kafka's cleaner.

Kafka cleans a log's segments but the active one, below the first unstable
offset, older than min.compaction.lag.ms, when the dirty ratio is reached or
a record waited max.compaction.lag.ms; a tombstone goes delete.retention.ms
after the cleaner first passed it. Here the stores keep their own segments,
so the gateway keeps Kafka's segments as positions in the partition: its
active segment starts at `segment_start` and rolls, at the next batch, after
segment.ms, and at the batch that would take it past segment.bytes. Each
check turns these rules into one `Compaction` of Dafka sequences, sent to
every store in the partition's discard directive, so all stores clean the
same batches; each store applies the dirty ratio to its own log.
"""

from __future__ import annotations

from collections import deque
from typing import NamedTuple

from protocol.journal.discard_directive import Compaction


class CompactionConfig(NamedTuple):
    segment_ms: int
    segment_bytes: int
    min_lag_ms: int
    max_lag_ms: int
    delete_retention_ms: int
    dirty_ratio: float


class CleaningPoints:
    def __init__(self):
        self.segment_start: int | None = None  # the first sequence of the gateway's active segment
        self.segment_opened_ms = 0
        self._roll_at: int | None = None  # where the next segment starts, once a batch comes after it
        self.clean_before = 0
        self.tombstones_before = 0
        self.last: Compaction | None = None  # the directive last sent, resent with the partition's others
        self._history: deque[tuple[int, int]] = deque()  # (time, clean_before then), oldest first

    def advance(self, offsets, stable_sequence: int, config: CompactionConfig, now_ms: int) -> Compaction:
        """The directive now, for a partition whose offset index is `offsets` and whose
        first unstable batch is at `stable_sequence`."""
        end = offsets.next_sequence
        self._roll(offsets, end, config, now_ms)
        young = offsets.first_reaching(now_ms - config.min_lag_ms + 1)
        clean_before = min(self.segment_start, stable_sequence, end if young is None else young)
        self.clean_before = max(self.clean_before, clean_before)
        overdue = offsets.first_reaching(now_ms - config.max_lag_ms + 1) if config.max_lag_ms < now_ms else 0
        must_clean_before = min(self.clean_before, end if overdue is None else overdue)
        self._history.append((now_ms, self.clean_before))
        while len(self._history) > 1 and self._history[1][0] <= now_ms - config.delete_retention_ms:
            self._history.popleft()
        if self._history[0][0] <= now_ms - config.delete_retention_ms:
            self.tombstones_before = max(self.tombstones_before, self._history[0][1])
        self.last = Compaction(self.clean_before, self.tombstones_before, must_clean_before, config.dirty_ratio)
        return self.last

    def _roll(self, offsets, end: int, config: CompactionConfig, now_ms: int) -> None:
        """As Kafka rolls at the first append after the active segment grew older than
        segment.ms or at an append that would take it past segment.bytes, so that the
        active segment always holds the newest batch; an empty one starts its clock at its first batch."""
        if self.segment_start is None or self.segment_start < offsets.first_sequence:
            self.segment_start, self.segment_opened_ms = max(offsets.first_sequence, self.segment_start or 0), now_ms
            self._roll_at = None
        # segment.bytes cuts where Kafka's appends cut, found from the batches' sizes: a burst
        # of batches between two checks, with none after it, rolls as in Kafka
        while (past := offsets.first_past(self.segment_start, config.segment_bytes)) is not None:
            self.segment_start, self.segment_opened_ms, self._roll_at = past, now_ms, None
        if end == self.segment_start:
            self.segment_opened_ms = now_ms
        elif self._roll_at is not None and end > self._roll_at:
            self.segment_start, self.segment_opened_ms, self._roll_at = self._roll_at, now_ms, None
        elif now_ms - self.segment_opened_ms >= config.segment_ms:
            self._roll_at = end
