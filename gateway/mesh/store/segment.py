"""One segment of a partition: a log file of consecutive entries and its index.

Sequences inside a segment are consecutive from `base`, so the count of
entries fixes the last sequence, and the next segment starts right after it.
Small appends gather in a buffer (one write per flush); large ones are written
at once, header and content together, without copying the content.

A segment being appended to reserves file space ahead of its writes
(posix_fallocate, more as it grows, up to Files.reserve_max_bytes): an fdatasync of appends within the
reserved space need not commit a new file size, which on ext4 takes about a
third off a sync. The reserved tail reads as zeros, which no entry starts
with (its CRC would not match): recovery takes it for the end, sealing and
closing give it back.

After a failed write or sync, cut_back() forgets everything since the last
durable point, on disk too: a failed fsync leaves the page cache in an unknown
state (the kernel may have dropped the dirty pages), so what was written since
the last good fsync must count as never written.
"""

import contextlib
import os
from pathlib import Path

import structlog

from gateway.mesh.store.entry import (
    HEADER_SIZE,
    READ_CHUNK,
    BadEntry,
    CorruptLogError,
    Entry,
    EntryReader,
    encode_header,
    write_all,
)
from gateway.mesh.store.handles import Files
from gateway.mesh.store.segment_index import INDEX_INTERVAL, DurablePoint, SparseIndex, encode_point, read_point
from gateway.mesh.store.storage_failure import naming

log = structlog.get_logger()

DIRECT_WRITE_BYTES = 64 * 1024
FLUSH_BUFFER_BYTES = 1024 * 1024
RESERVE_MIN_BYTES = 16 * 1024  # the least reserved ahead: all a partition with little data leaves unused
NO_TIMESTAMP = -(2**63)


class ReadBudget:
    """Collects entries up to a count and a content size; the first always fits."""

    def __init__(self, max_count: int, max_bytes: int):
        self.max_count = max_count
        self.max_bytes = max_bytes
        self.entries: list[Entry] = []
        self.bytes = 0

    def admits(self, size: int) -> bool:
        if len(self.entries) >= self.max_count:
            return False
        return not self.entries or self.bytes + size <= self.max_bytes

    def read_ahead(self) -> int:
        """Bytes worth reading at once: the wanted entries, after at most one index interval."""
        return min(READ_CHUNK, INDEX_INTERVAL + self.max_bytes + HEADER_SIZE * self.max_count)

    def add(self, entry: Entry) -> None:
        self.entries.append(entry)
        self.bytes += len(entry.content)


class Segment:
    def __init__(self, directory: Path, base: int, *, sealed: bool):
        self.base = base
        self.log_path = str(directory / f"{base:020d}.log")
        self.index_path = str(directory / f"{base:020d}.idx")
        self.sealed = sealed
        self.count = 0
        self.size = 0  # bytes appended, buffered ones included
        self.written = 0  # bytes handed to the OS
        self.synced = 0  # bytes known durable
        self.file_size = 0  # written or reserved, as far as this segment asked
        self.max_timestamp_ms = NO_TIMESTAMP
        self.durable = DurablePoint(0, 0, NO_TIMESTAMP)  # what cut_back() returns to
        self.index: SparseIndex | None = None
        self.buffer = bytearray()

    @property
    def next_sequence(self) -> int:
        return self.base + self.count

    @classmethod
    def create(cls, directory: Path, base: int, files: Files) -> "Segment":
        segment = cls(directory, base, sealed=False)
        files.fd(segment.log_path)
        files.dirty_directories.add(str(directory))
        segment.index = SparseIndex()
        return segment

    def recover(self, files: Files) -> bool:
        """Adopt the intact entries on disk, cutting off a torn tail.

        Returns whether anything was scanned (the segment then needs a sync).
        """
        point = read_point(files.fd(self.index_path)) or DurablePoint(0, 0, NO_TIMESTAMP)
        on_disk = os.fstat(files.fd(self.log_path)).st_size
        if point.length > on_disk:
            log.error("store_log.durable_data_missing", path=self.log_path, size=on_disk, durable=point.length)
            raise CorruptLogError(f"{self.log_path}: {on_disk} bytes, but {point.length} were durable")
        self.count, self.size, self.max_timestamp_ms = self.durable = point
        self.written = self.synced = self.file_size = point.length
        if point.length == on_disk:
            return False
        if _unwritten_at(files.fd(self.log_path), point.length):  # only reserved space after it
            os.ftruncate(files.fd(self.log_path), point.length)
            return False
        self.index = SparseIndex.load(files.fd(self.index_path), below=point.length)
        os.ftruncate(files.fd(self.index_path), self.index.file_size())
        self._complete_index(files)
        self._scan(files, on_disk)
        return True

    def _scan(self, files: Files, end: int) -> None:
        reader = EntryReader(files.fd(self.log_path), self.size, end)
        try:
            while not reader.at_end():
                position = reader.position
                sequence, timestamp_ms = reader.header()
                if sequence != self.next_sequence:
                    raise BadEntry(position, f"sequence {sequence} where {self.next_sequence} belongs")
                reader.content()
                self._account(position, timestamp_ms, reader.position)
        except BadEntry as bad:
            if not _unwritten_at(files.fd(self.log_path), bad.position):
                log.warning("store_log.torn_tail", path=self.log_path, position=bad.position,
                            dropped_bytes=end - bad.position, reason=bad.reason)
            os.ftruncate(files.fd(self.log_path), bad.position)
        self.written = self.file_size = self.size

    def _account(self, position: int, timestamp_ms: int, end: int) -> None:
        if self.index.due(position):
            self.index.add(self.count, position)
        self.count += 1
        self.size = end
        if timestamp_ms > self.max_timestamp_ms:
            self.max_timestamp_ms = timestamp_ms

    def append_many(self, files: Files, first: int, contents: list, timestamp_ms: int, limit_bytes: int) -> int:
        """Append entries from `first` on while they keep the segment within `limit_bytes`
        (the first always); how many were appended."""
        taken = 0
        for content in contents:
            if taken and self.size + HEADER_SIZE + len(content) > limit_bytes:
                break
            self.append(files, first + taken, content, timestamp_ms)
            taken += 1
        return taken

    def append(self, files: Files, sequence: int, content, timestamp_ms: int) -> None:
        size = len(content)
        header = encode_header(sequence, content, timestamp_ms, size)
        position = self.size
        if size < DIRECT_WRITE_BYTES:
            self.buffer += header
            self.buffer += content
        else:
            self.flush(files)
            self._write(files, [header, content], position + HEADER_SIZE + size)
        self._account(position, timestamp_ms, position + HEADER_SIZE + size)
        if len(self.buffer) >= FLUSH_BUFFER_BYTES:
            self.flush(files)

    def flush(self, files: Files) -> None:
        """Hand buffered entries and new index records to the OS."""
        if self.buffer:
            self._write(files, [self.buffer], self.written + len(self.buffer))
            self.buffer.clear()
        if self.index is not None:
            with naming(self.index_path):
                self.index.flush(files.fd(self.index_path))

    def _write(self, files: Files, buffers: list, end: int) -> None:
        """Write `buffers` at the written end, which then is `end`."""
        fd = files.fd(self.log_path)
        if end > self.file_size and files.reserve_max_bytes:
            self._reserve_for(fd, end, files.reserve_max_bytes)
        with naming(self.log_path):
            write_all(fd, buffers, self.written)
        self.written = end
        self.file_size = max(self.file_size, end)

    def _reserve_for(self, fd: int, end: int, most: int) -> None:
        """Reserve up to `end` and as much again (at least RESERVE_MIN_BYTES, at most `most`)
        for the writes after it."""
        ahead = min(max(end, RESERVE_MIN_BYTES), most)
        try:
            os.posix_fallocate(fd, self.file_size, end + ahead - self.file_size)
        except OSError as error:  # a full disk may still take the write itself: that decides
            log.debug("store_log.reserve_failed", path=self.log_path, reason=error.strerror)
        self.file_size = end + ahead  # after a failure too: no new attempt before the writes get there

    def give_back_reserve(self, files: Files) -> None:
        """Cut the file to its entries: a closed or sealed segment keeps no unused space."""
        if self.file_size > self.written:
            with naming(self.log_path):
                os.ftruncate(files.fd(self.log_path), self.written)
            self.file_size = self.written

    def needs_sync(self) -> bool:
        return self.synced != self.size

    def sync(self, files: Files) -> None:
        """Make every entry durable, then record that in the index file."""
        if self.needs_sync():
            self.flush(files)
            with naming(self.log_path):
                os.fdatasync(files.fd(self.log_path))
            self.record_durable(files)

    def record_durable(self, files: Files) -> None:
        """After an fsync of the flushed log: remember how far it is durable."""
        point = DurablePoint(self.count, self.size, self.max_timestamp_ms)
        with naming(self.index_path):
            write_all(files.fd(self.index_path), [encode_point(point)], 0)
        self.synced = self.size
        self.durable = point

    def cut_back(self, files: Files) -> None:
        """After a failed write or sync: back to the last durable point, in memory and on disk."""
        self.buffer = bytearray()  # not clear(): a failed write's traceback may still hold a view of it
        self.count, self.size, self.max_timestamp_ms = self.durable
        self.written = self.synced = self.file_size = self.size
        if self.index is not None:
            self.index.cut(self.size)
        try:
            os.ftruncate(files.fd(self.log_path), self.size)
        except OSError as error:  # a restart would then adopt the tail: its CRCs are all that guard it
            log.error("store_log.cut_back_failed", path=self.log_path, durable=self.size, reason=str(error))

    def truncate(self, files: Files, sequence: int) -> None:
        """Keep only the entries below `sequence`, durably. The smaller durable point goes
        first: a crash before the log is cut leaves entries past it, adopted again on
        recovery as a torn tail would be, never a durable point past the data."""
        self.flush(files)
        relative, position = self.loaded_index(files).floor(sequence - self.base)
        reader = EntryReader(files.fd(self.log_path), position, self.written)
        for _ in range(relative, sequence - self.base):
            reader.header()
            reader.skip()
        self.count, self.size = sequence - self.base, reader.position
        self.written = self.file_size = self.size
        self.index.cut(self.size)
        self.record_durable(files)
        with naming(self.index_path):
            os.fdatasync(files.fd(self.index_path))
        with naming(self.log_path):
            os.ftruncate(files.fd(self.log_path), self.size)
            os.fdatasync(files.fd(self.log_path))

    def seal(self, files: Files) -> None:
        """Finish the segment for good: data and index durable, no reserved space left."""
        self.flush(files)  # before the reserve goes: a later flush would reserve again
        self.give_back_reserve(files)
        self.sync(files)
        with naming(self.index_path):
            os.fdatasync(files.fd(self.index_path))
        self.sealed = True
        files.loaded_indexes.put(self, self)

    def loaded_index(self, files: Files) -> SparseIndex:
        if self.index is None:
            self.index = SparseIndex.load(files.fd(self.index_path), below=self.size)
            self._complete_index(files)
            if self.sealed:
                files.loaded_indexes.put(self, self)
        elif self.sealed:
            files.loaded_indexes.get(self)
        return self.index

    def _complete_index(self, files: Files) -> None:
        """Index records are not fsynced with the log: walk the headers after the
        last stored record and add those that a crash lost (usually none)."""
        relative, position = self.index.floor(self.count) if self.index else (0, 0)
        reader = EntryReader(files.fd(self.log_path), position, self.written)
        try:
            for sequence in range(self.base + relative, self.next_sequence):
                entry_position = reader.position
                found, _ = reader.header()
                if found != sequence:
                    raise BadEntry(entry_position, f"sequence {found} where {sequence} belongs")
                if self.index.due(entry_position):
                    self.index.add(sequence - self.base, entry_position)
                reader.skip()
        except BadEntry as bad:
            log.error("store_log.corrupt_durable_entry", path=self.log_path, position=bad.position, reason=bad.reason)
            raise CorruptLogError(f"{self.log_path}: {bad}") from bad
        self.index.flush(files.fd(self.index_path))

    def drop_index(self) -> None:
        self.index = None

    def read(self, files: Files, sequence: int, budget: ReadBudget) -> bool:
        """Add entries from `sequence` on; return False once the budget is spent."""
        relative, position = self.loaded_index(files).floor(sequence - self.base)
        reader = EntryReader(files.fd(self.log_path), position, self.written, budget.read_ahead())
        expected = self.base + relative
        while not reader.at_end():
            found, timestamp_ms = reader.header()
            if found != expected:
                raise BadEntry(reader.position, f"sequence {found} where {expected} belongs")
            if found < sequence:
                reader.skip()
            elif budget.admits(reader.size):
                budget.add(Entry(found, timestamp_ms, reader.content()))
            else:
                return False
            expected += 1
        return True

    def delete(self, files: Files) -> None:
        files.loaded_indexes.pop(self)
        for path in (self.log_path, self.index_path):
            files.handles.close(path)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        files.dirty_directories.add(os.path.dirname(self.log_path))


def _unwritten_at(fd: int, position: int) -> bool:
    """Whether the bytes at `position` are reserved space never written (zeros), not a torn entry."""
    return not os.pread(fd, HEADER_SIZE, position).strip(b"\0")
