"""Server-side partition assignors of KIP-848 consumer groups: "uniform" and "range".

Pure functions of the members' subscriptions and the subscribed topics'
partition counts, as Kafka's ConsumerGroupPartitionAssignor: they compute a
group's target assignment, the coordinator reconciles members towards it.

* uniform (Kafka's default): balance first (member sizes differ by at most
  one partition when every member subscribes to the same topics), then
  stickiness (members keep as much of their previous target as balance
  allows).
* range: per topic, the subscribed members, static ones first ordered by
  instance id, then the others by member id, get consecutive ranges; topics
  with the same partition count and subscribers are co-partitioned.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field

TopicId = Hashable
Assignment = dict[TopicId, set[int]]


@dataclass(frozen=True)
class MemberSpec:
    member_id: str
    instance_id: str | None
    topics: frozenset  # subscribed topic ids
    current: Mapping[TopicId, frozenset[int] | set[int]] = field(default_factory=dict)  # previous target


Assignor = Callable[[list[MemberSpec], Mapping[TopicId, int]], dict[str, Assignment]]


def uniform(members: list[MemberSpec], partitions: Mapping[TopicId, int]) -> dict[str, Assignment]:
    if len({m.topics for m in members}) <= 1:
        return _uniform_homogeneous(members, partitions)
    return _uniform_heterogeneous(members, partitions)


def _kept(member: MemberSpec, partitions: Mapping[TopicId, int], taken: set) -> list[tuple]:
    """The member's previous partitions it may keep: still subscribed, still existing, not taken."""
    kept = []
    for topic, numbers in member.current.items():
        if topic in member.topics and topic in partitions:
            kept += [(topic, p) for p in sorted(numbers) if p < partitions[topic] and (topic, p) not in taken]
    taken.update(kept)
    return kept


def _uniform_homogeneous(members: list[MemberSpec], partitions: Mapping[TopicId, int]) -> dict[str, Assignment]:
    result: dict[str, Assignment] = {m.member_id: {} for m in members}
    if not members:
        return result
    topics = sorted((t for t in members[0].topics if t in partitions), key=str)
    every = [(t, p) for t in topics for p in range(partitions[t])]
    quota, extra = divmod(len(every), len(members))
    taken: set = set()
    kept = {m.member_id: _kept(m, partitions, taken) for m in members}
    # Members that hold the most get the extra slots: fewer partitions move.
    ordered = sorted(members, key=lambda m: (-len(kept[m.member_id]), m.member_id))
    owned: dict[str, list] = {}
    for rank, member in enumerate(ordered):
        owned[member.member_id] = kept[member.member_id][:quota + (rank < extra)]
    assigned = {tp for tps in owned.values() for tp in tps}
    free = iter(tp for tp in every if tp not in assigned)
    for rank, member in enumerate(ordered):
        mine = owned[member.member_id]
        mine += [next(free) for _ in range(quota + (rank < extra) - len(mine))]
        result[member.member_id] = _grouped(mine)
    return result


def _uniform_heterogeneous(members: list[MemberSpec], partitions: Mapping[TopicId, int]) -> dict[str, Assignment]:
    taken: set = set()
    owned = {m.member_id: set(_kept(m, partitions, taken)) for m in members}
    subscribers: dict[TopicId, list[str]] = {}
    for member in sorted(members, key=lambda m: m.member_id):
        for topic in member.topics:
            if topic in partitions:
                subscribers.setdefault(topic, []).append(member.member_id)
    # The most constrained partitions first, each to its least loaded subscriber.
    free = sorted(((t, p) for t in subscribers for p in range(partitions[t]) if (t, p) not in taken),
                  key=lambda tp: (len(subscribers[tp[0]]), str(tp[0]), tp[1]))
    for topic, number in free:
        least = min(subscribers[topic], key=lambda m: (len(owned[m]), m))
        owned[least].add((topic, number))
    _balance(owned, subscribers)
    return {member_id: _grouped(tps) for member_id, tps in owned.items()}


def _balance(owned: dict[str, set], subscribers: dict[TopicId, list[str]]) -> None:
    """Move partitions from a member to a less loaded subscriber while that narrows the gap by two."""
    moved = True
    while moved:
        moved = False
        for giver in sorted(owned, key=lambda m: (-len(owned[m]), m)):
            for topic, number in sorted(owned[giver], key=lambda tp: (str(tp[0]), tp[1])):
                taker = min(subscribers[topic], key=lambda m: (len(owned[m]), m))
                if len(owned[giver]) - len(owned[taker]) > 1:
                    owned[giver].remove((topic, number))
                    owned[taker].add((topic, number))
                    moved = True


def range_assignor(members: list[MemberSpec], partitions: Mapping[TopicId, int]) -> dict[str, Assignment]:
    result: dict[str, Assignment] = {m.member_id: {} for m in members}
    ordered = sorted(members, key=_range_order)
    for topic in sorted({t for m in members for t in m.topics if t in partitions}, key=str):
        subscribed = [m.member_id for m in ordered if topic in m.topics]
        quota, extra = divmod(partitions[topic], len(subscribed))
        start = 0
        for rank, member_id in enumerate(subscribed):
            end = min(start + quota + (rank < extra), partitions[topic])
            if start < end:
                result[member_id][topic] = set(range(start, end))
            start = end
    return result


def _range_order(member: MemberSpec) -> tuple:
    # Static members first, by instance id, so that restarts keep their ranges.
    if member.instance_id is not None:
        return (0, member.instance_id)
    return (1, member.member_id)


def _grouped(topic_partitions) -> Assignment:
    grouped: Assignment = {}
    for topic, number in topic_partitions:
        grouped.setdefault(topic, set()).add(number)
    return grouped


ASSIGNORS: dict[str, Assignor] = {"uniform": uniform, "range": range_assignor}
DEFAULT_ASSIGNOR = "uniform"
