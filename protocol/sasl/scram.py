"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677), the server's side, without channel binding.

The server keeps per user only what RFC 5802 asks of it: the salt, the
iteration count, StoredKey and ServerKey, derived once from the salted
password a client sends with AlterUserScramCredentials; never the password,
nor the salted password.

A client authenticates with a delegation token as Kafka's clients do: the
extension `tokenauth=true` after the nonce of its first message, the token id
as the username and the base64 of the token's HMAC as the password; the
session is then the token owner's.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Callable
from dataclasses import dataclass

from protocol.sasl.exchange import SaslFailure

MIN_ITERATIONS, MAX_ITERATIONS = 4096, 16384  # Kafka's bounds for both mechanisms


@dataclass(frozen=True)
class ScramMechanism:
    name: str
    hash_name: str
    type_id: int  # the mechanism's number in Describe/AlterUserScramCredentials

    def hash(self, data: bytes) -> bytes:
        return hashlib.new(self.hash_name, data).digest()

    def hmac(self, key: bytes, data: bytes) -> bytes:
        return hmac.digest(key, data, self.hash_name)

    def salted_password(self, password: str, salt: bytes, iterations: int) -> bytes:
        """Hi(password, salt, i): what a client sends to create a credential."""
        return hashlib.pbkdf2_hmac(self.hash_name, password.encode(), salt, iterations)


SHA_256 = ScramMechanism("SCRAM-SHA-256", "sha256", 1)
SHA_512 = ScramMechanism("SCRAM-SHA-512", "sha512", 2)
MECHANISMS = {mechanism.name: mechanism for mechanism in (SHA_256, SHA_512)}
BY_TYPE = {mechanism.type_id: mechanism for mechanism in (SHA_256, SHA_512)}


@dataclass(frozen=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    @classmethod
    def from_salted_password(cls, mechanism: ScramMechanism, salt: bytes, salted_password: bytes,
                             iterations: int) -> ScramCredential:
        client_key = mechanism.hmac(salted_password, b"Client Key")
        return cls(salt, mechanism.hash(client_key), mechanism.hmac(salted_password, b"Server Key"), iterations)


Credentials = Callable[[str], "ScramCredential | None"]  # a user's credential for the exchange's mechanism
TOKEN_AUTH = "tokenauth"  # Kafka's SCRAM extension naming a delegation token


@dataclass(frozen=True)
class TokenCredential:
    """A delegation token's credential for the exchange's mechanism, and whose session it opens until when."""

    credential: ScramCredential
    owner: str
    expires_ms: int


TokenCredentials = Callable[[str], "TokenCredential | None"]  # by token id


def no_tokens(token_id: str) -> None:
    return None


def _attributes(text: str) -> list[tuple[str, str]]:
    """RFC 5802 attribute=value pairs, comma-separated."""
    pairs = []
    for part in text.split(","):
        name, equals, value = part.partition("=")
        if len(name) != 1 or not equals:
            raise SaslFailure(f"malformed SCRAM attribute {part[:20]!r}")
        pairs.append((name, value))
    return pairs


def _extensions(parts: list[str]) -> dict[str, str]:
    """Kafka's extensions after the nonce of a client-first message, name=value each."""
    found = {}
    for part in parts:
        name, equals, value = part.partition("=")
        if not name or not equals:
            raise SaslFailure(f"malformed SCRAM extension {part[:20]!r}")
        found[name] = value
    return found


def _username(saslname: str) -> str:
    """A saslname decoded: =2C is a comma, =3D an equals sign, and no other = may appear."""
    if saslname.replace("=2C", "").replace("=3D", "").count("="):
        raise SaslFailure("invalid username encoding")
    return saslname.replace("=2C", ",").replace("=3D", "=")


def _b64decode(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except ValueError:
        raise SaslFailure(f"{what} is not base64") from None


class ScramExchange:
    """client-first → server-first, client-final → server-final; `nonce` is the server's share."""

    def __init__(self, mechanism: ScramMechanism, credentials: Credentials, nonce: str,
                 tokens: TokenCredentials = no_tokens):
        self.mechanism = mechanism
        self._credentials = credentials
        self._tokens = tokens
        self._server_nonce = nonce
        self.complete = False
        self.claimed: str | None = None
        self.token_owner: str | None = None
        self.expires_ms: int | None = None
        self._step = self._client_first
        self._credential: ScramCredential | None = None
        self._gs2_header = self._client_first_bare = self._server_first = ""
        self._nonce = ""

    def step(self, token: bytes) -> bytes:
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise SaslFailure("SCRAM message is not UTF-8") from None
        return self._step(text).encode()

    def _client_first(self, text: str) -> str:
        flag, _, rest = text.partition(",")
        authzid, _, bare = rest.partition(",")
        if flag not in ("n", "y"):
            raise SaslFailure("channel binding is not supported" if flag.startswith("p=") else "malformed gs2 header")
        if authzid and not authzid.startswith("a="):
            raise SaslFailure("malformed authorization id")
        parts = bare.split(",")
        attributes = _attributes(",".join(parts[:2]))
        if len(attributes) < 2 or attributes[0][0] != "n" or attributes[1][0] != "r" or not attributes[1][1]:
            raise SaslFailure("malformed client-first message")
        self.claimed = _username(attributes[0][1])
        if authzid and _username(authzid[2:]) != self.claimed:
            raise SaslFailure("authorization id differs from the username")
        self._credential = self._credential_of(self.claimed, _extensions(parts[2:]))
        self._gs2_header, self._client_first_bare = f"{flag},{authzid},", bare
        self._nonce = attributes[1][1] + self._server_nonce
        salt = base64.b64encode(self._credential.salt).decode()
        self._server_first = f"r={self._nonce},s={salt},i={self._credential.iterations}"
        self._step = self._client_final
        return self._server_first

    def _credential_of(self, name: str, extensions: dict[str, str]) -> ScramCredential:
        """The user's credential; with tokenauth=true (any case, as Java parses a boolean) the token's."""
        if extensions.get(TOKEN_AUTH, "").lower() != "true":
            credential = self._credentials(name)
            if credential is None:
                raise SaslFailure("unknown user or no credential for the mechanism")
            return credential
        token = self._tokens(name)
        if token is None:
            raise SaslFailure("unknown delegation token")
        self.token_owner, self.expires_ms = token.owner, token.expires_ms
        return token.credential

    def _client_final(self, text: str) -> str:
        without_proof, separator, proof = text.rpartition(",p=")
        if not separator:
            raise SaslFailure("client-final message without proof")
        attributes = dict(_attributes(without_proof))
        if attributes.get("c") != base64.b64encode(self._gs2_header.encode()).decode():
            raise SaslFailure("channel binding does not match the gs2 header")
        # Kafka's check: the nonce ends with the server's, since librdkafka before 2.6.1 puts its own
        # nonce in front once more; the proof covers the message as sent all the same.
        if not attributes.get("r", "").endswith(self._nonce):
            raise SaslFailure("nonce does not match")
        credential, mechanism = self._credential, self.mechanism
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        client_signature = mechanism.hmac(credential.stored_key, auth_message)
        client_proof = _b64decode(proof, "proof")
        if len(client_proof) != len(client_signature):
            raise SaslFailure("invalid client proof")
        client_key = bytes(a ^ b for a, b in zip(client_proof, client_signature, strict=True))
        if not hmac.compare_digest(mechanism.hash(client_key), credential.stored_key):
            raise SaslFailure("invalid client proof")
        self.complete = True
        self._step = self._done
        return "v=" + base64.b64encode(mechanism.hmac(credential.server_key, auth_message)).decode()

    def _done(self, text: str) -> str:
        raise SaslFailure("token after the SCRAM exchange completed")
