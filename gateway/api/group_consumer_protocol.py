"""ConsumerGroupHeartbeat and ConsumerGroupDescribe: KIP-848 consumer groups.

Both are served while the cluster finalizes group.version 1; at 0 Kafka
refuses them with UNSUPPORTED_VERSION and no message before any other check
(ConsumerGroupDescribe: for each group asked for).
"""

from __future__ import annotations

import functools

from gateway.acls.model import Operation, ResourceType
from gateway.api.authorization import FAILURES, allowed, allowed_names, group_id, requires
from gateway.api.group_admin import group_operations
from gateway.api.group_membership import client_host, coordinator_refusals
from gateway.api.registry import handles
from gateway.api.services import Services, Topics
from gateway.features.levels import GROUP_VERSION
from gateway.group.assignors import DEFAULT_ASSIGNOR
from gateway.group.consumer_membership import HeartbeatResult
from gateway.group.consumer_requests import HeartbeatRequest
from gateway.group.reconcile import Assignment
from gateway.kafka_error import KafkaError
from gateway.server.dispatch import Request
from protocol.kafka.apis import by_name
from protocol.kafka.error_codes import ErrorCode

HEARTBEAT = by_name("ConsumerGroupHeartbeat")
DESCRIBE = by_name("ConsumerGroupDescribe")
CLASSIC_MEMBER_TYPE, CONSUMER_MEMBER_TYPE = 0, 1  # ConsumerGroupDescribe v1's member_type
FIRST_MEMBER_TYPE_VERSION = 1


def consumer_protocol_finalized(refusal):
    """The handler while group.version is 1, else `refusal(body)`: Kafka's answer without the protocol."""
    def declare(handler):
        @functools.wraps(handler)
        async def gated(request: Request, services: Services):
            if services.features.level(GROUP_VERSION) < 1:
                return refusal(request.body)
            return await handler(request, services)
        return gated
    return declare


@handles("ConsumerGroupHeartbeat")
@consumer_protocol_finalized(lambda body: HEARTBEAT.Response(error_code=ErrorCode.UNSUPPORTED_VERSION))
@requires(Operation.READ, ResourceType.GROUP, group_id)
@coordinator_refusals
async def consumer_group_heartbeat(request: Request, services: Services):
    body = request.body
    subscribed = body.subscribed_topic_names or []
    hidden = sorted(set(subscribed) - allowed_names(request, services, Operation.DESCRIBE, ResourceType.TOPIC,
                                                    subscribed))
    if hidden:  # Kafka's check: every topic subscribed to by name may be described
        return HEARTBEAT.Response(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, error_message=(
            f"The group has subscribed to topics which are not authorized: {', '.join(hidden)}"))
    owned = None
    if body.topic_partitions is not None:
        owned = {}
        for t in body.topic_partitions:
            owned[t.topic_id] = owned.get(t.topic_id, frozenset()) | frozenset(t.partitions)
    heartbeat = HeartbeatRequest(
        body.group_id, body.member_id, body.member_epoch, body.instance_id, body.rack_id, body.rebalance_timeout_ms,
        body.subscribed_topic_names, body.subscribed_topic_regex, body.server_assignor, owned,
        request.client_id or "", client_host(request), request.version)
    return heartbeat_response(await services.groups.consumer_heartbeat(heartbeat))


def heartbeat_response(result: HeartbeatResult):
    if result.error != ErrorCode.NONE:
        return HEARTBEAT.Response(error_code=result.error, error_message=result.message)
    assignment = None
    if result.assignment is not None:
        Assigned = HEARTBEAT.Response.Assignment
        assignment = Assigned(topic_partitions=[
            Assigned.TopicPartitions(topic_id=topic, partitions=sorted(numbers))
            for topic, numbers in result.assignment.items()])
    return HEARTBEAT.Response(member_id=result.member_id, member_epoch=result.epoch,
                              heartbeat_interval_ms=result.interval_ms, assignment=assignment)


@handles("ConsumerGroupDescribe")
@consumer_protocol_finalized(lambda body: DESCRIBE.Response(groups=[
    DESCRIBE.Response.Groups(group_id=group_id, error_code=ErrorCode.UNSUPPORTED_VERSION)
    for group_id in body.group_ids]))
async def consumer_group_describe(request: Request, services: Services):
    body = request.body
    return DESCRIBE.Response(groups=[
        described(services, group_id, request.version,
                  group_operations(request, services, group_id, body.include_authorized_operations))
        if allowed(request, services, Operation.DESCRIBE, ResourceType.GROUP, group_id) else
        DESCRIBE.Response.Groups(group_id=group_id, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED,
                                 error_message=FAILURES[ResourceType.GROUP][1])
        for group_id in body.group_ids])


def described(services: Services, group_id: str, version: int, operations: int):
    Group = DESCRIBE.Response.Groups
    if not group_id:
        return Group(group_id=group_id, error_code=ErrorCode.INVALID_GROUP_ID, error_message="GroupId can't be empty.")
    try:
        group = services.groups.consumer_group(group_id)
    except KafkaError as exc:
        return Group(group_id=group_id, error_code=exc.code, error_message=exc.message)
    members = []
    for m in group.members.values():
        member = Group.Members(
            member_id=m.member_id, instance_id=m.instance_id, rack_id=m.rack_id, member_epoch=m.epoch,
            client_id=m.client_id, client_host=m.client_host, subscribed_topic_names=list(m.subscribed_topic_names),
            subscribed_topic_regex=m.subscribed_topic_regex,
            assignment=_assignment(services.topics, m.assigned, Group.Members.Assignment),
            target_assignment=_assignment(services.topics, group.target.get(m.member_id, {}),
                                          Group.Members.TargetAssignment))
        if version >= FIRST_MEMBER_TYPE_VERSION:
            member.member_type = CONSUMER_MEMBER_TYPE if m.classic is None else CLASSIC_MEMBER_TYPE
        members.append(member)
    return Group(group_id=group_id, group_state=group.state.value, group_epoch=group.epoch,
                 assignment_epoch=group.assignment_epoch, assignor_name=group.preferred_assignor() or DEFAULT_ASSIGNOR,
                 members=members, authorized_operations=operations)


def _assignment(topics: Topics, assignment: Assignment, cls):
    """An assignment with topic names; topics deleted since are left out, as Kafka does."""
    parts = []
    for topic_id, numbers in assignment.items():
        topic = topics.by_id(topic_id)
        if topic is not None:
            parts.append(cls.TopicPartitions(topic_id=topic_id, topic_name=topic.name, partitions=sorted(numbers)))
    return cls(topic_partitions=parts)
