"""ConsumerGroupHeartbeat: joining, staying in and leaving KIP-848 consumer groups.

Kafka's rules (GroupMetadataManager): a member joins with epoch 0, heartbeats
with the epoch it was given, leaves with -1 (a static member that will come
back leaves with -2 and keeps its place until its session expires). Each
heartbeat updates the member, bumps the group epoch if subscriptions or the
subscribed topics changed, recomputes the target assignment for a new group
epoch and moves the member one step towards its target. Members that miss
their session timeout (the group's consumer.session.timeout.ms, else
group.consumer.session.timeout.ms), or do not revoke partitions within their
rebalance timeout, are fenced. Changes are journaled before they are answered.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from functools import partial

import structlog

from gateway.group.assignors import ASSIGNORS, DEFAULT_ASSIGNOR, MemberSpec
from gateway.group.consumer_group import ConsumerGroup, TopicsMetadata, subscribed_names
from gateway.group.consumer_requests import (
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    HeartbeatRequest,
    check_epoch,
    check_not_fenced,
    updated_member,
    validate,
)
from gateway.group.group_configs import HEARTBEAT_INTERVAL, SESSION_TIMEOUT
from gateway.group.migration import check_upgradable, downgraded, downgrades, upgraded
from gateway.group.reconcile import Assignment, ConsumerMember, MemberState, Target, reconcile
from gateway.kafka_error import KafkaError
from protocol.kafka.error_codes import ErrorCode

log = structlog.get_logger()


@dataclass
class HeartbeatResult:
    error: ErrorCode = ErrorCode.NONE
    message: str | None = None
    member_id: str | None = None
    epoch: int = 0
    interval_ms: int = 0
    assignment: Assignment | None = None


class ConsumerMembership:
    """The consumer protocol's operations on the coordinator's groups."""

    def __init__(self, coordinator):
        self.coordinator = coordinator
        self.timer = coordinator.timer
        self.settings = coordinator.settings

    async def heartbeat(self, request: HeartbeatRequest) -> HeartbeatResult:
        try:
            validate(request)
            if request.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
                group, result = self._leave(request)
            else:
                group, result = self._heartbeat(request)
        except KafkaError as exc:
            return HeartbeatResult(exc.code, exc.message)
        await self.save(group)
        return result

    async def save(self, group: ConsumerGroup) -> None:
        """Journal the group's changes, and return once they and earlier ones are durable."""
        await self.coordinator.log.commit(group.group_id, self._changes(group))

    def _changes(self, group: ConsumerGroup) -> dict | None:
        """The entry to journal: the group, or the classic group it was converted back into."""
        current = self.coordinator.groups.get(group.group_id, group)
        entry = current.snapshot() if current is not group or group.changed else None
        group.changed = False
        return entry

    # Heartbeats --------------------------------------------------------------------

    def _heartbeat(self, request: HeartbeatRequest) -> tuple[ConsumerGroup, HeartbeatResult]:
        joining = request.member_epoch == 0
        group = self._group(request.group_id, create=joining)
        member_id = request.member_id or str(uuid.uuid4())
        self.check_room(group, member_id)
        if request.instance_id is None:
            member = self._dynamic_member(group, member_id, request)
        else:
            member = self._static_member(group, member_id, request)
        self._register(group)
        reconciled = self.update_member(group, member, updated_member(member, request), request.owned)
        self.expect_heartbeat(group, member_id)
        changed_assignment = reconciled.assigned != member.assigned
        return group, HeartbeatResult(
            member_id=member_id, epoch=reconciled.epoch,
            interval_ms=self.coordinator.config_value(group.group_id, HEARTBEAT_INTERVAL),
            assignment=reconciled.assigned if joining or request.is_full() or changed_assignment else None)

    def check_room(self, group: ConsumerGroup, member_id: str) -> None:
        max_size = self.settings.group_consumer_max_size
        if len(group.members) >= max_size and member_id not in group.members:
            raise KafkaError(ErrorCode.GROUP_MAX_SIZE_REACHED,
                             f"The consumer group has reached its maximum capacity of {max_size} members.")

    def update_member(self, group: ConsumerGroup, member: ConsumerMember, updated: ConsumerMember,
                      owned: Assignment | None) -> ConsumerMember:
        """Kafka's steps for a member's request: update the member (a new group epoch if subscriptions or
        the subscribed topics changed), compute the target of a new epoch, reconcile the member towards it."""
        subscription_changed = (updated.subscribed_topic_names != member.subscribed_topic_names
                                or updated.subscribed_topic_regex != member.subscribed_topic_regex)
        group.put_member(updated)
        bump = group.epoch == 0 or subscription_changed
        bump |= self.refresh_topics(group)
        if bump:
            group.bump_epoch()
            log.info("consumer_group_epoch", group=group.group_id, epoch=group.epoch, member=member.member_id)
        if group.epoch > group.assignment_epoch:
            self._assign(group)
        return self._reconcile(group, updated, owned, subscription_changed)

    def _group(self, group_id: str, create: bool) -> ConsumerGroup:
        """The consumer group, a new one, or one converted from a classic group (registered once the join is valid)."""
        group = self.coordinator.groups.get(group_id)
        if isinstance(group, ConsumerGroup):
            return group
        if group is None and not create:
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
        if group is not None and not create:
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
        if group is None or group.is_empty():
            return ConsumerGroup(group_id)
        check_upgradable(group, self.settings.group_consumer_max_size, self.settings.group_consumer_migration_policy)
        return upgraded(group, self.coordinator.topics)

    def _register(self, group: ConsumerGroup) -> None:
        """A new or converted group exists from now on; a converted classic group's members stay."""
        replaced = self.coordinator.groups.get(group.group_id)
        if replaced is group:
            return
        self.coordinator.groups[group.group_id] = group
        if replaced is not None:
            self.coordinator.classic.retire(replaced)
            for member in group.members.values():
                self.expect_heartbeat(group, member.member_id)
            log.info("classic_group_converted", group=group.group_id, members=len(group.members),
                     epoch=group.epoch)

    def _dynamic_member(self, group: ConsumerGroup, member_id: str, request: HeartbeatRequest) -> ConsumerMember:
        if member_id in group.members or request.member_epoch != 0:
            member = group.member(member_id)
        else:
            member = ConsumerMember(member_id)
            log.info("consumer_member_joins", group=group.group_id, member=member_id)
        check_epoch(member, request)
        return member

    def _static_member(self, group: ConsumerGroup, member_id: str, request: HeartbeatRequest) -> ConsumerMember:
        instance = request.instance_id
        existing = group.static_member(instance)
        if request.member_epoch == 0:
            if existing is None:
                member = group.members.get(member_id, ConsumerMember(member_id))
                log.info("consumer_static_member_joins", group=group.group_id, member=member_id, instance=instance)
                return member
            if existing.epoch != STATIC_LEAVE_EPOCH:
                raise KafkaError(ErrorCode.UNRELEASED_INSTANCE_ID,
                                 f"Static member {member_id} with instance id {instance} cannot join the group "
                                 f"because the instance id is owned by {existing.member_id} member.")
            self.cancel_timers(group, existing.member_id)
            log.info("consumer_static_member_replaced", group=group.group_id, instance=instance,
                     old=existing.member_id, new=member_id)
            return group.replace_static_member(existing, member_id)
        if existing is None:
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance} is unknown.")
        check_not_fenced(existing, member_id, instance)
        check_epoch(existing, request)
        return existing

    def refresh_topics(self, group: ConsumerGroup) -> bool:
        """Recompute the subscribed topics' metadata; whether it changed (then the group epoch moves)."""
        topics = self.coordinator.topics
        names: set[str] = set()
        for member in group.members.values():
            names |= subscribed_names(member, topics)
        metadata: TopicsMetadata = {topics[n].topic_id: (n, len(topics[n].partitions)) for n in names if n in topics}
        if metadata == group.topics:
            return False
        group.topics = metadata
        group.changed = True
        return True

    def _assign(self, group: ConsumerGroup) -> None:
        name = group.preferred_assignor() or DEFAULT_ASSIGNOR
        specs = [MemberSpec(m.member_id, m.instance_id, group.subscribed_ids(m), group.target.get(m.member_id, {}))
                 for m in group.members.values()]
        computed = ASSIGNORS[name](specs, {t: count for t, (_, count) in group.topics.items()})
        group.target = {member_id: {t: frozenset(ps) for t, ps in assignment.items()}
                        for member_id, assignment in computed.items()}
        group.assignment_epoch = group.epoch
        group.changed = True
        log.info("consumer_group_assigned", group=group.group_id, epoch=group.epoch, assignor=name,
                 members=len(specs))

    def _reconcile(self, group: ConsumerGroup, member: ConsumerMember, owned: Assignment | None,
                   subscription_changed: bool) -> ConsumerMember:
        if member.is_reconciled_to(group.assignment_epoch) and not subscription_changed:
            return member
        target = Target(group.assignment_epoch, group.target.get(member.member_id, {}),
                        group.subscribed_ids(member), group.owned_by_other(member.member_id))
        reconciled = reconcile(member, target, owned, subscription_changed)
        if reconciled == member:
            return member
        group.put_member(reconciled)
        log.info("consumer_member_reconciled", group=group.group_id, member=member.member_id,
                 epoch=reconciled.epoch, state=reconciled.state.value)
        key = ("consumer-rebalance", group.group_id, member.member_id)
        if reconciled.state == MemberState.UNREVOKED_PARTITIONS:
            epoch, timeout = reconciled.epoch, reconciled.rebalance_timeout_ms
            self.timer.schedule(key, timeout, lambda: self._revocation_expired(group.group_id, member.member_id,
                                                                                epoch, timeout))
        else:
            self.timer.cancel(key)
        return reconciled

    # Leaving and fencing ---------------------------------------------------------------

    def _leave(self, request: HeartbeatRequest) -> tuple[ConsumerGroup, HeartbeatResult]:
        group = self.consumer_group(request.group_id)
        member_id, instance = request.member_id, request.instance_id
        if instance is None:
            member = group.member(member_id)
        else:
            member = group.static_member(instance)
            if member is None:
                raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance} is unknown.")
            check_not_fenced(member, member_id, instance)
            if request.member_epoch == STATIC_LEAVE_EPOCH:
                # It keeps its partitions, unowned by others, until it is back or its session expires.
                group.put_member(replace(member, epoch=STATIC_LEAVE_EPOCH, pending_revocation={}))
                log.info("consumer_static_member_left_temporarily", group=group.group_id, member=member_id)
                return group, HeartbeatResult(member_id=member_id, epoch=STATIC_LEAVE_EPOCH)
        self.fence(group, "it left the group", member)
        return group, HeartbeatResult(member_id=member_id, epoch=request.member_epoch)

    def fence(self, group: ConsumerGroup, reason: str, *members: ConsumerMember) -> None:
        """Remove members; if only classic ones remain, the group becomes a classic group again (Kafka's downgrade)."""
        for member in members:
            group.remove_member(member.member_id)
            self.cancel_timers(group, member.member_id)
            log.info("consumer_member_fenced", group=group.group_id, member=member.member_id, reason=reason)
        if group.has_only_classic_members() and downgrades(self.settings.group_consumer_migration_policy):
            self._downgrade(group)
            return
        self.refresh_topics(group)
        group.bump_epoch()
        log.info("consumer_group_epoch", group=group.group_id, epoch=group.epoch)

    def _downgrade(self, group: ConsumerGroup) -> None:
        for member_id in group.members:
            self.cancel_timers(group, member_id)
        group.mark_dead()
        classic = downgraded(group)
        self.coordinator.groups[group.group_id] = classic
        log.info("consumer_group_converted", group=group.group_id, members=len(classic.members),
                 generation=classic.generation)
        self.coordinator.classic.adopt(classic)

    def consumer_group(self, group_id: str) -> ConsumerGroup:
        group = self.coordinator.groups.get(group_id)
        if group is None:
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
        if not isinstance(group, ConsumerGroup):
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
        return group

    # Timeouts -------------------------------------------------------------------------------

    def expect_heartbeat(self, group: ConsumerGroup, member_id: str) -> None:
        group_id, classic = group.group_id, group.members[member_id].classic
        timeout_ms = classic.session_timeout_ms if classic else self.coordinator.config_value(group_id, SESSION_TIMEOUT)
        self.timer.schedule(("consumer-session", group_id, member_id), timeout_ms,
                            lambda: self.fence_later(group_id, member_id, "its session expired"))

    def _revocation_expired(self, group_id: str, member_id: str, epoch: int, timeout_ms: int) -> None:
        group = self.coordinator.groups.get(group_id)
        member = group.members.get(member_id) if isinstance(group, ConsumerGroup) else None
        if member is not None and member.epoch == epoch:
            self.fence_later(group_id, member_id,
                              f"it failed to transition from epoch {epoch} within {timeout_ms}ms")

    def fence_later(self, group_id: str, member_id: str, reason: str) -> None:
        """A timeout's fencing, journaled without anyone waiting for it."""
        group = self.coordinator.groups.get(group_id)
        member = group.members.get(member_id) if isinstance(group, ConsumerGroup) else None
        if member is None:
            return
        self.fence(group, reason, member)
        entry = self._changes(group)
        if entry is not None:
            self.coordinator.log.append(entry)

    def cancel_timers(self, group: ConsumerGroup, member_id: str) -> None:
        for kind in ("consumer-session", "consumer-rebalance", "consumer-join", "consumer-sync"):
            self.timer.cancel((kind, group.group_id, member_id))

    def restored(self, group: ConsumerGroup) -> None:
        """A group read back at start-up: its members must heartbeat again (Kafka keeps them meanwhile)."""
        for member in group.members.values():
            self.expect_heartbeat(group, member.member_id)
            if member.state == MemberState.UNREVOKED_PARTITIONS:
                timeout = member.rebalance_timeout_ms
                self.timer.schedule(("consumer-rebalance", group.group_id, member.member_id), timeout,
                                    partial(self._revocation_expired, group.group_id, member.member_id,
                                            member.epoch, timeout))
