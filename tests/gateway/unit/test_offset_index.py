"""OffsetIndex: offsets to sequences, and the bytes of what it still indexes."""

import pytest

from gateway.partitions.offset_index import OffsetIndex


def indexed(sizes: list[int]) -> OffsetIndex:
    index = OffsetIndex(first_sequence=3, next_offset=100)
    for n, size in enumerate(sizes):
        index.add(3 + n, 100 + 10 * n, 10, 1_000 + n, size)
    return index


def test_offsets_map_to_the_batches_that_hold_them():
    index = indexed([5, 7, 11])
    assert [index.sequence_of(offset) for offset in (100, 109, 110, 129)] == [3, 3, 4, 5]
    assert index.range_of(4) == (110, 119)
    with pytest.raises(KeyError):
        index.sequence_of(130)


@pytest.mark.parametrize("drop_before, size", [(3, 23), (4, 18), (5, 11), (6, 0), (99, 0)])
def test_size_counts_the_batches_left(drop_before, size):
    index = indexed([5, 7, 11])
    index.drop_before(drop_before)
    assert index.size_bytes == size


def test_size_of_an_empty_index_is_zero():
    assert OffsetIndex().size_bytes == 0


@pytest.mark.parametrize("drop_before", [3, 4])
def test_batch_sizes_and_counts_within_bytes_hold_after_a_drop(drop_before):
    index = indexed([5, 7, 11])
    index.drop_before(drop_before)
    assert [index.size_of(sequence) for sequence in range(drop_before, 6)] == [5, 7, 11][drop_before - 3:]
    assert index.first_past(drop_before, index.size_bytes) is None
    assert index.first_past(drop_before, index.size_bytes - 1) == 5
    assert index.batches_within(4, 18) == 2 and index.batches_within(4, 17) == 1
