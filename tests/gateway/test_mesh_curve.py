"""A mesh authenticated with CURVE: the gateway, its tower and store work together, while raw pyzmq
peers without the mesh's key can neither read from nor publish into it.

Each raw peer watches its own socket's handshake (a ZeroMQ socket monitor) and the test waits for
the handshake's outcome, a condition, rather than for silence."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
import zmq
import zmq.auth
from zmq.utils.monitor import recv_monitor_message

from tests.gateway.clients import Sent, kafka_python_consume, kafka_python_produce
from tests.gateway.conftest import IN_PROCESS
from tests.gateway.server import GatewayProcess

TIMEOUT_S = 30.0
OUTCOMES = {zmq.EVENT_HANDSHAKE_SUCCEEDED: "succeeded", zmq.EVENT_HANDSHAKE_FAILED_AUTH: "refused",
            zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL: "refused", zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL: "refused"}


@pytest.fixture
def curve_gateway(tmp_path, in_process):
    """The secure mesh, its store in a process of its own or (inproc to the gateway) in the gateway's."""
    keys = tmp_path / "keys"
    keys.mkdir()
    zmq.auth.create_certificates(keys, "mesh")
    server = GatewayProcess(tmp_path / "gateway", "--mesh-curve-secret-key-file", str(keys / "mesh.key_secret"),
                            "--mesh-curve-public-keys-dir", str(keys),
                            "--embedded-stores-in-process", in_process).start()
    yield server, keys
    server.stop()


def intruder_certificate(tmp_path: Path) -> Path:
    place = tmp_path / "intruder"
    place.mkdir()
    _, secret = zmq.auth.create_certificates(place, "intruder")
    return Path(secret)


class RawPeer:
    """A pyzmq socket of `kind` connected to `address`, with CURVE keys from `certificate` (None: plaintext)."""

    def __init__(self, context: zmq.Context, kind: int, address: str, certificate: Path | None, server_key: bytes):
        self.socket = context.socket(kind)
        self.socket.linger = 0
        if certificate is not None:
            public, secret = zmq.auth.load_certificate(certificate)
            self.socket.curve_publickey, self.socket.curve_secretkey = public, secret
            self.socket.curve_serverkey = server_key
        self.monitor = self.socket.get_monitor_socket()
        if kind == zmq.SUB:
            self.socket.subscribe(b"")
        self.socket.connect(address)

    def handshake(self) -> str:
        """How the first handshake ended: succeeded, or refused."""
        deadline = time.monotonic() + TIMEOUT_S
        while time.monotonic() < deadline:
            if self.monitor.poll(100):
                event = recv_monitor_message(self.monitor)["event"]
                if event in OUTCOMES:
                    return OUTCOMES[event]
        raise AssertionError("no handshake within the timeout")

    def close(self) -> None:
        self.socket.disable_monitor()
        self.monitor.close()
        self.socket.close()


def data_ports(server: GatewayProcess) -> list[int]:
    """The ports of the gateway's own mesh nodes' data publishers, from their node_started lines."""
    return [int(port) for port in re.findall(r"event='node_started'.*?port=(\d+)", server.log_path.read_text())]


@IN_PROCESS
def test_an_unknown_peer_can_neither_read_nor_publish(curve_gateway, tmp_path):
    server, keys = curve_gateway
    kafka_python_produce(server.bootstrap, "curve-topic", [Sent(b"over curve")], acks="all")
    assert [got.value for got in kafka_python_consume(server.bootstrap, "curve-topic", [0], 1)] == [b"over curve"]

    server_key, _ = zmq.auth.load_certificate(keys / "mesh.key")
    intruder = intruder_certificate(tmp_path)
    beacons, towers_inbound = f"tcp://127.0.0.1:{server.tower_pub}", f"tcp://127.0.0.1:{server.tower_sub}"
    (data_port, *_) = data_ports(server)
    context = zmq.Context()
    peers = []
    try:
        def peer(kind, address, certificate):
            peers.append(RawPeer(context, kind, address, certificate, server_key))
            return peers[-1]

        member = peer(zmq.SUB, beacons, keys / "mesh.key_secret")  # the mesh's own key: admitted, hears beacons
        assert member.handshake() == "succeeded"
        assert member.socket.poll(TIMEOUT_S * 1000) and member.socket.recv_multipart()
        for kind, address in ((zmq.SUB, beacons), (zmq.PUB, towers_inbound), (zmq.SUB, f"tcp://127.0.0.1:{data_port}")):
            assert peer(kind, address, intruder).handshake() == "refused"  # an unknown key
            assert peer(kind, address, None).handshake() == "refused"  # plaintext
    finally:
        for each in peers:
            each.close()
        context.term()


def test_one_curve_setting_without_the_other_is_refused(tmp_path):
    result = GatewayProcess(tmp_path / "gateway", "--mesh-curve-public-keys-dir", str(tmp_path))
    result.spawn()
    assert result.process.wait(TIMEOUT_S) == 2
    assert "mesh.curve.secret.key.file and mesh.curve.public.keys.dir go together" in result.log_path.read_text()
    result.stop()


def test_a_key_file_that_cannot_be_read_stops_the_gateway_with_its_reason(tmp_path):
    result = GatewayProcess(tmp_path / "gateway", "--mesh-curve-secret-key-file", str(tmp_path / "missing"),
                            "--mesh-curve-public-keys-dir", str(tmp_path))
    result.spawn()
    assert result.process.wait(TIMEOUT_S) == 1
    assert "cannot read mesh.curve.secret.key.file" in result.log_path.read_text()
    result.stop()
