"""A CHP client: mirrors one subtree of the cluster hashmap and updates it.

It follows one server at a time: subscribe, snapshot, then live updates.
A server that sends no HUGZ for `hugz_timeout` seconds, whose sequence
goes back (it restarted), that turned passive or that does not answer the
snapshot request (a passive whose active peer lives) is reported as
ServerLost to the watchers and the client moves to the next server in its
list, for as long as it runs. A client of every key that finds updates
missing (a sequence that jumps) takes a snapshot from the same server again.
Updates go to every listed server, so that a passive keeps them pending in
case the active dies before it replicated them.
"""

import itertools
import uuid
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractContextManager, ExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import TypeVar

import structlog
import trio
import zmq

from gateway.chp.changes import Change, Endpoint, ServerLost, Synced, Update, Watchers
from gateway.chp.hashmap import Hashmap
from gateway.zmq_curve import CurveKeys, connect
from gateway.zmq_trio import Socket, is_subscription_event
from protocol.chp import (
    CAS,
    HUGZ,
    KTHXBAI,
    TTL,
    KVMsg,
    decode_kvmsg,
    encode_icanhaz,
    encode_kvmsg,
    is_command_key,
    is_passive_hugz,
)
from protocol.errors import DecodeError

log = structlog.get_logger()
T = TypeVar("T")
D = TypeVar("D")


class ServerDead(Exception):
    """The server being followed has to be given up."""


class UpdatesMissed(Exception):
    """The mirror lacks updates the server published (a sequence jumped): it syncs again."""


@dataclass
class _CompareAndSet:
    """A compare-and-set this client sent and whose outcome it waits to see."""

    expected: int
    uuid: bytes
    settled: trio.Event = field(default_factory=trio.Event)
    won: bool = False


class ChpClient:
    """A mirror of the keys under `subtree`, fed by whichever listed server is alive."""

    def __init__(
        self,
        servers: Sequence[Endpoint],
        subtree: str = "",
        *,
        hugz_timeout: float = 5.0,
        watch_buffer: int = 1024,
        context: zmq.Context | None = None,
        keys: CurveKeys | None = None,
    ):
        if not servers:
            raise ValueError("a CHP client needs at least one server")
        self.servers = list(servers)
        self.subtree = subtree
        self.hugz_timeout = hugz_timeout
        self.hashmap = Hashmap()
        self.changes = 0  # of the mirror: what is decoded from it holds until this moves
        self._decoded: dict[str, tuple[bytes, object]] = {}  # key -> (value, what `decoded` made of it)
        self.server: Endpoint | None = None
        self._watchers = Watchers(watch_buffer)
        self._context = context or zmq.Context.instance()
        self._keys = keys  # the CURVE keys of an authenticated server
        self._updates: list[Socket] | None = None  # the followed server's collector first
        self._synced = trio.Event()
        self._cas: defaultdict[str, list[_CompareAndSet]] = defaultdict(list)

    def get(self, key: str) -> bytes | None:
        msg = self.hashmap.entries.get(key)
        return None if msg is None else msg.body

    def sequence(self, key: str) -> int:
        """The sequence of the update that set `key` (0: absent): what compare_and_set expects."""
        return self.hashmap.key_sequence(key)

    def items(self) -> dict[str, bytes]:
        return {key: msg.body for key, msg in self.hashmap.entries.items()}

    def keys_under(self, prefix: str) -> list[str]:
        return [msg.key for msg in self.hashmap.subtree(prefix)]

    def decoded(self, key: str, decode: Callable[[bytes], D]) -> D | None:
        """`decode` of the key's value (None while absent), called once per value: a cluster's
        mirror holds a key per partition, which its reconcilers read whole at each change."""
        body = self.get(key)
        if body is None:
            self._decoded.pop(key, None)
            return None
        known = self._decoded.get(key)
        if known is None or known[0] is not body:
            known = self._decoded[key] = (body, decode(body))
        return known[1]

    def watch(self) -> AbstractContextManager[trio.MemoryReceiveChannel[Change]]:
        """`with client.watch() as changes: async for change in changes: ...`"""
        return self._watchers.watch()

    async def set(self, key: str, value: bytes, ttl: float | None = None) -> None:
        """Ask the server to set `key`; it expires `ttl` seconds after the server gets it."""
        if not value:
            raise ValueError("an empty value deletes; call delete()")
        properties = {TTL: _ttl_text(ttl)} if ttl else {}
        await self._send(KVMsg(key=key, body=value, uuid=uuid.uuid4().bytes, properties=properties))

    async def compare_and_set(
        self, key: str, value: bytes, expected_sequence: int, ttl: float | None = None, *, timeout: float = 15.0
    ) -> bool:
        """Set `key` only if its sequence is still `expected_sequence` (0: absent); whether this set won.

        The outcome shows in the first update of `key` above the expected
        sequence: this client's own (won) or another's (lost), also across a
        fail-over. When a fail-over's snapshot shows the key already changed
        again after this set won, it counts as lost (it no longer holds).
        trio.TooSlowError if nothing showed within `timeout` seconds: then
        the outcome is unknown (read the key to learn it).
        """
        if not value:
            raise ValueError("an empty value deletes; compare_and_set needs a value")
        if self.sequence(key) > expected_sequence:
            return False
        properties = {CAS: str(expected_sequence)} | ({TTL: _ttl_text(ttl)} if ttl else {})
        waiter = _CompareAndSet(expected_sequence, uuid.uuid4().bytes)
        self._cas[key].append(waiter)
        try:
            with trio.fail_after(timeout):
                await self._send(KVMsg(key=key, body=value, uuid=waiter.uuid, properties=properties))
                await waiter.settled.wait()
            return waiter.won
        finally:
            self._cas[key].remove(waiter)
            if not self._cas[key]:
                del self._cas[key]

    async def delete(self, key: str) -> None:
        await self._send(KVMsg(key=key, uuid=uuid.uuid4().bytes))

    async def wait_synced(self) -> None:
        while self._updates is None:
            await self._synced.wait()

    async def _send(self, msg: KVMsg) -> None:
        # Waits for a live server, so a caller's own timeout bounds an outage.
        if is_command_key(msg.key):
            raise ValueError(f"{msg.key} is a CHP command, not a key")
        await self.wait_synced()
        frames = encode_kvmsg(msg)
        # To every collector in one step: `run` closes these sockets when it gives the server up,
        # which it may do at any scheduling point. An XPUB never makes a sender wait (it drops
        # what a subscriber cannot take), so nothing is lost by not waiting.
        for updates in self._updates:
            updates.send_nowait([frames])
        await trio.lowlevel.checkpoint()

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Follow the servers in turn until cancelled; started after the first snapshot."""
        servers = itertools.cycle(self.servers)
        server = next(servers)
        while True:
            try:
                with ExitStack() as sockets:
                    subscriber, first = await self._sync(server, sockets)
                    task_status.started()
                    task_status = trio.TASK_STATUS_IGNORED
                    await self._follow_updates(subscriber, first)
            except UpdatesMissed as missed:  # the snapshot brings them, and the watchers learn them
                log.warning("chp.updates_missed", server=server, reason=str(missed))
            except ServerDead as death:
                log.warning("chp.server_lost", server=server, reason=str(death))
                self._watchers.emit(ServerLost(server, str(death)))
                server = next(servers)
            finally:
                self.server, self._updates = None, None
                self._synced = trio.Event()

    async def _sync(self, server: Endpoint, sockets: ExitStack) -> tuple[Socket, KVMsg]:
        """Connect to `server` and take its snapshot; the subscriber and its first message."""
        host, port = server
        subscriber, snapshot = (
            sockets.enter_context(Socket(self._context, kind, linger_ms=0)) for kind in (zmq.SUB, zmq.DEALER)
        )
        collectors = [server, *(other for other in self.servers if other != server)]
        updates = [sockets.enter_context(Socket(self._context, zmq.XPUB, linger_ms=0)) for _ in collectors]
        for socket in (subscriber, snapshot, *updates):
            connect(socket.zsock, self._keys)
        for stream in (subscriber, *updates):
            stream.unlimited()  # an update dropped here would leave the mirror, or the server, without it
        for socket, (collector_host, collector_port) in zip(updates, collectors, strict=True):
            socket.zsock.connect(f"tcp://{collector_host}:{collector_port + 2}")
        for prefix in {self.subtree.encode(), HUGZ.encode()}:
            subscriber.zsock.setsockopt(zmq.SUBSCRIBE, prefix)
        subscriber.zsock.connect(f"tcp://{host}:{port + 1}")
        snapshot.zsock.connect(f"tcp://{host}:{port}")
        # The first message proves our subscription is in place, so no
        # update published after the snapshot can slip past us; the
        # collector's subscription does the same for our KVSETs.
        first = await self._receive(subscriber, "message on the subscriber")
        await self._within(_subscribed(updates[0]), "subscription from the collector")
        await self._take_snapshot(snapshot)
        self.server, self._updates = server, updates
        self._synced.set()
        log.info("chp.synced", server=server, sequence=self.hashmap.sequence)
        self._watchers.emit(Synced(server, self.hashmap.sequence))
        return subscriber, first

    async def _take_snapshot(self, snapshot: Socket) -> None:
        await snapshot.send(encode_icanhaz(self.subtree))
        fresh = Hashmap()
        while (msg := await self._receive(snapshot, "snapshot")).key != KTHXBAI:
            fresh.store(msg)
        fresh.sequence = msg.sequence
        for key in self.hashmap.entries.keys() - fresh.entries.keys():
            self._watchers.emit(Update(key, None, fresh.sequence))
        for key, entry in fresh.entries.items():
            if self.sequence(key) != entry.sequence or self.get(key) != entry.body:
                self._watchers.emit(Update(key, entry.body, entry.sequence, entry.uuid))
        self.hashmap = fresh
        self.changes += 1
        self._decoded.clear()
        for key in list(self._cas):
            if key in fresh.entries:
                self._settle(fresh.entries[key])

    async def _follow_updates(self, subscriber: Socket, first: KVMsg) -> None:
        # Messages queued before the snapshot may be older than it; the
        # stream has caught up once one is at or past the snapshot. A client
        # of every key gets every update, in sequence, and a HUGZ after the
        # updates it counts: a sequence that jumps tells of updates lost (a
        # connection the server dropped and ZeroMQ made again).
        every_key = not self.subtree
        caught_up = seen_active = False
        msg = first
        while True:
            if is_passive_hugz(msg):
                # Stale ones may precede the snapshot of a passive that took over.
                if seen_active:
                    raise ServerDead("server became passive")
            elif msg.key == HUGZ:
                seen_active = True
                if caught_up and msg.sequence < self.hashmap.sequence:
                    raise ServerDead("server sequence went back: it restarted")
                if every_key and msg.sequence > self.hashmap.sequence:
                    raise UpdatesMissed(f"the server is at {msg.sequence}, the mirror at {self.hashmap.sequence}")
                caught_up |= msg.sequence >= self.hashmap.sequence
            elif msg.sequence > self.hashmap.sequence:
                if every_key and msg.sequence > self.hashmap.sequence + 1:
                    raise UpdatesMissed(f"update {msg.sequence} after {self.hashmap.sequence}")
                self.hashmap.store(msg)
                self.changes += 1
                if not msg.body:
                    self._decoded.pop(msg.key, None)
                self._watchers.emit(Update(msg.key, msg.body or None, msg.sequence, msg.uuid))
                self._settle(msg)
                caught_up = True
            msg = await self._receive(subscriber, "HUGZ")

    def _settle(self, msg: KVMsg) -> None:
        """Resolve the compare-and-sets on `msg.key` that `msg` decides."""
        for waiter in self._cas.get(msg.key, ()):
            if msg.sequence > waiter.expected and not waiter.settled.is_set():
                waiter.won = msg.uuid == waiter.uuid
                waiter.settled.set()

    async def _receive(self, socket: Socket, what: str) -> KVMsg:
        """The next well-formed message; ServerDead if nothing comes in time."""
        while True:
            frames = await self._within(socket.recv(), what)
            try:
                return decode_kvmsg(frames)
            except DecodeError as error:
                log.warning("chp.bad_server_message", reason=str(error))

    async def _within(self, operation: Awaitable[T], what: str) -> T:
        with trio.move_on_after(self.hugz_timeout):
            return await operation
        raise ServerDead(f"no {what} within {self.hugz_timeout}s")


def _ttl_text(seconds: float) -> str:
    # Whole seconds go out as integers, the only form C servers (atoi) read.
    if seconds < 0:
        raise ValueError(f"ttl {seconds} is negative")
    return str(int(seconds)) if float(seconds).is_integer() else repr(float(seconds))


async def _subscribed(xpub: Socket) -> None:
    while not is_subscription_event((await xpub.recv())[0]):
        pass


@asynccontextmanager
async def open_chp_client(
    servers: Sequence[Endpoint], subtree: str = "", **options
) -> AsyncIterator[ChpClient]:
    """A running client, synced with a server; it stops when the block ends."""
    client = ChpClient(servers, subtree, **options)
    async with trio.open_nursery() as nursery:
        await nursery.start(client.run)
        yield client
        nursery.cancel_scope.cancel()
