"""DescribeProducers, DescribeTransactions, ListTransactions: what admin tools see of KIP-98 state."""

from __future__ import annotations

import re

from gateway.acls.model import Operation, ResourceType
from gateway.api.authorization import allowed, allowed_names
from gateway.api.registry import handles
from gateway.api.services import Services
from gateway.server.dispatch import Request
from gateway.txn.txn_metadata import TxnState
from gateway.wall_clock import now_ms
from protocol.kafka.apis import by_name
from protocol.kafka.error_codes import ErrorCode

PRODUCERS = by_name("DescribeProducers")
DESCRIBE = by_name("DescribeTransactions")
LIST = by_name("ListTransactions")


@handles("DescribeProducers")
async def describe_producers(request: Request, services: Services):
    Topic = PRODUCERS.Response.Topics
    readable = allowed_names(request, services, Operation.READ, ResourceType.TOPIC,
                             (t.name for t in request.body.topics))
    return PRODUCERS.Response(topics=[
        Topic(name=t.name, partitions=[_producers_of(services.topics.partition(t.name, n), n, t.name in readable)
                                       for n in t.partition_indexes])
        for t in request.body.topics
    ])


def _producers_of(partition, number: int, readable: bool):
    Partition = PRODUCERS.Response.Topics.Partitions
    if not readable:
        return Partition(partition_index=number, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    if partition is None:
        return Partition(partition_index=number, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    return Partition(partition_index=number, active_producers=[
        Partition.ActiveProducers(
            producer_id=p.producer_id, producer_epoch=p.epoch, last_sequence=p.last_sequence,
            last_timestamp=p.last_timestamp, coordinator_epoch=p.coordinator_epoch,
            current_txn_start_offset=p.current_txn_start_offset)
        for p in partition.active_producers()
    ])


@handles("DescribeTransactions")
async def describe_transactions(request: Request, services: Services):
    State = DESCRIBE.Response.TransactionStates
    answers = []
    for transactional_id in request.body.transactional_ids:
        if not allowed(request, services, Operation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, transactional_id):
            answers.append(State(transactional_id=transactional_id,
                                 error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))
            continue
        txn = services.transactions.transaction(transactional_id)
        if txn is None:
            answers.append(State(transactional_id=transactional_id, error_code=ErrorCode.TRANSACTIONAL_ID_NOT_FOUND))
            continue
        topics: dict[str, list[int]] = {}
        for topic, number in sorted(txn.partitions):
            topics.setdefault(topic, []).append(number)
        answers.append(State(
            transactional_id=transactional_id, transaction_state=txn.state.value,
            transaction_timeout_ms=txn.timeout_ms, transaction_start_time_ms=txn.start_ms,
            producer_id=txn.producer_id, producer_epoch=txn.producer_epoch,
            topics=[State.Topics(topic=t, partitions=p) for t, p in topics.items()]))
    return DESCRIBE.Response(transaction_states=answers)


@handles("ListTransactions")
async def list_transactions(request: Request, services: Services):
    body = request.body
    names = {state.value for state in TxnState}
    states = set(body.state_filters) & names
    try:
        pattern = re.compile(body.transactional_id_pattern) if body.transactional_id_pattern else None
    except re.error:
        return LIST.Response(error_code=ErrorCode.INVALID_REGULAR_EXPRESSION)
    now = now_ms()

    def wanted(txn) -> bool:
        return (txn.state != TxnState.DEAD
                and (not body.state_filters or txn.state.value in states)
                and (not body.producer_id_filters or txn.producer_id in body.producer_id_filters)
                and (body.duration_filter < 0 or now - txn.start_ms > body.duration_filter)
                and (pattern is None or pattern.fullmatch(txn.transactional_id) is not None)
                and allowed(request, services, Operation.DESCRIBE, ResourceType.TRANSACTIONAL_ID,
                            txn.transactional_id))

    State = LIST.Response.TransactionStates
    return LIST.Response(
        unknown_state_filters=[s for s in body.state_filters if s not in names],
        transaction_states=[
            State(transactional_id=t.transactional_id, producer_id=t.producer_id, transaction_state=t.state.value)
            for t in services.transactions.transactions() if wanted(t)
        ])
