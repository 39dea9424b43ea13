"""Transaction markers for __consumer_offsets partitions: how a transaction's offsets end.

AddOffsetsToTxn puts a group's __consumer_offsets partition into the
transaction, so the transaction coordinator ends the transaction there with
a COMMIT or ABORT marker like in any other partition; its group coordinator
then makes the producer's pending offsets the group's, or drops them (Kafka's
WriteTxnMarkers to the group coordinator). In a cluster the marker goes into
the partition through its leader (led here, or asked of it:
cluster/remote_markers.py), and the partition's coordinator is told once the
marker is durable; a coordinator that replays the partition later goes by
the marker itself. The coordinator must be loaded before the marker is
appended (COORDINATOR_LOAD_IN_PROGRESS otherwise, and the completion
retries), so that none is appended that neither a replay nor the
coordinator sees. A lone gateway keeps its groups on a journal of its own:
its coordinator is told directly, and journals the outcome.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from protocol.kafka.coordinator_records import OFFSETS_TOPIC
from protocol.records import ControlType, RecordBatch, read_batch_marker

PartitionOf = Callable[[str, int], object | None]  # (topic, index) -> where its markers go


class EndsTransactions(Protocol):
    async def end_transaction(self, producer_id: int, commit: bool) -> None: ...


class OffsetsPartitionMarkers:
    """__consumer_offsets partition `index` as the marker writer appends to it."""

    topic = OFFSETS_TOPIC

    def __init__(self, index: int, partition, coordinator: Callable[[], EndsTransactions]):
        self.index = index
        self.partition = partition  # the PartitionLog led here; None on a lone gateway
        self.coordinator = coordinator  # KafkaError while there is none to tell

    async def append(self, batch: RecordBatch) -> tuple[int, int, int]:
        """(offset, sequence, -1) as PartitionLog.append answers: a marker has no log append time."""
        coordinator = self.coordinator()
        offset = sequence = -1
        if self.partition is not None:
            offset, sequence, _ = await self.partition.append(batch)
            await self.partition.wait_durable(sequence)
        commit = read_batch_marker(batch).type == ControlType.COMMIT
        await coordinator.end_transaction(batch.producer_id, commit)
        return offset, sequence, -1

    async def wait_durable(self, sequence: int) -> None:
        """Nothing to wait for: the append returned once the marker was durable and told."""
