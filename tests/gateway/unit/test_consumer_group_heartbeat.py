"""The KIP-848 coordinator without a server: heartbeats in, Kafka's answers and group states out."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

import pytest
import trio

from gateway.group.classic import ClassicGroup, ClassicMember, ClassicState
from gateway.group.committed_offsets import Committed
from gateway.group.consumer_group import ConsumerGroup
from gateway.group.consumer_requests import HeartbeatRequest
from gateway.group.group_coordinator import GroupCoordinator
from gateway.group.reconcile import ConsumerMember, MemberState
from gateway.kafka_error import KafkaError
from gateway.settings.table import BrokerSettings
from protocol.kafka.error_codes import ErrorCode

E = ErrorCode


@dataclass
class FakeTopic:
    name: str
    partitions: list
    topic_id: uuid.UUID = field(default_factory=uuid.uuid4)


class FakeLog:
    """The group journal, kept in memory."""

    def __init__(self):
        self.entries: list[dict] = []

    async def write(self, entry):
        self.entries.append(entry)

    async def commit(self, group_id, entry):
        if entry is not None:
            self.entries.append(entry)

    def append(self, entry):
        self.entries.append(entry)


def coordinator(*topics: FakeTopic, **defaults) -> GroupCoordinator:
    settings = BrokerSettings(**defaults)
    made = GroupCoordinator(settings, None, {t.name: t for t in topics})
    made.log = FakeLog()
    return made


def topic(name: str, partitions: int) -> FakeTopic:
    return FakeTopic(name, [None] * partitions)


async def beat(coord, member_id: str, epoch: int, *, group="g", owned=None, names=None, **fields):
    """A heartbeat as a client sends it: a full one when joining."""
    joining = epoch == 0
    request = HeartbeatRequest(
        group, member_id, epoch, fields.pop("instance_id", None), None,
        fields.pop("rebalance_timeout_ms", 30000 if joining else -1),
        names if names is not None or not joining else ["t"], fields.pop("regex", None),
        fields.pop("assignor", None), owned if owned is not None or not joining else {},
        "client", "/127.0.0.1", fields.pop("version", 1))
    assert not fields, fields
    return await coord.consumer.heartbeat(request)


def parts(result, t: FakeTopic) -> set[int]:
    return set(result.assignment.get(t.topic_id, ())) if result.assignment is not None else None


async def test_first_member_gets_every_partition():
    t = topic("t", 3)
    coord = coordinator(t)
    joined = await beat(coord, "m1", 0)
    assert (joined.error, joined.member_id, joined.epoch, parts(joined, t)) == (E.NONE, "m1", 1, {0, 1, 2})
    assert joined.interval_ms == 5000
    steady = await beat(coord, "m1", 1, owned={t.topic_id: frozenset({0, 1, 2})})
    assert (steady.epoch, steady.assignment) == (1, None), "nothing new: no assignment in the answer"
    assert coord.groups["g"].state.value == "Stable"
    assert coord.log.entries[-1]["type"] == "consumer_group"


async def test_a_partition_is_revoked_before_it_moves():
    t = topic("t", 4)
    coord = coordinator(t)
    await beat(coord, "m1", 0)
    second = await beat(coord, "m2", 0)
    assert (second.epoch, parts(second, t)) == (2, set()), "m1 still owns everything"
    group = coord.groups["g"]
    assert group.state.value == "Reconciling"

    revoking = await beat(coord, "m1", 1, owned={t.topic_id: frozenset(range(4))})
    kept = parts(revoking, t)
    assert revoking.epoch == 1 and len(kept) == 2, "m1 stays in its epoch until it has revoked"
    assert parts(await beat(coord, "m2", 2, owned={}), t) is None, "not released yet: nothing to tell"

    done = await beat(coord, "m1", 1, owned={t.topic_id: frozenset(kept)})
    assert done.epoch == 2
    given = await beat(coord, "m2", 2, owned={})
    assert parts(given, t) == {0, 1, 2, 3} - kept
    await beat(coord, "m2", 2, owned={t.topic_id: frozenset(parts(given, t))})
    assert group.state.value == "Stable"


async def test_member_epochs_are_checked():
    t = topic("t", 2)
    coord = coordinator(t)
    assert (await beat(coord, "m1", 3)).error == E.GROUP_ID_NOT_FOUND
    await beat(coord, "m1", 0)
    assert (await beat(coord, "m1", 2)).error == E.FENCED_MEMBER_EPOCH
    assert (await beat(coord, "m9", 1)).error == E.UNKNOWN_MEMBER_ID
    await beat(coord, "m2", 0)
    await beat(coord, "m1", 1, owned={t.topic_id: frozenset({0, 1})})  # revokes one: still epoch 1
    await beat(coord, "m1", 1, owned={t.topic_id: frozenset({0})})  # now epoch 2, previous 1
    lost_answer = await beat(coord, "m1", 1, owned={t.topic_id: frozenset({0})})
    assert lost_answer.error == E.NONE, "the previous epoch with a subset of the assignment is accepted"
    assert (await beat(coord, "m1", 1, owned={t.topic_id: frozenset({1})})).error == E.FENCED_MEMBER_EPOCH


@pytest.mark.parametrize("change,error", [
    (dict(rebalance_timeout_ms=-1), E.INVALID_REQUEST),
    (dict(owned={uuid.uuid4(): frozenset({0})}), E.INVALID_REQUEST),
    (dict(names=None, member_epoch=5), E.INVALID_REQUEST),  # an empty member id with epoch > 0
    (dict(assignor="sticky"), E.UNSUPPORTED_ASSIGNOR),
    (dict(regex="topic-(["), E.INVALID_REGULAR_EXPRESSION),
    (dict(instance_id=""), E.INVALID_REQUEST),
    (dict(version=0, member_epoch=-3), E.INVALID_REQUEST),
])
async def test_bad_heartbeats_are_refused(change, error):
    coord = coordinator(topic("t", 1))
    member_id = "" if "member_epoch" in change else "m1"
    epoch = change.pop("member_epoch", 0)
    assert (await beat(coord, member_id, epoch, **change)).error == error
    assert "g" not in coord.groups, "a refused first heartbeat leaves no group behind"


async def test_version_0_members_get_an_id_from_the_coordinator():
    coord = coordinator(topic("t", 1))
    joined = await beat(coord, "", 0, version=0)
    assert joined.error == E.NONE and uuid.UUID(joined.member_id)


async def test_leaving_frees_the_partitions():
    t = topic("t", 2)
    coord = coordinator(t)
    await beat(coord, "m1", 0)
    await beat(coord, "m2", 0)
    await beat(coord, "m1", 1, owned={t.topic_id: frozenset({0, 1})})
    left = await beat(coord, "m1", -1)
    assert (left.error, left.epoch) == (E.NONE, -1)
    assert (await beat(coord, "m1", -1)).error == E.UNKNOWN_MEMBER_ID
    rest = await beat(coord, "m2", 2, owned={})
    assert (rest.epoch, parts(rest, t)) == (3, {0, 1})


async def test_static_member_comes_back_without_a_rebalance():
    t = topic("t", 2)
    coord = coordinator(t)
    await beat(coord, "s1", 0, instance_id="i1")
    await beat(coord, "m2", 0)
    await beat(coord, "s1", 1, instance_id="i1", owned={t.topic_id: frozenset({0, 1})})
    await beat(coord, "s1", 1, instance_id="i1", owned={t.topic_id: frozenset(parts_of(coord, "s1", t))})
    assert (await beat(coord, "s9", 0, instance_id="i1")).error == E.UNRELEASED_INSTANCE_ID
    assert (await beat(coord, "s9", 2, instance_id="i1")).error == E.FENCED_INSTANCE_ID
    group = coord.groups["g"]
    epoch, kept = group.epoch, parts_of(coord, "s1", t)

    away = await beat(coord, "s1", -2, instance_id="i1")
    assert (away.error, away.epoch) == (E.NONE, -2)
    back = await beat(coord, "s2", 0, instance_id="i1")
    assert (back.error, back.member_id, parts(back, t)) == (E.NONE, "s2", kept)
    assert group.epoch == epoch and "s1" not in group.members


def parts_of(coord, member_id: str, t: FakeTopic) -> set[int]:
    return set(coord.groups["g"].members[member_id].assigned.get(t.topic_id, ()))


async def test_silent_members_are_fenced(autojump_clock):
    t = topic("t", 2)
    coord = coordinator(t, group_consumer_session_timeout_ms=6000)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(coord.timer.run)
        await beat(coord, "m1", 0)
        await beat(coord, "m2", 0)
        for _ in range(4):
            await trio.sleep(2)
            await beat(coord, "m2", 2, owned={})
        group = coord.groups["g"]
        assert list(group.members) == ["m2"], "m1 missed its session timeout"
        assert coord.log.entries[-1]["members"][0]["id"] == "m2"
        nursery.cancel_scope.cancel()


async def test_a_member_that_does_not_revoke_is_fenced(autojump_clock):
    t = topic("t", 2)
    coord = coordinator(t)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(coord.timer.run)
        await beat(coord, "m1", 0, rebalance_timeout_ms=1000)
        await beat(coord, "m2", 0)
        await beat(coord, "m1", 1)  # told to revoke; it never reports that it did
        await trio.sleep(1.5)
        assert "m1" not in coord.groups["g"].members
        assert parts(await beat(coord, "m2", 2, owned={}), t) == {0, 1}
        nursery.cancel_scope.cancel()


async def test_new_topics_and_partitions_move_the_group_epoch():
    t = topic("t", 1)
    coord = coordinator(t)
    await beat(coord, "m1", 0, names=[], regex="t.*")
    t.partitions.append(None)
    grown = await beat(coord, "m1", 1, owned={t.topic_id: frozenset({0})})
    assert (grown.epoch, parts(grown, t)) == (2, {0, 1})
    other = topic("two", 1)
    coord.topics[other.name] = other
    more = await beat(coord, "m1", 2, owned={t.topic_id: frozenset({0, 1})})
    assert (more.epoch, parts(more, other)) == (3, {0})


async def test_subscription_regexes_are_re2():
    coord = coordinator(topic("a" * 200, 1))
    slow_for_backtracking = await beat(coord, "m1", 0, names=[], regex="(a|a)*b")
    assert (slow_for_backtracking.error, slow_for_backtracking.assignment) == (E.NONE, {})
    lookahead = await beat(coord, "m2", 0, names=[], regex="(?=a)a*")
    assert lookahead.error == E.INVALID_REGULAR_EXPRESSION, "RE2 has no lookahead, as Kafka's RE2/J"


async def test_groups_convert_only_when_they_can():
    """A classic group whose member's metadata is no consumer subscription cannot be upgraded;
    an empty one is converted; a consumer group refuses to be taken for a classic one."""
    coord = coordinator(topic("t", 1))
    classic = coord.groups["busy"] = ClassicGroup("busy")
    classic.add(ClassicMember("c1", None, "client", "/h", 1000, 1000, "consumer", [("range", b"")]))
    classic.state = ClassicState.STABLE
    assert (await beat(coord, "m1", 0, group="busy")).error == E.GROUP_ID_NOT_FOUND
    coord.groups["idle"] = ClassicGroup("idle")
    assert (await beat(coord, "m1", 0, group="idle")).error == E.NONE, "an empty classic group is converted"
    assert isinstance(coord.groups["idle"], ConsumerGroup)
    with pytest.raises(KafkaError) as refused:
        coord.classic_group("idle", create=True)
    assert refused.value.code == E.INCONSISTENT_GROUP_PROTOCOL


async def test_groups_have_a_maximum_size():
    coord = coordinator(topic("t", 1), group_consumer_max_size=1)
    await beat(coord, "m1", 0)
    assert (await beat(coord, "m2", 0)).error == E.GROUP_MAX_SIZE_REACHED


async def test_offset_commits_carry_the_member_epoch():
    t = topic("t", 1)
    coord = coordinator(t)
    await beat(coord, "m1", 0)
    commit = {("t", 0): Committed(5, -1, "", 0)}

    async def code(member_id, epoch, version=9):
        try:
            await coord.commit_offsets("g", member_id, None, epoch, version, commit)
        except KafkaError as exc:
            return exc.code
        return E.NONE

    assert await code("m1", 0) == E.STALE_MEMBER_EPOCH
    assert await code("m2", 1) == E.UNKNOWN_MEMBER_ID
    assert await code("m1", 1, version=8) == E.UNSUPPORTED_VERSION
    assert await code("m1", 1) == E.NONE and coord.fetch_offsets("g")[("t", 0)].offset == 5
    with pytest.raises(KafkaError) as stale:
        coord.validate_offset_fetch("g", "m1", 0)
    assert stale.value.code == E.STALE_MEMBER_EPOCH


async def test_a_group_comes_back_from_its_snapshot():
    t = topic("t", 3)
    coord = coordinator(t)
    await beat(coord, "m1", 0, instance_id="i1", assignor="range")
    await beat(coord, "m2", 0, regex="t")
    group = coord.groups["g"]
    restored = ConsumerGroup.restored(group.snapshot())
    assert restored.members == group.members and restored.target == group.target
    assert (restored.epoch, restored.assignment_epoch, restored.topics) == (group.epoch, group.assignment_epoch,
                                                                             group.topics)
    assert restored.static_members == {"i1": "m1"} and restored.preferred_assignor() == "range"


async def test_after_a_restart_every_revoking_member_is_fenced_at_its_own_timeout(autojump_clock):
    """Members restored in the middle of a revocation each get their own rebalance timeout and
    epoch: every one of them is fenced once its timeout passes, not only the last restored."""
    t = topic("t", 6)
    coord = coordinator(t)
    group = ConsumerGroup("g")
    for number, (epoch, timeout_ms) in enumerate([(3, 1000), (4, 2000), (5, 3000)]):
        group.put_member(ConsumerMember(
            f"m{number}", rebalance_timeout_ms=timeout_ms, state=MemberState.UNREVOKED_PARTITIONS,
            epoch=epoch, assigned={t.topic_id: frozenset({number})},
            pending_revocation={t.topic_id: frozenset({number + 3})}))
    coord.groups["g"] = group
    async with trio.open_nursery() as nursery:
        nursery.start_soon(coord.timer.run)
        coord.consumer.restored(group)
        await trio.sleep(3.5)  # past every rebalance timeout, well before the 45 s session timeout
        assert group.members == {}
        nursery.cancel_scope.cancel()
