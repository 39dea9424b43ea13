"""SASL/OAUTHBEARER (RFC 7628) with unsecured JWTs (alg "none"), for development, as Kafka's
unsecured validator has it: the principal is a claim (`sub` by default), `exp` is required and
checked, `iat` if present must not be in the future, required scopes must all be granted.

A token refused is answered with RFC 7628's JSON error as a challenge; the client acknowledges
it with a lone 0x01, and then the exchange fails.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable
from dataclasses import dataclass

from protocol.sasl.exchange import SaslFailure

MECHANISM = "OAUTHBEARER"
SEPARATOR = "\x01"
INITIAL = re.compile(r"(?P<gs2>[ny],(?:a=(?P<authzid>[^,]*))?,)\x01auth=Bearer (?P<token>[^\x01]+)\x01"
                     r"(?P<extensions>(?:[A-Za-z]+=[\x21-\x7E \t\r\n]*\x01)*)\x01")


@dataclass(frozen=True)
class UnsecuredValidator:
    """Kafka's unsecuredValidator* JAAS options."""

    principal_claim: str = "sub"
    scope_claim: str = "scope"
    required_scope: tuple[str, ...] = ()
    clock_skew_ms: int = 0


@dataclass(frozen=True)
class Token:
    principal: str
    expires_ms: int


def _part(text: str, what: str) -> dict:
    try:
        value = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    except (binascii.Error, ValueError):
        raise SaslFailure(f"the JWT {what} is not base64url-encoded JSON") from None
    if not isinstance(value, dict):
        raise SaslFailure(f"the JWT {what} is not a JSON object")
    return value


def validated(token: str, validator: UnsecuredValidator, now_ms: int) -> Token:
    parts = token.split(".")
    if len(parts) != 3:
        raise SaslFailure("an unsecured JWS has three dot-separated parts")
    if parts[2]:
        raise SaslFailure("a signed JWS is not accepted by the unsecured validator")
    header, claims = _part(parts[0], "header"), _part(parts[1], "claims")
    if header.get("alg") != "none":
        raise SaslFailure(f"the JWS alg is {header.get('alg')!r}, not 'none'")
    principal = claims.get(validator.principal_claim)
    if not isinstance(principal, str) or not principal.strip():
        raise SaslFailure(f"no {validator.principal_claim!r} claim naming the principal")
    expires, issued = claims.get("exp"), claims.get("iat")
    if not isinstance(expires, int | float) or isinstance(expires, bool):
        raise SaslFailure("no expiration time (exp) in the JWT")
    skew = validator.clock_skew_ms
    if now_ms - skew >= expires * 1000:
        raise SaslFailure("the token has expired")
    if isinstance(issued, int | float) and (issued * 1000 > now_ms + skew or issued > expires):
        raise SaslFailure("the token is issued in the future or after its expiration")
    scope = claims.get(validator.scope_claim, [])
    granted = set(scope.split() if isinstance(scope, str) else scope if isinstance(scope, list) else ())
    if not granted.issuperset(validator.required_scope):
        raise SaslFailure("the token lacks a required scope")
    return Token(principal, int(expires * 1000))


def _claimed(token: str, claim: str) -> str | None:
    """The principal a token refused names, if it names one: for the log."""
    try:
        principal = _part(token.split(".")[1], "claims").get(claim)
    except (SaslFailure, IndexError):
        return None
    return principal if isinstance(principal, str) else None


class OAuthBearerExchange:
    def __init__(self, validator: UnsecuredValidator, now_ms: Callable[[], int]):
        self._validator = validator
        self._now_ms = now_ms
        self.complete = False
        self.claimed: str | None = None
        self.expires_ms: int | None = None
        self.token_owner = None
        self._refused: SaslFailure | None = None  # told to the client, awaiting its acknowledgement

    def step(self, token: bytes) -> bytes:
        if self._refused is not None:
            raise self._refused
        if self.complete:
            raise SaslFailure("token after the OAUTHBEARER exchange completed")
        match = INITIAL.fullmatch(token.decode("utf-8", "replace"))
        if match is None:
            raise SaslFailure("malformed OAUTHBEARER client initial response")
        try:
            found = validated(match["token"], self._validator, self._now_ms())
        except SaslFailure as failure:
            self.claimed = _claimed(match["token"], self._validator.principal_claim)
            error = json.dumps({"status": "invalid_token"})
            self._refused = SaslFailure(failure.reason, error)
            return error.encode()
        self.claimed = found.principal
        if match["authzid"] and match["authzid"] != found.principal:
            raise SaslFailure("authorization id differs from the principal")
        self.complete, self.expires_ms = True, found.expires_ms
        return b""
