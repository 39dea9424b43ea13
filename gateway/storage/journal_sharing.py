"""What a journaled store needs of a cluster of gateways to be served by every gateway
(gateway/cluster/shared_journals.py has it).

Only the controller writes a journal: it shares the store's state (the
entries a compaction would write) after replay and after every change;
another gateway (`follows`) mirrors that state and forwards the changes it is
sent to the controller, answering with the controller's outcome.
"""

from __future__ import annotations

from typing import Protocol


class JournalSharing(Protocol):
    follows: bool

    async def share(self, entries: list[dict]) -> None: ...

    def shared(self) -> list[dict]: ...

    async def forward(self, change: dict) -> dict: ...
