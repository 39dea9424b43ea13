"""Varints, lengths and the error table."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol.errors import DecodeError, EncodeError
from protocol.kafka import ErrorCode, is_retriable
from protocol.kafka import primitives as p
from protocol.kafka.error_codes import ERRORS


@given(st.integers(0, (1 << 32) - 1))
def test_unsigned_varint_round_trip(value):
    out = bytearray()
    p.write_uvarint(out, value)
    assert p.read_uvarint(bytes(out), 0) == (value, len(out))


@given(st.integers(-(1 << 31), (1 << 31) - 1))
def test_varint_round_trip(value):
    out = bytearray()
    p.write_varint(out, value)
    assert p.read_varint(memoryview(bytes(out)), 0) == (value, len(out))


@given(st.integers(-(1 << 63), (1 << 63) - 1))
def test_varlong_round_trip(value):
    out = bytearray()
    p.write_varlong(out, value)
    assert p.read_varlong(bytes(out), 0) == (value, len(out))


def test_zigzag_layout():
    out = bytearray()
    for value in (0, -1, 1, -2):
        p.write_varint(out, value)
    assert out == b"\x00\x01\x02\x03"


@pytest.mark.parametrize(("data", "reader"), [
    (b"\xff\xff\xff\xff\x7f", p.read_varint),  # 35 bits
    (b"\x80\x80\x80\x80\x80\x01", p.read_uvarint),  # six bytes
    (b"\xff" * 10 + b"\x01", p.read_varlong),
    (b"\x80", p.read_uvarint),  # truncated
])
def test_bad_varints(data, reader):
    with pytest.raises(DecodeError):
        reader(data, 0)


def test_varint_range_is_enforced_on_write():
    with pytest.raises(EncodeError):
        p.write_varint(bytearray(), 1 << 31)


def test_string_longer_than_int16_refused():
    with pytest.raises(EncodeError):
        p.blob_writer("string", compact=False, nullable=False)(bytearray(), "x" * 40000)


def test_error_table_is_complete():
    codes = [code for code, _, _ in ERRORS]
    assert codes == list(range(-1, 134))
    assert ErrorCode.NOT_LEADER_OR_FOLLOWER == 6 and ErrorCode.SHARE_SESSION_LIMIT_REACHED == 133
    assert is_retriable(ErrorCode.NOT_LEADER_OR_FOLLOWER) and is_retriable(ErrorCode.REQUEST_TIMED_OUT)
    assert not is_retriable(ErrorCode.UNSUPPORTED_VERSION) and not is_retriable(ErrorCode.NONE)
    assert not is_retriable(9999)
