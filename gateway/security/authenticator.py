"""The SASL mechanisms a gateway offers, built from its settings: PLAIN users from the JAAS
configuration, SCRAM credentials and delegation tokens from their stores, the unsecured OAUTHBEARER validator."""

from __future__ import annotations

import secrets
from collections.abc import Callable

import structlog

from gateway.settings.jaas import CLOCK_SKEW, OAUTHBEARER_MODULE, PLAIN_MODULE, module_options
from gateway.settings.table import BrokerSettings
from gateway.wall_clock import now_ms
from protocol.sasl.exchange import Exchange
from protocol.sasl.oauthbearer import OAuthBearerExchange, UnsecuredValidator
from protocol.sasl.plain import PlainExchange
from protocol.sasl.scram import MECHANISMS as SCRAM_MECHANISMS
from protocol.sasl.scram import ScramCredential, ScramExchange, TokenCredential

log = structlog.get_logger()

CredentialLookup = Callable[[str, str], ScramCredential | None]  # user, mechanism name
TokenLookup = Callable[[str, str], TokenCredential | None]  # token id, mechanism name


def unsecured_validator(options: dict[str, str]) -> UnsecuredValidator:
    """Kafka's OAuthBearerUnsecuredValidatorCallbackHandler options."""
    default = UnsecuredValidator()
    return UnsecuredValidator(
        principal_claim=options.get("unsecuredValidatorPrincipalClaimName", default.principal_claim),
        scope_claim=options.get("unsecuredValidatorScopeClaimName", default.scope_claim),
        required_scope=tuple(options.get("unsecuredValidatorRequiredScope", "").split()),
        clock_skew_ms=int(options.get(CLOCK_SKEW, default.clock_skew_ms)))


class Authenticator:
    def __init__(self, broker: BrokerSettings, credentials: CredentialLookup, tokens: TokenLookup):
        self.mechanisms = tuple(broker.sasl_enabled_mechanisms.split(","))
        self.max_reauth_ms = broker.connections_max_reauth_ms
        self.failure_delay_s = broker.connection_failed_authentication_delay_ms / 1000
        self.protocols = dict(broker.listener_security_protocol_map)
        self._credentials = credentials
        self._tokens = tokens
        plain = module_options(broker.sasl_jaas_config, PLAIN_MODULE)
        self._plain_users = {key.removeprefix("user_"): value for key, value in plain.items()
                             if key.startswith("user_")}
        self._validator = unsecured_validator(module_options(broker.sasl_jaas_config, OAUTHBEARER_MODULE))
        sasl_listeners = [listener for listener in broker.bound_listeners() if self.uses_sasl(listener.name)]
        if "PLAIN" in self.mechanisms and not self._plain_users and sasl_listeners:
            log.warning("plain_without_users", reason="sasl.jaas.config names no user_NAME in a PlainLoginModule "
                                                      "entry: every PLAIN authentication fails")

    def uses_sasl(self, listener: str) -> bool:
        return self.protocols.get(listener, "").startswith("SASL_")

    def exchange(self, mechanism: str) -> Exchange:
        """A new exchange of an enabled mechanism."""
        if mechanism == "PLAIN":
            return PlainExchange(self._plain_users)
        if mechanism == "OAUTHBEARER":
            return OAuthBearerExchange(self._validator, now_ms)
        scram = SCRAM_MECHANISMS[mechanism]
        return ScramExchange(scram, lambda user: self._credentials(user, scram.name), secrets.token_urlsafe(24),
                             lambda token_id: self._tokens(token_id, scram.name))
