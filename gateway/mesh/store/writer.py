"""The store's writer node: takes every partition's records durably, in order.

Group commit: everything queued on the socket is taken at once, appended,
made durable by one sync, and then each partition that grew gets one
cumulative ACK. Log I/O runs in a worker thread so the trio loop keeps
receiving meanwhile; the next batch is simply larger.
"""

from __future__ import annotations

import time

import trio
import zmq

from gateway.mesh.config import MeshConfig
from gateway.mesh.node import MeshNode
from gateway.mesh.ordering import PartitionSequencer, Sequencers, fill_gaps, keep_filling_gaps
from protocol.dafka import Ack, DirectRecord, Fetch, Head, Record, decode, encode, subscription
from protocol.errors import DecodeError

RECV_BATCH = 512


class StoreWriter:
    def __init__(self, context: zmq.Context, config: MeshConfig, log, *, uuid: str):
        self.node = MeshNode(context, config, kind="store-writer", uuid=uuid)
        self.log = log
        self.sequencers = Sequencers()
        for prefix in (subscription(Record), subscription(Head), subscription(DirectRecord, uuid)):
            self.node.subscribe(prefix)

    def close(self) -> None:
        self.node.close()

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        heads = await trio.to_thread.run_sync(lambda: {key: self.log.head(*key) for key in self.log.partitions()})
        for key, head in heads.items():
            self.sequencers[key] = PartitionSequencer(head + 1)
        async with trio.open_nursery() as nursery:
            await nursery.start(self.node.run)
            nursery.start_soon(keep_filling_gaps, self.node, self.sequencers)
            task_status.started()
            await self._receive()

    async def _receive(self) -> None:
        while True:
            appends: list[tuple[str, str, int, object]] = []
            heads_seen: set[tuple[str, str]] = set()
            touched: set[tuple[str, str]] = set()
            for frames in await self.node.subscriber.recv_batch(RECV_BATCH):
                try:
                    message = decode(frames)
                except DecodeError as error:
                    self.node.log.warning("bad_message", reason=error.reason)
                    continue
                key = (message.subject, message.partition)
                touched.add(key)
                sequencer = self.sequencers.get(key)
                if sequencer is None:  # a new partition: the store wants it from the start
                    sequencer = self.sequencers[key] = PartitionSequencer(0)
                if isinstance(message, Head):
                    sequencer.note_head(message.sequence)
                    heads_seen.add(key)
                else:
                    appends.extend((*key, s, c) for s, c in sequencer.offer(message.sequence, message.content))
            if appends:
                await trio.to_thread.run_sync(self._append_durably, appends)
            grown = {(subject, partition) for subject, partition, _, _ in appends}
            await self._ack(grown | {k for k in heads_seen if self.sequencers[k].next_sequence > 0})
            await fill_gaps(self.node, self.sequencers, touched)

    def _append_durably(self, appends) -> None:
        now_ms = int(time.time() * 1000)
        for subject, partition, sequence, content in appends:
            self.log.append(subject, partition, sequence, content, now_ms)
        self.log.sync()

    async def _ack(self, keys) -> None:
        """One cumulative ACK per partition; HEADs are answered too, so a producer
        that missed an ACK (e.g. it connected late) learns it within a HEAD interval."""
        await self.node.publisher.send_batch([
            encode(Ack(partition, subject, self.sequencers[(subject, partition)].next_sequence - 1))
            for subject, partition in keys
        ])
