"""Memory bounded by configuration: queued.max.request.bytes over all connections, and
connections muted while their unsent responses reach unsent.response.max.bytes.

Raw sockets play the clients that Kafka clients cannot: pipelining without reading, stopping
in the middle of a request."""

import socket
import struct
import time
from pathlib import Path

from gateway.testing.ports import free_port
from protocol.kafka import decode_response, encode_request
from protocol.kafka.apis import by_name
from tests.gateway.clients import Sent, confluent_consume, confluent_produce
from tests.gateway.groups import wait_until
from tests.gateway.server import GatewayProcess
from tests.gateway.test_http_endpoint import get, sample

API_VERSIONS = by_name("ApiVersions")
FETCH = by_name("Fetch")
FETCH_VERSION = 11
TIMEOUT_S = 30.0
QUEUED = "dafka_gateway_queued_request_bytes"
UNSENT = "dafka_gateway_unsent_response_bytes"
FETCHES_ANSWERED = 'dafka_gateway_request_seconds_count{api="Fetch"}'
ATTACKERS = 10  # bench: 100 such connections stay far under 512 MB


def start_gateway(tmp_path: Path, *options: str) -> tuple[GatewayProcess, int]:
    http = free_port()
    return GatewayProcess(tmp_path / "gateway", "--http-port", str(http), *options).start(), http


def metric(http: int, name: str) -> float:
    return sample(get(http, "/metrics")[1], name)


def framed(request: bytes) -> bytes:
    return struct.pack(">i", len(request)) + request


def api_versions(correlation_id: int, name: str = "probe") -> bytes:
    return framed(encode_request(API_VERSIONS.key, 3, correlation_id, "probe", API_VERSIONS.Request(
        client_software_name=name, client_software_version="1")))


def fetch(correlation_id: int, topic: str, max_bytes: int = 64 << 20) -> bytes:
    partition = FETCH.Request.Topics.Partitions(partition=0, fetch_offset=0, partition_max_bytes=max_bytes,
                                                log_start_offset=-1, current_leader_epoch=-1)
    body = FETCH.Request(replica_id=-1, max_wait_ms=500, min_bytes=1, max_bytes=max_bytes, isolation_level=0,
                         session_id=0, session_epoch=-1, rack_id="", forgotten_topics_data=[],
                         topics=[FETCH.Request.Topics(topic=topic, partitions=[partition])])
    return framed(encode_request(FETCH.key, FETCH_VERSION, correlation_id, "attacker", body))


def connect(server: GatewayProcess, receive_buffer: int | None = None) -> socket.socket:
    sock = socket.socket()
    if receive_buffer:  # before connecting, so that the window stays small
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    sock.settimeout(TIMEOUT_S)
    sock.connect(("127.0.0.1", server.port))
    return sock


def received(sock: socket.socket, size: int) -> bytearray:
    """Exactly `size` bytes (MSG_WAITALL stops short when the receive buffer is small)."""
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        assert chunk, "connection closed mid-response"
        data += chunk
    return data


def response(sock: socket.socket, api_key: int, version: int):
    """(correlation id, body) of the next response on `sock`."""
    size = struct.unpack(">i", received(sock, 4))[0]
    return decode_response(api_key, version, received(sock, size))


def answered(sock: socket.socket, within: float) -> bool:
    """Whether a response begins on `sock` within `within` seconds (nothing is consumed)."""
    sock.settimeout(within)
    try:
        return bool(sock.recv(1, socket.MSG_PEEK))
    except socket.timeout:
        return False
    finally:
        sock.settimeout(TIMEOUT_S)


def rss_bytes(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return next(int(line.split()[1]) * 1024 for line in status.splitlines() if line.startswith("VmRSS:"))


def peak_rss(pid: int, seconds: float) -> int:
    """The largest RSS seen over `seconds`."""
    peak, end = 0, time.monotonic() + seconds
    while time.monotonic() < end:
        peak = max(peak, rss_bytes(pid))
        time.sleep(0.05)
    return peak


def test_pipelined_requests_within_a_small_budget_are_all_answered(tmp_path):
    server, http = start_gateway(tmp_path, "--queued-max-request-bytes", "1000")
    try:
        sockets = [connect(server) for _ in range(5)]
        for sock in sockets:
            sock.sendall(b"".join(api_versions(n) for n in range(200)))
        for sock in sockets:
            for n in range(200):
                correlation_id, body = response(sock, API_VERSIONS.key, 3)
                assert (correlation_id, body.error_code) == (n, 0)
        with connect(server) as sock:  # larger than the whole budget: admitted alone
            sock.sendall(api_versions(1, "a" * 5000))
            assert response(sock, API_VERSIONS.key, 3)[0] == 1
        wait_until(lambda: metric(http, QUEUED) == 0, TIMEOUT_S, "request memory back to zero")
        for sock in sockets:
            sock.close()
    finally:
        server.stop()


def test_a_full_budget_stops_reading_until_bytes_are_released(tmp_path):
    server, http = start_gateway(tmp_path, "--queued-max-request-bytes", "1000")
    try:
        large = api_versions(1, "a" * 850)
        with connect(server) as holder, connect(server) as small, connect(server) as blocked:
            holder.sendall(large[:500])  # its size prefix reserves the whole request
            wait_until(lambda: metric(http, QUEUED) == len(large), TIMEOUT_S, "the large request reserved")
            small.sendall(api_versions(2))  # fits beside it
            assert response(small, API_VERSIONS.key, 3)[0] == 2
            blocked.sendall(api_versions(3, "b" * 200))  # does not fit: waits
            assert not answered(blocked, within=1.0)
            holder.sendall(large[500:])
            assert response(holder, API_VERSIONS.key, 3)[0] == 1
            assert response(blocked, API_VERSIONS.key, 3)[0] == 3
        wait_until(lambda: metric(http, QUEUED) == 0, TIMEOUT_S, "request memory back to zero")
    finally:
        server.stop()


def test_a_client_that_does_not_read_is_muted_and_its_fetches_wait(tmp_path):
    server, http = start_gateway(tmp_path, "--unsent-response-max-bytes", "1048576")
    try:
        confluent_produce(server.bootstrap, "data", [Sent(b"v" * 100_000) for _ in range(80)])
        with connect(server, receive_buffer=4096) as sock:
            sock.sendall(b"".join(fetch(n, "data") for n in range(64)))
            wait_until(lambda: metric(http, UNSENT) > 0, TIMEOUT_S, "responses waiting to be sent")
            time.sleep(1.0)  # time to build more, were the connection not muted
            assert metric(http, FETCHES_ANSWERED) < 32
            for n in range(64):
                correlation_id, body = response(sock, FETCH.key, FETCH_VERSION)
                partition = body.responses[0].partitions[0]
                assert (correlation_id, partition.error_code) == (n, 0)
                assert 0 < len(partition.records) <= 2 * 1048576
        wait_until(lambda: metric(http, UNSENT) == 0, TIMEOUT_S, "unsent responses back to zero")
        wait_until(lambda: metric(http, QUEUED) == 0, TIMEOUT_S, "request memory back to zero")
    finally:
        server.stop()


def test_connections_pipelining_fetches_without_reading_keep_memory_bounded(tmp_path):
    """Data older than the in-memory tail is read from the stores: every response built is new memory."""
    server, _ = start_gateway(tmp_path, "--tail-bytes-per-partition", "1048576")
    attackers = []
    try:
        confluent_produce(server.bootstrap, "data", [Sent(b"v" * 100_000) for _ in range(160)])
        frames = b"".join(fetch(n, "data") for n in range(64))
        for _ in range(ATTACKERS):
            attackers.append(connect(server, receive_buffer=4096))
            attackers[-1].sendall(frames)
        peak = peak_rss(server.process.pid, seconds=3.0)  # unbounded, it passed 1 GB within 3 s
        records = [Sent(b"good %d" % n) for n in range(100)]
        confluent_produce(server.bootstrap, "good", records)
        assert len(confluent_consume(server.bootstrap, "good", [0], len(records))) == len(records)
        assert max(peak, rss_bytes(server.process.pid)) < 400 * 1024 * 1024
    finally:
        for sock in attackers:
            sock.close()
        server.stop()
