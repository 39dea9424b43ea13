"""NativePartition alone: batches built from live and stored records, watermarks, times."""

import pytest
import trio

from gateway.kafka_error import KafkaError
from gateway.partitions.native_partition import BATCH_RECORDS, NativePartition
from protocol.kafka.error_codes import ErrorCode
from protocol.records import RecordBatch


def stored_partition(stored: dict[int, bytes]) -> tuple[NativePartition, list]:
    """A partition whose mesh holds `stored`; the list records each read asked of it."""
    reads = []

    async def read(subject, address, first, count):
        reads.append((first, count))
        await trio.lowlevel.checkpoint()
        return [(s, stored[s]) for s in range(first, first + count) if s in stored]

    return NativePartition("t", 0, "A" * 32, read), reads


def values(batches) -> list[tuple[int, bytes]]:
    return [(r.offset, r.value) for b in batches for r in RecordBatch(memoryview(b.data)).records()]


async def test_live_and_stored_records_become_one_batch():
    partition, reads = stored_partition({n: b"old-%d" % n for n in range(5)})
    partition.saw_head(4)
    for n in range(5, 8):
        partition.saw_record(n, b"new-%d" % n)
    batches = await partition.read(0, 1 << 20)
    assert values(batches) == [(n, b"old-%d" % n) for n in range(5)] + [(n, b"new-%d" % n) for n in range(5, 8)]
    assert reads == [(0, 5)]
    assert [r.key for r in RecordBatch(memoryview(batches[0].data)).records()] == [None] * 8
    assert await partition.read(0, 1 << 20) == batches  # kept, not read again
    assert reads == [(0, 5)]


async def test_sizes_and_counts_bound_batches():
    partition, _ = stored_partition({})
    for n in range(BATCH_RECORDS + 10):
        partition.saw_record(n, b"x" * 100)
    batches = await partition.read(0, 1 << 20)
    assert [(b.base_offset, b.last_offset) for b in batches] == [
        (0, BATCH_RECORDS - 1), (BATCH_RECORDS, BATCH_RECORDS + 9)]
    first_only = await partition.read(3, 1)  # the first batch is returned whatever its size
    assert len(first_only) == 1 and first_only[0].base_offset == 3
    assert await partition.read(BATCH_RECORDS + 10, 1 << 20) == []


async def test_unreadable_records_give_nothing():
    partition, _ = stored_partition({})
    partition.saw_head(9)
    assert partition.high_watermark == 10
    assert await partition.read(0, 1 << 20) == []


async def test_watermark_wakes_waiters():
    partition, _ = stored_partition({})
    waiter = trio.Event()
    partition.notify_on_data(waiter)
    partition.saw_head(0)
    assert waiter.is_set()
    again = trio.Event()
    partition.notify_on_data(again)
    partition.saw_record(0, b"seen already")
    assert not again.is_set()


async def test_times_are_when_first_seen():
    partition, _ = stored_partition({})
    partition.saw_record(0, b"a")
    await trio.sleep(0.01)
    partition.saw_record(1, b"b")
    partition.log_start_offset = 1
    times = [r.timestamp for b in await partition.read(0, 1 << 20) for r in RecordBatch(memoryview(b.data)).records()]
    assert times[0] < times[1]
    assert await partition.offset_for_timestamp(0) == (1, times[1])
    assert await partition.offset_for_timestamp(times[1] + 1) is None
    assert await partition.offset_of_max_timestamp() == (1, times[1])


async def test_produce_is_refused():
    partition, _ = stored_partition({})
    with pytest.raises(KafkaError) as refused:
        await partition.append(None)
    assert refused.value.code == ErrorCode.INVALID_TOPIC_EXCEPTION
