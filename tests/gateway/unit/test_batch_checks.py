"""checked_batch: a produced batch is refused with Kafka's error, or stored as it came."""

import pytest
import zstandard
from hypothesis import assume, given
from hypothesis import strategies as st

from gateway.kafka_error import KafkaError
from gateway.partitions.batch_checks import checked_batch
from protocol.kafka.error_codes import ErrorCode
from protocol.records import Codec
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
