"""Connection creation rates (KIP-612) on raw sockets: the broker's max.connection.creation.rate makes
accepting wait, an IP's connection_creation_rate quota closes its excess connections unserved.

Time bounds are lower bounds only, which throttling guarantees however loaded the machine."""

from __future__ import annotations

import socket
import struct
import time
from contextlib import ExitStack

import pytest

from protocol.kafka import encode_request
from protocol.kafka.apis import by_name
from tests.gateway.server import GatewayProcess
from tests.gateway.test_bad_input import closed_by_server
from tests.gateway.test_connection_limits import log_count
from tests.gateway.test_quotas import QuotaAdmin, entity, op

API_VERSIONS = by_name("ApiVersions")
TIMEOUT_S = 30.0


def ask_api_versions(sock: socket.socket) -> None:
    request = encode_request(18, 3, 1, "rates", API_VERSIONS.Request(client_software_name="rates",
                                                                    client_software_version="1"))
    sock.sendall(struct.pack(">i", len(request)) + request)


def answered(sock: socket.socket) -> bool:
    """Whether the ApiVersions asked is answered (else the server closed the connection unserved)."""
    sock.settimeout(TIMEOUT_S)
    try:
        return len(sock.recv(4, socket.MSG_WAITALL)) == 4
    except ConnectionResetError:
        return False


def opened(stack: ExitStack, server: GatewayProcess, count: int, source: str) -> list[socket.socket]:
    """`count` connections opened back to back, each then asking ApiVersions."""
    sockets = [stack.enter_context(socket.create_connection(("127.0.0.1", server.port), timeout=TIMEOUT_S,
                                                            source_address=(source, 0))) for _ in range(count)]
    for sock in sockets:
        ask_api_versions(sock)
    return sockets


def test_an_ip_over_its_quota_has_its_new_connections_closed_unserved(tmp_path):
    server = GatewayProcess(tmp_path / "gateway").start()
    try:
        with socket.socket() as probe:
            probe.bind(("127.0.0.2", 0))
    except OSError:
        pytest.skip("no loopback addresses beyond 127.0.0.1 here")
    admin = QuotaAdmin(server.bootstrap)
    try:
        assert admin.alter((entity(ip=None), [op("connection_creation_rate", 1)]),  # every IP's default
                           (entity(ip="127.0.0.3"), [op("connection_creation_rate", 1000)])) == [(0, None)] * 2
        assert admin.describe(("ip", 2, None)) == {(("ip", None),): {"connection_creation_rate": 1},
                                                   (("ip", "127.0.0.3"),): {"connection_creation_rate": 1000}}
    finally:
        admin.close()
    with ExitStack() as stack:  # 1 a second over eleven 1 s samples: ten at once are within it, not twelve
        limited = opened(stack, server, 12, "127.0.0.2")
        free = opened(stack, server, 12, "127.0.0.3")
        assert [answered(sock) for sock in limited] == [True] * 10 + [False] * 2
        assert all(answered(sock) for sock in free)
        assert all(closed_by_server(sock) for sock in limited[10:])
    assert log_count(server, "connection_throttled", "127.0.0.2", "connection_creation_rate") == 2
    server.stop()


def test_the_broker_rate_makes_accepting_wait(tmp_path):
    # 5 a second over two 1 s samples: the start-up probes pass, twelve at once take 1.4 s at least
    server = GatewayProcess(tmp_path / "gateway", "--max-connection-creation-rate", "5",
                            "--quota-window-num", "2", "--quota-window-size-seconds", "1").start()
    with ExitStack() as stack:
        started = time.monotonic()
        sockets = opened(stack, server, 12, "127.0.0.1")
        assert all(answered(sock) for sock in sockets)  # each served, the later ones after a wait
        assert time.monotonic() - started >= 0.9
    assert log_count(server, "accept_throttled", "max.connection.creation.rate") >= 1
    server.stop()
