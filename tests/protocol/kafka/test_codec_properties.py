"""Every declared API, every version, both directions: round trips and fuzzing."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka_strategies import message

from protocol.errors import DecodeError
from protocol.kafka import ALL, REQUEST, RESPONSE, decode_body, decode_request, encode_body, encode_request
from tests.protocol.mutations import mutated

CASES = [(api, direction) for api in ALL.values() for direction in (REQUEST, RESPONSE)]
IDS = [f"{api.name}-{direction}" for api, direction in CASES]
# Every API and version in one example: a tenth of the profile's examples (6 in "ci").
FEW = settings(max_examples=max(1, settings.default.max_examples // 10), deadline=None,
               suppress_health_check=list(HealthCheck))


def versions(api):
    return range(api.version_range.low, api.version_range.high + 1)


def message_class(api, direction):
    return api.Request if direction == REQUEST else api.Response


def valid_message(data, api, direction, version):
    flexible = version in api.flexible_range
    return data.draw(message(message_class(api, direction), version, flexible))


def decode_or_reject(api, version, direction, frame):
    try:
        decode_body(api, version, direction, frame)
    except DecodeError:
        pass


def check_mutations(data, api, version, direction, encoded):
    """A cut or a changed byte decodes to something or raises DecodeError."""
    cut = data.draw(st.integers(0, len(encoded)))
    decode_or_reject(api, version, direction, encoded[:cut])
    if encoded:
        spot = data.draw(st.integers(0, len(encoded) - 1))
        mutated = bytearray(encoded)
        mutated[spot] = data.draw(st.integers(0, 255))
        decode_or_reject(api, version, direction, mutated)


@pytest.mark.parametrize(("api", "direction"), CASES, ids=IDS)
@FEW
@given(data=st.data())
def test_round_trip_is_identical_and_mutations_fail_cleanly(api, direction, data):
    for version in versions(api):
        original = valid_message(data, api, direction, version)
        encoded = encode_body(api, version, direction, original)
        decoded, end = decode_body(api, version, direction, encoded)
        assert end == len(encoded)
        assert decoded == original, (version, decoded, original)
        assert encode_body(api, version, direction, decoded) == encoded
        check_mutations(data, api, version, direction, encoded)


@pytest.mark.parametrize(("api", "direction"), CASES, ids=IDS)
@FEW
@given(noise=st.binary(max_size=64))
def test_random_bytes_raise_only_decode_error(api, direction, noise):
    for version in versions(api):
        decode_or_reject(api, version, direction, noise)


@settings(max_examples=5 * settings.default.max_examples, deadline=None)
@given(frame=st.binary(max_size=40) | st.builds(
    lambda key, version, rest: key.to_bytes(2, "big") + version.to_bytes(2, "big") + rest,
    st.sampled_from(sorted(ALL)), st.integers(0, 20), st.binary(max_size=40),
))
def test_random_request_frames_raise_only_decode_error(frame):
    try:
        decode_request(frame)
    except DecodeError:
        pass


@pytest.mark.parametrize("api", ALL.values(), ids=[api.name for api in ALL.values()])
@FEW
@given(data=st.data())
def test_mutated_request_frames_raise_only_decode_error(api, data):
    """Whole requests as the server reads them (header, client id, tagged fields, body), damaged."""
    version = data.draw(st.sampled_from(versions(api)))
    body = valid_message(data, api, REQUEST, version)
    frame = encode_request(api.key, version, data.draw(st.integers(-(2**31), 2**31 - 1)),
                           data.draw(st.none() | st.text(max_size=8)), body)
    try:
        decode_request(mutated(data, frame))
    except DecodeError:
        pass
