"""Produce: append batches to partitions, answered per acks.

acks=0 is never answered (a failed acks=0 request closes the connection,
as Kafka does, so the client notices); acks=1 is answered once one store
holds the batches (the leader replica's write, in Kafka's terms); acks=all
once `min.insync.replicas` stores have acknowledged them; either with
REQUEST_TIMED_OUT after the request's timeout. With fewer in-sync stores
than `min.insync.replicas`, acks=all gets NOT_ENOUGH_REPLICAS at once and
nothing of it is published; with none, acks=1 gets KAFKA_STORAGE_ERROR.
Published batches whose stores drop out of sync while the answer waits
(a store that exits or falls behind) get NOT_ENOUGH_REPLICAS_AFTER_APPEND
at once, as in Kafka: the batch may still become durable, which librdkafka
notes of this code (not of KAFKA_STORAGE_ERROR); every client retries both.
A client over its producer_byte_rate quota is answered with the time it is
throttled for, and its connection muted as long.
"""

from __future__ import annotations

from typing import NamedTuple

import structlog
import trio

from gateway.acls.model import Operation, ResourceType
from gateway.api.authorization import FAILURES, allowed, allowed_names, failure
from gateway.api.internal_topics import internal_topic
from gateway.api.leaders import current_leader, leader_endpoints
from gateway.api.registry import handles
from gateway.api.services import Services
from gateway.kafka_error import KafkaError
from gateway.observability.broker_metrics import STORE_WAIT_SECONDS, bytes_in, records_in
from gateway.partitions.batch_checks import (
    TimestampBounds,
    TopicCodec,
    log_checked,
    request_checked,
    timestamp_bounds,
    topic_codec,
)
from gateway.quotas.entities import PRODUCER_BYTE_RATE
from gateway.server.answers import NO_RESPONSE, CloseConnection, Deferred
from gateway.server.dispatch import Request
from gateway.wall_clock import now_ms
from protocol.kafka.apis import by_name
from protocol.kafka.error_codes import ErrorCode
from protocol.records import first_batch_transactional

API = by_name("Produce")
PartitionResponse = API.Response.Responses.PartitionResponses
log = structlog.get_logger()
FIRST_CURRENT_LEADER = 10  # Produce versions that name the current leader (KIP-951)


@handles("Produce", "0-12")
async def produce(request: Request, services: Services):
    body = request.body
    transactional_id = body.transactional_id
    transactional = any(first_batch_transactional(p.records) for t in body.topic_data for p in t.partition_data)
    if transactional and (transactional_id is None or not allowed(request, services, Operation.WRITE,
                                                                  ResourceType.TRANSACTIONAL_ID, transactional_id)):
        return _refuse_all(body, *FAILURES[ResourceType.TRANSACTIONAL_ID])
    writable = allowed_names(request, services, Operation.WRITE, ResourceType.TOPIC,
                             (t.name for t in body.topic_data))
    if transactional and len(_transactional_producers(request, services, writable)) > 1:
        # Kafka's ReplicaManager.handleProduceAppend throws, and the request gets its error response
        return _refuse_all(body, ErrorCode.INVALID_PRODUCER_ID_MAPPING,
                           "Transactional records contained more than one producer ID", with_message=True)
    appended = []  # (response, partition, last sequence, stores that must hold it)
    responses = []
    for topic_data in body.topic_data:
        answers = []
        for data in topic_data.partition_data:
            answer = PartitionResponse(index=data.index)
            answers.append(answer)
            try:
                if topic_data.name not in writable:
                    raise failure(ResourceType.TOPIC)
                appended.append(await _append(request, services, topic_data.name, data, answer))
            except KafkaError as exc:
                # The wire's error_message stays null unless _append set Kafka's (its log line has ours)
                answer.error_code, answer.base_offset = exc.code, -1
                answer.record_errors = [PartitionResponse.RecordErrors(batch_index=index, batch_index_error_message=why)
                                        for index, why in exc.record_errors]
                if exc.code == ErrorCode.NOT_LEADER_OR_FOLLOWER:
                    _point_to_leader(request, services, topic_data.name, answer)
                log.info("produce_refused", topic=topic_data.name, partition=data.index,
                         error=exc.code.name, reason=exc.message)
        responses.append(API.Response.Responses(name=topic_data.name, partition_responses=answers))
    response = API.Response(responses=responses, throttle_time_ms=_throttle(request, services))
    _name_leaders(request, services, response)
    if body.acks == 0:
        if any(a.error_code for r in responses for a in r.partition_responses):
            raise CloseConnection("an acks=0 produce failed")
        return NO_RESPONSE
    if not appended:
        return response
    published = trio.current_time()
    deadline = published + max(body.timeout_ms, 0) / 1000
    return Deferred(lambda: _when_stored(request, services, response, appended, published, deadline),
                    lambda: all(partition.is_stored(sequence, stores) for _, partition, sequence, stores in appended),
                    lambda callback: _call_when_stored(appended, deadline, callback))


def _point_to_leader(request: Request, services: Services, topic_name: str, answer) -> None:
    """A NOT_LEADER_OR_FOLLOWER answer names the current leader where the version has it (KIP-951)."""
    if request.version >= FIRST_CURRENT_LEADER:
        answer.current_leader = current_leader(services, topic_name, answer.index, PartitionResponse.CurrentLeader)


def _name_leaders(request: Request, services: Services, response) -> None:
    """The endpoints of the leaders the answers name."""
    response.node_endpoints = leader_endpoints(services, request.connection.listener,
                                               [a.current_leader for r in response.responses
                                                for a in r.partition_responses],
                                               API.Response.NodeEndpoints)


def _throttle(request: Request, services: Services) -> int:
    """The request's bytes counted against the client's producer_byte_rate: the time the
    client is throttled for (its connection muted), as Kafka answers once the batches are appended."""
    throttle_ms = services.quotas.record(PRODUCER_BYTE_RATE, request.client_id, request.size, request.user)
    if throttle_ms:
        request.connection.throttle(throttle_ms)
    return throttle_ms


def _transactional_producers(request: Request, services: Services, writable) -> set[tuple[int, int]]:
    """The producer ids and epochs of the transactional batches Kafka's ReplicaManager would
    verify: those with a producer id, of the partitions past the request's own checks."""
    producers = set()
    for topic_data in request.body.topic_data:
        count = _partition_count(services, topic_data.name) if topic_data.name in writable else 0
        for data in topic_data.partition_data:
            if 0 <= data.index < count and first_batch_transactional(data.records):
                try:
                    first = request_checked(data.records, request.version)[0]
                except KafkaError:
                    continue
                if first.magic == 2 and first.producer_id >= 0:
                    producers.add((first.producer_id, first.producer_epoch))
    return producers


def _partition_count(services: Services, topic_name: str) -> int:
    """The partitions of a topic (internal or not) that Kafka knows; 0 for an unknown topic."""
    internal = internal_topic(topic_name)
    if internal is not None:
        return internal.partition_count
    topic = services.topics.get(topic_name)
    return 0 if topic is None else len(topic.partitions)


async def _append(request: Request, services: Services, topic_name: str, data, answer):
    """Kafka's checks in Kafka's order: the partition known, the request's own checks of the
    records, the transaction's verification, acks, an internal topic, leadership; then the log's
    (`_append_to_log`)."""
    internal = internal_topic(topic_name)
    # A topic is created by the Metadata request that names it, never by a produce (KafkaApis)
    if not 0 <= data.index < _partition_count(services, topic_name):
        raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                         f"{topic_name}/{data.index} is not a partition of this cluster")
    entries = request_checked(data.records, request.version)
    first = entries[0]
    transactional_id = request.body.transactional_id
    if transactional_id is not None and first.magic == 2 and first.is_transactional and first.producer_id >= 0:
        _verify_transaction(request, services, transactional_id, first, topic_name, data.index, answer)
    if request.body.acks not in (-1, 0, 1):
        raise KafkaError(ErrorCode.INVALID_REQUIRED_ACKS, f"acks must be -1, 0 or 1, not {request.body.acks}")
    if internal is not None:
        raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"Cannot append to internal topic {topic_name}")
    topic = services.topics.get(topic_name)
    partition = topic.partitions[data.index]
    if partition is None:
        raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER, f"{topic_name}/{data.index} is led by another gateway")
    try:
        return await _append_to_log(request, services, topic, partition, entries, answer)
    except KafkaError as exc:
        # Kafka's ReplicaManager.appendToLocalLog: the log start offset with any refusal of the
        # log but those it expects; the message only with one that names records
        if exc.code not in _WITHOUT_LOG_START:
            answer.log_start_offset = partition.log_start_offset
        if exc.record_errors:
            answer.error_message = exc.message
        raise


# What Kafka's appendToLocalLog answers without the log start offset (as every refusal before it):
# its known exceptions, and an internal topic's, whose place a native topic's takes
_WITHOUT_LOG_START = frozenset({
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.MESSAGE_TOO_LARGE,
    ErrorCode.RECORD_LIST_TOO_LARGE, ErrorCode.CORRUPT_MESSAGE, ErrorCode.KAFKA_STORAGE_ERROR,
    ErrorCode.INVALID_TOPIC_EXCEPTION,
})


async def _append_to_log(request: Request, services: Services, topic, partition, entries, answer):
    acks = request.body.acks
    if acks and not topic.native and partition.in_sync_stores() < partition.stores_for(acks):
        if acks == 1:
            raise KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, "no store is in sync: none could take the batch")
        raise KafkaError(ErrorCode.NOT_ENOUGH_REPLICAS,
                         f"fewer in-sync stores than min.insync.replicas ({partition.min_insync})")
    rules = services.topics.derived(topic, _produce_rules)
    now = now_ms()
    batch = log_checked(entries, request.version, rules.max_bytes, rules.codec,
                        rules.timestamps and rules.timestamps._replace(now_ms=now),
                        f"{topic.name}-{partition.index}" if rules.compacted else None,
                        append_time=rules.log_append_time)
    answer.base_offset, last_sequence, answer.log_append_time_ms = await partition.append(
        batch, log_append_time=now if rules.log_append_time else None,
        room_timeout_s=max(request.body.timeout_ms, 0) / 1000)
    bytes_in(topic.name).inc(batch.size)
    records_in(topic.name).inc(batch.record_count)
    answer.log_start_offset = partition.log_start_offset
    return answer, partition, last_sequence, partition.stores_for(acks)


FIRST_ABORTABLE_PRODUCE = 11  # Produce versions whose clients know TRANSACTION_ABORTABLE (KIP-890)
# The coordinator's answers Kafka's broker turns into NOT_ENOUGH_REPLICAS, which every client retries
_UNVERIFIED = frozenset({ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.NETWORK_EXCEPTION,
                         ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                         ErrorCode.NOT_COORDINATOR})


def _verify_transaction(request: Request, services: Services, transactional_id: str, batch, topic_name: str,
                        index: int, answer) -> None:
    """The coordinator's verification of a transactional batch's partition, its refusals translated as
    Kafka's broker does (AddPartitionsToTxnManager, ReplicaManager.handleProduceAppend): without the
    log start offset, and with a message of Kafka's only where Kafka gives one."""
    try:
        services.transactions.check_produce(transactional_id, batch.producer_id, batch.producer_epoch,
                                            topic_name, index)
    except KafkaError as exc:
        code = exc.code
        if code == ErrorCode.PRODUCER_FENCED:
            code = ErrorCode.INVALID_PRODUCER_EPOCH
        elif code == ErrorCode.TRANSACTION_ABORTABLE and request.version < FIRST_ABORTABLE_PRODUCE:
            code = ErrorCode.INVALID_TXN_STATE
        if code in _UNVERIFIED:
            answer.error_message = ("Unable to verify the partition has been added to the transaction. "
                                    f"Underlying error: {code.name}")
            code = ErrorCode.NOT_ENOUGH_REPLICAS
        elif code == ErrorCode.INVALID_TXN_STATE:
            answer.error_message = "Partition was not added to the transaction"
        raise KafkaError(code, exc.message) from None


class _ProduceRules(NamedTuple):
    """A topic's configs as a produce reads them (`TopicRegistry.derived` keeps them until they change)."""

    max_bytes: int
    codec: TopicCodec | None
    timestamps: TimestampBounds | None  # with now_ms 0: each request sets its own
    compacted: bool
    log_append_time: bool


def _produce_rules(config) -> _ProduceRules:
    return _ProduceRules(int(config("max.message.bytes")), topic_codec(config), timestamp_bounds(config, 0),
                         "compact" in config("cleanup.policy").split(","),
                         config("message.timestamp.type") == "LogAppendTime")


def _call_when_stored(appended, deadline: float, callback) -> float:
    """Call `callback` once the first batch not stored yet is (or never will be); the deadline."""
    for _, partition, sequence, stores in appended:
        if not partition.is_stored(sequence, stores):
            partition.call_when_stored(sequence, stores, callback)
            return deadline
    callback()
    return deadline


async def _when_stored(request: Request, services: Services, response, appended, published: float,
                       deadline: float):
    """The answer once the batches are stored. A batch appended but not stored keeps its
    offsets and gets only an error, as Kafka's DelayedProduce answers, with no message."""
    waiting = [entry for entry in appended if not entry[1].is_stored(entry[2], entry[3])]
    if not waiting:  # as often when answered in turn: no timer
        STORE_WAIT_SECONDS.observe(trio.current_time() - published)
        return response
    with trio.move_on_at(deadline):
        for answer, partition, sequence, stores in waiting:
            try:
                await partition.wait_stored(sequence, stores)
            except KafkaError as exc:
                answer.error_code = exc.code
                if exc.code == ErrorCode.NOT_LEADER_OR_FOLLOWER:
                    _point_to_leader(request, services, partition.topic, answer)
                    _name_leaders(request, services, response)
                log.warning("produce_not_durable", topic=partition.topic, partition=partition.index,
                            error=exc.code.name, reason=exc.message)
        STORE_WAIT_SECONDS.observe(trio.current_time() - published)
        return response
    for answer, partition, sequence, stores in waiting:
        if not partition.is_stored(sequence, stores) and not answer.error_code:
            answer.error_code = ErrorCode.REQUEST_TIMED_OUT
            log.info("produce_timed_out", topic=partition.topic, partition=partition.index,
                     reason="stores did not acknowledge the batch in time")
    return response


def _refuse_all(body, code: ErrorCode, message: str, *, with_message: bool = False):
    """Every partition refused, as Kafka's error response for the request: `message` on the
    wire only `with_message`, as Kafka gives none for an error in the error's own words."""
    if body.acks == 0:
        raise CloseConnection(message)
    log.info("produce_refused", error=code.name, reason=message)
    return API.Response(responses=[
        API.Response.Responses(name=t.name, partition_responses=[
            PartitionResponse(index=p.index, error_code=code, base_offset=-1,
                              error_message=message if with_message else None) for p in t.partition_data
        ])
        for t in body.topic_data
    ])
