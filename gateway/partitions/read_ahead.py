"""Reads of batches older than a partition's in-memory tail, read ahead.

A consumer catching up on old data asks for one run of batches after
another. Two runs of the same length are kept ahead of it: one waiting in
memory while the next is on its way from the stores, so that its next fetch
finds its batches in memory and the stores' reading overlaps the consumer's
taking in of its answers (with one run ahead, each fetch waited for the
rest of a read begun only when the previous one was answered). What all
partitions hold ahead, and the runs on their way (counted at the size of the
reader's last run until they land), stay within read.ahead.bytes.total
(`ReadAheadMemory`): a run that would not fit is not read ahead, and the
reader's next fetch reads its batches from the stores when it asks.
"""

from __future__ import annotations

from itertools import takewhile
from typing import Awaitable, Callable

import trio

# (first sequence, count) -> [(sequence, content)], contiguous from `first`
StoreRead = Callable[[int, int], Awaitable[list[tuple[int, object]]]]

DEPTH = 2  # runs kept ahead of the reader, at most: memory held is DEPTH times its run


class ReadAheadMemory:
    """Bytes that the partitions' read-ahead windows hold and their runs in flight take, all
    together, and the bound they stay within."""

    def __init__(self, limit: int):
        self.limit = limit
        self.held = 0

    def fits(self, size: int) -> bool:
        return self.held + size <= self.limit


class ReadAhead:
    def __init__(self, read: StoreRead, memory: ReadAheadMemory):
        self._read = read
        self._memory = memory
        self._held = 0  # bytes of the window, counted in `memory`
        self._window: dict[int, object] = {}  # batches read ahead, contiguous, in order
        self._in_flight = range(0)  # the run on its way, right after the window
        self._next = 0  # the first sequence neither in the window nor in flight
        self._goal = 0  # read ahead up to here (exclusive)
        self._run = 1  # the length of the reader's runs
        self._run_bytes = 0  # the size of the reader's last run: what a run in flight is counted at
        self._wake = trio.Event()
        self._landed = trio.Event()
        self._forgotten = 0  # how often `forget` ran: a run in flight across one is dropped when it lands

    async def read(self, first: int, count: int, end: int) -> list[tuple[int, object]]:
        """Up to `count` contiguous batches from `first`; then batches up to
        `end` (exclusive) are read ahead for the next calls."""
        if first in self._in_flight:
            await self._landed.wait()
        if first in self._window:
            records = self._from_window(first, count)
        else:
            self.forget()  # a jump elsewhere: what is read ahead is of no use
            records = await self._read(first, count)
        if records:
            self._run_bytes = _size(records)
            self._ask_ahead(records[-1][0] + 1, count, end)
        return records

    def forget(self) -> None:
        """Drop what was read ahead, and what is being read (the stores may have cleaned it since)."""
        self._window = {}
        self._hold(-self._held)
        self._next = self._goal = 0
        self._forgotten += 1

    def _from_window(self, first: int, count: int) -> list[tuple[int, object]]:
        records = []
        for sequence in range(first, first + count):
            if sequence not in self._window:
                break
            records.append((sequence, self._window[sequence]))
        return records

    def _ask_ahead(self, after: int, count: int, end: int) -> None:
        """The reader goes on at `after`: what is before it is dropped, and runs of `count`
        are read ahead up to DEPTH of them, not past `end`."""
        for sequence in list(takewhile(after.__gt__, self._window)):
            self._hold(-memoryview(self._window.pop(sequence)).nbytes)
        if not self._window and self._next <= after:  # all read ahead was taken, or forgotten
            self._next = after
        self._goal, self._run = min(after + DEPTH * count, end), count
        if self._next < self._goal:
            self._wake.set()

    async def run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake = trio.Event()
            while self._next < self._goal and self._memory.fits(self._run_bytes):
                await self._read_next_run()

    async def _read_next_run(self) -> None:
        self._in_flight = range(self._next, min(self._next + self._run, self._goal))
        self._landed = trio.Event()
        forgotten, reserved = self._forgotten, self._run_bytes
        self._memory.held += reserved
        try:
            records = await self._read(self._in_flight.start, len(self._in_flight))
        finally:
            self._memory.held -= reserved
            self._in_flight = range(0)
            self._landed.set()
        if forgotten != self._forgotten:
            return
        if not records:
            self._goal = self._next  # the stores have nothing more now: the reader's next read asks again
            return
        self._window.update(records)
        self._hold(_size(records))
        self._next = records[-1][0] + 1

    def _hold(self, change: int) -> None:
        self._held += change
        self._memory.held += change


def _size(records: list[tuple[int, object]]) -> int:
    """Bytes of the batches' contents (zmq frames or any buffer)."""
    return sum(memoryview(content).nbytes for _, content in records)
