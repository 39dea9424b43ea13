"""What the server asks of a SASL listener's connection state, wherever it is kept.

Before a connection has authenticated, and while it re-authenticates, only
ApiVersions, SaslHandshake and SaslAuthenticate are served; any other request
closes it, as Kafka closes it (without an answer). After a SaslHandshake v0,
the client's frames are bare SASL tokens, answered by bare tokens. Once the
session's lifetime (connections.max.reauth.ms, KIP-368) has passed, the next
request closes the connection.
"""

from __future__ import annotations

from typing import Protocol

from protocol.kafka.apis import by_name

DURING_AUTHENTICATION = frozenset(by_name(name).key for name in ("ApiVersions", "SaslHandshake", "SaslAuthenticate"))


class Authentication(Protocol):
    raw_tokens: bool  # the next frame is a bare SASL token

    def refusal(self, api_key: int, now: float) -> str | None:
        """Why a request of `api_key` arriving at `now` (trio time) ends the connection; None if served."""

    async def raw_token(self, token: bytes) -> bytes:
        """The bare token answering a bare token (CloseConnection when authentication fails)."""
