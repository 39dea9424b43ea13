"""Online migration between classic and consumer groups (Kafka's group.consumer.migration.policy=bidirectional).

A ConsumerGroupHeartbeat that joins a classic group of the consumer protocol
converts it into a consumer group (Kafka's ConsumerGroup.fromClassicGroup):
the members stay and keep speaking the classic protocol, subscribed to the
topics of their JoinGroup metadata and owning the partitions of their last
assignment, which is also their target; the group and member epochs start
at the generation. When only classic members remain, the group converts
back (ClassicGroup.fromConsumerGroup): a stable classic group of the group
epoch whose members hold their target assignment, about to rebalance.
"""

from __future__ import annotations

from gateway.group.classic import ClassicGroup, ClassicMember, ClassicState
from gateway.group.consumer_group import ConsumerGroup
from gateway.group.reconcile import Assignment, ClassicMetadata, ConsumerMember
from gateway.kafka_error import KafkaError
from protocol.errors import DecodeError
from protocol.kafka.consumer_protocol import decode_assignment, decode_subscription, encode_assignment, version_of
from protocol.kafka.error_codes import ErrorCode

CONSUMER_PROTOCOL = "consumer"


def check_upgradable(group: ClassicGroup, max_size: int, policy: str) -> None:
    """Kafka's validateOnlineUpgrade of a classic group with members."""
    if policy not in ("upgrade", "bidirectional"):
        raise _not_upgradable(group, "the online upgrade is disabled")
    if group.protocol_type != CONSUMER_PROTOCOL:
        raise _not_upgradable(group, "the group does not use the consumer embedded protocol")
    if len(group.members) > max_size:
        raise _not_upgradable(group, "the group size exceeds the consumer group maximum size")


def upgraded(classic: ClassicGroup, topics: dict) -> ConsumerGroup:
    """The consumer group a classic group becomes; `topics` are the broker's topics by name."""
    group = ConsumerGroup(classic.group_id)
    group.epoch = group.assignment_epoch = classic.generation
    for member in classic.members.values():
        try:
            subscription = decode_subscription(member.metadata(classic.protocol_name or member.protocols[0][0]))
            assigned = _assigned(member.assignment, topics)
        except DecodeError:
            raise _not_upgradable(classic, "the embedded consumer protocol is malformed") from None
        except _CustomAssignorData:
            raise _not_upgradable(classic, "its assignor adds user data, which server-side assignment "
                                           "would drop") from None
        group.put_member(ConsumerMember(
            member.member_id, member.instance_id, subscription.rack_id, member.rebalance_timeout_ms,
            member.client_id, member.client_host, tuple(sorted(set(subscription.topics))),
            epoch=classic.generation, previous_epoch=classic.generation, assigned=assigned,
            classic=ClassicMetadata(member.session_timeout_ms, tuple(member.protocols))))
        group.target[member.member_id] = assigned
    return group


def downgrades(policy: str) -> bool:
    """Whether a consumer group left with classic members only becomes a classic group."""
    return policy in ("downgrade", "bidirectional")


def downgraded(group: ConsumerGroup) -> ClassicGroup:
    """The classic group a consumer group of classic members only becomes."""
    classic = ClassicGroup(group.group_id, ClassicState.STABLE)
    classic.generation = group.epoch
    for member in group.members.values():
        classic.add(ClassicMember(
            member.member_id, member.instance_id, member.client_id, member.client_host,
            member.rebalance_timeout_ms, member.classic.session_timeout_ms, CONSUMER_PROTOCOL,
            list(member.classic.protocols)))
    classic.protocol_name = classic.select_protocol()
    for member in classic.members.values():
        # Serialized in the version of the member's own subscription, so that it can read it.
        classic_version = version_of(member.metadata(classic.protocol_name))
        member.assignment = encode_assignment(named(group, group.target.get(member.member_id, {})), classic_version)
    return classic


def named(group: ConsumerGroup, assignment: Assignment) -> dict[str, frozenset[int]]:
    """An assignment by topic name; topics the group no longer knows are left out."""
    return {group.topics[topic][0]: numbers for topic, numbers in assignment.items() if topic in group.topics}


class _CustomAssignorData(Exception):
    """User data in an assignment, which the consumer protocol's assignors would lose."""


def _assigned(data: bytes, topics: dict) -> Assignment:
    if not data:
        return {}  # a member that joined but never synced
    assignment = decode_assignment(data)
    if assignment.user_data:
        raise _CustomAssignorData
    assigned: Assignment = {}
    for part in assignment.assigned_partitions:
        if part.topic in topics:
            topic_id = topics[part.topic].topic_id
            assigned[topic_id] = assigned.get(topic_id, frozenset()) | frozenset(part.partitions)
    return assigned


def _not_upgradable(group: ClassicGroup, reason: str) -> KafkaError:
    return KafkaError(ErrorCode.GROUP_ID_NOT_FOUND,
                      f"Cannot upgrade classic group {group.group_id} to consumer group because {reason}.")
