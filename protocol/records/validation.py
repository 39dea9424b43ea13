"""Checking every record of a produced v2 batch, in one pass over its bytes.

Kafka's log validator walks every record of a batch a client produces; so
does `validate_batch`, without building records or copying the batch (a
compressed batch is inflated once, within a bound). Two kinds of failure:
compressed data that does not inflate within the bound (DecodeError) and
records that do not make up the batch (InvalidRecords, Kafka's
INVALID_RECORD): a record count or offset deltas that disagree with the
records, a record cut short, bytes past the last record or inside one that
do not parse. Kafka's record iterator raises its InvalidRecordException for
all of these, its CRC having passed; a transactional batch without a
producer id is not one of them (Kafka appends it as a plain batch).
The walk also gives the range of the records' timestamps, which the
producer's header does not vouch for (its max_timestamp is the producer's
word, and deltas may be negative), so that the caller checks them against
message.timestamp.before/after.max.ms without a second pass.

The walk reads the zigzag varints raw: a length is valid when its raw value
is even (not negative) and a nullable length may also be 1 (zigzag -1), and
the i-th offset delta must be raw 2*i; only lengths and timestamp deltas
are decoded (a timestamp delta to 64 bits, the bits past them dropped, as
Java's readVarlong does). In Python
the walk costs about 1 us per record, as much CPU as the rest of a produce
of small records (bench/validation.py); the same walk in C, built where a
compiler is (an optional extension), costs about 10 ns.
"""

from __future__ import annotations

from typing import NamedTuple

from protocol.errors import DecodeError
from protocol.records.batch import CODEC_MASK, HEADER_SIZE, RecordBatch
from protocol.records.compression import Codec, decompress

_NULL = 1  # zigzag -1: a null key, value or header value
_U64 = (1 << 64) - 1
_NO_LOW, _NO_HIGH = (1 << 63) - 1, -(1 << 63)  # the range of no timestamps at all

try:  # the same walk compiled (protocol/records/_walk.c), where a C compiler built it
    from protocol.records._walk import walk as compiled_walk
except ImportError:
    compiled_walk = None


class InvalidRecords(ValueError):
    """A batch whose records parse but break a rule of the v2 format."""


class Walked(NamedTuple):
    """What walking a batch's records found: how many, and their timestamp deltas' range."""

    count: int
    min_timestamp_delta: int
    max_timestamp_delta: int


class Validated(NamedTuple):
    """A checked batch's records, uncompressed, and the range of their timestamps."""

    records: bytes | memoryview
    min_timestamp: int
    max_timestamp: int


def validate_batch(batch: RecordBatch, *, limit: int) -> Validated:
    """Check the records of `batch`; their uncompressed size may not pass `limit`.

    Returns the records uncompressed, so that a caller recompressing the
    batch inflates it once, and their timestamps' range. The header must
    already be sound (RecordBatch checks magic, length and codec; the caller the CRC).
    """
    count = batch.record_count
    if count < 1 or count != batch.last_offset_delta + 1:
        raise InvalidRecords(f"batch claims {count} records over {batch.last_offset_delta + 1} offsets")
    records = batch.buffer[HEADER_SIZE:]
    codec = batch.attributes & CODEC_MASK
    if codec:
        records = decompress(Codec(codec), records, limit=limit)
    try:
        found, low, high = walk(records)
    except DecodeError as exc:
        raise InvalidRecords(f"records do not parse: {exc}") from None
    if found != count:
        raise InvalidRecords(f"batch claims {count} records and holds {found}")
    base = batch.base_timestamp
    return Validated(records, base + low, base + high)


def walk(data: bytes | memoryview) -> Walked:
    """The records that make up `data` exactly; InvalidRecords unless their
    offset deltas are 0, 1, 2...; DecodeError if a record does not parse."""
    if compiled_walk is not None:
        found = compiled_walk(data)
        if found != -1:
            return Walked(*found)
    return walk_records(data)  # the compiled walk refused it: which error, and where


def walk_records(data: bytes | memoryview) -> Walked:
    """walk in Python, the reference for protocol/records/_walk.c."""
    size = len(data)
    pos = index = 0
    low, high = _NO_LOW, _NO_HIGH
    tail = _varint_tail
    try:
        while pos < size:
            length = data[pos]
            pos += 1
            if length > 0x7F:
                length, pos = tail(data, pos, length)
            end = pos + (length >> 1)
            if length & 1 or end > size:
                raise DecodeError("record length out of range", pos)
            stamp = data[pos + 1]  # after the attributes (unused): the timestamp delta, any value
            pos += 2
            if stamp > 0x7F:
                stamp, pos = tail(data, pos, stamp)
                stamp &= _U64
            stamp = (stamp >> 1) ^ -(stamp & 1)
            if stamp < low:
                low = stamp
            if stamp > high:
                high = stamp
            delta = data[pos]
            pos += 1
            if delta > 0x7F:
                delta, pos = tail(data, pos, delta)
            if delta != index << 1:
                raise InvalidRecords(f"record {index} has offset delta {(delta >> 1) ^ -(delta & 1)}")
            pos = _skip_nullable(data, _skip_nullable(data, pos))  # key, value
            headers = data[pos]
            pos += 1
            if headers > 0x7F:
                headers, pos = tail(data, pos, headers)
            if headers:
                pos = _skip_headers(data, pos, headers, end)
            if pos != end:
                raise DecodeError("record fields disagree with its length", pos)
            index += 1
    except IndexError:
        raise DecodeError("truncated record", pos) from None
    return Walked(index, low, high)


def _skip_nullable(data, pos: int) -> int:
    """The position after the nullable length-prefixed bytes at `pos`."""
    length = data[pos]
    pos += 1
    if length > 0x7F:
        length, pos = _varint_tail(data, pos, length)
    if length & 1:
        if length != _NULL:
            raise DecodeError("negative length", pos)
        return pos
    return pos + (length >> 1)


def _skip_headers(data, pos: int, raw_count: int, end: int) -> int:
    if raw_count & 1 or raw_count > end - pos:  # each header takes two bytes at least
        raise DecodeError("header count out of range", pos)
    for _ in range(raw_count >> 1):
        if data[pos] & 1:  # a null key (or a negative length)
            raise DecodeError("header key is not a string", pos)
        pos = _skip_nullable(data, _skip_nullable(data, pos))
    return pos


def _varint_tail(data, pos: int, first: int) -> tuple[int, int]:
    """The raw (unsigned) varint whose first byte, `first`, was before `pos`."""
    value = first & 0x7F
    shift = 7
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise DecodeError("varint longer than 10 bytes", pos)
