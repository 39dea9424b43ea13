"""v2 batches with sound headers and right CRCs around records that break the format."""

from __future__ import annotations

import struct
import time
import zlib
from functools import cache

import crc32c

from protocol.records import Codec, Record, compress
from protocol.records.batch import CRC_POSITION, CRC_START, HEADER, LENGTH_PREFIX, TRANSACTIONAL_FLAG
from protocol.records.record import encode_record

TIMESTAMP = int(time.time() * 1000)  # recent: within any retention
BOMB_BYTES = 65 * 1024 * 1024  # past the 64 MiB a produced batch may inflate to


def sealed(payload: bytes, count: int, *, attributes: int = 0, producer_id: int = -1,
           last_offset_delta: int | None = None, timestamp: int = TIMESTAMP) -> bytes:
    """A batch at offset 0 around `payload` (records as they are on the wire), CRC included."""
    header = bytearray(HEADER.size)
    last = count - 1 if last_offset_delta is None else last_offset_delta
    HEADER.pack_into(header, 0, 0, HEADER.size - LENGTH_PREFIX + len(payload), -1, 2, 0, attributes,
                     last, timestamp, timestamp, producer_id, -1 if producer_id < 0 else 0,
                     -1 if producer_id < 0 else 0, count)
    struct.pack_into(">I", header, CRC_POSITION, crc32c.crc32c(payload, crc32c.crc32c(header[CRC_START:])))
    return bytes(header) + payload


def records_bytes(values: list[bytes], deltas: list[int] | None = None) -> bytes:
    out = bytearray()
    for index, value in enumerate(values):
        encode_record(out, Record(value=value, headers=(("h", b"v"),)), index if deltas is None else deltas[index], 0)
    return bytes(out)


def good(values: list[bytes], codec: Codec = Codec.NONE, timestamp: int = TIMESTAMP) -> bytes:
    return sealed(compress(codec, records_bytes(values)), len(values), attributes=codec, timestamp=timestamp)


def bad_varint() -> bytes:
    """A record whose length varint never ends (eleven continuation bytes)."""
    return sealed(b"\xff" * 11 + records_bytes([b"x"]), 1)


def truncated_records() -> bytes:
    """The last record cut short: its length says more bytes than the batch holds."""
    return sealed(records_bytes([b"first", b"second"])[:-3], 2)


def trailing_bytes() -> bytes:
    """Bytes that are no record after the records the batch claims."""
    return sealed(records_bytes([b"a", b"b"]) + b"\x07", 2)


def count_lies() -> bytes:
    """Three well-formed records in a batch that claims two."""
    return sealed(records_bytes([b"a", b"b", b"c"]), 2)


def gzip_flag_on_raw_bytes() -> bytes:
    return sealed(records_bytes([b"not compressed"]), 1, attributes=Codec.GZIP)


def unknown_codec() -> bytes:
    return sealed(records_bytes([b"a"]), 1, attributes=5)


def offsets_out_of_order() -> bytes:
    return sealed(records_bytes([b"a", b"b", b"c"], deltas=[0, 2, 1]), 3)


def transactional_without_producer() -> bytes:
    return sealed(records_bytes([b"a"]), 1, attributes=TRANSACTIONAL_FLAG)


@cache
def gzip_bomb() -> bytes:
    """A one-record batch of about 65 KB whose gzip data inflates to 65 MiB of zeros."""
    packer = zlib.compressobj(9, wbits=31)
    chunk = bytes(1 << 20)
    parts = [packer.compress(chunk) for _ in range(BOMB_BYTES >> 20)]
    return sealed(b"".join(parts) + packer.flush(), 1, attributes=Codec.GZIP)


# Compressed data that does not inflate, or not within the bound, or a codec that is none
CORRUPT = {"gzip_flag_on_raw": gzip_flag_on_raw_bytes, "gzip_bomb": gzip_bomb, "unknown_codec": unknown_codec}
# Records that do not make up the batch: Kafka's InvalidRecordException, whether they parse or not
INVALID = {"bad_varint": bad_varint, "truncated": truncated_records, "trailing_bytes": trailing_bytes,
           "count_lies": count_lies, "offsets_out_of_order": offsets_out_of_order}
