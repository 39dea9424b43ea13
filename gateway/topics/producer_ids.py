"""Producer ids, unique for the life of the cluster.

Ids are handed out from blocks; the end of each block is written to the
journal before any id of it is used, so a restarted gateway starts past
every id it may have given out.
"""

from __future__ import annotations

import trio

BLOCK = 1000


class ProducerIds:
    def __init__(self, journal):
        self.journal = journal
        self._next = 0
        self._limit = 0
        self._lock = trio.Lock()

    def replay(self, entry: dict) -> None:
        self._limit = max(self._limit, entry["limit"])
        self._next = self._limit

    def entries(self) -> list[dict]:
        """The journal entry of the last block taken, if any (for the journal's compaction)."""
        return [{"type": "producer_ids", "limit": self._limit}] if self._limit else []

    async def allocate(self) -> int:
        async with self._lock:
            if self._next >= self._limit:
                limit = self._next + BLOCK
                await self.journal.write({"type": "producer_ids", "limit": limit})
                self._limit = limit
            self._next += 1
            return self._next - 1
