"""validate_batch: every record of a produced batch checked, nothing else raised."""

import pytest
from bad_batches import CORRUPT, INVALID, good, records_bytes, sealed, transactional_without_producer
from hypothesis import given
from hypothesis import strategies as st
from records_strategies import record_lists

from protocol.errors import DecodeError
from protocol.records import DEFAULT_LIMIT, Codec, RecordBatch, build_batch, validation
from protocol.records.batch import HEADER_SIZE
from protocol.records.validation import InvalidRecords, validate_batch
from tests.protocol.mutations import mutated


def batch(blob: bytes) -> RecordBatch:
    return RecordBatch(memoryview(bytearray(blob)))


@pytest.mark.parametrize("codec", list(Codec))
@given(records=record_lists())
def test_batches_as_clients_build_them_pass(codec, records):
    validate_batch(batch(build_batch(records, codec=codec)), limit=DEFAULT_LIMIT)


@pytest.mark.parametrize("make", CORRUPT.values(), ids=CORRUPT.keys())
def test_compressed_data_that_does_not_inflate_is_corrupt(make):
    with pytest.raises(DecodeError):
        validate_batch(batch(make()), limit=DEFAULT_LIMIT)


@pytest.mark.parametrize("make", INVALID.values(), ids=INVALID.keys())
def test_records_that_do_not_make_up_the_batch_are_invalid(make):
    with pytest.raises(InvalidRecords):
        validate_batch(batch(make()), limit=DEFAULT_LIMIT)


def test_a_transactional_batch_without_a_producer_id_passes():
    """Kafka's validator checks a sequence only where there is a producer id: such a batch is appended."""
    validate_batch(batch(transactional_without_producer()), limit=DEFAULT_LIMIT)


@pytest.mark.parametrize("codec", [c for c in Codec if c != Codec.NONE])
def test_compressed_records_inflate_within_the_limit(codec):
    blob = good([bytes(1000)] * 50, codec)
    validate_batch(batch(blob), limit=60_000)
    with pytest.raises(DecodeError):
        validate_batch(batch(blob), limit=10_000)


@pytest.mark.parametrize("cut", [1, 2, 5])
def test_records_cut_anywhere_are_invalid(cut):
    payload = records_bytes([b"value", b"other"])
    with pytest.raises(InvalidRecords):
        validate_batch(batch(sealed(payload[:-cut], 2)), limit=DEFAULT_LIMIT)


def test_null_header_key_and_negative_lengths_are_invalid():
    one = records_bytes([b"v"])  # length, attributes, ts, offset, key (null), value, 1 header
    key_at = one.index(b"\x02h")  # header key "h": length 1 (zigzag 2)
    for damaged in (one[:key_at] + b"\x01" + one[key_at + 1:],  # header key null
                    one[:4] + b"\x03" + one[5:]):  # key length -2
        with pytest.raises(InvalidRecords):
            validate_batch(batch(sealed(damaged, 1)), limit=DEFAULT_LIMIT)


def test_a_record_with_bytes_beyond_its_fields_is_invalid():
    one = bytearray(records_bytes([b"v"]))
    one[0] += 2  # length one more: a stray byte follows the record's fields
    with pytest.raises(InvalidRecords):
        validate_batch(batch(sealed(bytes(one) + b"\x00", 1)), limit=DEFAULT_LIMIT)


def check_or_reject(blob: bytes) -> None:
    """Accepted only if the records decode, as many as claimed, at consecutive offsets."""
    try:
        checked = batch(blob)
        validate_batch(checked, limit=1 << 20)
    except (DecodeError, InvalidRecords):
        return
    records = checked.records(limit=1 << 20)
    assert [r.offset - checked.base_offset for r in records] == list(range(checked.record_count))


from_offset_zero = record_lists().map(lambda rs: [r._replace(offset=i) for i, r in enumerate(rs)])
valid_batches = st.builds(lambda records, codec: build_batch(records, codec=codec), from_offset_zero,
                          st.sampled_from(list(Codec)))


@given(blob=valid_batches, data=st.data())
def test_mutated_batches_are_rejected_or_readable(blob, data):
    damaged = mutated(data, blob, keep=12)
    damaged[8:12] = (len(damaged) - 12).to_bytes(4, "big", signed=True)  # keep the frame sound
    check_or_reject(bytes(damaged))


@given(payload=st.binary(max_size=200), count=st.integers(-2, 20), attributes=st.integers(0, 0x3F))
def test_random_records_are_rejected_or_readable(payload, count, attributes):
    check_or_reject(sealed(payload, count, attributes=attributes))


def walk_result(walk, payload: bytes) -> int:
    try:
        return walk(payload)
    except (DecodeError, InvalidRecords):
        return -1


compiled_only = pytest.mark.skipif(validation.compiled_walk is None, reason="built without a C compiler")
valid_payloads = from_offset_zero.map(lambda records: build_batch(records)[HEADER_SIZE:])


@compiled_only
@given(payload=st.binary(max_size=200) | valid_payloads, data=st.data())
def test_compiled_walk_accepts_exactly_what_the_python_walk_accepts(payload, data):
    for candidate in (payload, bytes(mutated(data, payload))):
        assert validation.compiled_walk(candidate) == walk_result(validation.walk_records, candidate)


TEN_BYTES = b"\xff" * 9  # the first nine bytes of a ten-byte varint


@compiled_only
@pytest.mark.parametrize("timestamp_delta", [TEN_BYTES + b"\x01", TEN_BYTES + b"\x7f", TEN_BYTES + b"\x80",
                                             b"\x80" * 10 + b"\x00"])
@pytest.mark.parametrize("offset_delta", [b"\x00", b"\x80" * 9 + b"\x00", b"\x80" * 9 + b"\x02"])
def test_both_walks_agree_on_long_varints(timestamp_delta, offset_delta):
    body = b"\x00" + timestamp_delta + offset_delta + b"\x01\x01\x00"  # attributes ... null key, null value
    payload = bytes([len(body) << 1]) + body
    assert validation.compiled_walk(payload) == walk_result(validation.walk_records, payload)


@given(records=from_offset_zero)
def test_the_walk_gives_the_range_of_the_records_timestamp_deltas(records):
    blob = build_batch(records)
    base = RecordBatch(memoryview(bytearray(blob))).base_timestamp
    deltas = [record.timestamp - base for record in records]
    assert validation.walk_records(blob[HEADER_SIZE:]) == (len(records), min(deltas), max(deltas))
    assert validation.walk(blob[HEADER_SIZE:]) == (len(records), min(deltas), max(deltas))


@given(records=from_offset_zero, codec=st.sampled_from(list(Codec)))
def test_a_valid_batch_comes_with_its_timestamps_range(records, codec):
    checked = validate_batch(batch(build_batch(records, codec=codec)), limit=DEFAULT_LIMIT)
    stamps = [record.timestamp for record in records]
    assert (checked.min_timestamp, checked.max_timestamp) == (min(stamps), max(stamps))
