"""OffsetCommit, OffsetFetch and OffsetDelete: a group's committed positions."""

from __future__ import annotations

from gateway.acls.model import Operation, ResourceType
from gateway.api.authorization import allowed, allowed_names, group_id, requires
from gateway.api.registry import handles
from gateway.api.services import Services, Topics
from gateway.group.committed_offsets import MAX_METADATA_CHARS, Committed
from gateway.kafka_error import KafkaError
from gateway.server.dispatch import Request
from gateway.wall_clock import now_ms
from protocol.kafka.apis import by_name
from protocol.kafka.error_codes import ErrorCode

COMMIT = by_name("OffsetCommit")
FETCH = by_name("OffsetFetch")
DELETE = by_name("OffsetDelete")
FIRST_TOPIC_ID_VERSION = 10
FIRST_BATCHED_FETCH = 8


def topic_of(topics: Topics, name: str | None, topic_id, version: int):
    """(topic name, error) of a requested topic, named or (v10+) by id."""
    if version >= FIRST_TOPIC_ID_VERSION:
        topic = topics.by_id(topic_id)
        return (topic.name, ErrorCode.NONE) if topic else (None, ErrorCode.UNKNOWN_TOPIC_ID)
    return name, ErrorCode.NONE if topics.get(name) else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


@handles("OffsetCommit")
async def offset_commit(request: Request, services: Services):
    body, version = request.body, request.version
    now = now_ms()
    errors: dict[tuple[int, int], ErrorCode] = {}  # (topic index, partition index) -> error
    commits: dict[tuple[str, int], Committed] = {}
    group_readable = allowed(request, services, Operation.READ, ResourceType.GROUP, body.group_id)
    for t, topic in enumerate(body.topics):
        name, error = topic_of(services.topics, topic.name, topic.topic_id, version)
        if not group_readable:
            error = ErrorCode.GROUP_AUTHORIZATION_FAILED
        elif name is not None and not allowed(request, services, Operation.READ, ResourceType.TOPIC, name):
            error = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        for p, wanted in enumerate(topic.partitions):
            metadata = wanted.committed_metadata or ""
            if error == ErrorCode.NONE and len(metadata) > MAX_METADATA_CHARS:
                errors[t, p] = ErrorCode.OFFSET_METADATA_TOO_LARGE
                continue
            errors[t, p] = error
            if error == ErrorCode.NONE:
                stamp = wanted.commit_timestamp if version == 1 and wanted.commit_timestamp != -1 else now
                expire = stamp + body.retention_time_ms if body.retention_time_ms != -1 else None
                commits[name, wanted.partition_index] = Committed(
                    wanted.committed_offset, wanted.committed_leader_epoch, metadata, stamp, expire)
    try:
        if group_readable:
            await services.groups.commit_offsets(body.group_id, body.member_id, body.group_instance_id,
                                               body.generation_id_or_member_epoch, version, commits)
    except KafkaError as exc:
        errors = {key: exc.code if error == ErrorCode.NONE else error for key, error in errors.items()}
    Topic = COMMIT.Response.Topics
    return COMMIT.Response(topics=[
        Topic(name=topic.name, topic_id=topic.topic_id, partitions=[
            Topic.Partitions(partition_index=wanted.partition_index, error_code=errors[t, p])
            for p, wanted in enumerate(topic.partitions)])
        for t, topic in enumerate(body.topics)])


@handles("OffsetFetch")
async def offset_fetch(request: Request, services: Services):
    body, version = request.body, request.version
    if version < FIRST_BATCHED_FETCH:
        error, topics = fetch_group(request, services, body.group_id, body.topics)
        if version < 2 and error:  # no group error before v2: each partition asked for carries it
            Topic = FETCH.Response.Topics
            topics = [Topic(name=t.name, partitions=[Topic.Partitions(partition_index=n, committed_offset=-1,
                                                                      metadata="", error_code=error)
                                                     for n in t.partition_indexes]) for t in body.topics or []]
        response = FETCH.Response(topics=topics)
        if version >= 2:
            response.error_code = error
        return response
    Group = FETCH.Response.Groups
    groups = []
    for wanted in body.groups:
        try:
            # v9+: a consumer group member fetches with its member id and epoch, which must be current.
            services.groups.validate_offset_fetch(wanted.group_id, wanted.member_id, wanted.member_epoch)
        except KafkaError as exc:
            groups.append(Group(group_id=wanted.group_id, error_code=exc.code))
            continue
        error, topics = fetch_group(request, services, wanted.group_id, wanted.topics)
        groups.append(Group(group_id=wanted.group_id, error_code=error, topics=topics))
    return FETCH.Response(groups=groups)


def fetch_group(request: Request, services: Services, group_id: str, wanted_topics):
    """(group error, response topics) for one group, in the shape of the request's version: without
    DESCRIBE on the group GROUP_AUTHORIZATION_FAILED; topics the request may not DESCRIBE are left out
    of all, refused when named."""
    version = request.version
    batched = version >= FIRST_BATCHED_FETCH
    Topic = FETCH.Response.Groups.Topics if batched else FETCH.Response.Topics
    if not allowed(request, services, Operation.DESCRIBE, ResourceType.GROUP, group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED, []
    try:
        offsets = services.groups.fetch_offsets(group_id)
    except KafkaError as exc:  # coordinated elsewhere, or loading
        return exc.code, []
    described = allowed_names(request, services, Operation.DESCRIBE, ResourceType.TOPIC, {t for t, _ in offsets})
    if wanted_topics is None:
        asked: dict[str, list[int]] = {}
        for topic, partition in sorted(offsets):
            if topic in described:
                asked.setdefault(topic, []).append(partition)
        wanted_topics = [(name, _topic_id(services.topics, name), parts)
                         for name, parts in asked.items()]
    else:
        wanted_topics = [(*_fetched_topic(services.topics, t, version), t.partition_indexes) for t in wanted_topics]
    topics = []
    for name, topic_id, partitions in wanted_topics:
        answers = []
        refused = name is not None and not allowed(request, services, Operation.DESCRIBE, ResourceType.TOPIC, name)
        for number in partitions:
            committed = None if refused else offsets.get((name, number))
            answers.append(Topic.Partitions(
                partition_index=number, committed_offset=committed.offset if committed else -1,
                committed_leader_epoch=committed.leader_epoch if committed and version >= 5 else -1,
                metadata=committed.metadata if committed else "",
                error_code=_partition_error(request, services, group_id, name, number, refused)))
        topic = Topic(name=name or "", partitions=answers)
        if version >= FIRST_TOPIC_ID_VERSION:
            topic.topic_id = topic_id
        topics.append(topic)
    return ErrorCode.NONE, topics


def _partition_error(request: Request, services: Services, group_id: str, name: str | None, number: int,
                     refused: bool) -> ErrorCode:
    if name is None:
        return ErrorCode.UNKNOWN_TOPIC_ID
    if refused:
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED
    return _stability(request, services, group_id, name, number)


def _stability(request: Request, services: Services, group_id: str, topic: str, partition: int) -> ErrorCode:
    """UNSTABLE_OFFSET_COMMIT for a client that requires stable offsets while a transaction
    carries one for the partition (it retries until the transaction completes)."""
    if request.version >= 7 and request.body.require_stable and \
            services.groups.has_pending_offset(group_id, topic, partition):
        return ErrorCode.UNSTABLE_OFFSET_COMMIT
    return ErrorCode.NONE


def _topic_id(topics: Topics, name: str):
    topic = topics.get(name)
    return topic.topic_id if topic else None


def _fetched_topic(topics: Topics, wanted, version: int):
    if version >= FIRST_TOPIC_ID_VERSION:
        topic = topics.by_id(wanted.topic_id)
        return (topic.name if topic else None), wanted.topic_id
    return wanted.name, None


@handles("OffsetDelete")
@requires(Operation.DELETE, ResourceType.GROUP, group_id)
async def offset_delete(request: Request, services: Services):
    body = request.body
    readable = allowed_names(request, services, Operation.READ, ResourceType.TOPIC, (t.name for t in body.topics))
    known = [(t.name, p.partition_index) for t in body.topics for p in t.partitions
             if t.name in readable and services.topics.get(t.name)]
    try:
        errors = await services.groups.delete_offsets(body.group_id, known)
    except KafkaError as exc:
        return DELETE.Response(error_code=exc.code)
    Topic = DELETE.Response.Topics
    return DELETE.Response(topics=[
        Topic(name=t.name, partitions=[
            Topic.Partitions(partition_index=p.partition_index,
                             error_code=errors.get((t.name, p.partition_index), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                             if t.name in readable else ErrorCode.TOPIC_AUTHORIZATION_FAILED)
            for p in t.partitions])
        for t in body.topics])
