"""The store's reader node: answers FETCH, GET-HEADS and CONSUMER-HELLO from the log.

Its publisher is a verbose XPUB so that it sees consumers subscribe to
`L`+UUID and greets them with STORE-HELLO. With XPUB_NODROP it learns when a
requester's queue is full; it then ends that answer instead of waiting, so a
slow requester never stalls the others: it FETCHes the rest again later.

Of a fenced partition it serves only what the fence admits (fences.py): an
older epoch's records past the new leader's start, about to be truncated,
are never served.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Container
from itertools import takewhile

import trio
import zmq

from gateway.mesh.mesh_node import MeshNode, keep_serving
from gateway.mesh.store.fences import FenceBook, batch_epoch
from gateway.settings.table import MeshSettings
from protocol.dafka import (
    Ack,
    ConsumerHello,
    DirectHead,
    DirectRecord,
    EpochAck,
    Fetch,
    GetHeads,
    HeadsDone,
    StoreHello,
    content_prefix,
    decode,
    encode,
    encode_sequence,
    subscribed_address,
    subscription,
)
from protocol.errors import DecodeError

READ_MAX_BYTES = 16 << 20  # records read from the log per worker-thread call
READ_MAX_COUNT = 4096
DECLINED_MEMORY = 10_000  # FETCHes left to another store, remembered to answer their retry


class FetchRota:
    """Which of the stores holding a FETCH's first record answers it, so that a requester
    gets each record once instead of once per store.

    Stores are known by their writers' ACKs, which say how far each holds a partition (our
    own writer's holdings are read from it directly: its ACKs need not come back over the
    mesh); the duty rotates over the live holders with the first sequence asked for. A FETCH
    that comes again (the store on duty lost the answer, died or trimmed its log) is
    answered whoever is on duty. A reference store answers everything, which is harmless.
    """

    def __init__(self, own_writer: str, own_held: Callable[[tuple[str, str]], int]):
        self._own_writer = own_writer
        self._own_held = own_held  # key -> the last sequence our writer holds (-1: none)
        self._acked: dict[tuple[str, str], dict[str, int]] = defaultdict(dict)  # key -> store -> sequence
        self._declined: dict[Fetch, None] = {}  # insertion-ordered: the oldest is forgotten first

    def note_ack(self, store: str, ack: Ack | EpochAck) -> None:
        acked = self._acked[(ack.subject, ack.partition)]
        acked[store] = max(acked.get(store, -1), ack.sequence)

    def on_duty(self, fetch: Fetch, live: Container[str]) -> bool:
        key = (fetch.subject, fetch.partition)
        if self._own_held(key) < fetch.sequence:
            return True
        acked = self._acked.get(key, {})
        holders = sorted([self._own_writer, *(store for store, sequence in acked.items()
                                              if sequence >= fetch.sequence and store != fetch.requester
                                              and store != self._own_writer and store in live)])
        if holders[fetch.sequence % len(holders)] == self._own_writer:
            return True
        if fetch in self._declined:  # asked again: the answer of the store on duty did not come
            del self._declined[fetch]
            return True
        self._declined[fetch] = None
        if len(self._declined) > DECLINED_MEMORY:
            del self._declined[next(iter(self._declined))]
        return False


class StoreReader:
    def __init__(self, context: zmq.Context, config: MeshSettings, log, *, writer_uuid: str, fences: FenceBook,
                 durable: dict[tuple[str, str], int]):
        # Nothing our writer publishes is for us (its ACKs are in `durable`): not connecting to it
        # spares both a copy of every ACK.
        self.node = MeshNode(context, config, kind="store-reader", verbose_publisher=True,
                             ignored_peers=frozenset([writer_uuid]))
        self.node.publisher.never_drop()
        self.log = log
        self.writer_uuid = writer_uuid
        self.fences = fences  # the writer's, read on the same loop
        self.rota = FetchRota(writer_uuid, lambda key: durable.get(key, -1))
        for prefix in (subscription(Fetch), subscription(GetHeads), subscription(ConsumerHello, self.node.uuid),
                       subscription(Ack), subscription(EpochAck)):
            self.node.subscribe(prefix)

    def close(self) -> None:
        self.node.close()

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            await nursery.start(self.node.run)
            nursery.start_soon(keep_serving, self.node.log, self._greet_consumers)
            task_status.started()
            await keep_serving(self.node.log, self._receive)

    async def _receive(self) -> None:
        while True:
            frames = await self.node.subscriber.recv()
            try:
                message = decode(frames)
            except DecodeError as error:
                self.node.log.warning("bad_message", reason=error.reason)
                continue
            if isinstance(message, (Ack, EpochAck)):
                self.rota.note_ack(self.node.sender_of(frames[0]), message)
            elif (isinstance(message, Fetch) and message.requester != self.writer_uuid
                  and self.rota.on_duty(message, self.node.peers)):
                await self._answer_fetch(message)
            elif isinstance(message, GetHeads):
                await self._send_heads(message.consumer, [message.subject])
            elif isinstance(message, ConsumerHello) and message.store == self.node.uuid:
                await self._send_heads(message.consumer, message.subjects)

    async def _answer_fetch(self, fetch: Fetch) -> None:
        """Records in ascending order, only if the log holds the first one asked for."""
        sequence, end = fetch.sequence, fetch.sequence + fetch.count
        prefix = content_prefix(DirectRecord(fetch.requester, fetch.partition, fetch.subject, 0, b""))
        while sequence < end:
            entries = await trio.to_thread.run_sync(self._read, fetch.subject, fetch.partition, sequence,
                                                    min(end - sequence, READ_MAX_COUNT))
            entries = self._servable(fetch, entries)
            if not entries or entries[0].sequence != sequence:
                return
            answers = [[prefix + encode_sequence(entry.sequence), entry.content] for entry in entries]
            if self.node.publisher.send_nowait(answers) < len(answers):
                return
            sequence = entries[-1].sequence + 1

    def _servable(self, fetch: Fetch, entries: list) -> list:
        """The entries up to the first the partition's fence, if any, does not admit."""
        fence = self.fences.get((fetch.subject, fetch.partition))
        if fence is None:
            return entries
        return list(takewhile(lambda entry: fence.admits(entry.sequence, batch_epoch(entry.content)), entries))

    def _read(self, subject: str, partition: str, sequence: int, count: int) -> list:
        return list(self.log.read(subject, partition, sequence, count, READ_MAX_BYTES))

    async def _send_heads(self, consumer: str, subjects) -> None:
        wanted = set(subjects)

        def heads():
            return [(s, p, self.log.head(s, p)) for s, p in self.log.partitions() if s in wanted]

        self.node.publisher.send_nowait([  # lost if the consumer's queue is full: it asks again
            *(encode(DirectHead(consumer, partition, subject, head))
              for subject, partition, head in await trio.to_thread.run_sync(heads)
              if head is not None),
            *(encode(HeadsDone(consumer, self.node.uuid, subject)) for subject in wanted),
        ])

    async def _greet_consumers(self) -> None:
        """A consumer subscribing to `L`+its UUID has just connected to us."""
        while True:
            frames = await self.node.publisher.recv()
            consumer = subscribed_address(frames[0], StoreHello)
            if consumer is not None:
                self.node.publisher.send_nowait([encode(StoreHello(consumer, self.node.uuid))])
