"""A zero-copy view of one v2 record batch (magic 2).

Header layout (big-endian), byte offsets from the start of the batch:

     0 base_offset int64          35 max_timestamp int64
     8 batch_length int32         43 producer_id int64
    12 partition_leader_epoch     51 producer_epoch int16
    16 magic int8                 53 base_sequence int32
    17 crc uint32                 57 record_count int32
    21 attributes int16           61 records (compressed as a whole)
    23 last_offset_delta int32
    27 base_timestamp int64

`batch_length` counts the bytes after itself. The CRC (CRC32C) covers
attributes to the end, so base_offset and partition_leader_epoch can be set
by the broker without recomputing it. Fields are read from the buffer on
access, so a view stays right after `offsets.assign_offsets` patches it.
"""

from __future__ import annotations

import struct
from enum import IntEnum

import crc32c

from protocol.errors import DecodeError
from protocol.records.compression import DEFAULT_LIMIT, Codec, decompress
from protocol.records.entry_prefix import MAGIC_POSITION
from protocol.records.record import Record, decode_records

HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size
LENGTH_PREFIX = 12  # base_offset and batch_length: what batch_length leaves out
LEADER_EPOCH_POSITION = 12
CRC_POSITION = 17
CRC_START = 21  # the CRC covers attributes onwards
ATTRIBUTES_POSITION = 21
MAX_TIMESTAMP_POSITION = 35

CODEC_MASK = 0x07
TIMESTAMP_TYPE_FLAG = 0x08
TRANSACTIONAL_FLAG = 0x10
CONTROL_FLAG = 0x20
DELETE_HORIZON_FLAG = 0x40


class TimestampType(IntEnum):
    NONE = -1  # magic 0 messages carry no timestamp
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


def first_batch_transactional(records: bytes | memoryview | None) -> bool:
    """Whether record data starts with a transactional v2 batch, read from the header's first
    bytes alone: a Produce request is judged by it before any check of its records
    (Kafka's RequestUtils.hasTransactionalRecords)."""
    return (records is not None and len(records) > ATTRIBUTES_POSITION + 1 and records[MAGIC_POSITION] == 2
            and bool(records[ATTRIBUTES_POSITION + 1] & TRANSACTIONAL_FLAG))  # the attributes' low byte


class _Field:
    """A header field decoded from the buffer each time it is read."""

    def __init__(self, fmt: str, position: int):
        self._unpack = struct.Struct(">" + fmt).unpack_from
        self._position = position

    def __get__(self, batch: RecordBatch, owner: type | None = None) -> int:
        return self._unpack(batch.buffer, self._position)[0]


_CHECKED_FIELDS = struct.Struct(">8xi4xb4xh")  # batch_length, magic, attributes
# By index rather than by calling the enum, which costs a microsecond: read on every produce.
_CODECS = tuple(Codec(value) for value in range(len(Codec)))
_V2_TIMESTAMP_TYPES = (TimestampType.CREATE_TIME, TimestampType.LOG_APPEND_TIME)


class RecordBatch:
    """A v2 batch over `buffer`, which holds exactly that batch."""

    __slots__ = ("buffer",)

    base_offset = _Field("q", 0)
    batch_length = _Field("i", 8)
    partition_leader_epoch = _Field("i", 12)
    magic = _Field("b", 16)
    crc = _Field("I", 17)
    attributes = _Field("h", 21)
    last_offset_delta = _Field("i", 23)
    base_timestamp = _Field("q", 27)
    max_timestamp = _Field("q", 35)
    producer_id = _Field("q", 43)
    producer_epoch = _Field("h", 51)
    base_sequence = _Field("i", 53)
    record_count = _Field("i", 57)

    def __init__(self, buffer: memoryview):
        self.buffer = buffer
        if len(buffer) < HEADER_SIZE:
            raise DecodeError("record batch shorter than its header")
        batch_length, magic, attributes = _CHECKED_FIELDS.unpack_from(buffer)
        if magic != 2:
            raise DecodeError(f"record batch magic {magic} is not 2", 16)
        if batch_length != len(buffer) - LENGTH_PREFIX:
            raise DecodeError("batch_length disagrees with the batch size", 8)
        if attributes & CODEC_MASK > Codec.ZSTD:
            raise DecodeError(f"unknown compression codec {attributes & CODEC_MASK}", 21)

    @property
    def compression(self) -> Codec:
        return _CODECS[self.attributes & CODEC_MASK]  # checked on construction

    @property
    def timestamp_type(self) -> TimestampType:
        return _V2_TIMESTAMP_TYPES[bool(self.attributes & TIMESTAMP_TYPE_FLAG)]

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_FLAG)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & DELETE_HORIZON_FLAG)

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def size(self) -> int:
        return len(self.buffer)

    def verify_crc(self) -> None:
        """DecodeError unless the stored CRC matches the bytes it covers."""
        if crc32c.crc32c(self.buffer[CRC_START:]) != self.crc:
            raise DecodeError("record batch CRC mismatch", CRC_POSITION)

    def records(self, *, limit: int = DEFAULT_LIMIT) -> list[Record]:
        """Decompress (at most `limit` bytes) and decode the records."""
        count = self.record_count
        if count < 0:
            raise DecodeError("negative record count", 57)
        payload = decompress(self.compression, self.buffer[HEADER_SIZE:], limit=limit)
        log_append_time = (
            self.max_timestamp if self.timestamp_type == TimestampType.LOG_APPEND_TIME else None
        )
        return decode_records(
            payload, count, self.base_offset, self.base_timestamp, log_append_time
        )
