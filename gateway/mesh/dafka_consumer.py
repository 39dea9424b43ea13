"""A consumer node: every partition of its topics, in order, exactly once.

Gaps (seen from a RECORD past the next expected one, or from a HEAD) are
filled by FETCH; stores greet us (STORE-HELLO / CONSUMER-HELLO) and tell us
the heads, so with offset reset `earliest` a late consumer replays history.
`read` serves a caller who wants a range of any partition on demand.
Run as `python -m gateway.mesh.dafka_consumer TOPIC...` to print contents to stdout.
"""

from __future__ import annotations

import os
import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import trio
import zmq

from gateway.lifecycle import run_node, start_command
from gateway.mesh.mesh_node import MeshNode, keep_serving
from gateway.mesh.ordering import FETCH_RETRY_S, PartitionSequencer, Sequencers, fill_gaps, keep_filling_gaps
from gateway.mesh.peer_table import Peer
from gateway.settings.declaration import Command
from gateway.settings.table import MeshSettings
from gateway.zmq_trio import subscription_event
from protocol.dafka import (
    ConsumerHello,
    DirectHead,
    DirectRecord,
    Fetch,
    GetHeads,
    Head,
    HeadsDone,
    Record,
    StoreHello,
    encode,
    subscribed_address,
    subscription,
    unsubscribed_address,
)

RECV_BATCH = 256
DELIVERY_BUFFER = 64  # batches of up to RECV_BATCH deliveries
HEADS_WAIT_S = 1.0  # how long stores may take to answer GET-HEADS
HEADS_ASKS = 4  # GET-HEADS sent within that window: a lost question or answer is asked again
# A consumer that missed a partition's last records and HEADs (its queue was full) would never
# learn of them once the producer is gone; stores know every head, so we ask them now and then.
HEADS_POLL_S = 1.0
STDOUT_BATCH = 4096  # lines per write


@dataclass(frozen=True, slots=True)
class Delivery:
    subject: str
    partition: str
    sequence: int
    content: object  # a buffer: bytes, or ZeroMQ's frame when large (bytes(content) copies it)


@dataclass
class _Read:
    """An on-demand read waiting for records [first, first + count)."""

    first: int
    count: int
    records: dict = field(default_factory=dict)
    done: trio.Event = field(default_factory=trio.Event)
    arrived: trio.Event = field(default_factory=trio.Event)  # a record came since the last look

    def next_missing(self) -> int:
        sequence = self.first
        while sequence in self.records:
            sequence += 1
        return sequence

    def offer(self, sequence: int, content) -> None:
        if self.first <= sequence < self.first + self.count:
            self.records[sequence] = content
            self.arrived.set()
            if len(self.records) == self.count:
                self.done.set()

    async def wait_done_or_stalled(self, stall_s: float) -> None:
        """Until every record came, or none did for `stall_s`: an answer still
        streaming in is not asked for again."""
        while not self.done.is_set():
            self.arrived = trio.Event()
            with trio.move_on_after(stall_s) as stalled:
                await self.arrived.wait()
            if stalled.cancelled_caught:
                return


class Consumer:
    def __init__(self, context: zmq.Context, config: MeshSettings, subjects: Sequence[str]):
        self.node = MeshNode(context, config, kind="consumer", verbose_publisher=True)
        self.subjects = frozenset(subjects)
        self.earliest = config.consumer_offset_reset == "earliest"
        self.sequencers = Sequencers()
        self._reads: dict[tuple[str, str], list[_Read]] = defaultdict(list)
        self._heads: dict[str, list[dict[str, int]]] = defaultdict(list)
        # subject -> partition -> the highest head stores reported (the periodic GET-HEADS included)
        self._known_heads: dict[str, dict[str, int]] = defaultdict(dict)
        self._stores: set[str] = set()  # store readers subscribed to our publisher
        # Store readers whose STORE-HELLO reached our subscriber, with the peer entry our subscriber
        # was connected by then: the greeting holds while that connection does (`_greeted`).
        self._greeted_by: dict[str, Peer] = {}
        self._stores_changed = trio.Event()
        self._heads_done: list[set[tuple[str, str]]] = []  # per heads() call: (store, subject) told all
        self._heads_done_changed = trio.Event()
        # Lists of deliveries, one per batch of messages received: a channel operation per record costs more.
        self._deliver, self.deliveries = trio.open_memory_channel[list[Delivery]](DELIVERY_BUFFER)
        me = self.node.uuid
        for prefix in (subscription(DirectRecord, me), subscription(DirectHead, me), subscription(StoreHello, me),
                       subscription(HeadsDone, me)):
            self.node.subscribe(prefix)
        for subject in self.subjects:
            self.node.subscribe(subscription(Record, subject))
            self.node.subscribe(subscription(Head, subject))

    def close(self) -> None:
        self.node.close()

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        async with self._deliver, trio.open_nursery() as nursery:
            await nursery.start(self.node.run)
            for loop in (self._watch_subscriptions, self._ask_heads):
                nursery.start_soon(keep_serving, self.node.log, loop)
            nursery.start_soon(keep_serving, self.node.log, keep_filling_gaps, self.node, self.sequencers)
            task_status.started()
            await keep_serving(self.node.log, self._receive)

    async def read(self, subject: str, partition: str, from_sequence: int, count: int,
                   *, timeout: float = 2.0) -> list[tuple[int, object]]:
        """Records [from_sequence, from_sequence + count) of a partition, FETCHed from
        stores or its producer; on timeout, the contiguous part received so far."""
        request = _Read(from_sequence, count)
        waiting = self._reads[(subject, partition)]
        waiting.append(request)
        try:
            with trio.move_on_after(timeout):
                while not request.done.is_set():
                    first = request.next_missing()
                    await self.node.send(Fetch(partition, self.node.uuid, subject, first,
                                               from_sequence + count - first))
                    await request.wait_done_or_stalled(FETCH_RETRY_S)
        finally:
            waiting.remove(request)
            if not waiting:
                del self._reads[(subject, partition)]
        end = request.next_missing()
        return [(sequence, request.records[sequence]) for sequence in range(from_sequence, end)]

    async def _receive(self) -> None:
        while True:
            touched = set()
            deliveries: list[Delivery] = []
            for message in await self.node.receive(RECV_BATCH):
                if isinstance(message, StoreHello):
                    if message.store in self.node.peers:
                        self._greeted_by[message.store] = self.node.peers[message.store]
                    self._signal_stores_changed()
                    await self._hello(message.store)
                elif isinstance(message, HeadsDone):
                    self._note_heads_done(message)
                elif key := self._take(message, deliveries):
                    touched.add(key)
            if deliveries:
                await self._deliver.send(deliveries)
            await fill_gaps(self.node, self.sequencers, touched)

    def _take(self, message, deliveries: list[Delivery]) -> tuple[str, str] | None:
        """Feed a record or head to its partition, adding what is now in order to `deliveries`;
        the partition's key if it may lag."""
        if isinstance(message, (Record, DirectRecord)):
            key = (message.subject, message.partition)
            for request in self._reads.get(key, ()):
                request.offer(message.sequence, message.content)
        elif isinstance(message, (Head, DirectHead)):
            key = (message.subject, message.partition)
            if isinstance(message, DirectHead):
                for found in (self._known_heads[message.subject], *self._heads.get(message.subject, ())):
                    found[message.partition] = max(found.get(message.partition, -1), message.sequence)
        else:
            return None
        if message.subject not in self.subjects:
            return None
        sequencer = self._sequencer(key, message)
        if sequencer is None:
            return None
        if isinstance(message, (Head, DirectHead)):
            sequencer.note_head(message.sequence)
            return key
        for sequence, content in sequencer.offer(message.sequence, message.content):
            deliveries.append(Delivery(key[0], key[1], sequence, content))
        return key

    def _sequencer(self, key, message) -> PartitionSequencer | None:
        sequencer = self.sequencers.get(key)
        if sequencer is None:
            if self.earliest:
                sequencer = PartitionSequencer(0)
            elif isinstance(message, Record):  # latest: start at the first record seen
                sequencer = PartitionSequencer(message.sequence)
            else:
                return None
            self.sequencers[key] = sequencer
            self.node.log.info("partition_found", subject=key[0], partition=key[1], first=sequencer.next_sequence)
        return sequencer

    def stores(self) -> frozenset[str]:
        """The store readers connected to this consumer now, both ways."""
        return frozenset(store for store in self._stores if self._greeted(store))

    def store_count(self) -> int:
        """How many `stores` there are (asked several times a produce request: no set built)."""
        return sum(map(self._greeted, self._stores))

    def _greeted(self, store: str) -> bool:
        """Whether the store reader's greeting came over the connection our subscriber still has to it.
        Each direction is a connection of its own: a store that expired us (we were paused) and
        reconnected its subscriber subscribes to us again but never greets again, as ours to it
        stayed; one we expired and reconnected to greets again, as it sees our subscription anew."""
        greeting = self._greeted_by.get(store)
        return greeting is not None and self.node.peers.get(store) is greeting

    async def wait_for_stores(self, count: int) -> None:
        """Return once at least `count` store readers are connected both ways.

        A reader's subscription to our publisher says it hears our questions;
        its STORE-HELLO, sent when our subscription reached it, says its
        answers reach us. Before both, an answer could be dropped unseen and
        a partition taken for empty.
        """
        while self.store_count() < count:
            await self._stores_changed.wait()

    async def heads(self, *subjects: str, timeout: float = HEADS_WAIT_S) -> dict[str, dict[str, int]]:
        """subject -> partition -> the highest head any store reports: once every store connected
        both ways has sent HEADS-DONE for every subject (ours do), else after `timeout` (a C
        reference store never sends it), asking again within it in case a message was lost."""
        # What stores reported before counts too: an answer to an earlier GET-HEADS may end its
        # DIRECT-HEADs before this call and its HEADS-DONE after it (heads only grow).
        found: dict[str, dict[str, int]] = {subject: dict(self._known_heads.get(subject, {})) for subject in subjects}
        for subject in subjects:
            self._heads[subject].append(found[subject])
        done: set[tuple[str, str]] = set()
        self._heads_done.append(done)
        try:
            with trio.move_on_after(timeout):
                while not self._told_all(done, subjects):
                    await self._send_get_heads(subjects)
                    with trio.move_on_after(timeout / HEADS_ASKS):
                        while not self._told_all(done, subjects):
                            await self._heads_done_changed.wait()
        finally:
            self._heads_done.remove(done)
            for subject in subjects:
                self._heads[subject].remove(found[subject])
                if not self._heads[subject]:
                    del self._heads[subject]
        return found

    def _told_all(self, done: set[tuple[str, str]], subjects) -> bool:
        return all((store, subject) in done for store in self.stores() for subject in subjects)

    def _note_heads_done(self, message: HeadsDone) -> None:
        for done in self._heads_done:
            done.add((message.store, message.subject))
        self._heads_done_changed.set()
        self._heads_done_changed = trio.Event()

    def _note_store(self, frame) -> str | None:
        """Track store readers by their `W`+UUID (un)subscriptions; the UUID if one came."""
        store = subscribed_address(frame, ConsumerHello)
        gone = unsubscribed_address(frame, ConsumerHello)
        if store is not None:
            self._stores.add(store)
        elif gone is not None:
            self._stores.discard(gone)
        if store is not None or gone is not None:
            for stale in [greeter for greeter in self._greeted_by if not self._greeted(greeter)]:
                del self._greeted_by[stale]
            self._signal_stores_changed()
        return store

    def _signal_stores_changed(self) -> None:
        self._stores_changed.set()
        self._stores_changed = trio.Event()

    async def _ask_heads(self) -> None:
        while True:
            await trio.sleep(HEADS_POLL_S)
            await self._send_get_heads(self.subjects)

    async def _send_get_heads(self, subjects) -> None:
        await self.node.publisher.send_batch([encode(GetHeads(s, self.node.uuid)) for s in subjects])

    async def _watch_subscriptions(self) -> None:
        """Verbose XPUB: a store reader's `W`+UUID subscription means it just connected."""
        while True:
            frames = await self.node.publisher.recv()
            store = self._note_store(frames[0])
            if store is not None:
                await self._hello(store)
            elif bytes(frames[0]) == subscription_event(GetHeads.ID) and self.earliest:
                for subject in self.subjects:
                    await self.node.send(GetHeads(subject, self.node.uuid))

    async def _hello(self, store: str) -> None:
        if self.earliest and self.subjects:
            await self.node.send(ConsumerHello(store, self.node.uuid, tuple(sorted(self.subjects))))


async def _print_contents(context: zmq.Context, config: MeshSettings, topics: list[str]) -> None:
    consumer = Consumer(context, config, topics)
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(consumer.run)
            # Non-blocking writes of everything delivered so far: a slow reader of our
            # stdout must not stop the loop (and with it our beacons).
            async with trio.lowlevel.FdStream(os.dup(sys.stdout.fileno())) as out:
                async for deliveries in consumer.deliveries:
                    while len(deliveries) < STDOUT_BATCH:
                        try:
                            deliveries += consumer.deliveries.receive_nowait()
                        except trio.WouldBlock:
                            break
                    await out.send_all(b"\n".join([bytes(delivery.content) for delivery in deliveries]) + b"\n")
    finally:
        consumer.close()


def main() -> None:
    loaded = start_command(Command.CONSUMER, "dafka-consumer", "Dafka consumer: prints each record's content "
                           "as a line.", lambda parser: parser.add_argument("topics", nargs="+"))
    run_node(_print_contents, loaded.settings.mesh, loaded.arguments.topics, mesh=loaded.settings.mesh)


if __name__ == "__main__":
    main()
