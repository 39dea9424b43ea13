"""The durable log of one Dafka store: every partition it holds, on disk.

Layout under the data directory:
    <subject key>/subject              the subject, UTF-8 (the key is not reversible for long ones)
    <subject key>/<ADDRESS>/<base>.log entries of sequences base, base+1, ...
    <subject key>/<ADDRESS>/<base>.idx durable point and sparse index of that log
The subject key is "s-" + hex of the subject, or "h-" + a hash when that would
be too long for a file name; subjects never reach the file system raw.

Plain blocking code, safe to call from several threads (one lock). sync()
fsyncs many files through a small thread pool, each with a descriptor of its
own, so at most max_open_files + FSYNC_THREADS descriptors are open.

A failed write or sync (a full disk, an I/O error) cuts every segment written
since its last sync back to its durable point and raises StorageFailed: the
caller must not acknowledge what it appended since its last successful sync().
"""

import hashlib
import os
import re
import shutil
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import contextmanager
from pathlib import Path

import structlog

from gateway.directory_lock import lock_directory
from gateway.mesh.store.entry import BadEntry, CorruptLogError, Entry
from gateway.mesh.store.handles import Files, fdatasync_file, fsync_directory
from gateway.mesh.store.segment import ReadBudget, Segment
from gateway.mesh.store.storage_failure import StorageFailed
from gateway.mesh.store.store_partition import Partition
from gateway.observability.store_metrics import BYTES_WRITTEN, FSYNC_SECONDS, RECORDS_WRITTEN, WRITE_SECONDS
from protocol.journal.discard_directive import RESERVED_PREFIX

__all__ = ["CorruptLogError", "Entry", "StoreLog"]

log = structlog.get_logger()

FSYNC_POLICIES = ("batch", "interval")
ADDRESS = re.compile(r"[0-9A-F]{32}")
SUBJECT_FILE = "subject"
MAX_SUBJECT_BYTES = 255
MAX_HEX_SUBJECT_BYTES = 100
MAX_SEGMENT_BYTES = 2**31
MAX_LOADED_INDEXES = 256
FSYNC_THREADS = 16
TEMPORARY_PREFIX = ".tmp-"


class StoreLog:
    def __init__(self, directory: Path, *, fsync: str = "batch", fsync_interval_ms: int = 1000,
                 retention_bytes: int | None = None, retention_ms: int | None = None,
                 max_open_files: int = 128, segment_bytes: int = 64 * 1024 * 1024,
                 reserve_max_bytes: int = 4 * 1024 * 1024):
        if fsync not in FSYNC_POLICIES:
            raise ValueError(f"fsync policy must be one of {FSYNC_POLICIES}")
        if not 0 < segment_bytes <= MAX_SEGMENT_BYTES:
            raise ValueError(f"segment_bytes must be in 1..{MAX_SEGMENT_BYTES}")
        self.directory = Path(directory)
        self._fsync_every_batch = fsync == "batch"
        self._fsync_interval = fsync_interval_ms / 1000
        self._last_fsync = time.monotonic()
        self._default_retention = (retention_bytes, retention_ms)
        self._retention: dict[str, tuple[int | None, int | None]] = {}
        self._segment_bytes = segment_bytes
        self._files = Files(max_open_files, MAX_LOADED_INDEXES, reserve_max_bytes)
        self._partitions: dict[tuple[str, str], Partition] = {}
        self._unsynced: set[Segment] = set()
        self._failed = False
        self._lock = threading.Lock()
        self._fsync_pool = ThreadPoolExecutor(FSYNC_THREADS, thread_name_prefix="store-log-fsync")
        self.directory.mkdir(parents=True, exist_ok=True)
        self._lock_fd = lock_directory(self.directory)
        self._load()

    def __enter__(self) -> "StoreLog":
        return self

    def __exit__(self, *_) -> None:
        self.close()

    def partitions(self) -> list[tuple[str, str]]:
        with self._lock:
            return [key for key, partition in self._partitions.items() if partition.segments]

    def first(self, subject: str, address: str) -> int | None:
        with self._lock:
            partition = self._partitions.get((subject, address))
            return partition and partition.first

    def head(self, subject: str, address: str) -> int | None:
        with self._lock:
            partition = self._partitions.get((subject, address))
            return partition and partition.head

    def append(self, subject: str, address: str, sequence: int, content: bytes | memoryview,
               timestamp_ms: int) -> None:
        """Append one entry: `sequence` must follow the head, unless the partition is empty."""
        self.append_many(subject, address, sequence, [content], timestamp_ms)

    def append_many(self, subject: str, address: str, first: int, contents, timestamp_ms: int) -> None:
        """Append entries of consecutive sequences from `first` on, under one lock."""
        contents = [content if isinstance(content, bytes) else memoryview(content).cast("B") for content in contents]
        with self._lock, self._writing(), WRITE_SECONDS.time():
            partition = self._partitions.get((subject, address)) or self._new_partition(subject, address)
            self._unsynced.update(partition.append_many(self._files, first, contents, timestamp_ms,
                                                        self._segment_bytes))
        RECORDS_WRITTEN.inc(len(contents))
        BYTES_WRITTEN.inc(sum(map(len, contents)))

    def sync(self) -> bool:
        """Policy "batch": all appended so far is durable on return.
        Policy "interval": buffered appends reach the OS; fsync at most once per interval.
        Whether it fsynced."""
        with self._lock, self._writing():
            due = self.fsync_due()
            self._sync(fsync=due)
        return due

    def fsync_due(self) -> bool:
        """Whether sync() would fsync now: always under policy "batch"."""
        return self._fsync_every_batch or time.monotonic() - self._last_fsync >= self._fsync_interval

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """Under the lock: a failed write or sync cuts back what is not durable (StorageFailed)."""
        if self._failed:
            raise RuntimeError("the store log failed a write or sync before: it takes no more")
        try:
            yield
        except OSError as error:
            self._failed = True
            self._cut_back()
            raise StorageFailed(error) from error

    def _cut_back(self) -> None:
        """Every segment written since its last sync, even one whose first append just failed."""
        active = (partition.segments[-1] for partition in self._partitions.values() if partition.segments)
        for segment in self._unsynced.union(segment for segment in active if segment.needs_sync()):
            segment.cut_back(self._files)
        self._unsynced.clear()

    def _sync(self, *, fsync: bool) -> None:
        for segment in self._unsynced:
            segment.flush(self._files)
        if not fsync:
            return
        dirty = [segment for segment in self._unsynced if segment.needs_sync()]
        with FSYNC_SECONDS.time():
            if len(dirty) == 1 and not self._files.dirty_directories:  # as a commit of one partition
                self._files.fdatasync(dirty[0].log_path)
            else:
                self._run_all([(fdatasync_file, segment.log_path) for segment in dirty]
                              + [(fsync_directory, path) for path in self._files.dirty_directories])
        for segment in dirty:
            segment.record_durable(self._files)
        self._files.dirty_directories.clear()
        self._unsynced.clear()
        self._last_fsync = time.monotonic()

    def _run_all(self, calls: list) -> None:
        """fsyncs of many files at once let the file system commit them together."""
        if len(calls) == 1:
            function, path = calls[0]
            function(path)
            return
        futures = [self._fsync_pool.submit(function, path) for function, path in calls]
        wait(futures)  # all of them, before a failure is raised: none may still run while it is handled
        for future in futures:
            future.result()

    def read(self, subject: str, address: str, sequence: int, max_count: int, max_bytes: int) -> Iterator[Entry]:
        """Entries from `sequence` on, ascending: at most max_count, and content bytes
        within max_bytes except that the first entry comes whatever its size."""
        budget = ReadBudget(max_count, max_bytes)
        with self._lock:
            partition = self._partitions.get((subject, address))
            if partition is not None:
                try:
                    partition.read(self._files, sequence, budget)
                except BadEntry as bad:
                    log.error("store_log.corrupt_entry", subject=subject, address=address,
                              sequence=sequence, position=bad.position, reason=bad.reason)
                    raise CorruptLogError(f"{subject!r}/{address}: {bad}") from bad
        return iter(budget.entries)

    def set_retention(self, subject: str, *, retention_bytes: int | None, retention_ms: int | None) -> None:
        """Retention for one subject's partitions, replacing the store defaults (None: unlimited)."""
        with self._lock:
            self._retention[subject] = (retention_bytes, retention_ms)

    def enforce_retention(self, now_ms: int) -> None:
        with self._lock:
            for (subject, _), partition in self._partitions.items():
                retention_bytes, retention_ms = self._retention_of(subject)
                expired = partition.expire(self._files, retention_bytes, retention_ms, now_ms)
                self._unsynced.difference_update(expired)

    def _retention_of(self, subject: str) -> tuple[int | None, int | None]:
        """The gateway's journals must outlive any store-wide limit: they are its whole state."""
        default = (None, None) if subject.startswith(RESERVED_PREFIX) else self._default_retention
        return self._retention.get(subject, default)

    def discard_before(self, subject: str, address: str, before: int) -> int:
        """Delete, durably, the sealed segments of a partition whose every entry is below
        `before` (a reader no longer needs them), and the active one too if it lies below:
        the next append may then start at `before`. How many went."""
        with self._lock, self._writing():
            partition = self._partitions.get((subject, address))
            if partition is None:
                return 0
            deleted = partition.discard_before(self._files, before)
            if deleted:
                self._unsynced.difference_update(deleted)
                fsync_directory(str(partition.directory))
            return len(deleted)

    def forget(self, subject: str, address: str) -> bool:
        """Delete a partition whole, durably (its topic was deleted): its directory, and its
        subject's once that holds no other partition. Whether it was held."""
        with self._lock, self._writing():
            partition = self._partitions.pop((subject, address), None)
            if partition is None:
                return False
            for segment in partition.segments:
                segment.delete(self._files)
            self._unsynced.difference_update(partition.segments)
            subject_directory = partition.directory.parent
            self._files.dirty_directories.discard(str(partition.directory))
            self._remove(partition.directory)
            if {entry.name for entry in os.scandir(subject_directory)} <= {SUBJECT_FILE}:
                self._files.dirty_directories.discard(str(subject_directory))
                self._remove(subject_directory)
            log.info("store_log.partition_deleted", subject=subject, address=address)
            return True

    def _remove(self, directory: Path) -> None:
        """Durably gone at once (a rename); its files are deleted after, or by the next load."""
        temporary = self.directory / f"{TEMPORARY_PREFIX}{os.urandom(8).hex()}"
        directory.rename(temporary)
        fsync_directory(str(directory.parent))
        if directory.parent != self.directory:
            fsync_directory(str(self.directory))
        shutil.rmtree(temporary, ignore_errors=True)  # a cleaner's pass may still write there

    def sealed_below(self, subject: str, address: str, before: int) -> tuple[Path, list[tuple[int, int]]]:
        """The partition's directory and its segments holding entries below `before`, as
        (base, next sequence), all sealed (the active one is, if it held any)."""
        with self._lock, self._writing():
            partition = self._partitions.get((subject, address))
            if partition is None:
                return self.directory, []
            sealed = partition.sealed_below(self._files, before)
            self._unsynced.difference_update(s for s in partition.segments if s.sealed)
            return partition.directory, sealed

    def swap_cleaned(self, subject: str, address: str, base: int, next_sequence: int) -> bool:
        """Put the cleaned copy the cleaner wrote of a segment in its place (see segment_swap)."""
        with self._lock, self._writing():
            partition = self._partitions.get((subject, address))
            return partition is not None and partition.swap_cleaned(self._files, base, next_sequence)

    def truncate_from(self, subject: str, address: str, sequence: int) -> None:
        """Delete, durably, a partition's entries from `sequence` on: the next append goes there."""
        with self._lock, self._writing():
            partition = self._partitions.get((subject, address))
            if partition is None:
                return
            deleted = partition.truncate_from(self._files, sequence)
            self._unsynced.difference_update(deleted)
            self._unsynced.discard(partition.segments[-1])
            if deleted:
                fsync_directory(str(partition.directory))

    def close(self) -> None:
        with self._lock:
            if self._lock_fd is None:
                return
            if not self._failed:  # after a failure, what is not durable was cut back
                self._sync(fsync=True)
                for partition in self._partitions.values():
                    if partition.segments:
                        partition.segments[-1].give_back_reserve(self._files)
            self._files.handles.close_all()
            self._fsync_pool.shutdown()
            os.close(self._lock_fd)
            self._lock_fd = None

    def _new_partition(self, subject: str, address: str) -> Partition:
        if not ADDRESS.fullmatch(address):
            raise ValueError(f"partition address must be 32 upper-case hex characters: {address!r}")
        subject_directory = self._subject_directory(subject)
        directory = subject_directory / address
        directory.mkdir()
        self._files.dirty_directories.add(str(subject_directory))
        partition = self._partitions[(subject, address)] = Partition(subject, address, directory)
        return partition

    def _subject_directory(self, subject: str) -> Path:
        """The subject's directory, created whole (name file included) if new."""
        directory = self.directory / subject_key(subject)
        if not directory.exists():
            temporary = self.directory / f"{TEMPORARY_PREFIX}{os.urandom(8).hex()}"
            temporary.mkdir()
            _write_durably(temporary / SUBJECT_FILE, subject.encode())
            temporary.rename(directory)
            self._files.dirty_directories.add(str(self.directory))
        return directory

    def _load(self) -> None:
        started = time.perf_counter()
        for entry in os.scandir(self.directory):
            if entry.name.startswith(TEMPORARY_PREFIX):
                shutil.rmtree(entry.path)
            elif entry.is_dir() and entry.name.startswith(("s-", "h-")):
                self._load_subject(Path(entry.path))
        log.info("store_log.opened", directory=str(self.directory), partitions=len(self._partitions),
                 seconds=round(time.perf_counter() - started, 3),
                 fsync="batch" if self._fsync_every_batch else f"interval {self._fsync_interval}s")

    def _load_subject(self, directory: Path) -> None:
        subject = (directory / SUBJECT_FILE).read_bytes().decode()
        if subject_key(subject) != directory.name:
            log.error("store_log.subject_mismatch", directory=str(directory), subject=subject)
            raise CorruptLogError(f"{directory} holds subject {subject!r}")
        for entry in os.scandir(directory):
            if entry.is_dir() and ADDRESS.fullmatch(entry.name):
                partition, needs_sync = Partition.open(subject, entry.name, Path(entry.path), self._files)
                self._partitions[(subject, entry.name)] = partition
                if needs_sync:
                    self._unsynced.add(partition.segments[-1])


def subject_key(subject: str) -> str:
    """A file name standing for the subject: safe whatever characters it holds."""
    raw = subject.encode()
    if "\0" in subject or len(raw) > MAX_SUBJECT_BYTES:
        raise ValueError(f"subject must be at most {MAX_SUBJECT_BYTES} UTF-8 bytes without NUL")
    if len(raw) <= MAX_HEX_SUBJECT_BYTES:
        return "s-" + raw.hex()
    return "h-" + hashlib.blake2b(raw, digest_size=16).hexdigest()


def _write_durably(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    fsync_directory(str(path.parent))


