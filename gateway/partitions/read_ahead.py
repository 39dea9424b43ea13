"""Reads of batches older than a partition's in-memory tail, one window ahead.

A consumer catching up on old data asks for one run of batches after
another. While it takes in one answer, the next run of the same length is
already on its way from the stores, so its next fetch finds the batches in
memory instead of waiting for a mesh round trip.
"""

from __future__ import annotations

from typing import Awaitable, Callable

import trio

# (first sequence, count) -> [(sequence, content)], contiguous from `first`
StoreRead = Callable[[int, int], Awaitable[list[tuple[int, object]]]]


class ReadAhead:
    def __init__(self, read: StoreRead):
        self._read = read
        self._window: dict[int, object] = {}  # the run read ahead, by sequence
        self._wanted: range | None = None  # the next run to read ahead
        self._in_flight = range(0)
        self._wake = trio.Event()
        self._landed = trio.Event()
        self._forgotten = 0  # how often `forget` ran: a run in flight across one is dropped when it lands

    async def read(self, first: int, count: int, end: int) -> list[tuple[int, object]]:
        """Up to `count` contiguous batches from `first`; then batches up to
        `end` (exclusive) are read ahead for the next call."""
        if first in self._in_flight:
            await self._landed.wait()
        if first in self._window:
            records = self._from_window(first, count)
        else:
            records = await self._read(first, count)
        if records:
            after = records[-1][0] + 1
            self._ask_ahead(range(after, min(after + count, end)))
        return records

    def forget(self) -> None:
        """Drop what was read ahead, and what is being read (the stores may have cleaned it since)."""
        self._window = {}
        self._forgotten += 1

    def _from_window(self, first: int, count: int) -> list[tuple[int, object]]:
        records = []
        for sequence in range(first, first + count):
            if sequence not in self._window:
                break
            records.append((sequence, self._window[sequence]))
        return records

    def _ask_ahead(self, wanted: range) -> None:
        if wanted and wanted.start not in self._window and wanted.start not in self._in_flight:
            self._wanted = wanted
            self._wake.set()

    async def run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake = trio.Event()
            self._in_flight, self._wanted = self._wanted, None
            self._landed = trio.Event()
            forgotten = self._forgotten
            try:
                window = dict(await self._read(self._in_flight.start, len(self._in_flight)))
                self._window = window if forgotten == self._forgotten else {}
            finally:
                self._in_flight = range(0)
                self._landed.set()
