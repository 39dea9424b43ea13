"""Building v2 batches from records, including transaction markers."""

from __future__ import annotations

import struct
from collections.abc import Sequence
from enum import IntEnum
from typing import NamedTuple

import crc32c

from protocol.errors import DecodeError, EncodeError
from protocol.records.batch import (
    ATTRIBUTES_POSITION,
    CODEC_MASK,
    CONTROL_FLAG,
    CRC_POSITION,
    CRC_START,
    HEADER,
    HEADER_SIZE,
    LENGTH_PREFIX,
    TIMESTAMP_TYPE_FLAG,
    TRANSACTIONAL_FLAG,
    RecordBatch,
)
from protocol.records.compression import Codec, compress
from protocol.records.record import Record, encode_record

_INT32_MAX = (1 << 31) - 1


def build_batch(
    records: Sequence[Record],
    *,
    codec: Codec = Codec.NONE,
    level: int | None = None,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
    control: bool = False,
    partition_leader_epoch: int = -1,
    log_append_time: int | None = None,
) -> bytes:
    """A v2 batch of `records`, based at the first record's offset.

    Timestamps are stored relative to the first record's, as the Java client
    does. With `log_append_time` the batch is stamped LogAppendTime: its
    max_timestamp is that time, which readers give every record.
    """
    if not records:
        raise EncodeError("a batch needs at least one record")
    base_offset = records[0].offset
    base_timestamp = records[0].timestamp
    body = bytearray()
    for record in records:
        delta = record.offset - base_offset
        if not 0 <= delta <= _INT32_MAX:
            raise EncodeError(f"record offset {record.offset} out of the batch's range")
        encode_record(body, record, delta, record.timestamp - base_timestamp)
    attributes = codec | (TRANSACTIONAL_FLAG if transactional else 0)
    attributes |= CONTROL_FLAG if control else 0
    if log_append_time is None:
        max_timestamp = max(record.timestamp for record in records)
    else:
        attributes |= TIMESTAMP_TYPE_FLAG
        max_timestamp = log_append_time
    payload = compress(codec, bytes(body), level=level)
    header = bytearray(HEADER.size)
    try:
        HEADER.pack_into(
            header,
            0,
            base_offset,
            HEADER.size - LENGTH_PREFIX + len(payload),
            partition_leader_epoch,
            2,
            0,  # crc, filled in below
            attributes,
            records[-1].offset - base_offset,
            base_timestamp,
            max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            len(records),
        )
    except struct.error as error:
        raise EncodeError(f"batch header field out of range: {error}") from None
    crc = crc32c.crc32c(payload, crc32c.crc32c(header[CRC_START:]))
    struct.pack_into(">I", header, CRC_POSITION, crc)
    return bytes(header) + payload


def recompressed(batch: RecordBatch, records: bytes | memoryview, codec: Codec, *, level: int | None = None) -> bytes:
    """`batch` with its `records` (uncompressed) compressed with `codec` instead.

    The records' bytes are the same whatever the codec, so offsets, deltas,
    timestamps and headers stay as they are, and so does every header field
    but the codec bits, the length and the CRC.
    """
    payload = compress(codec, records, level=level)
    header = bytearray(batch.buffer[:HEADER_SIZE])
    struct.pack_into(">i", header, LENGTH_PREFIX - 4, HEADER_SIZE - LENGTH_PREFIX + len(payload))
    struct.pack_into(">h", header, ATTRIBUTES_POSITION, batch.attributes & ~CODEC_MASK | codec)
    crc = crc32c.crc32c(payload, crc32c.crc32c(header[CRC_START:]))
    struct.pack_into(">I", header, CRC_POSITION, crc)
    return bytes(header) + payload


class ControlType(IntEnum):
    """Control record types that mark the end of a transaction."""

    ABORT = 0
    COMMIT = 1


class ControlMarker(NamedTuple):
    type: int  # a ControlType, or another control type Kafka defines
    coordinator_epoch: int  # -1 for control records that are not markers


_CONTROL_KEY = struct.Struct(">hh")  # version 0, type
_MARKER_VALUE = struct.Struct(">hi")  # version 0, coordinator epoch


def build_control_batch(
    marker: ControlType,
    *,
    offset: int,
    timestamp: int,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    partition_leader_epoch: int = -1,
) -> bytes:
    """The batch holding one COMMIT or ABORT marker for a producer's transaction."""
    record = Record(
        offset,
        timestamp,
        _CONTROL_KEY.pack(0, marker),
        _MARKER_VALUE.pack(0, coordinator_epoch),
    )
    return build_batch(
        [record],
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        transactional=True,
        control=True,
        partition_leader_epoch=partition_leader_epoch,
    )


def read_control_record(record: Record) -> ControlMarker:
    """The marker a control batch's record carries."""
    kind = _versioned(_CONTROL_KEY, record.key, "control record key")
    if kind not in (ControlType.ABORT, ControlType.COMMIT):
        return ControlMarker(kind, -1)
    coordinator_epoch = _versioned(_MARKER_VALUE, record.value, "transaction marker value")
    return ControlMarker(ControlType(kind), coordinator_epoch)


def read_batch_marker(batch: RecordBatch) -> ControlMarker:
    """The marker of a control batch, which carries it in its one record."""
    return read_control_record(batch.records()[0])


def _versioned(layout: struct.Struct, data: bytes | None, what: str) -> int:
    """The field after the leading int16 version; later versions only append."""
    if data is None or len(data) < layout.size:
        raise DecodeError(f"{what} too short")
    version, field = layout.unpack_from(data)
    if version < 0:
        raise DecodeError(f"bad {what} version {version}")
    return field
