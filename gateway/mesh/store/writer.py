"""The store's writer node: takes every partition's records durably, in order.

Group commit, pipelined: the receiving task puts records in sequence order
and queues them; the committing task takes everything queued at once,
appends it and makes it durable with one sync in a worker thread, then sends
each partition that grew one cumulative ACK. So while one sync runs (it can
take a second on a busy disk), the next batch is received and grows instead
of waiting.

Records of the discard subject are directives from gateways: each is applied
when it is written, deleting the segments below a partition's log start.
"""

from __future__ import annotations

import time

import trio
import zmq

from gateway.mesh.config import MeshConfig
from gateway.mesh.node import MeshNode
from gateway.mesh.ordering import PartitionSequencer, Sequencers, fill_gaps, keep_filling_gaps
from gateway.mesh.store.discard import DISCARD_SUBJECT, RESERVED_PREFIX, decode_discard
from protocol.dafka import Ack, DirectRecord, Head, Record, decode, encode, subscription
from protocol.errors import DecodeError

RECV_BATCH = 512
MAX_QUEUED_BYTES = 64 << 20  # content waiting for the next commit; beyond it, stop receiving


class StoreWriter:
    def __init__(self, context: zmq.Context, config: MeshConfig, log, *, uuid: str):
        self.node = MeshNode(context, config, kind="store-writer", uuid=uuid)
        self.log = log
        self.sequencers = Sequencers()
        self.durable: dict[tuple[str, str], int] = {}  # (subject, partition) -> last sequence synced
        self._queued: dict[tuple[str, str], tuple[int, list]] = {}  # key -> (first sequence, contents)
        self._queued_bytes = 0
        self._heads_seen: set[tuple[str, str]] = set()
        self._work = trio.Event()  # set when something waits for the committer
        self._committed = trio.Event()  # set after each commit
        for prefix in (subscription(Record), subscription(Head), subscription(DirectRecord, uuid)):
            self.node.subscribe(prefix)

    def close(self) -> None:
        self.node.close()

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        heads = await trio.to_thread.run_sync(lambda: {key: self.log.head(*key) for key in self.log.partitions()})
        for key, head in heads.items():
            self.sequencers[key] = PartitionSequencer(head + 1)
            self.durable[key] = head
        async with trio.open_nursery() as nursery:
            await nursery.start(self.node.run)
            nursery.start_soon(keep_filling_gaps, self.node, self.sequencers)
            nursery.start_soon(self._commit_loop)
            task_status.started()
            await self._receive()

    async def _receive(self) -> None:
        while True:
            while self._queued_bytes >= MAX_QUEUED_BYTES:
                await self._committed.wait()
            touched: set[tuple[str, str]] = set()
            for frames in await self.node.subscriber.recv_batch(RECV_BATCH):
                try:
                    message = decode(frames)
                except DecodeError as error:
                    self.node.log.warning("bad_message", reason=error.reason)
                    continue
                key = (message.subject, message.partition)
                touched.add(key)
                self._take(key, message)
            self._work.set()
            await fill_gaps(self.node, self.sequencers, touched)

    def _take(self, key: tuple[str, str], message) -> None:
        sequencer = self.sequencers.get(key)
        if sequencer is None:  # a new partition: the store wants it from the start
            sequencer = self.sequencers[key] = PartitionSequencer(0)
        if isinstance(message, Head):
            sequencer.note_head(message.sequence)
            self._heads_seen.add(key)
            return
        ready = sequencer.offer(message.sequence, message.content)
        if not ready:
            return
        queued = self._queued.get(key)
        if queued is None:
            queued = self._queued[key] = (ready[0][0], [])
        for _, content in ready:
            queued[1].append(content)
            self._queued_bytes += len(content)

    async def _commit_loop(self) -> None:
        while True:
            await self._work.wait()
            self._work = trio.Event()
            appends, self._queued, self._queued_bytes = self._queued, {}, 0
            heads_seen, self._heads_seen = self._heads_seen, set()
            if appends:
                await trio.to_thread.run_sync(self._append_durably, appends)
            self._committed.set()
            self._committed = trio.Event()
            grown = {key: first + len(contents) - 1 for key, (first, contents) in appends.items()}
            self.durable.update(grown)
            await self._ack(grown.keys() | (heads_seen & self.durable.keys()))

    def _append_durably(self, appends) -> None:
        now_ms = int(time.time() * 1000)
        for (subject, partition), (first, contents) in appends.items():
            self.log.append_many(subject, partition, first, contents, now_ms)
            if subject == DISCARD_SUBJECT:
                self._apply_discards(partition, first, contents)
        self.log.sync()

    def _apply_discards(self, address: str, first: int, contents) -> None:
        """Apply directives as they are written: the gateway made their log starts durable
        before it sent them, so even a directive that a crash loses is safe to apply."""
        for content in contents:
            try:
                discard = decode_discard(content)
            except ValueError as error:
                self.node.log.error("bad_discard_directive", address=address, reason=str(error))
                continue
            if discard.subject.startswith(RESERVED_PREFIX):
                self.node.log.error("discard_of_reserved_subject_refused", subject=discard.subject)
                continue
            self.log.discard_before(*discard)
        # Directives below these were applied when written, and later ones supersede them.
        self.log.discard_before(DISCARD_SUBJECT, address, first)

    async def _ack(self, keys) -> None:
        """One cumulative ACK per partition, for what is synced; HEADs are answered too, so
        a producer that missed an ACK (e.g. it connected late) learns it within a HEAD interval."""
        await self.node.publisher.send_batch([
            encode(Ack(partition, subject, self.durable[(subject, partition)])) for subject, partition in keys
        ])
