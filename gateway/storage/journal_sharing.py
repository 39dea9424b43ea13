"""What a journaled store needs of a cluster of gateways to be served by every gateway
(gateway/cluster/shared_journals.py has it).

Only the controller writes a journal: it shares the store's state (the
entries a compaction would write) after replay and after every change;
another gateway (`follows`) mirrors that state and forwards the changes it is
sent to the controller, answering with the controller's outcome.
"""

from __future__ import annotations

from typing import Protocol

import trio


class JournalSharing(Protocol):
    follows: bool

    async def share(self, entries: list[dict]) -> None: ...

    def shared(self) -> list[dict]: ...

    async def forward(self, change: dict) -> dict: ...


class JournaledState:
    """A store whose state is its own journal's entries of type `ENTRY`: replayed at start, compacted
    into `_snapshot()`, and in a cluster shared by the controller and mirrored by the other gateways."""

    ENTRY: str

    def __init__(self, journal, sharing: JournalSharing | None):
        self.journal = journal
        self.sharing = sharing

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        self._replay(await self.journal.replay())
        await self._share()
        async with trio.open_nursery() as nursery:
            self.journal.compact_with(nursery, self._snapshot)
            task_status.started()
            await trio.sleep_forever()

    def _replay(self, entries: list[dict]) -> None:
        for entry in entries:
            if entry["type"] == self.ENTRY:
                self._apply(entry)

    def _apply(self, entry: dict) -> None:
        raise NotImplementedError

    def _snapshot(self) -> list[dict]:
        raise NotImplementedError

    def _clear(self) -> None:
        raise NotImplementedError

    async def _share(self) -> None:
        if self.sharing is not None:
            await self.sharing.share(self._snapshot())

    def replace(self, entries: list[dict]) -> None:
        """Mirror the state the controller shared (a gateway that follows it)."""
        self._clear()
        self._replay(entries)

    @property
    def follows(self) -> bool:
        return self.sharing is not None and self.sharing.follows

    async def changed(self, change: dict) -> dict:
        """The outcome of a change this gateway was sent: applied here, or by the controller it follows."""
        return await (self.forwarded(change) if self.follows else self.apply_forwarded(change))

    async def apply_forwarded(self, change: dict) -> dict:
        """Apply a change, journaled and shared: one this gateway was sent, or (the controller) another gateway."""
        raise NotImplementedError

    async def forwarded(self, change: dict) -> dict:
        """The controller's outcome of a change, its state mirrored here at once."""
        result = await self.sharing.forward(change)
        self.replace(self.sharing.shared())
        return result
