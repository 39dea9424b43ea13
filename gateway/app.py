"""The whole gateway in one trio run: mesh (embedded or not), broker, listener.

The embedded default also runs a tower (in this process: it only relays
beacons) and its stores, each in a process of its own so that store I/O and
the gateway's request handling use both cores.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import structlog
import trio

from .api.handlers import load_handlers
from .broker import Broker
from .broker.storage import MeshStorage
from .config import GatewaySettings
from .mesh.sockets import zmq_context
from .mesh.tower import run_tower
from .server.connection import ConnectionLimits
from .server.dispatch import Dispatcher
from .server.listener import KafkaListener, ListenerSettings

log = structlog.get_logger()

STORE_RESTART_DELAY_S = 1.0


@dataclass(frozen=True)
class Embedded:
    """The mesh the gateway starts itself: a tower and `stores` stores."""

    stores: int = 1


async def run_gateway(settings: GatewaySettings, embedded: Embedded | None, *,
                      task_status=trio.TASK_STATUS_IGNORED) -> None:
    """Serve until SIGINT/SIGTERM, then finish in-flight requests and stop."""
    load_handlers()
    with zmq_context() as context:
        storage = MeshStorage(context, settings.mesh, max_unacked_bytes=settings.max_unacked_bytes)
        try:
            async with trio.open_nursery() as nursery:
                if embedded is not None:
                    await nursery.start(run_tower, context, settings.mesh)
                    for number in range(embedded.stores):
                        nursery.start_soon(run_store, settings, number)
                await nursery.start(storage.run)
                broker = Broker(settings, storage)
                await nursery.start(broker.run)
                listener = KafkaListener(
                    Dispatcher(broker),
                    ListenerSettings(settings.host, settings.port, settings.max_connections),
                    ConnectionLimits(max_request_bytes=settings.max_request_bytes),
                )
                port = await nursery.start(listener.serve)
                nursery.start_soon(_shutdown_on_signal, listener)
                task_status.started(port)
                await listener.stopped.wait()
                nursery.cancel_scope.cancel()
        finally:
            storage.close()
    log.info("gateway_stopped")


async def _shutdown_on_signal(listener: KafkaListener) -> None:
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for signum in signals:
            log.info("shutdown_requested", signal=signal.Signals(signum).name)
            listener.shutdown()
            return


def store_directory(settings: GatewaySettings, number: int) -> Path:
    return settings.data_dir / f"store-{number}"


async def run_store(settings: GatewaySettings, number: int) -> None:
    """One embedded store as a child process, restarted if it dies, stopped with
    the gateway.

    The store runs in a session of its own, so that a Ctrl-C meant for the
    gateway does not stop it before the gateway has answered in-flight
    produce requests (which need the store). Its standard input is a pipe
    only the gateway holds: when the gateway dies, even by SIGKILL, the store
    sees end of file and stops. It has no retention of its own: the gateway
    applies Kafka's and tells the stores what they may discard.
    """
    mesh = settings.mesh
    directory = store_directory(settings, number)
    command = [
        sys.executable, "-m", "gateway.mesh.store",
        "--store-db", str(directory),
        "--beacon-sub-address", mesh.beacon_sub_address,
        "--beacon-pub-address", mesh.beacon_pub_address,
        "--beacon-interval", str(mesh.beacon_interval_ms),
        "--beacon-timeout", str(mesh.beacon_timeout_ms),
        "--store-fsync", mesh.store_fsync,
        "--store-fsync-interval-ms", str(mesh.store_fsync_interval_ms),
        "--store-segment-bytes", str(mesh.store_segment_bytes),
        "--exit-on-stdin-eof",
    ]
    while True:
        log.info("store_starting", number=number, directory=str(directory))
        async with trio.open_nursery() as nursery:
            process = await nursery.start(partial(
                trio.run_process, command, stdin=subprocess.PIPE, check=False, start_new_session=True))
        log.warning("store_exited", number=number, returncode=process.returncode)
        await trio.sleep(STORE_RESTART_DELAY_S)
