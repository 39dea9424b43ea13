"""A partition's checkpoint file: what start-up would otherwise rebuild by reading every
stored batch (the offset index and the producer and transaction state), as of one Dafka
sequence, so that start-up reads only the batches after it.

Layout: b"DGPC", a version byte, the CRC-32C of everything after it (4 bytes), the
length of a JSON header (4 bytes), the header, then the index's three columns of
little-endian int64 (base offsets, running maximum timestamps, running byte ends),
`count` values each. The header names the partition (topic id and Dafka address)
and holds the rest.
"""

from __future__ import annotations

import json
import struct
import sys
from array import array
from dataclasses import dataclass

from crc32c import crc32c

from protocol.errors import DecodeError

MAGIC = b"DGPC"
VERSION = 1
_PREFIX = struct.Struct(">4sBII")  # magic, version, crc32c, header length
_INT64 = 8


@dataclass(frozen=True)
class PartitionCheckpoint:
    topic_id: str
    address: str
    first_sequence: int
    next_offset: int
    dropped_bytes: int
    base_offsets: array
    max_timestamps: array
    byte_ends: array
    producers: list  # [producer id, epoch, last timestamp, coordinator epoch, [[first, last, base, dafka, max ts], ...]]
    transactions: dict  # "ongoing": [[producer id, first offset]], "ending": [[first, marker]], "aborted"/"cleaned": [[id, first, last]]

    @property
    def last_sequence(self) -> int:
        """The sequence of the last batch indexed (first_sequence - 1: none)."""
        return self.first_sequence + len(self.base_offsets) - 1


def encode_checkpoint(checkpoint: PartitionCheckpoint) -> bytes:
    header = json.dumps({
        "topic_id": checkpoint.topic_id, "address": checkpoint.address,
        "first_sequence": checkpoint.first_sequence, "next_offset": checkpoint.next_offset,
        "dropped_bytes": checkpoint.dropped_bytes, "count": len(checkpoint.base_offsets),
        "producers": checkpoint.producers, "transactions": checkpoint.transactions,
    }, separators=(",", ":")).encode()
    body = struct.pack(">I", len(header)) + header + b"".join(
        _little_endian(column) for column in (checkpoint.base_offsets, checkpoint.max_timestamps, checkpoint.byte_ends))
    return MAGIC + bytes([VERSION]) + struct.pack(">I", crc32c(body)) + body


def decode_checkpoint(data: bytes) -> PartitionCheckpoint:
    """The checkpoint in `data`; DecodeError if it is not one, is damaged or is incomplete."""
    if len(data) < _PREFIX.size:
        raise DecodeError("checkpoint shorter than its prefix", 0)
    magic, version, checksum, header_length = _PREFIX.unpack_from(data)
    if magic != MAGIC or version != VERSION:
        raise DecodeError(f"not a version {VERSION} partition checkpoint", 0)
    if crc32c(data[9:]) != checksum:
        raise DecodeError("checkpoint checksum does not match its bytes", 5)
    try:
        header = json.loads(data[_PREFIX.size:_PREFIX.size + header_length])
        count = header["count"]
        columns = _columns(data, _PREFIX.size + header_length, count)
        return PartitionCheckpoint(
            header["topic_id"], header["address"], header["first_sequence"], header["next_offset"],
            header["dropped_bytes"], *columns, header["producers"], header["transactions"])
    except (ValueError, KeyError, TypeError) as exc:
        raise DecodeError(f"checkpoint header unreadable: {exc}", _PREFIX.size) from None


def _columns(data: bytes, start: int, count: int) -> list[array]:
    if not isinstance(count, int) or count < 0 or len(data) != start + 3 * count * _INT64:
        raise ValueError(f"{count} batches do not fit the file's {len(data) - start} bytes of columns")
    columns = []
    for n in range(3):
        column = array("q", data[start + n * count * _INT64:start + (n + 1) * count * _INT64])
        if sys.byteorder == "big":
            column.byteswap()
        columns.append(column)
    return columns


def _little_endian(column: array) -> bytes:
    if sys.byteorder == "big":
        column = array("q", column)
        column.byteswap()
    return column.tobytes()
