"""Kafka's primitive wire types: readers and writers.

A reader is `read(buf, pos) -> (value, new_pos)` over bytes or a memoryview;
a writer is `write(out: bytearray, value)`. Every length prefix is checked
against the bytes that remain before anything is sliced or allocated, so a
lying prefix costs nothing. Readers raise only DecodeError themselves; the
codec turns the struct.error of a short fixed-width read into DecodeError.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from typing import Any

from protocol.errors import DecodeError, EncodeError
from protocol.kafka.buffers import Fragments

Reader = Callable[[Any, int], tuple[Any, int]]
Writer = Callable[[bytearray, Any], None]

# Struct codes of the fixed-width types; bool reads any non-zero byte as True.
FIXED_CODES = {
    "bool": "?", "int8": "b", "int16": "h", "int32": "i", "int64": "q",
    "uint16": "H", "uint32": "I", "float64": "d",
}
INT8 = struct.Struct(">b")
INT16 = struct.Struct(">h")
INT32 = struct.Struct(">i")
ZERO_UUID = uuid.UUID(int=0)


def read_uvarint(buf, pos: int, bits: int = 32) -> tuple[int, int]:
    """An unsigned base-128 varint holding at most `bits` bits."""
    if pos < len(buf) and buf[pos] < 0x80:
        return buf[pos], pos + 1
    value = shift = 0
    limit = pos + (bits + 6) // 7
    while True:
        if pos >= len(buf):
            raise DecodeError("truncated varint", pos)
        if pos >= limit:
            raise DecodeError(f"varint longer than {bits} bits allow", pos)
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            if value >> bits:
                raise DecodeError(f"varint exceeds {bits} bits", pos)
            return value, pos
        shift += 7


def write_uvarint(out: bytearray, value: int) -> None:
    if value < 0x80:
        out.append(value)
        return
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def read_varint(buf, pos: int) -> tuple[int, int]:
    """A zigzag-encoded signed 32-bit varint."""
    raw, pos = read_uvarint(buf, pos)
    return (raw >> 1) ^ -(raw & 1), pos


def read_varlong(buf, pos: int) -> tuple[int, int]:
    """A zigzag-encoded signed 64-bit varint."""
    raw, pos = read_uvarint(buf, pos, 64)
    return (raw >> 1) ^ -(raw & 1), pos


def write_varint(out: bytearray, value: int) -> None:
    if not -(1 << 31) <= value < 1 << 31:
        raise EncodeError(f"varint out of range: {value}")
    write_uvarint(out, ((value << 1) ^ (value >> 31)) & 0xFFFFFFFF)


def write_varlong(out: bytearray, value: int) -> None:
    if not -(1 << 63) <= value < 1 << 63:
        raise EncodeError(f"varlong out of range: {value}")
    write_uvarint(out, ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)


def take(buf, pos: int, size: int) -> int:
    """The end of a `size`-byte span at `pos`, checked against the input."""
    end = pos + size
    if end > len(buf):
        raise DecodeError(f"length {size} exceeds the {len(buf) - pos} bytes left", pos)
    return end


# Length prefixes: classic forms are int16 (strings) or int32 (bytes, arrays)
# with -1 for null; compact forms are an unsigned varint of length + 1, 0 for
# null. Each reader returns -1 for null.


def read_length16(buf, pos: int) -> tuple[int, int]:
    return INT16.unpack_from(buf, pos)[0], pos + 2


def read_length32(buf, pos: int) -> tuple[int, int]:
    return INT32.unpack_from(buf, pos)[0], pos + 4


def read_compact_length(buf, pos: int) -> tuple[int, int]:
    raw, pos = read_uvarint(buf, pos)
    return raw - 1, pos


def write_length16(out: bytearray, n: int) -> None:
    if n > 0x7FFF:
        raise EncodeError(f"string of {n} bytes exceeds the int16 length prefix")
    out += INT16.pack(n)


def write_length32(out: bytearray, n: int) -> None:
    out += INT32.pack(n)


def write_compact_length(out: bytearray, n: int) -> None:
    write_uvarint(out, n + 1)


def length_codec(type_: str, compact: bool):
    """(read_length, write_length) for a string, bytes or array prefix."""
    if compact:
        return read_compact_length, write_compact_length
    if type_ == "string":
        return read_length16, write_length16
    return read_length32, write_length32


def _null_read(nullable: bool, what: str, pos: int):
    if not nullable:
        raise DecodeError(f"null {what} where the field is not nullable", pos)
    return None


def blob_reader(type_: str, compact: bool, nullable: bool) -> Reader:
    """Reader of a string, bytes or records field.

    Records stay a slice of the input: a memoryview input gives a zero-copy
    view, which is how the codec calls it.
    """
    read_length = length_codec(type_, compact)[0]

    def read(buf, pos):
        size, pos = read_length(buf, pos)
        if size < 0:
            return _null_read(nullable, type_, pos), pos
        end = take(buf, pos, size)
        if type_ == "records":
            return buf[pos:end], end
        if type_ == "bytes":
            return bytes(buf[pos:end]), end
        try:
            return str(buf[pos:end], "utf-8"), end
        except UnicodeDecodeError:
            raise DecodeError("string is not UTF-8", pos) from None

    return read


def blob_writer(type_: str, compact: bool, nullable: bool) -> Writer:
    write_length = length_codec(type_, compact)[1]
    is_string = type_ == "string"

    def write(out, value):
        if value is None:
            if not nullable:
                raise EncodeError(f"null {type_} where the field is not nullable")
            write_length(out, -1)
            return
        data = value.encode() if is_string else value
        write_length(out, len(data))
        if type(data) is Fragments:
            data.write_into(out)
        else:
            out += data

    return write


def read_uuid(buf, pos: int) -> tuple[uuid.UUID, int]:
    end = take(buf, pos, 16)
    return uuid.UUID(bytes=bytes(buf[pos:end])), end


def write_uuid(out: bytearray, value: uuid.UUID) -> None:
    out += value.bytes


def fixed_reader(type_: str) -> Reader:
    unpack = struct.Struct(">" + FIXED_CODES[type_]).unpack_from
    size = struct.calcsize(FIXED_CODES[type_])

    def read(buf, pos):
        return unpack(buf, pos)[0], pos + size

    return read


def fixed_writer(type_: str) -> Writer:
    pack = struct.Struct(">" + FIXED_CODES[type_]).pack

    def write(out, value):
        out += pack(value)

    return write


def scalar_codec(type_: str, compact: bool, nullable: bool) -> tuple[Reader, Writer]:
    """(reader, writer) of one non-struct, non-array value."""
    if type_ in FIXED_CODES:
        return fixed_reader(type_), fixed_writer(type_)
    if type_ == "uuid":
        return read_uuid, write_uuid
    return blob_reader(type_, compact, nullable), blob_writer(type_, compact, nullable)


def array_reader(element: Reader, compact: bool, nullable: bool, fixed: str | None = None) -> Reader:
    """Reader of an array; `fixed` is the struct code of fixed-width elements."""
    read_length = length_codec("array", compact)[0]
    width = struct.calcsize(fixed) if fixed else 1

    def read(buf, pos):
        count, pos = read_length(buf, pos)
        if count < 0:
            return _null_read(nullable, "array", pos), pos
        # As Kafka does: no element is smaller than a byte, so a count beyond
        # the bytes left is a lie, caught before any list grows.
        end = take(buf, pos, count * width)
        if fixed:
            return list(struct.unpack_from(f">{count}{fixed}", buf, pos)), end
        items = []
        append = items.append
        for _ in range(count):
            item, pos = element(buf, pos)
            append(item)
        return items, pos

    return read


SHORT_ARRAY = 16  # fixed-width arrays up to this long are packed by a Struct made once


def array_writer(element: Writer, compact: bool, nullable: bool, fixed: str | None = None) -> Writer:
    write_length = length_codec("array", compact)[1]
    # Most are short (a partition's replicas): a format string built per array cost half their encoding.
    packs = [struct.Struct(f">{count}{fixed}").pack for count in range(SHORT_ARRAY)] if fixed else []

    def write(out, items):
        if items is None:
            if not nullable:
                raise EncodeError("null array where the field is not nullable")
            write_length(out, -1)
            return
        count = len(items)
        write_length(out, count)
        if fixed:
            out += packs[count](*items) if count < SHORT_ARRAY else struct.pack(f">{count}{fixed}", *items)
            return
        for item in items:
            element(out, item)

    return write
