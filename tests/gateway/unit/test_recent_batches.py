"""The in-memory tail of a partition: bounded by bytes, read by sequence, invisible to the GC."""

import gc

from gateway.partitions.recent_batches import RecentBatches, StoredBatch


def filled(limit: int, sizes: list[int]) -> RecentBatches:
    tail = RecentBatches(limit)
    offset = 0
    for sequence, size in enumerate(sizes):
        tail.append(sequence, offset, offset + 1, memoryview(bytes([sequence % 256]) * size))
        offset += 2
    return tail


def test_keeps_the_newest_batches_within_the_limit_and_always_the_last():
    tail = filled(250, [100] * 5)
    assert (tail.first_sequence, len(tail), tail.bytes) == (3, 2, 200)
    tail.keep_within(10)
    assert (tail.first_sequence, len(tail), tail.bytes) == (4, 1, 100)


def test_reads_from_a_sequence_up_to_the_first_batch_past_the_bytes_asked():
    tail = filled(10_000, [100] * 10)
    assert tail.since(4, 250) == [StoredBatch(8 + 2 * i, 9 + 2 * i, 4 + i, bytes([4 + i]) * 100) for i in range(3)]
    assert [batch.sequence for batch in tail.since(9, 0)] == [9]
    assert [batch.sequence for batch in tail.since(2, 10**9)] == list(range(2, 10))


def test_drops_below_a_sequence_and_reads_on_after_dropping():
    tail = filled(10_000, [10] * 100)
    tail.drop_below(60)
    assert (tail.first_sequence, len(tail), tail.bytes) == (60, 40, 400)
    assert tail.since(70, 15)[0].base_offset == 140
    tail.drop_below(1000)
    assert (tail.first_sequence, len(tail), tail.bytes) == (None, 0, 0)


def test_the_collector_does_not_track_what_it_holds():
    tail = filled(10**9, [100] * 1000)
    gc.collect()
    assert not any(gc.is_tracked(entry) for entry in tail._entries)
