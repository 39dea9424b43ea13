"""The store's log cleaner: compacts the partitions the gateways say are compacted.

A gateway's discard directive for a compacted topic's partition carries a
`Compaction`: how far the log may be cleaned, which tombstones may go, the
dirty ratio. The positions are Dafka sequences the gateway chose, so every
store cleans the same batches and reaches the same log.

A pass (`protocol.records.compaction`) runs in a worker thread, off the
store's loop: it reads the partition through the log's ordinary reads (the
lock is held one read at a time), writes each cleaned segment as a new
file, and swaps it in under the lock (`segment_swap`). Appends and reads go
on meanwhile. Memory is bounded by the offset map (log.cleaner.dedupe.buffer.size)
and one batch at a time.

Where the last pass ended (the dirty part starts) is kept in memory only: after
a restart the first pass takes the whole log as dirty, and reaches the same
result. The directives themselves a restarted writer reads back from its log.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Iterator

import structlog

from gateway.mesh.store.entry import Entry
from gateway.mesh.store.handles import Files
from gateway.mesh.store.segment import Segment
from gateway.mesh.store.segment_swap import CLEANING_DIRECTORY
from protocol.errors import DecodeError
from protocol.journal.discard_directive import Compaction
from protocol.records.compaction import OffsetMap, Pass, Transactions, cleaned_content, map_capacity, plan_pass

log = structlog.get_logger()

READ_COUNT = 256
READ_BYTES = 4 << 20
# The pass is pure Python and holds the GIL: a store loop that wakes meanwhile would wait up
# to the interpreter's switch interval (5 ms) for it. A short sleep after each WORK_S of
# cleaning hands it over sooner, at some cost to the pass (bench/compaction.py).
WORK_S = 0.002
REST_S = 0.00005


class CleanerStopped(Exception):
    """The store stops: the pass ends where it is (what was swapped in stays)."""


class StoreCleaner:
    def __init__(self, store_log, compactions: dict[tuple[str, str], Compaction], dedupe_buffer_bytes: int):
        self.log = store_log
        self.compactions = compactions  # the writer fills it from directives
        self.capacity = map_capacity(dedupe_buffer_bytes)
        self._dirty_from: dict[tuple[str, str], int] = {}
        self._tombstones_done: dict[tuple[str, str], int] = {}
        self._stopping = threading.Event()
        self._running = threading.Lock()
        self._working_since = time.perf_counter()

    def clean_due(self) -> int:
        """One pass over every partition that needs one; how many passes ran."""
        passes = 0
        with self._running:
            for key, compaction in list(self.compactions.items()):
                try:
                    passes += self._clean_if_due(key, compaction)
                except DecodeError as error:  # not Kafka batches: such a partition is never compacted
                    log.error("store_cleaner.bad_batch", subject=key[0], address=key[1], reason=str(error))
                    self.compactions.pop(key, None)
                except CleanerStopped:
                    break
                except OSError:
                    if self.log.first(*key) is not None:
                        raise
                    log.info("store_cleaner.partition_deleted", subject=key[0], address=key[1])  # during the pass
        return passes

    def stop(self) -> None:
        """End the running pass soon, and wait until it has (from another thread)."""
        self._stopping.set()
        with self._running:
            pass

    def _clean_if_due(self, key: tuple[str, str], compaction: Compaction) -> bool:
        first = self.log.first(*key)
        if first is None:
            return False
        dirty_from = max(self._dirty_from.get(key, first), first)
        directory, segments = self.log.sealed_below(*key, compaction.clean_before)
        if not segments or not self._due(key, compaction, first, dirty_from):
            return False
        started = time.perf_counter()
        cleaning = Pass(dirty_from, min(compaction.clean_before, segments[-1][1]), compaction.tombstones_before)
        offsets, transactions, end = plan_pass(lambda start: self._entries(key, start), first, cleaning,
                                               self.capacity)
        if end == dirty_from and end < cleaning.clean_before:
            log.error("store_cleaner.map_too_small", subject=key[0], address=key[1], sequence=end,
                      capacity=self.capacity)
            return False
        done = cleaning._replace(clean_before=end)
        rewritten = sum(self._rewrite(key, directory, base, next_sequence, done, offsets, transactions)
                        for base, next_sequence in segments if base < end)
        self._dirty_from[key] = end
        self._tombstones_done[key] = done.tombstones_before
        log.info("store_cleaner.cleaned", subject=key[0], address=key[1], dirty_from=dirty_from, clean_before=end,
                 keys=len(offsets), segments_rewritten=rewritten, seconds=round(time.perf_counter() - started, 3))
        return True

    def _due(self, key, compaction: Compaction, first: int, dirty_from: int) -> bool:
        """Kafka's choice: dirty enough, or a batch waited max.compaction.lag.ms, or tombstones
        passed their horizon since the last pass. The ratio counts batches, not bytes: every
        store then decides alike, whatever its own files."""
        if compaction.tombstones_before > self._tombstones_done.get(key, 0):
            return True
        if dirty_from >= compaction.clean_before:
            return False
        if compaction.must_clean_before > dirty_from:
            return True
        return (compaction.clean_before - dirty_from) / (compaction.clean_before - first) >= compaction.dirty_ratio

    def _entries(self, key: tuple[str, str], start: int) -> Iterator[tuple[int, bytes]]:
        return ((entry.sequence, entry.content) for entry in self._read(key, start))

    def _read(self, key: tuple[str, str], start: int) -> Iterator[Entry]:
        """The entries from `start` to the log's end, read a chunk at a time."""
        while True:
            if self._stopping.is_set():
                raise CleanerStopped
            entries = list(self.log.read(*key, start, READ_COUNT, READ_BYTES))
            if not entries:
                return
            for entry in entries:
                self._rest_now_and_then()
                yield entry
            start = entries[-1].sequence + 1

    def _rest_now_and_then(self) -> None:
        if time.perf_counter() - self._working_since >= WORK_S:
            time.sleep(REST_S)  # releases the GIL long enough for a waiting thread to take it
            self._working_since = time.perf_counter()

    def _rewrite(self, key, directory, base: int, next_sequence: int, done: Pass, offsets: OffsetMap,
                 transactions: Transactions) -> bool:
        """Write the cleaned copy of one segment and swap it in, if anything in it changes."""
        cleaning = directory / CLEANING_DIRECTORY
        shutil.rmtree(cleaning, ignore_errors=True)
        cleaning.mkdir()
        files = Files(2, 1)  # no space reserved ahead: the copy is written whole, then sealed
        try:
            copy = Segment.create(cleaning, base, files)
            changed = False
            for entry in self._read(key, base):
                if entry.sequence >= next_sequence:
                    break
                cleaned = cleaned_content(entry.content, entry.sequence, done, offsets, transactions)
                changed |= cleaned is not None
                copy.append(files, entry.sequence, entry.content if cleaned is None else cleaned, entry.timestamp_ms)
            whole = changed and copy.next_sequence == next_sequence  # else a discard took the segment meanwhile
            if whole:
                copy.seal(files)
            return whole and self.log.swap_cleaned(*key, base, next_sequence)
        finally:
            files.handles.close_all()
            shutil.rmtree(cleaning, ignore_errors=True)
