"""What every mechanism's exchange shares: its failure and its interface."""

from __future__ import annotations

from typing import Protocol


class SaslFailure(Exception):
    """Authentication failed. `reason` is for the broker's log; `to_client` is the message Kafka sends
    the client (None: Kafka's generic one, which tells nothing of why). Neither holds a secret."""

    def __init__(self, reason: str, to_client: str | None = None):
        super().__init__(reason)
        self.reason = reason
        self.to_client = to_client


class Exchange(Protocol):
    """One authentication's server side."""

    complete: bool
    claimed: str | None  # the user the client claims to be, once its first token is read
    expires_ms: int | None  # when the credential expires (epoch ms), if it does
    token_owner: str | None  # whose delegation token authenticated, the session's user; None: the claimed user

    def step(self, token: bytes) -> bytes: ...
