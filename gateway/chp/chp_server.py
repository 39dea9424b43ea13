"""The CHP server: owns the hashmap, sequences updates, serves snapshots.

Ports: ROUTER for snapshots on P, PUB for updates and HUGZ on P+1, SUB
collector for client KVSETs on P+2. Runs a single server; Binary Star
primary/backup fail-over is not implemented.
"""

import time

import structlog
import trio
import zmq

from gateway.chp.hashmap import Hashmap
from gateway.lifecycle import run_node, served, start_command
from gateway.settings.declaration import Command
from gateway.settings.table import ChpSettings, MeshSettings
from gateway.zmq_curve import CurveKeys, serve
from gateway.zmq_trio import Socket
from protocol.chp import (
    KVMsg,
    decode_icanhaz,
    decode_kvmsg,
    encode_kvmsg,
    hugz,
    is_command_key,
    kthxbai,
)
from protocol.errors import DecodeError

log = structlog.get_logger()


class ChpServer:
    """One CHP server on ports chp.port..chp.port+2 of chp.host."""

    def __init__(self, settings: ChpSettings, context: zmq.Context | None = None, keys: CurveKeys | None = None):
        self.keys = keys  # CURVE on every socket, clients admitted by the context's ZAP handler
        self.port = settings.chp_port
        self.host = settings.chp_host
        self.hugz_interval = settings.chp_hugz_interval_ms / 1000
        self.flush_interval = settings.chp_flush_interval_ms / 1000
        self.max_message_size = settings.chp_max_message_bytes
        self.hashmap = Hashmap()
        self._context = context or zmq.Context.instance()

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Serve until cancelled; `task_status.started()` once all ports are bound."""
        with (
            Socket(self._context, zmq.ROUTER, linger_ms=0) as snapshot,
            Socket(self._context, zmq.PUB, linger_ms=0) as publisher,
            Socket(self._context, zmq.SUB, linger_ms=0) as collector,
        ):
            for bound in (snapshot, publisher, collector):
                serve(bound.zsock, self.keys)
            for inbound in (snapshot, collector):
                # zmq disconnects a peer that sends more, so it cannot exhaust memory.
                inbound.zsock.setsockopt(zmq.MAXMSGSIZE, self.max_message_size)
            snapshot.zsock.bind(f"tcp://{self.host}:{self.port}")
            publisher.zsock.bind(f"tcp://{self.host}:{self.port + 1}")
            collector.zsock.setsockopt(zmq.SUBSCRIBE, b"")
            collector.zsock.bind(f"tcp://{self.host}:{self.port + 2}")
            log.info("chp.server_started", host=self.host, port=self.port)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._serve_snapshots, snapshot)
                nursery.start_soon(self._collect, collector, publisher)
                nursery.start_soon(self._send_hugz, publisher)
                nursery.start_soon(self._flush_expired, publisher)
                task_status.started()

    async def _serve_snapshots(self, snapshot: Socket) -> None:
        while True:
            identity, *request = await snapshot.recv()
            try:
                subtree = decode_icanhaz(request)
            except DecodeError as error:
                log.warning("chp.bad_snapshot_request", reason=str(error))
                continue
            # Taken together, before any await: updates published while the
            # snapshot goes out are newer than its sequence, and the client
            # applies them from its subscription.
            replies = list(self.hashmap.subtree(subtree))
            replies.append(kthxbai(self.hashmap.sequence, subtree))
            for msg in replies:
                await snapshot.send([identity, *encode_kvmsg(msg)])
            log.debug("chp.snapshot_sent", subtree=subtree, sequence=replies[-1].sequence)

    async def _collect(self, collector: Socket, publisher: Socket) -> None:
        while True:
            frames = await collector.recv()
            try:
                update = decode_kvmsg(frames)
                if is_command_key(update.key):
                    raise DecodeError(f"KVSET may not use the command key {update.key}")
                published = self.hashmap.accept(update, _now_ms())
            except DecodeError as error:
                log.warning("chp.bad_update", reason=str(error))
                continue
            await self._publish(publisher, published)

    async def _send_hugz(self, publisher: Socket) -> None:
        while True:
            await publisher.send(encode_kvmsg(hugz(self.hashmap.sequence)))
            await trio.sleep(self.hugz_interval)

    async def _flush_expired(self, publisher: Socket) -> None:
        while True:
            await trio.sleep(self.flush_interval)
            for deletion in self.hashmap.expire(_now_ms()):
                await self._publish(publisher, deletion)

    async def _publish(self, publisher: Socket, msg: KVMsg) -> None:
        await publisher.send(encode_kvmsg(msg))
        log.debug("chp.published", key=msg.key, sequence=msg.sequence, delete=msg.is_delete)


def _now_ms() -> int:
    # Expiries are wall-clock instants so that they mean the same on every host.
    return time.time_ns() // 1_000_000


async def _serve(context: zmq.Context, settings: ChpSettings, mesh: MeshSettings, *,
                 task_status=trio.TASK_STATUS_IGNORED) -> None:
    await ChpServer(settings, context, CurveKeys.of(mesh)).run(task_status=task_status)


def main() -> None:
    loaded = start_command(Command.CHP, "chp-server", "CHP (clustered hashmap protocol) server: snapshots on "
                           "chp.port (ROUTER), updates and heartbeats on chp.port+1 (PUB), client updates on "
                           "chp.port+2 (SUB).")
    run_node(served, loaded.settings.http, _serve, loaded.settings.chp, loaded.settings.mesh, mesh=loaded.settings.mesh)


if __name__ == "__main__":
    main()
