"""Size-prefixed framing of Kafka's TCP stream, sans-IO.

Every request and response travels as a 4-byte big-endian size followed by
that many bytes. `FrameReader` is fed whatever the socket gave and hands
back whole frames; it refuses a size above its limit as soon as the prefix
is in, before a byte of the body is buffered.
"""

from __future__ import annotations

import struct

from ..errors import DecodeError

_SIZE = struct.Struct(">i")
SIZE_PREFIX_BYTES = _SIZE.size


class FrameReader:
    """Splits a byte stream into frames of at most `max_frame_bytes`."""

    def __init__(self, max_frame_bytes: int):
        self.max_frame_bytes = max_frame_bytes
        self._buffer = bytearray()
        self._consumed = 0  # bytes at the front of _buffer already handed out

    def feed(self, data: bytes) -> None:
        if self._consumed:
            # Frames handed out are views into the old buffer: leave it to them.
            self._buffer = self._buffer[self._consumed :]
            self._consumed = 0
        self._buffer += data

    def next_frame(self) -> memoryview | None:
        """The next whole frame, or None until more bytes are fed.

        Frames are writable views, not copies, so that record batches inside
        a produce request can be stamped with their offsets where they lie;
        the reader never writes to bytes it has handed out.

        Raises DecodeError for a negative size or one above the limit.
        """
        start = self._consumed
        if len(self._buffer) - start < 4:
            return None
        (size,) = _SIZE.unpack_from(self._buffer, start)
        if size < 0 or size > self.max_frame_bytes:
            raise DecodeError(
                f"frame size {size} outside 0..{self.max_frame_bytes}", start
            )
        end = start + 4 + size
        if len(self._buffer) < end:
            return None
        self._consumed = end
        return memoryview(self._buffer)[start + 4 : end]

    @property
    def pending_bytes(self) -> int:
        """Bytes received that do not yet form a whole frame."""
        return len(self._buffer) - self._consumed

