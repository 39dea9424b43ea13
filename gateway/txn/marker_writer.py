"""COMMIT and ABORT markers: one control batch into every partition of a transaction.

A marker is written like a produce with acks=all: the transaction is complete
only once every marker is durable. Partitions of deleted topics take no
marker. In a cluster a partition led elsewhere is a RemotePartition
(cluster/remote_markers.py): its leader writes the marker. A marker for a
__consumer_offsets partition also ends the transaction's offsets at the
group coordinator (group/offsets_markers.py).
"""

from __future__ import annotations

from collections.abc import Callable

import structlog
import trio

from gateway.kafka_error import KafkaError
from gateway.wall_clock import now_ms
from protocol.kafka.error_codes import ErrorCode
from protocol.records import ControlType, RecordBatch, build_control_batch

log = structlog.get_logger()

PartitionOf = Callable[[str, int], object | None]  # (topic, number) -> its partition, None if none
# A newer producer or coordinator epoch reached the partition first: the transaction is over there.
FENCED = (ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.TRANSACTION_COORDINATOR_FENCED)


async def write_markers(partition_of: PartitionOf, txn, commit: bool, coordinator_epoch: int) -> None:
    """Kafka's coordinator epoch is the leader epoch of the coordinator's partition: a partition
    that took a marker of a newer coordinator refuses a deposed one's."""
    async with trio.open_nursery() as nursery:
        for topic, number in sorted(txn.partitions):
            partition = partition_of(topic, number)
            if partition is not None:
                nursery.start_soon(_write_marker, partition, commit, txn, coordinator_epoch)


async def _write_marker(partition, commit: bool, txn, coordinator_epoch: int) -> None:
    try:
        await write_marker(partition, commit, txn.producer_id, txn.producer_epoch, coordinator_epoch)
    except KafkaError as exc:
        if exc.code not in FENCED:  # the partition is moving, the stores are short: the completion retries
            raise
        log.warning("marker_refused", topic=partition.topic, partition=partition.index,
                    id=txn.transactional_id, error=exc.code.name, reason=exc.message)


async def write_marker(partition, commit: bool, producer_id: int, producer_epoch: int,
                       coordinator_epoch: int) -> None:
    """Append one COMMIT or ABORT control batch and return once it is durable;
    KafkaError if the partition refuses it (an older producer or coordinator epoch)."""
    batch = build_control_batch(ControlType.COMMIT if commit else ControlType.ABORT, offset=0,
                                timestamp=now_ms(), producer_id=producer_id,
                                producer_epoch=producer_epoch, coordinator_epoch=coordinator_epoch)
    _, sequence, _ = await partition.append(RecordBatch(memoryview(bytearray(batch))))
    await partition.wait_durable(sequence)
