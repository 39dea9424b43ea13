"""A partition of a native Dafka producer, read as a Kafka partition.

Native producers (C reference nodes, or `python -m gateway.mesh.dafka_producer`)
publish plain records, not Kafka batches. Each Dafka record is one Kafka
record at offset = its Dafka sequence: value = the content, key null, no
headers. Batches are built when a fetch asks for them; recent ones are
kept. The partition is read only: a Produce gets INVALID_TOPIC_EXCEPTION,
Kafka's answer to a Produce to a topic it lets clients read but not write
(its internal topics); TOPIC_AUTHORIZATION_FAILED would blame ACLs.

Timestamps: a store's receive time never travels on the wire, so a
record's timestamp (CreateTime) is when this gateway first learned it
exists, from a RECORD, a HEAD, a store's ACK or the stores' heads at start. Records are
learned in sequence order, so timestamps never decrease; they are not kept
across restarts (records already stored then get the start time).

The high watermark is the last sequence seen + 1: a native producer does
not wait for stores, so neither do its Kafka readers. The log start is 0
unless DeleteRecords moved it: stores do not say which sequence they hold
first, so records their retention dropped are simply not returned.

The other way round, a native Dafka consumer reads a topic produced
through the gateway as it is stored: each Dafka record's content is one
Kafka v2 record batch exactly as produced (offsets assigned, possibly
compressed), so such a consumer must parse the batch to get the values.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right

import trio

from gateway.kafka_error import KafkaError
from gateway.partitions.partition_log import MeshRead, PartitionLog
from gateway.partitions.recent_batches import StoredBatch
from gateway.partitions.watermark_waiters import WatermarkWaiters
from gateway.wall_clock import now_ms
from protocol.kafka.error_codes import ErrorCode
from protocol.records import Record, build_batch

BATCH_RECORDS = 500  # records in one built batch at most
BATCH_BYTES = 1 << 20  # and its size, unless one record alone is larger
RECORD_OVERHEAD = 16  # a record's framing beyond its value, rounded up
BATCH_OVERHEAD = 61
READ_COUNT = 64  # records asked of the mesh at once
CONTENT_CACHE_BYTES = 2 << 20  # contents seen live, for fetches at the head
BATCH_CACHE_BYTES = 4 << 20  # built batches, for consumers reading the same range


class ArrivalTimes:
    """When the gateway learned of each sequence: steps of (first sequence, time)."""

    def __init__(self):
        self._firsts = array("q")
        self._times = array("q")

    def learned(self, first: int, now_ms: int) -> None:
        """Sequences from `first` up to the next step were learned at `now_ms`."""
        if self._times and self._times[-1] >= now_ms:
            return  # same millisecond (or a clock step back): one step, times never decrease
        self._firsts.append(first)
        self._times.append(now_ms)

    def at(self, sequence: int) -> int:
        return self._times[max(bisect_right(self._firsts, sequence) - 1, 0)]

    def first_reaching(self, timestamp: int) -> tuple[int, int] | None:
        """(first sequence, time) of the first step at or after `timestamp`."""
        step = bisect_left(self._times, timestamp)
        return (self._firsts[step], self._times[step]) if step < len(self._times) else None

    def last(self) -> tuple[int, int] | None:
        return (self._firsts[-1], self._times[-1]) if self._times else None


class BoundedCache(dict):
    """A dict dropping its oldest entries beyond `limit` bytes, as `sizeof` measures values."""

    def __init__(self, limit: int, sizeof=len):
        super().__init__()
        self.limit = limit
        self.sizeof = sizeof
        self.size = 0

    def keep(self, key, value) -> None:
        if key in self:
            return
        self[key] = value
        self.size += self.sizeof(value)
        while self.size > self.limit and len(self) > 1:
            self.size -= self.sizeof(self.pop(next(iter(self))))


class NativePartition:
    """The read side of PartitionLog's interface, over a native producer's partition."""

    leader_epoch = 0  # alone; in a cluster the epoch it is led at (`led_at`)
    epochs = ((0, 0),)  # the leader epochs' start offsets: every record is of epoch 0
    first_sequence = 0  # the stores keep a native producer's records: none are discarded below the log start
    epoch_error = PartitionLog.epoch_error
    end_of_epoch = PartitionLog.end_of_epoch

    def __init__(self, topic: str, index: int, address: str, read: MeshRead, *, log_start_offset: int = 0):
        self.topic = topic
        self.index = index
        self.address = address  # the native producer's UUID
        self._read = read
        self.log_start_offset = log_start_offset
        self.high_watermark = 0
        self._arrivals = ArrivalTimes()
        self._live = BoundedCache(CONTENT_CACHE_BYTES)  # sequence -> content
        self._batches = BoundedCache(BATCH_CACHE_BYTES, lambda batch: len(batch.data))  # by base offset
        self._fetch_waiters = WatermarkWaiters()

    @property
    def next_offset(self) -> int:
        return self.high_watermark

    @property
    def last_stable_offset(self) -> int:
        return self.high_watermark  # native producers write no transactions

    def active_producers(self) -> list:
        return []  # native producers are not Kafka producers

    def aborted_transactions(self, start: int, end: int) -> list:
        return []

    def led_at(self, epoch: int) -> None:
        """Serve as the leader of `epoch` from now on. Its records are all of epoch 0 (every gateway
        builds the same batches: which gateway led when a record came is kept nowhere), and
        `epoch` starts at the high watermark, as a Kafka leader starts its epoch at its log end: so
        a client that read up to any offset this or an earlier leader served, asking where the
        epoch of its last record ends, hears an end at or after that offset, never a truncation."""
        self.leader_epoch = epoch
        self.epochs = ((0, 0), (epoch, self.high_watermark)) if epoch > 0 else ((0, 0),)

    def move_log_start(self, offset: int) -> bool:
        """Make `offset` the log start if it is past it; whether it moved. The records
        stay on the stores: they belong to their native producer."""
        if offset <= self.log_start_offset:
            return False
        self.log_start_offset = offset
        return True

    def saw_head(self, sequence: int) -> None:
        self._advance(sequence + 1)

    def saw_record(self, sequence: int, content: bytes) -> None:
        if sequence >= self.log_start_offset:
            self._live.keep(sequence, content)
        self._advance(sequence + 1)

    def _advance(self, end: int) -> None:
        if end <= self.high_watermark:
            return
        self._arrivals.learned(self.high_watermark, now_ms())
        self.high_watermark = end
        self._fetch_waiters.wake()

    def notify_on_data(self, waiter: trio.Event) -> None:
        """Set `waiter` when the high watermark next moves."""
        self._fetch_waiters.add(waiter)

    def forget_waiter(self, waiter: trio.Event) -> None:
        self._fetch_waiters.discard(waiter)

    async def append(self, batch, *, log_append_time: int | None = None, room_timeout_s: float = 0.0):
        raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION,
                         f"{self.topic} is published by native Dafka producers: it is read only")

    async def read(self, offset: int, max_bytes: int, *, limit: int | None = None,
                   min_one: bool = True) -> list[StoredBatch]:
        """Batches from `offset` up to `limit` (the watermark by default) within
        `max_bytes`, and with `min_one` (Kafka's minOneMessage) the first one if any
        whatever its size."""
        limit = self.high_watermark if limit is None else limit
        found: list[StoredBatch] = []
        size = 0
        while offset < limit and (not found or size < max_bytes):
            batch = await self._batch(offset, limit, max_bytes - size)
            if batch is None or ((found or not min_one) and size + len(batch.data) > max_bytes):
                break
            found.append(batch)
            size += len(batch.data)
            offset = batch.last_offset + 1
        return found

    async def _batch(self, first: int, limit: int, room: int) -> StoredBatch | None:
        """The batch from `first` (a kept one, or one built within `room`), None if unreadable."""
        kept = self._batches.get(first)
        if kept is not None and kept.last_offset < limit:
            return kept
        contents = await self._contents(first, min(limit, first + BATCH_RECORDS), min(room, BATCH_BYTES))
        if not contents:
            return None
        records = [Record(first + n, self._arrivals.at(first + n), None, bytes(content))
                   for n, content in enumerate(contents)]
        batch = StoredBatch(first, first + len(records) - 1, first,
                            build_batch(records, partition_leader_epoch=0))
        self._batches.keep(first, batch)
        return batch

    async def _contents(self, first: int, end: int, budget: int) -> list:
        """Contents of sequences [first, end), within `budget` bytes of batch (one at least),
        up to the first one the mesh does not return."""
        contents = []
        size = BATCH_OVERHEAD
        sequence = first
        complete = True
        while sequence < end and complete:
            if sequence in self._live:
                chunk = [self._live[sequence]]
            else:
                count = self._missing_run(sequence, min(end, sequence + READ_COUNT))
                chunk = [c for _, c in await self._read(self.topic, self.address, sequence, count)]
                complete = len(chunk) == count  # the rest is not to be had now: do not wait again
            for content in chunk:
                size += len(content) + RECORD_OVERHEAD
                if contents and size > budget:
                    return contents
                contents.append(content)
            sequence += len(chunk)
        return contents

    def _missing_run(self, first: int, end: int) -> int:
        """How many sequences from `first` (before `end`) are not kept live."""
        sequence = first
        while sequence < end and sequence not in self._live:
            sequence += 1
        return sequence - first

    async def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first readable record stamped at or after `timestamp`."""
        return self._readable(self._arrivals.first_reaching(timestamp))

    async def offset_of_max_timestamp(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with the largest timestamp, or None."""
        return self._readable(self._arrivals.last())

    def _readable(self, step: tuple[int, int] | None) -> tuple[int, int] | None:
        if step is None:
            return None
        offset = max(step[0], self.log_start_offset)
        return (offset, self._arrivals.at(offset)) if offset < self.high_watermark else None
