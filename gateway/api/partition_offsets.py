"""ListOffsets, OffsetForLeaderEpoch and DeleteRecords: positions in a partition.

ListOffsets by timestamp reads the records of a stored batch. A batch that
does not decode (stored before produced records were validated, say) makes
that partition's answer CORRUPT_MESSAGE; the connection stays open.
"""

from __future__ import annotations

import structlog

from gateway.acls.model import Operation, ResourceType
from gateway.api.authorization import allowed_names
from gateway.api.fetch import READ_COMMITTED
from gateway.api.internal_topics import is_internal
from gateway.api.leaders import not_served
from gateway.api.registry import handles
from gateway.api.services import Services
from gateway.server.dispatch import Request
from protocol.errors import DecodeError
from protocol.kafka.apis import by_name
from protocol.kafka.error_codes import ErrorCode

LIST_OFFSETS = by_name("ListOffsets")
LEADER_EPOCH = by_name("OffsetForLeaderEpoch")
DELETE_RECORDS = by_name("DeleteRecords")

FIRST_LEADER_EPOCH_LIST_OFFSETS = 4
LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -1, -2, -3, -4, -5
log = structlog.get_logger()


async def for_each_partition(request: Request, services: Services, operation: Operation, name_of, partitions_of,
                             number_of, answer, missing):
    """[(topic name, [answer, or missing(number, error code) per partition])] in request order; the
    partitions of a topic the request may not do `operation` to are missing with TOPIC_AUTHORIZATION_FAILED."""
    topics = request.body.topics
    permitted = allowed_names(request, services, operation, ResourceType.TOPIC, (name_of(t) for t in topics))
    result = []
    for topic in topics:
        name = name_of(topic)
        answers = []
        for wanted in partitions_of(topic):
            number = number_of(wanted)
            if name not in permitted:
                answers.append(missing(number, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                continue
            partition = services.topics.partition(name, number)
            answers.append(await answer(partition, wanted) if partition else
                           missing(number, not_served(services, name, number)))
        result.append((name, answers))
    return result


@handles("ListOffsets")
async def list_offsets(request: Request, services: Services):
    Partition = LIST_OFFSETS.Response.Topics.Partitions

    async def answer(partition, wanted):
        response = Partition(partition_index=wanted.partition_index)
        if request.version >= FIRST_LEADER_EPOCH_LIST_OFFSETS:
            response.leader_epoch = partition.leader_epoch
        error = partition.epoch_error(wanted.current_leader_epoch)
        if error is not None:
            response.error_code = error
            return response
        try:
            found = await _position(partition, wanted.timestamp, request.body.isolation_level)
        except DecodeError as exc:
            response.error_code = ErrorCode.CORRUPT_MESSAGE
            log.warning("list_offsets_unreadable_batch", topic=partition.topic, partition=partition.index,
                        reason=str(exc))
            return response
        if found is None:
            return response
        if request.version == 0:
            response.old_style_offsets = [found[0]]
        else:
            response.offset, response.timestamp = found
        return response

    topics = await for_each_partition(
        request, services, Operation.DESCRIBE, lambda t: t.name, lambda t: t.partitions,
        lambda p: p.partition_index, answer,
        lambda n, code: Partition(partition_index=n, error_code=code))
    return LIST_OFFSETS.Response(topics=[
        LIST_OFFSETS.Response.Topics(name=name, partitions=parts) for name, parts in topics])


async def _position(partition, timestamp: int, isolation_level: int) -> tuple[int, int] | None:
    """(offset, timestamp) for ListOffsets' target: a special value or a time.

    As in Kafka, read_committed readers see nothing from the last stable offset
    on: "latest" is that offset, and no record there is found by time.
    """
    fetchable = partition.last_stable_offset if isolation_level == READ_COMMITTED else partition.high_watermark
    if timestamp == LATEST:
        return fetchable, -1
    if timestamp in (EARLIEST, EARLIEST_LOCAL):
        return partition.log_start_offset, -1
    if timestamp == LATEST_TIERED:
        return None  # nothing is tiered: Kafka answers "no offset"
    if timestamp == MAX_TIMESTAMP:
        found = await partition.offset_of_max_timestamp()
    else:
        found = await partition.offset_for_timestamp(timestamp)
    return found if found is not None and found[0] < fetchable else None


@handles("OffsetForLeaderEpoch")
async def offset_for_leader_epoch(request: Request, services: Services):
    Partition = LEADER_EPOCH.Response.Topics.Partitions

    async def answer(partition, wanted):
        response = Partition(partition=wanted.partition)
        error = partition.epoch_error(wanted.current_leader_epoch)
        if error is not None:
            response.error_code = error
        else:
            epoch, response.end_offset = partition.end_of_epoch(wanted.leader_epoch)
            if request.version >= 1:
                response.leader_epoch = epoch
        return response

    topics = await for_each_partition(
        request, services, Operation.DESCRIBE, lambda t: t.topic, lambda t: t.partitions,
        lambda p: p.partition, answer,
        lambda n, code: Partition(partition=n, error_code=code))
    return LEADER_EPOCH.Response(topics=[
        LEADER_EPOCH.Response.Topics(topic=name, partitions=parts) for name, parts in topics])


@handles("DeleteRecords")
async def delete_records(request: Request, services: Services):
    Partition = DELETE_RECORDS.Response.Topics.Partitions
    moved = set()

    async def answer(partition, wanted):
        response = Partition(partition_index=wanted.partition_index, low_watermark=-1)
        if is_internal(partition.topic):  # Kafka's ReplicaManager refuses it before looking at the offset
            response.error_code = ErrorCode.INVALID_TOPIC_EXCEPTION
            return response
        target = partition.high_watermark if wanted.offset == -1 else wanted.offset
        if not 0 <= target <= partition.high_watermark:
            response.error_code = ErrorCode.OFFSET_OUT_OF_RANGE
            return response
        if partition.move_log_start(target):
            moved.add(partition.topic)
        response.low_watermark = partition.log_start_offset
        return response

    topics = await for_each_partition(
        request, services, Operation.DELETE, lambda t: t.name, lambda t: t.partitions,
        lambda p: p.partition_index, answer,
        lambda n, code: Partition(partition_index=n, low_watermark=-1, error_code=code))
    for name in moved:
        topic = services.topics.get(name)
        if topic is not None:  # not deleted meanwhile
            await services.topics.save_log_start(topic)
    return DELETE_RECORDS.Response(topics=[
        DELETE_RECORDS.Response.Topics(name=name, partitions=parts) for name, parts in topics])
