"""WriteTxnMarkers: COMMIT or ABORT markers written into partitions on request.

Kafka's transaction coordinators send it to partition leaders; the gateway
writes its own markers directly, so here it serves admin clients: the Java
Admin's `abortTransaction` (KIP-664) ends a hanging transaction on one
partition this way (in __consumer_offsets, the producer's pending offsets at
the group coordinator: group/offsets_markers.py). The marker is checked like
any other: an older producer epoch gets INVALID_PRODUCER_EPOCH, an older
coordinator epoch TRANSACTION_COORDINATOR_FENCED; the answer waits until the
marker is durable.
"""

from __future__ import annotations

import structlog
import trio

from gateway.acls.model import Operation, ResourceType
from gateway.api.authorization import allowed
from gateway.api.registry import handles
from gateway.api.services import Services
from gateway.group.offsets_markers import PartitionOf
from gateway.kafka_error import KafkaError
from gateway.server.dispatch import Request
from gateway.txn.marker_writer import write_marker
from protocol.kafka.apis import by_name
from protocol.kafka.error_codes import ErrorCode

API = by_name("WriteTxnMarkers")
Marker, Topic = API.Response.Markers, API.Response.Markers.Topics
log = structlog.get_logger()


@handles("WriteTxnMarkers")
async def write_txn_markers(request: Request, services: Services):
    permitted = allowed(request, services, Operation.CLUSTER_ACTION, ResourceType.CLUSTER)  # brokers' own API
    partition_of = services.groups.marked(services.topics.partition)
    return API.Response(markers=[await _write(partition_of, marker, permitted) for marker in request.body.markers])


async def _write(partition_of: PartitionOf, marker, permitted: bool):
    if not permitted:
        outcomes = {(t.name, index): ErrorCode.CLUSTER_AUTHORIZATION_FAILED
                    for t in marker.topics for index in t.partition_indexes}
        return _answer(marker, outcomes)
    outcomes: dict[tuple[str, int], ErrorCode] = {}
    async with trio.open_nursery() as nursery:
        for topic in marker.topics:
            for index in topic.partition_indexes:
                nursery.start_soon(_write_one, partition_of, marker, topic.name, index, outcomes)
    return _answer(marker, outcomes)


def _answer(marker, outcomes: dict[tuple[str, int], ErrorCode]):
    return Marker(producer_id=marker.producer_id, topics=[
        Topic(name=topic.name, partitions=[
            Topic.Partitions(partition_index=index, error_code=outcomes[topic.name, index])
            for index in topic.partition_indexes])
        for topic in marker.topics])


async def _write_one(partition_of: PartitionOf, marker, topic: str, index: int, outcomes: dict) -> None:
    partition = partition_of(topic, index)
    if partition is None:
        outcomes[topic, index] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return
    try:
        await write_marker(partition, marker.transaction_result, marker.producer_id, marker.producer_epoch,
                           marker.coordinator_epoch)
    except KafkaError as exc:
        outcomes[topic, index] = exc.code
        log.info("marker_refused", topic=topic, partition=index, producer_id=marker.producer_id,
                 error=exc.code.name, reason=exc.message)
        return
    outcomes[topic, index] = ErrorCode.NONE
    log.info("marker_written", topic=topic, partition=index, producer_id=marker.producer_id,
             commit=marker.transaction_result)
