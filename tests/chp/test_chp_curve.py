"""A CHP server authenticated with the mesh's CURVE keys: a client with them mirrors its keys, a raw
peer with another key or none fails the handshake on every port."""

from __future__ import annotations

import subprocess
import sys

import pytest
import trio
import zmq
import zmq.auth

from gateway.chp.chp_client import open_chp_client
from gateway.settings.table import MeshSettings
from gateway.zmq_curve import CurveKeys
from tests.chp.conftest import _until_listening
from tests.chp.test_chp_client_server import next_update
from tests.gateway.test_mesh_curve import RawPeer, intruder_certificate


@pytest.fixture
def curve_keys(tmp_path) -> CurveKeys:
    keys = tmp_path / "keys"
    keys.mkdir()
    zmq.auth.create_certificates(keys, "mesh")
    return CurveKeys.of(MeshSettings(mesh_curve_secret_key_file=keys / "mesh.key_secret",
                                     mesh_curve_public_keys_dir=keys))


@pytest.fixture
async def curve_server(curve_keys, free_base_port):
    port = free_base_port()
    process = subprocess.Popen([
        sys.executable, "-m", "gateway.chp.chp_server", "--chp-host", "127.0.0.1", "--chp-port", str(port),
        "--chp-hugz-interval-ms", "100", "--mesh-curve-secret-key-file", str(curve_keys.authorized / "mesh.key_secret"),
        "--mesh-curve-public-keys-dir", str(curve_keys.authorized)], stdout=subprocess.DEVNULL)
    try:
        await _until_listening(port + 2)
        yield port
    finally:
        process.kill()
        process.wait()


async def test_a_client_with_the_mesh_keys_mirrors_the_server(curve_server, curve_keys):
    async with open_chp_client([("127.0.0.1", curve_server)], keys=curve_keys, hugz_timeout=2.0) as client:
        with client.watch() as changes:
            await client.set("/curve/one", b"1")
            assert (await next_update(changes, "/curve/one")).value == b"1"


async def test_a_peer_without_the_key_fails_every_handshake(curve_server, curve_keys, tmp_path):
    intruder = intruder_certificate(tmp_path)
    context = zmq.Context()
    peers = []
    try:
        for kind, port in ((zmq.DEALER, curve_server), (zmq.SUB, curve_server + 1), (zmq.PUB, curve_server + 2)):
            for certificate in (intruder, None):
                peers.append(RawPeer(context, kind, f"tcp://127.0.0.1:{port}", certificate, curve_keys.public))
                assert await trio.to_thread.run_sync(peers[-1].handshake) == "refused"
    finally:
        for peer in peers:
            peer.close()
        context.term()
