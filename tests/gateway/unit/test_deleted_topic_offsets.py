"""A deleted topic's committed offsets go from every group, as Kafka's coordinator removes them."""

from gateway.group.committed_offsets import Committed
from gateway.group.group_coordinator import GroupCoordinator
from gateway.settings.table import Settings
from tests.gateway.unit.test_consumer_group_heartbeat import FakeLog


async def test_offsets_committed_until_the_deletion_go_and_later_ones_stay():
    coordinator = GroupCoordinator(Settings().broker, None)
    coordinator.log = FakeLog()
    for group in ("a", "b"):
        await coordinator.commit_offsets(group, "", None, -1, 8, {
            ("gone", 0): Committed(5, -1, "", commit_ms=1_000), ("gone", 1): Committed(7, -1, "", commit_ms=1_000),
            ("kept", 0): Committed(3, -1, "", commit_ms=1_000)})
    # A commit after the deletion is of the topic created again under its name.
    await coordinator.commit_offsets("b", "", None, -1, 8, {("gone", 1): Committed(2, -1, "", commit_ms=3_000)})

    await coordinator.remove_offsets_of({"gone": 2_000})

    assert [entry["type"] for entry in coordinator.log.entries[-2:]] == ["offsets_deleted"] * 2
    assert coordinator.fetch_offsets("a") == {("kept", 0): Committed(3, -1, "", commit_ms=1_000)}
    assert coordinator.fetch_offsets("b") == {("kept", 0): Committed(3, -1, "", commit_ms=1_000),
                                              ("gone", 1): Committed(2, -1, "", commit_ms=3_000)}


async def test_a_transactions_pending_offsets_of_the_deleted_topic_go_too():
    """Kafka's removeOffsets drops pending transactional offsets of the partitions as well:
    the transaction's commit then brings none of them, in a group without committed offsets too."""
    coordinator = GroupCoordinator(Settings().broker, None)
    coordinator.log = FakeLog()
    pending = {("gone", 0): Committed(4, -1, "", commit_ms=1_000), ("kept", 0): Committed(6, -1, "", commit_ms=1_000)}
    await coordinator.commit_transactional_offsets("txn-group", (77, 0), pending)

    await coordinator.remove_offsets_of({"gone": 2_000})

    assert not coordinator.has_pending_offset("txn-group", "gone", 0)
    await coordinator.end_transaction(77, commit=True)
    assert coordinator.fetch_offsets("txn-group") == {("kept", 0): Committed(6, -1, "", commit_ms=1_000)}
    replayed = GroupCoordinator(Settings().broker, None)  # the journal says the same
    for entry in coordinator.log.entries:
        replayed._replay(entry)
    assert replayed.fetch_offsets("txn-group") == coordinator.fetch_offsets("txn-group")
