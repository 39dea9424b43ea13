"""The fences a store accepted, and the leader epochs of the records it holds of fenced partitions.

A gateway leading a Kafka partition at leader epoch E fences it (FENCE, our
extension): from then on the store refuses that partition's records of an
older epoch, read from the Kafka batch header each record carries
(partitionLeaderEpoch), so that a deposed leader never gets another write
acknowledged. Records of older epochs stay welcome below the new leader's
first sequence (`start`, once it announced it): they are its log too.
Before that, below `floor`, what the store held when it accepted the fence.

For each fenced partition the store keeps where each epoch's records start
(Kafka's leader-epoch cache): to tell a diverged tail (an older epoch's
records where the new leader wrote) from a duplicate, and to name the epoch
of the record an ACK covers. Partitions never fenced are never parsed.

The book is a journal: each commit that changes fences appends one frame
holding the entries of the fences it changed (a later entry of a partition
replaces an earlier one; an entry marked forgotten removes the fence of a
deleted partition), so a commit costs what changed, not the whole book
of thousands of partitions. Once the frames appended since the last rewrite
outweigh the book, the next commit rewrites it whole in one frame, replacing
the file atomically. A store writes the book before the records it describes,
and trims on load what lies past the log. A frame is crc32c and length (both
u32, little-endian) and a JSON array of entries; a frame that is torn or
damaged can only be the last append, cut short by a crash before its sync,
and is dropped with what follows it.
"""

from __future__ import annotations

import json
import os
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import structlog
from crc32c import crc32c

from gateway.mesh.leader_epochs import NO_EPOCH, epoch_at, first_divergence
from gateway.mesh.store.handles import fsync_directory
from protocol.dafka import NO_START
from protocol.records.batch import HEADER_SIZE, LEADER_EPOCH_POSITION

log = structlog.get_logger()

FENCES_FILE = "fences.log"
WHOLE_BOOK_FILE = "fences.json"  # the book of stores before the journal: read once, then replaced
FRAME = struct.Struct("<II")  # crc32c, length of the JSON array that follows
# Appends since the last rewrite that make the next write a rewrite, at least: the journal
# stays under twice the book, plus this.
REWRITE_AFTER_BYTES = 1 << 20
FORGOTTEN = "forgotten"  # an entry's mark: the partition's fence is gone
_EPOCH = struct.Struct(">i")
_MAGIC_POSITION = LEADER_EPOCH_POSITION + 4


def batch_epoch(content) -> int | None:
    """The partitionLeaderEpoch of a v2 Kafka batch, None if `content` is not one."""
    content = memoryview(content)
    if len(content) < HEADER_SIZE or content[_MAGIC_POSITION] != 2:
        return None
    return _EPOCH.unpack_from(content, LEADER_EPOCH_POSITION)[0]


@dataclass
class PartitionFence:
    epoch: int
    requester: str  # the node whose claim won: its retries are answered alike
    floor: int  # before `start` is known, older epochs are refused from here on
    start: int | None = None  # the fencing leader's first sequence, once announced
    epochs: list[list[int]] = field(default_factory=list)  # [epoch, first sequence], ascending
    refusals_logged: set[int] = field(default_factory=set)  # record epochs whose refusal was logged
    # Its entry in the book, encoded again only after a change: a rewrite of the whole book
    # encodes thousands of them.
    _entry: bytes | None = field(default=None, repr=False, compare=False)

    def admits(self, sequence: int, epoch: int | None) -> bool:
        """Whether a record of `epoch` (None: not a Kafka batch) belongs at `sequence`."""
        if sequence < (self.floor if self.start is None else self.start):
            return True
        return epoch is not None and epoch >= self.epoch

    def epoch_of(self, sequence: int) -> int:
        """The leader epoch of the held record at `sequence` (NO_EPOCH: not known)."""
        return epoch_at(self.epochs, sequence)

    def note(self, sequence: int, epoch: int) -> bool:
        """A record taken at `sequence`; whether the cache changed."""
        if self.epochs and epoch <= self.epochs[-1][0]:
            return False
        self.epochs.append([epoch, sequence])
        self._entry = None
        return True

    def cut(self, sequence: int) -> None:
        """The records from `sequence` on are gone: so are the epochs starting there."""
        self.epochs = [entry for entry in self.epochs if entry[1] < sequence]
        self._entry = None

    def announce(self, start: int) -> bool:
        """The fencing leader's first sequence; whether it is news."""
        if start == NO_START or self.start == start:
            return False
        self.start = start
        self._entry = None
        return True

    def entry(self, key: tuple[str, str]) -> bytes:
        """What the book holds of this fence (`key` is where it holds it)."""
        if self._entry is None:
            self._entry = json.dumps({"subject": key[0], "partition": key[1], "epoch": self.epoch,
                                      "requester": self.requester, "start": self.start,
                                      "epochs": self.epochs}).encode()
        return self._entry

    def diverges(self, sequence: int, epoch: int | None) -> bool:
        """Whether a record of `epoch` for the held `sequence` replaces what is held there:
        a newer epoch's leader wrote where an older one's record lies (Kafka's truncation)."""
        return epoch is not None and epoch >= self.epoch and self.epoch_of(sequence) < epoch

    def stale_from_start(self, head: int) -> bool:
        """Whether held records from the announced start on are of an older epoch."""
        return self.start is not None and head >= self.start and self.epoch_of(self.start) < self.epoch

    def stale_from(self, leader_epochs, head: int) -> int | None:
        """Where the records held up to `head` stop being the announced leader's log: the
        first sequence below its start whose epoch differs from the leader's there (an epoch
        this store missed wrote it), else the start if an older epoch's records lie from
        there on; None if they all are."""
        diverged = first_divergence(self.epochs, leader_epochs, min(head, self.start - 1))
        if diverged is not None:
            return diverged
        return self.start if self.stale_from_start(head) else None


class BookWrite(NamedTuple):
    """One write of the book: a frame to append, or (whole) the frame of a new file."""

    frame: bytes
    whole: bool


class FenceBook(dict):
    """(subject, partition) -> PartitionFence, kept in `directory`/fences.log."""

    def __init__(self, directory: Path):
        super().__init__()
        self.path = Path(directory) / FENCES_FILE
        self.changed: set[tuple[str, str]] = set()  # the fences whose entries the next write appends
        self._whole_bytes: int | None = None  # the book at its last rewrite (None: no journal yet)
        self._appended_bytes = 0  # since then

    def load(self, heads: dict[tuple[str, str], int]) -> None:
        """Read the book, trimming what lies past each partition's head in `heads`."""
        for entry in self._entries():
            if entry.get(FORGOTTEN):
                self.pop((entry["subject"], entry["partition"]), None)
                continue
            head = heads.get((entry["subject"], entry["partition"]), -1)
            fence = PartitionFence(entry["epoch"], entry["requester"], head + 1, entry["start"], entry["epochs"])
            fence.cut(head + 1)
            self[(entry["subject"], entry["partition"])] = fence

    def _entries(self) -> list[dict]:
        """The entries on disk, oldest first; a torn last frame is cut off."""
        if not self.path.exists():
            whole_book = self.path.with_name(WHOLE_BOOK_FILE)
            return json.loads(whole_book.read_bytes()) if whole_book.exists() else []
        data = self.path.read_bytes()
        entries, intact = read_frames(data)
        if intact < len(data):
            log.warning("fence_book.torn_tail", path=str(self.path), position=intact, dropped_bytes=len(data) - intact)
            os.truncate(self.path, intact)
        self._whole_bytes, self._appended_bytes = 0, intact  # the split is not known: all as appends
        return entries

    def claim(self, key: tuple[str, str], epoch: int, requester: str, floor: int, head_epoch: int) -> bool:
        """A FENCE of `key` at `epoch`: whether it is accepted (newer than any accepted, or the
        accepted claim again); a new one replaces the old, keeping the epochs known."""
        fence = self.get(key)
        if fence is not None and (epoch < fence.epoch or (epoch == fence.epoch and requester != fence.requester)):
            return False
        if fence is None or epoch > fence.epoch:
            epochs = fence.epochs if fence is not None else ([[head_epoch, floor - 1]] if head_epoch != NO_EPOCH else [])
            self[key] = PartitionFence(epoch, requester, floor, epochs=epochs)
            self.changed.add(key)
        return True

    def announce(self, key: tuple[str, str], start: int) -> None:
        if self[key].announce(start):
            self.changed.add(key)

    def note(self, key: tuple[str, str], sequence: int, epoch: int) -> None:
        if self[key].note(sequence, epoch):
            self.changed.add(key)

    def cut(self, key: tuple[str, str], sequence: int) -> None:
        self[key].cut(sequence)
        self.changed.add(key)

    def forget(self, key: tuple[str, str]) -> None:
        """The partition was deleted: its entry goes (a later frame says so until a rewrite)."""
        if self.pop(key, None) is not None:
            self.changed.add(key)

    def changes(self) -> BookWrite | None:
        """What the next write of the book is (None: nothing changed), to be written by
        `write`, maybe in another thread."""
        if not self.changed:
            return None
        whole = self._whole_bytes is None or self._appended_bytes > max(self._whole_bytes, REWRITE_AFTER_BYTES)
        keys = self if whole else self.changed
        frame = encode_frame(b"[" + b", ".join(self._entry(key) for key in keys) + b"]")
        self.changed = set()
        if whole:
            self._whole_bytes, self._appended_bytes = len(frame), 0
        else:
            self._appended_bytes += len(frame)
        return BookWrite(frame, whole)

    def _entry(self, key: tuple[str, str]) -> bytes:
        fence = self.get(key)
        if fence is None:
            return json.dumps({"subject": key[0], "partition": key[1], FORGOTTEN: True}).encode()
        return fence.entry(key)

    def write(self, book: BookWrite) -> None:
        """Durably: a crash leaves the book as it was, or as it is now."""
        if not book.whole:
            with open(self.path, "ab") as file:
                file.write(book.frame)
                file.flush()
                os.fdatasync(file.fileno())
            return
        temporary = self.path.with_name(FENCES_FILE + ".new")
        with open(temporary, "wb") as file:
            file.write(book.frame)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, self.path)
        fsync_directory(str(self.path.parent))
        self.path.with_name(WHOLE_BOOK_FILE).unlink(missing_ok=True)  # a book older than the journal


def encode_frame(payload: bytes) -> bytes:
    return FRAME.pack(crc32c(payload), len(payload)) + payload


def read_frames(data: bytes) -> tuple[list[dict], int]:
    """The entries of the intact frames at the start of `data`, and where they end."""
    entries, position = [], 0
    while position + FRAME.size <= len(data):
        crc, length = FRAME.unpack_from(data, position)
        payload = data[position + FRAME.size: position + FRAME.size + length]
        if not length or len(payload) < length or crc32c(payload) != crc:
            break
        entries.extend(json.loads(payload))
        position += FRAME.size + length
    return entries, position
