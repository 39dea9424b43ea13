"""Group state and committed offsets, durable on their own journal (Kafka's __consumer_offsets).

Entries may be written by concurrent tasks, so their order on the journal is
not the order of the changes; each carries a serial number taken when the
change is made, and replay applies them in serial order.

A group's answers follow its writes in order, as Kafka's coordinator answers
a request only once everything written before it is committed: a member with
two heartbeats in flight must not learn the later state first.

The journal is compacted into the latest state entry of every group and the
offsets of every group, stamped after every entry before them: an entry
stamped earlier but written after the compaction sorts before the snapshot,
which already holds its change.
"""

from __future__ import annotations

from collections.abc import Callable

import trio

from gateway.group.committed_offsets import OffsetStore
from gateway.storage.journal import Journal, since_carried_over

GROUP_STATES = ("classic_group", "consumer_group")


class GroupLog:
    def __init__(self, journal: Journal, offsets: OffsetStore):
        self.journal = journal
        self.offsets = offsets
        self._serial = 0
        self._nursery: trio.Nursery | None = None
        self._pending: dict[str, list[trio.Event]] = {}  # per group: writes not yet durable
        self._states: dict[str, dict] = {}  # per group: its latest state entry, as replay would end with
        self.on_change: Callable[[dict], None] = lambda entry: None  # told each change, in order

    async def replay(self, nursery: trio.Nursery) -> list[dict]:
        """Every entry so far in the order of the changes; then the log takes writes."""
        entries = self.restore(await self.journal.replay())
        self._nursery = nursery
        self.journal.compact_with(nursery, self.snapshot)
        return entries

    def restore(self, journaled: list[dict]) -> list[dict]:
        """The entries in the order of the changes, since the journal was last carried over to a
        cluster; serials go on above every entry, those carried over too."""
        ordered = sorted(journaled, key=lambda e: e["serial"])
        self._serial = ordered[-1]["serial"] if ordered else 0
        entries = since_carried_over(ordered)
        for entry in entries:
            self._track(entry)
        return entries

    def _stamped(self, entry: dict) -> dict:
        self._serial += 1
        stamped = {**entry, "serial": self._serial}
        self._track(stamped)
        return stamped

    def _track(self, entry: dict) -> None:
        if entry["type"] in GROUP_STATES:
            self._states[entry["group"]] = entry
        elif entry["type"] == "group_deleted":
            self._states.pop(entry["group"], None)

    def snapshot(self) -> list[dict]:
        """The state a replay of the journal so far ends with, as entries.

        Groups' journaled states rather than their live ones: a rebalance in
        progress restarts from the last state written, as it would without compaction.
        """
        return [self._stamped(entry) for entry in [*self._states.values(), *self.offsets.entries()]]

    async def write(self, entry: dict) -> None:
        """Record a change and return once the stores hold it."""
        await self.journal.write(self._changed(entry))

    async def commit(self, group_id: str, entry: dict | None) -> None:
        """Write `entry` (None: nothing to write) and return once it and every
        earlier write of the group are durable."""
        earlier = list(self._pending.get(group_id, ()))
        if entry is not None:
            pending = self._pending.setdefault(group_id, [])
            done = trio.Event()
            pending.append(done)
            try:
                await self.write(entry)
            finally:
                done.set()
                pending.remove(done)
                if not pending:
                    self._pending.pop(group_id, None)
        for write in earlier:
            await write.wait()

    def append(self, entry: dict) -> None:
        """Record a change that nobody waits for (a timeout's consequence)."""
        self.journal.write_soon(self._nursery, self._changed(entry))

    def _changed(self, entry: dict) -> dict:
        stamped = self._stamped(entry)
        self.on_change(stamped)
        return stamped
