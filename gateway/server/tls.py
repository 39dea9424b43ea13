"""TLS for SSL listeners: the server context from Kafka's PEM settings, the handshake, the principal.

The handshake runs in the connection's own task, bounded by
`ssl.handshake.timeout.ms`, so a slow or silent client holds nothing but its
own connection. A client certificate's subject, written as Java writes a
distinguished name (RFC 2253, most specific attribute first), goes through
`ssl.principal.mapping.rules` to name the connection's principal.
"""

from __future__ import annotations

import os
import re
import ssl
import tempfile
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass

import structlog
import trio

from gateway.server.principal import ANONYMOUS, KafkaPrincipal, user
from gateway.settings.principal_rules import PrincipalRule, mapped_name
from gateway.settings.table import SslSettings

log = structlog.get_logger()

VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}
PEM_BLOCK = re.compile(r"-----BEGIN (?P<label>[A-Z0-9 ]+)-----(?P<body>.*?)-----END (?P=label)-----", re.DOTALL)
# Attribute names Java writes as keywords in an RFC 2253 name; others keep Python's name.
KEYWORDS = {"commonName": "CN", "countryName": "C", "localityName": "L", "stateOrProvinceName": "ST",
            "organizationName": "O", "organizationalUnitName": "OU", "streetAddress": "STREET",
            "domainComponent": "DC", "userId": "UID"}
SPECIAL = re.compile(r'([,+"\\<>;])')
# OpenSSL's reasons for bytes that are no TLS record: a client speaking something else.
NOT_TLS = frozenset({"WRONG_VERSION_NUMBER", "HTTP_REQUEST", "UNKNOWN_PROTOCOL", "PACKET_LENGTH_TOO_LONG",
                     "RECORD_LENGTH_MISMATCH", "UNEXPECTED_RECORD"})


class TlsSettingsError(Exception):
    """The SSL settings cannot make a server context (a file missing, a key not matching, ...)."""


def server_context(settings: SslSettings) -> ssl.SSLContext:
    """The context every SSL listener serves with; TlsSettingsError says what is wrong."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _versions(context, settings)
    _ciphers(context, settings.ssl_cipher_suites)
    keystore = settings.ssl_keystore_location or "ssl.keystore.key and ssl.keystore.certificate.chain"
    with _failing_as(f"cannot load the private key and certificate chain of {keystore} (a PEM key that "
                     f"ssl.key.password opens if it is encrypted, then its certificates)"):
        _keystore(context, settings)
    context.verify_mode = CLIENT_AUTH[settings.ssl_client_auth]
    truststore = settings.ssl_truststore_location or "ssl.truststore.certificates"
    with _failing_as(f"cannot load the CA certificates of {truststore}"):
        _truststore(context, settings)
    return context


@contextmanager
def _failing_as(what: str):
    try:
        yield
    except (OSError, ssl.SSLError) as exc:  # an SSLError is an OSError without a file name
        detail = exc.reason if isinstance(exc, ssl.SSLError) else exc.strerror
        raise TlsSettingsError(f"{what}: {detail or exc}") from None


def _versions(context: ssl.SSLContext, settings: SslSettings) -> None:
    highest = VERSIONS.get(settings.ssl_protocol, max(VERSIONS.values()))
    allowed = [VERSIONS[v] for v in settings.ssl_enabled_protocols.split(",") if VERSIONS[v] <= highest]
    if not allowed:
        raise TlsSettingsError(f"ssl.enabled.protocols {settings.ssl_enabled_protocols} has no version up to "
                               f"ssl.protocol {settings.ssl_protocol}")
    context.minimum_version, context.maximum_version = min(allowed), max(allowed)


def _ciphers(context: ssl.SSLContext, names: tuple[str, ...]) -> None:
    if not names:
        return
    for name in names:
        try:
            ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).set_ciphers(name)
        except ssl.SSLError:
            raise TlsSettingsError(f"ssl.cipher.suites: {name} is not an OpenSSL cipher name (as `openssl "
                                   f"ciphers` lists them; TLS 1.3 suites cannot be chosen)") from None
    context.set_ciphers(":".join(names))


def _keystore(context: ssl.SSLContext, settings: SslSettings) -> None:
    # never None: OpenSSL would ask for an encrypted key's password on the terminal
    password = settings.ssl_key_password.value if settings.ssl_key_password else ""
    if settings.ssl_keystore_location is not None:
        context.load_cert_chain(settings.ssl_keystore_location, password=password)
        return
    # ssl takes a key and chain from files only: a private file, gone once read
    key, chain = settings.ssl_keystore_key.value, settings.ssl_keystore_certificate_chain.value
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "keystore.pem")
        with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as file:
            file.write(normalized_pem(key) + normalized_pem(chain))
        context.load_cert_chain(path, password=password)


def _truststore(context: ssl.SSLContext, settings: SslSettings) -> None:
    if settings.ssl_truststore_location is not None:
        context.load_verify_locations(cafile=settings.ssl_truststore_location)
    elif settings.ssl_truststore_certificates is not None:
        context.load_verify_locations(cadata=normalized_pem(settings.ssl_truststore_certificates.value))
    elif context.verify_mode != ssl.CERT_NONE:
        context.load_default_certs(ssl.Purpose.CLIENT_AUTH)


def normalized_pem(text: str) -> str:
    """PEM blocks with their base64 in lines of 64, as OpenSSL reads them: a properties file's
    continued lines run an inline certificate into one line, which Kafka accepts."""
    blocks = []
    for block in PEM_BLOCK.finditer(text):
        body = "".join(block["body"].split())
        lines = [body[at:at + 64] for at in range(0, len(body), 64)]
        blocks.append("\n".join([f"-----BEGIN {block['label']}-----", *lines, f"-----END {block['label']}-----"]))
    if not blocks:
        raise TlsSettingsError("an inline SSL setting holds no PEM block (-----BEGIN ...-----)")
    return "\n".join(blocks) + "\n"


def subject_name(certificate: dict) -> str:
    """The certificate's subject as Java's X500Principal.getName() writes it (RFC 2253)."""
    return ",".join("+".join(f"{KEYWORDS.get(kind, kind)}={_escaped(value)}" for kind, value in rdn)
                    for rdn in reversed(certificate.get("subject", ())))


def _escaped(value: str) -> str:
    value = SPECIAL.sub(r"\\\1", value)
    if value.endswith(" "):
        value = value[:-1] + "\\ "
    if value.startswith(("#", " ")):
        value = "\\" + value
    return value


def principal_of(stream: trio.SSLStream, rules: tuple[PrincipalRule, ...]) -> KafkaPrincipal:
    """User:<mapped subject> with a client certificate, else User:ANONYMOUS.
    ValueError when no rule maps the subject (Kafka refuses the client then)."""
    certificate = stream.getpeercert()
    if not certificate:
        return ANONYMOUS
    subject = subject_name(certificate)
    name = mapped_name(rules, subject)
    if name is None:
        raise ValueError(f"no ssl.principal.mapping.rules rule maps the subject {subject}")
    return user(name)


@dataclass(frozen=True)
class TlsAcceptor:
    """Turns an accepted stream of an SSL listener into a TLS stream with its principal."""

    context_of: Callable[[str], ssl.SSLContext]  # a listener's context now, by its name
    handshake_timeout_s: float
    rules: tuple[PrincipalRule, ...]

    async def handshake(self, stream: trio.SocketStream, peer: str, listener: str
                        ) -> tuple[trio.SSLStream, KafkaPrincipal] | None:
        """The TLS stream and its principal; None, logged and closed, if the handshake fails."""
        # Kafka clients close without TLS's close_notify: their end of stream is an end, not an attack,
        # since a cut request or response is incomplete by its size prefix
        tls = trio.SSLStream(stream, self.context_of(listener), server_side=True, https_compatible=True)
        secured = None
        try:
            secured = await self._secured(tls, peer, listener)
            return secured
        finally:
            if secured is None:  # failed, or cancelled at shutdown
                await trio.aclose_forcefully(tls)

    async def _secured(self, tls: trio.SSLStream, peer: str, listener: str
                       ) -> tuple[trio.SSLStream, KafkaPrincipal] | None:
        reason = None
        with trio.move_on_after(self.handshake_timeout_s) as timer:
            try:
                await tls.do_handshake()
                return tls, principal_of(tls, self.rules)
            except trio.BrokenResourceError as exc:
                reason = failure_reason(exc)
            except ValueError as exc:
                reason = str(exc)
        if timer.cancelled_caught:
            reason = f"no TLS handshake within ssl.handshake.timeout.ms ({self.handshake_timeout_s * 1000:.0f})"
        log.warning("tls_handshake_failed", peer=peer, listener=listener, reason=reason)
        return None


def failure_reason(exc: trio.BrokenResourceError) -> str:
    """Why a handshake failed, in words an operator acts on."""
    cause = exc.__cause__
    if not isinstance(cause, ssl.SSLError) or isinstance(cause, ssl.SSLEOFError):
        return "the client closed the connection during the handshake"
    if cause.reason in NOT_TLS:
        return f"the client does not speak TLS (a plaintext client on an SSL listener?): {cause.reason}"
    if isinstance(cause, ssl.SSLCertVerificationError):
        return f"client certificate refused: {cause.verify_message}"
    if cause.reason == "PEER_DID_NOT_RETURN_A_CERTIFICATE":
        return "the client sent no certificate (ssl.client.auth=required)"
    return f"TLS handshake failed: {cause.reason or cause}"
