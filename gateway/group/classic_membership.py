"""The classic protocol's rebalance: JoinGroup, SyncGroup, Heartbeat and LeaveGroup.

The rules and timeouts are Kafka's (GroupMetadataManager): a new group waits
group.initial.rebalance.delay.ms for more members, extended while members
keep coming, up to the rebalance timeout; a rebalance completes when every
member rejoined or the rebalance timeout passed; members that miss their
session timeout, or do not sync within the rebalance timeout, are removed.
"""

from __future__ import annotations

from dataclasses import dataclass

import structlog

from gateway.group.classic import ClassicGroup, ClassicMember, ClassicState, JoinResult, SyncResult
from gateway.group.consumer_group import ConsumerGroup
from gateway.group.timer import Reply
from gateway.kafka_error import KafkaError
from protocol.kafka.error_codes import ErrorCode

log = structlog.get_logger()

EMPTY, PREPARING, COMPLETING, STABLE, DEAD = (
    ClassicState.EMPTY, ClassicState.PREPARING_REBALANCE, ClassicState.COMPLETING_REBALANCE,
    ClassicState.STABLE, ClassicState.DEAD)
# Kafka's group.new.member.join.timeout: a new member's JoinGroup is parked at most this long.
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000
FIRST_VERSION_REQUIRING_MEMBER_ID = 4
FIRST_VERSION_SKIPPING_ASSIGNMENT = 9


@dataclass
class JoinRequest:
    group_id: str
    member_id: str
    instance_id: str | None
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    session_timeout_ms: int
    rebalance_timeout_ms: int
    client_id: str
    client_host: str
    version: int


class ClassicMembership:
    """The classic protocol's operations on the coordinator's groups."""

    def __init__(self, coordinator):
        self.coordinator = coordinator
        self.timer = coordinator.timer
        self.settings = coordinator.settings

    # JoinGroup ---------------------------------------------------------------

    async def join(self, request: JoinRequest) -> Reply:
        reply = Reply()
        settings = self.settings
        if not (settings.group_min_session_timeout_ms <= request.session_timeout_ms
                <= settings.group_max_session_timeout_ms):
            reply.send(JoinResult(ErrorCode.INVALID_SESSION_TIMEOUT, member_id=request.member_id))
            return reply
        mixed = self._consumer_group(request.group_id)
        if mixed is not None and not mixed.is_empty():
            reply.send(await self.coordinator.classic_in_consumer.join(mixed, request))
            return reply
        try:
            group = self.coordinator.classic_group(request.group_id, create=not request.member_id)
        except KafkaError as exc:
            reply.send(JoinResult(exc.code, member_id=request.member_id))
            return reply
        if group.is_(DEAD):
            # Deleted meanwhile: the member finds the coordinator again and retries.
            reply.send(JoinResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, member_id=request.member_id))
        elif not group.supports_protocols(request.protocol_type, request.protocols):
            reply.send(JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id=request.member_id))
        elif not request.member_id:
            await self._join_new_member(group, request, reply)
        elif request.member_id in group.pending_members:
            self._add_member(group, request, request.member_id, reply)
        else:
            self._join_existing_member(group, request, reply)
        return reply

    async def _join_new_member(self, group: ClassicGroup, request: JoinRequest, reply: Reply) -> None:
        new_id = group.new_member_id(request.client_id, request.instance_id)
        if request.instance_id is not None:
            existing = group.static_members.get(request.instance_id)
            if existing is None:
                self._add_member(group, request, new_id, reply)
            else:
                await self._replace_static_member(group, request, existing, new_id, reply)
        elif request.version >= FIRST_VERSION_REQUIRING_MEMBER_ID:
            # The member must come back with this id: a lost response then leaves no stray member.
            group.pending_members.add(new_id)
            self._expect_heartbeat(group, new_id, request.session_timeout_ms)
            reply.send(JoinResult(ErrorCode.MEMBER_ID_REQUIRED, member_id=new_id))
        else:
            self._add_member(group, request, new_id, reply)

    def _join_existing_member(self, group: ClassicGroup, request: JoinRequest, reply: Reply) -> None:
        member_id = request.member_id
        try:
            group.validate_member(member_id, request.instance_id)
        except KafkaError as exc:
            reply.send(JoinResult(exc.code, member_id=member_id))
            return
        member = group.members[member_id]
        if group.is_(PREPARING):
            self._update_member(group, member, request, reply)
            self._rebalance_or_complete_join(group, f"member {member_id} rejoins")
        elif group.is_(COMPLETING) and member.matches(request.protocols):
            # Probably a lost JoinGroup response: answer with the current generation again.
            members = group.member_list() if group.leader == member_id else []
            reply.send(group.join_result(member_id, members))
        elif group.is_(COMPLETING, STABLE):
            if group.is_(STABLE) and group.leader != member_id and member.matches(request.protocols):
                reply.send(group.join_result(member_id))
                return
            # The leader rejoining, or changed metadata, starts a new generation.
            self._update_member(group, member, request, reply)
            self._rebalance_or_complete_join(group, f"member {member_id} rejoins with new metadata or as leader")
        else:
            reply.send(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id=member_id))

    def _add_member(self, group: ClassicGroup, request: JoinRequest, member_id: str, reply: Reply) -> None:
        member = ClassicMember(
            member_id, request.instance_id, request.client_id, request.client_host,
            request.rebalance_timeout_ms, request.session_timeout_ms, request.protocol_type,
            request.protocols, is_new=True)
        if group.is_(PREPARING) and group.previous_state == EMPTY:
            group.new_member_added = True
        group.add(member, reply)
        self._expect_heartbeat(group, member_id, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self._rebalance_or_complete_join(group, f"member {member_id} joins")

    def _update_member(self, group: ClassicGroup, member: ClassicMember, request: JoinRequest,
                       reply: Reply) -> None:
        if member.join_reply is not None:
            # An earlier JoinGroup of this member is superseded: answer it so its connection moves on.
            member.join_reply.send(JoinResult(ErrorCode.REBALANCE_IN_PROGRESS, member_id=member.member_id))
        member.protocols = request.protocols
        member.rebalance_timeout_ms = request.rebalance_timeout_ms
        member.session_timeout_ms = request.session_timeout_ms
        member.join_reply = reply

    async def _replace_static_member(self, group: ClassicGroup, request: JoinRequest, old_id: str,
                                     new_id: str, reply: Reply) -> None:
        """KIP-345: a static member restarted; it takes its old place, without a rebalance if it can."""
        previous_leader = group.leader
        member = group.replace_static_member(request.instance_id, old_id, new_id)
        self.timer.cancel(("heartbeat", group.group_id, old_id))
        self._expect_heartbeat(group, new_id, member.session_timeout_ms)
        self._update_member(group, member, request, reply)
        log.info("static_member_replaced", group=group.group_id, instance=request.instance_id,
                 old=old_id, new=new_id, state=group.state.value, generation=group.generation)
        if group.is_(STABLE):
            if group.protocol_name != group.select_protocol():
                self._rebalance_or_complete_join(group, f"static member {new_id} changes the protocol")
                return
            await self.coordinator.log.write(group.snapshot())
            member.join_reply = None
            if request.version >= FIRST_VERSION_SKIPPING_ASSIGNMENT and group.leader == new_id:
                reply.send(group.join_result(new_id, group.member_list(), skip_assignment=True))
            else:
                result = group.join_result(new_id)
                result.leader = previous_leader or ""
                reply.send(result)
        elif group.is_(COMPLETING):
            # The leader may be assigning to the old member id: start over.
            self._prepare_rebalance(group, f"static member {new_id} replaced {old_id}")
        else:
            self._maybe_complete_join(group)

    # The join phase ------------------------------------------------------------

    def _rebalance_or_complete_join(self, group: ClassicGroup, reason: str) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group, reason)
        else:
            self._maybe_complete_join(group)

    def _maybe_complete_join(self, group: ClassicGroup) -> None:
        if group.is_(PREPARING) and group.has_all_members_joined() and group.previous_state != EMPTY:
            self._complete_join(group)

    def _prepare_rebalance(self, group: ClassicGroup, reason: str) -> None:
        if group.is_(COMPLETING):
            for member in group.members.values():
                member.assignment = b""
            self._propagate_assignment(group, ErrorCode.REBALANCE_IN_PROGRESS)
        group.pending_sync.clear()
        self.timer.cancel(("sync", group.group_id))
        initial = group.is_(EMPTY)
        if initial:
            delay = self.settings.group_initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms - delay, 0)
            self.timer.schedule(("join", group.group_id), delay,
                                lambda: self._initial_delay_over(group, delay, remaining))
        group.transition(PREPARING)
        log.info("group_rebalance_preparing", group=group.group_id, generation=group.generation, reason=reason)
        if not initial:
            if group.has_all_members_joined():
                self._complete_join(group)
            else:
                self.timer.schedule(("join", group.group_id), group.rebalance_timeout_ms,
                                    lambda: self._complete_join(group))

    def _initial_delay_over(self, group: ClassicGroup, delay: int, remaining: int) -> None:
        if group.new_member_added and remaining:
            # More members came during the delay: wait once more for stragglers.
            group.new_member_added = False
            next_delay = min(self.settings.group_initial_rebalance_delay_ms, remaining)
            next_remaining = max(remaining - delay, 0)
            self.timer.schedule(("join", group.group_id), next_delay,
                                lambda: self._initial_delay_over(group, next_delay, next_remaining))
        else:
            self._complete_join(group)

    def _complete_join(self, group: ClassicGroup) -> None:
        self.timer.cancel(("join", group.group_id))
        gone = [m.member_id for m in group.members.values() if m.join_reply is None and m.instance_id is None]
        for member_id in gone:
            group.remove(member_id)
            self.timer.cancel(("heartbeat", group.group_id, member_id))
        if group.is_(DEAD):
            return
        if not group.elect_joined_leader() and group.members:
            # Nobody rejoined: wait until session timeouts have removed the silent members.
            self.timer.schedule(("join", group.group_id), group.rebalance_timeout_ms,
                                lambda: self._complete_join(group))
            return
        group.init_next_generation()
        if group.is_(EMPTY):
            log.info("group_empty", group=group.group_id, generation=group.generation)
            self.coordinator.log.append(group.snapshot())
            return
        log.info("group_join_completed", group=group.group_id, generation=group.generation,
                 members=len(group.members), removed=gone, protocol=group.protocol_name)
        for member in group.members.values():
            members = group.member_list() if group.leader == member.member_id else []
            if member.join_reply is not None:
                member.join_reply.send(group.join_result(member.member_id, members))
                member.join_reply = None
            self._expect_heartbeat(group, member.member_id, member.session_timeout_ms)
            member.is_new = False
            group.pending_sync.add(member.member_id)
        generation = group.generation
        self.timer.schedule(("sync", group.group_id), group.rebalance_timeout_ms,
                            lambda: self._expire_pending_sync(group, generation))

    def _expire_pending_sync(self, group: ClassicGroup, generation: int) -> None:
        if generation != group.generation or not group.is_(COMPLETING, STABLE) or not group.pending_sync:
            return
        late = sorted(group.pending_sync)
        for member_id in late:
            group.remove(member_id)
            self.timer.cancel(("heartbeat", group.group_id, member_id))
        self._prepare_rebalance(group, f"members {late} did not sync in time")

    # Heartbeats and session timeouts ----------------------------------------------

    def _expect_heartbeat(self, group: ClassicGroup, member_id: str, timeout_ms: int) -> None:
        self.timer.schedule(("heartbeat", group.group_id, member_id), timeout_ms,
                            lambda: self._heartbeat_expired(group, member_id))

    def _heartbeat_expired(self, group: ClassicGroup, member_id: str) -> None:
        if group.is_(DEAD):
            return
        if member_id in group.pending_members:
            group.remove(member_id)
            if group.is_(PREPARING) and group.has_all_members_joined():
                self._complete_join(group)
            return
        member = group.members.get(member_id)
        if member is None or member.has_satisfied_heartbeat():
            return
        log.info("group_member_expired", group=group.group_id, member=member_id)
        group.remove(member_id)
        if group.is_(STABLE, COMPLETING):
            self._rebalance_or_complete_join(group, f"member {member_id} session expired")
        elif group.is_(PREPARING) and group.has_all_members_joined():
            self._complete_join(group)

    def heartbeat(self, group_id: str, member_id: str, instance_id: str | None, generation: int) -> ErrorCode:
        mixed = self._consumer_group(group_id)
        if mixed is not None:
            return self.coordinator.classic_in_consumer.heartbeat(mixed, member_id, instance_id, generation)
        try:
            group = self.coordinator.classic_group(group_id)
            self._validate(group, member_id, instance_id, generation)
        except KafkaError as exc:
            return exc.code
        if group.is_(EMPTY):
            return ErrorCode.UNKNOWN_MEMBER_ID
        member = group.members[member_id]
        self._expect_heartbeat(group, member_id, member.session_timeout_ms)
        return ErrorCode.REBALANCE_IN_PROGRESS if group.is_(PREPARING) else ErrorCode.NONE

    @staticmethod
    def _validate(group: ClassicGroup, member_id: str, instance_id: str | None, generation: int) -> None:
        if group.is_(DEAD):
            raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "group is being deleted")
        group.validate_member(member_id, instance_id)
        if generation != group.generation:
            raise KafkaError(ErrorCode.ILLEGAL_GENERATION, f"generation {generation} is not {group.generation}")

    # SyncGroup -------------------------------------------------------------------

    async def sync(self, group_id: str, member_id: str, instance_id: str | None, generation: int,
                   protocol_type: str | None, protocol_name: str | None,
                   assignments: dict[str, bytes]) -> Reply:
        reply = Reply()
        mixed = self._consumer_group(group_id)
        if mixed is not None:
            reply.send(await self.coordinator.classic_in_consumer.sync(
                mixed, member_id, instance_id, generation, protocol_type, protocol_name))
            return reply
        try:
            group = self.coordinator.classic_group(group_id)
            self._validate(group, member_id, instance_id, generation)
            if _inconsistent(protocol_type, group.protocol_type) or _inconsistent(protocol_name, group.protocol_name):
                raise KafkaError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "protocol differs from the group's")
        except KafkaError as exc:
            reply.send(SyncResult(exc.code))
            return reply
        if group.is_(EMPTY):
            reply.send(SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
        elif group.is_(PREPARING):
            reply.send(SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
        elif group.is_(STABLE):
            self._synced(group, member_id)
            reply.send(SyncResult(protocol_type=group.protocol_type, protocol_name=group.protocol_name,
                                  assignment=group.members[member_id].assignment))
        else:
            member = group.members[member_id]
            if member.sync_reply is not None:
                member.sync_reply.send(SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
            member.sync_reply = reply
            self._synced(group, member_id)
            if group.leader == member_id:
                await self._assign(group, generation, assignments)
        return reply

    async def _assign(self, group: ClassicGroup, generation: int, assignments: dict[str, bytes]) -> None:
        """The leader's assignment: durable first, then every member gets its part."""
        full = {member_id: assignments.get(member_id, b"") for member_id in group.members}
        await self.coordinator.log.write(group.snapshot(full))
        if not group.is_(COMPLETING) or group.generation != generation:
            return  # another rebalance started while the assignment was written
        for member_id, assignment in full.items():
            group.members[member_id].assignment = assignment
        self._propagate_assignment(group, ErrorCode.NONE)
        group.transition(STABLE)
        log.info("group_stable", group=group.group_id, generation=group.generation, members=len(group.members))

    def _synced(self, group: ClassicGroup, member_id: str) -> None:
        group.pending_sync.discard(member_id)
        if not group.pending_sync:
            self.timer.cancel(("sync", group.group_id))

    def _propagate_assignment(self, group: ClassicGroup, error: ErrorCode) -> None:
        ok = error == ErrorCode.NONE
        for member in group.members.values():
            if member.sync_reply is None:
                continue
            member.sync_reply.send(SyncResult(
                error, group.protocol_type if ok else None, group.protocol_name if ok else None,
                member.assignment))
            member.sync_reply = None
            # Sessions restart once the member knows its assignment.
            self._expect_heartbeat(group, member.member_id, member.session_timeout_ms)

    # LeaveGroup --------------------------------------------------------------------

    async def leave(self, group_id: str, leaving: list[tuple[str, str | None]]) -> list[ErrorCode]:
        """Each leaving (member id, instance id)'s error; KafkaError for the whole request."""
        mixed = self._consumer_group(group_id)
        if mixed is not None:
            return await self.coordinator.classic_in_consumer.leave(mixed, leaving)
        group = self.coordinator.classic_group(group_id)
        if group.is_(DEAD):
            raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "group is being deleted")
        errors = [self._leave_one(group, member_id, instance_id) for member_id, instance_id in leaving]
        if ErrorCode.NONE in errors:
            if group.is_(STABLE, COMPLETING):
                self._rebalance_or_complete_join(group, "members left")
            elif group.is_(PREPARING):
                self._maybe_complete_join(group)
        return errors

    def _leave_one(self, group: ClassicGroup, member_id: str, instance_id: str | None) -> ErrorCode:
        if not member_id:
            # An admin removes a static member by its instance id alone.
            known = group.static_members.get(instance_id) if instance_id is not None else None
            if known is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            member_id = known
        elif member_id not in group.pending_members:
            try:
                group.validate_member(member_id, instance_id)
            except KafkaError as exc:
                return exc.code
        self.timer.cancel(("heartbeat", group.group_id, member_id))
        group.remove(member_id)
        log.info("group_member_left", group=group.group_id, member=member_id)
        return ErrorCode.NONE

    def restored(self, group: ClassicGroup) -> None:
        """A group read back at start-up: its members must heartbeat again."""
        for member in group.members.values():
            self._expect_heartbeat(group, member.member_id, member.session_timeout_ms)

    # Migration ---------------------------------------------------------------------------

    def _consumer_group(self, group_id: str) -> ConsumerGroup | None:
        """The consumer group of this id, whose classic members Kafka serves in it."""
        group = self.coordinator.groups.get(group_id)
        return group if isinstance(group, ConsumerGroup) else None

    def retire(self, group: ClassicGroup) -> None:
        """A classic group converted into a consumer group: parked requests learn of the new rebalance."""
        for member in group.members.values():
            if member.join_reply is not None:
                member.join_reply.send(JoinResult(ErrorCode.REBALANCE_IN_PROGRESS, member_id=member.member_id))
            if member.sync_reply is not None:
                member.sync_reply.send(SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
        for member_id in (*group.members, *group.pending_members):
            self.timer.cancel(("heartbeat", group.group_id, member_id))
        self.timer.cancel(("join", group.group_id))
        self.timer.cancel(("sync", group.group_id))
        group.mark_dead()

    def adopt(self, group: ClassicGroup) -> None:
        """A consumer group converted back: its members must heartbeat, and rejoin in a rebalance."""
        self.restored(group)
        self._prepare_rebalance(group, f"group {group.group_id} converted from a consumer group")


def _inconsistent(requested: str | None, current: str | None) -> bool:
    return requested is not None and current is not None and requested != current
