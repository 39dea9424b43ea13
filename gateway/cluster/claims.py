"""Claiming a CHP key: set it only if it is still at the sequence the claimer saw.

Every change of cluster state that two gateways could make at once (the
controller key, a partition's leader and epoch) goes through `KeyClaims`, so
that at most one of them wins: the CHP server applies the set only while the
key is at the expected sequence (its KVSET `cas` property), and the pair's
backup never forgets a claim the active server published (ARCHITECTURE.md,
"The CHP pair").
"""

from __future__ import annotations

from typing import Protocol

import trio

from gateway.chp.chp_client import ChpClient

CLAIM_TIMEOUT_S = 5.0  # a claim not seen applied by then counts as lost (the server may be gone)


class KeyClaims(Protocol):
    def sequence(self, key: str) -> int:
        """The key's sequence in the mirror; 0 when absent."""

    async def claim(self, key: str, value: bytes, expected_sequence: int, ttl: float | None = None) -> bool:
        """Set `key` to `value` if its sequence is still `expected_sequence`; whether it did."""


class ServerClaims:
    """Claims decided by the CHP server's compare-and-set."""

    def __init__(self, client: ChpClient):
        self.client = client

    def sequence(self, key: str) -> int:
        return self.client.sequence(key)

    async def claim(self, key: str, value: bytes, expected_sequence: int, ttl: float | None = None) -> bool:
        try:
            return await self.client.compare_and_set(key, value, expected_sequence, ttl, timeout=CLAIM_TIMEOUT_S)
        except trio.TooSlowError:  # the outcome never showed: act as the loser, the winner refreshes it
            return False
