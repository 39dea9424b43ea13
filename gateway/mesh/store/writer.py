"""The store's writer node: takes every partition's records durably, in order.

Group commit, pipelined: the receiving task puts records in sequence order
and queues them; the committing task takes everything queued at once,
appends it and makes it durable with one sync, then sends each partition
that grew one cumulative ACK. A commit runs on the store's own loop while
commits are quick (handing it to a thread costs more CPU than a write and an
fdatasync of a small batch); after one slower than INLINE_COMMIT_S, the next
runs in a worker thread, so that a slow disk (a sync can take a second) does
not stall the loop: the next batch is then received and grows meanwhile.
While an inline commit runs, arriving records wait in ZeroMQ's queues and
the next commit takes them together.

A failed write or sync (StorageFailed) ends the writer: the log cut back
what was not durable, and nothing of it was acknowledged.

Records of the discard subject are directives from gateways: each is applied
on receipt, deleting the segments below a partition's log start; a compacted
topic's partition's directive also tells the cleaner how far it may clean
(`compactions`, read by cleaner.py). A store
behind a directive (it was down, is new or lags) skips to that log start
instead of waiting for records that nobody holds any more, as a Kafka
follower resets to the leader's log start.
"""

from __future__ import annotations

import time

import trio
import zmq

from gateway.mesh.mesh_node import MeshNode, keep_serving
from gateway.mesh.ordering import PartitionSequencer, Sequencers, fill_gaps, keep_filling_gaps
from gateway.settings.table import MeshSettings
from protocol.dafka import Ack, DirectRecord, Head, Record, encode, subscription
from protocol.journal.discard_directive import DISCARD_SUBJECT, Compaction, decode_discard

RECV_BATCH = 512
MAX_QUEUED_BYTES = 64 << 20  # content waiting for the next commit; beyond it, stop receiving
INLINE_COMMIT_S = 0.002  # a commit that took longer sends the next one to a worker thread


class StoreWriter:
    def __init__(self, context: zmq.Context, config: MeshSettings, log, *, uuid: str):
        self.node = MeshNode(context, config, kind="store-writer", uuid=uuid)
        self.log = log
        self.sequencers = Sequencers()
        self.durable: dict[tuple[str, str], int] = {}  # (subject, partition) -> last sequence synced
        self._queued: dict[tuple[str, str], tuple[int, list]] = {}  # key -> (first sequence, contents)
        self._queued_bytes = 0
        self._heads_seen: set[tuple[str, str]] = set()
        self.log_starts: dict[tuple[str, str], int] = {}  # key -> highest `before` directed, even if not held yet
        self._discards_due: dict[tuple[str, str], int] = {}  # key -> `before`, applied ahead of the next appends
        self.compactions: dict[tuple[str, str], Compaction] = {}  # what the cleaner may clean, by key
        self._work = trio.Event()  # set when something waits for the committer
        self._committed = trio.Event()  # set after each commit
        self.last_commit_s = 0.0  # how long the last commit's writes and sync took
        for prefix in (subscription(Record), subscription(Head), subscription(DirectRecord, uuid)):
            self.node.subscribe(prefix)

    def close(self) -> None:
        self.node.close()

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        heads = await trio.to_thread.run_sync(lambda: {key: self.log.head(*key) for key in self.log.partitions()})
        for key, head in heads.items():
            self.sequencers[key] = PartitionSequencer(head + 1)
            self.durable[key] = head
        for content in await trio.to_thread.run_sync(self._directives_kept):
            self._take_directive(content)  # what the cleaner may clean, before gateways send it again
        async with trio.open_nursery() as nursery:
            await nursery.start(self.node.run)
            nursery.start_soon(keep_serving, self.node.log, keep_filling_gaps, self.node, self.sequencers)
            nursery.start_soon(self._commit_loop)
            task_status.started()
            await keep_serving(self.node.log, self._receive)

    async def _receive(self) -> None:
        while True:
            while self._queued_bytes >= MAX_QUEUED_BYTES:
                await self._committed.wait()
            touched: set[tuple[str, str]] = set()
            for message in await self.node.receive(RECV_BATCH):
                key = (message.subject, message.partition)
                touched.add(key)
                self._take(key, message)
            self._work.set()
            await fill_gaps(self.node, self.sequencers, touched)

    def _take(self, key: tuple[str, str], message) -> None:
        sequencer = self.sequencers.get(key)
        if sequencer is None:  # a new partition: the store wants it from its log start (0 if no directive said)
            sequencer = self.sequencers[key] = PartitionSequencer(self.log_starts.get(key, 0))
        if message.subject == DISCARD_SUBJECT:
            # Any directive is superseded by later ones, which gateways send again: never wait
            # for a gap, only FETCH the newest (which peers keep) when a HEAD tells of it.
            self._skip(key, message.sequence)
            if not isinstance(message, Head):
                self._take_directive(message.content)
        if isinstance(message, Head):
            sequencer.note_head(message.sequence)
            self._heads_seen.add(key)
            return
        self._queue(key, sequencer.offer(message.sequence, message.content))

    def _directives_kept(self) -> list:
        """The directives this store still holds (the newest: older ones go as applied)."""
        return [entry.content for subject, address in self.log.partitions() if subject == DISCARD_SUBJECT
                for entry in self.log.read(subject, address, self.log.first(subject, address), 2**31, 2**62)]

    def _take_directive(self, content) -> None:
        """Directives apply on receipt, in whatever order they come: they only grow, and the
        gateway made each log start durable before it sent it."""
        try:
            discard = decode_discard(content)
        except ValueError as error:
            self.node.log.error("bad_discard_directive", reason=str(error))
            return
        if discard.subject == DISCARD_SUBJECT:  # the directives discard themselves, as they are applied
            self.node.log.error("discard_of_directives_refused", subject=discard.subject)
            return
        key = (discard.subject, discard.address)
        self._direct_cleaning(key, discard.compact)
        self.log_starts[key] = max(discard.before, self.log_starts.get(key, 0))
        self._discard_due(key, discard.before)
        if key in self.sequencers:
            self._skip(key, discard.before)

    def _direct_cleaning(self, key: tuple[str, str], compact: Compaction | None) -> None:
        """Positions only grow, as directives arrive in any order; none stops the cleaning."""
        if compact is None:
            self.compactions.pop(key, None)
            return
        known = self.compactions.get(key, compact)
        self.compactions[key] = Compaction(*map(max, zip(known[:3], compact[:3], strict=True)), compact.dirty_ratio)

    def _skip(self, key: tuple[str, str], sequence: int) -> None:
        """Stop waiting for the records below `sequence`: they were discarded."""
        sequencer = self.sequencers[key]
        if sequence <= sequencer.next_sequence:
            return
        self.node.log.info("store_skipped_to_log_start", subject=key[0], partition=key[1],
                           expected=sequencer.next_sequence, log_start=sequence)
        dropped = self._queued.pop(key, None)
        if dropped is not None:
            self._queued_bytes -= sum(len(content) for content in dropped[1])
        self._discard_due(key, sequence)  # what the log holds lies below: it starts over at `sequence`
        self._queue(key, sequencer.skip_to(sequence))

    def _discard_due(self, key: tuple[str, str], before: int) -> None:
        self._discards_due[key] = max(before, self._discards_due.get(key, 0))
        self._work.set()

    def _queue(self, key: tuple[str, str], ready: list) -> None:
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
            discards, self._discards_due = self._discards_due, {}
            heads_seen, self._heads_seen = self._heads_seen, set()
            if appends or discards:
                await self._commit(discards, appends)
            self._committed.set()
            self._committed = trio.Event()
            grown = {key: first + len(contents) - 1 for key, (first, contents) in appends.items()}
            self.durable.update(grown)
            await self._ack(grown.keys() | (heads_seen & self.durable.keys()))

    async def _commit(self, discards, appends) -> None:
        if self.last_commit_s < INLINE_COMMIT_S:
            self._write_durably(discards, appends)
        else:
            await trio.to_thread.run_sync(self._write_durably, discards, appends)

    def _write_durably(self, discards, appends) -> None:
        """Discards first: a partition that skipped to its log start is emptied before its
        records from there on are appended."""
        started = time.perf_counter()
        now_ms = int(time.time() * 1000)
        for key, before in discards.items():
            self.log.discard_before(*key, before)
        for (subject, partition), (first, contents) in appends.items():
            self.log.append_many(subject, partition, first, contents, now_ms)
            if subject == DISCARD_SUBJECT:  # directives below were applied, and later ones supersede them
                self.log.discard_before(DISCARD_SUBJECT, partition, first)
        self.log.sync()
        self.last_commit_s = time.perf_counter() - started

    async def _ack(self, keys) -> None:
        """One cumulative ACK per partition, for what is synced; HEADs are answered too, so
        a producer that missed an ACK (e.g. it connected late) learns it within a HEAD interval."""
        await self.node.publisher.send_batch([
            encode(Ack(partition, subject, self.durable[(subject, partition)])) for subject, partition in keys
        ])
