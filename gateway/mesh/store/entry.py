"""On-disk layout of one log entry, and a buffered reader that checks it.

An entry is a 24-byte header followed by the content:
crc32c u32 | content length u32 | sequence u64 | timestamp_ms i64, little-endian.
The CRC covers the header after the CRC field and the content, so a torn or
bit-flipped length, sequence or timestamp is caught like a damaged content.
"""

import os
import struct
from typing import NamedTuple

from crc32c import crc32c

CRC = struct.Struct("<I")
FIELDS = struct.Struct("<IQq")
HEADER_SIZE = CRC.size + FIELDS.size
READ_CHUNK = 256 * 1024


class Entry(NamedTuple):
    sequence: int
    timestamp_ms: int
    content: bytes


class CorruptLogError(Exception):
    """Stored data that was durable is damaged or missing."""


class BadEntry(Exception):
    """The bytes at a position are not a complete, intact entry."""

    def __init__(self, position: int, reason: str):
        super().__init__(f"{reason} at byte {position}")
        self.position = position
        self.reason = reason


def encode_header(sequence: int, content, timestamp_ms: int, size: int) -> bytes:
    fields = FIELDS.pack(size, sequence, timestamp_ms)
    return CRC.pack(crc32c(content, crc32c(fields))) + fields


class EntryReader:
    """Walks entries of one file from a position, reading in large chunks.

    header() parses the next header; then either content() (CRC-checked) or
    skip() must be called before the next header().
    """

    def __init__(self, fd: int, position: int, end: int, chunk: int = READ_CHUNK):
        self.fd = fd
        self.chunk = chunk
        self.position = position
        self.end = end
        self._buffer = b""
        self._buffer_start = position
        self._crc = 0
        self._fields = b""
        self.size = 0

    def at_end(self) -> bool:
        return self.position >= self.end

    def header(self) -> tuple[int, int]:
        """Parse the next header; return (sequence, timestamp_ms)."""
        if self.end - self.position < HEADER_SIZE:
            raise BadEntry(self.position, "incomplete header")
        raw = self._bytes(self.position, HEADER_SIZE)
        (self._crc,) = CRC.unpack_from(raw)
        self._fields = raw[CRC.size :]
        self.size, sequence, timestamp_ms = FIELDS.unpack(self._fields)
        if self.position + HEADER_SIZE + self.size > self.end:
            raise BadEntry(self.position, "incomplete content")
        return sequence, timestamp_ms

    def content(self) -> bytes:
        content = self._bytes(self.position + HEADER_SIZE, self.size)
        if crc32c(content, crc32c(self._fields)) != self._crc:
            raise BadEntry(self.position, "checksum mismatch")
        self.skip()
        return content

    def skip(self) -> None:
        self.position += HEADER_SIZE + self.size

    def _bytes(self, position: int, size: int) -> bytes:
        offset = position - self._buffer_start
        if offset + size <= len(self._buffer):
            return self._buffer[offset : offset + size]
        if size >= self.chunk:
            return read_exactly(self.fd, size, position)
        self._buffer = read_exactly(self.fd, min(self.chunk, self.end - position), position)
        self._buffer_start = position
        return self._buffer[:size]


def read_exactly(fd: int, size: int, position: int) -> bytes:
    data = os.pread(fd, size, position)
    if len(data) < size:
        raise BadEntry(position, "file shorter than expected")
    return data


def write_all(fd: int, buffers: list, position: int) -> None:
    """pwritev that resumes after a short write."""
    remaining = sum(len(buffer) for buffer in buffers)
    while True:
        written = os.pwritev(fd, buffers, position)
        remaining -= written
        if remaining == 0:
            return
        position += written
        while written >= len(buffers[0]):
            written -= len(buffers[0])
            buffers = buffers[1:]
        buffers = [memoryview(buffers[0])[written:], *buffers[1:]]
