"""A segment's index file: its durable point, then a sparse position index.

Layout: a 32-byte slot holding the durable point (overwritten in place after
every fsync of the segment), then records of (sequence - base, byte position)
as two u32, little-endian, one every INDEX_INTERVAL bytes of log.

The durable point is written only after the log fsync returned, so if it is
found on disk, the log up to its length was durable: damage below it is real
corruption, damage above it is a torn tail from a crash. Index records are
never fsynced for the active segment; open checks and rebuilds them.
"""

import os
import struct
import sys
from array import array
from bisect import bisect_right
from typing import NamedTuple

from crc32c import crc32c

INDEX_INTERVAL = 4096
MAGIC = b"DSI1"
POINT = struct.Struct("<4sIQq")
POINT_CRC = struct.Struct("<I")
RECORDS_START = 32
RECORD_SIZE = 8


class DurablePoint(NamedTuple):
    count: int
    length: int
    max_timestamp_ms: int


def encode_point(point: DurablePoint) -> bytes:
    raw = POINT.pack(MAGIC, *point)
    return raw + POINT_CRC.pack(crc32c(raw))


def read_point(fd: int) -> DurablePoint | None:
    raw = os.pread(fd, POINT.size + POINT_CRC.size, 0)
    if len(raw) < POINT.size + POINT_CRC.size:
        return None
    (crc,) = POINT_CRC.unpack_from(raw, POINT.size)
    if crc != crc32c(raw[: POINT.size]) or raw[:4] != MAGIC:
        return None
    return DurablePoint(*POINT.unpack_from(raw)[1:])


class SparseIndex:
    """Positions of some entries of one segment; the first entry always."""

    def __init__(self):
        self.relatives = array("I")
        self.positions = array("I")
        self.records_written = 0

    def __len__(self) -> int:
        return len(self.relatives)

    @classmethod
    def load(cls, fd: int, below: int) -> "SparseIndex":
        """Read the stored records, keeping the increasing run below `below` bytes."""
        raw = os.pread(fd, os.fstat(fd).st_size, RECORDS_START)
        values = array("I")
        values.frombytes(raw[: len(raw) - len(raw) % RECORD_SIZE])
        if sys.byteorder == "big":
            values.byteswap()
        index = cls()
        for relative, position in zip(values[0::2], values[1::2], strict=True):
            if position >= below or (index and not index._follows(relative, position)):
                break
            if not index and (relative, position) != (0, 0):
                break
            index.add(relative, position)
        index.records_written = len(index)
        return index

    def _follows(self, relative: int, position: int) -> bool:
        return relative > self.relatives[-1] and position > self.positions[-1]

    def add(self, relative: int, position: int) -> None:
        self.relatives.append(relative)
        self.positions.append(position)

    def due(self, position: int) -> bool:
        return not self.positions or position - self.positions[-1] >= INDEX_INTERVAL

    def cut(self, below: int) -> None:
        """Forget the records at or past byte `below` (the log was cut back there)."""
        kept = bisect_right(self.positions, below - 1)
        del self.relatives[kept:], self.positions[kept:]
        self.records_written = min(self.records_written, kept)

    def floor(self, relative: int) -> tuple[int, int]:
        """The indexed entry at or before `relative`: (relative, position)."""
        i = bisect_right(self.relatives, relative) - 1
        return self.relatives[i], self.positions[i]

    def flush(self, fd: int) -> None:
        """Write the records added since the last flush."""
        start = self.records_written
        if start == len(self):
            return
        values = array("I", [0, 0]) * (len(self) - start)
        values[0::2] = self.relatives[start:]
        values[1::2] = self.positions[start:]
        if sys.byteorder == "big":
            values.byteswap()
        os.pwrite(fd, values.tobytes(), RECORDS_START + start * RECORD_SIZE)
        self.records_written = len(self)

    def file_size(self) -> int:
        return RECORDS_START + self.records_written * RECORD_SIZE
