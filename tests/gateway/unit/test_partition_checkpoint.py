"""Partition checkpoints: the file format round-trips, damage is always a DecodeError, and
what a partition keeps comes back from one as it was."""

from array import array

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.partitions.offset_index import OffsetIndex
from gateway.partitions.producer_state import AppendedBatch, ProducerEntry, ProducerStates
from protocol.errors import DecodeError
from protocol.journal.partition_checkpoint import PartitionCheckpoint, decode_checkpoint, encode_checkpoint

int64 = st.integers(-(2**63), 2**63 - 1)
columns = st.integers(0, 50).flatmap(lambda n: st.tuples(*(st.lists(int64, min_size=n, max_size=n)
                                                          for _ in range(3))))
checkpoints = st.builds(
    lambda cols, *rest: PartitionCheckpoint(*rest[:5], *(array("q", c) for c in cols), *rest[5:]),
    columns, st.text(max_size=40), st.text(max_size=40), st.integers(0, 2**40), st.integers(0, 2**40),
    st.integers(0, 2**40),
    st.lists(st.tuples(st.integers(0, 2**40), st.integers(0, 2**15), int64, st.integers(-1, 10),
                       st.lists(st.lists(st.integers(0, 2**31), min_size=4, max_size=4), max_size=5))
             .map(list), max_size=5),
    st.fixed_dictionaries({"ongoing": st.lists(st.lists(st.integers(0, 2**40), min_size=2, max_size=2)),
                           "ending": st.lists(st.lists(st.integers(0, 2**40), min_size=2, max_size=2)),
                           "aborted": st.lists(st.lists(st.integers(0, 2**40), min_size=3, max_size=3))}),
)


@given(checkpoints)
def test_round_trip(checkpoint):
    assert decode_checkpoint(encode_checkpoint(checkpoint)) == checkpoint


@given(checkpoints, st.data())
def test_damaged_bytes_raise_only_decode_error(checkpoint, data):
    damaged = bytearray(encode_checkpoint(checkpoint))
    position = data.draw(st.integers(0, len(damaged) - 1))
    action = data.draw(st.sampled_from(["flip", "cut"]))
    if action == "flip":
        damaged[position] ^= data.draw(st.integers(1, 255))
    else:
        del damaged[position:]
    with pytest.raises(DecodeError):
        decode_checkpoint(bytes(damaged))


def test_index_and_producers_come_back_as_they_were():
    index = OffsetIndex(5, 100)
    for n in range(4):
        index.add(5 + n, 100 + 10 * n, 10, 1_000 + n, 500)
    index.drop_before(6)
    states = ProducerStates()
    entry = states.producers[7] = ProducerEntry(3, last_timestamp=1_234, coordinator_epoch=2)
    entry.batches.extend(AppendedBatch(n * 10, n * 10 + 9, 100 + 10 * n, 5 + n) for n in range(3))
    states.transactions.begin(8, 130)
    states.transactions.begin(9, 110)
    states.transactions.end(9, 125, aborted=True)
    checkpoint = decode_checkpoint(encode_checkpoint(PartitionCheckpoint(
        "topic-id", "ADDRESS", index.first_sequence, index.next_offset, index.dropped_bytes, *index.columns(),
        states.state(), states.transactions.state())))
    restored = OffsetIndex.restored(checkpoint.first_sequence, checkpoint.next_offset, checkpoint.dropped_bytes,
                                    (checkpoint.base_offsets, checkpoint.max_timestamps, checkpoint.byte_ends))
    assert (restored.first_sequence, restored.next_offset, restored.size_bytes) == (6, 140, 1500)
    assert [restored.range_of(s) for s in range(6, 9)] == [index.range_of(s) for s in range(6, 9)]
    assert restored.first_reaching(1_002) == index.first_reaching(1_002) == 7
    producers = ProducerStates.restored(checkpoint.producers, checkpoint.transactions)
    assert producers.active() == states.active()
    assert list(producers.producers[7].batches) == list(entry.batches)
    assert producers.transactions.aborted_between(0, 200) == states.transactions.aborted_between(0, 200)
    assert producers.transactions.last_stable_offset(200) == states.transactions.last_stable_offset(200) == 130
