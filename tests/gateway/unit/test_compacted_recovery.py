"""A gateway recovering a partition from compacted batches: offsets, producers and
transactions come out as from the batches as produced."""

from gateway.partitions.partition_log import recovered_state
from protocol.records import ControlType, Record, RecordBatch, build_batch, build_control_batch
from protocol.records.compaction import rebuilt_batch


def emptied(content: bytes) -> bytes:
    return rebuilt_batch(RecordBatch(memoryview(content)), [])


async def contents(batches):
    for sequence, content in enumerate(batches):
        yield sequence, content


async def test_emptied_transactions_end_and_offsets_stay():
    data = build_batch([Record(0, 5, b"k", b"v"), Record(1, 5, b"j", b"w")], producer_id=7, producer_epoch=0,
                       base_sequence=0, transactional=True)
    commit = build_control_batch(ControlType.COMMIT, offset=2, timestamp=6, producer_id=7, producer_epoch=0,
                                 coordinator_epoch=3)
    after = build_batch([Record(3, 7, b"k", b"x")])
    produced = [data, commit, after]
    cleaned = [emptied(data), emptied(commit), after]
    recovered = [await recovered_state(contents(batches)) for batches in (produced, cleaned)]
    for offsets, producers, read in recovered:
        assert read == 3
        assert [offsets.range_of(sequence) for sequence in range(3)] == [(0, 1), (2, 2), (3, 3)]
        assert producers.transactions.last_stable_offset(4) == 4  # no transaction left open
        assert producers.producers[7].batches[-1].last_sequence == 1  # the producer's sequence kept
