"""Delegation token requests over a raw connection, and SCRAM authentication with a token, for tests that check
what no client library lets them choose (owners, versions, periods) or that ask one chosen gateway."""

from __future__ import annotations

import base64
import uuid

from protocol.kafka.apis import by_name
from protocol.kafka.error_codes import ErrorCode
from protocol.sasl.scram import MECHANISMS as SCRAM
from tests.gateway.sasl_connection import RawConnection
from tests.gateway.sasl_setup import PLAIN_USERS, authenticate_plain
from tests.protocol.sasl.scram_client import ScramClient

CREATE, RENEW, EXPIRE, DESCRIBE = (by_name(f"{verb}DelegationToken") for verb in ("Create", "Renew", "Expire",
                                                                                    "Describe"))
SECRET = ("--delegation-token-secret-key", "a-secret-the-gateways-share")


def signed_in(port: int, user: str) -> RawConnection:
    """A connection authenticated with PLAIN as one of the gateway's PLAIN users."""
    connection = RawConnection(port)
    assert authenticate_plain(connection, user, PLAIN_USERS[user]).error_code == ErrorCode.NONE
    return connection


def create(connection: RawConnection, owner: str | None = None, renewers: tuple[str, ...] = (),
           max_lifetime_ms: int = -1, version: int = 3):
    Renewer = CREATE.Request.Renewers
    request = CREATE.Request(max_lifetime_ms=max_lifetime_ms, renewers=[
        Renewer(principal_type=kind, principal_name=name)
        for kind, _, name in (renewer.partition(":") for renewer in renewers)])
    if owner is not None:
        request.owner_principal_type, request.owner_principal_name = "User", owner
    return connection.call(CREATE, version, request)


def renew(connection: RawConnection, hmac: bytes, period_ms: int = -1):
    return connection.call(RENEW, 2, RENEW.Request(hmac=hmac, renew_period_ms=period_ms))


def expire(connection: RawConnection, hmac: bytes, period_ms: int = -1):
    return connection.call(EXPIRE, 2, EXPIRE.Request(hmac=hmac, expiry_time_period_ms=period_ms))


def described_ids(connection: RawConnection, owners: list[str] | None = None, version: int = 3) -> set[str]:
    Owner = DESCRIBE.Request.Owners
    answer = connection.call(DESCRIBE, version, DESCRIBE.Request(owners=None if owners is None else [
        Owner(principal_type="User", principal_name=owner) for owner in owners]))
    assert answer.error_code == ErrorCode.NONE
    return {token.token_id for token in answer.tokens}


def token_session(port: int, token_id: str, hmac: bytes, mechanism: str = "SCRAM-SHA-512") -> RawConnection | None:
    """A connection authenticated with the token (SCRAM, tokenauth=true), or None if the gateway refused it."""
    connection = RawConnection(port)
    assert connection.handshake(mechanism).error_code == ErrorCode.NONE
    client = ScramClient(SCRAM[mechanism], token_id, base64.b64encode(hmac).decode(), uuid.uuid4().hex,
                         extensions="tokenauth=true")
    first = connection.authenticate(client.first())
    if first is None or first.error_code != ErrorCode.NONE:
        return None
    final = connection.authenticate(client.final(first.auth_bytes))
    if final is None or final.error_code != ErrorCode.NONE:
        return None
    assert client.verifies(final.auth_bytes)
    return connection
