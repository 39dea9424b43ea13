import struct
import zlib

import pytest
from hypothesis import given, settings
from records_strategies import record_lists

from protocol.errors import DecodeError, EncodeError
from protocol.records import (
    Codec,
    LegacyMessage,
    Record,
    RecordBatch,
    TimestampType,
    batch_to_legacy,
    build_batch,
    build_control_batch,
    build_message_set,
    compress,
    legacy_to_batch,
    split_records,
)
from protocol.records.builder import ControlType

LEGACY_CODECS = [Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4]


def as_legacy(records, magic):
    """What a legacy message set keeps of `records`."""
    return [
        Record(r.offset, r.timestamp if magic == 1 else -1, r.key, r.value) for r in records
    ]


def read_set(blob) -> tuple[list[LegacyMessage], list[Record]]:
    messages = split_records(blob).entries
    records = []
    for message in messages:
        assert isinstance(message, LegacyMessage)
        message.verify_crc()
        records += message.records()
    return messages, records


@pytest.mark.parametrize("codec", LEGACY_CODECS)
@pytest.mark.parametrize("magic", [0, 1])
@settings(max_examples=30)
@given(records=record_lists(with_headers=False))
def test_message_set_round_trip(codec, magic, records):
    messages, parsed = read_set(build_message_set(records, magic=magic, codec=codec))
    assert parsed == as_legacy(records, magic)
    assert len(messages) == (len(records) if codec == Codec.NONE else 1)
    assert all(m.magic == magic and m.compression == codec for m in messages)


@pytest.mark.parametrize("codec", LEGACY_CODECS)
@pytest.mark.parametrize("magic", [0, 1])
@settings(max_examples=30)
@given(records=record_lists())
def test_v2_to_legacy_and_back(codec, magic, records):
    batch = split_records(build_batch(records, codec=codec)).entries[0]
    messages, parsed = read_set(batch_to_legacy(batch, magic))
    assert parsed == as_legacy(records, magic)
    back = split_records(legacy_to_batch(messages, base_offset=records[0].offset)).entries[0]
    back.verify_crc()
    assert back.compression == codec
    assert back.records() == as_legacy(records, magic)


def test_magic_1_inner_offsets_are_relative_to_the_wrapper():
    records = [Record(100, 1, b"a"), Record(101, 2, b"b"), Record(105, 3, b"c")]
    (wrapper,) = split_records(build_message_set(records, magic=1, codec=Codec.GZIP)).entries
    assert wrapper.offset == 105 and wrapper.timestamp == 3
    inner = split_records(zlib.decompress(bytes(wrapper.value), wbits=31)).entries
    assert [m.offset for m in inner] == [0, 1, 5]
    assert wrapper.records() == records


def test_magic_1_wrapper_offset_decides():
    """Inner offsets 0..n-1 with the wrapper at the last absolute offset."""
    inner = build_message_set([Record(i, 10 + i, None, b"v") for i in range(3)], magic=1)
    wrapper = build_message_set([Record(0, 12, None, b"x")], magic=1, codec=Codec.NONE)
    compressed = _rewrap(wrapper, inner, offset=502, codec=Codec.GZIP)
    (message,) = split_records(compressed).entries
    assert [r.offset for r in message.records()] == [500, 501, 502]


def test_magic_0_inner_offsets_are_absolute():
    inner = build_message_set([Record(i + 7, -1, None, b"v") for i in range(3)], magic=0)
    wrapper = build_message_set([Record(0, -1, None, b"x")], magic=0)
    (message,) = split_records(_rewrap(wrapper, inner, offset=999, codec=Codec.GZIP)).entries
    assert [r.offset for r in message.records()] == [7, 8, 9]


def test_log_append_time_wrapper_lends_its_timestamp():
    records = [Record(0, 1, b"a"), Record(1, 2, b"b")]
    blob = build_message_set(
        records, magic=1, codec=Codec.SNAPPY, timestamp_type=TimestampType.LOG_APPEND_TIME
    )
    (wrapper,) = split_records(blob).entries
    assert wrapper.timestamp_type == TimestampType.LOG_APPEND_TIME
    data = bytearray(blob)
    struct.pack_into(">q", data, 18, 777)  # the wrapper's timestamp
    _refresh_crc(data)
    (wrapper,) = split_records(data).entries
    wrapper.verify_crc()
    assert [r.timestamp for r in wrapper.records()] == [777, 777]


def test_control_batches_are_dropped_and_zstd_refused():
    control = split_records(
        build_control_batch(
            ControlType.COMMIT, offset=1, timestamp=1, producer_id=1, producer_epoch=0, coordinator_epoch=0
        )
    ).entries[0]
    assert batch_to_legacy(control, 1) == b""
    zstd = split_records(build_batch([Record(0, 1, b"v")], codec=Codec.ZSTD)).entries[0]
    with pytest.raises(EncodeError):
        batch_to_legacy(zstd, 1)


def test_legacy_crc_mismatch_and_bad_inner_messages():
    data = bytearray(build_message_set([Record(0, 1, b"k", b"v")], magic=1))
    data[-1] ^= 0xFF
    with pytest.raises(DecodeError, match="CRC"):
        split_records(data).entries[0].verify_crc()
    nested = build_message_set([Record(0, 1, None, b"v")], magic=1, codec=Codec.GZIP)
    wrapper = build_message_set([Record(0, 1, None, b"x")], magic=1)
    with pytest.raises(DecodeError, match="compressed"):
        split_records(_rewrap(wrapper, nested, offset=0, codec=Codec.GZIP)).entries[0].records()
    inner_v0 = build_message_set([Record(0, -1, None, b"v")], magic=0)
    with pytest.raises(DecodeError, match="magic"):
        split_records(_rewrap(wrapper, inner_v0, offset=0, codec=Codec.GZIP)).entries[0].records()


def test_mixed_magics_in_one_blob():
    blob = build_message_set([Record(0, 1, b"a")], magic=0) + build_batch([Record(1, 2, b"b")])
    legacy, batch = split_records(blob).entries
    assert isinstance(legacy, LegacyMessage) and isinstance(batch, RecordBatch)


def _rewrap(wrapper: bytes, inner: bytes, *, offset: int, codec: Codec) -> bytes:
    """`wrapper` (one uncompressed message) holding `inner` compressed with `codec`."""
    (message,) = split_records(wrapper).entries
    body = bytearray(bytes(message.buffer[16:18]))
    body[1] |= codec
    if message.magic == 1:
        body += struct.pack(">q", message.timestamp)
    value = compress(codec, inner, magic=message.magic)
    body += struct.pack(">i", -1) + struct.pack(">i", len(value)) + value
    return struct.pack(">qiI", offset, len(body) + 4, zlib.crc32(body)) + bytes(body)


def _refresh_crc(data: bytearray) -> None:
    struct.pack_into(">I", data, 12, zlib.crc32(data[16:]))
