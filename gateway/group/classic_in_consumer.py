"""Classic members of consumer groups: JoinGroup, SyncGroup, Heartbeat and LeaveGroup
answered as Kafka's GroupMetadataManager answers them (classicGroup*ToConsumerGroup).

Such a member is a consumer group member like any other, reconciled only
when it joins: a JoinGroup is answered at once with the member's epoch as
generation, a SyncGroup with the partitions it has now. A Heartbeat tells
it to rejoin (REBALANCE_IN_PROGRESS) when the group moved to a newer epoch,
when it must give up partitions (it does so by rejoining without them), or
when partitions it waits for were released. It must sync, and rejoin when
asked, within its rebalance timeout, or it is fenced.
"""

from __future__ import annotations

import uuid
from dataclasses import replace

from gateway.group.classic import JoinResult, SyncResult
from gateway.group.classic_membership import FIRST_VERSION_REQUIRING_MEMBER_ID, JoinRequest
from gateway.group.consumer_group import ConsumerGroup
from gateway.group.consumer_requests import check_not_fenced
from gateway.group.migration import CONSUMER_PROTOCOL, named
from gateway.group.reconcile import Assignment, ClassicMetadata, ConsumerMember, MemberState
from gateway.kafka_error import KafkaError
from protocol.errors import DecodeError
from protocol.kafka.consumer_protocol import decode_subscription, encode_assignment, version_of
from protocol.kafka.error_codes import ErrorCode


class ClassicInConsumerGroup:
    """The classic protocol's operations on the coordinator's consumer groups."""

    def __init__(self, coordinator):
        self.coordinator = coordinator
        self.consumer = coordinator.consumer
        self.timer = coordinator.timer

    # JoinGroup ---------------------------------------------------------------------

    async def join(self, group: ConsumerGroup, request: JoinRequest) -> JoinResult:
        try:
            result = self._join(group, request)
        except KafkaError as exc:
            return JoinResult(exc.code, member_id=request.member_id)
        await self.consumer.save(group)
        return result

    def _join(self, group: ConsumerGroup, request: JoinRequest) -> JoinResult:
        member_id = request.member_id or str(uuid.uuid4())
        self.consumer.check_room(group, member_id)
        if not _supports(group, request.protocol_type, request.protocols):
            raise KafkaError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                             f"Member {member_id} uses protocols the group's classic members do not share.")
        if not request.member_id and request.instance_id is None \
                and request.version >= FIRST_VERSION_REQUIRING_MEMBER_ID:
            return JoinResult(ErrorCode.MEMBER_ID_REQUIRED, member_id=member_id)
        try:
            subscription = decode_subscription(request.protocols[0][1])
        except DecodeError:
            raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR,
                             "Malformed embedded consumer protocol in subscription deserialization.") from None
        member = self._member(group, member_id, request)
        updated = replace(
            member, instance_id=request.instance_id if request.instance_id is not None else member.instance_id,
            rack_id=subscription.rack_id if subscription.rack_id is not None else member.rack_id,
            rebalance_timeout_ms=request.rebalance_timeout_ms,
            subscribed_topic_names=tuple(sorted(set(subscription.topics))),
            client_id=request.client_id, client_host=request.client_host,
            classic=ClassicMetadata(request.session_timeout_ms, tuple(request.protocols)))
        owned = self._ids(subscription.owned_partitions)
        reconciled = self.consumer.update_member(group, member, updated, owned)
        self.timer.cancel(("consumer-join", group.group_id, reconciled.member_id))
        self.consumer.expect_heartbeat(group, reconciled.member_id)
        self._expect(group, reconciled, "consumer-sync", "it did not sync")
        return JoinResult(member_id=reconciled.member_id, generation=reconciled.epoch,
                          protocol_type=CONSUMER_PROTOCOL, protocol_name=request.protocols[0][0])

    def _member(self, group: ConsumerGroup, member_id: str, request: JoinRequest) -> ConsumerMember:
        """The joining member: known, new, or a static member taking its instance's place."""
        instance = request.instance_id
        existing = group.static_member(instance)
        if instance is None or existing is None:
            if instance is not None and request.member_id:
                raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance} is unknown.")
            return group.members.get(member_id) or ConsumerMember(member_id)
        if not request.member_id:
            self.consumer.cancel_timers(group, existing.member_id)
            return group.replace_static_member(existing, member_id)
        check_not_fenced(existing, member_id, instance)
        return existing

    def _ids(self, owned_partitions) -> Assignment:
        topics, owned = self.coordinator.topics, {}
        for part in owned_partitions:
            if part.topic in topics:
                owned[topics[part.topic].topic_id] = frozenset(part.partitions)
        return owned

    # SyncGroup and Heartbeat ----------------------------------------------------------

    async def sync(self, group: ConsumerGroup, member_id: str, instance_id: str | None, generation: int,
                   protocol_type: str | None, protocol_name: str | None) -> SyncResult:
        try:
            member = self._classic_member(group, member_id, instance_id, generation)
            if (protocol_type is not None and protocol_type != CONSUMER_PROTOCOL) or \
                    (protocol_name is not None and not member.classic.supports(protocol_name)):
                raise KafkaError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "protocol differs from the member's")
            if group.epoch > member.epoch and member.state != MemberState.UNREVOKED_PARTITIONS:
                self._rejoin(group, member)
        except KafkaError as exc:
            return SyncResult(exc.code)
        await self.coordinator.log.commit(group.group_id, None)  # its join is durable first
        self.timer.cancel(("consumer-sync", group.group_id, member.member_id))
        self.consumer.expect_heartbeat(group, member.member_id)
        version = version_of(member.classic.protocols[0][1])
        return SyncResult(protocol_type=protocol_type, protocol_name=protocol_name,
                          assignment=encode_assignment(named(group, member.assigned), version))

    def heartbeat(self, group: ConsumerGroup, member_id: str, instance_id: str | None, generation: int) -> ErrorCode:
        try:
            member = self._classic_member(group, member_id, instance_id, generation)
            self.consumer.expect_heartbeat(group, member.member_id)
            if member.epoch < group.epoch or member.state == MemberState.UNREVOKED_PARTITIONS or (
                    member.state == MemberState.UNRELEASED_PARTITIONS and not group.waits_on_unreleased(member)):
                self._rejoin(group, member)
        except KafkaError as exc:
            return exc.code
        return ErrorCode.NONE

    def _rejoin(self, group: ConsumerGroup, member: ConsumerMember) -> None:
        """The member must rejoin, within its rebalance timeout."""
        if not self.timer.is_scheduled(("consumer-join", group.group_id, member.member_id)):
            self._expect(group, member, "consumer-join", "it did not rejoin")
        raise KafkaError(ErrorCode.REBALANCE_IN_PROGRESS, f"Member {member.member_id} must rejoin.")

    def _expect(self, group: ConsumerGroup, member: ConsumerMember, kind: str, failure: str) -> None:
        group_id, member_id, timeout = group.group_id, member.member_id, member.rebalance_timeout_ms
        self.timer.schedule((kind, group_id, member_id), timeout,
                            lambda: self.consumer.fence_later(group_id, member_id, f"{failure} within {timeout}ms"))

    def _classic_member(self, group: ConsumerGroup, member_id: str, instance_id: str | None,
                        generation: int) -> ConsumerMember:
        member = _identified(group, member_id, instance_id)
        if member.classic is None:
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} does not use the classic protocol.")
        if generation != member.epoch:
            raise KafkaError(ErrorCode.ILLEGAL_GENERATION,
                             f"The received generation id {generation} does not match the expected member epoch "
                             f"{member.epoch}.")
        return member

    # LeaveGroup -------------------------------------------------------------------------

    async def leave(self, group: ConsumerGroup, leaving: list[tuple[str, str | None]]) -> list[ErrorCode]:
        errors, fenced = [], []
        for member_id, instance_id in leaving:
            try:
                member = _identified(group, member_id, instance_id)
                if member.classic is None:
                    raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, "the member does not use the classic protocol")
            except KafkaError as exc:
                errors.append(exc.code)
                continue
            fenced.append(member)
            errors.append(ErrorCode.NONE)
        if fenced:
            self.consumer.fence(group, "it left the group", *fenced)
            await self.consumer.save(group)
        return errors


def _identified(group: ConsumerGroup, member_id: str, instance_id: str | None) -> ConsumerMember:
    """The member a classic request names, as Kafka's validateConsumerGroupMember finds it."""
    if instance_id is None:
        return group.member(member_id)
    member = group.static_member(instance_id)
    if member is None:
        raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID,
                         f"Member with instance id {instance_id} is not a member of group {group.group_id}.")
    if member_id:  # an admin removes a static member by its instance id alone
        check_not_fenced(member, member_id, instance_id)
    return member


def _supports(group: ConsumerGroup, protocol_type: str, protocols: list[tuple[str, bytes]]) -> bool:
    """Kafka's supportsClassicProtocols: a protocol every classic member supports."""
    if protocol_type != CONSUMER_PROTOCOL or not protocols:
        return False
    classic = [m.classic for m in group.members.values() if m.classic is not None]
    return any(all(c.supports(name) for c in classic) for name, _ in protocols)
