"""Legacy message sets: magic 0 and magic 1 messages.

One message: offset int64, size int32 (bytes after itself), crc uint32
(zlib CRC32 of magic to the end), magic int8, attributes int8, timestamp
int64 (magic 1 only), key and value as int32-length nullable bytes.

A compressed message is a wrapper whose value holds a compressed message
set of uncompressed inner messages. Magic 0 inner messages carry absolute
offsets. Magic 1 inner messages carry offsets relative to the first one and
the wrapper carries the absolute offset of the last: Kafka derives each
inner offset as wrapper.offset - last_inner.offset + inner.offset. A magic 1
wrapper stamped with LogAppendTime lends its timestamp to every inner
message.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence

from protocol.errors import DecodeError, EncodeError
from protocol.records.batch import CODEC_MASK, TIMESTAMP_TYPE_FLAG, TimestampType
from protocol.records.compression import DEFAULT_LIMIT, Codec, compress, decompress
from protocol.records.entry_prefix import split_frames
from protocol.records.record import Record

_PREFIX = struct.Struct(">qiIbb")  # offset, size, crc, magic, attributes
_TIMESTAMP = struct.Struct(">q")
_LENGTH = struct.Struct(">i")
CRC_START = 16  # the CRC covers magic onwards
MIN_SIZE = {0: 14, 1: 22}  # crc, magic, attributes, [timestamp], two lengths


class LegacyMessage:
    """A magic 0 or 1 message over `buffer`, which holds exactly that message."""

    __slots__ = ("buffer", "offset", "crc", "magic", "attributes", "timestamp", "key", "value")

    def __init__(self, buffer: memoryview):
        self.buffer = buffer
        if len(buffer) < _PREFIX.size:
            raise DecodeError("legacy message shorter than its header")
        self.offset, size, self.crc, self.magic, self.attributes = _PREFIX.unpack_from(buffer)
        if self.magic not in MIN_SIZE or size < MIN_SIZE[self.magic]:
            raise DecodeError(f"bad legacy message (magic {self.magic}, size {size})", 8)
        if self.attributes & CODEC_MASK > Codec.LZ4:
            raise DecodeError(f"codec {self.attributes & CODEC_MASK} needs magic 2", 17)
        pos = _PREFIX.size
        self.timestamp = -1
        if self.magic == 1:
            (self.timestamp,) = _TIMESTAMP.unpack_from(buffer, pos)
            pos += 8
        self.key, pos = _read_bytes(buffer, pos)
        self.value, pos = _read_bytes(buffer, pos)
        if pos != len(buffer):
            raise DecodeError("legacy message size disagrees with its fields", pos)

    @property
    def compression(self) -> Codec:
        return Codec(self.attributes & CODEC_MASK)

    @property
    def timestamp_type(self) -> TimestampType:
        if self.magic == 0:
            return TimestampType.NONE
        return TimestampType(bool(self.attributes & TIMESTAMP_TYPE_FLAG))

    @property
    def last_offset(self) -> int:
        return self.offset

    @property
    def size(self) -> int:
        return len(self.buffer)

    def verify_crc(self) -> None:
        """DecodeError unless the stored CRC matches the bytes it covers."""
        if zlib.crc32(self.buffer[CRC_START:]) != self.crc:
            raise DecodeError("legacy message CRC mismatch", 12)

    def records(self, *, limit: int = DEFAULT_LIMIT) -> list[Record]:
        """This message as records: itself, or its inner messages (CRC checked)."""
        if self.compression == Codec.NONE:
            return [Record(self.offset, self.timestamp, _bytes(self.key), _bytes(self.value))]
        if self.value is None:
            raise DecodeError("compressed legacy message without a value")
        data = decompress(self.compression, self.value, magic=self.magic, limit=limit)
        inner = _inner_messages(self, data)
        shift = self.offset - inner[-1].offset if self.magic > 0 else 0
        stamp = self.timestamp_type == TimestampType.LOG_APPEND_TIME
        return [
            Record(
                message.offset + shift,
                self.timestamp if stamp else message.timestamp,
                _bytes(message.key),
                _bytes(message.value),
            )
            for message in inner
        ]


def _inner_messages(wrapper: LegacyMessage, data: bytes) -> list[LegacyMessage]:
    inner = [LegacyMessage(frame) for frame in split_frames(data)[0]]
    if not inner:
        raise DecodeError("compressed legacy message with no inner messages")
    for message in inner:
        if message.magic != wrapper.magic:
            raise DecodeError("inner message magic differs from its wrapper's")
        if message.compression != Codec.NONE:
            raise DecodeError("inner messages must not be compressed")
        message.verify_crc()
    return inner


def _read_bytes(buffer: memoryview, pos: int) -> tuple[memoryview | None, int]:
    if pos + 4 > len(buffer):
        raise DecodeError("truncated legacy message", pos)
    (length,) = _LENGTH.unpack_from(buffer, pos)
    pos += 4
    if length == -1:
        return None, pos
    if length < 0 or pos + length > len(buffer):
        raise DecodeError("legacy message field overruns the message", pos - 4)
    return buffer[pos : pos + length], pos + length


def _bytes(view: memoryview | None) -> bytes | None:
    return None if view is None else bytes(view)


def build_message_set(
    records: Sequence[Record],
    *,
    magic: int,
    codec: Codec = Codec.NONE,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
) -> bytes:
    """A magic 0 or 1 message set holding `records` at their own offsets.

    Uncompressed: one message per record. Compressed: one wrapper holding
    them all, laid out as the Java client does (see the module docstring).
    Headers cannot be carried and are dropped; magic 0 drops timestamps.
    """
    if magic not in MIN_SIZE:
        raise EncodeError(f"legacy messages have magic 0 or 1, not {magic}")
    if codec > Codec.LZ4:
        raise EncodeError(f"{codec.name} needs magic 2")
    stamped = magic == 1 and timestamp_type == TimestampType.LOG_APPEND_TIME
    flags = TIMESTAMP_TYPE_FLAG if stamped else 0
    if codec == Codec.NONE:
        return b"".join(_message(magic, flags, record, record.offset) for record in records)
    if not records:
        return b""
    first = records[0].offset if magic == 1 else 0
    inner = b"".join(_message(magic, flags, record, record.offset - first) for record in records)
    wrapper = Record(
        records[-1].offset,
        max(record.timestamp for record in records),
        None,
        compress(codec, inner, magic=magic),
    )
    return _message(magic, flags | codec, wrapper, wrapper.offset)


def _message(magic: int, attributes: int, record: Record, offset: int) -> bytes:
    body = bytearray(struct.pack(">bb", magic, attributes))
    if magic == 1:
        body += _TIMESTAMP.pack(record.timestamp)
    for field in (record.key, record.value):
        body += _LENGTH.pack(-1 if field is None else len(field))
        body += field or b""
    crc = zlib.crc32(body)
    return struct.pack(">qiI", offset, len(body) + 4, crc) + body
