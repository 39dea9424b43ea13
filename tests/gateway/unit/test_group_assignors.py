"""The KIP-848 server assignors as pure functions: properties that hold for any group."""

from __future__ import annotations

from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from gateway.group.assignors import MemberSpec, range_assignor, uniform

TOPICS = ["a", "b", "c", "d"]
partition_counts = st.dictionaries(st.sampled_from(TOPICS), st.integers(0, 12), min_size=1)


@st.composite
def groups(draw, same_topics: bool):
    """(members, partition counts), members with previous targets that may be stale or overlapping."""
    partitions = draw(partition_counts)
    shared = draw(st.frozensets(st.sampled_from(TOPICS), min_size=1))
    members = []
    for n in range(draw(st.integers(1, 7))):
        topics = shared if same_topics else draw(st.frozensets(st.sampled_from(TOPICS)))
        current = draw(st.dictionaries(st.sampled_from(TOPICS), st.frozensets(st.integers(0, 14), max_size=5)))
        instance = draw(st.one_of(st.none(), st.just(f"instance-{n}")))
        members.append(MemberSpec(f"member-{n}", instance, topics, current))
    return members, partitions


def owners(result) -> Counter:
    return Counter((t, p) for assignment in result.values() for t, ps in assignment.items() for p in ps)


def assert_each_subscribed_partition_once(members, partitions, result) -> None:
    subscribed = {t for m in members for t in m.topics if t in partitions}
    assert owners(result) == Counter((t, p) for t in subscribed for p in range(partitions[t]))
    by_id = {m.member_id: m for m in members}
    assert set(result) == set(by_id)
    for member_id, assignment in result.items():
        assert set(assignment) <= by_id[member_id].topics, "only subscribed topics are assigned"


def sizes(result) -> list[int]:
    return [sum(len(ps) for ps in assignment.values()) for assignment in result.values()]


@given(groups(same_topics=True))
def test_uniform_balances_homogeneous_groups(group):
    members, partitions = group
    result = uniform(members, partitions)
    assert_each_subscribed_partition_once(members, partitions, result)
    assert max(sizes(result)) - min(sizes(result)) <= 1


@given(groups(same_topics=True))
def test_uniform_keeps_a_balanced_target(group):
    members, partitions = group
    first = uniform(members, partitions)
    again = [MemberSpec(m.member_id, m.instance_id, m.topics, first[m.member_id]) for m in members]
    assert uniform(again, partitions) == first


@given(groups(same_topics=True))
def test_uniform_moves_only_what_a_new_member_takes(group):
    members, partitions = group
    before = uniform(members, partitions)
    joined = [MemberSpec(m.member_id, m.instance_id, m.topics, before[m.member_id]) for m in members]
    joined.append(MemberSpec("newcomer", None, members[0].topics))
    after = uniform(joined, partitions)
    moved = sum(len(ps - after[m].get(t, set())) for m, a in before.items() for t, ps in a.items())
    assert moved == sum(len(ps) for ps in after["newcomer"].values()), "partitions only move to the newcomer"


@given(groups(same_topics=False))
def test_uniform_heterogeneous_groups_cannot_be_balanced_further(group):
    members, partitions = group
    result = uniform(members, partitions)
    assert_each_subscribed_partition_once(members, partitions, result)
    size = {member_id: sum(len(ps) for ps in a.values()) for member_id, a in result.items()}
    for member_id, assignment in result.items():
        for topic in assignment:
            takers = [m.member_id for m in members if topic in m.topics]
            assert all(size[member_id] - size[taker] <= 1 for taker in takers)


@given(groups(same_topics=False))
def test_range_gives_each_topic_in_contiguous_balanced_ranges(group):
    members, partitions = group
    result = range_assignor(members, partitions)
    assert_each_subscribed_partition_once(members, partitions, result)
    order = sorted(members, key=lambda m: (m.instance_id is None, m.instance_id or m.member_id))
    for topic in {t for m in members for t in m.topics if t in partitions}:
        ranges = [sorted(result[m.member_id].get(topic, ())) for m in order if topic in m.topics]
        flat = [p for r in ranges for p in r]
        assert flat == list(range(partitions[topic])), "consecutive ranges in member order"
        lengths = [len(r) for r in ranges]
        assert lengths == sorted(lengths, reverse=True) and lengths[0] - lengths[-1] <= 1


@given(st.integers(1, 12), st.integers(1, 6), st.booleans())
def test_range_co_partitions_topics_of_equal_size(count, members, static):
    specs = [MemberSpec(f"m{n}", f"i{n}" if static else None, frozenset({"a", "b"})) for n in range(members)]
    result = range_assignor(specs, {"a": count, "b": count})
    for assignment in result.values():
        assert assignment.get("a", set()) == assignment.get("b", set())


def test_range_puts_static_members_first_by_instance_id():
    specs = [MemberSpec("a-dynamic", None, frozenset({"t"})), MemberSpec("z-static", "i0", frozenset({"t"}))]
    result = range_assignor(specs, {"t": 3})
    assert result == {"z-static": {"t": {0, 1}}, "a-dynamic": {"t": {2}}}
