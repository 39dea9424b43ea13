"""A producer node hosting any number of partitions on one identity and socket pair.

Each hosted partition has its own UUID (the partition's name), subject and
sequence counter, keeps its records until a store ACKs them (answering
FETCHes from them meanwhile) and tells its caller when enough distinct stores
hold a record. Run as `python -m gateway.mesh.dafka_producer TOPIC` to publish the
lines of stdin.

A partition hosted with a leader epoch is fenced (our FENCE extension, see
store/fences.py): the producer announces the epoch and its first sequence
when it hosts the partition, to every store writer that subscribes (a store
new or back), and again every ANNOUNCE_EVERY_HEADS HEADs; it counts only the
stores' EPOCH-ACKs of that epoch, and is deposed by one of a newer epoch (or
by any, if it was hosted without one).
`Producer.fence` is the claim before hosting: the stores' FENCED answers.
"""

from __future__ import annotations

import itertools
import os
import sys
from collections import deque
from collections.abc import Callable, Sequence

import trio
import zmq

from gateway.lifecycle import run_node, start_command
from gateway.mesh.leader_epochs import NO_EPOCH, Epochs, epoch_at
from gateway.mesh.mesh_node import MeshNode, keep_serving
from gateway.settings.declaration import Command
from gateway.settings.table import MeshSettings
from gateway.zmq_trio import subscription_event
from protocol.dafka import (
    Ack,
    DirectRecord,
    EpochAck,
    Fence,
    Fenced,
    Fetch,
    Head,
    Record,
    content_prefix,
    encode,
    encode_sequence,
    new_uuid,
    subscription,
)

RECV_BATCH = 256
WINDOW = 5000  # records the command-line producer publishes ahead of ACKs (within DATA_HWM)
PUBLISH_BATCH = 500  # lines of stdin published at once
STDIN_CHUNK = 1 << 16

MAX_UNACKED_BYTES = 512 * 1024 * 1024
FENCE_RETRY_S = 0.5  # a claim not answered by every store by then is sent again (stores answer alike)
# An announcement lost on the way (a store's full pipe) is sent again with a later HEAD: each
# partition's with every tenth, a tenth of them at each, as thousands idle cost the stores.
ANNOUNCE_EVERY_HEADS = 10
DropHook = Callable[[str, int], bool]  # (partition UUID, sequence) -> skip publishing it


class ProducerPartition:
    """One partition this node publishes: records are numbered from `next_sequence` on."""

    def __init__(self, producer: Producer, subject: str, uuid: str, next_sequence: int, epoch: int | None = None,
                 epochs: Epochs = (), announce_slot: int = 0):
        self.producer = producer
        self.announce_slot = announce_slot  # the HEADs (modulo ANNOUNCE_EVERY_HEADS) that repeat the announcement
        self.subject = subject
        self.uuid = uuid
        self.next_sequence = next_sequence
        self.start = next_sequence
        self.epoch = epoch  # the leader epoch it is fenced at; None: not fenced, plain ACKs count
        # The log's epochs (epoch, first sequence): those it continues, then its own from `start`.
        self.epochs = (*(tuple(pair) for pair in epochs if pair[1] < next_sequence),
                       *(((epoch, next_sequence),) if epoch is not None else ()))
        self.deposed_by: int | None = None  # the epoch of the EPOCH-ACK that told of a newer fence
        self._unacked: deque = deque()  # contents from sequence `_first_unacked` on
        self._first_unacked = next_sequence
        self._acked_by: dict[str, int] = {}  # store -> highest sequence it ACKed
        self._waiters: list[tuple[int, int, Callable[[], None]]] = []  # (sequence, stores, called once acked)
        self._diverged_stores: set[str] = set()  # stores that ACKed sequences we never published
        self._failed_stores: dict[str, int] = {}  # store whose disk failed -> sequence it must hold again
        self._holding: list[int] | None = None  # what counting stores ACKed, highest first (None: sort again)
        self._prefix = content_prefix(Record(uuid, subject, 0, b""))
        self._head_prefix = content_prefix(Head(uuid, subject, 0))
        self._announcement: list | None = None  # encoded once: epoch, start and epochs never change
        self._acks_listener: Callable[[], None] | None = None

    async def publish(self, content) -> int:
        """Publish one record and return its sequence (not yet durable: see wait_acked)."""
        return await self.publish_many([content])

    def has_room(self, size: int) -> bool:
        """Whether the records no store has taken yet leave room for `size` more bytes."""
        return self.producer.unacked.has_room(size)

    async def wait_for_room(self, size: int) -> None:
        """Until the records no store has taken yet leave room for `size` more bytes."""
        await self.producer.unacked.wait_for_room(size)

    async def publish_many(self, contents: Sequence) -> int:
        """Publish records in one go (one scheduling point); the sequence of the first."""
        await trio.lowlevel.checkpoint_if_cancelled()
        first = self.publish_now(contents)
        await trio.lowlevel.cancel_shielded_checkpoint()
        return first

    def publish_now(self, contents: Sequence) -> int:
        """Publish records without a scheduling point (a PUB drops at its high-water mark,
        never waits): callers keep their appends atomic without a lock. They go out when the
        loop's pass ends, with what other tasks published meanwhile, ahead of any later HEAD
        or FETCH answer (`Socket.send_soon`). The sequence of the first."""
        first = self.next_sequence
        self.next_sequence += len(contents)
        self._unacked.extend(contents)
        self.producer.unacked.taken(sum(len(content) for content in contents))
        drop = self.producer.drop
        messages = [
            [self._prefix + encode_sequence(sequence), content]
            for sequence, content in enumerate(contents, first)
            if drop is None or not drop(self.uuid, sequence)
        ]
        self.producer.node.publisher.send_soon(messages)
        return first

    async def wait_acked(self, sequence: int, stores: int) -> None:
        """Return once `stores` distinct stores have ACKed every record up to `sequence`, or
        the partition is deposed (`deposed_by`): it never will be then."""
        if self._covered(sequence) >= stores or self.deposed_by is not None:
            await trio.lowlevel.checkpoint()
            return
        event = trio.Event()
        self.call_when_acked(sequence, stores, event.set)
        await event.wait()

    def call_when_acked(self, sequence: int, stores: int, callback: Callable[[], None]) -> None:
        """Call `callback` once `stores` distinct stores have ACKed every record up to
        `sequence`, or the partition is deposed (the caller checks first that neither is so)."""
        self._waiters.append((sequence, stores, callback))

    def watch_acks(self, listener: Callable[[], None] | None) -> None:
        """Call `listener` (None: nobody) whenever a store ACKs more of this partition."""
        self._acks_listener = listener

    def acked_through(self, stores: int) -> int:
        """The highest sequence that at least `stores` distinct stores hold, with all before it (-1: none);
        stores whose disk failed do not count until they have written again."""
        acked = self._holding  # asked several times per request, changed once per ACK
        if acked is None:
            acked = self._holding = sorted((sequence for store, sequence in self._acked_by.items()
                                            if store not in self._failed_stores), reverse=True)
        return acked[stores - 1] if 0 < stores <= len(acked) else -1

    def acked_by(self, store: str) -> int:
        """The highest sequence `store` has ACKed (-1: none)."""
        return self._acked_by.get(store, -1)

    @property
    def failed_stores(self) -> dict[str, int]:
        """Stores whose disk failed that do not hold every record published then (-> the last)."""
        return self._failed_stores

    def store_failed(self, store: str) -> None:
        """`store`'s disk failed: if it lacks records published, it counts for `acked_through`
        only once it holds them all, which a store restarted on a failing disk never does."""
        if self._acked_by.get(store, -1) < self.next_sequence - 1:
            self._failed_stores[store] = self.next_sequence - 1
            self._holding = None

    def on_plain_ack(self, store: str, sequence: int) -> None:
        """An ACK of a store that was never fenced: it counts unless we were."""
        if self.epoch is None:
            self.on_ack(store, sequence)

    def on_epoch_ack(self, store: str, sequence: int, epoch: int) -> None:
        """An EPOCH-ACK: ours counts; an older epoch's counts for the log below our start if
        our log has that epoch there too (else the store holds what a missed epoch replaced)."""
        if self.epoch is None or epoch > self.epoch:
            self._deposed(store, epoch)
        elif epoch == self.epoch:
            self.on_ack(store, sequence)
        elif sequence < self.start and self._ours_at(sequence, epoch):
            self.on_ack(store, sequence)

    def _ours_at(self, sequence: int, epoch: int) -> bool:
        """Whether our log has `epoch` at `sequence` (or one side does not know)."""
        ours = epoch_at(self.epochs, sequence)
        return NO_EPOCH in (epoch, ours) or epoch == ours

    def _deposed(self, store: str, epoch: int) -> None:
        """A store is fenced at a newer epoch than ours: this partition has another leader,
        whose records take our sequences; what waits for ACKs will never get them."""
        if self.deposed_by is None:
            self.producer.node.log.warning("partition_deposed", subject=self.subject, partition=self.uuid,
                                           epoch=self.epoch, store=store, store_epoch=epoch)
        self.deposed_by = max(epoch, self.deposed_by or epoch)
        for _, _, callback in self._waiters:
            callback()
        self._waiters = []

    def announcement(self) -> list:
        """FENCE naming our epoch and start, for the stores that missed it (none: not fenced)."""
        if self.epoch is None or self.deposed_by is not None:
            return []
        if self._announcement is None:
            self._announcement = [encode(Fence(self.uuid, self.producer.node.uuid, self.subject, self.epoch,
                                               self.start, self.epochs))]
        return self._announcement

    def head(self) -> list:
        """HEAD naming the last sequence published."""
        return [self._head_prefix + encode_sequence(self.next_sequence - 1)]

    def on_ack(self, store: str, sequence: int) -> None:
        if store in self._diverged_stores:
            return
        if store in self._failed_stores and self._failed_stores[store] <= sequence:
            del self._failed_stores[store]
            self._holding = None
        if sequence >= self.next_sequence:
            # The store holds sequences this partition never published: another life of it
            # went further than we were told. Its ACKs would pass its records off as ours,
            # so they count for nothing from now on: writes waiting on it fail, loudly.
            self._diverged_stores.add(store)
            self.producer.node.log.error("ack_beyond_published", subject=self.subject, partition=self.uuid,
                                         store=store, acked=sequence, published=self.next_sequence - 1)
            return
        if sequence <= self._acked_by.get(store, -1):
            return
        self._acked_by[store] = sequence
        self._holding = None
        freed = 0
        while self._unacked and self._first_unacked <= sequence:
            freed += len(self._unacked.popleft())
            self._first_unacked += 1
        self.producer.unacked.freed(freed)
        if self._acks_listener is not None:
            self._acks_listener()
        waiting = []
        for waiter in self._waiters:
            if self._covered(waiter[0]) >= waiter[1]:
                waiter[2]()
            else:
                waiting.append(waiter)
        self._waiters = waiting

    def answer(self, fetch: Fetch) -> list[list]:
        """DIRECT-RECORDs for a FETCH, if this partition still holds its first record."""
        first = fetch.sequence
        if not self._first_unacked <= first < self.next_sequence:
            return []
        last = min(first + fetch.count, self.next_sequence) - 1
        return [
            encode(DirectRecord(fetch.requester, self.uuid, self.subject, sequence,
                                self._unacked[sequence - self._first_unacked]))
            for sequence in range(first, last + 1)
        ]

    @property
    def unacked_bytes(self) -> int:
        return sum(len(content) for content in self._unacked)

    def _covered(self, sequence: int) -> int:
        return sum(1 for acked in self._acked_by.values() if acked >= sequence)


class UnackedBytes:
    """The bytes of records no store has ACKed yet, which the producer must keep
    for FETCHes: bounded, so that stores gone for long cannot exhaust memory."""

    def __init__(self, limit: int):
        self.limit = limit
        self.bytes = 0
        self._freed = trio.Event()

    def has_room(self, size: int) -> bool:
        return not self.bytes or self.bytes + size <= self.limit  # one record always fits

    async def wait_for_room(self, size: int) -> None:
        while not self.has_room(size):
            await self._freed.wait()

    def taken(self, size: int) -> None:
        self.bytes += size

    def freed(self, size: int) -> None:
        if size:
            self.bytes -= size
            self._freed.set()
            self._freed = trio.Event()


class _Claim:
    """The FENCED answers to one claim, by store."""

    def __init__(self):
        self.answers: dict[str, Fenced] = {}
        self.answered = trio.Event()

    def take(self, answer: Fenced) -> None:
        self.answers[answer.store] = answer
        self.answered.set()
        self.answered = trio.Event()


class Producer:
    """The node: one beacon identity, one PUB/SUB pair, many hosted partitions."""

    def __init__(self, context: zmq.Context, config: MeshSettings, *, drop: DropHook | None = None,
                 max_unacked_bytes: int = MAX_UNACKED_BYTES):
        # Verbose XPUB: a store writer subscribing to FENCE tells that it (re)connected.
        self.node = MeshNode(context, config, kind="producer", verbose_publisher=True)
        self.drop = drop  # test hook: records it selects are never published, only FETCHable
        self.partitions: dict[str, ProducerPartition] = {}
        self.unacked = UnackedBytes(max_unacked_bytes)
        self._claims: dict[tuple[str, str], _Claim] = {}  # (subject, partition) -> answers to our claim
        self._foreign_acks: Callable[[Ack], None] | None = None
        self._announce_slots = itertools.count()
        self.node.subscribe(subscription(Fenced, self.node.uuid))

    def follow_foreign_acks(self, listener: Callable[[Ack], None]) -> None:
        """Hear every store's ACK, of any partition: `listener` gets those of partitions not
        hosted here. For a process that needs both (the gateway finds native producers by
        their stores' ACKs), each ACK then comes in once, not once per node."""
        self._foreign_acks = listener
        self.node.subscribe(subscription(Ack))

    def close(self) -> None:
        self.node.close()

    def host(self, subject: str, *, uuid: str | None = None, next_sequence: int = 0,
             epoch: int | None = None, epochs: Epochs = ()) -> ProducerPartition:
        """Start publishing a partition (a new one, or one resumed at `next_sequence`), fenced
        at leader `epoch` if given, continuing a log of `epochs` (a won claim's): the
        announcement goes ahead of its records."""
        partition = ProducerPartition(self, subject, uuid or new_uuid(), next_sequence, epoch, epochs,
                                      next(self._announce_slots) % ANNOUNCE_EVERY_HEADS)
        self.partitions[partition.uuid] = partition
        for message_type in (Ack, EpochAck, Fetch):
            self.node.subscribe(subscription(message_type, partition.uuid))
        self.node.publisher.send_nowait(partition.announcement())
        return partition

    async def fence(self, subject: str, partition: str, epoch: int, stores: Callable[[], int],
                    won: Callable[[dict[str, Fenced]], bool], timeout_s: float) -> dict[str, Fenced]:
        """Claim `partition` at leader `epoch`: FENCE to the stores, again every FENCE_RETRY_S
        (a store answers a claim it accepted again alike), until `stores()` of them have
        answered, the answers so far `won`, or `timeout_s` passed. The answers by store."""
        key = (subject, partition)
        claim = self._claims[key] = _Claim()
        try:
            with trio.move_on_after(timeout_s):
                while len(claim.answers) < stores() and not won(claim.answers):
                    answered = claim.answered  # before the send yields: an answer may come meanwhile
                    await self.node.send(Fence(partition, self.node.uuid, subject, epoch))
                    with trio.move_on_after(FENCE_RETRY_S):
                        await answered.wait()
        finally:
            del self._claims[key]
        return claim.answers

    def store_failed(self, store: str) -> None:
        """The store whose writer is `store` lost what it had not synced (its disk failed)."""
        for partition in self.partitions.values():
            partition.store_failed(store)

    def release(self, partition: ProducerPartition) -> None:
        """Stop hosting a partition (e.g. its leadership moved elsewhere)."""
        del self.partitions[partition.uuid]
        self.unacked.freed(partition.unacked_bytes)
        for message_type in (Ack, EpochAck, Fetch):
            self.node.unsubscribe(subscription(message_type, partition.uuid))

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            await nursery.start(self.node.run)
            nursery.start_soon(keep_serving, self.node.log, self._send_heads)
            nursery.start_soon(keep_serving, self.node.log, self._announce_to_new_stores)
            task_status.started()
            await keep_serving(self.node.log, self._receive)

    async def _receive(self) -> None:
        while True:
            answers = []
            for first_frame, message in await self.node.receive_with_frames(RECV_BATCH):
                if isinstance(message, Fenced):
                    claim = self._claims.get((message.subject, message.partition))
                    if claim is not None and message.requester == self.node.uuid:
                        claim.take(message)
                    continue
                partition = self.partitions.get(getattr(message, "partition", None))
                if partition is None or partition.subject != message.subject:
                    if isinstance(message, Ack) and self._foreign_acks is not None:
                        self._foreign_acks(message)
                    continue
                if isinstance(message, Ack):
                    partition.on_plain_ack(self.node.sender_of(first_frame), message.sequence)
                elif isinstance(message, EpochAck):
                    partition.on_epoch_ack(self.node.sender_of(first_frame), message.sequence, message.epoch)
                elif isinstance(message, Fetch):
                    answers.extend(partition.answer(message))
            if answers:  # the receive yielded already: ACKs alone cost no further step
                await self.node.publisher.send_batch(answers)

    async def _send_heads(self) -> None:
        for count in itertools.count():
            await trio.sleep(self.node.config.head_interval_ms / 1000)
            slot = count % ANNOUNCE_EVERY_HEADS
            heads = [p.head() for p in self.partitions.values() if p.next_sequence > 0]
            announcements = self._announcements(p for p in self.partitions.values() if p.announce_slot == slot)
            await self.node.publisher.send_batch(announcements + heads)

    async def _announce_to_new_stores(self) -> None:
        """A store writer subscribing to FENCE is new or back, and may have missed announcements:
        every partition's goes out again (the subscription holds before we read of it)."""
        while True:
            frames = await self.node.publisher.recv()
            if bytes(frames[0]) == subscription_event(Fence.ID):
                await self.node.publisher.send_batch(self._announcements(list(self.partitions.values())))

    @staticmethod
    def _announcements(partitions) -> list:
        return [message for partition in partitions for message in partition.announcement()]


async def _publish_stdin(context: zmq.Context, config: MeshSettings, topic: str, acks: int) -> None:
    producer = Producer(context, config)
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(producer.run)
            partition = producer.host(topic, uuid=producer.node.uuid)
            async for lines in _stdin_lines():
                for start in range(0, len(lines), PUBLISH_BATCH):
                    batch = lines[start : start + PUBLISH_BATCH]
                    last = partition.next_sequence + len(batch) - 1
                    if acks and last >= WINDOW:  # stay within what the sockets can queue
                        await partition.wait_acked(last - WINDOW, 1)
                    await partition.publish_many(batch)
            if acks and partition.next_sequence:
                await partition.wait_acked(partition.next_sequence - 1, acks)
            producer.node.log.info("published", topic=topic, records=partition.next_sequence)
            nursery.cancel_scope.cancel()
    finally:
        producer.close()


async def _stdin_lines():
    """The lines of stdin without their newlines, a chunk's worth at a time, read straight from the loop."""
    pending = b""
    async with trio.lowlevel.FdStream(os.dup(sys.stdin.fileno())) as stdin:
        while chunk := await stdin.receive_some(STDIN_CHUNK):
            lines = (pending + chunk).split(b"\n")
            pending = lines.pop()
            if lines:
                yield lines
    if pending:
        yield [pending]


def main() -> None:
    loaded = start_command(Command.PRODUCER, "dafka-producer", "Dafka producer: publishes each line of standard "
                           "input as a record.", _arguments)
    run_node(_publish_stdin, loaded.settings.mesh, loaded.arguments.topic, loaded.arguments.acks,
             mesh=loaded.settings.mesh)


def _arguments(parser) -> None:
    parser.add_argument("topic")
    parser.add_argument("--acks", type=int, default=0,
                        help="at end of input, wait until this many stores hold every record; default 0")


if __name__ == "__main__":
    main()
