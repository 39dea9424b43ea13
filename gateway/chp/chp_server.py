"""The CHP server: owns the hashmap, sequences updates, serves snapshots.

Ports: ROUTER for snapshots on P, PUB for updates and HUGZ on P+1, SUB
collector for client KVSETs on P+2. A standalone server is always active;
a primary or backup runs Binary Star with its peer over P+3 (gateway.chp.pair).
"""

import time

import structlog
import trio
import zmq

from gateway.chp.hashmap import Hashmap
from gateway.chp.outbox import Outbox
from gateway.chp.pair import Pair
from gateway.lifecycle import run_node, served, start_command
from gateway.settings.declaration import Command
from gateway.settings.table import ChpSettings, MeshSettings
from gateway.wall_clock import now_ms
from gateway.zmq_curve import CurveKeys, serve
from gateway.zmq_trio import Socket
from protocol.chp import (
    KVMsg,
    decode_icanhaz,
    decode_kvmsg,
    encode_kvmsg,
    expected_sequence,
    hugz,
    is_command_key,
    kthxbai,
    with_absolute_ttl,
)
from protocol.errors import DecodeError

log = structlog.get_logger()


class ChpServer:
    """One CHP server on ports chp.port..chp.port+2 (+3 when paired) of chp.host."""

    def __init__(self, settings: ChpSettings, context: zmq.Context | None = None, keys: CurveKeys | None = None):
        self.keys = keys  # CURVE on every socket, clients admitted by the context's ZAP handler
        self.port = settings.chp_port
        self.host = settings.chp_host
        self.hugz_interval = settings.chp_hugz_interval_ms / 1000
        self.flush_interval = settings.chp_flush_interval_ms / 1000
        self.client_timeout_ms = settings.chp_client_timeout_ms
        self.max_message_size = settings.chp_max_message_bytes
        self.hashmap = Hashmap()
        self.outbox = Outbox()
        self.pair = Pair(self, settings) if settings.chp_role != "standalone" else None
        self._context = context or zmq.Context.instance()
        self._wake = trio.Event()  # the outbox may have something to publish
        self._progress = trio.Event()  # something was published, or the server's state changed

    @property
    def active(self) -> bool:
        return self.pair is None or self.pair.star.active

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Serve until cancelled; `task_status.started()` once all ports are bound."""
        with (
            Socket(self._context, zmq.ROUTER, linger_ms=0) as snapshot,
            Socket(self._context, zmq.PUB, linger_ms=0) as publisher,
            Socket(self._context, zmq.SUB, linger_ms=0) as collector,
        ):
            for bound in (snapshot, publisher, collector):
                serve(bound.zsock, self.keys)
            for stream in (publisher, collector):
                stream.unlimited()  # a client's mirror that missed an update would be wrong until it syncs again
            # Unlimited, the updates a client does not read (stopped, cut off) would pile up here: a
            # connection silent that long goes, with them; the client sees the gap when back.
            publisher.zsock.setsockopt(zmq.HEARTBEAT_IVL, min(int(self.hugz_interval * 1000), self.client_timeout_ms))
            publisher.zsock.setsockopt(zmq.HEARTBEAT_TIMEOUT, self.client_timeout_ms)
            for inbound in (snapshot, collector):
                # zmq disconnects a peer that sends more, so it cannot exhaust memory.
                inbound.zsock.setsockopt(zmq.MAXMSGSIZE, self.max_message_size)
            snapshot.zsock.bind(f"tcp://{self.host}:{self.port}")
            publisher.zsock.bind(f"tcp://{self.host}:{self.port + 1}")
            collector.zsock.setsockopt(zmq.SUBSCRIBE, b"")
            async with trio.open_nursery() as nursery:
                if self.pair:
                    await nursery.start(self.pair.run, self._context, f"tcp://{self.host}:{self.port + 3}")
                # Bound last: once it accepts connections, every port is bound.
                collector.zsock.bind(f"tcp://{self.host}:{self.port + 2}")
                log.info("chp.server_started", host=self.host, port=self.port)
                nursery.start_soon(self._serve_snapshots, snapshot)
                nursery.start_soon(self._collect, collector)
                nursery.start_soon(self._publish_released, publisher)
                nursery.start_soon(self._send_hugz, publisher)
                nursery.start_soon(self._flush_expired)
                task_status.started()

    async def enqueue(self, msg: KVMsg | None) -> None:
        """Hand an update the hashmap accepted (None: a failed compare-and-set) to the outbox."""
        if msg is None:
            log.debug("chp.cas_refused")
            return
        self.outbox.add(msg)
        if self.pair:
            await self.pair.replicate(msg)
        self.wake()

    def wake(self) -> None:
        self._wake.set()

    def progressed(self) -> None:
        self._progress.set()
        self._progress = trio.Event()

    async def _serve_snapshots(self, snapshot: Socket) -> None:
        while True:
            identity, *request = await snapshot.recv()
            try:
                subtree = decode_icanhaz(request)
            except DecodeError as error:
                log.warning("chp.bad_snapshot_request", reason=str(error))
                continue
            # A snapshot request is the client's vote in Binary Star.
            if not (self.pair is None or await self.pair.client_asks()):
                log.debug("chp.snapshot_refused", state=self.pair.star.state.value)
                continue
            # Taken together, before any await: updates published while the
            # snapshot goes out are newer than its sequence, and the client
            # applies them from its subscription.
            replies = list(self.hashmap.subtree(subtree))
            replies.append(kthxbai(self.hashmap.sequence, subtree))
            if await self._published(replies[-1].sequence):
                for msg in replies:
                    await snapshot.send([identity, *encode_kvmsg(msg)])
                log.debug("chp.snapshot_sent", subtree=subtree, sequence=replies[-1].sequence)

    async def _published(self, sequence: int) -> bool:
        """Wait until everything up to `sequence` is published; False if this server stopped being active."""
        while self.active and self.outbox.published < sequence:
            await self._progress.wait()
        return self.active

    async def _collect(self, collector: Socket) -> None:
        while True:
            frames = await collector.recv()
            try:
                update = decode_kvmsg(frames)
                if is_command_key(update.key):
                    raise DecodeError(f"KVSET may not use the command key {update.key}")
                expected_sequence(update)
                # The ttl counts from here, also for an update a passive keeps pending.
                update = with_absolute_ttl(update, now_ms())
            except DecodeError as error:
                log.warning("chp.bad_update", reason=str(error))
                continue
            if self.active:
                await self.enqueue(self.hashmap.apply(update))
            else:
                self.pair.pending.from_client(update, time.monotonic())

    async def _publish_released(self, publisher: Socket) -> None:
        while True:
            released = self.outbox.releasable()
            if released:
                await publisher.send_batch([encode_kvmsg(msg) for msg in released])
                log.debug("chp.published", sequence=released[-1].sequence, count=len(released))
                self.progressed()
            await self._wake.wait()
            self._wake = trio.Event()

    async def _send_hugz(self, publisher: Socket) -> None:
        while True:
            if self.active:
                beat = hugz(self.outbox.published)
            else:
                beat = hugz(self.hashmap.sequence, passive=True)
            await publisher.send(encode_kvmsg(beat))
            if self.pair:
                await self.pair.heartbeat()
            await trio.sleep(self.hugz_interval)

    async def _flush_expired(self) -> None:
        while True:
            await trio.sleep(self.flush_interval)
            if self.active:
                for deletion in self.hashmap.expire(now_ms()):
                    await self.enqueue(deletion)


async def _serve(context: zmq.Context, settings: ChpSettings, mesh: MeshSettings, *,
                 task_status=trio.TASK_STATUS_IGNORED) -> None:
    await ChpServer(settings, context, CurveKeys.of(mesh)).run(task_status=task_status)


def main() -> None:
    loaded = start_command(Command.CHP, "chp-server", "CHP (clustered hashmap protocol) server: snapshots on "
                           "chp.port (ROUTER), updates and heartbeats on chp.port+1 (PUB), client updates on "
                           "chp.port+2 (SUB), the Binary Star peer on chp.port+3.")
    run_node(served, loaded.settings.http, _serve, loaded.settings.chp, loaded.settings.mesh, mesh=loaded.settings.mesh)


if __name__ == "__main__":
    main()
