"""Fetch long-polls waiting for a partition's high watermark to move."""

import trio


class WatermarkWaiters:
    def __init__(self):
        self._waiters: set[trio.Event] = set()

    def add(self, waiter: trio.Event) -> None:
        self._waiters.add(waiter)

    def discard(self, waiter: trio.Event) -> None:
        self._waiters.discard(waiter)

    def wake(self) -> None:
        for waiter in self._waiters:
            waiter.set()
        self._waiters.clear()
