"""A classic group's state: members, generation, protocol and leader (Kafka's ClassicGroup)."""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import dataclass, field
from enum import Enum

from gateway.group.timer import Reply
from gateway.kafka_error import KafkaError
from gateway.wall_clock import now_ms
from protocol.kafka.consumer_protocol import subscribed_topics
from protocol.kafka.error_codes import ErrorCode


class ClassicState(Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


# The states each state may be entered from, as Kafka checks them.
VALID_PREVIOUS = {
    ClassicState.EMPTY: {ClassicState.PREPARING_REBALANCE},
    ClassicState.PREPARING_REBALANCE: {ClassicState.STABLE, ClassicState.COMPLETING_REBALANCE,
                                       ClassicState.EMPTY},
    ClassicState.COMPLETING_REBALANCE: {ClassicState.PREPARING_REBALANCE},
    ClassicState.STABLE: {ClassicState.COMPLETING_REBALANCE},
    ClassicState.DEAD: set(ClassicState),
}


@dataclass
class JoinResult:
    error: ErrorCode = ErrorCode.NONE
    member_id: str = ""
    generation: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    skip_assignment: bool = False
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)


@dataclass
class SyncResult:
    error: ErrorCode = ErrorCode.NONE
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass
class ClassicMember:
    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    join_reply: Reply | None = None
    sync_reply: Reply | None = None
    is_new: bool = False

    def metadata(self, protocol: str) -> bytes:
        return next((meta for name, meta in self.protocols if name == protocol), b"")

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        return self.protocols == protocols

    def has_satisfied_heartbeat(self) -> bool:
        # A member waiting in a rebalance needs no heartbeat; a new one that never
        # completed its join does not count as alive.
        return not self.is_new and (self.join_reply is not None or self.sync_reply is not None)


class ClassicGroup:
    group_type = "classic"

    def __init__(self, group_id: str, state: ClassicState = ClassicState.EMPTY):
        self.group_id = group_id
        self.state = state
        self.previous_state: ClassicState | None = None
        self.state_timestamp_ms = now_ms()
        self.generation = 0
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader: str | None = None
        self.members: dict[str, ClassicMember] = {}
        self.static_members: dict[str, str] = {}  # group.instance.id -> member id
        self.pending_members: set[str] = set()  # told MEMBER_ID_REQUIRED, not joined yet
        self.pending_sync: set[str] = set()
        self.new_member_added = False

    def is_(self, *states: ClassicState) -> bool:
        return self.state in states

    def transition(self, state: ClassicState) -> None:
        if self.state not in VALID_PREVIOUS[state]:
            raise RuntimeError(f"group {self.group_id}: {self.state.value} -> {state.value} is not allowed")
        self.previous_state, self.state = self.state, state
        self.state_timestamp_ms = now_ms()

    def is_empty(self) -> bool:
        return self.is_(ClassicState.EMPTY, ClassicState.DEAD)

    def mark_dead(self) -> None:
        self.transition(ClassicState.DEAD)

    def can_rebalance(self) -> bool:
        return self.state in VALID_PREVIOUS[ClassicState.PREPARING_REBALANCE]

    @property
    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def new_member_id(self, client_id: str, instance_id: str | None) -> str:
        return f"{instance_id or client_id}-{uuid.uuid4()}"

    def add(self, member: ClassicMember, reply: Reply | None = None) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id
        self.pending_members.discard(member.member_id)
        if self.leader is None:
            self.leader = member.member_id
        member.join_reply = reply

    def remove(self, member_id: str) -> None:
        """Drop a member; requests it has parked learn that it is unknown now."""
        self.pending_members.discard(member_id)
        member = self.members.pop(member_id, None)
        if member is None:
            return
        if member.join_reply is not None:
            member.join_reply.send(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID))
        if member.sync_reply is not None:
            member.sync_reply.send(SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
        if member.instance_id is not None:
            self.static_members.pop(member.instance_id, None)
        self.pending_sync.discard(member_id)
        if self.leader == member_id:
            self.leader = next(iter(self.members), None)

    def answer_parked(self, code: ErrorCode) -> None:
        """Answer every parked join and sync with `code` (the coordinator is unloading the group)."""
        for member in self.members.values():
            for reply, result in ((member.join_reply, JoinResult(code)), (member.sync_reply, SyncResult(code))):
                if reply is not None:
                    reply.send(result)
            member.join_reply = member.sync_reply = None

    def replace_static_member(self, instance_id: str, old_id: str, new_id: str) -> ClassicMember:
        member = self.members.pop(old_id)
        # The replaced member's parked requests learn that it was fenced.
        if member.join_reply is not None:
            member.join_reply.send(JoinResult(ErrorCode.FENCED_INSTANCE_ID, member_id=old_id))
            member.join_reply = None
        if member.sync_reply is not None:
            member.sync_reply.send(SyncResult(ErrorCode.FENCED_INSTANCE_ID))
            member.sync_reply = None
        member.member_id = new_id
        self.members[new_id] = member
        if self.leader == old_id:
            self.leader = new_id
        self.static_members[instance_id] = new_id
        if old_id in self.pending_sync:
            self.pending_sync.discard(old_id)
            self.pending_sync.add(new_id)
        return member

    def validate_member(self, member_id: str, instance_id: str | None) -> None:
        if instance_id is not None:
            known = self.static_members.get(instance_id)
            if known is None:
                raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"unknown instance {instance_id}")
            if known != member_id:
                raise KafkaError(ErrorCode.FENCED_INSTANCE_ID, f"instance {instance_id} is now {known}")
        elif member_id not in self.members:
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"unknown member {member_id}")

    def awaiting_join(self) -> list[ClassicMember]:
        return [m for m in self.members.values() if m.join_reply is not None]

    def has_all_members_joined(self) -> bool:
        return len(self.awaiting_join()) == len(self.members) and not self.pending_members

    def supports_protocols(self, protocol_type: str, protocols: list[tuple[str, bytes]]) -> bool:
        if self.is_(ClassicState.EMPTY):
            return bool(protocol_type) and bool(protocols)
        names = {name for name, _ in protocols}
        return protocol_type == self.protocol_type and bool(names & self.candidate_protocols())

    def candidate_protocols(self) -> set[str]:
        """The protocols every member supports."""
        sets = [{name for name, _ in m.protocols} for m in self.members.values()]
        return set.intersection(*sets) if sets else set()

    def select_protocol(self) -> str:
        """Each member votes for its most preferred candidate; the most votes win."""
        candidates = self.candidate_protocols()
        votes = Counter(next(name for name, _ in m.protocols if name in candidates)
                        for m in self.members.values())
        return votes.most_common(1)[0][0]

    def elect_joined_leader(self) -> bool:
        """Keep a leader that rejoined, or pick one that did; False if none joined."""
        if self.leader is None:
            return False
        if self.members[self.leader].join_reply is not None:
            return True
        joined = self.awaiting_join()
        if joined:
            self.leader = joined[0].member_id
            return True
        return False

    def init_next_generation(self) -> None:
        self.generation += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.transition(ClassicState.COMPLETING_REBALANCE)
        else:
            self.protocol_name = None
            self.transition(ClassicState.EMPTY)
        self.pending_sync.clear()

    def member_list(self) -> list[tuple[str, str | None, bytes]]:
        """What the leader gets to compute the assignment: every member's metadata."""
        return [(m.member_id, m.instance_id, m.metadata(self.protocol_name)) for m in self.members.values()]

    def join_result(self, member_id: str, members=None, skip_assignment=False) -> JoinResult:
        return JoinResult(member_id=member_id, generation=self.generation, protocol_type=self.protocol_type,
                          protocol_name=self.protocol_name, leader=self.leader or "",
                          skip_assignment=skip_assignment, members=members or [])

    def subscribed_topics(self) -> set[str] | None:
        """Topics the consumer members subscribe to; None if not a consumer group."""
        if self.protocol_type != "consumer" or self.protocol_name is None:
            return None
        topics: set[str] = set()
        for member in self.members.values():
            found = subscribed_topics(member.metadata(self.protocol_name))
            if found is None:
                return None
            topics |= found
        return topics

    def snapshot(self, assignments: dict[str, bytes] | None = None) -> dict:
        """The durable part of the group, as Kafka's GroupMetadata record holds it."""
        assignments = assignments or {m.member_id: m.assignment for m in self.members.values()}
        return {
            "type": "classic_group", "group": self.group_id, "generation": self.generation,
            "protocol_type": self.protocol_type, "protocol": self.protocol_name, "leader": self.leader,
            "state_timestamp": self.state_timestamp_ms,
            "members": [
                {"id": m.member_id, "instance": m.instance_id, "client_id": m.client_id,
                 "client_host": m.client_host, "rebalance_timeout": m.rebalance_timeout_ms,
                 "session_timeout": m.session_timeout_ms,
                 "subscription": m.metadata(self.protocol_name).hex(), "assignment": assignments.get(m.member_id, b"").hex()}
                for m in self.members.values()
            ],
        }

    @classmethod
    def restored(cls, entry: dict) -> ClassicGroup:
        group = cls(entry["group"], ClassicState.STABLE if entry["members"] else ClassicState.EMPTY)
        group.generation = entry["generation"]
        group.protocol_type = entry["protocol_type"]
        group.protocol_name = entry["protocol"]
        group.state_timestamp_ms = entry["state_timestamp"]
        for m in entry["members"]:
            group.add(ClassicMember(
                m["id"], m["instance"], m["client_id"], m["client_host"], m["rebalance_timeout"],
                m["session_timeout"], group.protocol_type, [(group.protocol_name, bytes.fromhex(m["subscription"]))],
                assignment=bytes.fromhex(m["assignment"])))
        group.leader = entry["leader"] if entry["leader"] in group.members else group.leader
        return group
