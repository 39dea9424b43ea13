"""The length prefix that every entry of a records blob shares.

Each entry (v2 batch or legacy message) starts with offset int64 and
length int32, the length counting the bytes after it; the magic byte sits
at byte 16 in both formats.
"""

from __future__ import annotations

import struct

from protocol.errors import DecodeError

PREFIX_SIZE = 12
MAGIC_POSITION = 16
_MIN_LENGTH = 14  # the smallest entry: a magic 0 message with empty key and value
_LENGTH = struct.Struct(">i")

Frames = tuple[list[memoryview], int]  # complete entries, size of a cut-off tail


def split_frames(data: bytes | memoryview, *, allow_truncated: bool = False) -> Frames:
    """Views of the complete entries in `data`, and the size of a cut-off tail.

    A Fetch response may end inside an entry; with `allow_truncated` those
    trailing bytes are counted instead of rejected.
    """
    view = memoryview(data)
    frames = []
    pos = 0
    end = len(view)
    while pos < end:
        if end - pos < PREFIX_SIZE:
            return _truncated(frames, end - pos, pos, allow_truncated)
        (length,) = _LENGTH.unpack_from(view, pos + 8)
        if length < _MIN_LENGTH:
            raise DecodeError(f"entry length {length} below the minimum", pos + 8)
        stop = pos + PREFIX_SIZE + length
        if stop > end:
            return _truncated(frames, end - pos, pos, allow_truncated)
        frames.append(view[pos:stop])
        pos = stop
    return frames, 0


def _truncated(frames: list[memoryview], size: int, pos: int, allowed: bool) -> Frames:
    if not allowed:
        raise DecodeError("records end inside an entry", pos)
    return frames, size
