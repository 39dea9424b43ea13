"""A group coordinator journaled on its __consumer_offsets partition replays what it wrote, from the
newest record of each key: what the partition still holds once compacted by key; offsets of a
transaction once its marker committed them."""

from dataclasses import dataclass

import pytest

from gateway.group.classic import ClassicGroup
from gateway.group.committed_offsets import Committed
from gateway.group.group_coordinator import GroupCoordinator
from gateway.group.offsets_markers import OffsetsPartitionMarkers
from gateway.group.offsets_records import keyed_slices
from gateway.kafka_error import KafkaError
from gateway.settings.table import Settings
from gateway.storage.partition_journal import PartitionJournal
from gateway.wall_clock import now_ms
from protocol.kafka.error_codes import ErrorCode
from protocol.records import ControlType, RecordBatch, assign_offsets, build_control_batch, read_batch_marker


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

    async def append(self, batch: RecordBatch) -> tuple[int, int, int]:
        if self.deposed:
            raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER, "deposed")
        first = self.next_offset
        assign_offsets(batch, first, 0)
        self.batches.append(Stored(first, first + batch.last_offset_delta, bytes(batch.buffer)))
        return first, len(self.batches) - 1, -1

    async def wait_durable(self, sequence: int) -> None:
        pass

    async def read(self, offset: int, max_bytes: int, *, limit: int | None = None) -> list[Stored]:
        return [b for b in self.batches if b.last_offset >= offset and b.base_offset < limit][:2]

    def compacted(self) -> None:
        """Drop aborted transactions' batches and every batch that holds the newest record of no key;
        markers stay (the cleaner drops records one by one, and a marker only after its transaction's
        records: what is left here is a superset of what it leaves)."""
        aborted, open_batches = set(), {}
        for stored in self.batches:
            batch = RecordBatch(memoryview(stored.data))
            if batch.is_control:
                ended = open_batches.pop(batch.producer_id, [])
                if read_batch_marker(batch).type == ControlType.ABORT:
                    aborted.update(map(id, ended))
            elif batch.is_transactional:
                open_batches.setdefault(batch.producer_id, []).append(stored)
        kept = {}
        for stored in self.batches:
            batch = RecordBatch(memoryview(stored.data))
            if batch.is_control:
                kept[id(stored)] = stored
            elif id(stored) not in aborted:
                kept.update((record.key, stored) for record in batch.records())
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


def marker(partition: Partition, coordinator: GroupCoordinator, producer_id: int, commit: bool):
    """The transaction coordinator's marker, into the partition and told to its coordinator."""
    batch = build_control_batch(ControlType.COMMIT if commit else ControlType.ABORT, offset=0, timestamp=1,
                                producer_id=producer_id, producer_epoch=0, coordinator_epoch=0)
    return OffsetsPartitionMarkers(0, partition, lambda: coordinator).append(RecordBatch(memoryview(bytearray(batch))))


def offsets_of(coordinator: GroupCoordinator, group: str) -> dict:
    return {key: c.offset for key, c in coordinator.fetch_offsets(group).items()}


async def test_transactional_offsets_wait_for_their_marker_also_in_a_replay(nursery):
    """TxnOffsetCommit's offsets are pending until the marker: committed ones become the group's,
    aborted ones never do, and a coordinator replaying the partition before the marker holds them
    pending until it comes."""
    partition = Partition()
    first = await replayed(partition, nursery)
    await first.commit_offsets("g", "", None, -1, 8, commits(1, 1))
    await first.commit_transactional_offsets("g", (7, 0), commits(5))
    await first.commit_transactional_offsets("g", (8, 0), commits(9, 9))
    assert offsets_of(first, "g") == {("t", 0): 1, ("t", 1): 1}
    assert first.has_pending_offset("g", "t", 0) and first.has_pending_offset("g", "t", 1)
    await marker(partition, first, 8, commit=False)
    assert offsets_of(first, "g") == {("t", 0): 1, ("t", 1): 1} and not first.has_pending_offset("g", "t", 1)
    successor = await replayed(partition, nursery)  # the coordinator moves with 7's transaction open
    assert successor.has_pending_offset("g", "t", 0) and not successor.has_pending_offset("g", "t", 1)
    assert offsets_of(successor, "g") == {("t", 0): 1, ("t", 1): 1}
    await marker(partition, successor, 7, commit=True)
    assert offsets_of(successor, "g") == {("t", 0): 5, ("t", 1): 1} and not successor.has_pending_offset("g", "t", 0)
    for compaction in (False, True):
        if compaction:
            partition.compacted()
        again = await replayed(partition, nursery)
        assert offsets_of(again, "g") == {("t", 0): 5, ("t", 1): 1}
        assert not again.has_pending_offset("g", "t", 0)


async def test_a_commit_made_after_a_transactions_offset_wins_over_it(nursery):
    """As in Kafka, where the later record of the partition's offset wins: the transaction commits
    after a plain commit of the same partition, which stays, live and replayed."""
    partition = Partition()
    first = await replayed(partition, nursery)
    await first.commit_transactional_offsets("g", (7, 0), commits(5, 5))
    await first.commit_offsets("g", "", None, -1, 8, commits(6))
    await marker(partition, first, 7, commit=True)
    assert offsets_of(first, "g") == {("t", 0): 6, ("t", 1): 5}
    assert offsets_of(await replayed(partition, nursery), "g") == {("t", 0): 6, ("t", 1): 5}


async def test_a_group_with_pending_offsets_outlives_the_expiry_of_its_committed_ones(nursery):
    """Kafka removes an empty group only once it has no offsets, pending ones included: the
    transaction's offsets then become the group's, live and replayed."""
    partition = Partition()
    first = await replayed(partition, nursery)
    await first.commit_offsets("g", "", None, -1, 8, commits(1))  # committed at 1 ms: long expired
    await first.commit_transactional_offsets("g", (7, 0), {("t", 1): Committed(5, -1, "", now_ms())})
    await first.expire_offsets()
    assert first.group("g") is not None and offsets_of(first, "g") == {}
    await marker(partition, first, 7, commit=True)
    assert offsets_of(first, "g") == {("t", 1): 5}
    assert offsets_of(await replayed(partition, nursery), "g") == {("t", 1): 5}


async def test_an_empty_classic_group_is_written_with_kafkas_empty_protocol_type():
    """What a classic member's join journals for the empty consumer group it takes over: no member
    chose a protocol type yet, and GroupMetadataValue's is not nullable: "" as Kafka writes it."""
    partition = Partition()
    journal = PartitionJournal(partition, keyed_slices)
    entry = ClassicGroup("g").snapshot()
    await journal.write(entry)
    (record,) = RecordBatch(memoryview(partition.batches[0].data)).records()
    assert record.value[:4] == b"\x00\x03\x00\x00"  # value version 3, then a protocol type of length 0
    assert await journal.replay() == [entry]
