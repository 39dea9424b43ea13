"""A KIP-848 consumer group's state: epochs, members, target assignment (Kafka's ConsumerGroup).

The group epoch moves when the members or what they subscribe to change;
the target assignment is recomputed for a newer group epoch (its epoch is
the assignment epoch); each member reconciles towards its target on its own
heartbeats, and its member epoch reaches the assignment epoch once it has it.
"""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import replace
from enum import Enum

from gateway.group.reconcile import Assignment, ClassicMetadata, ConsumerMember, MemberState
from gateway.group.topic_regex import matches
from gateway.kafka_error import KafkaError
from protocol.kafka.error_codes import ErrorCode

# topic id -> (name, partition count): the topics the group subscribes to (Kafka's subscription metadata).
TopicsMetadata = dict[uuid.UUID, tuple[str, int]]


class ConsumerGroupState(Enum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


class ConsumerGroup:
    group_type = "consumer"
    protocol_type = "consumer"

    def __init__(self, group_id: str):
        self.group_id = group_id
        self.epoch = 0
        self.assignment_epoch = 0
        self.members: dict[str, ConsumerMember] = {}
        self.static_members: dict[str, str] = {}  # instance id -> member id
        self.target: dict[str, Assignment] = {}
        self.topics: TopicsMetadata = {}
        self.dead = False
        self.changed = False  # since the last snapshot was taken
        self._owners: dict[tuple[uuid.UUID, int], str] = {}  # partitions assigned or being revoked

    @property
    def state(self) -> ConsumerGroupState:
        if self.dead:
            return ConsumerGroupState.DEAD
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        if any(not m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    def is_empty(self) -> bool:
        return not self.members

    def mark_dead(self) -> None:
        self.dead = True

    def bump_epoch(self) -> None:
        self.epoch += 1
        self.changed = True

    def member(self, member_id: str | None) -> ConsumerMember:
        """The member; UNKNOWN_MEMBER_ID, as Kafka answers, if there is none."""
        member = self.members.get(member_id)
        if member is None:
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID,
                             f"Member {member_id} is not a member of group {self.group_id}.")
        return member

    def static_member(self, instance_id: str | None) -> ConsumerMember | None:
        member_id = self.static_members.get(instance_id) if instance_id is not None else None
        return self.members.get(member_id) if member_id is not None else None

    def put_member(self, member: ConsumerMember) -> None:
        old = self.members.get(member.member_id)
        if old == member:
            return
        self._release(old)
        self.members[member.member_id] = member
        for topic, numbers in (*member.assigned.items(), *member.pending_revocation.items()):
            for number in numbers:
                self._owners[topic, number] = member.member_id
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id
        self.changed = True

    def remove_member(self, member_id: str) -> ConsumerMember | None:
        member = self.members.pop(member_id, None)
        self._release(member)
        self.target.pop(member_id, None)
        if member is not None and member.instance_id is not None:
            self.static_members.pop(member.instance_id, None)
        self.changed = True
        return member

    def replace_static_member(self, old: ConsumerMember, new_id: str) -> ConsumerMember:
        """KIP-345: a restarted static member takes the place, assignment and target of the old one."""
        target = self.target.get(old.member_id, {})
        self.remove_member(old.member_id)
        member = replace(old, member_id=new_id, epoch=0, previous_epoch=0)
        self.put_member(member)
        self.target[new_id] = target
        return member

    def _release(self, member: ConsumerMember | None) -> None:
        if member is None:
            return
        for topic, numbers in (*member.assigned.items(), *member.pending_revocation.items()):
            for number in numbers:
                if self._owners.get((topic, number)) == member.member_id:
                    del self._owners[topic, number]

    def owned_by_other(self, member_id: str):
        return lambda topic, number: self._owners.get((topic, number), member_id) != member_id

    def waits_on_unreleased(self, member: ConsumerMember) -> bool:
        """Whether others still own partitions of the member's target (Kafka's waitingOnUnreleasedPartition)."""
        if member.state != MemberState.UNRELEASED_PARTITIONS:
            return False
        owned_by_other = self.owned_by_other(member.member_id)
        return any(owned_by_other(topic, number)
                   for topic, numbers in self.target.get(member.member_id, {}).items()
                   for number in numbers - member.assigned.get(topic, frozenset()))

    def has_only_classic_members(self) -> bool:
        """Members left, every one speaking the classic protocol: Kafka converts such a group back."""
        return bool(self.members) and all(m.classic is not None for m in self.members.values())

    def subscribed_ids(self, member: ConsumerMember) -> frozenset:
        """The ids of the existing topics a member subscribes to, from the group's metadata."""
        names, regex = set(member.subscribed_topic_names), member.subscribed_topic_regex
        return frozenset(topic_id for topic_id, (name, _) in self.topics.items()
                         if name in names or (regex and matches(regex, name)))

    def subscribed_topics(self) -> set[str]:
        """Every topic name the group subscribes to (offsets of these neither expire nor are deleted)."""
        names = {name for name, _ in self.topics.values()}
        for member in self.members.values():
            names.update(member.subscribed_topic_names)
        return names

    def preferred_assignor(self) -> str | None:
        """The server assignor most members ask for, if any does."""
        votes = Counter(m.server_assignor for m in self.members.values() if m.server_assignor)
        return max(votes, key=lambda name: (votes[name], name)) if votes else None

    # Durability ------------------------------------------------------------------

    def snapshot(self) -> dict:
        """The whole group as one journal entry (Kafka writes the same facts as several records)."""
        return {
            "type": "consumer_group", "group": self.group_id, "epoch": self.epoch,
            "assignment_epoch": self.assignment_epoch,
            "topics": {str(t): list(meta) for t, meta in self.topics.items()},
            "members": [_member_entry(m, self.target.get(m.member_id, {})) for m in self.members.values()],
        }

    @classmethod
    def restored(cls, entry: dict) -> ConsumerGroup:
        group = cls(entry["group"])
        group.epoch, group.assignment_epoch = entry["epoch"], entry["assignment_epoch"]
        group.topics = {uuid.UUID(t): (name, count) for t, (name, count) in entry["topics"].items()}
        for m in entry["members"]:
            group.put_member(ConsumerMember(
                m["id"], m["instance"], m["rack"], m["rebalance_timeout"], m["client_id"], m["client_host"],
                tuple(m["names"]), m["regex"], m["assignor"], MemberState(m["state"]), m["epoch"],
                m["previous_epoch"], _assignment(m["assigned"]), _assignment(m["pending"]),
                _classic_metadata(m.get("classic"))))
            group.target[m["id"]] = _assignment(m["target"])
        group.changed = False
        return group


def subscribed_names(member: ConsumerMember, topic_names) -> set[str]:
    """The topic names a member subscribes to: its names and its regex's matches."""
    names = set(member.subscribed_topic_names)
    if member.subscribed_topic_regex:
        names |= {name for name in topic_names if matches(member.subscribed_topic_regex, name)}
    return names


def _member_entry(member: ConsumerMember, target: Assignment) -> dict:
    return {
        "id": member.member_id, "instance": member.instance_id, "rack": member.rack_id,
        "rebalance_timeout": member.rebalance_timeout_ms, "client_id": member.client_id,
        "client_host": member.client_host, "names": list(member.subscribed_topic_names),
        "regex": member.subscribed_topic_regex, "assignor": member.server_assignor,
        "state": member.state.value, "epoch": member.epoch, "previous_epoch": member.previous_epoch,
        "assigned": _entry(member.assigned), "pending": _entry(member.pending_revocation),
        "target": _entry(target), "classic": _classic_entry(member.classic),
    }


def _classic_entry(classic: ClassicMetadata | None) -> dict | None:
    if classic is None:
        return None
    return {"session_timeout": classic.session_timeout_ms,
            "protocols": [[name, metadata.hex()] for name, metadata in classic.protocols]}


def _classic_metadata(entry: dict | None) -> ClassicMetadata | None:
    if entry is None:
        return None
    return ClassicMetadata(entry["session_timeout"],
                           tuple((name, bytes.fromhex(metadata)) for name, metadata in entry["protocols"]))


def _entry(assignment: Assignment) -> dict:
    return {str(topic): sorted(numbers) for topic, numbers in assignment.items()}


def _assignment(entry: dict) -> Assignment:
    return {uuid.UUID(topic): frozenset(numbers) for topic, numbers in entry.items()}
