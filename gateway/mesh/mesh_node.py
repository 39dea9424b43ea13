"""A node's presence on the mesh: its UUID, data sockets and discovery.

The data publisher is bound on an ephemeral port and advertised in beacons
through the tower; the data subscriber connects to every peer the tower
relays and disconnects from peers that fall silent.
"""

from __future__ import annotations

from dataclasses import dataclass

import structlog
import trio
import zmq

from gateway.settings.table import MeshSettings
from gateway.zmq_trio import Socket
from protocol.dafka import (
    Message,
    NodeBeacon,
    TowerBeacon,
    decode,
    decode_tower_message,
    encode,
    encode_node_beacon,
    new_uuid,
)
from protocol.dafka.beacon import BEACON, WELCOME
from protocol.errors import DecodeError

NODE_PROPERTY = "X-Dafka-Node"  # ZMTP metadata naming the sender; reference nodes ignore it
# Messages queued per peer before a PUB drops (the default, 1000, drops in any burst and turns it
# into FETCH traffic). Large contents are sent zero-copy, so queued records mostly share the memory
# a producer holds until ACKed anyway; a producer's ACK window bounds what a healthy mesh queues.
DATA_HWM = 10_000
log = structlog.get_logger()


@dataclass
class Peer:
    endpoint: str
    last_seen: float


class MeshNode:
    """UUID, data PUB (or verbose XPUB) and SUB, and the beacon loop of one node."""

    def __init__(self, context: zmq.Context, config: MeshSettings, *, kind: str,
                 verbose_publisher: bool = False, uuid: str | None = None):
        self.uuid = uuid or new_uuid()
        self.kind = kind
        self.config = config
        self.peers: dict[str, Peer] = {}
        self.publisher = Socket(context, zmq.XPUB if verbose_publisher else zmq.PUB)
        self.publisher.zsock.sndhwm = DATA_HWM
        self.publisher.zsock.setsockopt(zmq.METADATA, f"{NODE_PROPERTY}:{self.uuid}".encode())
        if verbose_publisher:
            self.publisher.zsock.setsockopt(zmq.XPUB_VERBOSE, 1)
        self.publisher.zsock.bind(f"tcp://{config.mesh_bind_host}:*")
        self.port = int(self.publisher.zsock.getsockopt_string(zmq.LAST_ENDPOINT).rsplit(":", 1)[1])
        self.subscriber = Socket(context, zmq.SUB)
        self.subscriber.zsock.rcvhwm = DATA_HWM
        self._beacon_out = Socket(context, zmq.PUB, linger_ms=0)
        self._beacon_out.zsock.connect(config.beacon_sub_address)
        self._beacon_in = Socket(context, zmq.SUB, linger_ms=0)
        for prefix in (WELCOME, BEACON):
            self._beacon_in.zsock.subscribe(prefix)
        self._beacon_in.zsock.connect(config.beacon_pub_address)
        self._beacon_soon = trio.Event()
        self._last_beacon = 0.0  # when the tower last relayed any beacon, ours included
        self.log = log.bind(node=kind, uuid=self.uuid)

    def close(self) -> None:
        for socket in (self.publisher, self.subscriber, self._beacon_out, self._beacon_in):
            socket.close()

    def subscribe(self, prefix: bytes) -> None:
        self.subscriber.subscribe(prefix)

    def unsubscribe(self, prefix: bytes) -> None:
        self.subscriber.unsubscribe(prefix)

    async def send(self, message: Message) -> None:
        await self.publisher.send(encode(message))

    async def receive(self, limit: int) -> list[Message]:
        """The next messages on the data subscriber (at least one, at most `limit`)."""
        return [message for _, message in await self.receive_with_frames(limit)]

    async def receive_with_frames(self, limit: int) -> list[tuple[zmq.Frame, Message]]:
        """As `receive`, each message with its first frame (`sender_of` reads the sender from
        it); a message that does not decode is logged and left out."""
        received = []
        for frames in await self.subscriber.recv_batch(limit):
            try:
                received.append((frames[0], decode(frames)))
            except DecodeError as error:
                self.log.warning("bad_message", reason=error.reason)
        return received

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Beacon and track peers until cancelled; started once the tower welcomed us."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._beacon_loop)
            await self._listen_tower(task_status)

    async def _listen_tower(self, task_status) -> None:
        welcomed = False
        async with trio.open_nursery() as nursery:
            while True:
                try:
                    message = decode_tower_message(await self._beacon_in.recv())
                except DecodeError as error:
                    self.log.warning("bad_tower_message", reason=error.reason)
                    continue
                if isinstance(message, TowerBeacon):
                    self._saw(message)
                elif not welcomed:
                    welcomed = True
                    self.log.info("node_started", port=self.port)
                    nursery.start_soon(self._expire_loop)
                    task_status.started()

    def _saw(self, beacon: TowerBeacon) -> None:
        now = trio.current_time()
        self._last_beacon = now
        if beacon.uuid == self.uuid:
            return
        peer = self.peers.get(beacon.uuid)
        if peer is not None and peer.endpoint == beacon.endpoint:
            peer.last_seen = now
            return
        if peer is not None:
            self.subscriber.disconnect(peer.endpoint)
        self.subscriber.connect(beacon.endpoint)
        self.peers[beacon.uuid] = Peer(beacon.endpoint, now)
        self._beacon_soon.set()  # so the newcomer learns of us at once
        self.log.info("peer_appeared", peer=beacon.uuid, endpoint=beacon.endpoint)

    async def _beacon_loop(self) -> None:
        frames = encode_node_beacon(NodeBeacon(self.uuid, self.config.beacon_address, self.port))
        while True:
            await self._beacon_out.send(frames)
            with trio.move_on_after(self.config.beacon_interval_ms / 1000):
                await self._beacon_soon.wait()
            self._beacon_soon = trio.Event()

    async def _expire_loop(self) -> None:
        """A peer expires after `timeout` of silence, counted up to the last beacon the tower
        relayed (our own comes back every interval), not up to now: when the tower or this
        process stalls on a busy machine, every peer would seem gone and be disconnected."""
        timeout = self.config.beacon_timeout_ms / 1000
        while True:
            await trio.sleep(min(1.0, timeout / 4))
            for uuid, peer in list(self.peers.items()):
                if self._last_beacon - peer.last_seen > timeout:
                    del self.peers[uuid]
                    self.subscriber.disconnect(peer.endpoint)
                    self.log.info("peer_expired", peer=uuid, endpoint=peer.endpoint)


def sender_of(frame: zmq.Frame) -> str:
    """Which node published a received frame: its advertised UUID, else its IP."""
    try:
        return frame.get(NODE_PROPERTY)
    except zmq.ZMQError:
        return "peer:" + frame.get("Peer-Address")
