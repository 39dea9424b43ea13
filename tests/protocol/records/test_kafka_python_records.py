"""Batches built by kafka-python parse to the same records, and the reverse."""

import importlib.util

import pytest
from hypothesis import given, settings
from kafka.record.default_records import ControlRecord
from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder
from records_strategies import record_lists

from protocol.records import (
    Codec,
    ControlType,
    Record,
    build_batch,
    build_control_batch,
    build_message_set,
    legacy_to_batch,
    split_records,
)

LEGACY_CODECS = [Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4]
# kafka-python needs the xxhash package for magic 0 lz4 (KAFKA-3160 checksums).
NEEDS_XXHASH = pytest.mark.skipif(importlib.util.find_spec("xxhash") is None, reason="xxhash missing")
FORMATS = [(2, codec) for codec in Codec] + [
    pytest.param(magic, codec, marks=NEEDS_XXHASH if (magic, codec) == (0, Codec.LZ4) else ())
    for magic in (0, 1)
    for codec in LEGACY_CODECS
]


def expected(records, magic):
    if magic == 2:
        return records
    return [Record(r.offset, r.timestamp if magic else -1, r.key, r.value) for r in records]


def ours(blob) -> list[Record]:
    parsed = []
    for entry in split_records(blob).entries:
        entry.verify_crc()
        parsed += entry.records()
    return parsed


def theirs(blob) -> list[Record]:
    parsed = []
    batches = MemoryRecords(bytes(blob))
    while (batch := batches.next_batch()) is not None:
        assert batch.validate_crc()
        parsed += [
            Record(r.offset, -1 if r.timestamp is None else r.timestamp, r.key, r.value, tuple(r.headers or ()))
            for r in batch
        ]
    return parsed


@pytest.mark.parametrize("magic, codec", FORMATS)
@settings(max_examples=15)
@given(records=record_lists())
def test_we_read_kafka_python_batches(magic, codec, records):
    # Producers number records from 0; the broker assigns the real offsets.
    records = [r._replace(offset=index) for index, r in enumerate(expected(records, magic))]
    builder = MemoryRecordsBuilder(magic, codec, batch_size=1 << 20)
    for record in records:
        builder.append(max(record.timestamp, 0), record.key, record.value, list(record.headers))
    builder.close()
    # A producer's magic 1 wrapper sits at offset 0, so Kafka's rule (wrapper
    # holds the last offset) puts the inner messages below it; the broker
    # reassigns offsets anyway, as legacy_to_batch does.
    shift = 1 - len(records) if magic == 1 and codec != Codec.NONE else 0
    stamped = [
        r._replace(offset=r.offset + shift, timestamp=max(r.timestamp, 0) if magic else -1) for r in records
    ]
    assert ours(builder.buffer()) == stamped
    if magic < 2:
        stored = legacy_to_batch(split_records(builder.buffer()).entries, base_offset=100)
        assert ours(stored) == [r._replace(offset=100 + i) for i, r in enumerate(stamped)]


@pytest.mark.parametrize("magic, codec", FORMATS)
@settings(max_examples=15)
@given(records=record_lists())
def test_kafka_python_reads_our_batches(magic, codec, records):
    if magic == 2:
        blob = build_batch(records, codec=codec)
    else:
        blob = build_message_set(records, magic=magic, codec=codec)
    assert theirs(blob) == expected(records, magic)


def test_kafka_python_reads_our_transactional_batch():
    blob = build_batch(
        [Record(3, 10, b"k", b"v")], producer_id=9, producer_epoch=2, base_sequence=4, transactional=True
    )
    batch = MemoryRecords(blob).next_batch()
    assert batch.is_transactional and (batch.producer_id, batch.producer_epoch) == (9, 2)
    assert batch.base_sequence == 4


def test_we_read_kafka_python_transactional_batch():
    builder = MemoryRecordsBuilder(
        2, Codec.GZIP, 1 << 20, offset=8, transactional=True, producer_id=11, producer_epoch=1, base_sequence=0
    )
    builder.append(1000, b"k", b"v", [])
    builder.close()
    (batch,) = split_records(builder.buffer()).entries
    batch.verify_crc()
    assert batch.is_transactional and (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (11, 1, 0)


@pytest.mark.parametrize("marker", list(ControlType))
def test_kafka_python_reads_our_markers(marker):
    blob = build_control_batch(
        marker, offset=5, timestamp=7, producer_id=1, producer_epoch=0, coordinator_epoch=3
    )
    batch = MemoryRecords(blob).next_batch()
    assert batch.is_control_batch
    (record,) = list(batch)
    assert isinstance(record, ControlRecord)
    assert record.commit == (marker == ControlType.COMMIT)
