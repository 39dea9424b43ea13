"""AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit and EndTxn: a producer's transaction.

The coordinator (gateway/txn) decides; these handlers translate requests and
answers, including Kafka's rule that clients older than KIP-588 get
INVALID_PRODUCER_EPOCH where newer ones get PRODUCER_FENCED. EndTxn v5 and
TxnOffsetCommit v5 belong to transaction protocol 2, which the gateway does
not offer.
"""

from __future__ import annotations

from gateway.acls.model import Operation, ResourceType
from gateway.api.authorization import allowed, allowed_names, group_id, refused, requires, transactional_id
from gateway.api.registry import handles
from gateway.api.services import Services, Topics
from gateway.group.committed_offsets import MAX_METADATA_CHARS, Committed
from gateway.kafka_error import KafkaError
from gateway.server.dispatch import Request
from gateway.wall_clock import now_ms
from protocol.kafka.apis import by_name
from protocol.kafka.error_codes import ErrorCode

ADD_PARTITIONS = by_name("AddPartitionsToTxn")
ADD_OFFSETS = by_name("AddOffsetsToTxn")
OFFSET_COMMIT = by_name("TxnOffsetCommit")
END = by_name("EndTxn")
FIRST_BATCHED_ADD = 4


def for_version(code: ErrorCode, version: int, first_fenced_version: int) -> ErrorCode:
    """PRODUCER_FENCED as a client of `version` understands it."""
    if code == ErrorCode.PRODUCER_FENCED and version < first_fenced_version:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return code


async def _outcome(call, version: int, first_fenced_version: int) -> ErrorCode:
    try:
        await call
    except KafkaError as exc:
        return for_version(exc.code, version, first_fenced_version)
    return ErrorCode.NONE


@handles("AddPartitionsToTxn")
async def add_partitions_to_txn(request: Request, services: Services):
    body, version = request.body, request.version
    if version < FIRST_BATCHED_ADD:
        results = await _add_partitions(request, services, body.v3_and_below_transactional_id,
                                        body.v3_and_below_producer_id, body.v3_and_below_producer_epoch,
                                        body.v3_and_below_topics, False)
        return ADD_PARTITIONS.Response(results_by_topic_v3_and_below=results)
    if not allowed(request, services, Operation.CLUSTER_ACTION, ResourceType.CLUSTER):  # brokers' batched form
        return refused(request, ResourceType.CLUSTER)
    Result = ADD_PARTITIONS.Response.ResultsByTransaction
    return ADD_PARTITIONS.Response(results_by_transaction=[
        Result(transactional_id=t.transactional_id, topic_results=await _add_partitions(
            request, services, t.transactional_id, t.producer_id, t.producer_epoch, t.topics, t.verify_only))
        for t in body.transactions
    ])


async def _add_partitions(request: Request, services: Services, transactional_id, producer_id, epoch, topics,
                          verify_only: bool):
    """Per-topic results: without WRITE on the transactional id all fail; partitions of topics the request
    may not WRITE and unknown ones fail, and then nothing is attempted."""
    coordinator = services.transactions
    wanted = {(t.name, p) for t in topics for p in t.partitions}
    writable = allowed_names(request, services, Operation.WRITE, ResourceType.TOPIC, (t for t, _ in wanted))
    failed = {tp: ErrorCode.TOPIC_AUTHORIZATION_FAILED for tp in wanted if tp[0] not in writable}
    failed.update((tp, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) for tp in wanted
                  if tp not in failed and not _exists(services.topics, *tp))
    errors: dict[tuple[str, int], ErrorCode] = {}
    if not allowed(request, services, Operation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id):
        errors = dict.fromkeys(wanted, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    elif failed:
        errors = {tp: failed.get(tp, ErrorCode.OPERATION_NOT_ATTEMPTED) for tp in wanted}
    elif verify_only:
        errors = {tp: _verified(coordinator, transactional_id, producer_id, epoch, tp) for tp in wanted}
    else:
        code = await _outcome(coordinator.add_partitions(transactional_id, producer_id, epoch, wanted),
                              request.version, 2)
        errors = dict.fromkeys(wanted, code)
    TopicResult = ADD_PARTITIONS.Response.ResultsByTopicV3AndBelow
    return [
        TopicResult(name=t.name, results_by_partition=[
            TopicResult.ResultsByPartition(partition_index=p, partition_error_code=errors[(t.name, p)])
            for p in t.partitions
        ])
        for t in topics
    ]


def _exists(topics, name: str, index: int) -> bool:
    """Whether the partition exists, wherever it is led (markers reach it through its leader)."""
    topic = topics.get(name)
    return topic is not None and 0 <= index < len(topic.partitions)


def _verified(coordinator, transactional_id, producer_id, epoch, partition) -> ErrorCode:
    try:
        coordinator.check_produce(transactional_id, producer_id, epoch, *partition)
    except KafkaError as exc:
        return exc.code
    return ErrorCode.NONE


@handles("AddOffsetsToTxn")
@requires(Operation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id)
@requires(Operation.READ, ResourceType.GROUP, group_id)
async def add_offsets_to_txn(request: Request, services: Services):
    body = request.body
    code = await _outcome(services.transactions.add_offsets(
        body.transactional_id, body.producer_id, body.producer_epoch, body.group_id), request.version, 2)
    return ADD_OFFSETS.Response(error_code=code)


@handles("TxnOffsetCommit", "0-4")
async def txn_offset_commit(request: Request, services: Services):
    body = request.body
    code = _refused_commit(request, services)
    readable = allowed_names(request, services, Operation.READ, ResourceType.TOPIC, (t.name for t in body.topics))
    errors = {(t.name, p.partition_index): code or _offset_error(services.topics, t.name, p, t.name in readable)
              for t in body.topics for p in t.partitions}
    now = now_ms()
    offsets = {
        (t.name, p.partition_index): Committed(p.committed_offset, p.committed_leader_epoch,
                                               p.committed_metadata or "", now)
        for t in body.topics for p in t.partitions if errors[(t.name, p.partition_index)] == ErrorCode.NONE
    }
    if not code:
        code = await _outcome(_commit_offsets(services, body, offsets), request.version, 3)
    Topic = OFFSET_COMMIT.Response.Topics
    return OFFSET_COMMIT.Response(topics=[
        Topic(name=t.name, partitions=[
            Topic.Partitions(partition_index=p.partition_index,
                             error_code=errors[(t.name, p.partition_index)] or code)
            for p in t.partitions
        ])
        for t in body.topics
    ])


def _refused_commit(request: Request, services: Services) -> ErrorCode:
    """Kafka's error for every partition without WRITE on the transactional id or READ on the group."""
    body = request.body
    if not allowed(request, services, Operation.WRITE, ResourceType.TRANSACTIONAL_ID, body.transactional_id):
        return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    if not allowed(request, services, Operation.READ, ResourceType.GROUP, body.group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED
    return ErrorCode.NONE


def _offset_error(topics: Topics, topic: str, partition, readable: bool) -> ErrorCode:
    if not readable:
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED
    if not _exists(topics, topic, partition.partition_index):
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if len(partition.committed_metadata or "") > MAX_METADATA_CHARS:
        return ErrorCode.OFFSET_METADATA_TOO_LARGE
    return ErrorCode.NONE


async def _commit_offsets(services: Services, body, offsets) -> None:
    """The group's coordinator holds the offsets until the transaction's marker reaches it."""
    services.groups.validate_transactional_commit(body.group_id, body.member_id, body.group_instance_id,
                                                body.generation_id)
    services.transactions.check_offsets(body.transactional_id, body.producer_id, body.producer_epoch, body.group_id)
    await services.groups.commit_transactional_offsets(body.group_id, (body.producer_id, body.producer_epoch),
                                                       offsets)


@handles("EndTxn", "0-4")
@requires(Operation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id)
async def end_txn(request: Request, services: Services):
    body = request.body
    code = await _outcome(services.transactions.end_transaction(
        body.transactional_id, body.producer_id, body.producer_epoch, body.committed), request.version, 2)
    return END.Response(error_code=code)
