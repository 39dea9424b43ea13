"""A group coordinator journaled on its __consumer_offsets partition replays what it wrote, from the
newest record of each key: what the partition still holds once compacted by key."""

from dataclasses import dataclass

import pytest

from gateway.group.committed_offsets import Committed
from gateway.group.group_coordinator import GroupCoordinator
from gateway.group.offsets_records import keyed_slices
from gateway.kafka_error import KafkaError
from gateway.settings.table import Settings
from gateway.storage.partition_journal import PartitionJournal
from protocol.kafka.error_codes import ErrorCode
from protocol.records import ControlType, RecordBatch, assign_offsets, build_control_batch


@dataclass
class Stored:
    base_offset: int
    last_offset: int
    data: bytes


class Partition:
    """The part of a PartitionLog the journal uses, in memory."""

    def __init__(self):
        self.log_start_offset = 0
        self.batches: list[Stored] = []
        self.deposed = False

    @property
    def next_offset(self) -> int:
        return self.batches[-1].last_offset + 1 if self.batches else 0

    async def append(self, batch: RecordBatch) -> tuple[int, int]:
        if self.deposed:
            raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER, "deposed")
        first = self.next_offset
        assign_offsets(batch, first, 0)
        self.batches.append(Stored(first, first + batch.last_offset_delta, bytes(batch.buffer)))
        return first, len(self.batches) - 1

    async def wait_durable(self, sequence: int) -> None:
        pass

    async def read(self, offset: int, max_bytes: int, *, limit: int | None = None) -> list[Stored]:
        return [b for b in self.batches if b.last_offset >= offset and b.base_offset < limit][:2]

    def compacted(self) -> None:
        """Drop every batch that holds the newest record of no key (the cleaner drops records one by one:
        what is left here is a superset of what it leaves)."""
        kept = {}
        for stored in self.batches:
            batch = RecordBatch(memoryview(stored.data))
            for record in [] if batch.is_control else batch.records():
                kept[record.key] = stored
        self.batches = sorted({id(b): b for b in kept.values()}.values(), key=lambda b: b.base_offset)


def coordinator(partition: Partition) -> GroupCoordinator:
    return GroupCoordinator(Settings().broker, PartitionJournal(partition, keyed_slices))


async def replayed(partition: Partition, nursery) -> GroupCoordinator:
    again = coordinator(partition)
    await nursery.start(again.run)
    return again


def commits(*offsets: int) -> dict:
    return {("t", n): Committed(offset, -1, "", 1) for n, offset in enumerate(offsets)}


async def test_commits_and_deletions_replay_from_the_newest_record_of_each_key(nursery):
    partition = Partition()
    first = await replayed(partition, nursery)
    await first.commit_offsets("kept", "", None, -1, 8, commits(5, 7))
    await first.commit_offsets("kept", "", None, -1, 8, commits(6))
    await first.commit_offsets("gone", "", None, -1, 8, commits(1))
    assert await first.delete_groups(["gone"]) == [ErrorCode.NONE]
    partition.batches.append(Stored(partition.next_offset, partition.next_offset, build_control_batch(
        ControlType.COMMIT, offset=partition.next_offset, timestamp=1, producer_id=1, producer_epoch=0,
        coordinator_epoch=0)))
    for compaction in (False, True):
        if compaction:
            partition.compacted()
        again = await replayed(partition, nursery)
        assert {key: c.offset for key, c in again.fetch_offsets("kept").items()} == {("t", 0): 6, ("t", 1): 7}
        assert again.group("gone") is None and not again.fetch_offsets("gone")


async def test_a_deposed_coordinators_write_is_refused_with_not_coordinator(nursery):
    partition = Partition()
    first = await replayed(partition, nursery)
    partition.deposed = True
    with pytest.raises(KafkaError) as refused:
        await first.commit_offsets("g", "", None, -1, 8, commits(3))
    assert refused.value.code == ErrorCode.NOT_COORDINATOR
