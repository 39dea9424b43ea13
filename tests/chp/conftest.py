"""CHP servers on free ports of 127.0.0.1, in-process or as subprocesses."""

import random
import socket
import subprocess
import sys

import pytest
import trio

from gateway.chp.chp_server import ChpServer
from gateway.settings.table import ChpSettings
from gateway.testing.ports import FIRST_PORT, PORT_SLICE, WORKERS_WITH_SLICES

HUGZ_INTERVAL_MS = 100
PEER_TIMEOUT_MS = 1000


def _free_base_port() -> int:
    """A port P such that P, P+1 and P+2 are free right now.

    Chosen below the ephemeral range, where outgoing connections (ours
    included, while probing) could take one before the server binds it, and
    above the slices free_port hands out to each test worker.
    """
    for _ in range(100):
        base = random.randrange(FIRST_PORT + WORKERS_WITH_SLICES * PORT_SLICE, 32000)
        try:
            for port in range(base, base + 3):
                with socket.socket() as probe:
                    probe.bind(("127.0.0.1", port))
        except OSError:
            continue
        return base
    raise RuntimeError("no three consecutive free ports")


async def _until_listening(port: int) -> None:
    # The server binds its collector last, so once it accepts, all ports do.
    with trio.fail_after(10):
        while True:
            try:
                stream = await trio.open_tcp_stream("127.0.0.1", port)
            except OSError:
                await trio.sleep(0.05)
            else:
                await stream.aclose()
                return


@pytest.fixture
def free_base_port():
    return _free_base_port


@pytest.fixture
def client_options() -> dict:
    """Heartbeat settings that let dead-server tests finish in seconds."""
    return {"hugz_timeout": 2.0}


@pytest.fixture
def make_server():
    def make(port: int | None = None) -> ChpServer:
        return ChpServer(ChpSettings(chp_port=port or _free_base_port(), chp_host="127.0.0.1",
                                     chp_hugz_interval_ms=HUGZ_INTERVAL_MS, chp_flush_interval_ms=100))

    return make


@pytest.fixture
async def chp_server(nursery: trio.Nursery, make_server) -> ChpServer:
    server = make_server()
    await nursery.start(server.run)
    return server


@pytest.fixture
def server_process(tmp_path):
    """Starts `python -m gateway.chp.chp_server` processes; all are killed afterwards.

    Each one logs to a file, so that a test can wait for what it says.
    """
    processes = []

    async def start(port: int, *options: str) -> subprocess.Popen:
        command = [sys.executable, "-m", "gateway.chp.chp_server", "--chp-host", "127.0.0.1"]
        command += ["--chp-port", str(port), "--chp-hugz-interval-ms", str(HUGZ_INTERVAL_MS), *options]
        log = (tmp_path / f"chp-{port}.log").open("w")
        processes.append(subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT))
        processes[-1].log = tmp_path / f"chp-{port}.log"
        await _until_listening(port + 2)
        return processes[-1]

    yield start
    for process in processes:
        process.kill()
        process.wait()


async def logged(process: subprocess.Popen, event: str) -> None:
    """Wait until `process` logged `event`."""
    with trio.fail_after(20):
        while event not in process.log.read_text():
            await trio.sleep(0.05)


@pytest.fixture
def start_pair(server_process, free_base_port):
    """Starts a primary and a backup chp-server process; returns them once the backup follows."""

    async def start(peer_timeout_ms: int = PEER_TIMEOUT_MS):
        ports = free_base_port(), free_base_port()
        timeout = ["--chp-peer-host", "127.0.0.1", "--chp-peer-timeout-ms", str(peer_timeout_ms)]
        primary, backup = [
            await server_process(port, "--chp-role", role, "--chp-peer-port", str(peer), *timeout)
            for port, peer, role in ((ports[0], ports[1], "primary"), (ports[1], ports[0], "backup"))
        ]
        await logged(primary, "chp.passive_following")
        return [("127.0.0.1", port) for port in ports], primary, backup

    return start
