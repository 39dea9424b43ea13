"""A raw client connection for SASL tests: Kafka requests and bare SASL frames, and whether the
gateway closed it."""

from __future__ import annotations

import socket
import struct

from protocol.kafka import decode_response, encode_request
from protocol.kafka.apis import by_name
from tests.gateway.clients import TIMEOUT_S

HANDSHAKE, AUTHENTICATE = by_name("SaslHandshake"), by_name("SaslAuthenticate")
API_VERSIONS, METADATA = by_name("ApiVersions"), by_name("Metadata")


class RawConnection:
    def __init__(self, port: int):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S)
        self.correlation_id = 0

    def send(self, api, version: int, body) -> None:
        self.correlation_id += 1
        self.send_frame(encode_request(api.key, version, self.correlation_id, "sasl-test", body))

    def call(self, api, version: int, body):
        """The response, or None if the gateway closed the connection instead of answering."""
        self.send(api, version, body)
        payload = self.receive_frame()
        if payload is None:
            return None
        correlation_id, response = decode_response(api.key, version, payload)
        assert correlation_id == self.correlation_id
        return response

    def send_frame(self, payload: bytes) -> None:
        self.sock.sendall(struct.pack(">i", len(payload)) + payload)

    def receive_frame(self) -> bytes | None:
        """The next frame's payload; None at the end of the stream."""
        size = self.sock.recv(4, socket.MSG_WAITALL)
        if len(size) < 4:
            return None
        return self.sock.recv(struct.unpack(">i", size)[0], socket.MSG_WAITALL)

    def closed(self) -> bool:
        """Whether the gateway has closed the connection, or closes it before TIMEOUT_S."""
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True

    def handshake(self, mechanism: str, version: int = 1):
        return self.call(HANDSHAKE, version, HANDSHAKE.Request(mechanism=mechanism))

    def authenticate(self, token: bytes, version: int = 2):
        return self.call(AUTHENTICATE, version, AUTHENTICATE.Request(auth_bytes=token))

    def metadata(self):
        return self.call(METADATA, 1, METADATA.Request(topics=[]))

    def close(self) -> None:
        self.sock.close()
