"""Reconciliation of a KIP-848 member towards its target assignment (Kafka's CurrentAssignmentBuilder).

A partition moves in two steps: its owner is first asked to revoke it (the
member stays in its epoch, UNREVOKED_PARTITIONS, until a heartbeat no longer
lists it as owned), and only then is it given to its new member. A member
whose target holds partitions that others still own gets the free ones and
waits for the rest (UNRELEASED_PARTITIONS); it is told about each one once it
is released.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from enum import Enum

Assignment = dict[uuid.UUID, frozenset[int]]


class MemberState(Enum):
    STABLE = "stable"
    UNREVOKED_PARTITIONS = "unrevoked_partitions"
    UNRELEASED_PARTITIONS = "unreleased_partitions"


@dataclass(frozen=True)
class ClassicMetadata:
    """What a member that speaks the classic protocol inside a consumer group keeps of its JoinGroup."""
    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]  # (name, ConsumerProtocolSubscription), preferred first

    def supports(self, name: str) -> bool:
        return any(protocol == name for protocol, _ in self.protocols)


@dataclass(frozen=True)
class ConsumerMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    state: MemberState = MemberState.STABLE
    epoch: int = 0
    previous_epoch: int = -1
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)
    classic: ClassicMetadata | None = None  # set for members that joined with JoinGroup

    def with_epoch(self, epoch: int, **changes) -> ConsumerMember:
        return replace(self, previous_epoch=self.epoch, epoch=epoch, **changes)

    def is_reconciled_to(self, epoch: int) -> bool:
        return self.state == MemberState.STABLE and self.epoch == epoch


@dataclass(frozen=True)
class Target:
    epoch: int
    partitions: Assignment
    subscribed: frozenset  # topic ids the member subscribes to now
    owned_by_other: Callable[[uuid.UUID, int], bool]


def reconcile(member: ConsumerMember, target: Target, owned: Assignment | None,
              subscription_changed: bool) -> ConsumerMember:
    """The member's next state; `owned` is what its heartbeat reports (None: not reported)."""
    if member.state == MemberState.STABLE:
        if member.epoch != target.epoch:
            return _next(member, target, owned)
        return _drop_unsubscribed(member, target, owned) if subscription_changed else member
    if member.state == MemberState.UNREVOKED_PARTITIONS:
        if _owns_any(owned, member.pending_revocation):
            return _drop_unsubscribed(member, target, owned) if subscription_changed else member
        return _next(member, target, owned)
    return _next(member, target, owned)


def _owns_any(owned: Assignment | None, partitions: Assignment) -> bool:
    if owned is None:
        return True  # the member did not say what it owns: assume it still holds them
    return any(p in partitions.get(topic, ()) for topic, numbers in owned.items() for p in numbers)


def _drop_unsubscribed(member: ConsumerMember, target: Target, owned: Assignment | None) -> ConsumerMember:
    """Revoke at once the partitions of topics the member no longer subscribes to."""
    dropped = {t: ps for t, ps in member.assigned.items() if t not in target.subscribed}
    if not dropped:
        return member
    assigned = {t: ps for t, ps in member.assigned.items() if t in target.subscribed}
    pending = dict(member.pending_revocation)
    for topic, numbers in dropped.items():
        pending[topic] = pending.get(topic, frozenset()) | numbers
    if _owns_any(owned, pending):
        return member.with_epoch(member.epoch, state=MemberState.UNREVOKED_PARTITIONS, assigned=assigned,
                                 pending_revocation=pending)
    return member.with_epoch(member.epoch, assigned=assigned)


def _next(member: ConsumerMember, target: Target, owned: Assignment | None) -> ConsumerMember:
    kept: Assignment = {}
    revoking: Assignment = {}
    arriving: Assignment = {}
    unreleased = False
    for topic in set(target.partitions) | set(member.assigned):
        wanted = target.partitions.get(topic, frozenset()) if topic in target.subscribed else frozenset()
        current = member.assigned.get(topic, frozenset())
        keep, revoke, new = current & wanted, current - wanted, wanted - current
        # Partitions still owned by another member arrive later; our own pending ones are free.
        ours = member.pending_revocation.get(topic, frozenset())
        free = frozenset(p for p in new if p in ours or not target.owned_by_other(topic, p))
        unreleased |= free != new
        for result, numbers in ((kept, keep), (revoking, revoke), (arriving, free)):
            if numbers:
                result[topic] = numbers
    if revoking and _owns_any(owned, revoking):
        return member.with_epoch(member.epoch, state=MemberState.UNREVOKED_PARTITIONS, assigned=kept,
                                 pending_revocation=revoking)
    for topic, numbers in arriving.items():
        kept[topic] = kept.get(topic, frozenset()) | numbers
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return member.with_epoch(target.epoch, state=state, assigned=kept, pending_revocation={})
