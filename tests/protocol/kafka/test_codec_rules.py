"""Kafka's encoding rules: tagged defaults, unknown tags, versions, nulls, limits."""

from __future__ import annotations

import time
import uuid

import pytest
from hypothesis import given, settings
from kafka_strategies import message

from protocol.errors import DecodeError, EncodeError
from protocol.kafka import (
    REQUEST,
    RESPONSE,
    UNKNOWN_API_KEY,
    UNSUPPORTED_VERSION,
    UnsupportedRequest,
    by_name,
    decode_body,
    decode_request,
    decode_response,
    encode_body,
    encode_request,
    encode_response,
    peek_request_header,
)
from protocol.kafka.schema import Api, F

API_VERSIONS = by_name("ApiVersions")

# A made-up API that carries every type and rule in one place.
PROBE = Api(
    key=9999, name="Probe", versions="0-2", flexible="2+",
    request=(
        F("flag", "bool"),
        F("small", "int8"),
        F("port", "uint16"),
        F("count", "uint32"),
        F("ratio", "float64"),
        F("id", "uuid", "1+"),
        F("name", "string", nullable="1+"),
        F("blob", "bytes"),
        F("records", "records"),
        F("numbers", "[]int64"),
        F("names", "[]string", "1+", nullable="2+"),
        F("ids", "[]uuid", "1+"),
        F("epoch", "int32", "1+", default=-1),
        F("hint", "int32", "1+", ignorable=True),
        F("items", "[]", "0+", F("key", "int16"), F("value", "string", nullable="0+")),
        F("cursor", "struct", "1+", F("offset", "int64"), nullable="1+", default=None),
        F("extra", "string", "2+", tag=0, tagged="2+", nullable="2+", default=None),
        F("leader", "struct", "2+", F("leader_id", "int32", default=-1), tag=3, tagged="2+"),
    ),
    response=(F("error_code", "int16"),),
)


def test_probe_round_trips_every_version():
    @settings(max_examples=40, deadline=None)
    @given(data=message(PROBE.Request, 2, True))
    def round_trip(data):
        encoded = encode_body(PROBE, 2, REQUEST, data)
        assert decode_body(PROBE, 2, REQUEST, encoded)[0] == data

    round_trip()


def test_nested_classes_hang_off_their_parent():
    item = PROBE.Request.Items(key=1)
    assert item.value == "" and PROBE.Request.Cursor.__qualname__ == "ProbeRequest.Cursor"
    request = PROBE.Request(items=[item])
    assert request.leader == PROBE.Request.Leader(leader_id=-1)
    assert request.cursor is None and request.id == uuid.UUID(int=0) and request.epoch == -1
    assert request.numbers == [] and request.numbers is not PROBE.Request().numbers
    assert "Items(key=1, value='')" in repr(request)


def test_api_versions_v3_response_writes_no_default_tagged_fields():
    body = API_VERSIONS.Response(api_keys=[API_VERSIONS.Response.ApiKeys(api_key=18, max_version=4)])
    assert encode_body(API_VERSIONS, 3, RESPONSE, body).hex() == (
        "0000"  # error_code
        "02" "0012" "0000" "0004" "00"  # one api key, its empty tag section
        "00000000"  # throttle_time_ms
        "00"  # no tagged fields: all four hold their defaults
    )
    body.finalized_features_epoch = 7
    assert encode_body(API_VERSIONS, 3, RESPONSE, body).hex().endswith("01" "01" "08" "0000000000000007")


def test_unknown_tags_are_kept_and_written_back_in_tag_order():
    known = "01" "08" "0000000000000007"  # finalized_features_epoch = 7
    unknown_empty, unknown_two_bytes = "04" "00", "09" "02" "abcd"
    body = bytes.fromhex("0000" "01" "00000000" "03" + known + unknown_empty + unknown_two_bytes)
    decoded, _ = decode_body(API_VERSIONS, 3, RESPONSE, body)
    assert decoded.finalized_features_epoch == 7
    assert decoded._unknown_tags == {4: b"", 9: b"\xab\xcd"}
    assert encode_body(API_VERSIONS, 3, RESPONSE, decoded) == body


def test_unknown_tag_in_a_nested_struct_survives():
    body = bytes.fromhex("0000" "02" "0012" "0000" "0004" "01" "05" "01" "ff" "00000000" "00")
    decoded, _ = decode_body(API_VERSIONS, 3, RESPONSE, body)
    assert decoded.api_keys[0]._unknown_tags == {5: b"\xff"}
    assert encode_body(API_VERSIONS, 3, RESPONSE, decoded) == body


def test_tagged_field_must_fill_its_size():
    # finalized_features_epoch (int64) declared as 9 bytes long
    body = bytes.fromhex("0000" "01" "00000000" "01" "01" "09" "000000000000000700")
    with pytest.raises(DecodeError):
        decode_body(API_VERSIONS, 3, RESPONSE, body)


def test_field_missing_from_the_version_refuses_a_value():
    with pytest.raises(EncodeError):
        encode_body(PROBE, 0, REQUEST, PROBE.Request(epoch=5))
    with pytest.raises(EncodeError):
        encode_body(PROBE, 1, REQUEST, PROBE.Request(extra="tagged only from v2"))


def test_ignorable_field_is_dropped():
    plain = encode_body(API_VERSIONS, 0, RESPONSE, API_VERSIONS.Response())
    assert encode_body(API_VERSIONS, 0, RESPONSE, API_VERSIONS.Response(throttle_time_ms=5)) == plain
    assert encode_body(PROBE, 0, REQUEST, PROBE.Request(hint=3)) == encode_body(PROBE, 0, REQUEST, PROBE.Request())


def test_null_only_where_nullable():
    with pytest.raises(EncodeError):
        encode_body(PROBE, 0, REQUEST, PROBE.Request(name=None))
    with pytest.raises(EncodeError):
        encode_body(PROBE, 1, REQUEST, PROBE.Request(names=None))
    encoded = encode_body(PROBE, 2, REQUEST, PROBE.Request(name=None, names=None))
    decoded, _ = decode_body(PROBE, 2, REQUEST, encoded)
    assert decoded.name is None and decoded.names is None


def test_wrong_value_types_raise_encode_error():
    with pytest.raises(EncodeError):
        encode_body(PROBE, 0, REQUEST, PROBE.Request(small=300))
    with pytest.raises(EncodeError):
        encode_body(PROBE, 0, REQUEST, PROBE.Request(name=5))


def test_any_object_with_the_attributes_encodes():
    class Plain:
        error_code = 3

    assert encode_body(PROBE, 0, RESPONSE, Plain()) == b"\x00\x03"


def test_null_in_a_non_nullable_field_is_rejected_on_decode():
    with pytest.raises(DecodeError):
        decode_body(API_VERSIONS, 0, RESPONSE, bytes.fromhex("0000" "ffffffff"))


def test_records_are_a_view_into_the_frame():
    request = PROBE.Request(records=b"\x01" * 100)
    frame = bytes(encode_body(PROBE, 0, REQUEST, request))
    decoded, _ = decode_body(PROBE, 0, REQUEST, frame)
    assert isinstance(decoded.records, memoryview) and decoded.records.obj is frame
    assert decoded.records == b"\x01" * 100


@pytest.mark.parametrize("after_name", [
    "7fffffff",  # blob claims 2 GB
    "00000000" "7fffffff",  # records claim 2 GB
    "00000000" "ffffffff" "7fffffff",  # numbers claim 2**31 - 1 int64s
])
def test_lying_length_prefix_fails_fast(after_name):
    # Probe v0 request: 16 bytes of fixed-width fields, then an empty name.
    frame = bytes(16) + b"\x00\x00" + bytes.fromhex(after_name) + bytes(8)
    started = time.perf_counter()
    with pytest.raises(DecodeError, match="exceeds"):
        decode_body(PROBE, 0, REQUEST, frame)
    assert time.perf_counter() - started < 0.5


@pytest.mark.parametrize("body", [
    "7fffffff",  # array of 2**31 - 1 api keys in 0 bytes
    "80808080",  # a truncated varint
])
def test_lying_array_count_fails_fast(body):
    with pytest.raises(DecodeError):
        decode_body(API_VERSIONS, 0, RESPONSE, bytes.fromhex("0000") + bytes.fromhex(body))


def test_compact_length_of_two_gigabytes_fails_fast():
    frame = bytes.fromhex("808080800801")  # compact string length 2**31
    with pytest.raises(DecodeError):
        decode_body(API_VERSIONS, 3, REQUEST, frame)


def test_overlong_varint_is_rejected():
    frame = bytes.fromhex("8080808080800001")
    with pytest.raises(DecodeError, match="varint"):
        decode_body(API_VERSIONS, 3, REQUEST, frame)


def test_request_frame_round_trip_with_headers():
    body = API_VERSIONS.Request(client_software_name="kcat", client_software_version="1.7")
    for version, header_size in ((2, 10), (3, 11)):
        frame = encode_request(18, version, 42, "me", body if version == 3 else API_VERSIONS.Request())
        assert len(frame) >= header_size
        header, decoded = decode_request(frame)
        assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (
            18, version, 42, "me")
    frame = encode_request(18, 3, 1, None, body)
    assert decode_request(frame)[0].client_id is None


def test_response_frame_round_trip_with_headers():
    body = API_VERSIONS.Response(error_code=35)
    frame = encode_response(18, 3, 9, body)
    assert frame[:6] == b"\x00\x00\x00\x09\x00\x23"  # header v0 even for v3
    assert decode_response(18, 3, frame) == (9, body)
    metadata = by_name("Metadata")
    frame = encode_response(3, 12, 9, metadata.Response())
    assert frame[4] == 0  # header v1: empty tagged section
    assert decode_response(3, 12, frame) == (9, metadata.Response())


def test_unsupported_requests_keep_their_header():
    frame = bytes.fromhex("0012" "0063" "0000002a" "0002" "6d65")
    assert peek_request_header(frame) == (18, 99, 42)
    with pytest.raises(UnsupportedRequest) as caught:
        decode_request(frame)
    assert (caught.value.reason, caught.value.correlation_id) == (UNSUPPORTED_VERSION, 42)
    with pytest.raises(UnsupportedRequest) as caught:
        decode_request(bytes.fromhex("7000" "0000" "00000007"))
    assert (caught.value.reason, caught.value.api_key) == (UNKNOWN_API_KEY, 0x7000)
    with pytest.raises(DecodeError):
        peek_request_header(b"\x00\x12")
