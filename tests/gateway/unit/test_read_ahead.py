"""ReadAhead: old batches come from memory when a consumer reads on in order."""

from contextlib import asynccontextmanager

import trio
import trio.testing

from gateway.partitions.read_ahead import ReadAhead, ReadAheadMemory


class Stores:
    """A stand-in for the mesh: batch n is b"n"; records the reads asked of it."""

    def __init__(self, length: int, slow: frozenset = frozenset()):
        self.length = length
        self.slow = slow  # reads from these take 0.1 s, the others 0.01 s
        self.asked: list[tuple[int, int]] = []

    async def read(self, first: int, count: int):
        self.asked.append((first, count))
        await trio.sleep(0.1 if first in self.slow else 0.01)
        return [(n, str(n).encode()) for n in range(first, min(first + count, self.length))]


@asynccontextmanager
async def reading_ahead(stores: Stores, memory: ReadAheadMemory | None = None):
    """A ReadAhead over `stores` (by default with room for all it reads ahead), running until the block ends."""
    ahead = ReadAhead(stores.read, memory or ReadAheadMemory(1 << 20))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(ahead.run)
        yield ahead
        nursery.cancel_scope.cancel()


async def test_sequential_reads_find_the_next_run_in_memory():
    stores = Stores(100)
    async with reading_ahead(stores) as ahead:
        got = []
        first = 0
        while first < 40:
            records = await ahead.read(first, 10, 40)
            got += records
            first = records[-1][0] + 1
            await trio.sleep(0.05)  # the consumer takes in its answer
    assert got == [(n, str(n).encode()) for n in range(40)]
    assert stores.asked == [(0, 10), (10, 10), (20, 10), (30, 10)]  # each once, none past `end`


async def read_while_reading_ahead(*, forget: bool) -> tuple[list, list[tuple[int, int]]]:
    """Read 5..9 while they are being read ahead (forgotten meanwhile if `forget`): what the
    read returns, and the reads the stores were asked."""
    stores = Stores(100)
    async with reading_ahead(stores) as ahead:
        await ahead.read(0, 5, 100)
        await trio.testing.wait_all_tasks_blocked()  # the read ahead of 5..9 is on its way
        if forget:  # the stores cleaned meanwhile
            ahead.forget()
        records = await ahead.read(5, 5, 100)
    return records, stores.asked


async def test_a_read_during_the_read_ahead_waits_for_it_instead_of_asking_twice():
    records, asked = await read_while_reading_ahead(forget=False)
    assert records == [(n, str(n).encode()) for n in range(5, 10)]
    assert asked[:2] == [(0, 5), (5, 5)]


async def test_a_run_in_flight_when_the_stores_cleaned_is_not_served():
    records, asked = await read_while_reading_ahead(forget=True)
    assert records == [(n, str(n).encode()) for n in range(5, 10)]
    assert asked[:3] == [(0, 5), (5, 5), (5, 5)]  # asked again once it landed


async def test_a_jump_elsewhere_reads_from_the_stores():
    stores = Stores(100)
    async with reading_ahead(stores) as ahead:
        await ahead.read(0, 5, 100)
        await trio.sleep(0.05)
        assert await ahead.read(50, 2, 100) == [(50, b"50"), (51, b"51")]
    assert (50, 2) in stores.asked



async def test_two_runs_are_kept_ahead_of_a_reader_that_takes_its_time():
    stores = Stores(100)
    async with reading_ahead(stores) as ahead:
        await ahead.read(0, 10, 100)
        await trio.sleep(0.05)  # the consumer takes in its answer: both runs ahead land meanwhile
        assert stores.asked == [(0, 10), (10, 10), (20, 10)]
        assert await ahead.read(10, 10, 100) == [(n, str(n).encode()) for n in range(10, 20)]
        await trio.sleep(0.05)
    assert stores.asked == [(0, 10), (10, 10), (20, 10), (30, 10)]  # the run after those read once


async def test_nothing_is_read_ahead_past_the_end():
    stores = Stores(100)
    async with reading_ahead(stores) as ahead:
        await ahead.read(0, 10, 15)
        await trio.sleep(0.05)
    assert stores.asked == [(0, 10), (10, 5)]


async def test_a_jump_while_a_run_is_in_flight_reads_ahead_from_where_the_reader_went():
    stores = Stores(100, slow=frozenset({5}))
    async with reading_ahead(stores) as ahead:
        await ahead.read(0, 5, 100)
        await trio.testing.wait_all_tasks_blocked()  # 5..9 on its way, slowly
        assert await ahead.read(50, 5, 100) == [(n, str(n).encode()) for n in range(50, 55)]
        await trio.sleep(0.2)  # the run in flight lands, dropped; then the reader's next runs
    assert stores.asked == [(0, 5), (5, 5), (50, 5), (55, 5), (60, 5)]


async def test_partitions_read_ahead_only_within_the_shared_bound():
    memory = ReadAheadMemory(limit=45)  # bytes: a run of 10 batches from 10 on is 20 bytes
    first, second = Stores(100), Stores(100)
    peak = 0
    async with reading_ahead(first, memory) as one, reading_ahead(second, memory) as other:
        await one.read(0, 10, 100)  # runs of 10 (10 bytes): both ahead of it fit
        await trio.sleep(0.05)
        assert memory.held == 40  # 10..19 and 20..29
        assert await other.read(40, 10, 100) == [(n, str(n).encode()) for n in range(40, 50)]
        for _ in range(10):  # its 20 bytes a run would not fit: nothing ahead, each read asked when it comes
            peak = max(peak, memory.held)
            await trio.sleep(0.01)
        assert await other.read(50, 10, 100) == [(n, str(n).encode()) for n in range(50, 60)]
        one.forget()  # e.g. its partition closed: its memory goes to the other's runs
        assert await other.read(60, 10, 100) == [(n, str(n).encode()) for n in range(60, 70)]
        await trio.sleep(0.05)
        assert memory.held == 40  # 70..79 and 80..89
    assert peak <= memory.limit
    assert second.asked == [(40, 10), (50, 10), (60, 10), (70, 10), (80, 10)]


async def test_a_run_on_its_way_counts_against_the_bound():
    memory = ReadAheadMemory(limit=30)  # a run of 10 from 10 on is 20 bytes: one fits, not two
    stores = Stores(100, slow=frozenset({20}))
    async with reading_ahead(stores, memory) as ahead:
        await ahead.read(10, 10, 100)
        await trio.testing.wait_all_tasks_blocked()  # 20..29 on its way, counted at 20 bytes
        assert memory.held == 20
        other = Stores(100)
        async with reading_ahead(other, memory) as second:
            await second.read(40, 10, 100)
            await trio.sleep(0.05)
        assert other.asked == [(40, 10)]  # nothing ahead while the first's run took the room
