"""Zigzag varints as records use them (protobuf style, at most 10 bytes)."""

from __future__ import annotations

from protocol.errors import DecodeError, EncodeError

_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1


def read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """The signed value at `pos` and the position after it.

    IndexError when `data` ends inside the varint: callers parse many
    fields in a row and turn that into one DecodeError.
    """
    byte = data[pos]
    if byte < 0x80:  # the common case: one byte
        return (byte >> 1) ^ -(byte & 1), pos + 1
    start = pos
    value = byte & 0x7F
    shift = 7
    while True:
        pos += 1
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return (value >> 1) ^ -(value & 1), pos + 1
        shift += 7
        if shift > 63:
            raise DecodeError("varint longer than 10 bytes", start)


def write_varint(out: bytearray, value: int) -> None:
    """Append `value` zigzag encoded."""
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise EncodeError(f"{value} does not fit a varlong")
    encoded = (value << 1) ^ (value >> 63)
    while encoded > 0x7F:
        out.append((encoded & 0x7F) | 0x80)
        encoded >>= 7
    out.append(encoded)
