"""One partition: its segments in sequence order, the last one active."""

import os
from bisect import bisect_right
from itertools import pairwise
from operator import attrgetter
from pathlib import Path

import structlog

from gateway.mesh.store.entry import HEADER_SIZE, CorruptLogError
from gateway.mesh.store.handles import Files
from gateway.mesh.store.segment import ReadBudget, Segment
from gateway.mesh.store.segment_swap import finish_swaps, swap_in

log = structlog.get_logger()

SEGMENT_SUFFIX = ".log"


class Partition:
    def __init__(self, subject: str, address: str, directory: Path):
        self.subject = subject
        self.address = address
        self.directory = directory
        self.segments: list[Segment] = []

    @property
    def first(self) -> int | None:
        return self.segments[0].base if self.segments else None

    @property
    def head(self) -> int | None:
        return self.segments[-1].next_sequence - 1 if self.segments else None

    @classmethod
    def open(cls, subject: str, address: str, directory: Path, files: Files) -> tuple["Partition", bool]:
        """Recover the segments on disk; also say whether the active one needs a sync."""
        partition = cls(subject, address, directory)
        finish_swaps(directory)
        segments = [Segment(directory, base, sealed=False) for base in _segment_bases(directory)]
        scanned = [segment.recover(files) for segment in segments]
        # An empty last segment is a roll a crash cut short, unless it is alone and marks
        # where a partition emptied by a discard goes on (see discard_before).
        while segments and segments[-1].count == 0 and (len(segments) > 1 or segments[-1].base == 0):
            segments.pop().delete(files)
            scanned.pop()
        _check_consecutive(segments)
        for segment, was_scanned in zip(segments[:-1], scanned, strict=False):  # all but the last
            segment.sealed = True
            if was_scanned:
                segment.seal(files)
        if segments:
            segments[-1].loaded_index(files)
        partition.segments = segments
        return partition, bool(scanned and scanned[-1])

    def append_many(self, files: Files, first: int, contents: list, timestamp_ms: int,
                    segment_bytes: int) -> list[Segment]:
        """Append entries of consecutive sequences from `first` on; return the segments written to."""
        written = []
        while contents:
            active = self._active_for(files, first, len(contents[0]), segment_bytes)
            taken = active.append_many(files, first, contents, timestamp_ms, segment_bytes)
            written.append(active)
            first += taken
            contents = contents[taken:]
        return written

    def _active_for(self, files: Files, sequence: int, size: int, segment_bytes: int) -> Segment:
        """The segment the entry of `sequence`, `size` bytes of content, goes to: a new one when
        there is none, the active one is sealed, or the entry would take it past segment_bytes."""
        active = self.segments[-1] if self.segments else None
        if active is not None and sequence != active.next_sequence:
            raise ValueError(f"sequence {sequence} does not follow head {active.next_sequence - 1}")
        if active is None and not 0 <= sequence < 2**64:
            raise ValueError(f"sequence {sequence} is not an unsigned 64-bit number")
        if active is None or active.sealed or (active.size and active.size + HEADER_SIZE + size > segment_bytes):
            if active is not None and not active.sealed:
                active.seal(files)
            active = Segment.create(self.directory, sequence, files)
            self.segments.append(active)
        return active

    def read(self, files: Files, sequence: int, budget: ReadBudget) -> None:
        if not self.segments or not self.first <= sequence <= self.head:
            return
        self.segments[-1].flush(files)
        start = bisect_right(self.segments, sequence, key=attrgetter("base")) - 1
        for segment in self.segments[start:]:
            if not segment.read(files, max(sequence, segment.base), budget):
                return

    def sealed_below(self, files: Files, before: int) -> list[tuple[int, int]]:
        """(base, next sequence) of the segments holding entries below `before`, sealing
        the active one if it does: the cleaner rewrites only sealed segments."""
        if self.segments and self.segments[-1].base < before and self.segments[-1].count:
            self.segments[-1].seal(files)
        return [(s.base, s.next_sequence) for s in self.segments if s.base < before and s.sealed and s.count]

    def swap_cleaned(self, files: Files, base: int, next_sequence: int) -> bool:
        """Put the cleaned copy of segment `base` in its place, unless the segment went or
        changed meanwhile (a discard or retention); whether it did."""
        found = [i for i, s in enumerate(self.segments) if s.base == base and s.next_sequence == next_sequence]
        if not found or not self.segments[found[0]].sealed:
            return False
        old = self.segments[found[0]]
        files.loaded_indexes.pop(old)
        for path in (old.log_path, old.index_path):
            files.handles.close(path)
        swap_in(self.directory, os.path.basename(old.log_path), os.path.basename(old.index_path))
        new = Segment(self.directory, base, sealed=True)
        new.recover(files)
        self.segments[found[0]] = new
        return True

    def expire(self, files: Files, retention_bytes: int | None, retention_ms: int | None, now_ms: int) -> list[Segment]:
        """Delete the oldest sealed segments that retention no longer keeps.

        By bytes, a segment goes only if what remains still holds at least
        retention_bytes; by time, when its newest entry is older than retention_ms.
        """
        total = sum(segment.size for segment in self.segments)
        deleted = []
        while len(self.segments) > 1:
            oldest = self.segments[0]
            too_big = retention_bytes is not None and total - oldest.size >= retention_bytes
            too_old = retention_ms is not None and oldest.max_timestamp_ms < now_ms - retention_ms
            if not (too_big or too_old):
                break
            deleted.append(self._delete_oldest(files, "store_log.segment_expired"))
            total -= oldest.size
        return deleted

    def discard_before(self, files: Files, before: int) -> list[Segment]:
        """Delete the sealed segments whose every entry is below `before`. The active
        segment stays, unless it lies below too (everything was discarded, or the store
        fell behind the discard): then an empty segment at `before` takes its place, so
        that the partition, even after a restart, goes on there with head `before` - 1,
        as a Kafka follower resets to the leader's log start."""
        emptied = self.head is not None and self.head < before
        deleted = []
        while len(self.segments) > (0 if emptied else 1) and self.segments[0].next_sequence <= before:
            deleted.append(self._delete_oldest(files, "store_log.segment_discarded"))
        if emptied:
            self.segments.append(Segment.create(self.directory, before, files))
        return deleted

    def truncate_from(self, files: Files, sequence: int) -> list[Segment]:
        """Delete, durably, the entries from `sequence` on (a diverged tail); the segments
        that went. Emptied, the partition goes on at `sequence`, as after discard_before."""
        if self.head is None or sequence > self.head:
            return []
        deleted = []
        while self.segments and self.segments[-1].base >= sequence:
            deleted.append(self.segments.pop())
            deleted[-1].delete(files)
        if self.segments:
            self.segments[-1].truncate(files, sequence)
        else:
            self.segments.append(Segment.create(self.directory, sequence, files))
        log.warning("store_log.truncated", subject=self.subject, address=self.address, sequence=sequence)
        return deleted

    def _delete_oldest(self, files: Files, event: str) -> Segment:
        oldest = self.segments.pop(0)
        oldest.delete(files)
        log.info(event, subject=self.subject, address=self.address,
                 base=oldest.base, count=oldest.count, size=oldest.size)
        return oldest


def _segment_bases(directory: Path) -> list[int]:
    names = (name.removesuffix(SEGMENT_SUFFIX) for name in os.listdir(directory) if name.endswith(SEGMENT_SUFFIX))
    return sorted(int(name) for name in names if name.isdigit())


def _check_consecutive(segments: list[Segment]) -> None:
    for earlier, later in pairwise(segments):
        if earlier.next_sequence != later.base:
            log.error("store_log.sequence_gap", path=earlier.log_path, ends_before=earlier.next_sequence,
                      next_base=later.base)
            raise CorruptLogError(f"{earlier.log_path} ends before {earlier.next_sequence}, next starts at {later.base}")
