"""A partition's log start: journaled with the sequence below which the stores may
discard, and rebuilt from there after they did."""

import uuid

from gateway.partitions.partition_log import recovered_state
from gateway.topics.topic import PartitionState, Topic
from protocol.records import Record, build_batch

ADDRESS = "0123456789ABCDEF0123456789ABCDEF"


def stored(first_sequence: int, first_offset: int, count: int, records_each: int = 2):
    """(sequence, batch) pairs as the stores return them from `first_sequence` on."""
    async def contents():
        for n in range(count):
            base = first_offset + n * records_each
            yield first_sequence + n, build_batch([Record(base + i, 1000 + n) for i in range(records_each)])
    return contents()


def test_a_journal_from_before_first_sequence_still_replays():
    state = {"type": "topic", "name": "t", "id": str(uuid.uuid4()), "replication_factor": 1,
             "partitions": [[ADDRESS, 7]], "configs": {}}
    topic = Topic.from_state(state)
    assert topic.partition_states == [PartitionState(ADDRESS, 7, 0)]
    topic.partition_states[0].first_sequence = 3
    assert Topic.from_state(topic.state()).partition_states == [PartitionState(ADDRESS, 7, 3)]


async def test_the_rebuild_starts_at_a_batch_above_offset_zero():
    offsets, _, _ = await recovered_state(stored(5, 10, 3), 5, 11)
    assert (offsets.first_sequence, offsets.first_offset, offsets.next_offset) == (5, 10, 16)
    assert offsets.sequence_of(11) == 5 and offsets.sequence_of(15) == 7


async def test_with_nothing_stored_from_first_sequence_the_log_goes_on_at_the_log_start():
    offsets, _, _ = await recovered_state(stored(0, 0, 0), 8, 16)
    assert (len(offsets), offsets.next_sequence, offsets.next_offset, offsets.first_offset) == (0, 8, 16, 16)
