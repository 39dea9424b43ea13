"""Producer ids, unique for the life of the cluster.

Ids are handed out from blocks; the end of each block is written to the
journal before any id of it is used, so a restarted gateway starts past
every id it may have given out. In a cluster of gateways the controller
also journals whole blocks for the other gateways (`take_block`).
"""

from __future__ import annotations

import trio

BLOCK = 1000


class ProducerIds:
    def __init__(self, journal):
        self.journal = journal
        self._next = 0
        self._end = 0  # of the block this gateway hands ids out from
        self._limit = 0  # no id at or above it was ever given out
        self._lock = trio.Lock()

    def replay(self, entry: dict) -> None:
        self._limit = max(self._limit, entry["limit"])
        self._next = self._end = self._limit

    def entries(self) -> list[dict]:
        """The journal entry of the last block taken, if any (for the journal's compaction)."""
        return [{"type": "producer_ids", "limit": self._limit}] if self._limit else []

    async def allocate(self) -> int:
        async with self._lock:
            if self._next >= self._end:
                self._next = await self._take()
                self._end = self._next + BLOCK
            self._next += 1
            return self._next - 1

    async def take_block(self) -> tuple[int, int]:
        """A block of ids for another gateway: its first id and its end."""
        async with self._lock:
            first = await self._take()
            return first, first + BLOCK

    async def _take(self) -> int:
        first = self._limit
        await self.journal.write({"type": "producer_ids", "limit": first + BLOCK})
        self._limit = first + BLOCK
        return first
