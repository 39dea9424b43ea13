"""A node's presence on the mesh: its UUID, data sockets and discovery.

The data publisher is bound on an ephemeral port of mesh.bind.host and
advertised in beacons through the towers; the data subscriber connects to
every peer a tower relays and disconnects from peers that fall silent
(peer_table.py says which, so that a reused port disconnects no live peer).
With several towers, the beacon sockets connect to each: every beacon goes to
every tower, and each beacon relayed comes back once per live tower. A copy
only refreshes the peer it names, so a peer is heard while any tower relays it.
A ZeroMQ error never ends a node: one bad beacon or peer is logged and skipped.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace

import structlog
import trio
import zmq

from gateway.mesh.local_peers import local_peers
from gateway.mesh.peer_table import PeerTable, RelayingClock
from gateway.settings.table import MeshSettings
from gateway.zmq_curve import CurveKeys, connect, serve
from gateway.zmq_trio import Socket
from protocol.dafka import (
    Message,
    NodeBeacon,
    TowerBeacon,
    decode,
    decode_many,
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
MAX_UNREACHABLE = 1024  # beacons with unusable endpoints remembered (and skipped without a log line)
# Before a node's loop that failed on a ZeroMQ error runs again: a lasting fault logs ten lines a second.
ERROR_PAUSE_S = 0.1
log = structlog.get_logger()


class MeshBindError(Exception):
    """A node's data socket cannot bind mesh.bind.host."""


async def keep_serving(node_log, loop: Callable[..., Awaitable[None]], *args) -> None:
    """Run a node's `loop` until it returns: a ZeroMQ error that ends it is logged with its traceback
    and the loop starts again, so that one bad message or peer stops neither the node nor the
    process running it (a gateway or a store)."""
    while True:
        try:
            return await loop(*args)
        except zmq.ZMQError:
            node_log.exception("mesh_loop_failed", loop=loop.__name__)
        await trio.sleep(ERROR_PAUSE_S)


class MeshNode:
    """UUID, data PUB (or verbose XPUB) and SUB, and the beacon loop of one node."""

    def __init__(self, context: zmq.Context, config: MeshSettings, *, kind: str,
                 verbose_publisher: bool = False, uuid: str | None = None,
                 ignored_peers: frozenset[str] = frozenset()):
        self.uuid = uuid or new_uuid()
        self.kind = kind
        self.ignored_peers = ignored_peers  # nodes whose publisher the subscriber never connects to
        self.config = config
        self.peers = PeerTable()
        self._unreachable: dict[tuple[str, str], None] = {}  # beacons skipped, oldest first
        keys = CurveKeys.of(config)
        self.publisher = Socket(context, zmq.XPUB if verbose_publisher else zmq.PUB)
        serve(self.publisher.zsock, keys)
        self.publisher.zsock.sndhwm = DATA_HWM
        self.publisher.zsock.setsockopt(zmq.METADATA, f"{NODE_PROPERTY}:{self.uuid}".encode())
        if verbose_publisher:
            self.publisher.zsock.setsockopt(zmq.XPUB_VERBOSE, 1)
        self._bind(config.mesh_bind_host)
        self.port = int(self.publisher.zsock.getsockopt_string(zmq.LAST_ENDPOINT).rsplit(":", 1)[1])
        self._local = local_peers(context)  # local_peers.py: its partner is reached over inproc
        self._inproc = None if self._local is None else self._local.publish(self.uuid, kind)
        if self._inproc is not None:
            self.publisher.zsock.bind(self._inproc)
        self._links: dict[str, str] = {}  # a peer's advertised endpoint -> the inproc one connected instead
        self.partner: str | None = None  # the peer linked over inproc (kept once unlinked: its frames may be queued)
        self.subscriber = Socket(context, zmq.SUB)
        connect(self.subscriber.zsock, keys)
        self.subscriber.zsock.rcvhwm = DATA_HWM
        self._beacon_out = self._tower_socket(context, keys, zmq.PUB, config.beacon_sub_address)
        self._beacon_in = self._tower_socket(context, keys, zmq.SUB, config.beacon_pub_address)
        for prefix in (WELCOME, BEACON):
            self._beacon_in.zsock.subscribe(prefix)
        self._beacon_soon = trio.Event()
        self._welcomed = trio.Event()
        self._relaying = RelayingClock(config.beacon_interval_ms / 1000)  # expiry's clock (_expire_loop)
        self.log = log.bind(node=kind, uuid=self.uuid)

    def _tower_socket(self, context: zmq.Context, keys: CurveKeys | None, kind: int,
                      towers: tuple[str, ...]) -> Socket:
        """A beacon socket connected to every tower; its retries to reach one that is down back off.
        ZeroMQ resolves a tower's host name at each attempt (ten a second by default) in the I/O
        thread all the process's sockets share: while a tower's name did not resolve (a stopped
        container), those lookups delayed beacons and data so much that peers expired."""
        socket = Socket(context, kind, linger_ms=0)
        connect(socket.zsock, keys)
        socket.zsock.reconnect_ivl_max = self.config.beacon_reconnect_backoff_max_ms
        for tower in towers:
            socket.zsock.connect(tower)
        return socket

    def _bind(self, host: str) -> None:
        try:
            self.publisher.zsock.bind(f"tcp://{host}:*")
        except zmq.ZMQError as error:
            self.publisher.close()
            raise MeshBindError(f"cannot bind a mesh socket on {host} (mesh.bind.host): {error.strerror}; give "
                                f"an address of this machine (127.0.0.1 by default, * for every interface)") from None

    def close(self) -> None:
        if self._inproc is not None:
            self._local.withdraw(self.uuid, self._inproc)
        for socket in (self.publisher, self.subscriber, self._beacon_out, self._beacon_in):
            socket.close()

    def sender_of(self, frame: zmq.Frame) -> str:
        """Which node published a received frame: its advertised UUID, else its IP; a frame
        without either came over inproc, from the partner."""
        try:
            return frame.get(NODE_PROPERTY)
        except zmq.ZMQError:
            pass
        try:
            return "peer:" + frame.get("Peer-Address")
        except zmq.ZMQError:
            if self.partner is None:
                raise
            return self.partner

    def subscribe(self, prefix: bytes) -> None:
        self.subscriber.subscribe(prefix)

    def unsubscribe(self, prefix: bytes) -> None:
        self.subscriber.unsubscribe(prefix)

    async def send(self, message: Message) -> None:
        await self.publisher.send(encode(message))

    async def receive(self, limit: int) -> list[Message]:
        """The next messages on the data subscriber (at least one, at most `limit`); contents
        may be bytes, copied out of ZeroMQ's frames in one call for the batch (zmq_trio.py).
        A message that does not decode is logged and left out."""
        messages, errors = decode_many(await self.subscriber.recv_batch(limit, copies=True))
        for error in errors:
            self._bad_message(error)
        return messages

    async def receive_with_frames(self, limit: int) -> list[tuple[zmq.Frame, Message]]:
        """As `receive`, each message with its first frame (`sender_of` reads the sender from
        it)."""
        received = []
        for frames in await self.subscriber.recv_batch(limit):
            try:
                received.append((frames[0], decode(frames)))
            except DecodeError as error:
                self._bad_message(error)
        return received

    def _bad_message(self, error: DecodeError) -> None:
        self.log.warning("bad_message", reason=error.reason)

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Beacon and track peers until cancelled; started once a tower welcomed us."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(keep_serving, self.log, self._beacon_loop)
            nursery.start_soon(keep_serving, self.log, self._listen_tower)
            await self._welcomed.wait()
            self.log.info("node_started", port=self.port)
            nursery.start_soon(keep_serving, self.log, self._expire_loop)
            task_status.started()

    async def _listen_tower(self) -> None:
        while True:
            try:
                message = decode_tower_message(await self._beacon_in.recv())
            except DecodeError as error:
                self.log.warning("bad_tower_message", reason=error.reason)
                continue
            if isinstance(message, TowerBeacon):
                self._saw(message)
            else:
                self._welcomed.set()

    def _saw(self, beacon: TowerBeacon) -> None:
        heard = self._relaying.relayed(trio.current_time())
        if (beacon.uuid == self.uuid or beacon.uuid in self.ignored_peers
                or (beacon.uuid, beacon.endpoint) in self._unreachable):
            return
        seen = self.peers.saw(beacon.uuid, beacon.endpoint, heard)
        if not seen.appeared:
            return
        if seen.disconnect is not None:
            self._disconnect(seen.disconnect)
        if seen.replaced is not None:
            self.log.info("peer_replaced", peer=seen.replaced, by=beacon.uuid, endpoint=beacon.endpoint)
            if beacon.endpoint in self._links:  # the connection kept is to the local node that left
                self._disconnect(beacon.endpoint)
                seen = replace(seen, connect=beacon.endpoint)
        if seen.connect is not None and not self._connect(beacon):
            self.peers.forget(beacon.uuid)
            return
        self._beacon_soon.set()  # so the newcomer learns of us at once
        self.log.info("peer_appeared", peer=beacon.uuid, endpoint=beacon.endpoint)

    def _connect(self, beacon: TowerBeacon) -> bool:
        """Connect to a peer; False (logged once) if its endpoint is unusable (a host `*`, garbage)."""
        try:
            link = self._link(beacon)
            self.subscriber.connect(link)
            if link != beacon.endpoint:
                self._links[beacon.endpoint] = link
                self.partner = beacon.uuid
                self.log.info("peer_linked_inproc", peer=beacon.uuid, endpoint=beacon.endpoint)
            return True
        except zmq.ZMQError:
            self.log.warning("peer_unreachable", peer=beacon.uuid, endpoint=beacon.endpoint, exc_info=True)
            self._unreachable[(beacon.uuid, beacon.endpoint)] = None
            if len(self._unreachable) > MAX_UNREACHABLE:
                del self._unreachable[next(iter(self._unreachable))]
            return False

    def _link(self, beacon: TowerBeacon) -> str:
        """The endpoint to connect for a peer: its inproc one if it is our first partner here."""
        if self._local is None or self._links:
            return beacon.endpoint
        return self._local.partner_endpoint(self.kind, beacon.uuid) or beacon.endpoint

    def _disconnect(self, endpoint: str) -> None:
        try:
            self.subscriber.disconnect(self._links.pop(endpoint, endpoint))
        except zmq.ZMQError:  # the table disconnects each endpoint once: a bug, but not a fatal one
            self.log.exception("peer_disconnect_failed", endpoint=endpoint)

    async def _beacon_loop(self) -> None:
        frames = encode_node_beacon(NodeBeacon(self.uuid, self.config.beacon_address, self.port))
        while True:
            await self._beacon_out.send(frames)
            with trio.move_on_after(self.config.beacon_interval_ms / 1000):
                await self._beacon_soon.wait()
            self._beacon_soon = trio.Event()

    async def _expire_loop(self) -> None:
        """A peer expires after `timeout` of silence on the relaying clock, not the wall clock: it
        moves with the beacons any tower relays (ours comes back every interval), a gap counting
        for one interval at most. A time with no tower relaying, every tower down or this process
        stalled on a busy machine, is nobody's silence, and after it each peer has a whole timeout
        to be heard again (counted up to now, a restarted tower's first relay would expire every
        peer whose beacon comes after it). With several towers a dead one slows that clock for
        no peer another one relays."""
        timeout = self.config.beacon_timeout_ms / 1000
        while True:
            await trio.sleep(min(1.0, timeout / 4))
            for uuid, endpoint in self.peers.silent_since(self._relaying.time - timeout):
                self._disconnect(self.peers.forget(uuid))
                self.log.info("peer_expired", peer=uuid, endpoint=endpoint)

