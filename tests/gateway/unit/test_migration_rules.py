"""Online migration rules without a server: classic groups upgraded by a KIP-848 join, classic
members inside consumer groups, and the downgrade when only classic members remain."""

from __future__ import annotations

import struct

import pytest

from gateway.group.classic import ClassicGroup, ClassicMember, ClassicState
from gateway.group.classic_membership import JoinRequest
from gateway.group.committed_offsets import Committed
from gateway.group.consumer_group import ConsumerGroup
from gateway.kafka_error import KafkaError
from protocol.kafka.consumer_protocol import decode_assignment, encode_assignment
from protocol.kafka.error_codes import ErrorCode
from tests.gateway.unit.test_consumer_group_heartbeat import beat, coordinator, topic

E = ErrorCode
GENERATION = 4


def subscription(*topics: str) -> bytes:
    """A ConsumerProtocolSubscription v0 without user data."""
    encoded = b"".join(struct.pack(">h", len(t)) + t.encode() for t in topics)
    return struct.pack(">hi", 0, len(topics)) + encoded + struct.pack(">i", -1)


def classic_group(protocol_type="consumer", metadata=None, assigned=(0, 1, 2, 3)) -> ClassicGroup:
    """A stable classic group of one kafka-python-like member owning `assigned` of topic t."""
    group = ClassicGroup("g", ClassicState.STABLE)
    group.generation, group.protocol_name = GENERATION, "range"
    group.add(ClassicMember("c1", None, "client", "/h", 30000, 10000, protocol_type,
                            [("range", subscription("t") if metadata is None else metadata)],
                            assignment=encode_assignment({"t": list(assigned)}, 0)))
    return group


def join_request(member_id: str, version: int = 5) -> JoinRequest:
    return JoinRequest("g", member_id, None, "consumer", [("range", subscription("t"))], 10000, 30000,
                       "client", "/h", version)


async def join(coord, member_id):
    return (await coord.classic.join(join_request(member_id))).value


async def test_a_kip848_join_upgrades_a_classic_group_with_members():
    t = topic("t", 4)
    coord = coordinator(t)
    coord.groups["g"] = classic_group()
    joined = await beat(coord, "m1", 0)
    group = coord.groups["g"]
    assert isinstance(group, ConsumerGroup) and joined.error == E.NONE
    assert (group.epoch, joined.epoch) == (GENERATION + 1, GENERATION + 1), "the epoch starts at the generation"
    classic = group.members["c1"]
    assert (classic.epoch, classic.assigned, classic.subscribed_topic_names) == (
        GENERATION, {t.topic_id: frozenset({0, 1, 2, 3})}, ("t",))
    assert classic.classic.session_timeout_ms == 10000
    assert joined.assignment == {}, "the classic member still owns every partition"
    assert len(group.target["c1"][t.topic_id]) == 2

    # The classic member is told to rejoin, gives up its partitions by rejoining, and syncs.
    assert coord.classic.heartbeat("g", "c1", None, GENERATION) == E.REBALANCE_IN_PROGRESS
    rejoined = await join(coord, "c1")
    assert (rejoined.error, rejoined.generation, rejoined.protocol_name) == (E.NONE, GENERATION + 1, "range")
    synced = (await coord.classic.sync("g", "c1", None, rejoined.generation, "consumer", "range", {})).value
    assert decode_assignment(synced.assignment).assigned_partitions[0].partitions == sorted(
        group.target["c1"][t.topic_id])
    assert coord.classic.heartbeat("g", "c1", None, rejoined.generation) == E.NONE
    assert coord.classic.heartbeat("g", "c1", None, GENERATION) == E.ILLEGAL_GENERATION
    moved = await beat(coord, "m1", joined.epoch, owned={})
    assert set(moved.assignment[t.topic_id]) == set(group.target["m1"][t.topic_id])


async def test_groups_that_cannot_be_upgraded_refuse_the_join():
    coord = coordinator(topic("t", 4), group_consumer_max_size=1)
    for group, reason in (
            (classic_group(protocol_type="connect"), "the group does not use the consumer embedded protocol"),
            (classic_group(metadata=b"\x00"), "the embedded consumer protocol is malformed"),
    ):
        coord.groups["g"] = group
        refused = await beat(coord, "m1", 0)
        assert (refused.error, refused.message) == (
            E.GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group g to consumer group because {reason}.")
        assert coord.groups["g"] is group
    big = classic_group()
    big.add(ClassicMember("c2", None, "client", "/h", 30000, 10000, "consumer", [("range", subscription("t"))]))
    coord.groups["g"] = big
    refused = await beat(coord, "m1", 0)
    assert refused.message.endswith("because the group size exceeds the consumer group maximum size.")


async def test_classic_members_join_a_consumer_group():
    t = topic("t", 4)
    coord = coordinator(t)
    await beat(coord, "m1", 0)
    assert (await join(coord, "")).error == E.MEMBER_ID_REQUIRED
    joined = await join(coord, "c1")
    group = coord.groups["g"]
    assert (joined.error, joined.generation, group.epoch) == (E.NONE, 2, 2)
    assert group.members["c1"].classic is not None
    wrong = JoinRequest("g", "c2", None, "connect", [("range", b"")], 10000, 30000, "client", "/h", 5)
    assert (await coord.classic.join(wrong)).value.error == E.INCONSISTENT_GROUP_PROTOCOL


async def test_last_kip848_member_leaving_downgrades_the_group():
    t = topic("t", 4)
    coord = coordinator(t)
    coord.groups["g"] = classic_group()
    joined = await beat(coord, "m1", 0)
    restored = ConsumerGroup.restored(coord.groups["g"].snapshot())
    assert restored.members["c1"].classic == coord.groups["g"].members["c1"].classic, "journaled"
    left = await beat(coord, "m1", -1)
    assert left.error == E.NONE
    group = coord.groups["g"]
    assert isinstance(group, ClassicGroup) and group.is_(ClassicState.PREPARING_REBALANCE)
    assert (group.generation, group.protocol_type, group.protocol_name) == (joined.epoch, "consumer", "range")
    member = group.members["c1"]
    assert decode_assignment(member.assignment).assigned_partitions[0].topic == "t"
    assert coord.log.entries[-1]["type"] == "classic_group"
    assert coord.classic.heartbeat("g", "c1", None, group.generation) == E.REBALANCE_IN_PROGRESS


async def test_classic_members_commit_with_their_epoch_as_generation():
    coord = coordinator(topic("t", 4))
    coord.groups["g"] = classic_group()
    await beat(coord, "m1", 0)
    commit = {("t", 0): Committed(5, -1, "", 0)}
    await coord.commit_offsets("g", "c1", None, GENERATION, 8, commit)
    with pytest.raises(KafkaError) as refused:
        await coord.commit_offsets("g", "c1", None, GENERATION + 1, 8, commit)
    assert refused.value.code == E.ILLEGAL_GENERATION


@pytest.mark.parametrize("policy, upgrades, downgrades", [
    ("bidirectional", True, True), ("upgrade", True, False), ("downgrade", False, True), ("disabled", False, False)])
async def test_the_migration_policy_decides_which_conversions_happen(policy, upgrades, downgrades):
    t = topic("t", 4)
    coord = coordinator(t, group_consumer_migration_policy=policy)
    coord.groups["g"] = classic_group()
    joined = await beat(coord, "m1", 0)
    assert (joined.error == E.NONE) == upgrades
    assert isinstance(coord.groups["g"], ConsumerGroup) == upgrades
    if not upgrades:
        assert joined.error == E.GROUP_ID_NOT_FOUND
        return
    await beat(coord, "m1", -1)
    assert isinstance(coord.groups["g"], ClassicGroup) == downgrades
