"""Log compaction of v2 batches, as Kafka's log cleaner does it, sans-IO.

A pass over a log cleans the batches below `clean_before` (a position in the
log, counted in batches): first an offset map of the newest offset of each
key is built from the dirty batches (those not cleaned by an earlier pass),
then every batch below `clean_before` loses the records that a newer record
of the same key supersedes, keyless records, the records of aborted
transactions, and tombstones (null values) below `tombstones_before`. What
is at or past `clean_before` stays as it is.

A cleaned batch keeps its base offset, last offset delta, producer id, epoch
and base sequence (so offsets and producer state stay as they were; consumers
see gaps), and its codec; its records keep their offsets and timestamps, its
CRC is new. A batch that loses every record keeps its header with no records
(Kafka keeps such an empty batch only for a producer's state; here every batch
keeps its place in the log, and readers skip empty ones). A COMMIT marker
or ABORT marker goes as Kafka's cleaner removes it: once no record of its
transaction is left (an aborted transaction keeps none) and it lies below
`tombstones_before` (its delete horizon passed); a reader of the log takes an
empty marker batch as the end of a transaction that left nothing to read. The
records of an aborted transaction all lie before its marker, so a pass that
empties the marker removes them too, in an earlier segment swap or the same.

The offset map is bounded: a pass whose dirty batches hold more keys than
it takes cleans up to where the map filled, and the next pass goes on from
there. Keys are kept as 16-byte digests, as Kafka's SkimpyOffsetMap does, so
that two keys with the same digest (a chance of 2^-128) count as one.
"""

from __future__ import annotations

import hashlib
import struct
from bisect import bisect_right
from collections.abc import Callable, Iterable
from typing import NamedTuple

import crc32c

from protocol.records.batch import CODEC_MASK, CRC_POSITION, CRC_START, HEADER_SIZE, RecordBatch, TimestampType
from protocol.records.builder import ControlType, read_control_record
from protocol.records.compression import compress
from protocol.records.record import Record, encode_record

DIGEST_SIZE = 16
MAP_ENTRY_BYTES = DIGEST_SIZE + 8  # Kafka's measure of an offset map slot: digest and offset
MAP_LOAD_FACTOR = 0.9  # Kafka's log.cleaner.io.buffer.load.factor
_EMPTY = bytes(DIGEST_SIZE)


def map_capacity(buffer_bytes: int) -> int:
    """Keys an offset map of `buffer_bytes` holds (log.cleaner.dedupe.buffer.size)."""
    return int(buffer_bytes // MAP_ENTRY_BYTES * MAP_LOAD_FACTOR)


def key_digest(key: bytes) -> bytes:
    return hashlib.blake2b(key, digest_size=DIGEST_SIZE).digest()


class OffsetMap:
    """The newest offset of each key of the dirty batches, at most `capacity` keys.

    An open-addressing table of (digest, offset) slots in one buffer, as Kafka's
    SkimpyOffsetMap: MAP_ENTRY_BYTES a slot, filled up to MAP_LOAD_FACTOR, so its
    memory is what log.cleaner.dedupe.buffer.size says.
    """

    def __init__(self, capacity: int):
        self.capacity = capacity
        self._slots = int(capacity / MAP_LOAD_FACTOR) + 1
        self._table = bytearray(self._slots * MAP_ENTRY_BYTES)
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def room_for(self, keys: int) -> bool:
        return self._count + keys <= self.capacity

    def put(self, key: bytes, offset: int) -> None:
        digest = key_digest(key)
        at, empty = self._slot_of(digest)
        if empty:
            self._table[at:at + DIGEST_SIZE] = digest
            self._count += 1
        self._table[at + DIGEST_SIZE:at + MAP_ENTRY_BYTES] = offset.to_bytes(8, "big", signed=True)

    def newest(self, key: bytes) -> int | None:
        at, empty = self._slot_of(key_digest(key))
        return None if empty else int.from_bytes(self._table[at + DIGEST_SIZE:at + MAP_ENTRY_BYTES], "big", signed=True)

    def _slot_of(self, digest: bytes) -> tuple[int, bool]:
        """Where `digest` is, or the empty slot where it goes (an all-zero digest marks empty)."""
        slot = int.from_bytes(digest[:8], "big") % self._slots
        while True:
            at = slot * MAP_ENTRY_BYTES
            found = self._table[at:at + DIGEST_SIZE]
            if found == digest:
                return at, False
            if found == _EMPTY:
                return at, True
            slot = (slot + 1) % self._slots


class Transactions:
    """Which transaction each transactional record belongs to, and how it ended.

    Built from the markers of a log: `scan` every batch in order, then ask
    `outcome(producer_id, offset)`: True committed, False aborted, None open.
    While a pass rewrites the log in order, `kept` notes the transactions
    that keep records, and `marker_removable` says whether a marker may go.
    Holds two offsets and a flag per transaction of the log.
    """

    def __init__(self):
        self._open: dict[int, int] = {}  # producer id -> first offset of its open transaction
        self._ends: dict[int, list[tuple[int, int, bool]]] = {}  # producer id -> (first, marker, committed)
        self._keeping: set[tuple[int, int]] = set()  # (producer id, marker offset) of transactions with records

    def scan(self, batch: RecordBatch) -> None:
        if not batch.is_transactional:
            return
        producer_id = batch.producer_id
        if not batch.is_control:
            self._open.setdefault(producer_id, batch.base_offset)
            return
        first = self._open.pop(producer_id, None)
        records = batch.records()
        if first is None or not records:
            return
        marker = read_control_record(records[0])
        if marker.type in (ControlType.ABORT, ControlType.COMMIT):
            ends = self._ends.setdefault(producer_id, [])
            ends.append((first, batch.base_offset, marker.type == ControlType.COMMIT))

    def _end_of(self, producer_id: int, offset: int) -> tuple[int, int, bool] | None:
        ends = self._ends.get(producer_id, [])
        i = bisect_right(ends, (offset, float("inf"))) - 1
        if i >= 0 and ends[i][0] <= offset < ends[i][1]:
            return ends[i]
        return None

    def outcome(self, producer_id: int, offset: int) -> bool | None:
        end = self._end_of(producer_id, offset)
        return None if end is None else end[2]

    def kept(self, producer_id: int, offset: int) -> None:
        end = self._end_of(producer_id, offset)
        if end is not None:
            self._keeping.add((producer_id, end[1]))

    def marker_removable(self, producer_id: int, marker_offset: int) -> bool:
        """A marker the scan saw end a transaction, none of whose records are kept (the
        gateway forgets an aborted one once it reads its marker emptied: PartitionLog.read)."""
        end = self._end_of(producer_id, marker_offset - 1)  # the transaction ends right before its marker
        return end is not None and end[1] == marker_offset and (producer_id, marker_offset) not in self._keeping


def _counts(record: Record, batch: RecordBatch, transactions: Transactions) -> bool:
    """Whether a record may stand for its key: keyed, and not of an aborted or open transaction."""
    if record.key is None:
        return False
    return not batch.is_transactional or transactions.outcome(batch.producer_id, record.offset) is True


def map_batch(batch: RecordBatch, offsets: OffsetMap, transactions: Transactions) -> bool:
    """Put the batch's keys in the map; False (and nothing put) if they might not fit."""
    if batch.is_control:
        return True
    if not offsets.room_for(batch.record_count):
        return False
    for record in batch.records():
        if _counts(record, batch, transactions):
            offsets.put(record.key, record.offset)
    return True


def _kept(record: Record, batch: RecordBatch, offsets: OffsetMap, transactions: Transactions,
          drop_tombstones: bool) -> bool:
    if record.key is None:
        return False  # Kafka's cleaner drops keyless records of a compacted log
    if batch.is_transactional and transactions.outcome(batch.producer_id, record.offset) is False:
        return False
    newest = offsets.newest(record.key)
    if newest is not None and newest > record.offset:
        return False
    return record.value is not None or not drop_tombstones


def clean_batch(batch: RecordBatch, offsets: OffsetMap, transactions: Transactions, *,
                drop_tombstones: bool) -> bytes | None:
    """The batch with only the records a compacted log keeps; None if it keeps them all.
    Batches must come in log order, for the transactions to learn what they keep."""
    if batch.record_count == 0:
        return None
    if batch.is_control:
        removable = drop_tombstones and transactions.marker_removable(batch.producer_id, batch.base_offset)
        return rebuilt_batch(batch, []) if removable else None
    records = batch.records()
    kept = [r for r in records if _kept(r, batch, offsets, transactions, drop_tombstones)]
    if kept and batch.is_transactional:
        transactions.kept(batch.producer_id, kept[0].offset)
    if len(kept) == len(records):
        return None
    return rebuilt_batch(batch, kept)


def rebuilt_batch(batch: RecordBatch, records: list[Record]) -> bytes:
    """`batch` holding `records` (some of its own) instead, as Kafka's cleaner rewrites
    it: same header but the record count, the max timestamp of what is kept and a new
    CRC; same codec, or none when nothing is kept."""
    body = bytearray()
    base_offset, base_timestamp = batch.base_offset, batch.base_timestamp
    for record in records:
        encode_record(body, record, record.offset - base_offset, record.timestamp - base_timestamp)
    codec = batch.compression if records else 0
    payload = compress(codec, bytes(body)) if records else b""
    header = bytearray(batch.buffer[:HEADER_SIZE])
    max_timestamp = batch.max_timestamp
    if records and batch.timestamp_type == TimestampType.CREATE_TIME:
        max_timestamp = max(record.timestamp for record in records)
    struct.pack_into(">i", header, 8, HEADER_SIZE - 12 + len(payload))
    struct.pack_into(">h", header, 21, batch.attributes & ~CODEC_MASK | codec)
    struct.pack_into(">q", header, 35, max_timestamp)
    struct.pack_into(">i", header, 57, len(records))
    struct.pack_into(">I", header, CRC_POSITION, crc32c.crc32c(payload, crc32c.crc32c(header[CRC_START:])))
    return bytes(header) + payload


def is_empty_batch(data: bytes | memoryview) -> bool:
    """Whether a stored batch lost every record to compaction (a header alone)."""
    return len(data) == HEADER_SIZE and int.from_bytes(data[57:61], "big", signed=True) == 0


class Pass(NamedTuple):
    """What one pass over a log may do, positions counted in batches."""

    dirty_from: int  # first position not cleaned by an earlier pass
    clean_before: int  # positions below may be cleaned
    tombstones_before: int  # tombstones below may go


Entries = Callable[[int], Iterable[tuple[int, bytes | memoryview]]]  # from a position to the log's end


def plan_pass(entries: Entries, first: int, cleaning: Pass, capacity: int) -> tuple[OffsetMap, Transactions, int]:
    """The transactions of the whole log (markers may come after `clean_before`), the
    offset map of its dirty batches, and where this pass ends: `clean_before`, or
    earlier where the map filled. Reads the log twice, keeping no batch."""
    transactions = Transactions()
    dirty_records = 0
    for position, content in entries(first):
        batch = RecordBatch(memoryview(content))
        transactions.scan(batch)
        if cleaning.dirty_from <= position < cleaning.clean_before:
            dirty_records += batch.record_count
    offsets = OffsetMap(min(capacity, dirty_records))  # no bigger than this pass needs
    for position, content in entries(cleaning.dirty_from):
        if position >= cleaning.clean_before:
            break
        if not map_batch(RecordBatch(memoryview(content)), offsets, transactions):
            return offsets, transactions, position
    return offsets, transactions, cleaning.clean_before


def cleaned_content(content: bytes | memoryview, position: int, cleaning: Pass, offsets: OffsetMap,
                    transactions: Transactions) -> bytes | None:
    """The entry at `position` as a pass ending at `cleaning.clean_before` leaves it; None: unchanged."""
    if position >= cleaning.clean_before:
        return None
    return clean_batch(RecordBatch(memoryview(content)), offsets, transactions,
                       drop_tombstones=position < cleaning.tombstones_before)
