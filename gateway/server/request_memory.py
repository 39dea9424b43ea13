"""Bytes the gateway holds for clients: requests read but not yet answered, over all
connections (Kafka's queued.max.request.bytes), and responses built but not yet sent.

A connection reserves a request's size as soon as its size prefix is in, before the body is
read, and gives it back once the response is sent or dropped. A request is admitted if it fits
in the budget, or alone when nothing else is held: one larger than the whole budget still
passes, and every reservation belongs to a request that will be answered, so nothing waits for
ever.
"""

from __future__ import annotations

from typing import Callable

import trio

from gateway.observability.broker_metrics import QUEUED_REQUEST_BYTES


class HeldBytes:
    """A count of bytes held, and waits for it to fall."""

    def __init__(self):
        self.held = 0
        self._waiters = trio.lowlevel.ParkingLot()  # woken whenever bytes are given back

    def take(self, size: int) -> None:
        self.held += size

    def give_back(self, size: int) -> None:
        self.held -= size
        self._waiters.unpark_all()

    async def wait_until(self, condition: Callable[[], bool]) -> None:
        while not condition():
            await self._waiters.park()


class RequestMemory(HeldBytes):
    """queued.max.request.bytes over all connections; a negative `budget`: no bound, as Kafka's -1."""

    def __init__(self, budget: int = -1):
        super().__init__()
        self.budget = budget

    def _admits(self, size: int) -> bool:
        return self.budget < 0 or self.held == 0 or self.held + size <= self.budget

    async def wait_for_room(self) -> None:
        """Until a request could begin: the budget is not exhausted."""
        await self.wait_until(lambda: self._admits(1))

    async def reserve(self, size: int) -> None:
        await self.wait_until(lambda: self._admits(size))
        self.take(size)

    def take(self, size: int) -> None:
        super().take(size)
        QUEUED_REQUEST_BYTES.inc(size)

    def give_back(self, size: int) -> None:
        super().give_back(size)
        QUEUED_REQUEST_BYTES.dec(size)
