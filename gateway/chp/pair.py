"""A CHP server's side of a Binary Star pair: heartbeats, replication, fail-over.

Each server of the pair binds a PUB on its P+3 and subscribes to its
peer's (protocol.chp.peer). The active one sends every update it
sequenced as KVREPL and publishes it once the passive acknowledged it
(gateway.chp.outbox). The passive asks for the whole hashmap (SYNC?),
then applies KVREPLs in sequence order; a gap makes it ask again.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import structlog
import trio
import zmq

from gateway.chp.binary_star import BinaryStar
from gateway.chp.hashmap import Hashmap
from gateway.chp.outbox import Outbox
from gateway.chp.pending import Pending
from gateway.settings.table import ChpSettings
from gateway.zmq_curve import connect, serve
from gateway.zmq_trio import Socket
from protocol.chp import KVMsg
from protocol.chp.peer import (
    Ack,
    PeerMessage,
    PeerState,
    Replicated,
    State,
    SyncEnd,
    SyncEntry,
    SyncRequest,
    decode_peer,
    encode_peer,
)
from protocol.errors import DecodeError

if TYPE_CHECKING:
    from gateway.chp.chp_server import ChpServer

log = structlog.get_logger()
BATCH = 256


class Pair:
    def __init__(self, server: ChpServer, settings: ChpSettings):
        self.server = server
        self.peer = f"tcp://{settings.chp_peer_host}:{settings.chp_peer_port + 3}"
        self.timeout = settings.chp_peer_timeout_ms / 1000
        self.star = BinaryStar(settings.chp_role == "primary", self.timeout, time.monotonic())
        self.pending = Pending(self.timeout)
        self.synced = False  # whether a passive holds the active's hashmap
        # Whether it took one since it started or yielded: only then may a passive take over.
        self._holds_state = False
        self._fresh = Hashmap()  # a snapshot from the active, while it comes in
        self._peer_state: State | None = None
        self._acknowledged = -1  # what this passive last told the active it holds
        self._last_beat = time.monotonic()
        # A longer gap between heartbeats than this, and this process was paused.
        self._pause = max(self.timeout, 2 * settings.chp_hugz_interval_ms / 1000)
        self._out: Socket | None = None

    async def run(self, context: zmq.Context, endpoint: str, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        with Socket(context, zmq.PUB, linger_ms=0) as out, Socket(context, zmq.SUB, linger_ms=0) as into:
            for socket in (out, into):
                socket.unlimited()  # a whole hashmap goes out at once when a passive syncs
            serve(out.zsock, self.server.keys)  # the peer link is the mesh's too when it uses CURVE
            connect(into.zsock, self.server.keys)
            out.zsock.bind(endpoint)
            into.zsock.setsockopt(zmq.SUBSCRIBE, b"")
            into.connect(self.peer)
            self._out = out
            task_status.started()
            while True:
                for frames in await into.recv_batch(BATCH):
                    try:
                        message = decode_peer(frames)
                    except DecodeError as error:
                        log.warning("chp.bad_peer_message", reason=str(error))
                        continue
                    await self._on(message)
                await self._acknowledge()

    async def _acknowledge(self) -> None:
        sequence = self.server.hashmap.sequence
        if self.synced and not self.star.active and sequence != self._acknowledged:
            await self._send(Ack(sequence))
            self._acknowledged = sequence

    async def client_asks(self) -> bool:
        """A client's vote: whether this server serves it (it may take over now)."""
        if self.star.state is State.PASSIVE and not self._holds_state:
            return False  # an empty or yielded passive would serve a state clients never saw
        return await self._changing(lambda: self.star.on_client_request(time.monotonic()))

    async def replicate(self, msg: KVMsg) -> None:
        await self._send(Replicated(msg))

    async def heartbeat(self) -> None:
        """Every HUGZ interval: tell the peer our state, notice its silence, ask to sync."""
        now = time.monotonic()
        # After a pause of this process (SIGSTOP) the peer's silence is ours: listen a beat first.
        woke, self._last_beat = now - self._last_beat > self._pause, now
        await self._send(PeerState(self.star.state, self.star.term))
        outbox = self.server.outbox
        if outbox.replicating and not self.star.peer_alive(now) and not woke:
            log.warning("chp.peer_lost", peer=self.peer)
            outbox.alone()
            self.server.wake()
        if self.star.state is State.PASSIVE and not self.synced and self._peer_state is State.ACTIVE:
            await self._send(SyncRequest())

    async def _on(self, message: PeerMessage) -> None:
        match message:
            case PeerState(state, term):
                await self._on_state(state, term)
            case SyncRequest() if self.star.active:
                await self._send_hashmap()
            case SyncEntry(msg) if not self.synced:
                self._fresh.store(msg)
            case SyncEnd(sequence, count) if not self.synced:
                self._adopt(sequence, count)
            case Replicated(msg) if self.synced and not self.star.active:
                self._follow(msg)
            case Ack(sequence) if self.star.active:
                self.server.outbox.acknowledge(sequence)
                self.server.wake()

    async def _on_state(self, state: State, term: int) -> None:
        now = time.monotonic()
        self._peer_state = state
        if state is State.ACTIVE:
            self.pending.peer_heard(now)
        await self._changing(lambda: self.star.on_peer(state, now, term))

    async def _changing(self, event) -> bool:
        """Run a Binary Star event and act on the state it leads to; what it returned."""
        was_active = self.star.active
        result = event()
        if self.star.active and not was_active:
            await self._take_over()
        elif was_active and not self.star.active:
            self._yield()
        return result

    async def _take_over(self) -> None:
        server = self.server
        log.info("chp.active", sequence=server.hashmap.sequence, synced=self.synced)
        # Everything this server holds may already have reached clients through the old active.
        server.outbox = Outbox(published=server.hashmap.sequence)
        for update in self.pending.take():
            await server.enqueue(server.hashmap.apply(update))
        server.progressed()

    def _yield(self) -> None:
        # Both were active after a split; this fork's updates give way to the peer's.
        log.warning("chp.yielded", sequence=self.server.hashmap.sequence)
        self.synced = self._holds_state = False
        self._fresh = Hashmap()
        self.pending.take()
        self.server.outbox = Outbox()
        self.server.progressed()

    async def _send_hashmap(self) -> None:
        # One batch, so that no KVREPL slips in between the entries and their end;
        # updates from here on wait for the passive, which acknowledges once it took them.
        hashmap = self.server.hashmap
        messages = [SyncEntry(msg) for msg in hashmap.entries.values()]
        messages.append(SyncEnd(hashmap.sequence, len(messages)))
        self.server.outbox.follow()
        await self._out.send_batch([encode_peer(message) for message in messages])
        log.info("chp.passive_following", sequence=hashmap.sequence, keys=len(messages) - 1)

    def _adopt(self, sequence: int, count: int) -> None:
        fresh, self._fresh = self._fresh, Hashmap()
        if len(fresh.entries) != count:
            log.warning("chp.sync_incomplete", received=len(fresh.entries), sent=count)
            return
        fresh.sequence = sequence
        self.server.hashmap = fresh
        self.synced = self._holds_state = True
        self._acknowledged = -1
        log.info("chp.synced_with_active", sequence=sequence, keys=count)

    def _follow(self, msg: KVMsg) -> None:
        hashmap = self.server.hashmap
        if msg.sequence == hashmap.sequence + 1:
            hashmap.store(msg)
            self.pending.from_active(msg.uuid, time.monotonic())
        elif msg.sequence > hashmap.sequence:
            log.warning("chp.replication_gap", held=hashmap.sequence, got=msg.sequence)
            self.synced = False

    async def _send(self, message: PeerMessage) -> None:
        await self._out.send(encode_peer(message))
