"""A lone gateway's journals carried over into the cluster's coordinator partitions: a crash before the
lone journal is closed carries it again without a second copy and without undoing what the cluster
changed since; once closed, nothing is carried again."""

import pytest

from gateway.carry_over import LoneStateCarryOver
from gateway.group.committed_offsets import OffsetStore
from gateway.group.group_journal import GroupLog
from gateway.storage.partition_journal import PartitionJournal
from gateway.txn.transaction_records import keyed_slices as transaction_slices
from protocol.kafka.coordinator_records import OFFSETS_PARTITIONS, TRANSACTIONS_PARTITIONS, coordinator_partition
from tests.gateway.unit.test_partition_journal import Partition, commits, offsets_of, replayed


class Crash(Exception):
    pass


class LoneJournal:
    """A lone coordinator's journal; `crashes`: the gateway dies at its next write."""

    def __init__(self, entries: list[dict]):
        self.entries = entries
        self.crashes = False

    async def replay(self) -> list[dict]:
        return list(self.entries)

    async def write(self, entry: dict) -> None:
        if self.crashes:
            raise Crash
        self.entries.append(entry)


def offsets_entry(group: str, offset: int, serial: int) -> dict:
    return {"type": "offsets", "group": group, "commits": [["t", 0, offset, -1, "", 1, None]], "serial": serial}


def transaction(epoch: int) -> dict:
    return {"type": "transaction", "id": "tx", "producer_id": 4, "epoch": epoch, "last_producer_id": -1,
            "last_epoch": -1, "timeout_ms": 60000, "state": "Empty", "partitions": [], "start_ms": -1,
            "update_ms": 1}


GROUP_PARTITION = coordinator_partition("g", OFFSETS_PARTITIONS)
ID_PARTITION = coordinator_partition("tx", TRANSACTIONS_PARTITIONS)


async def loaded(groups: LoneJournal, transactions: LoneJournal) -> LoneStateCarryOver:
    """A controller's start: the lone journals replayed."""
    carry = LoneStateCarryOver({"groups": groups, "transactions": transactions})
    await carry.load()
    return carry


async def test_a_crash_before_the_marker_carries_again_without_undoing_newer_changes(nursery):
    groups = LoneJournal([offsets_entry("g", 5, 1), offsets_entry("g", 6, 2), offsets_entry("h", 1, 3),
                          {"type": "group_deleted", "group": "h", "partitions": [["t", 0]], "serial": 4}])
    transactions = LoneJournal([transaction(0), transaction(1)])
    offsets, ids = Partition(), Partition()
    groups.crashes = transactions.crashes = True  # each partition written, then the gateway dies
    carry = await loaded(groups, transactions)
    for kind, index, partition in (("groups", GROUP_PARTITION, offsets), ("transactions", ID_PARTITION, ids)):
        with pytest.raises(Crash):
            await carry.before_load(kind)(index, partition)
    cluster = await replayed(offsets, nursery)
    assert offsets_of(cluster, "g") == {("t", 0): 6} and cluster.group("h") is None
    await cluster.commit_offsets("g", "", None, -1, 8, commits(9))  # the cluster's coordinators go on
    ids_journal = PartitionJournal(ids, transaction_slices)
    assert [entry["epoch"] for entry in await ids_journal.replay()] == [1]
    await ids_journal.write(transaction(2))

    groups.crashes = transactions.crashes = False
    for _ in range(2):  # carried again, then closed: nothing written the second time
        carry = await loaded(groups, transactions)
        await carry.before_load("groups")(GROUP_PARTITION, offsets)
        await carry.before_load("transactions")(ID_PARTITION, ids)
        assert offsets_of(await replayed(offsets, nursery), "g") == {("t", 0): 9}
        assert [entry["epoch"] for entry in await ids_journal.replay()] == [2]
        assert [journal.entries[-1]["type"] for journal in (groups, transactions)] == ["carried_over"] * 2
        assert len(groups.entries) == 5 and len(transactions.entries) == 3
    assert GroupLog(None, OffsetStore()).restore(groups.entries) == []  # a lone start: the state is the cluster's
