"""Each TLS listener's SSL context, rotated live by its `listener.name.NAME.ssl.*` dynamic configs (KIP-226).

Every SSL and SASL_SSL listener starts with its static SSL settings (the
`ssl.*` ones under its own static `listener.name.NAME.ssl.*`). A per-broker
dynamic config under the listener's prefix (its name in lower case) overrides
one of Kafka's reconfigurable SSL configs, its keystore's and truststore's
(SslConfigs.RECONFIGURABLE_CONFIGS), for that listener alone: its context is
rebuilt and serves the connections accepted from then on, while those already
open keep theirs. Kafka's SslFactory checks the new stores first; so does
`check`, before a change is journaled: they must load, the listener keeps a
truststore it had none of, and the keystore's certificate keeps its
distinguished name and every subject alternative name unless
ssl.allow.dn.changes or ssl.allow.san.changes. A refusal answers Kafka's
"Invalid dynamic configuration" and logs why. The listener's other dynamic SSL
configs set under its prefix (ssl.client.auth, ssl.protocol, ...) are stored
but not applied, as Kafka's SslFactory takes none but the stores. As Kafka
reloads a store file whose modification time changed when a broker's configs
are altered, even to the same values, `reconfigure` rebuilds a listener whose
store files changed on disk.
"""

from __future__ import annotations

import dataclasses
import os
import ssl
from dataclasses import dataclass

import structlog

from gateway.configs.dynamic_config_rules import LISTENER_PREFIX_ONLY, SETTINGS
from gateway.kafka_error import KafkaError
from gateway.server.tls import PEM_BLOCK, TlsSettingsError, normalized_pem, server_context
from gateway.settings.kinds import NotAllowed
from gateway.settings.table import SslSettings
from protocol.kafka.error_codes import ErrorCode

log = structlog.get_logger()

# How Java numbers a subject alternative name's kind (X509Certificate.getSubjectAlternativeNames).
SAN_KINDS = {"RFC822Name": 1, "DNSName": 2, "DirectoryName": 4, "UniformResourceIdentifier": 6, "IPAddress": 7,
             "RegisteredID": 8}


class RotationRefused(Exception):
    """The listener's new SSL configs cannot serve it; the message says why."""


@dataclass(frozen=True)
class Identity:
    """What a rotated keystore's certificate must keep: its subject and subject alternative names."""

    subject: str  # RFC 4514
    names: frozenset[tuple[int, str]]


@dataclass(frozen=True)
class ServedTls:
    """One listener's TLS as it serves now, and what it was built from."""

    overrides: dict[str, str]  # its dynamic listener.name.NAME.ssl.* configs, by base name
    settings: SslSettings
    context: ssl.SSLContext
    identity: Identity
    stamps: tuple[int | None, ...]  # the modification times of its store files


class ListenerTls:
    def __init__(self, static: dict[str, SslSettings], protocols: dict[str, str]):
        """The TLS listeners (their security protocol by name) served with their static settings (by name);
        TlsSettingsError if those do not serve."""
        self.static = static
        self.protocols = protocols
        try:
            self.served = {listener: self._built(listener, {}) for listener in protocols}
        except RotationRefused as exc:
            raise TlsSettingsError(str(exc)) from None

    def context(self, listener: str) -> ssl.SSLContext:
        return self.served[listener].context

    def check(self, configs: dict[str, str]) -> None:
        """KafkaError as Kafka refuses the broker's dynamic configs `configs` once changed, if a listener's
        SSL configs among them change and cannot serve it."""
        for listener, served in self.served.items():
            overrides = _overrides(listener, configs)
            if overrides == served.overrides:
                continue
            try:
                self._rotated(listener, served, overrides)
            except RotationRefused as exc:
                log.warning("ssl_reconfiguration_refused", listener=listener, reason=str(exc))
                raise KafkaError(ErrorCode.INVALID_REQUEST, "Invalid dynamic configuration") from None

    def reconfigure(self, configs: dict[str, str]) -> None:
        """Serve new connections with the SSL configs among the broker's dynamic `configs`, and with store
        files changed on disk; a listener they cannot serve keeps its TLS, logged."""
        for listener, served in self.served.items():
            overrides = _overrides(listener, configs)
            if overrides == served.overrides and _stamps(served.settings) == served.stamps:
                continue
            try:
                self.served[listener] = self._rotated(listener, served, overrides)
            except RotationRefused as exc:
                log.error("ssl_reconfiguration_failed", listener=listener, reason=str(exc))
                continue
            log.info("ssl_reconfigured", listener=listener, subject=self.served[listener].identity.subject,
                     configs=sorted(overrides))


    def _rotated(self, listener: str, served: ServedTls, overrides: dict[str, str]) -> ServedTls:
        """The listener's TLS under new configs, checked against its TLS now as Kafka's SslFactory checks it."""
        try:
            new = self._built(listener, overrides)
            _check_compatible(self.static[listener], served, new)
        except RotationRefused as exc:
            raise RotationRefused(f"Validation of dynamic config update of SSLFactory failed: {exc}") from None
        return new

    def _built(self, listener: str, overrides: dict[str, str]) -> ServedTls:
        """The listener's TLS with these dynamic configs over its static settings."""
        settings = dataclasses.replace(self.static[listener], **{
            SETTINGS[name].attribute: SETTINGS[name].kind.parse(text) for name, text in overrides.items()
            if name in SETTINGS})
        try:
            settings.check_served(listener, self.protocols[listener])
        except NotAllowed as exc:
            raise RotationRefused(str(exc)) from None
        # Kafka's PEM stores take no store password (its DefaultSslEngineFactory's words)
        if "ssl.keystore.password" in overrides:
            raise RotationRefused("SSL key store password cannot be specified with PEM format, only key password "
                                  "may be specified")
        if "ssl.truststore.password" in overrides:
            raise RotationRefused("SSL trust store password cannot be specified for PEM format.")
        stamps = _stamps(settings)  # before reading: a file changed meanwhile is read again
        try:
            context = server_context(settings)
        except TlsSettingsError as exc:
            raise RotationRefused(str(exc)) from None
        return ServedTls(overrides, settings, context, _identity(settings), stamps)


def _overrides(listener: str, configs: dict[str, str]) -> dict[str, str]:
    """The listener's reconfigurable SSL configs among `configs`, by base name (Kafka's prefix is the
    listener's name in lower case)."""
    prefix = f"listener.name.{listener.lower()}."
    return {name.removeprefix(prefix): text for name, text in configs.items()
            if name.startswith(prefix) and name.removeprefix(prefix) in LISTENER_PREFIX_ONLY}


def _check_compatible(static: SslSettings, served: ServedTls, new: ServedTls) -> None:
    """RotationRefused unless the new TLS may replace the one served, by Kafka's SslFactory's rules."""
    if _has_truststore(new.settings) and not _has_truststore(served.settings):
        raise RotationRefused("Cannot add SSL truststore to an existing listener for which no truststore was "
                              "configured.")
    old_identity, identity = served.identity, new.identity
    if not static.ssl_allow_dn_changes and identity.subject.lower() != old_identity.subject.lower():
        raise RotationRefused(f"Keystore DistinguishedName does not match: existing={old_identity.subject}, "
                              f"new={identity.subject}")
    if not static.ssl_allow_san_changes and not identity.names >= old_identity.names:
        raise RotationRefused(f"Keystore SubjectAltNames do not match: existing={_names(old_identity)}, "
                              f"new={_names(identity)}")


def _has_truststore(settings: SslSettings) -> bool:
    return (settings.ssl_truststore_location, settings.ssl_truststore_certificates) != (None, None)


def _stamps(settings: SslSettings) -> tuple[int | None, ...]:
    return tuple(_modified(path) for path in (settings.ssl_keystore_location, settings.ssl_truststore_location))


def _modified(path: str | None) -> int | None:
    if path is None:
        return None
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


def _identity(settings: SslSettings) -> Identity:
    """The subject and subject alternative names of the keystore's own certificate, the first of its chain."""
    from cryptography import x509  # here, not at the top: its import would add ~20 ms to every start-up

    try:
        if settings.ssl_keystore_location is not None:
            with open(settings.ssl_keystore_location) as file:
                text = file.read()
        else:
            text = normalized_pem(settings.ssl_keystore_certificate_chain.value)
        block = next(found for found in PEM_BLOCK.finditer(text) if found["label"] == "CERTIFICATE")
        certificate = x509.load_pem_x509_certificate(normalized_pem(block[0]).encode())
    except (OSError, StopIteration, ValueError, TlsSettingsError):
        raise RotationRefused("the keystore holds no readable certificate") from None
    try:
        extension = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        extension = ()
    return Identity(certificate.subject.rfc4514_string(),
                    frozenset((SAN_KINDS.get(type(name).__name__, 0), str(name.value)) for name in extension))


def _names(identity: Identity) -> str:
    """Subject alternative names as Java writes their set of [kind, value] lists."""
    return "[" + ", ".join(f"[{kind}, {value}]" for kind, value in sorted(identity.names)) + "]"
