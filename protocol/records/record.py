"""Single records inside a v2 batch: the decoded form and its wire codec.

A record on the wire: length varint, attributes int8 (unused), timestamp
delta varlong, offset delta varint, key and value as varint-length nullable
bytes, then a varint count of headers, each a varint-length UTF-8 key and a
nullable varint-length value.
"""

from __future__ import annotations

from typing import NamedTuple

from protocol.errors import DecodeError, EncodeError
from protocol.records.varint import read_varint, write_varint

Header = tuple[str, bytes | None]


class Record(NamedTuple):
    """One record with its absolute offset and timestamp (-1: none)."""

    offset: int = 0
    timestamp: int = -1
    key: bytes | None = None
    value: bytes | None = None
    headers: tuple[Header, ...] = ()


def decode_records(
    data: bytes, count: int, base_offset: int, base_timestamp: int, log_append_time: int | None
) -> list[Record]:
    """The `count` records that make up `data` exactly.

    `log_append_time`, when given, replaces every record's own timestamp, as
    Kafka does for batches stamped with LogAppendTime.
    """
    records = []
    append = records.append
    new_record = tuple.__new__  # NamedTuple's own __new__ is a slower Python call
    varint = read_varint
    read_bytes = _read_bytes
    size = len(data)
    pos = 0
    try:
        for _ in range(count):
            length, pos = varint(data, pos)
            end = pos + length
            if length < 0 or end > size:
                raise DecodeError("record length out of range", pos)
            timestamp_delta, pos = varint(data, pos + 1)  # skip attributes
            offset_delta, pos = varint(data, pos)
            key, pos = read_bytes(data, pos)
            value, pos = read_bytes(data, pos)
            headers, pos = _read_headers(data, pos)
            if pos != end:
                raise DecodeError("record fields disagree with its length", pos)
            timestamp = base_timestamp + timestamp_delta
            if log_append_time is not None:
                timestamp = log_append_time
            append(new_record(Record, (base_offset + offset_delta, timestamp, key, value, headers)))
    except IndexError:
        raise DecodeError("truncated record", pos) from None
    if pos != len(data):
        raise DecodeError("bytes left after the last record", pos)
    return records


def _read_bytes(data: bytes, pos: int) -> tuple[bytes | None, int]:
    length, pos = read_varint(data, pos)
    if length < 0:
        if length != -1:
            raise DecodeError("negative length", pos)
        return None, pos
    end = pos + length
    if end > len(data):
        raise DecodeError("field overruns the records", pos)
    return data[pos:end], end


def _read_headers(data: bytes, pos: int) -> tuple[tuple[Header, ...], int]:
    count, pos = read_varint(data, pos)
    if count == 0:
        return (), pos
    if count < 0:
        raise DecodeError("negative header count", pos)
    headers = []
    for _ in range(count):
        key, pos = _read_bytes(data, pos)
        if key is None:
            raise DecodeError("null header key", pos)
        value, pos = _read_bytes(data, pos)
        # str() reads a view of the request as well as bytes; "replace" as Java's client reads them
        headers.append((str(key, "utf-8", "replace"), value))
    return tuple(headers), pos


def encode_record(out: bytearray, record: Record, offset_delta: int, timestamp_delta: int) -> None:
    """Append `record` with the given deltas to `out`."""
    body = bytearray(b"\x00")  # attributes
    write_varint(body, timestamp_delta)
    write_varint(body, offset_delta)
    _write_bytes(body, record.key)
    _write_bytes(body, record.value)
    write_varint(body, len(record.headers))
    for name, value in record.headers:
        if not isinstance(name, str):
            raise EncodeError("header keys are strings")
        _write_bytes(body, name.encode())
        _write_bytes(body, value)
    write_varint(out, len(body))
    out += body


def _write_bytes(out: bytearray, data: bytes | None) -> None:
    if data is None:
        out.append(1)  # zigzag -1
        return
    write_varint(out, len(data))
    out += data
