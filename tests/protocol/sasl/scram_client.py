"""A SCRAM client for tests (RFC 5802 client side), to drive the server's exchange."""

from __future__ import annotations

import base64

from protocol.sasl.scram import ScramMechanism


class ScramClient:
    def __init__(self, mechanism: ScramMechanism, user: str, password: str, nonce: str, extensions: str = ""):
        """`extensions`: Kafka's, name=value,... after the nonce (tokenauth=true for a delegation token)."""
        self.mechanism, self.password = mechanism, password
        self.bare = f"n={user.replace('=', '=3D').replace(',', '=2C')},r={nonce}" + (extensions and f",{extensions}")
        self._server_signature = b""

    def first(self) -> bytes:
        return f"n,,{self.bare}".encode()

    def final(self, server_first: bytes, nonce_prefix: str = "") -> bytes:
        """The client-final message; `nonce_prefix` before the nonce, as librdkafka < 2.6.1 sends it."""
        attributes = dict(part.split("=", 1) for part in server_first.decode().split(","))
        mechanism = self.mechanism
        salted = mechanism.salted_password(self.password, base64.b64decode(attributes["s"]), int(attributes["i"]))
        client_key = mechanism.hmac(salted, b"Client Key")
        without_proof = f"c=biws,r={nonce_prefix}{attributes['r']}"
        auth_message = f"{self.bare},{server_first.decode()},{without_proof}".encode()
        signature = mechanism.hmac(mechanism.hash(client_key), auth_message)
        self._server_signature = mechanism.hmac(mechanism.hmac(salted, b"Server Key"), auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verifies(self, server_final: bytes) -> bool:
        return server_final == b"v=" + base64.b64encode(self._server_signature)
