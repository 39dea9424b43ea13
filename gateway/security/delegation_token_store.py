"""Delegation tokens (KIP-48), durable in the gateway's `tokens` journal, decided as Kafka's controller decides them.

A token's entry holds what Kafka's DelegationTokenRecord holds: its id, owner,
requester, renewers and its issue, expiry and maximum timestamps; never its
HMAC (HmacSHA512 of the id keyed by `delegation.token.secret.key`), which every
gateway derives with the key, the same on each as Kafka requires. Each change
of a token is one entry, a removal one without owner, so replay keeps the last
of each. In a cluster of gateways (`sharing`) the controller alone decides,
journals and shares them; every other gateway mirrors them and forwards
creations, renewals and expirations to it, as Kafka's brokers forward them to
the KRaft controller. The controller (or a lone gateway) removes expired
tokens every `delegation.token.expiry.check.interval.ms`.

A token authenticates over SCRAM with the base64 of its HMAC as password: as
Kafka, each gateway derives the token's credential for a mechanism (Kafka's
minimum iterations, a salt of its own) when it first needs it.
"""

from __future__ import annotations

import base64
import hmac
import os
import uuid
from dataclasses import dataclass, replace

import structlog
import trio

from gateway.kafka_error import KafkaError
from gateway.server.principal import KafkaPrincipal
from gateway.settings.table import BrokerSettings
from gateway.storage.journal import Journal
from gateway.storage.journal_sharing import JournaledState, JournalSharing
from gateway.wall_clock import now_ms
from protocol.kafka.error_codes import ErrorCode
from protocol.sasl.scram import MECHANISMS, MIN_ITERATIONS, ScramCredential, TokenCredential

log = structlog.get_logger()

ENTRY = "delegation_token"
LONG_MAX = 2**63 - 1
SALT_BYTES = 20


@dataclass(frozen=True)
class TokenInfo:
    token_id: str
    owner: KafkaPrincipal
    requester: KafkaPrincipal
    renewers: tuple[KafkaPrincipal, ...]
    issue_ms: int
    expiry_ms: int
    max_ms: int

    def expired(self, now: int) -> bool:
        return self.max_ms < now or self.expiry_ms < now

    def may_renew(self, principal: KafkaPrincipal) -> bool:
        """Kafka's check for renewing or expiring: the owner or a renewer."""
        return principal == self.owner or principal in self.renewers

    def owner_or_renewer(self, principal: KafkaPrincipal) -> bool:
        """Kafka's check for describing one's own tokens: the requester counts too."""
        return self.may_renew(principal) or principal == self.requester


def kafka_uuid() -> str:
    """A random id as Kafka's Uuid.randomUuid writes it: base64url, unpadded, never starting with '-'."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not text.startswith("-"):
            return text


def _later(now: int, period_ms: int) -> int:
    return min(now + period_ms, LONG_MAX)


class DelegationTokens(JournaledState):
    ENTRY = ENTRY

    def __init__(self, journal: Journal, broker: BrokerSettings, sharing: JournalSharing | None = None):
        super().__init__(journal, sharing)
        secret = broker.delegation_token_secret_key
        self._secret = None if secret is None else secret.value.encode()
        self.max_lifetime_ms = broker.delegation_token_max_lifetime_ms
        self.expiry_time_ms = broker.delegation_token_expiry_time_ms
        self.check_interval_s = broker.delegation_token_expiry_check_interval_ms / 1000
        self.tokens: dict[str, TokenInfo] = {}
        self._by_hmac: dict[bytes, str] = {}
        self._credentials: dict[tuple[str, str], ScramCredential] = {}  # by token id and mechanism, once derived
        self._lock = trio.Lock()

    @property
    def enabled(self) -> bool:
        return self._secret is not None

    def hmac(self, token_id: str) -> bytes:
        return hmac.digest(self._secret, token_id.encode(), "sha512")

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            await nursery.start(super().run)
            nursery.start_soon(self._remove_expired)
            task_status.started()

    def _snapshot(self) -> list[dict]:
        return [_entry(token) for token in self.tokens.values()]

    def _clear(self) -> None:
        self.tokens, self._by_hmac = {}, {}

    def replace(self, entries: list[dict]) -> None:
        """Mirror the tokens the controller shared, keeping the credentials derived for those still there."""
        super().replace(entries)
        self._credentials = {key: found for key, found in self._credentials.items() if key[0] in self.tokens}

    def _apply(self, entry: dict) -> None:
        token_id = entry["token_id"]
        if "owner" not in entry:  # a removal
            self._forget(token_id)
            return
        self.tokens[token_id] = _token(entry)
        if self.enabled:
            self._by_hmac[self.hmac(token_id)] = token_id

    def _forget(self, token_id: str) -> None:
        self.tokens.pop(token_id, None)
        for mechanism in MECHANISMS:
            self._credentials.pop((token_id, mechanism), None)
        if self.enabled:
            self._by_hmac.pop(self.hmac(token_id), None)

    def credential(self, token_id: str, mechanism: str) -> TokenCredential | None:
        """What SCRAM authenticates a token with, for `mechanism`; None for a token not known (or tokens off)."""
        token = self.tokens.get(token_id)
        if token is None or not self.enabled:
            return None
        key = (token_id, mechanism)
        if key not in self._credentials:
            self._credentials[key] = _scram_credential(mechanism, base64.b64encode(self.hmac(token_id)).decode())
        return TokenCredential(self._credentials[key], token.owner.name, token.expiry_ms)

    async def create(self, owner: KafkaPrincipal, requester: KafkaPrincipal, renewers: list[KafkaPrincipal],
                     max_lifetime_ms: int) -> TokenInfo:
        result = await self.changed({"op": "create", "owner": _principal_entry(owner),
                                      "requester": _principal_entry(requester),
                                      "renewers": [_principal_entry(p) for p in renewers],
                                      "max_lifetime_ms": max_lifetime_ms})
        return _token(result["token"])

    async def renew(self, principal: KafkaPrincipal, token_hmac: bytes, period_ms: int) -> int:
        """The token's new expiry timestamp."""
        return (await self.changed(_hmac_change("renew", principal, token_hmac, period_ms)))["expiry_ms"]

    async def expire(self, principal: KafkaPrincipal, token_hmac: bytes, period_ms: int) -> int:
        """The token's new expiry timestamp: now, and the token removed, for a negative period."""
        return (await self.changed(_hmac_change("expire", principal, token_hmac, period_ms)))["expiry_ms"]

    async def apply_forwarded(self, change: dict) -> dict:
        """Decide a change (this gateway's or, the controller, another's), journal and apply its outcome."""
        decide = {"create": self._create, "renew": self._renew, "expire": self._expire}[change["op"]]
        async with self._lock:  # decided on what the journal holds, in the order journaled
            if not self.enabled:
                raise KafkaError(ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, "delegation.token.secret.key is not set")
            entry, result = decide(change, now_ms())
            if entry is not None:
                await self._write([entry])
            return result

    async def _write(self, entries: list[dict]) -> None:
        for entry in entries:
            await self.journal.write(entry)
            self._apply(entry)
        await self._share()

    def _create(self, change: dict, now: int) -> tuple[dict, dict]:
        requested = change["max_lifetime_ms"]
        max_ms = _later(now, min(self.max_lifetime_ms, requested) if requested > 0 else self.max_lifetime_ms)
        entry = {"type": ENTRY, "token_id": kafka_uuid(), "owner": change["owner"],
                 "requester": change["requester"], "renewers": change["renewers"], "issue_ms": now,
                 "expiry_ms": min(max_ms, _later(now, self.expiry_time_ms)), "max_ms": max_ms}
        return entry, {"token": entry}

    def _renew(self, change: dict, now: int) -> tuple[dict, dict]:
        token = self._found(change)
        _check_alive(token, now)
        _check_renewer(token, change)
        requested = change["period_ms"]
        period = min(self.expiry_time_ms, requested) if requested > 0 else self.expiry_time_ms
        return self._expiring(token, min(token.max_ms, now + period))

    def _expire(self, change: dict, now: int) -> tuple[dict, dict]:
        token = self._found(change)
        _check_renewer(token, change)
        if change["period_ms"] < 0:
            return {"type": ENTRY, "token_id": token.token_id}, {"expiry_ms": now}
        _check_alive(token, now)
        return self._expiring(token, min(token.max_ms, _later(now, change["period_ms"])))

    @staticmethod
    def _expiring(token: TokenInfo, expiry_ms: int) -> tuple[dict, dict]:
        return _entry(replace(token, expiry_ms=expiry_ms)), {"expiry_ms": expiry_ms}

    def _found(self, change: dict) -> TokenInfo:
        """The token of the change's HMAC."""
        token_id = self._by_hmac.get(base64.b64decode(change["hmac"]))
        if token_id is None:
            raise KafkaError(ErrorCode.DELEGATION_TOKEN_NOT_FOUND, "no delegation token has this HMAC")
        return self.tokens[token_id]

    async def _remove_expired(self) -> None:
        while True:
            await trio.sleep(self.check_interval_s)
            async with self._lock:
                now = now_ms()
                expired = [token for token in self.tokens.values() if token.expired(now)]
                for token in expired:
                    log.info("delegation_token_expired", token_id=token.token_id, owner=str(token.owner))
                if expired:
                    await self._write([{"type": ENTRY, "token_id": token.token_id} for token in expired])


def _check_alive(token: TokenInfo, now: int) -> None:
    if token.expired(now):
        raise KafkaError(ErrorCode.DELEGATION_TOKEN_EXPIRED, "the delegation token has expired")


def _check_renewer(token: TokenInfo, change: dict) -> None:
    if not token.may_renew(_principal(change["principal"])):
        raise KafkaError(ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH, "neither the token's owner nor a renewer")


def _scram_credential(mechanism_name: str, password: str) -> ScramCredential:
    mechanism = MECHANISMS[mechanism_name]
    salt = os.urandom(SALT_BYTES)
    return ScramCredential.from_salted_password(
        mechanism, salt, mechanism.salted_password(password, salt, MIN_ITERATIONS), MIN_ITERATIONS)


def _hmac_change(op: str, principal: KafkaPrincipal, token_hmac: bytes, period_ms: int) -> dict:
    return {"op": op, "principal": _principal_entry(principal), "hmac": base64.b64encode(token_hmac).decode(),
            "period_ms": period_ms}


def _principal_entry(principal: KafkaPrincipal) -> list[str]:
    return [principal.type, principal.name]


def _principal(entry: list[str]) -> KafkaPrincipal:
    return KafkaPrincipal(*entry)


def _entry(token: TokenInfo) -> dict:
    return {"type": ENTRY, "token_id": token.token_id, "owner": _principal_entry(token.owner),
            "requester": _principal_entry(token.requester), "renewers": [_principal_entry(p) for p in token.renewers],
            "issue_ms": token.issue_ms, "expiry_ms": token.expiry_ms, "max_ms": token.max_ms}


def _token(entry: dict) -> TokenInfo:
    return TokenInfo(entry["token_id"], _principal(entry["owner"]), _principal(entry["requester"]),
                     tuple(_principal(p) for p in entry["renewers"]), entry["issue_ms"], entry["expiry_ms"],
                     entry["max_ms"])
