"""A ConsumerGroupHeartbeat as the coordinator sees it, and Kafka's checks of it."""

from __future__ import annotations

from dataclasses import dataclass, replace

from gateway.group.assignors import ASSIGNORS
from gateway.group.reconcile import Assignment, ConsumerMember
from gateway.group.topic_regex import problem
from gateway.kafka_error import KafkaError
from protocol.kafka.error_codes import ErrorCode

LEAVE_EPOCH, STATIC_LEAVE_EPOCH = -1, -2
FIRST_VERSION_WITH_CLIENT_MEMBER_ID = 1


@dataclass
class HeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None
    rack_id: str | None
    rebalance_timeout_ms: int
    subscribed_topic_names: list[str] | None
    subscribed_topic_regex: str | None
    server_assignor: str | None
    owned: Assignment | None
    client_id: str
    client_host: str
    version: int

    def is_full(self) -> bool:
        """Whether the member sent everything it has, as on joining or after an error."""
        return self.rebalance_timeout_ms != -1 and self.owned is not None and (
            self.subscribed_topic_names is not None or self.subscribed_topic_regex is not None)



def validate(request: HeartbeatRequest) -> None:
    """Kafka's checks of a ConsumerGroupHeartbeat before it touches any group."""
    epoch = request.member_epoch
    if (request.version >= FIRST_VERSION_WITH_CLIENT_MEMBER_ID or epoch > 0 or epoch == LEAVE_EPOCH) \
            and not request.member_id.strip():
        raise KafkaError(ErrorCode.INVALID_REQUEST, "MemberId can't be empty.")
    for value, name in ((request.group_id, "GroupId"), (request.instance_id, "InstanceId"),
                        (request.rack_id, "RackId")):
        if value is not None and not value.strip():
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"{name} can't be empty.")
    if epoch == 0:
        if request.rebalance_timeout_ms == -1:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request.")
        if request.owned is None or request.owned:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "TopicPartitions must be empty when (re-)joining.")
        if request.subscribed_topic_names is None and request.subscribed_topic_regex is None:
            raise KafkaError(ErrorCode.INVALID_REQUEST,
                             "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.")
    elif epoch == STATIC_LEAVE_EPOCH:
        if request.instance_id is None:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "InstanceId can't be null.")
    elif epoch < STATIC_LEAVE_EPOCH:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "MemberEpoch is invalid.")
    if request.server_assignor is not None and request.server_assignor not in ASSIGNORS:
        raise KafkaError(ErrorCode.UNSUPPORTED_ASSIGNOR,
                         f"ServerAssignor {request.server_assignor} is not supported. "
                         f"Supported assignors: {', '.join(ASSIGNORS)}.")
    if request.subscribed_topic_regex:
        check_regex(request.subscribed_topic_regex)


def updated_member(member: ConsumerMember, request: HeartbeatRequest) -> ConsumerMember:
    """The member with what the heartbeat carries; absent (null, -1) fields keep their value."""
    names = request.subscribed_topic_names
    return replace(
        member,
        instance_id=request.instance_id if request.instance_id is not None else member.instance_id,
        rack_id=request.rack_id if request.rack_id is not None else member.rack_id,
        rebalance_timeout_ms=(request.rebalance_timeout_ms if request.rebalance_timeout_ms != -1
                              else member.rebalance_timeout_ms),
        server_assignor=request.server_assignor if request.server_assignor is not None else member.server_assignor,
        subscribed_topic_names=tuple(sorted(set(names))) if names is not None else member.subscribed_topic_names,
        subscribed_topic_regex=(request.subscribed_topic_regex if request.subscribed_topic_regex is not None
                                else member.subscribed_topic_regex),
        client_id=request.client_id, client_host=request.client_host)


def check_epoch(member: ConsumerMember, request: HeartbeatRequest) -> None:
    """FENCED_MEMBER_EPOCH unless the epoch is the member's, or its previous one with a lost response."""
    received = request.member_epoch
    if received > member.epoch:
        raise KafkaError(ErrorCode.FENCED_MEMBER_EPOCH,
                         f"The consumer group member has a greater member epoch ({received}) than the one known by "
                         f"the group coordinator ({member.epoch}). The member must abandon all its partitions "
                         "and rejoin.")
    if received < member.epoch and (received != member.previous_epoch or not within(request.owned, member.assigned)):
        raise KafkaError(ErrorCode.FENCED_MEMBER_EPOCH,
                         f"The consumer group member has a smaller member epoch ({received}) than the one known by "
                         f"the group coordinator ({member.epoch}). The member must abandon all its partitions "
                         "and rejoin.")


def within(owned: Assignment | None, assigned: Assignment) -> bool:
    if owned is None:
        return False
    return all(numbers <= assigned.get(topic, frozenset()) for topic, numbers in owned.items())


def check_not_fenced(member: ConsumerMember, member_id: str, instance: str) -> None:
    if member.member_id != member_id:
        raise KafkaError(ErrorCode.FENCED_INSTANCE_ID,
                         f"Static member {member_id} with instance id {instance} was fenced by member "
                         f"{member.member_id}.")


def check_regex(regex: str) -> None:
    reason = problem(regex)
    if reason is not None:
        raise KafkaError(ErrorCode.INVALID_REGULAR_EXPRESSION,
                         f"SubscribedTopicRegex `{regex}` is not a valid regular expression: {reason}.")
