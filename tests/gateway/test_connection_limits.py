"""Hostile connections on raw sockets: what they claim costs no memory, slow requests and
excess connections are closed, running out of file descriptors is survived, and a
well-behaved client goes on producing and consuming meanwhile."""

import os
import resource
import socket
import struct
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from protocol.kafka.config_values import ConfigOperation
from tests.gateway.clients import Sent, kafka_python_consume, kafka_python_produce
from tests.gateway.server import GatewayProcess
from tests.gateway.test_bad_input import api_versions_works, closed_by_server
from tests.gateway.test_broker_configs import change

DEADLINE_S = 30.0
HUNDRED_MB = 100 * 1024 * 1024


@pytest.fixture
def open_files_limit_raised():
    """This process opens hundreds of sockets: its soft limit raised to the hard one meanwhile."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    yield hard
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@contextmanager
def raw_connections(server: GatewayProcess, count: int, first_bytes: bytes = b"", source: str = "127.0.0.1"):
    """`count` connections from `source` that each send `first_bytes` and then nothing."""
    with ExitStack() as stack:
        sockets = []
        for _ in range(count):
            sock = stack.enter_context(socket.create_connection(
                ("127.0.0.1", server.port), timeout=DEADLINE_S, source_address=(source, 0)))
            sock.sendall(first_bytes)
            sockets.append(sock)
        yield sockets


def wait_for(condition, what: str, deadline_s: float = DEADLINE_S) -> None:
    deadline = time.monotonic() + deadline_s
    while not condition():
        assert time.monotonic() < deadline, f"not within {deadline_s}s: {what}"
        time.sleep(0.05)


def open_once_refused(sockets: list[socket.socket], refused: int) -> list[socket.socket]:
    """The sockets left open once the server has closed `refused` of them."""
    open_ = list(sockets)
    deadline = time.monotonic() + DEADLINE_S
    while len(open_) > len(sockets) - refused:
        assert time.monotonic() < deadline, f"not {refused} connections refused within {DEADLINE_S}s"
        open_ = [sock for sock in open_ if not closed_by_server(sock, timeout=0.01)]
    return open_


def log_count(server: GatewayProcess, *words: str) -> int:
    """Lines of the gateway's log holding every one of `words`."""
    lines = server.log_path.read_text(errors="replace").splitlines()
    return sum(all(word in line for word in words) for line in lines)


def rss_bytes(pid: int, field: str = "VmRSS") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no {field} for {pid}")


def produces_and_consumes(server: GatewayProcess, topic: str) -> bool:
    sent = [Sent(value=f"{topic}-{i}".encode()) for i in range(20)]
    kafka_python_produce(server.bootstrap, topic, sent)
    got = kafka_python_consume(server.bootstrap, topic, [0], len(sent))
    return [g.value for g in got] == [s.value for s in sent]


def prefix(size: int, body: bytes = b"\x00\x00\x00\x03") -> bytes:
    """The first bytes of a request announcing `size` bytes (a Produce header's start)."""
    return struct.pack(">i", size) + body


def test_announced_sizes_cost_no_memory(tmp_path, open_files_limit_raised):
    """300 connections announcing 100 MB each (30 GB in all) leave the gateway small."""
    count = 300
    server = GatewayProcess(tmp_path / "gateway", "--request-receive-timeout-ms", "600000").start()
    opened = log_count(server, "connection_opened")
    with raw_connections(server, count, prefix(HUNDRED_MB, bytes(1000))) as claims:
        wait_for(lambda: log_count(server, "connection_opened") >= opened + count, "all connections served")
        assert produces_and_consumes(server, "claims")
        assert not any(closed_by_server(sock, timeout=0.01) for sock in claims[:10])  # still waiting for bytes
        peak = rss_bytes(server.process.pid, "VmHWM")
    assert peak < 400 * 1024 * 1024, f"gateway peak RSS {peak / 2**20:.0f} MiB for {count} x 100 MB claimed"
    server.stop()


def test_a_request_not_whole_in_time_closes_its_connection(tmp_path):
    server = GatewayProcess(tmp_path / "gateway", "--request-receive-timeout-ms", "1000").start()
    with raw_connections(server, 2, prefix(1000)) as (stalled, trickling), raw_connections(server, 1) as (idle,):
        deadline = time.monotonic() + DEADLINE_S
        while not closed_by_server(trickling, timeout=0.2):  # a byte now and then does not keep it open
            assert time.monotonic() < deadline
            try:
                trickling.send(b"\x00")
            except OSError:  # reset: the server closed it with a byte unread
                break
        assert closed_by_server(stalled, timeout=DEADLINE_S)
        assert log_count(server, "request_too_slow") == 2
        assert not closed_by_server(idle, timeout=0.5)  # connections.max.idle.ms applies to it
    assert api_versions_works(server)
    server.stop()


def skip_without_more_loopback_addresses() -> None:
    """Connections from 127.0.0.2 and 127.0.0.3 stand for other hosts."""
    try:
        with socket.socket() as probe:
            probe.bind(("127.0.0.2", 0))
    except OSError:
        pytest.skip("no loopback addresses beyond 127.0.0.1 here")


def test_connections_per_ip_and_overrides(tmp_path):
    """Counted from accept: of connections opened at once, exactly the limit is served."""
    server = GatewayProcess(tmp_path / "gateway", "--max-connections-per-ip", "2",
                            "--max-connections-per-ip-overrides", "127.0.0.2:3").start()
    skip_without_more_loopback_addresses()
    for source, limit in (("127.0.0.3", 2), ("127.0.0.2", 3)):
        with raw_connections(server, 8, source=source) as sockets:
            served = open_once_refused(sockets, len(sockets) - limit)
            assert not any(closed_by_server(sock, timeout=0.2) for sock in served)
    # Counted by source: start-up probes from 127.0.0.1 that waited in the backlog may be refused too.
    assert [log_count(server, "connection_refused", "max.connections.per.ip", f"peer='{source}:")
            for source in ("127.0.0.3", "127.0.0.2")] == [8 - 2, 8 - 3]
    assert api_versions_works(server)
    server.stop()


def test_out_of_file_descriptors_is_survived(tmp_path):
    server = GatewayProcess(tmp_path / "gateway").start()
    pid = server.process.pid
    _, hard = resource.prlimit(pid, resource.RLIMIT_NOFILE)
    try:
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (len(os.listdir(f"/proc/{pid}/fd")) + 40, hard))
    except (OSError, ValueError):  # not allowed here, or a hard limit below what the gateway holds
        pytest.skip("cannot lower the gateway's open files limit here")
    with raw_connections(server, 80):
        wait_for(lambda: log_count(server, "accept_failed", "EMFILE") > 0, "accept failing with EMFILE")
    assert produces_and_consumes(server, "after-emfile")
    assert server.process.poll() is None
    server.stop()


def test_slow_loris_sockets_do_not_lock_clients_out(tmp_path, open_files_limit_raised):
    count = 200
    server = GatewayProcess(tmp_path / "gateway", "--request-receive-timeout-ms", "600000").start()
    opened = log_count(server, "connection_opened")
    with raw_connections(server, count, prefix(1000)) as lorises:
        wait_for(lambda: log_count(server, "connection_opened") >= opened + count, "all connections served")
        started = time.monotonic()
        kafka_python_produce(server.bootstrap, "past-the-lorises", [Sent(value=b"through")])
        assert time.monotonic() - started < DEADLINE_S
        assert not any(closed_by_server(sock, timeout=0.01) for sock in lorises[:10])
    server.stop()


def changed_live(server: GatewayProcess, broker: str, name: str, value: str | None) -> None:
    """A dynamic broker config set (None: deleted) as kafka-configs.sh sends it, its connection closed."""
    closed = log_count(server, "connection_closed")
    operation = ConfigOperation.SET if value is not None else ConfigOperation.DELETE
    assert change(server, broker, (name, value, operation)) == (0, None)
    wait_for(lambda: log_count(server, "connection_closed") > closed, "the change's connection closed")


def test_connection_limits_change_live(tmp_path):
    """max.connections lowered refuses the next connections (those open stay), restored serves them again."""
    server = GatewayProcess(tmp_path / "gateway").start()
    changed_live(server, "0", "max.connections", "3")
    with raw_connections(server, 5) as sockets:
        served = open_once_refused(sockets, 2)
        assert not any(closed_by_server(sock, timeout=0.2) for sock in served)
        closed = log_count(server, "connection_closed")
    assert log_count(server, "connection_refused", "reason='max.connections'", "limit=3") == 2
    wait_for(lambda: log_count(server, "connection_closed") == closed + 3, "the served connections closed")
    changed_live(server, "0", "max.connections", None)
    with raw_connections(server, 5) as sockets:
        assert not any(closed_by_server(sock, timeout=0.2) for sock in sockets)
    assert log_count(server, "connection_refused") == 2
    server.stop()


def test_per_ip_limits_change_live(tmp_path):
    server = GatewayProcess(tmp_path / "gateway").start()
    skip_without_more_loopback_addresses()
    changed_live(server, "", "max.connections.per.ip", "3")
    changed_live(server, "", "max.connections.per.ip.overrides", "127.0.0.2:1")
    for source, limit in (("127.0.0.3", 3), ("127.0.0.2", 1)):
        with raw_connections(server, 5, source=source) as sockets:
            open_once_refused(sockets, len(sockets) - limit)
    changed_live(server, "", "max.connections.per.ip.overrides", None)
    with raw_connections(server, 3, source="127.0.0.2") as sockets:
        assert not any(closed_by_server(sock, timeout=0.2) for sock in sockets)
    server.stop()
