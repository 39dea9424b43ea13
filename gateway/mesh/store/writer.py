"""The store's writer node: takes every partition's records durably, in order.

Group commit, pipelined: the receiving task puts records in sequence order
and queues them; a commit takes everything queued at once, appends it and
makes it durable with one sync, then sends each partition that grew one
cumulative ACK. While commits are quick, the receiving task commits itself,
on the store's own loop, right after a receipt (handing a commit to a thread
or to another task costs more CPU than a write and an fdatasync of a small
batch); after a commit that fsynced slower than INLINE_COMMIT_S, the
committing task runs the next one that fsyncs in a worker thread, so that a
slow disk (a sync can take a second) does not stall the loop: the next batch
is then received and grows meanwhile. A commit that only hands its writes to
the OS (store.fsync interval, between fsyncs) runs inline: in a worker thread
it cost a third more CPU per record, both threads contending for the GIL.
The same holds for a store in the gateway's process, where a slow sync
stalls the gateway's requests too, but once: the next goes to a thread.
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
follower resets to the leader's log start. A deleted topic's partition is
deleted whole, its fence too; its records that still come below the
directive's sequence are taken for duplicates, and a FENCE for it (its
leader's periodic announcement, sent before that leader learnt of the
deletion) is ignored from then on while the store runs.

FENCE (our extension) fences a partition at a leader epoch (fences.py): the
claim is made durable with the next commit and answered after it (FENCED,
with the head that commit left); from then on the partition's records of
older epochs are refused (never stored, never ACKed), its ACKs name the
epoch of the record they cover (EPOCH-ACK), and a newer epoch's record for a
sequence held from an older one truncates the log there.
"""

from __future__ import annotations

import time
from typing import NamedTuple

import trio
import zmq

from gateway.mesh.leader_epochs import NO_EPOCH
from gateway.mesh.mesh_node import MeshNode, keep_serving
from gateway.mesh.ordering import PartitionSequencer, Sequencers, fill_gaps, keep_filling_gaps
from gateway.mesh.store.fences import BookWrite, FenceBook, PartitionFence, batch_epoch
from gateway.settings.table import MeshSettings
from gateway.wall_clock import now_ms
from gateway.zmq_trio import COPIED_BELOW
from protocol.dafka import NO_START, Ack, DirectRecord, EpochAck, Fence, Fenced, Head, Record, encode, subscription
from protocol.journal.discard_directive import DISCARD_SUBJECT, Compaction, decode_discard

RECV_BATCH = 512
MAX_QUEUED_BYTES = 64 << 20  # content waiting for the next commit; beyond it, stop receiving
INLINE_COMMIT_S = 0.002  # a commit that fsynced slower sends the next that fsyncs to a worker thread


class _Commit(NamedTuple):
    """What one commit takes: all that was queued for it since the last."""

    forgets: set[tuple[str, str]]  # partitions of deleted topics
    discards: dict[tuple[str, str], int]
    book: BookWrite | None  # the fence book's changes, if any
    truncations: dict[tuple[str, str], int]
    appends: dict[tuple[str, str], tuple[int, list]]
    answers: list[tuple[str, tuple[str, str], bool]]  # FENCED due after it
    heads_seen: set[tuple[str, str]]  # answered by ACKs after it

    @property
    def writes(self) -> bool:
        return bool(self.forgets or self.discards or self.book is not None or self.truncations or self.appends)


class StoreWriter:
    def __init__(self, context: zmq.Context, config: MeshSettings, log, *, uuid: str, fences: FenceBook):
        self.node = MeshNode(context, config, kind="store-writer", uuid=uuid)
        self.log = log
        self.fences = fences
        self._truncations_due: dict[tuple[str, str], int] = {}  # key -> first sequence to delete
        self._fence_answers: list[tuple[str, tuple[str, str], bool]] = []  # (requester, key, accepted)
        self.sequencers = Sequencers()
        self.durable: dict[tuple[str, str], int] = {}  # (subject, partition) -> last sequence synced
        self._queued: dict[tuple[str, str], tuple[int, list]] = {}  # key -> (first sequence, contents)
        self._queued_bytes = 0
        self._heads_seen: set[tuple[str, str]] = set()
        self.log_starts: dict[tuple[str, str], int] = {}  # key -> highest `before` directed, even if not held yet
        self._discards_due: dict[tuple[str, str], int] = {}  # key -> `before`, applied ahead of the next appends
        self._forgets_due: set[tuple[str, str]] = set()  # deleted whole, ahead of everything else
        self._deleted: set[tuple[str, str]] = set()  # deleted since this store started: never fenced again
        self.compactions: dict[tuple[str, str], Compaction] = {}  # what the cleaner may clean, by key
        self._work = trio.Event()  # set when something waits for the committer
        self._committed = trio.Event()  # set after each commit
        self._in_thread = False  # a commit runs in a worker thread: the next waits for it
        self.last_commit_s = 0.0  # how long the last commit that fsynced took, its writes and sync
        for prefix in (subscription(Record), subscription(Head), subscription(DirectRecord, uuid),
                       subscription(Fence)):
            self.node.subscribe(prefix)

    def close(self) -> None:
        self.node.close()

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        heads = await trio.to_thread.run_sync(self._load)
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

    def _load(self) -> dict[tuple[str, str], int]:
        """The heads of the partitions held, and the fence book, redoing a truncation to an
        announced start that a crash cut short."""
        heads = {key: self.log.head(*key) for key in self.log.partitions()}
        self.fences.load(heads)
        for key, fence in self.fences.items():
            if fence.stale_from_start(heads.get(key, -1)):
                self.log.truncate_from(*key, fence.start)
                fence.floor = fence.start
                heads[key] = fence.start - 1
        return heads

    async def _receive(self) -> None:
        while True:
            while self._queued_bytes >= MAX_QUEUED_BYTES:
                await self._committed.wait()
            touched: set[tuple[str, str]] = set()
            for message in await self.node.receive(RECV_BATCH):
                if isinstance(message, Fence):
                    self._take_fence(message)
                    continue
                key = (message.subject, message.partition)
                touched.add(key)
                self._take(key, message)
            if self._in_thread or not self._commits_inline():
                self._work.set()
            else:  # here, not in the committing task: a task step less per commit
                self._commit_inline()
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
        fence = self.fences.get(key)
        if fence is None:
            content = held(message.content)
            if sequencer.take_next(message.sequence):  # the common case, without offer's list
                self._queue_one(key, message.sequence, content)
            else:
                self._queue(key, sequencer.offer(message.sequence, content))
        else:
            self._take_fenced(key, sequencer, fence, message)

    def _take_fenced(self, key: tuple[str, str], sequencer: PartitionSequencer, fence: PartitionFence,
                     message) -> None:
        """Only records the fence admits, in order; a newer epoch's record where an older
        one's is held truncates the log there (Kafka's follower truncation)."""
        if message.sequence < sequencer.next_sequence:
            if not fence.diverges(message.sequence, batch_epoch(message.content)):
                return  # a duplicate
            self._truncate(key, message.sequence)
        taken = []
        for sequence, content in sequencer.offer(message.sequence, held(message.content)):
            epoch = batch_epoch(content)
            if not fence.admits(sequence, epoch):
                self._refused(key, fence, epoch)
                sequencer.rewind(sequence)  # what followed it comes again, by FETCH
                break
            self.fences.note(key, sequence, epoch)
            taken.append((sequence, content))
        self._queue(key, taken)

    def _refused(self, key: tuple[str, str], fence: PartitionFence, epoch: int | None) -> None:
        if epoch not in fence.refusals_logged:  # once per epoch: a deposed leader may send many
            fence.refusals_logged.add(epoch)
            self.node.log.warning("fenced_records_refused", subject=key[0], partition=key[1], record_epoch=epoch,
                                  fence_epoch=fence.epoch)

    def _take_fence(self, message: Fence) -> None:
        """A claim is answered after the commit that makes its outcome durable; an
        announcement is not answered, and truncates a stale tail from its start."""
        key = (message.subject, message.partition)
        if key in self._deleted:  # a leader not yet told of the deletion: its partition's uuid never returns
            return
        floor = self._next_sequence(key)
        before = self.fences.get(key)
        head_epoch = NO_EPOCH if before is not None else self._epoch_held(key, floor - 1)
        before = before and (before.epoch, before.requester, before.start)
        accepted = self.fences.claim(key, message.epoch, message.requester, floor, head_epoch)
        fence = self.fences[key]
        if message.start == NO_START:
            self._fence_answers.append((message.requester, key, accepted))
        elif accepted:
            self.fences.announce(key, message.start)
            stale = fence.stale_from(message.epochs, floor - 1) if key in self.sequencers else None
            if stale is not None:
                self._truncate(key, stale)
        if not accepted or before != (fence.epoch, fence.requester, fence.start):
            self.node.log.info("fence", subject=key[0], partition=key[1], epoch=message.epoch,
                               requester=message.requester, start=message.start, accepted=accepted,
                               fence_epoch=fence.epoch)
        self._work.set()

    def _next_sequence(self, key: tuple[str, str]) -> int:
        sequencer = self.sequencers.get(key)
        return self.log_starts.get(key, 0) if sequencer is None else sequencer.next_sequence

    def _epoch_held(self, key: tuple[str, str], sequence: int) -> int:
        """The leader epoch of the record at `sequence`, queued or in the log (a partition
        fenced for the first time: its records were never parsed)."""
        queued = self._queued.get(key)
        if queued is not None and queued[0] + len(queued[1]) - 1 == sequence:
            content = queued[1][-1]
        else:
            entries = list(self.log.read(*key, sequence, 1, 1 << 30)) if sequence >= 0 else []
            content = entries[0].content if entries and entries[0].sequence == sequence else b""
        epoch = batch_epoch(content)
        return NO_EPOCH if epoch is None else epoch

    def _truncate(self, key: tuple[str, str], sequence: int) -> None:
        """Forget the partition's records from `sequence` on: queued ones now, durable ones
        with the next commit."""
        self.fences.cut(key, sequence)
        fence = self.fences[key]
        fence.floor = min(fence.floor, sequence)  # the new leader started there or before
        queued = self._queued.pop(key, None)
        if queued is not None:
            first, contents = queued
            kept = contents[: max(0, sequence - first)]
            self._queued_bytes -= sum(len(content) for content in contents[len(kept):])
            if kept:
                self._queued[key] = (first, kept)
        self._truncations_due[key] = min(sequence, self._truncations_due.get(key, sequence))
        self.sequencers[key].rewind(sequence)
        self._work.set()

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
        if discard.deleted:
            self._forget(key, discard.before)
            return
        self._direct_cleaning(key, discard.compact)
        self.log_starts[key] = max(discard.before, self.log_starts.get(key, 0))
        self._discard_due(key, discard.before)
        if key in self.sequencers:
            self._skip(key, discard.before)

    def _forget(self, key: tuple[str, str], before: int) -> None:
        """Delete a deleted topic's partition with the next commit. Its records below `before`
        that still come (a leader's last ones on their way) are duplicates from then on."""
        self.log_starts[key] = max(before, self.log_starts.get(key, 0))
        if key in self.sequencers:
            self.sequencers[key] = PartitionSequencer(self.log_starts[key])
        self._drop_queued(key)
        for due in (self._discards_due, self._truncations_due, self.compactions):
            due.pop(key, None)
        self._heads_seen.discard(key)
        self.fences.forget(key)
        self._deleted.add(key)
        self._forgets_due.add(key)
        self._work.set()

    def _drop_queued(self, key: tuple[str, str]) -> None:
        dropped = self._queued.pop(key, None)
        if dropped is not None:
            self._queued_bytes -= sum(len(content) for content in dropped[1])

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
        self._drop_queued(key)
        self._discard_due(key, sequence)  # what the log holds lies below: it starts over at `sequence`
        self._queue(key, sequencer.skip_to(sequence))

    def _discard_due(self, key: tuple[str, str], before: int) -> None:
        self._discards_due[key] = max(before, self._discards_due.get(key, 0))
        self._work.set()

    def _queue(self, key: tuple[str, str], ready: list) -> None:
        for sequence, content in ready:
            self._queue_one(key, sequence, content)

    def _queue_one(self, key: tuple[str, str], sequence: int, content) -> None:
        """Queue the record at `sequence`, the one after those queued for `key`."""
        queued = self._queued.get(key)
        if queued is None:
            self._queued[key] = (sequence, [content])
        else:
            queued[1].append(content)
        self._queued_bytes += len(content)

    async def _commit_loop(self) -> None:
        while True:
            await self._work.wait()
            self._work = trio.Event()
            if self._commits_inline():
                self._commit_inline()
                continue
            commit = self._take_commit()
            if commit.writes:
                self._in_thread = True
                try:
                    await trio.to_thread.run_sync(self._write_durably, *commit[:5])
                finally:
                    self._in_thread = False
            self._committed_all(commit)

    def _commits_inline(self) -> bool:
        return self.last_commit_s < INLINE_COMMIT_S or not self.log.fsync_due()

    def _commit_inline(self) -> None:
        commit = self._take_commit()
        if commit.writes:
            self._write_durably(*commit[:5])
        self._committed_all(commit)

    def _take_commit(self) -> _Commit:
        commit = _Commit(self._forgets_due, self._discards_due, self.fences.changes(),
                         self._truncations_due, self._queued, self._fence_answers, self._heads_seen)
        self._queued, self._queued_bytes, self._forgets_due = {}, 0, set()
        self._discards_due, self._truncations_due, self._fence_answers, self._heads_seen = {}, {}, [], set()
        return commit

    def _committed_all(self, commit: _Commit) -> None:
        """After `commit` is durable: the durable heads moved, ACKs and FENCED answers sent."""
        self._committed.set()
        self._committed = trio.Event()
        for key in commit.forgets:
            self.durable.pop(key, None)
        for key, sequence in commit.truncations.items():
            if key in self.durable:
                self.durable[key] = min(self.durable[key], sequence - 1)
        grown = {key: first + len(contents) - 1 for key, (first, contents) in commit.appends.items()}
        self.durable.update(grown)
        self._ack(grown.keys() | ((commit.truncations.keys() | commit.heads_seen) & self.durable.keys()))
        self._answer_fences(commit.answers)

    def _write_durably(self, forgets, discards, book, truncations, appends) -> None:
        """Deleted partitions first, then discards: a partition that skipped to its log start
        is emptied before its records from there on are appended. The fence book before the
        truncations and appends it describes (fences.py trims it to the log on load)."""
        started = time.perf_counter()
        now = now_ms()
        for key in forgets:
            self.log.forget(*key)
        for key, before in discards.items():
            self.log.discard_before(*key, before)
        if book is not None:
            self.fences.write(book)
        for key, sequence in truncations.items():
            self.log.truncate_from(*key, sequence)
        for (subject, partition), (first, contents) in appends.items():
            self.log.append_many(subject, partition, first, contents, now)
            if subject == DISCARD_SUBJECT:  # directives below were applied, and later ones supersede them
                self.log.discard_before(DISCARD_SUBJECT, partition, first)
        if self.log.sync():
            self.last_commit_s = time.perf_counter() - started

    def _ack(self, keys) -> None:
        """One cumulative ACK per partition, for what is synced; HEADs are answered too, so
        a producer that missed an ACK (e.g. it connected late) learns it within a HEAD interval.
        Sent without a scheduling point (a PUB never waits, it drops at its high-water mark):
        the loop yields when it waits for work."""
        self.node.publisher.send_nowait([self._ack_of(key) for key in keys if self.durable[key] >= 0])

    def _ack_of(self, key: tuple[str, str]) -> list:
        """ACK, or EPOCH-ACK for a fenced partition: counted only by its leader of that epoch."""
        subject, partition = key
        sequence = self.durable[key]
        fence = self.fences.get(key)
        if fence is None:
            return encode(Ack(partition, subject, sequence))
        return encode(EpochAck(partition, subject, sequence, fence.epoch_of(sequence)))

    def _answer_fences(self, answers) -> None:
        """FENCED to each claimant, with the head the commit left (as ACKs are sent)."""
        messages = []
        for requester, key, accepted in answers:
            fence = self.fences.get(key)
            if fence is None:  # the partition was deleted meanwhile: nothing to answer for
                continue
            head = self.durable.get(key, -1)
            head_epoch = fence.epoch_of(head) if head >= 0 else NO_EPOCH
            epochs = tuple((epoch, first) for epoch, first in fence.epochs if first <= head)
            messages.append(encode(Fenced(requester, self.node.uuid, key[1], key[0], fence.epoch, int(accepted),
                                          head + 1, head_epoch, epochs)))
        self.node.publisher.send_nowait(messages)


def held(content):
    """`content` as the store holds it until the commit: small ones as bytes (COPIED_BELOW), as
    a receive of copies gives them; the log reads each several times (length, CRC, buffer), and
    each read of a zmq.Frame's buffer costs more than the copy."""
    return content.bytes if isinstance(content, zmq.Frame) and len(content) < COPIED_BELOW else content
