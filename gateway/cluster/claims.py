"""Claiming a CHP key: set it only if it is still at the sequence the claimer saw.

Every change of cluster state that two gateways could make at once (the
controller key, a partition's leader and epoch) goes through `KeyClaims`, so
that at most one of them wins. `compare_and_set` is that claim done by the
CHP server (its KVSET `cas` property). `WatchedClaims` does it with the
plain KVSET today's server has: it checks the sequence in the client's
mirror, sets, and decides by the rule the server's compare-and-set also
follows, that the first update of the key after the expected sequence wins.
Two claims racing both reach the server then, so the loser's value may still
land after the winner's (the winner rewrites it when it refreshes); only the
server-side check closes that window.
"""

from __future__ import annotations

from typing import Protocol

import trio

from gateway.chp.changes import ServerLost, Update
from gateway.chp.chp_client import ChpClient

CLAIM_TIMEOUT_S = 5.0  # a claim not seen applied by then is lost (the server may be gone)


class KeyClaims(Protocol):
    def sequence(self, key: str) -> int:
        """The key's sequence in the mirror; 0 when absent."""

    async def claim(self, key: str, value: bytes, expected_sequence: int, ttl: float | None = None) -> bool:
        """Set `key` to `value` if its sequence is still `expected_sequence`; whether it did."""


class WatchedClaims:
    def __init__(self, client: ChpClient):
        self.client = client

    def sequence(self, key: str) -> int:
        entry = self.client.hashmap.entries.get(key)
        return 0 if entry is None else entry.sequence

    async def claim(self, key: str, value: bytes, expected_sequence: int, ttl: float | None = None) -> bool:
        with self.client.watch() as changes:
            if self.sequence(key) != expected_sequence:
                return False
            with trio.move_on_after(CLAIM_TIMEOUT_S):
                await self.client.set(key, value, ttl)
                async for change in changes:
                    if isinstance(change, ServerLost):
                        return False
                    if isinstance(change, Update) and change.key == key and change.sequence > expected_sequence:
                        return change.value == value
        return False
