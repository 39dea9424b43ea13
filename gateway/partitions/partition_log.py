"""A Kafka partition kept as a Dafka partition that this gateway produces.

Each Dafka record is one Kafka record batch with its offsets assigned, so
produce and fetch move batches as bytes. The Dafka sequence of a batch is
its ordinal in the partition; `OffsetIndex` maps offsets to sequences.
Recent batches stay in memory (the tail) for fetches; older ones are read
back from the stores through the mesh.

In a compacted topic the stores clean the batches below `cleaning.clean_before`
(see cleaning_points.py): such a batch keeps its sequence and offsets with
fewer records, or none. The tail keeps nothing below that point, so that reads
there go to the stores and get the cleaned batches, and reads skip the
batches left empty, as Kafka's log holds none there.

A batch is acknowledged to an acks=1 producer once one store holds it, to
an acks=all producer once `min_insync` stores do. The in-sync stores are the
live ones that hold what was published `replica.lag.time.max.ms` ago. The
high watermark, past which consumers see nothing, is Kafka's rule over them:
the end of the longest prefix that `min_insync` stores hold, or that all
in-sync ones hold when fewer are in sync (so a single store's ACK moves it,
as a single replica's write does in Kafka). An answered batch is always
below it when Kafka's would be.
"""

from __future__ import annotations

import itertools
import math
from collections import deque
from typing import Awaitable, Callable, NamedTuple, Protocol, Sequence

import structlog
import trio

from gateway.kafka_error import KafkaError
from gateway.partitions.cleaning_points import CleaningPoints, CompactionConfig
from gateway.partitions.offset_index import OffsetIndex
from gateway.partitions.producer_state import ActiveProducer, ProducerStates
from gateway.partitions.read_ahead import ReadAhead, ReadAheadMemory
from gateway.partitions.recent_batches import RecentBatches, StoredBatch
from gateway.partitions.transaction_index import AbortedTransaction
from gateway.partitions.watermark_waiters import WatermarkWaiters
from protocol.journal.discard_directive import Compaction
from protocol.journal.partition_checkpoint import PartitionCheckpoint
from protocol.kafka.error_codes import ErrorCode
from protocol.records import RecordBatch, assign_offsets
from protocol.records.compaction import is_empty_batch

log = structlog.get_logger()

STORE_READ_BATCHES = 64  # batches asked of the stores at once, at most
MARKER_CHECKS = 16  # ABORT markers read a cleaning check, to forget those the stores emptied
MARK_INTERVAL_S = 1.0  # how finely publish times are remembered for the in-sync stores' lag


class Appended(NamedTuple):
    """Where a batch went: its base offset and Dafka sequence, and the log append time a
    produce answers with (-1 for a new batch without one; a duplicate's original's as stored)."""

    base_offset: int
    sequence: int
    log_append_time: int


class MeshPartition(Protocol):
    """What a partition needs of the Dafka producer that publishes it."""

    uuid: str
    next_sequence: int
    deposed_by: int | None  # not None once the stores are fenced by a newer leader: this gateway leads no more

    def publish_now(self, contents: Sequence[bytes]) -> int: ...

    async def wait_acked(self, sequence: int, stores: int) -> None: ...

    def call_when_acked(self, sequence: int, stores: int, callback: Callable[[], None]) -> None: ...

    def has_room(self, size: int) -> bool: ...

    def acked_through(self, stores: int) -> int: ...

    def watch_acks(self, listener: Callable[[], None] | None) -> None: ...

    async def wait_for_room(self, size: int) -> None: ...


# (subject, partition uuid, first sequence, count) -> [(sequence, content)]
MeshRead = Callable[[str, str, int, int], Awaitable[list[tuple[int, bytes]]]]


class PartitionLog:
    """Offsets, watermarks and batches of one partition."""

    def __init__(self, topic: str, index: int, mesh: MeshPartition, read: MeshRead,
                 offsets: OffsetIndex, producers: ProducerStates, *, min_insync: int, tail_bytes: int,
                 live_stores: Callable[[], int], lag_s: float, read_ahead: ReadAheadMemory,
                 log_start_offset: int = 0, leader_epoch: int = 0, sequence_epochs: Sequence[tuple[int, int]] = ()):
        self.topic = topic
        self.index = index
        self.mesh = mesh
        self._read_stores = lambda first, count: read(topic, mesh.uuid, first, count)
        self._stores = ReadAhead(self._read_stores, read_ahead)
        self.cleaning = CleaningPoints()
        self.offsets = offsets
        self.producers = producers
        self._min_insync = min_insync
        self._live_stores = live_stores
        self._lag_s = lag_s
        # (time, last sequence published by then), one a MARK_INTERVAL_S at most, back to lag_s ago
        self._marks = deque([(trio.current_time(), offsets.next_sequence - 1)])
        self.log_start_offset = log_start_offset
        self.leader_epoch = leader_epoch
        # Kafka's leader-epoch cache: (epoch, first offset), this leader's from the log end it
        # opened at, older ones as far as known (the stores' epochs of a won fence).
        self.epochs = epochs_in_offsets(offsets, sequence_epochs, leader_epoch)
        self.high_watermark = offsets.next_offset
        self._tail = RecentBatches(tail_bytes)
        self._fetch_waiters = WatermarkWaiters()
        self._store_waits: dict[trio.CancelScope, int] = {}  # produce waits -> the stores each needs
        self._store_calls: dict[Callable[[], None], int] = {}  # call_when_stored's -> the stores each needs
        self._scope = trio.CancelScope()  # cancelled once this gateway stops leading it
        self._closed = False
        self._continued_below = 0  # the next leader's log holds every sequence below it
        mesh.watch_acks(self._acks_moved)  # the watermark moves with each ACK, no task between

    def epoch_error(self, current_leader_epoch: int) -> ErrorCode | None:
        """Kafka's answer to a client whose idea of the leader epoch differs from ours."""
        if current_leader_epoch == -1 or current_leader_epoch == self.leader_epoch:
            return None
        if current_leader_epoch > self.leader_epoch:
            return ErrorCode.UNKNOWN_LEADER_EPOCH
        return ErrorCode.FENCED_LEADER_EPOCH

    def end_of_epoch(self, epoch: int) -> tuple[int, int]:
        """OffsetForLeaderEpoch's answer for `epoch` (see `epoch_end`)."""
        return epoch_end(self.epochs, epoch, self.next_offset)

    @property
    def min_insync(self) -> int:
        return self._min_insync

    @min_insync.setter
    def min_insync(self, stores: int) -> None:
        self._min_insync = stores
        self.stores_changed()  # fewer stores needed: what they hold may be below the watermark now

    def in_sync_stores(self) -> int:
        """The live stores that hold every batch published `lag_s` ago, counted up to
        `min_insync` (the ACKs say how far the best k stores went, for each k)."""
        behind = self._published_before(trio.current_time() - self._lag_s)
        holding = 0
        while holding < self._min_insync and self.mesh.acked_through(holding + 1) >= behind:
            holding += 1
        return min(self._live_stores(), holding)

    def _published_before(self, horizon: float) -> int:
        """The last sequence known published by `horizon` (-1: the partition is younger)."""
        marks = self._marks
        while len(marks) > 1 and marks[1][0] <= horizon:
            marks.popleft()
        return marks[0][1] if marks[0][0] <= horizon else -1

    def stores_changed(self) -> None:
        """Stores came, went or fell behind: the watermark may move (as Kafka's when its ISR
        shrinks), and produce waiting for more stores than are in sync now is answered."""
        self._acks_moved()
        if self._store_waits:
            in_sync = self.in_sync_stores()
            for waiting, stores in self._store_waits.items():
                if in_sync < stores:
                    waiting.cancel()
        if self._store_calls:
            in_sync = self.in_sync_stores()
            for call, stores in list(self._store_calls.items()):
                if in_sync < stores:
                    call()

    @property
    def next_offset(self) -> int:
        return self.offsets.next_offset

    async def append(self, batch: RecordBatch, *, log_append_time: int | None = None,
                     room_timeout_s: float = math.inf) -> Appended:
        """Stamp and publish a checked v2 batch.

        A retried batch of an idempotent producer is not appended again: the
        answer is where it went the first time, with its timestamp then (Kafka's
        UnifiedLog answers a duplicate with its original's, whatever the topic's type). From the duplicate check to the
        publish nothing waits, so concurrent appends keep offsets and sequences
        in the order of the bytes published without a lock. While the stores
        take nothing and the batches they have not taken fill the producer's
        memory, the append waits, REQUEST_TIMED_OUT after `room_timeout_s`.
        A partition whose stores are fenced at a newer leader epoch is led elsewhere:
        NOT_LEADER_OR_FOLLOWER, as Kafka's deposed leader answers.
        """
        self._check_leading()
        if not self.mesh.has_room(batch.size):  # the common case needs no timer
            with trio.move_on_after(room_timeout_s) as waiting:
                await self.mesh.wait_for_room(batch.size)
            if waiting.cancelled_caught:
                raise KafkaError(ErrorCode.REQUEST_TIMED_OUT,
                                 "the stores have not taken earlier batches: no room for more")
        self._check_leading()
        duplicate = self.producers.duplicate_of(batch)
        if duplicate is not None:
            return Appended(duplicate.base_offset, duplicate.dafka_sequence, duplicate.max_timestamp)
        first = self.offsets.next_offset
        assign_offsets(batch, first, self.leader_epoch, log_append_time=log_append_time)
        sequence = self.mesh.publish_now([batch.buffer])
        now = trio.current_time()
        if now - self._marks[-1][0] >= MARK_INTERVAL_S:
            self._marks.append((now, sequence))
        self._index(sequence, batch, log_append_time)
        self._tail.append(sequence, first, first + batch.last_offset_delta, batch.buffer)
        return Appended(first, sequence, -1 if log_append_time is None else log_append_time)

    def _check_leading(self) -> None:
        if self._scope.cancel_called:  # retired or closed: another gateway of the cluster may lead it now
            raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER, "this gateway no longer leads the partition")
        if self.mesh.deposed_by is not None:
            raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER,
                             f"the stores are fenced by a leader newer than this gateway's epoch {self.leader_epoch}")

    def _index(self, sequence: int, batch: RecordBatch, log_append_time: int | None = None) -> None:
        timestamp = batch.max_timestamp if log_append_time is None else log_append_time
        self.producers.appended(batch, batch.base_offset, sequence)
        self.offsets.add(sequence, batch.base_offset, batch.last_offset_delta + 1, timestamp, batch.size)

    def stores_for(self, acks: int) -> int:
        """How many stores must hold a batch before a producer with `acks` (1 or -1) is answered."""
        return 1 if acks == 1 else self._min_insync

    def is_stored(self, sequence: int, stores: int) -> bool:
        return sequence < self._continued_below or self.mesh.acked_through(stores) >= sequence

    async def wait_durable(self, sequence: int) -> None:
        """Return once `min_insync` stores hold every batch up to `sequence`, however long that
        takes; KafkaError NOT_LEADER_OR_FOLLOWER if the partition is deposed first."""
        await self.mesh.wait_acked(sequence, self._min_insync)
        if not self.is_stored(sequence, self._min_insync):
            self._check_leading()
        self._acks_moved()

    async def wait_stored(self, sequence: int, stores: int) -> None:
        """Return once `stores` stores hold every batch up to `sequence`, with the high
        watermark moved by their ACKs, so that a client told "written" sees it when it may.

        As soon as fewer than `stores` stores are in sync (`stores_changed`), KafkaError
        NOT_ENOUGH_REPLICAS_AFTER_APPEND instead: Kafka's answer when the ISR shrinks under
        a batch its leader appended. The batch may still become durable later, as in Kafka;
        an idempotent producer's retry of it is answered from the first append.
        """
        with trio.CancelScope() as waiting:
            if self.in_sync_stores() < stores or self._closed:
                waiting.cancel()
            self._store_waits[waiting] = stores
            try:
                await self.mesh.wait_acked(sequence, stores)
            finally:
                del self._store_waits[waiting]
        if self._closed and not self.is_stored(sequence, stores):
            raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER, "this gateway stopped leading the partition before "
                             "the stores acknowledged the batch")
        if not self.is_stored(sequence, stores):
            self._check_leading()  # deposed: Kafka's DelayedProduce answers NOT_LEADER_OR_FOLLOWER
            raise KafkaError(ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
                             f"{self.in_sync_stores()} stores in sync, {stores} needed: the batch is not durable")
        # No watermark to move here: the ACK that stored it moved it (`watch_acks`) before waking
        # this wait, to what k <= min_insync stores hold, so past it for acks=all (as in Kafka).

    def call_when_stored(self, sequence: int, stores: int, callback: Callable[[], None]) -> None:
        """Call `callback` once `wait_stored` would return or raise at once: the batch at `sequence`
        stored by `stores` stores, fewer in sync, the partition deposed or closed. It may be called
        more than once."""
        if (self.is_stored(sequence, stores) or self.in_sync_stores() < stores or self._closed
                or self.mesh.deposed_by is not None):
            callback()
            return

        def call() -> None:
            self._store_calls.pop(call, None)
            callback()

        self._store_calls[call] = stores
        self.mesh.call_when_acked(sequence, stores, call)

    @property
    def size_bytes(self) -> int:
        """Bytes of the batches from the log start on (whole batches, as Kafka counts segments)."""
        return self.offsets.size_bytes

    @property
    def last_stable_offset(self) -> int:
        """Where read_committed consumers stop: before the oldest unfinished transaction."""
        return self.producers.transactions.last_stable_offset(self.high_watermark)

    def aborted_transactions(self, start: int, end: int) -> list[AbortedTransaction]:
        """Aborted transactions with records in [start, end), for read_committed fetches."""
        return self.producers.transactions.aborted_between(start, end)

    def active_producers(self) -> list[ActiveProducer]:
        return self.producers.active()

    def limit_tail(self, limit: int) -> None:
        """Keep at most `limit` bytes of recent batches in memory (always the last one)."""
        self._tail.keep_within(limit)

    def retire(self) -> None:
        """Stop leading (another gateway leads it now): appends are refused and nothing more is
        read ahead, but produce waiting for stores waits on, for `close` to tell how it ended."""
        self._scope.cancel()
        self._stores.forget()

    def close(self, continued_below: int = 0) -> None:
        """Stop following acknowledgements (the topic was deleted, or its leadership moved);
        produce still waiting for stores is answered at once: stored if the next leader's log
        holds its batch (below `continued_below`), else NOT_LEADER_OR_FOLLOWER."""
        self._continued_below = continued_below
        self._closed = True
        self.mesh.watch_acks(None)
        self.retire()
        for waiting in self._store_waits:
            waiting.cancel()
        for call in list(self._store_calls):
            call()

    async def run(self) -> None:
        """Read old batches ahead for catching-up consumers; runs until `close`."""
        with self._scope:
            await self._stores.run()

    def _acks_moved(self) -> None:
        self._advance_to(self.mesh.acked_through(max(1, self.in_sync_stores())))

    def _advance_to(self, sequence: int) -> None:
        """The watermark past the batch at `sequence`, which enough stores hold."""
        if self.offsets.first_sequence <= sequence < self.offsets.next_sequence:
            self._advance(self.offsets.range_of(sequence)[1] + 1)

    def _advance(self, watermark: int) -> None:
        if watermark <= self.high_watermark:
            return
        self.high_watermark = watermark
        self._fetch_waiters.wake()

    def notify_on_data(self, waiter: trio.Event) -> None:
        """Set `waiter` when the high watermark next moves."""
        self._fetch_waiters.add(waiter)

    def forget_waiter(self, waiter: trio.Event) -> None:
        self._fetch_waiters.discard(waiter)

    async def read(self, offset: int, max_bytes: int, *, limit: int | None = None,
                   min_one: bool = True) -> list[StoredBatch]:
        """Batches from the one holding `offset` up to `limit` (the watermark by
        default) within `max_bytes`, and with `min_one` (Kafka's minOneMessage) the
        first one if any whatever its size; batches that compaction left empty are
        skipped, and so are those of a transaction whose marker was read emptied,
        from a store not cleaned yet. Without `min_one`, nothing is read when the
        index tells that the first batch does not fit.

        An emptied ABORT marker read here makes the transaction index forget its
        transaction (a store empties it only after its records). A read during which
        the index forgot one, here or in another read, may hold records of that
        transaction read before: it is done again, so that `aborted_transactions`
        asked right after it reports every aborted transaction it returns records of
        and none whose marker it skipped."""
        transactions = self.producers.transactions
        while True:
            forgotten = transactions.forgotten
            found = await self._read_once(offset, max_bytes, self.high_watermark if limit is None else limit,
                                          min_one)
            if transactions.forgotten == forgotten:
                return found
            self._stores.forget()

    async def _read_once(self, offset: int, max_bytes: int, limit: int, min_one: bool) -> list[StoredBatch]:
        if offset >= limit:
            return []
        sequence = self.offsets.sequence_of(offset)
        if not min_one and self._too_large(sequence, max_bytes):
            return []  # not read: neither a store round trip nor a wait for the read-ahead
        found: list[StoredBatch] = []
        size = 0
        while not found:
            batches = await self._batches_from(sequence, max_bytes)
            for batch in batches:
                if batch.base_offset >= limit or ((found or not min_one) and size + len(batch.data) > max_bytes):
                    return found
                if not is_empty_batch(batch.data):
                    if not self._of_cleaned_transaction(batch):
                        found.append(batch)
                        size += len(batch.data)
                elif RecordBatch(memoryview(batch.data)).is_control:
                    self.producers.transactions.forget_aborted(batch.base_offset)
            sequence = batches[-1].sequence + 1 if batches else self.offsets.next_sequence
            if sequence >= self.offsets.next_sequence:
                break
        return found

    def _too_large(self, sequence: int, max_bytes: int) -> bool:
        """Whether the batch at `sequence` is read as it was added (compaction and a cleaned
        transaction's dropping are below the cleaning point) and is larger than `max_bytes`."""
        return (max_bytes <= 0 or sequence >= self.cleaning.clean_before
                and not self.producers.transactions.has_cleaned) and self.offsets.size_of(sequence) > max_bytes

    def _of_cleaned_transaction(self, batch: StoredBatch) -> bool:
        """Whether `batch` is of a transaction whose marker a store emptied (see TransactionIndex),
        served by a store that has not cleaned it yet: dropped, as the cleaned stores dropped it."""
        transactions = self.producers.transactions
        if not transactions.has_cleaned:
            return False
        header = RecordBatch(memoryview(batch.data))
        return header.is_transactional and transactions.in_cleaned_transaction(header.producer_id,
                                                                               batch.base_offset)

    async def _batches_from(self, sequence: int, max_bytes: int) -> list[StoredBatch]:
        tail_start = self._tail.first_sequence
        if tail_start is not None and sequence >= tail_start:
            return self._tail.since(sequence, max_bytes)
        # Older than the tail: ask the stores for what fits in max_bytes, a bounded number at a time.
        if tail_start is None:
            tail_start = self.mesh.next_sequence
        count = min(self.offsets.batches_within(sequence, max_bytes), STORE_READ_BATCHES)
        records = await self._stores.read(sequence, max(min(count, tail_start - sequence), 1), tail_start)
        # Retention or DeleteRecords may have moved the log start past some meanwhile.
        return [self._stored(seq, content) for seq, content in records if seq >= self.offsets.first_sequence]

    def compaction(self, config: CompactionConfig, now_ms: int) -> Compaction:
        """How far the stores may clean now; the tail and the read-ahead forget what they may clean."""
        cleaned_before = self.cleaning.clean_before
        compaction = self.cleaning.advance(self.offsets, self._stable_sequence(), config, now_ms)
        if compaction.clean_before > cleaned_before:
            self._tail.drop_below(compaction.clean_before)
            self._stores.forget()
        return compaction

    async def forget_emptied_markers(self) -> None:
        """Read the ABORT markers that the stores may have emptied by now (below the tombstone
        horizon), MARKER_CHECKS at most, so that the index forgets their transactions where no
        consumer reads (`read` does). Those starting below the log start are left to readers.
        Read past the read-ahead, which stays the catching-up consumers'."""
        horizon = self.cleaning.tombstones_before
        if horizon <= self.offsets.first_sequence:
            return
        end = self.offsets.range_of(horizon)[0] if horizon < self.offsets.next_sequence else self.offsets.next_offset
        candidates = (aborted for aborted in self.producers.transactions.aborted_before(end)
                      if aborted.first_offset >= self.log_start_offset)  # checked anew after each read
        for aborted in itertools.islice(candidates, MARKER_CHECKS):
            for _, content in await self._read_stores(self.offsets.sequence_of(aborted.last_offset), 1):
                if is_empty_batch(memoryview(content)):  # a zmq frame
                    self.producers.transactions.forget_aborted(aborted.last_offset)

    def _stable_sequence(self) -> int:
        """The sequence of the batch holding the last stable offset (the end if none does)."""
        stable = self.last_stable_offset
        if stable >= self.offsets.next_offset or not len(self.offsets):
            return self.offsets.next_sequence
        return self.offsets.sequence_of(max(stable, self.offsets.first_offset))

    @property
    def first_sequence(self) -> int:
        """The sequence of the batch holding the log start: every batch below lies
        wholly below it, so the stores may discard them."""
        return self.offsets.first_sequence

    def apply_retention(self, now_ms: int, retention_ms: int, retention_bytes: int) -> bool:
        """Move the log start past expired batches (never past the high
        watermark); whether it moved."""
        count = self.offsets.expired(now_ms, retention_ms, retention_bytes)
        if not count:
            return False
        sequence = self.offsets.first_sequence + count
        start = self.offsets.range_of(sequence)[0] if count < len(self.offsets) else self.offsets.next_offset
        return self.move_log_start(min(start, self.high_watermark))

    def move_log_start(self, offset: int) -> bool:
        """Make `offset` (at most the log end) the log start if it is past it, forgetting
        the batches wholly below; whether it moved."""
        if offset <= self.log_start_offset:
            return False
        self.log_start_offset = offset
        self.producers.transactions.drop_cleaned_before(offset)
        self.offsets.drop_before(self.offsets.sequence_of(offset) if offset < self.offsets.next_offset
                                 else self.offsets.next_sequence)
        return True

    async def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record below the watermark stamped at or
        after `timestamp`, or None."""
        sequence = self.offsets.first_reaching(timestamp)
        return await self._first_record(sequence, lambda record: record.timestamp >= timestamp)

    async def offset_of_max_timestamp(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with the largest timestamp, or None."""
        largest = self.offsets.max_timestamp()
        sequence = self.offsets.first_with_max_timestamp()
        return await self._first_record(sequence, lambda record: record.timestamp == largest)

    async def _first_record(self, sequence: int | None, wanted) -> tuple[int, int] | None:
        last = self.offsets.last_sequence  # None when empty; 0 is a real first batch
        while sequence is not None and last is not None and sequence <= last:
            sequence = max(sequence, self.offsets.first_sequence)  # the log start may move meanwhile
            batches = await self._batches_from(sequence, 0)
            if not batches or batches[0].base_offset >= self.high_watermark:
                return None
            stored = batches[0]
            for record in RecordBatch(memoryview(stored.data)).records():
                if record.offset >= self.log_start_offset and wanted(record):
                    return record.offset, record.timestamp
            sequence += 1
        return None

    def checkpoint(self, topic_id: str) -> PartitionCheckpoint:
        """The index and producer state now, as a checkpoint of the last batch appended."""
        offsets = self.offsets
        return PartitionCheckpoint(topic_id, self.mesh.uuid, offsets.first_sequence, offsets.next_offset,
                                   offsets.dropped_bytes, *offsets.columns(), self.producers.state(),
                                   self.producers.transactions.state())

    def _stored(self, sequence: int, content: bytes) -> StoredBatch:
        base, last = self.offsets.range_of(sequence)
        return StoredBatch(base, last, sequence, memoryview(content))  # no copy: content is read-only


def epochs_in_offsets(offsets: OffsetIndex, sequence_epochs: Sequence[tuple[int, int]],
                      leader_epoch: int) -> list[tuple[int, int]]:
    """The leader-epoch cache in offsets: older epochs' (epoch, first sequence), as the stores
    keep them, through the index (one starting below the log start starts there, as Kafka
    cuts its cache at the log start), then `leader_epoch` from the log end."""
    epochs: list[tuple[int, int]] = []
    for epoch, sequence in sequence_epochs:
        if epoch >= leader_epoch or sequence >= offsets.next_sequence:
            break
        start = offsets.range_of(sequence)[0] if sequence >= offsets.first_sequence else offsets.first_offset
        if epochs and epochs[-1][1] == start:
            epochs.pop()  # an epoch with no records left of its own
        epochs.append((epoch, start))
    if epochs and epochs[-1][1] == offsets.next_offset:
        epochs.pop()
    return [*epochs, (leader_epoch, offsets.next_offset)]


def epoch_end(epochs: Sequence[tuple[int, int]], epoch: int, log_end: int) -> tuple[int, int]:
    """Kafka's leader-epoch cache lookup (KIP-101/279) over `epochs`, (epoch, start offset)
    ascending: (the largest epoch at most `epoch`, where it ends: the next epoch's start, or
    the log end for the latest). An epoch older than any known ends where the first known
    starts; a newer one, or none (-1), is undefined: (-1, -1)."""
    if epoch < 0:
        return -1, -1
    if epoch == epochs[-1][0]:
        return epoch, log_end
    later = next((start for known, start in epochs if known > epoch), None)
    if later is None:
        return -1, -1
    earlier = [known for known, _ in epochs if known <= epoch]
    return (earlier[-1] if earlier else epoch), later


async def recovered_state(contents, first_sequence: int = 0, next_offset: int = 0,
                          restored: tuple[OffsetIndex, ProducerStates] | None = None
                          ) -> tuple[OffsetIndex, ProducerStates, int]:
    """The offset index and producer states of a partition, from its stored batches
    (those after `restored`, a checkpoint's, if given); without any, an empty index that
    goes on at `first_sequence` and `next_offset`. Last, how many batches were read."""
    offsets, producers = restored or (None, ProducerStates())
    read = 0
    async for sequence, content in contents:
        read += 1
        batch = RecordBatch(memoryview(content))
        if offsets is None:
            offsets = OffsetIndex(sequence, batch.base_offset)
        producers.appended(batch, batch.base_offset, sequence)
        offsets.add(sequence, batch.base_offset, batch.last_offset_delta + 1, batch.max_timestamp, batch.size)
    return offsets or OffsetIndex(first_sequence, next_offset), producers, read
