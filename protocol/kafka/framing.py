"""Size-prefixed framing of Kafka's TCP stream, sans-IO.

Every request and response travels as a 4-byte big-endian size followed by
that many bytes. `FrameReader` hands out whole frames from the bytes it was
given; it refuses a size above its limit as soon as the prefix is in, before
a byte of the body is buffered.

The I/O layer either writes received bytes straight into `buffer_to_fill()`
(a socket's recv_into) or passes chunks to `feed`. A frame's buffer grows
with the bytes that came, never with the size its prefix announces: at most
GROWTH_BYTES or as much again as has come ahead of them, so that a client's
claim costs nothing until it sends the bytes. It grows in place when no view
of it is alive (a large one is remapped, not copied), else by a move.
"""

from __future__ import annotations

import struct

from protocol.errors import DecodeError

_SIZE = struct.Struct(">i")
SIZE_PREFIX_BYTES = _SIZE.size
MIN_FILL_BYTES = 64 * 1024  # below this much free space a fresh buffer is cheaper than small reads
FIRST_BUFFER_BYTES = 16 * 1024  # a stream's first buffer: grown while receives fill them
GROWTH_BYTES = 64 * 1024  # room made for a frame under way beyond its bytes received, at the least


class FrameReader:
    """Splits a byte stream into frames of at most `max_frame_bytes`."""

    def __init__(self, max_frame_bytes: int, buffer_bytes: int = 256 * 1024):
        self.max_frame_bytes = max_frame_bytes
        self.buffer_bytes = buffer_bytes
        self._buffer = bytearray()  # taken when bytes come: a quiet stream holds none
        self._start = 0  # first byte not yet handed out in a frame
        self._end = 0  # end of the bytes received
        self._next_bytes = min(FIRST_BUFFER_BYTES, buffer_bytes)  # size of the next buffer taken
        self._offered = 0  # free bytes the last buffer_to_fill offered

    @property
    def holds_buffer(self) -> bool:
        return bool(self._buffer)

    def release(self) -> None:
        """Give the buffer up if every byte in it was handed out (frames keep their views)."""
        if self._start == self._end:
            self._buffer = bytearray()
            self._start = self._end = 0
            self._next_bytes = min(FIRST_BUFFER_BYTES, self.buffer_bytes)

    def buffer_to_fill(self) -> memoryview:
        """Free space for the next received bytes; report them with `filled`.

        Bytes already handed out are never moved or overwritten: frames are
        views into the buffer. When space runs short, the unframed rest moves
        to a new buffer with room for more of the frame it begins.
        """
        wanted = self._room_wanted()
        if len(self._buffer) - self._end < wanted and not self._grown_in_place(self._end + wanted):
            pending = memoryview(self._buffer)[self._start : self._end]
            self._buffer = bytearray(max(len(pending) + wanted, self._next_bytes))
            self._buffer[: len(pending)] = pending
            self._start, self._end = 0, len(pending)
        self._offered = len(self._buffer) - self._end
        return memoryview(self._buffer)[self._end :]

    def _grown_in_place(self, size: int) -> bool:
        """Whether the buffer, holding nothing but a frame under way and no longer seen by
        anyone, could be enlarged where it lies."""
        if self._start or not self._buffer:
            return False
        try:
            self._buffer.extend(bytes(size - len(self._buffer)))
        except BufferError:  # a view of it is still alive
            return False
        return True

    def _room_wanted(self) -> int:
        """Free bytes the next receive should have: the rest of a frame under
        way, up to as much again as has come of it (at least GROWTH_BYTES),
        and never too little to be worth a system call."""
        worthwhile = max(1, min(MIN_FILL_BYTES, self._next_bytes // 4))
        size = self._frame_size()
        if size is None or not 0 <= size <= self.max_frame_bytes:
            return worthwhile
        rest = self._start + SIZE_PREFIX_BYTES + size - self._end
        return max(min(rest, max(self.pending_bytes, GROWTH_BYTES)), worthwhile)

    def filled(self, count: int) -> None:
        self._end += count
        if count == self._offered:  # a busy stream: bigger buffers, fewer receives
            self._next_bytes = min(self._next_bytes * 4, self.buffer_bytes)

    def feed(self, data: bytes) -> None:
        data = memoryview(data)
        while data:
            data = data[self._fill_from(data) :]

    def _fill_from(self, data: memoryview) -> int:
        """Bytes of `data` copied in; no view of the buffer outlives it (so that it may grow in place)."""
        space = self.buffer_to_fill()
        taken = min(len(space), len(data))
        space[:taken] = data[:taken]
        self.filled(taken)
        return taken

    def next_frame(self) -> memoryview | None:
        """The next whole frame, or None until more bytes come.

        Frames are writable views, not copies, so that record batches inside
        a produce request can be stamped with their offsets where they lie;
        the reader never writes to bytes it has handed out.

        Raises DecodeError for a negative size or one above the limit.
        """
        size = self._frame_size()
        if size is None:
            return None
        if size < 0 or size > self.max_frame_bytes:
            raise DecodeError(f"frame size {size} outside 0..{self.max_frame_bytes}", self._start)
        end = self._start + SIZE_PREFIX_BYTES + size
        if end > self._end:
            return None
        frame = memoryview(self._buffer)[self._start + SIZE_PREFIX_BYTES : end]
        self._start = end
        return frame

    def _frame_size(self) -> int | None:
        """The size prefix of the next frame, once received; valid or not, and
        only worth making room for when valid."""
        if self._end - self._start < SIZE_PREFIX_BYTES:
            return None
        (size,) = _SIZE.unpack_from(self._buffer, self._start)
        return size

    @property
    def pending_bytes(self) -> int:
        """Bytes received that do not yet form a whole frame."""
        return self._end - self._start

    @property
    def next_frame_size(self) -> int | None:
        """The size the next frame's prefix announces, once received (valid or not)."""
        return self._frame_size()
