"""The capture server itself: it reports what it cannot decode and stops cleanly."""

import socket
import struct

from protocol.kafka import by_name, decode_response, encode_request
from protocol.kafka.error_codes import ErrorCode

from .capture import VERSION_CAPS, CaptureServer

API_VERSIONS = by_name("ApiVersions")


def exchange(server: CaptureServer, frame: bytes) -> bytes:
    """Send one frame; the response frame, or b"" if the server hung up."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as client:
        client.sendall(struct.pack(">i", len(frame)) + frame)
        data = b""
        while chunk := client.recv(65536):
            data += chunk
            if len(data) >= 4 and len(data) == 4 + struct.unpack_from(">i", data)[0]:
                break
        return data[4:]


def test_undecodable_frame_is_reported_and_dropped():
    frame = struct.pack(">hhih", 3, 12, 7, 1000)  # Metadata v12 cut off in its client id
    with CaptureServer() as server:
        assert exchange(server, frame) == b""
    assert len(server.failures) == 1
    assert frame.hex() in server.failures[0]
    assert server.captured == []


def test_unknown_api_versions_version_gets_kafkas_v0_answer():
    frame = struct.pack(">hhi", API_VERSIONS.key, 99, 7) + b"\x00\x00"
    with CaptureServer() as server:
        correlation_id, body = decode_response(API_VERSIONS.key, 0, exchange(server, frame))
    assert (correlation_id, body.error_code) == (7, ErrorCode.UNSUPPORTED_VERSION)
    assert {by_name(name).key for name in VERSION_CAPS} == {k.api_key for k in body.api_keys}


def test_advertised_versions_are_capped():
    request = encode_request(API_VERSIONS.key, 3, 1, "probe", API_VERSIONS.Request())
    with CaptureServer() as server:
        _, body = decode_response(API_VERSIONS.key, 3, exchange(server, bytes(request)))
    advertised = {k.api_key: k.max_version for k in body.api_keys}
    assert advertised == {by_name(name).key: cap for name, cap in VERSION_CAPS.items()}
    assert not server.failures


def test_stops_while_a_client_stays_connected():
    with CaptureServer() as server, socket.create_connection(("127.0.0.1", server.port)):
        server.stop()
    assert not server.failures
