"""Bad input on raw sockets: the offending connection closes, nothing else suffers."""

import socket
import struct
import time

import pytest

from protocol.kafka import decode_response, encode_request
from protocol.kafka.apis import by_name
from tests.gateway.clients import Sent, kafka_python_consume, kafka_python_produce

API_VERSIONS = by_name("ApiVersions")


def connect(gateway) -> socket.socket:
    return socket.create_connection(("127.0.0.1", gateway.port), timeout=10)


def closed_by_server(sock: socket.socket, timeout: float = 10.0) -> bool:
    """Whether the server closes the connection (reads until EOF or timeout)."""
    sock.settimeout(timeout)
    try:
        while True:
            if not sock.recv(65536):
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False


def api_versions_works(gateway) -> bool:
    with connect(gateway) as sock:
        request = encode_request(18, 3, 7, "probe", API_VERSIONS.Request(
            client_software_name="probe", client_software_version="1"))
        sock.sendall(struct.pack(">i", len(request)) + request)
        size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
        correlation_id, body = decode_response(18, 3, sock.recv(size, socket.MSG_WAITALL))
        return correlation_id == 7 and body.error_code == 0 and len(body.api_keys) > 5


@pytest.mark.parametrize("payload", [
    pytest.param(struct.pack(">i", 2**31 - 1) + b"x" * 100, id="oversized-length"),
    pytest.param(struct.pack(">i", -5), id="negative-length"),
    pytest.param(struct.pack(">i", 10) + b"\x00\x63\x00\x00\x00\x00\x00\x01\x00\x00", id="unknown-api-key"),
    pytest.param(struct.pack(">i", 10) + b"\x00\x00\x00\x63\x00\x00\x00\x01\x00\x00", id="unsupported-version"),
    pytest.param(struct.pack(">i", 3) + b"\x00\x03\x00", id="truncated-header"),
    pytest.param(struct.pack(">i", 40) + bytes(range(40)), id="garbage-body"),
    pytest.param(struct.pack(">i", 14) + b"\x00\x00\x00\x09\x00\x00\x00\x01\x00\x00\x00\x00\xff\xff",
                 id="produce-truncated"),
])
def test_bad_frames_close_only_that_connection(shared_gateway, payload):
    with connect(shared_gateway) as sock:
        sock.sendall(payload)
        assert closed_by_server(sock)
    assert api_versions_works(shared_gateway)


def test_truncated_frame_then_hangup(shared_gateway):
    with connect(shared_gateway) as sock:
        sock.sendall(struct.pack(">i", 1000) + b"\x00" * 10)
    assert api_versions_works(shared_gateway)


def test_peer_that_resets_before_reading_its_answers(shared_gateway):
    """Responses written to a reset socket end that connection, not the broker."""
    request = encode_request(18, 3, 1, "probe", API_VERSIONS.Request(
        client_software_name="probe", client_software_version="1"))
    for _ in range(20):
        with connect(shared_gateway) as sock:
            sock.sendall((struct.pack(">i", len(request)) + request) * 50)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    time.sleep(0.5)
    assert api_versions_works(shared_gateway)


def test_too_new_api_versions_gets_v0_answer(shared_gateway):
    with connect(shared_gateway) as sock:
        request = bytearray(encode_request(18, 0, 5, "probe", API_VERSIONS.Request()))
        struct.pack_into(">h", request, 2, 99)  # a version from the future
        sock.sendall(struct.pack(">i", len(request)) + bytes(request))
        size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
        correlation_id, body = decode_response(18, 0, sock.recv(size, socket.MSG_WAITALL))
    assert correlation_id == 5
    assert body.error_code == 35  # UNSUPPORTED_VERSION
    # ApiVersions' own range alone, as Kafka answers (ApiVersionsRequest.getErrorResponse)
    assert [(k.api_key, k.min_version, k.max_version) for k in body.api_keys] == [(18, 0, 4)]


def test_data_intact_after_abuse(shared_gateway):
    topic = "abuse-survivor"
    sent = [Sent(value=f"v{i}".encode()) for i in range(50)]
    kafka_python_produce(shared_gateway.bootstrap, topic, sent[:25])
    for _ in range(5):
        with connect(shared_gateway) as sock:
            sock.sendall(b"\xff" * 64)
    kafka_python_produce(shared_gateway.bootstrap, topic, sent[25:])
    got = kafka_python_consume(shared_gateway.bootstrap, topic, [0], len(sent))
    assert [g.value for g in got] == [s.value for s in sent]


def test_client_that_stops_reading_does_not_block_others(shared_gateway):
    stuck = connect(shared_gateway)
    stuck.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    request = encode_request(18, 3, 1, "stuck", API_VERSIONS.Request())
    frame = struct.pack(">i", len(request)) + request
    stuck.setblocking(False)
    sent = 0
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:  # pipeline requests, never read a response
        try:
            sent += stuck.send(frame * 100)
        except BlockingIOError:
            time.sleep(0.05)
    assert sent > 0
    assert api_versions_works(shared_gateway)
    stuck.close()


def test_connection_limit(tmp_path):
    from tests.gateway.server import GatewayProcess

    server = GatewayProcess(tmp_path / "gateway", "--max-connections", "2").start()
    try:
        # The start-up probe's connection may still be closing: wait until two fit.
        kept = []
        deadline = time.monotonic() + 10
        while len(kept) < 2 and time.monotonic() < deadline:
            sock = connect(server)
            if closed_by_server(sock, timeout=0.5):
                sock.close()
            else:
                kept.append(sock)
        assert len(kept) == 2
        with connect(server) as third:
            assert closed_by_server(third)
        kept.pop().close()
        time.sleep(0.5)
        assert api_versions_works(server)
    finally:
        for sock in kept:
            sock.close()
        server.stop()
