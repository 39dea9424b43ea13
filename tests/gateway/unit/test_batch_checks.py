"""checked_batch: a produced batch is refused with Kafka's error, or stored as it came."""

import random

import pytest
import zstandard
from hypothesis import assume, given
from hypothesis import strategies as st

from gateway.kafka_error import KafkaError
from gateway.partitions.batch_checks import (
    TopicCodec,
    checked_batch,
    request_checked,
    timestamp_bounds,
    topic_codec,
)
from protocol.kafka.error_codes import ErrorCode
from protocol.records import Codec, Record, RecordBatch, TimestampType, build_batch, build_message_set
from protocol.records.batch import CRC_START, HEADER_SIZE
from tests.protocol.mutations import mutated
from tests.protocol.records.bad_batches import CORRUPT, INVALID, good, records_bytes, sealed

MAX_MESSAGE_BYTES = 1048588  # Kafka's default
PRODUCE_VERSION = 9


def refusal(blob: bytes) -> ErrorCode:
    with pytest.raises(KafkaError) as refused:
        checked_batch(memoryview(bytearray(blob)), PRODUCE_VERSION, MAX_MESSAGE_BYTES)
    return refused.value.code


@pytest.mark.parametrize("make", CORRUPT.values(), ids=CORRUPT.keys())
def test_bytes_that_do_not_parse_get_corrupt_message(make):
    assert refusal(make()) == ErrorCode.CORRUPT_MESSAGE


@pytest.mark.parametrize("make", INVALID.values(), ids=INVALID.keys())
def test_records_that_break_a_rule_get_invalid_record(make):
    assert refusal(make()) == ErrorCode.INVALID_RECORD


@pytest.mark.parametrize("codec", list(Codec))
def test_good_batches_come_back_as_they_are(codec):
    blob = good([b"value-%d" % n for n in range(20)], codec)
    assert bytes(checked_batch(memoryview(bytearray(blob)), PRODUCE_VERSION, MAX_MESSAGE_BYTES).buffer) == blob


def test_a_large_topic_limit_lets_batches_inflate_further():
    packer = zstandard.ZstdCompressor().compressobj()  # 65 records of 1 MiB zeros, never all in memory
    payload = b"".join(packer.compress(records_bytes([bytes(1 << 20)], deltas=[n])) for n in range(65))
    blob = sealed(payload + packer.flush(), 65, attributes=Codec.ZSTD)
    assert refusal(blob) == ErrorCode.CORRUPT_MESSAGE
    checked_batch(memoryview(bytearray(blob)), PRODUCE_VERSION, 80 << 20)


def resealed(damaged: bytearray) -> bytes:
    """`damaged` with its length and CRC made right, so that the records are what is judged."""
    return sealed(bytes(damaged[HEADER_SIZE:]), int.from_bytes(damaged[57:61], "big", signed=True),
                  attributes=int.from_bytes(damaged[21:23], "big", signed=True),
                  producer_id=int.from_bytes(damaged[43:51], "big", signed=True),
                  last_offset_delta=int.from_bytes(damaged[23:27], "big", signed=True))


@given(values=st.lists(st.binary(max_size=30), min_size=1, max_size=5), codec=st.sampled_from(list(Codec)),
       data=st.data())
def test_damaged_batches_raise_only_kafka_errors(values, codec, data):
    damaged = mutated(data, good(values, codec), keep=CRC_START)
    assume(len(damaged) >= HEADER_SIZE)
    try:
        batch = checked_batch(memoryview(bytearray(resealed(damaged))), PRODUCE_VERSION, MAX_MESSAGE_BYTES)
    except KafkaError:
        return
    assert len(batch.records()) == batch.record_count


# A topic's compression.type: batches with another codec are recompressed ------------------------

RECORDS = [Record(n, 1_700_000_000_000 + 3 * n, b"key-%d" % n, b"value-%d" % n * 10, (("h", b"%d" % n), ("n", None)))
           for n in range(12)]
SAME_HEADER_FIELDS = ("base_offset", "partition_leader_epoch", "last_offset_delta", "base_timestamp",
                      "max_timestamp", "producer_id", "producer_epoch", "base_sequence", "record_count",
                      "is_transactional", "timestamp_type")


@pytest.mark.parametrize("source", list(Codec))
@pytest.mark.parametrize("target", list(Codec))
def test_batches_come_back_with_the_topic_codec_all_else_kept(source, target):
    blob = build_batch(RECORDS, codec=source, producer_id=7, producer_epoch=3, base_sequence=40, transactional=True)
    sent = RecordBatch(memoryview(bytearray(blob)))
    got = checked_batch(memoryview(bytearray(blob)), PRODUCE_VERSION, MAX_MESSAGE_BYTES, TopicCodec(target, None))
    got.verify_crc()
    assert got.compression == target
    assert [getattr(got, name) for name in SAME_HEADER_FIELDS] == [getattr(sent, name) for name in SAME_HEADER_FIELDS]
    assert got.records() == RECORDS
    if source == target:
        assert bytes(got.buffer) == blob


@pytest.mark.parametrize(("codec", "level"), [(Codec.GZIP, 1), (Codec.GZIP, -1), (Codec.LZ4, 17), (Codec.ZSTD, -5)])
def test_levels_are_used(codec, level):
    got = checked_batch(memoryview(bytearray(good([b"x" * 1000]))), PRODUCE_VERSION, MAX_MESSAGE_BYTES,
                        TopicCodec(codec, level))
    assert got.compression == codec and got.records()[0].value == b"x" * 1000


def test_a_batch_too_large_once_recompressed_is_refused():
    blob = good([random.Random(n).randbytes(1000) for n in range(4)], Codec.NONE)  # snappy only adds framing
    with pytest.raises(KafkaError) as refused:
        checked_batch(memoryview(bytearray(blob)), PRODUCE_VERSION, len(blob), TopicCodec(Codec.SNAPPY, None))
    assert refused.value.code == ErrorCode.MESSAGE_TOO_LARGE


def test_legacy_message_sets_take_the_topic_codec():
    messages = build_message_set(RECORDS[:3], magic=1, codec=Codec.GZIP, timestamp_type=TimestampType.CREATE_TIME)
    got = checked_batch(memoryview(bytearray(messages)), 2, MAX_MESSAGE_BYTES, TopicCodec(Codec.LZ4, 9))
    assert got.compression == Codec.LZ4
    assert [(r.key, r.value, r.timestamp) for r in got.records()] == [(r.key, r.value, r.timestamp) for r in RECORDS[:3]]


@pytest.mark.parametrize(("name", "expected"), [
    ("producer", None), ("uncompressed", TopicCodec(Codec.NONE, None)), ("snappy", TopicCodec(Codec.SNAPPY, None)),
    ("gzip", TopicCodec(Codec.GZIP, -1)), ("lz4", TopicCodec(Codec.LZ4, 9)), ("zstd", TopicCodec(Codec.ZSTD, 3))])
def test_topic_codec_from_configs(name, expected):
    configs = {"compression.type": name, "compression.gzip.level": "-1", "compression.lz4.level": "9",
               "compression.zstd.level": "3"}
    assert topic_codec(configs.__getitem__) == expected


NOW = 1_750_000_000_000
HOUR = 3_600_000


def stamped(stamps: list[int]) -> memoryview:
    return memoryview(bytearray(build_batch([Record(i, stamp, None, b"v") for i, stamp in enumerate(stamps)])))


def bounds(before: int = 2**63 - 1, after: int = HOUR, difference: int = 2**63 - 1, kind: str = "CreateTime"):
    configs = {"message.timestamp.type": kind, "message.timestamp.before.max.ms": str(before),
               "message.timestamp.after.max.ms": str(after), "message.timestamp.difference.max.ms": str(difference)}
    return timestamp_bounds(configs.__getitem__, NOW)


def test_timestamps_within_bounds_pass_and_records_without_one_are_not_checked():
    blob = stamped([NOW - 10 * HOUR, -1, NOW + HOUR, NOW])
    assert checked_batch(blob, PRODUCE_VERSION, MAX_MESSAGE_BYTES, None, bounds()).record_count == 4
    assert checked_batch(stamped([-1, -1]), PRODUCE_VERSION, MAX_MESSAGE_BYTES, None, bounds(before=0, after=0))


@pytest.mark.parametrize("codec", [Codec.NONE, Codec.LZ4])
def test_each_record_out_of_bounds_is_named_in_kafkas_words(codec):
    records = [Record(i, stamp, None, b"v") for i, stamp in enumerate([NOW, NOW + HOUR + 1, NOW - 61_000, NOW])]
    blob = memoryview(bytearray(build_batch(records, codec=codec)))
    with pytest.raises(KafkaError) as refused:
        checked_batch(blob, PRODUCE_VERSION, MAX_MESSAGE_BYTES, None, bounds(before=60_000))
    assert refused.value.code == ErrorCode.INVALID_TIMESTAMP
    assert refused.value.message == "One or more records have been rejected due to invalid timestamp"
    window = f"The timestamp should be within [{NOW - 60_000}, {NOW + HOUR}]"
    assert refused.value.record_errors == (
        (1, f"Timestamp {NOW + HOUR + 1} of message with offset 1 is out of range. {window}"),
        (2, f"Timestamp {NOW - 61_000} of message with offset 2 is out of range. {window}"))


def test_an_unbounded_side_shows_as_java_computes_it():
    with pytest.raises(KafkaError) as refused:
        checked_batch(stamped([NOW + 2 * HOUR]), PRODUCE_VERSION, MAX_MESSAGE_BYTES, None, bounds())
    assert refused.value.record_errors[0][1].endswith(f"[{NOW - (2**63 - 1)}, {NOW + HOUR}]")
    with pytest.raises(KafkaError) as refused:
        checked_batch(stamped([NOW - 2]), PRODUCE_VERSION, MAX_MESSAGE_BYTES, None, bounds(before=1, after=2**63 - 1))
    assert refused.value.record_errors[0][1].endswith(f"[{NOW - 1}, {NOW + 2**63 - 1 - 2**64}]")  # Java's overflow


def test_the_deprecated_difference_bounds_a_side_left_at_its_maximum():
    assert bounds(difference=1000) == (NOW, 1000, HOUR)
    assert bounds(difference=1000, after=2**63 - 1) == (NOW, 1000, 1000)
    assert bounds(before=5, difference=1000) == (NOW, 5, HOUR)
    assert bounds(kind="LogAppendTime") is None


def test_legacy_message_sets_are_checked_too():
    messages = build_message_set([Record(0, NOW - 2 * HOUR, None, b"old")], magic=1)
    with pytest.raises(KafkaError) as refused:
        checked_batch(memoryview(bytearray(messages)), 2, MAX_MESSAGE_BYTES, None, bounds(before=HOUR))
    assert refused.value.code == ErrorCode.INVALID_TIMESTAMP


def test_a_batch_stamped_log_append_time_is_checked_by_its_max_timestamp_as_kafka_reads_it():
    blob = memoryview(bytearray(build_batch([Record(0, NOW, None, b"v")], log_append_time=NOW - 2 * HOUR)))
    with pytest.raises(KafkaError) as refused:
        checked_batch(blob, PRODUCE_VERSION, MAX_MESSAGE_BYTES, None, bounds(before=HOUR))
    assert refused.value.record_errors == ((0, f"Timestamp {NOW - 2 * HOUR} of message with offset 0 is out of "
                                                f"range. The timestamp should be within [{NOW - HOUR}, {NOW + HOUR}]"),)


def producer_stamped(stamp: int, codec: Codec = Codec.NONE) -> memoryview:
    """A batch a producer stamped LogAppendTime itself: a record with a null key, one with a key."""
    records = [Record(0, NOW, None, b"v"), Record(1, NOW, b"key", b"value")]
    return memoryview(bytearray(build_batch(records, codec=codec, log_append_time=stamp)))


def stamp_refused(kind: str, stamp: int, null_size: int) -> tuple:
    why = "Producer should not set timestamp type to LogAppendTime."
    return ((0, f"Invalid timestamp type in message {kind}(offset=0, timestamp={stamp}, key={null_size} bytes, "
                f"value=1 bytes). {why}"),
            (1, f"Invalid timestamp type in message {kind}(offset=1, timestamp={stamp}, key=3 bytes, "
                f"value=5 bytes). {why}"))


@pytest.mark.parametrize(("codec", "target", "kind", "null_size"), [
    (Codec.NONE, None, "DefaultRecord", 0), (Codec.ZSTD, None, "PartialDefaultRecord", -1),
    (Codec.ZSTD, TopicCodec(Codec.GZIP, None), "DefaultRecord", 0)])
def test_a_producers_log_append_time_stamp_is_refused_on_a_log_append_time_topic(codec, target, kind, null_size):
    """Kafka's validator names each record as the class it read it as (key and value unread in a
    batch whose compressed bytes it keeps)."""
    with pytest.raises(KafkaError) as refused:
        checked_batch(producer_stamped(NOW, codec), PRODUCE_VERSION, MAX_MESSAGE_BYTES, target, append_time=True)
    assert (refused.value.code, refused.value.message, refused.value.record_errors) == (
        ErrorCode.INVALID_TIMESTAMP, "One or more records have been rejected due to invalid timestamp",
        stamp_refused(kind, NOW, null_size))


def test_a_producers_log_append_time_stamp_without_a_timestamp_is_refused_on_a_create_time_topic():
    with pytest.raises(KafkaError) as refused:
        checked_batch(producer_stamped(-1), PRODUCE_VERSION, MAX_MESSAGE_BYTES, None, bounds())
    assert (refused.value.code, refused.value.record_errors) == (ErrorCode.INVALID_TIMESTAMP,
                                                                 stamp_refused("DefaultRecord", -1, 0))


@pytest.mark.parametrize("codec", [Codec.NONE, Codec.LZ4])
def test_a_producers_log_append_time_stamp_within_bounds_is_stored_as_create_time(codec):
    """Kafka's log sets the CreateTime type with the stamp as max timestamp: the records' own show."""
    batch = checked_batch(producer_stamped(NOW - HOUR, codec), PRODUCE_VERSION, MAX_MESSAGE_BYTES, None,
                          bounds(before=2 * HOUR))
    batch.verify_crc()
    assert (batch.timestamp_type, batch.max_timestamp) == (TimestampType.CREATE_TIME, NOW - HOUR)
    assert [record.timestamp for record in batch.records()] == [NOW, NOW]


KEYLESS = "Compacted topic cannot accept message without key in topic partition t-3"  # no final dot since Kafka 3.5


@pytest.mark.parametrize("codec", [Codec.NONE, Codec.ZSTD])
def test_keyless_records_are_named_by_their_index_in_the_batch(codec):
    records = [Record(i, NOW, None if i in (1, 4, 5, 6) else b"k", b"v") for i in range(8)]
    with pytest.raises(KafkaError) as refused:
        checked_batch(memoryview(bytearray(build_batch(records, codec=codec))), PRODUCE_VERSION, MAX_MESSAGE_BYTES,
                      TopicCodec(Codec.LZ4, 9), keyed_in="t-3")  # refused before it would be recompressed
    assert refused.value.code == ErrorCode.INVALID_RECORD
    assert refused.value.record_errors == tuple((index, KEYLESS) for index in (1, 4, 5, 6))
    assert refused.value.message == (  # Java's List.toString of the first three
        "One or more records have been rejected due to 4 record errors in total, and only showing the first "
        f"three errors at most: [RecordError(batchIndex=1, message='{KEYLESS}'), "
        f"RecordError(batchIndex=4, message='{KEYLESS}'), RecordError(batchIndex=5, message='{KEYLESS}')]")


def test_a_keyless_record_is_named_for_its_key_and_a_record_out_of_bounds_makes_it_invalid_timestamp():
    """Kafka's validator checks each record's key before its timestamp, and answers
    INVALID_TIMESTAMP, naming every refused record, once any is out of bounds."""
    late = NOW - 2 * HOUR
    keyless_and_late = [Record(0, late, None, b"v"), Record(1, NOW, b"k", b"v")]
    with pytest.raises(KafkaError) as refused:
        checked_batch(memoryview(bytearray(build_batch(keyless_and_late))), PRODUCE_VERSION, MAX_MESSAGE_BYTES,
                      None, bounds(before=HOUR), keyed_in="t-3")
    assert (refused.value.code, refused.value.record_errors) == (ErrorCode.INVALID_RECORD, ((0, KEYLESS),))
    keyless_then_late = [Record(0, NOW, None, b"v"), Record(1, late, b"k", b"v")]
    with pytest.raises(KafkaError) as refused:
        checked_batch(memoryview(bytearray(build_batch(keyless_then_late))), PRODUCE_VERSION, MAX_MESSAGE_BYTES,
                      None, bounds(before=HOUR), keyed_in="t-3")
    assert refused.value.code == ErrorCode.INVALID_TIMESTAMP
    assert refused.value.message == "One or more records have been rejected due to invalid timestamp"
    assert refused.value.record_errors == ((0, KEYLESS), (1, f"Timestamp {late} of message with offset 1 is out of "
                                                             f"range. The timestamp should be within "
                                                             f"[{NOW - HOUR}, {NOW + HOUR}]"))


def test_keyed_records_pass_and_legacy_message_sets_need_keys_too():
    keyed = build_batch([Record(i, NOW, b"k%d" % i, b"v") for i in range(3)])
    assert checked_batch(memoryview(bytearray(keyed)), PRODUCE_VERSION, MAX_MESSAGE_BYTES,
                         keyed_in="t-3").record_count == 3
    messages = build_message_set([Record(0, NOW, b"k", b"v"), Record(1, NOW, None, b"v")], magic=1)
    with pytest.raises(KafkaError) as refused:
        checked_batch(memoryview(bytearray(messages)), 2, MAX_MESSAGE_BYTES, keyed_in="t-3")
    assert (refused.value.code, refused.value.record_errors) == (ErrorCode.INVALID_RECORD, ((1, KEYLESS),))


def test_a_batch_not_based_at_offset_0_is_refused_before_its_records_are_read():
    """Kafka's log (analyzeAndValidateRecords) refuses a client's v2 batch based elsewhere than at
    offset 0 before its size, CRC and records: no record is named."""
    blob = bytearray(build_batch([Record(7 + i, NOW, None, b"v") for i in range(3)]))
    blob[17:21] = b"\0\0\0\0"  # a wrong CRC too, which comes after
    with pytest.raises(KafkaError) as refused:
        checked_batch(memoryview(blob), PRODUCE_VERSION, 10, keyed_in="t-3")
    assert (refused.value.code, refused.value.record_errors) == (ErrorCode.INVALID_RECORD, ())


def test_the_requests_own_checks_come_before_the_logs():
    """Kafka's ProduceRequest.validateRecords, in its order, before any CRC or size: the first batch's
    magic, then zstd before v7, then one batch per partition."""
    broken = bytearray(good([b"x"]))
    broken[17:21] = b"\0\0\0\0"
    assert request_refusal(good([b"x"]) + bytes(broken), 9) == ErrorCode.INVALID_RECORD
    zstd = good([b"x"], Codec.ZSTD)
    assert request_refusal(zstd + bytes(broken), 6) == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    assert request_refusal(zstd, 7) is None
    legacy = build_message_set([Record(0, NOW, None, b"v")], magic=1)
    assert request_refusal(legacy + zstd, 6) == ErrorCode.INVALID_RECORD
    assert request_refusal(legacy, 2) is None and request_refusal(good([b"x"]), 2) == ErrorCode.INVALID_RECORD


def request_refusal(blob: bytes, version: int) -> ErrorCode | None:
    try:
        request_checked(memoryview(bytearray(blob)), version)
    except KafkaError as refused:
        return refused.code
    return None
