"""Keyed one-shot deadlines, the way Kafka's coordinator schedules its timeouts.

Scheduling a key again replaces its deadline; a cancelled or replaced entry
stays in the heap and is skipped when it comes due.
"""

from __future__ import annotations

import heapq
import itertools
import math
from typing import Callable, Hashable

import structlog
import trio

log = structlog.get_logger()


class Timer:
    def __init__(self):
        self._entries: dict[Hashable, tuple[int, Callable[[], None]]] = {}
        self._heap: list[tuple[float, int, Hashable]] = []
        self._tokens = itertools.count()
        self._wake = trio.Event()

    def schedule(self, key: Hashable, delay_ms: float, callback: Callable[[], None]) -> None:
        token = next(self._tokens)
        self._entries[key] = (token, callback)
        heapq.heappush(self._heap, (trio.current_time() + delay_ms / 1000, token, key))
        self._wake.set()

    def cancel(self, key: Hashable) -> None:
        self._entries.pop(key, None)

    def is_scheduled(self, key: Hashable) -> bool:
        return key in self._entries

    async def run(self) -> None:
        while True:
            self._fire_due()
            self._wake = trio.Event()
            deadline = self._heap[0][0] if self._heap else math.inf
            with trio.move_on_at(deadline):
                await self._wake.wait()

    def _fire_due(self) -> None:
        now = trio.current_time()
        while self._heap and self._heap[0][0] <= now:
            _, token, key = heapq.heappop(self._heap)
            entry = self._entries.get(key)
            if entry is None or entry[0] != token:
                continue
            del self._entries[key]
            try:
                entry[1]()
            except Exception:
                # A bug in one group's timeout must not stop every other group's.
                log.exception("group_timer_failed", key=repr(key))


class Reply:
    """A response that a later event of the group completes (Kafka's response future)."""

    def __init__(self):
        self._done = trio.Event()
        self.value = None

    @property
    def ready(self) -> bool:
        return self._done.is_set()

    def send(self, value) -> bool:
        """Complete the reply; False if it already was."""
        if self._done.is_set():
            return False
        self.value = value
        self._done.set()
        return True

    async def receive(self):
        await self._done.wait()
        return self.value
