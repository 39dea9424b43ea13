"""A coordinator's journal on the internal topic partition it coordinates, as Kafka keeps it.

In a cluster, the groups of one __consumer_offsets partition (the
transactional ids of one __transaction_state partition) are journaled on
that partition itself: each change is one batch of the records Kafka writes
for it, every record carrying in a header the part of the change about its
key (that key's whole state, or its removal). The partition is led like any
other, fenced at the stores at its leader epoch, so only its current leader
(the coordinator) gets a write acknowledged; and it is compacted like
Kafka's, which keeps the newest record of every key: replaying those
rebuilds the state, so no snapshots are needed.

Among records of one key the highest "serial" of their parts wins (GroupLog
numbers its changes, as concurrent writes may reach the log in another
order), then the newest in the log (a transactional id's changes are
written one at a time).

An entry of a producer's transaction (its "producer": [id, epoch], as the
group coordinator writes TxnOffsetCommit's offsets) is a transactional batch
of that producer, as Kafka writes it: the partition fences an older epoch,
and the COMMIT or ABORT marker the transaction coordinator writes after it
decides it. Replay counts its parts among the newest of their keys once
committed (without "producer"), drops them once aborted, and returns those
still open as they are: the coordinator holds them pending.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Protocol

import trio

from gateway.kafka_error import KafkaError
from gateway.wall_clock import now_ms
from protocol.kafka.error_codes import ErrorCode
from protocol.records import ControlType, Record, RecordBatch, build_batch, read_batch_marker

ENTRY_HEADER = "dafka.gateway.entry"
READ_BYTES = 1 << 20  # how much of the partition one read of the replay asks for
KeyedSlices = Callable[[dict], list[tuple[bytes, bytes | None, dict]]]  # entry -> (key, value, its part)


class CoordinatorPartition(Protocol):
    """What the journal uses of the PartitionLog it writes to."""

    log_start_offset: int
    leader_epoch: int

    @property
    def next_offset(self) -> int: ...

    async def append(self, batch: RecordBatch) -> tuple[int, int, int]: ...

    async def wait_durable(self, sequence: int) -> None: ...

    async def read(self, offset: int, max_bytes: int, *, limit: int | None = None) -> list: ...


class PartitionJournal:
    def __init__(self, partition: CoordinatorPartition, slices: KeyedSlices):
        self.partition = partition
        self.slices = slices

    async def replay(self) -> list[dict]:
        """The newest part of every key, in log order of the newest; then the parts of open transactions."""
        newest: dict[bytes, dict] = {}
        open_parts: dict[int, list[tuple[bytes, dict]]] = {}  # producer id -> its transaction's (key, part)
        offset, end = self.partition.log_start_offset, self.partition.next_offset
        while offset < end:
            batches = await self.partition.read(offset, READ_BYTES, limit=end)
            if not batches:
                break
            for stored in batches:
                _replay_batch(RecordBatch(memoryview(bytes(stored.data))), newest, open_parts)
            offset = batches[-1].last_offset + 1
        return [*newest.values(), *(part for parts in open_parts.values() for _, part in parts)]

    def compact_with(self, nursery: trio.Nursery, snapshot) -> None:
        """Nothing to do: the stores compact the partition by key."""

    async def write(self, entry: dict) -> None:
        """Append the entry's records and return once `min.insync.replicas` stores hold them;
        NOT_COORDINATOR once this gateway no longer leads the partition."""
        rows = [Record(index, now_ms(), key, value, ((ENTRY_HEADER, _encoded(part)),))
                for index, (key, value, part) in enumerate(self.slices(entry))]
        if not rows:
            return
        producer_id, epoch = entry.get("producer", (-1, -1))
        batch = build_batch(rows, producer_id=producer_id, producer_epoch=epoch, transactional=producer_id >= 0)
        try:
            _, sequence, _ = await self.partition.append(RecordBatch(memoryview(bytearray(batch))))
            await self.partition.wait_durable(sequence)
        except KafkaError as exc:
            if exc.code != ErrorCode.NOT_LEADER_OR_FOLLOWER:
                raise
            raise KafkaError(ErrorCode.NOT_COORDINATOR, "this gateway no longer leads the coordinator's partition"
                             ) from exc

    def write_soon(self, nursery: trio.Nursery, entry: dict) -> None:
        nursery.start_soon(self.write, entry)


def _replay_batch(batch: RecordBatch, newest: dict[bytes, dict], open_parts: dict[int, list]) -> None:
    if batch.is_control:
        parts = open_parts.pop(batch.producer_id, [])
        if batch.record_count and read_batch_marker(batch).type == ControlType.COMMIT:
            for key, part in parts:
                _keep_newest(newest, key, {name: value for name, value in part.items() if name != "producer"})
        return
    for record in batch.records():
        part = next((json.loads(value) for name, value in record.headers if name == ENTRY_HEADER), None)
        if part is None or record.key is None:
            continue
        if batch.is_transactional:
            open_parts.setdefault(batch.producer_id, []).append((record.key, part))
        else:
            _keep_newest(newest, record.key, part)


def _keep_newest(newest: dict[bytes, dict], key: bytes, part: dict) -> None:
    known = newest.pop(key, None)  # popped: the dict's order becomes that of the newest records
    newest[key] = part if known is None or part.get("serial", 0) >= known.get("serial", 0) else known


def _encoded(part: dict) -> bytes:
    return json.dumps(part, separators=(",", ":")).encode()
