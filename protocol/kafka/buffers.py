"""Record data written by reference instead of copied into the response.

A fetch answer is mostly stored batches, and copying them into one response
buffer costs more than encoding everything else. A `Fragments` records
value is several buffers; encoded into a `GatherBuffer` the large ones stay
references, and the I/O layer sends the pieces with one gathered write.
"""

from __future__ import annotations

from collections.abc import Iterable

# Below this size a buffer is cheaper to copy than to carry as a piece of its own.
MIN_REFERENCED_BYTES = 4096


class Fragments:
    """Bytes made of several buffers, in order (e.g. a run of stored record batches)."""

    __slots__ = ("parts", "_size")

    def __init__(self, parts: Iterable):
        self.parts = tuple(memoryview(part) for part in parts)
        self._size = sum(part.nbytes for part in self.parts)

    def __len__(self) -> int:
        return self._size

    def __bytes__(self) -> bytes:
        return b"".join(self.parts)

    def write_into(self, out: bytearray) -> None:
        """Appended to `out`, by reference where `out` is a GatherBuffer."""
        refer = getattr(out, "refer", None)
        for part in self.parts:
            if refer is not None and part.nbytes >= MIN_REFERENCED_BYTES:
                refer(part)
            else:
                out += part


class GatherBuffer(bytearray):
    """Encoder output that keeps large buffers by reference: see `pieces`."""

    def __init__(self, size: int = 0):
        super().__init__(size)
        self._references: list[tuple[int, memoryview]] = []  # (position in self, buffer)
        self.referenced_bytes = 0

    def refer(self, buffer: memoryview) -> None:
        self._references.append((len(self), buffer))
        self.referenced_bytes += buffer.nbytes

    @property
    def total_bytes(self) -> int:
        return len(self) + self.referenced_bytes

    def pieces(self) -> list:
        """The whole output in order: slices of this buffer between the referenced ones.
        The buffer must not grow any more once its slices are out."""
        view, pieces, start = memoryview(self), [], 0
        for position, buffer in self._references:
            if position > start:
                pieces.append(view[start:position])
            pieces.append(buffer)
            start = position
        if start < len(self):
            pieces.append(view[start:])
        return pieces
