"""One SASL listener connection's authentication, as Kafka's SaslServerAuthenticator runs it.

handshake → authenticate → authenticated, and back to authenticate when the
client re-authenticates (KIP-368: a SaslHandshake v1+ on an authenticated
connection, the same mechanism, and it must end as the same principal). A
failed authentication is answered after connection.failed.authentication.delay.ms
and closes the connection; every failure is logged with the principal the
client claimed, its address, the mechanism and the reason, never a secret.
"""

from __future__ import annotations

from dataclasses import dataclass

import trio

from gateway.observability.broker_metrics import AUTHENTICATIONS
from gateway.security.authenticator import Authenticator
from gateway.server.answers import CloseConnection
from gateway.server.authentication import DURING_AUTHENTICATION
from gateway.server.principal import KafkaPrincipal, user
from gateway.wall_clock import now_ms
from protocol.kafka.apis import ALL, by_name
from protocol.kafka.error_codes import ErrorCode
from protocol.sasl.exchange import Exchange, SaslFailure

HANDSHAKE, AUTHENTICATE, AUTHENTICATED = "handshake", "authenticate", "authenticated"
SASL_AUTHENTICATE = by_name("SaslAuthenticate").key


@dataclass(frozen=True)
class Handshake:
    error_code: ErrorCode
    mechanisms: list[str]
    close: bool = False  # after the answer


@dataclass(frozen=True)
class Authenticated:
    token: bytes
    session_lifetime_ms: int


class SaslFailed(Exception):
    """An authentication failed: answer `message` with SASL_AUTHENTICATION_FAILED, then close."""

    def __init__(self, reason: str, message: str):
        super().__init__(reason)
        self.message = message


def _api_name(key: int) -> str:
    api = ALL.get(key)
    return api.name.upper() if api else f"key {key}"


class SaslSession:
    def __init__(self, authenticator: Authenticator, connection):
        self.authenticator = authenticator
        self.connection = connection
        self.stage = HANDSHAKE
        self.mechanism: str | None = None
        self.handshake_version = 1
        self.expires_at: float | None = None  # trio time the session ends, unless re-authenticated
        self._exchange: Exchange | None = None
        self._principal: KafkaPrincipal | None = None  # once authenticated, also while re-authenticating

    @property
    def raw_tokens(self) -> bool:
        return self.stage == AUTHENTICATE and self.handshake_version == 0

    @property
    def reauthenticating(self) -> bool:
        return self._principal is not None and self.stage != AUTHENTICATED

    def refusal(self, api_key: int, now: float) -> str | None:
        if self.stage == AUTHENTICATED:
            if self.expires_at is not None and now >= self.expires_at:
                self._log_failure("session expired without re-authentication")
                return "SASL session expired: the client did not re-authenticate within connections.max.reauth.ms"
            return None
        allowed = {SASL_AUTHENTICATE} if self.stage == AUTHENTICATE else DURING_AUTHENTICATION - {SASL_AUTHENTICATE}
        if api_key not in allowed:
            during = "handshake" if self.stage == HANDSHAKE else "authentication"
            self._log_failure(f"{_api_name(api_key)} request before authentication")
            return f"Unexpected Kafka request of type {_api_name(api_key)} during SASL {during}."
        return None

    async def handshake(self, mechanism: str, version: int) -> Handshake:
        """The mechanism chosen; an unknown one is answered after the failure delay, then closes."""
        enabled = list(self.authenticator.mechanisms)
        if self.stage == AUTHENTICATED and (version < 1 or mechanism != self.mechanism):
            return Handshake(ErrorCode.ILLEGAL_SASL_STATE, enabled)  # Kafka: no re-authentication, no close
        if mechanism not in enabled:
            self.mechanism = mechanism
            self._log_failure(f"unsupported mechanism; enabled: {','.join(enabled)}")
            await trio.sleep(self.authenticator.failure_delay_s)
            return Handshake(ErrorCode.UNSUPPORTED_SASL_MECHANISM, enabled, close=True)
        self.stage, self.mechanism, self.handshake_version = AUTHENTICATE, mechanism, version
        self._exchange = self.authenticator.exchange(mechanism)
        return Handshake(ErrorCode.NONE, enabled)

    async def authenticate(self, token: bytes) -> Authenticated:
        """The next token of the exchange under way (SaslFailed once the failure delay has passed)."""
        try:
            answer = self._exchange.step(token)
            if self._exchange.complete:
                return Authenticated(answer, self._completed())
            return Authenticated(answer, 0)
        except SaslFailure as failure:
            self._log_failure(failure.reason)
            await trio.sleep(self.authenticator.failure_delay_s)
            what = "re-authentication" if self.reauthenticating else "authentication"
            raise SaslFailed(failure.reason, failure.to_client or f"Authentication failed during {what} due to "
                             f"invalid credentials with SASL mechanism {self.mechanism}") from None

    async def raw_token(self, token: bytes) -> bytes:
        """After a SaslHandshake v0: bare tokens both ways; a failure closes without an answer."""
        try:
            return (await self.authenticate(token)).token
        except SaslFailed as failed:
            raise CloseConnection(f"SASL authentication failed: {failed}") from None

    def _completed(self) -> int:
        """Authenticated: the principal set, the session lifetime (ms, 0 for ever) started."""
        exchange, before = self._exchange, self._principal
        principal = user(exchange.token_owner or exchange.claimed, token_authenticated=exchange.token_owner is not None)
        if before is not None and principal != before:
            raise SaslFailure(f"principal changed during re-authentication from {before} to {principal}",
                              f"Cannot change principals during re-authentication from {before.type}."
                              f"{before.name}: {principal.type}.{principal.name}")
        lifetime_ms = self._lifetime_ms()
        self._count("reauthenticated" if self.reauthenticating else "authenticated")
        self.expires_at = None if lifetime_ms is None else trio.current_time() + lifetime_ms / 1000
        self.stage, self._principal, self._exchange = AUTHENTICATED, principal, None
        self.connection.principal = principal
        self.connection.log.info("authenticated", principal=str(principal), mechanism=self.mechanism,
                                 token_authenticated=principal.token_authenticated,
                                 handshake_version=self.handshake_version, session_lifetime_ms=lifetime_ms or 0)
        return lifetime_ms or 0

    def _lifetime_ms(self) -> int | None:
        """How long the session lasts, as Kafka reckons it: connections.max.reauth.ms (0: for ever), and
        no longer than the credential (an OAUTHBEARER or a delegation token) lasts, whether that setting is 0 or not."""
        max_ms, expires_ms = self.authenticator.max_reauth_ms, self._exchange.expires_ms
        if expires_ms is None:
            return max_ms or None
        left_ms = max(0, expires_ms - now_ms())
        return min(left_ms, max_ms) if max_ms else left_ms

    def _count(self, result: str) -> None:
        # a mechanism the client names but is not enabled would let clients make labels without end
        mechanism = self.mechanism if self.mechanism in self.authenticator.mechanisms else "other"
        AUTHENTICATIONS.labels(self.connection.listener, mechanism, result).inc()

    def _log_failure(self, reason: str) -> None:
        self._count("failed")
        claimed = self._exchange.claimed if self._exchange is not None else None
        principal = f"User:{claimed}" if claimed else self._principal and str(self._principal)
        self.connection.log.warning("authentication_failed", principal=principal,
                                    peer=self.connection.peer, listener=self.connection.listener,
                                    mechanism=self.mechanism, reason=reason)


def sessions(authenticator: Authenticator):
    """The listeners' factory of connection states: a SaslSession on a SASL listener, else None."""
    def session(connection) -> SaslSession | None:
        return SaslSession(authenticator, connection) if authenticator.uses_sasl(connection.listener) else None
    return session
