"""Group state and committed offsets, durable on their own journal (Kafka's __consumer_offsets).

Entries may be written by concurrent tasks, so their order on the journal is
not the order of the changes; each carries a serial number taken when the
change is made, and replay applies them in serial order.
"""

from __future__ import annotations

import trio

from ..journal import Journal


class GroupLog:
    def __init__(self, journal: Journal):
        self.journal = journal
        self._serial = 0
        self._nursery: trio.Nursery | None = None

    async def replay(self, nursery: trio.Nursery) -> list[dict]:
        """Every entry so far in the order of the changes; then the log takes writes."""
        entries = sorted(await self.journal.replay(), key=lambda e: e["serial"])
        self._serial = entries[-1]["serial"] if entries else 0
        self._nursery = nursery
        return entries

    def _stamped(self, entry: dict) -> dict:
        self._serial += 1
        return {**entry, "serial": self._serial}

    async def write(self, entry: dict) -> None:
        """Record a change and return once the stores hold it."""
        await self.journal.write(self._stamped(entry))

    def append(self, entry: dict) -> None:
        """Record a change that nobody waits for (a timeout's consequence)."""
        self._nursery.start_soon(self.journal.write, self._stamped(entry))
