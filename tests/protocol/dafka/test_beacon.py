"""Beacon frames against bytes written by hand from dafka-wire.md."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol.dafka import (
    NodeBeacon,
    TowerBeacon,
    Welcome,
    decode_node_beacon,
    decode_tower_message,
    encode_node_beacon,
    encode_tower_beacon,
)
from protocol.errors import DecodeError

U = "0123456789ABCDEF0123456789ABCDEF"


def test_node_beacon_is_four_frames_with_decimal_port():
    beacon = NodeBeacon(U, "", 40123)
    assert encode_node_beacon(beacon) == [b"B", U.encode(), b"", b"40123"]
    assert decode_node_beacon([b"B", U.encode(), b"", b"40123"]) == beacon


def test_tower_beacon_is_three_frames_with_endpoint():
    beacon = TowerBeacon(U, "tcp://127.0.0.1:40123")
    assert encode_tower_beacon(beacon) == [b"B", U.encode(), b"tcp://127.0.0.1:40123"]
    assert decode_tower_message([b"B", U.encode(), b"tcp://127.0.0.1:40123"]) == beacon
    assert decode_tower_message([b"W"]) == Welcome()


@pytest.mark.parametrize(
    "frames",
    [
        [b"B", U.encode(), b""],
        [b"B", U.encode(), b"", b"0"],
        [b"B", U.encode(), b"", b"65536"],
        [b"B", U.encode(), b"", b"12a"],
        [b"B", U.lower().encode(), b"", b"1"],
        [b"X", U.encode(), b"", b"1"],
    ],
)
def test_bad_node_beacons_raise_decode_error(frames):
    with pytest.raises(DecodeError):
        decode_node_beacon(frames)


@given(st.lists(st.binary(max_size=40), max_size=5))
def test_random_frames_raise_only_decode_error(frames):
    for decoder in (decode_node_beacon, decode_tower_message):
        try:
            decoder(frames)
        except DecodeError:
            pass
