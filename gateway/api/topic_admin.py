"""CreateTopics, DeleteTopics and CreatePartitions.

This gateway is the only broker a client sees, so a manual replica
assignment may name this node alone, once per partition. Partitions created and deleted count against the client's
controller_mutation_rate (mutation_quota.py).

A topic created or grown is answered once its new partitions have leaders, the request's topics
waiting together until its timeout_ms runs out; one whose leaders are not all assigned by then,
and every one when timeout_ms <= 0 (answered at once), is answered REQUEST_TIMED_OUT, changed all
the same, as Kafka's broker that waits for the leaders answers (librdkafka takes that answer for
done when it asked for no wait). Kafka 4's controller, whose deadline bounds only the wait for
its event queue, changes nothing when it runs out (at once for timeout_ms <= 0).
"""

from __future__ import annotations

from collections import Counter

import trio

from gateway.acls.model import Operation, ResourceType
from gateway.api.authorization import FAILURES, allowed, allowed_names, may_create, require
from gateway.api.configs import repeated, topic_entries
from gateway.api.internal_topics import is_internal
from gateway.api.mutation_quota import MutationQuota
from gateway.api.registry import handles
from gateway.api.services import Services
from gateway.kafka_error import KafkaError
from gateway.server.dispatch import Request
from protocol.kafka.apis import by_name
from protocol.kafka.error_codes import ErrorCode
from protocol.kafka.primitives import ZERO_UUID

CREATE = by_name("CreateTopics")
DELETE = by_name("DeleteTopics")
CREATE_PARTITIONS = by_name("CreatePartitions")

DUPLICATE_NAME = "Duplicate topic name."


def bad_assignment(message: str) -> KafkaError:
    return KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"The manual partition assignment includes {message}")


def replication_of(replica_lists, node: int, replication: int | None) -> int:
    """The replica count every list agrees on (and `replication`, if given)."""
    for brokers in replica_lists:
        if not brokers:
            raise bad_assignment("an empty replica list.")
        stranger = next((b for b in brokers if b != node), None)
        if stranger is not None:
            raise bad_assignment(f"broker {stranger}, but no such broker is registered.")
        if len(brokers) > 1:
            raise bad_assignment(f"the broker {node} more than once.")
        if replication is not None and len(brokers) != replication:
            raise bad_assignment(f"a partition with {len(brokers)} replica(s), but this is not consistent "
                                 f"with previous partitions, which have {replication} replica(s).")
        replication = len(brokers)
    return replication


def layout(wanted, node: int) -> tuple[int, int]:
    """(partitions, replication factor) of a CreateTopics entry; -1 takes the broker default."""
    if not wanted.assignments:
        return wanted.num_partitions, wanted.replication_factor
    for field, value in (("replication factor", wanted.replication_factor), ("numPartitions", wanted.num_partitions)):
        if value != -1:
            raise KafkaError(ErrorCode.INVALID_REQUEST,
                             f"A manual partition assignment was specified, but {field} was not set to -1.")
    indexes = [a.partition_index for a in wanted.assignments]
    twice = repeated(indexes)
    if twice:
        raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                         f"Found multiple manual partition assignments for partition {min(twice)}")
    replication = replication_of([a.broker_ids for a in wanted.assignments], node, None)
    if sorted(indexes) != list(range(len(indexes))):
        raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                         "partitions should be a consecutive 0-based integer sequence")
    return len(indexes), replication


def leaders_deadline(timeout_ms: int) -> float | None:
    """When a request stops waiting for its new partitions' leaders (trio's clock); None when it
    waits for none."""
    return trio.current_time() + timeout_ms / 1000 if timeout_ms > 0 else None


async def await_leaders(services: Services, topic, deadline: float | None) -> None:
    """Wait until the topic's partitions have leaders, or REQUEST_TIMED_OUT at the deadline."""
    if deadline is None or not await services.topics.led(topic, deadline):
        raise KafkaError(ErrorCode.REQUEST_TIMED_OUT,
                         f"Topic '{topic.name}' was changed, but not all of its partitions had leaders within the "
                         "request's timeout.")


async def create_topic(services: Services, wanted, validate_only: bool, quota: MutationQuota, deadline: float | None):
    Result = CREATE.Response.Topics
    try:
        if is_internal(wanted.name):  # described whenever named, so it exists
            raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{wanted.name}' already exists.")
        partitions, replication = layout(wanted, services.cluster.node_id)
        quota.check()
        topic = await services.topics.create(wanted.name, partitions, replication,
                                          {c.name: c.value for c in wanted.configs}, validate_only=validate_only)
        quota.count(len(topic.partition_states))
        if not validate_only:
            await await_leaders(services, topic, deadline)
    except KafkaError as exc:
        return Result(name=wanted.name, error_code=exc.code, error_message=exc.message)
    configs = [Result.Configs(name=e.name, value=e.value, read_only=e.read_only, config_source=e.source,
                              is_sensitive=False)
               for e in topic_entries(topic.configs, services)]
    return Result(name=topic.name, topic_id=topic.topic_id, error_message=None,
                  num_partitions=len(topic.partition_states), replication_factor=topic.replication_factor,
                  configs=configs)


@handles("CreateTopics")
async def create_topics(request: Request, services: Services):
    body = request.body
    twice = repeated(t.name for t in body.topics)
    quota = MutationQuota(request, services, strict_from=6)
    deadline = leaders_deadline(body.timeout_ms)
    results = [await create_topic(services, t, body.validate_only, quota, deadline)
               if may_create(request, services, t.name)
               else _refused(CREATE.Response.Topics, t.name) for t in body.topics if t.name not in twice]
    results += [CREATE.Response.Topics(name=name, error_code=ErrorCode.INVALID_REQUEST, error_message=DUPLICATE_NAME)
                for name in sorted(twice)]
    return quota.throttled(CREATE.Response(topics=results))


def by_name_or_id(wanted) -> tuple[list, Counter, Counter]:
    """(refusals, names, ids) of DeleteTopics entries; an entry gives a name or an id."""
    Result = DELETE.Response.Responses
    refusals = []
    for name, topic_id in wanted:
        if name is None and topic_id == ZERO_UUID:
            refusals.append(Result(name=None, error_code=ErrorCode.INVALID_REQUEST,
                                   error_message="Neither topic name nor id were specified."))
        elif name is not None and topic_id != ZERO_UUID:
            refusals.append(Result(name=name, topic_id=topic_id, error_code=ErrorCode.INVALID_REQUEST,
                                   error_message="You may not specify both topic name and topic id."))
    names = Counter(name for name, topic_id in wanted if name is not None and topic_id == ZERO_UUID)
    ids = Counter(topic_id for name, topic_id in wanted if name is None and topic_id != ZERO_UUID)
    return refusals, names, ids


def resolve(counts: Counter, find, row, repeat: str, missing: tuple[ErrorCode, str], refusals: list, found: dict):
    """Look up each key asked for once; Kafka refuses every repeat and deletes none of them."""
    for key, count in counts.items():
        refusals += [row(key, ErrorCode.INVALID_REQUEST, repeat) for _ in range(count - 1)]
        topic = find(key) if count == 1 else None
        if topic is not None:
            found[topic.name] = topic
        elif count == 1:
            refusals.append(row(key, *missing))


@handles("DeleteTopics")
async def delete_topics(request: Request, services: Services):
    Result = DELETE.Response.Responses
    wanted = ([(name, ZERO_UUID) for name in request.body.topic_names] if request.version < 6
              else [(t.name, t.topic_id) for t in request.body.topics])
    results, names, ids = by_name_or_id(wanted)
    hidden = set(names) - allowed_names(request, services, Operation.DESCRIBE, ResourceType.TOPIC, names)
    results += [_refused(Result, name) for name in sorted(hidden)]  # whether or not they exist, as in Kafka
    names = Counter({name: count for name, count in names.items() if name not in hidden})
    found = {}
    def named(name, code, message):
        return Result(name=name, error_code=code, error_message=message)

    def numbered(topic_id, code, message):
        return Result(name=None, topic_id=topic_id, error_code=code, error_message=message)

    resolve(names, services.topics.get, named, DUPLICATE_NAME,
            (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition."), results, found)
    resolve(ids, services.topics.by_id, numbered, "Duplicate topic ID.",
            (ErrorCode.UNKNOWN_TOPIC_ID, "This server does not host this topic ID."), results, found)
    quota = MutationQuota(request, services, strict_from=5)
    for topic in found.values():
        result = Result(name=topic.name, topic_id=topic.topic_id)
        try:
            require(request, services, Operation.DELETE, ResourceType.TOPIC, topic.name)
            if is_internal(topic.name):  # its records are the gateway's view of its coordinators' journals
                raise KafkaError(ErrorCode.INVALID_REQUEST, f"Topic {topic.name} is a kafka internal topic and is "
                                                            "not allowed to be marked for deletion.")
            quota.check()
            await services.topics.delete(topic.name)
            quota.count(len(topic.partitions))
        except KafkaError as exc:
            result.error_code, result.error_message = exc.code, exc.message
        results.append(result)
    return quota.throttled(DELETE.Response(responses=results))


def check_added(wanted, topic, node: int) -> None:
    """Kafka's checks on the replica lists of the partitions CreatePartitions adds."""
    added = wanted.count - len(topic.partition_states)
    if len(wanted.assignments) != added:
        raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                         f"Attempted to add {added} additional partition(s), but only "
                         f"{len(wanted.assignments)} assignment(s) were specified.")
    replication_of([a.broker_ids for a in wanted.assignments], node, topic.replication_factor)


async def add_partitions(services: Services, wanted, validate_only: bool, quota: MutationQuota,
                         deadline: float | None):
    Result = CREATE_PARTITIONS.Response.Results
    try:
        topic = services.topics.get(wanted.name)
        if topic is not None and wanted.assignments is not None and wanted.count > len(topic.partition_states):
            check_added(wanted, topic, services.cluster.node_id)
        quota.check()
        before = len(topic.partition_states) if topic is not None else 0
        await services.topics.add_partitions(wanted.name, wanted.count, validate_only=validate_only)
        quota.count(wanted.count - before)
        if not validate_only:
            await await_leaders(services, topic, deadline)
    except KafkaError as exc:
        return Result(name=wanted.name, error_code=exc.code, error_message=exc.message)
    return Result(name=wanted.name)


@handles("CreatePartitions")
async def create_partitions(request: Request, services: Services):
    body = request.body
    twice = repeated(t.name for t in body.topics)
    quota = MutationQuota(request, services, strict_from=3)
    deadline = leaders_deadline(body.timeout_ms)
    results = [await add_partitions(services, t, body.validate_only, quota, deadline)
               if allowed(request, services, Operation.ALTER, ResourceType.TOPIC, t.name)
               else _refused(CREATE_PARTITIONS.Response.Results, t.name) for t in body.topics if t.name not in twice]
    results += [CREATE_PARTITIONS.Response.Results(name=name, error_code=ErrorCode.INVALID_REQUEST,
                                                   error_message=DUPLICATE_NAME)
                for name in sorted(twice)]
    return quota.throttled(CREATE_PARTITIONS.Response(results=results))


def _refused(result, name: str):
    """The result of a topic the request may not change."""
    return result(name=name, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                  error_message=FAILURES[ResourceType.TOPIC][1])
