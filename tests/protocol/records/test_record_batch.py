import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from records_strategies import record_lists

from protocol.errors import DecodeError, EncodeError
from protocol.records import (
    Codec,
    ControlMarker,
    ControlType,
    Record,
    RecordBatch,
    TimestampType,
    assign_offsets,
    build_batch,
    build_control_batch,
    build_message_set,
    first_batch_transactional,
    read_control_record,
    split_records,
)


def only_batch(blob) -> RecordBatch:
    (batch,) = split_records(blob).entries
    assert isinstance(batch, RecordBatch)
    batch.verify_crc()
    return batch


@pytest.mark.parametrize("codec", list(Codec))
@settings(max_examples=30)
@given(records=record_lists(), transactional=st.booleans())
def test_records_round_trip(codec, records, transactional):
    blob = build_batch(
        records,
        codec=codec,
        producer_id=77,
        producer_epoch=3,
        base_sequence=12,
        transactional=transactional,
        partition_leader_epoch=9,
    )
    batch = only_batch(blob)
    assert batch.records() == records
    assert batch.compression == codec
    assert batch.is_transactional == transactional
    assert not batch.is_control and not batch.has_delete_horizon
    assert batch.timestamp_type == TimestampType.CREATE_TIME
    assert (batch.base_offset, batch.last_offset) == (records[0].offset, records[-1].offset)
    assert batch.record_count == len(records)
    assert batch.base_timestamp == records[0].timestamp
    assert batch.max_timestamp == max(r.timestamp for r in records)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (77, 3, 12)
    assert batch.partition_leader_epoch == 9
    assert batch.magic == 2 and batch.size == len(blob) == batch.batch_length + 12


def test_offset_gaps_survive():
    records = [Record(10, 5, b"a"), Record(13, 6, b"b")]
    assert only_batch(build_batch(records)).records() == records


def test_log_append_time_gives_every_record_the_batch_time():
    batch = only_batch(build_batch([Record(0, 5), Record(1, 6)], log_append_time=999))
    assert batch.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert [r.timestamp for r in batch.records()] == [999, 999]


@pytest.mark.parametrize("marker", list(ControlType))
def test_control_batch(marker):
    blob = build_control_batch(
        marker, offset=42, timestamp=1234, producer_id=5, producer_epoch=1, coordinator_epoch=7
    )
    batch = only_batch(blob)
    assert batch.is_control and batch.is_transactional
    (record,) = batch.records()
    assert (record.offset, record.timestamp) == (42, 1234)
    assert read_control_record(record) == ControlMarker(marker, 7)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (5, 1, -1)


def test_control_record_with_bad_key():
    with pytest.raises(DecodeError):
        read_control_record(Record(0, 0, b"\x00", b""))


def test_empty_batch_is_refused():
    with pytest.raises(EncodeError):
        build_batch([])


@pytest.mark.parametrize("codec", [Codec.NONE, Codec.ZSTD])
def test_assign_offsets_keeps_the_crc(codec):
    blob = bytearray(build_batch([Record(0, 5, b"k", b"v"), Record(1, 7)], codec=codec))
    batch = only_batch(memoryview(blob))
    crc = batch.crc
    assign_offsets(batch, 1000, 4)
    assert (batch.base_offset, batch.partition_leader_epoch, batch.crc) == (1000, 4, crc)
    batch.verify_crc()
    assert [r.offset for r in batch.records()] == [1000, 1001]
    assert blob[:8] == struct.pack(">q", 1000)


def test_assign_offsets_with_log_append_time_recomputes_the_crc():
    blob = bytearray(build_batch([Record(0, 5, b"k", b"v"), Record(1, 7)], transactional=True))
    batch = only_batch(memoryview(blob))
    assign_offsets(batch, 50, 2, log_append_time=4242)
    batch.verify_crc()
    assert batch.timestamp_type == TimestampType.LOG_APPEND_TIME and batch.is_transactional
    assert batch.max_timestamp == 4242
    assert [r.timestamp for r in batch.records()] == [4242, 4242]
    assert blob == build_batch(
        [Record(50, 5, b"k", b"v"), Record(51, 7)],
        transactional=True,
        partition_leader_epoch=2,
        log_append_time=4242,
    )


def test_split_many_batches_and_a_truncated_tail():
    batches = [build_batch([Record(i * 2, 1, b"x"), Record(i * 2 + 1, 2)]) for i in range(5)]
    blob = b"".join(batches)
    split = split_records(blob)
    assert [b.base_offset for b in split.entries] == [0, 2, 4, 6, 8] and split.truncated == 0
    for cut in (1, 11, 12, 30, len(batches[-1]) - 1):
        partial = blob[: len(blob) - cut]
        with pytest.raises(DecodeError):
            split_records(partial)
        split = split_records(partial, allow_truncated=True)
        assert len(split.entries) == 4
        assert split.truncated == len(batches[-1]) - cut


def test_crc_mismatch_is_detected():
    blob = bytearray(build_batch([Record(0, 1, b"key", b"value")]))
    blob[-1] ^= 1
    (batch,) = split_records(blob).entries
    with pytest.raises(DecodeError, match="CRC"):
        batch.verify_crc()


def test_bad_magic_and_lengths():
    blob = bytearray(build_batch([Record(0, 1, b"key", b"value")]))
    for position, value in ((16, 3), (11, 0), (8, 0x7F), (11, 0x20)):
        broken = bytearray(blob)
        broken[position] = value
        with pytest.raises(DecodeError):
            split_records(broken)
    with pytest.raises(DecodeError) as error:
        split_records(bytes(blob) + bytes(blob[:16]) + b"\x09" + bytes(blob[17:]))
    assert error.value.offset == len(blob) + 16


def test_unknown_codec_is_refused():
    blob = bytearray(build_batch([Record(0, 1, b"v")]))
    blob[22] |= 0x07
    with pytest.raises(DecodeError):
        split_records(blob)


def test_a_transactional_first_batch_is_seen_in_its_header():
    records = [Record(0, 1_700_000_000_000, b"k", b"v")]
    transactional = build_batch(records, producer_id=7, producer_epoch=0, base_sequence=0, transactional=True)
    plain = build_batch(records)
    assert first_batch_transactional(memoryview(transactional + plain))
    assert not first_batch_transactional(memoryview(plain + transactional))
    assert not first_batch_transactional(build_message_set(records, magic=1))
    assert not first_batch_transactional(None) and not first_batch_transactional(transactional[:22])
