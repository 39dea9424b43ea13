"""SASL/PLAIN (RFC 4616): one token, [authzid] NUL authcid NUL password, checked against known users."""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from protocol.sasl.exchange import SaslFailure

MECHANISM = "PLAIN"


class PlainExchange:
    def __init__(self, users: Mapping[str, str]):
        self._users = users  # password by user name
        self.complete = False
        self.claimed: str | None = None
        self.expires_ms = None
        self.token_owner = None

    def step(self, token: bytes) -> bytes:
        if self.complete:
            raise SaslFailure("PLAIN takes one token", "Authentication failed: unexpected token")
        parts = token.decode("utf-8", "replace").split("\0")
        if len(parts) != 3:
            raise SaslFailure(f"{len(parts)} tokens instead of 3",
                              f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(parts)}")
        authorization_id, username, password = parts
        self.claimed = username or None
        if not username:
            raise SaslFailure("no username", "Authentication failed: username not specified")
        if not password:
            raise SaslFailure("no password", "Authentication failed: password not specified")
        known = self._users.get(username)
        # compared in constant time, and a dummy compare for unknown users: the time tells nothing
        if not hmac.compare_digest((known or "\0").encode(), password.encode()) or known is None:
            raise SaslFailure("invalid username or password", "Authentication failed: Invalid username or password")
        if authorization_id and authorization_id != username:
            raise SaslFailure("authorization id differs from the username", "Authentication failed: Client "
                              "requested an authorization id that is different from username")
        self.complete = True
        return b""
