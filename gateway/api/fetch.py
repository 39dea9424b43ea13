"""Fetch: batches from partitions, long-polled, in or out of a fetch session.

Size limits follow KIP-74: partitions are filled in request order within
partition_max_bytes and the response's max_bytes, except that the first
batch of the first partition with data is returned whatever its size.
Fetch v0-3 clients read magic 0 or 1, so their batches are down-converted;
v4 and later pass stored batches through as they are.

A response is built when it can be sent: within the room its connection has
for unsent responses (less than max_bytes is always allowed), and a long poll
waits in its connection's response order, from a deadline fixed on arrival: a
client that pipelines fetches and reads no answer gets no more of them built.
A client with a consumer_byte_rate quota gets no more than it lets through in
its window, and an empty response while it is throttled, as from Kafka.
"""

from __future__ import annotations

import structlog
import trio

from gateway.acls.model import Operation, ResourceType
from gateway.api.authorization import allowed_names
from gateway.api.leaders import current_leader, leader_endpoints, not_served
from gateway.api.registry import handles
from gateway.api.services import Services, Topics
from gateway.kafka_error import KafkaError
from gateway.observability.broker_metrics import BYTES_OUT, RECORDS_OUT
from gateway.partitions.fetch_sessions import FINAL_EPOCH, INITIAL_EPOCH, SessionPartition
from gateway.quotas.entities import CONSUMER_BYTE_RATE
from gateway.server.answers import Deferred
from gateway.server.dispatch import Request
from protocol.errors import DecodeError, EncodeError
from protocol.kafka.apis import by_name
from protocol.kafka.buffers import Fragments
from protocol.kafka.error_codes import ErrorCode
from protocol.records import RecordBatch, batch_to_legacy

API = by_name("Fetch")
Topic = API.Response.Responses
Partition = Topic.Partitions
READ_COMMITTED = 1
FIRST_ZSTD_FETCH = 10  # Kafka refuses older fetches of a topic whose compression.type is zstd
FIRST_CURRENT_LEADER = 12  # Fetch versions that name the current leader (KIP-951)
FIRST_NODE_ENDPOINTS = 16  # and its endpoint
log = structlog.get_logger()


@handles("Fetch")
async def fetch(request: Request, services: Services):
    body = request.body
    try:
        session, wanted = _session_and_partitions(services, body, request.version)
    except KafkaError as exc:
        return API.Response(error_code=exc.code, session_id=body.session_id)
    # Kafka's bound: no more than the consumer_byte_rate quota lets through in its window
    max_bytes = int(min(body.max_bytes,
                        services.quotas.window_bytes(CONSUMER_BYTE_RATE, request.client_id, request.user)))
    names = {entry.topic for entry in wanted if entry.topic is not None}
    refused = names - allowed_names(request, services, Operation.READ, ResourceType.TOPIC, names)
    answer = await _answer(request, services, session, wanted, max_bytes, refused)
    if body.max_wait_ms <= 0 or _enough(request, answer, max_bytes) or _has_error(answer):
        return _counted(_within_quota(request, services, answer))
    deadline = trio.current_time() + body.max_wait_ms / 1000
    return Deferred(lambda: _answer_later(request, services, session, wanted, max_bytes, deadline, refused),
                    ready=lambda: False)  # awaited in its turn: never sent along with earlier responses


def _within_quota(request: Request, services: Services, response):
    """The response, or, when its bytes put the client over its consumer_byte_rate quota, an empty
    one with the time the client is throttled for (its connection muted as long), as Kafka
    answers; the bytes not sent are not counted. (A session still counts the high watermarks
    of the response not sent as told: the partitions come again with their records.)"""
    size = _size(response)
    throttle_ms = services.quotas.record(CONSUMER_BYTE_RATE, request.client_id, size, request.user)
    if not throttle_ms:
        return response
    services.quotas.unrecord(CONSUMER_BYTE_RATE, request.client_id, size, request.user)
    request.connection.throttle(throttle_ms)
    return API.Response(throttle_time_ms=throttle_ms, session_id=response.session_id, responses=[])


async def _answer_later(request: Request, services: Services, session, wanted, max_bytes: int, deadline: float,
                        refused: set[str]):
    """Wait for new data in any wanted partition, up to `deadline`, then answer."""
    topics = services.topics
    logs = [p for p in (topics.partition(w.topic, w.partition) for w in wanted) if p is not None]
    with trio.move_on_at(deadline):
        while True:
            waiter = trio.Event()
            for log_ in logs:
                log_.notify_on_data(waiter)
            try:
                await waiter.wait()
            finally:
                for log_ in logs:
                    log_.forget_waiter(waiter)
            answer = await _answer(request, services, session, wanted, max_bytes, refused, commit=False)
            if _enough(request, answer, max_bytes):
                break
    answer = await _answer(request, services, session, wanted, max_bytes, refused)
    return _counted(_within_quota(request, services, answer))


def _session_and_partitions(services: Services, body, version: int):
    """The fetch session (or None) and every partition this request reads."""
    requested = [
        SessionPartition(t.topic if version < 13 else _topic_name(services.topics, t.topic_id), t.topic_id,
                         p.partition, p.fetch_offset, p.partition_max_bytes, p.current_leader_epoch)
        for t in body.topics for p in t.partitions
    ]
    sessions = services.fetch_sessions
    if version < 7 or (body.session_id == 0 and body.session_epoch == FINAL_EPOCH):
        return None, requested
    if body.session_epoch in (INITIAL_EPOCH, FINAL_EPOCH):
        sessions.close(body.session_id)
        if body.session_epoch == FINAL_EPOCH:
            return None, requested
        session = sessions.start()
    else:
        session = sessions.resume(body.session_id, body.session_epoch)
    for forgotten in body.forgotten_topics_data:
        name = forgotten.topic if version < 13 else _topic_name(services.topics, forgotten.topic_id)
        for number in forgotten.partitions:
            session.partitions.pop((name, number), None)
    for wanted in requested:
        known = session.partitions.get((wanted.topic, wanted.partition))
        if known is not None:
            wanted.high_watermark, wanted.log_start_offset = known.high_watermark, known.log_start_offset
        session.partitions[(wanted.topic, wanted.partition)] = wanted
    session.epoch += 1
    return session, list(session.partitions.values())


def _topic_name(topics: Topics, topic_id) -> str | None:
    topic = topics.by_id(topic_id)
    return topic.name if topic else None


async def _answer(request: Request, services: Services, session, wanted, max_bytes: int, refused: set[str], *,
                  commit: bool = True):
    """The response for `wanted` now, within `max_bytes`, the topics `refused` refused (the request may not
    READ them); `commit` records what a session was told."""
    body, version = request.body, request.version
    budget = whole = min(max_bytes, request.connection.response_room())
    answered: dict = {}
    for entry in wanted:
        if entry.topic in refused:
            partition = Partition(partition_index=entry.partition, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                  high_watermark=-1, records=b"")
        else:
            partition = await _read_partition(request, services, entry, budget, first=budget == whole)
        budget -= len(partition.records or b"")
        if session is not None and not _news(entry, partition, full=body.session_epoch == INITIAL_EPOCH):
            continue
        if session is not None and commit:
            entry.high_watermark, entry.log_start_offset = partition.high_watermark, partition.log_start_offset
        key = entry.topic_id if version >= 13 else entry.topic
        if key not in answered:
            answered[key] = Topic(topic=entry.topic, topic_id=entry.topic_id, partitions=[])
        answered[key].partitions.append(partition)
    response = API.Response(session_id=session.session_id if session else 0, responses=list(answered.values()))
    if version >= FIRST_NODE_ENDPOINTS:
        response.node_endpoints = leader_endpoints(services, request.connection.listener,
                                                   [p.current_leader for t in response.responses for p in t.partitions],
                                                   API.Response.NodeEndpoints)
    return response


def _news(entry: SessionPartition, partition, *, full: bool) -> bool:
    return (full or bool(partition.records) or partition.error_code != 0
            or partition.high_watermark != entry.high_watermark
            or partition.log_start_offset != entry.log_start_offset)


async def _read_partition(request: Request, services: Services, entry: SessionPartition, budget: int, *,
                          first: bool):
    body, topics = request.body, services.topics
    log_ = topics.partition(entry.topic, entry.partition) if entry.topic is not None else None
    if log_ is None:
        return _not_served(request, services, entry)
    if request.version < FIRST_ZSTD_FETCH and topics.config(topics.get(entry.topic), "compression.type") == "zstd":
        return Partition(partition_index=entry.partition, error_code=ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
                         high_watermark=-1, records=b"")
    committed = body.isolation_level == READ_COMMITTED
    stable = log_.last_stable_offset
    answer = Partition(partition_index=entry.partition, high_watermark=log_.high_watermark,
                       last_stable_offset=stable, log_start_offset=log_.log_start_offset,
                       aborted_transactions=[] if committed else None, records=b"")
    error = log_.epoch_error(entry.current_leader_epoch)
    if error is None and not log_.log_start_offset <= entry.fetch_offset <= log_.next_offset:
        error = ErrorCode.OFFSET_OUT_OF_RANGE
    if error is not None:
        answer.error_code = error
        return answer
    limit = min(entry.max_bytes, budget)
    batches = await log_.read(entry.fetch_offset, max(limit, 0), limit=stable if committed else None, min_one=first)
    if committed and batches:
        answer.aborted_transactions = _aborted(log_, entry.fetch_offset, batches[-1].last_offset + 1)
    try:
        answer.records = _encode(batches, request.version)
    except EncodeError as exc:
        answer.error_code = ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
        log.info("fetch_down_conversion_failed", topic=entry.topic, reason=str(exc))
    except DecodeError as exc:  # a stored batch whose records do not decode
        answer.error_code = ErrorCode.CORRUPT_MESSAGE
        log.warning("fetch_down_conversion_failed", topic=entry.topic, reason=str(exc))
    return answer


def _not_served(request: Request, services: Services, entry: SessionPartition):
    code = not_served(services, entry.topic, entry.partition)
    answer = Partition(partition_index=entry.partition, error_code=code, high_watermark=-1, records=b"")
    if code == ErrorCode.NOT_LEADER_OR_FOLLOWER and request.version >= FIRST_CURRENT_LEADER:
        answer.current_leader = current_leader(services, entry.topic, entry.partition, Partition.CurrentLeader)
    elif request.version >= 13:
        answer.error_code = ErrorCode.UNKNOWN_TOPIC_ID
    return answer


def _aborted(log_, start: int, end: int) -> list:
    """The aborted transactions a read_committed consumer must skip in [start, end)."""
    return [Partition.AbortedTransactions(producer_id=t.producer_id, first_offset=t.first_offset)
            for t in log_.aborted_transactions(start, end)]


def _encode(batches, version: int) -> Fragments | bytes:
    if version >= 4:
        return Fragments(batch.data for batch in batches)  # sent from where the batches lie
    magic = 0 if version <= 1 else 1
    return b"".join(batch_to_legacy(RecordBatch(memoryview(batch.data)), magic) for batch in batches)


def _counted(response):
    """The response that goes out, its bytes and records counted per topic."""
    for topic in response.responses:
        for partition in topic.partitions:
            if partition.records:
                BYTES_OUT.labels(topic.topic).inc(len(partition.records))
                RECORDS_OUT.labels(topic.topic).inc(_record_count(partition.records))
    return response


def _record_count(records) -> int:
    if isinstance(records, Fragments):  # v2 batches as stored
        return sum(RecordBatch(batch).record_count for batch in records.parts)
    return 0  # down-converted message sets of Fetch v0-3 are not counted


def _enough(request: Request, response, max_bytes: int) -> bool:
    """Whether the response holds min_bytes, or as much as its connection has room for or may get."""
    wanted = min(request.body.min_bytes, max_bytes, request.connection.response_room())
    return _size(response) >= max(wanted, 1)


def _size(response) -> int:
    return sum(len(p.records or b"") for t in response.responses for p in t.partitions)


def _has_error(response) -> bool:
    return any(p.error_code for t in response.responses for p in t.partitions)
