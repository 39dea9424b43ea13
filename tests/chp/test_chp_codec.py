"""The kvmsg codec, the CHP commands and the ttl property, byte by byte."""

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol.chp import (
    KVMsg,
    decode_icanhaz,
    decode_kvmsg,
    encode_icanhaz,
    encode_kvmsg,
    expected_sequence,
    expiry_ms,
    hugz,
    is_passive_hugz,
    kthxbai,
    with_absolute_ttl,
)
from protocol.chp.peer import (
    Ack,
    PeerState,
    Replicated,
    State,
    SyncEnd,
    SyncEntry,
    SyncRequest,
    decode_peer,
    encode_peer,
)
from protocol.errors import DecodeError, EncodeError

UUID = bytes(range(16))


def test_kvmsg_frames_byte_for_byte():
    msg = KVMsg(
        key="/a/b",
        sequence=0x0102030405060708,
        body=b"\x00value",
        uuid=UUID,
        properties={"ttl": "30", "owner": "x=y"},
    )
    assert encode_kvmsg(msg) == [
        b"/a/b",
        b"\x01\x02\x03\x04\x05\x06\x07\x08",
        UUID,
        b"ttl=30\nowner=x=y\n",
        b"\x00value",
    ]
    assert decode_kvmsg(encode_kvmsg(msg)) == msg


def test_commands_byte_for_byte():
    assert encode_icanhaz("/gw/") == [b"ICANHAZ?", b"/gw/"]
    assert decode_icanhaz([b"ICANHAZ?", b""]) == ""
    assert encode_kvmsg(hugz(7)) == [b"HUGZ", bytes(7) + b"\x07", b"", b"", b""]
    end = [b"KTHXBAI", bytes(6) + b"\x01\x02", b"", b"", b"/gw/"]
    assert encode_kvmsg(kthxbai(258, "/gw/")) == end


def test_empty_body_is_a_delete():
    assert decode_kvmsg([b"k", bytes(8), b"", b"", b""]).is_delete


@pytest.mark.parametrize(
    "frames",
    [
        [b"k", bytes(8), b"", b""],
        [b"k", bytes(8), b"", b"", b"v", b"extra"],
        [b"", bytes(8), b"", b"", b"v"],
        [b"k", bytes(7), b"", b"", b"v"],
        [b"k", bytes(8), bytes(15), b"", b"v"],
        [b"\xff", bytes(8), b"", b"", b"v"],
        [b"k", bytes(8), b"", b"ttl=1", b"v"],
        [b"k", bytes(8), b"", b"novalue\n", b"v"],
        [b"k", bytes(8), b"", b"=1\n", b"v"],
        [b"k", bytes(8), b"", b"a=1\na=2\n", b"v"],
    ],
)
def test_malformed_kvmsg_raises_decode_error(frames):
    with pytest.raises(DecodeError):
        decode_kvmsg(frames)


@pytest.mark.parametrize("frames", [[b"ICANHAZ?"], [b"ICANHAZ", b""], [b"ICANHAZ?", b"\xfe"]])
def test_malformed_icanhaz_raises_decode_error(frames):
    with pytest.raises(DecodeError):
        decode_icanhaz(frames)


@pytest.mark.parametrize(
    "msg",
    [
        KVMsg(key=""),
        KVMsg(key="k", sequence=-1),
        KVMsg(key="k", sequence=1 << 64),
        KVMsg(key="k", uuid=b"short"),
        KVMsg(key="k", properties={"a=b": "1"}),
        KVMsg(key="k", properties={"a": "line\nbreak"}),
    ],
)
def test_unframeable_kvmsg_raises_encode_error(msg):
    with pytest.raises(EncodeError):
        encode_kvmsg(msg)


property_names = st.text(min_size=1).filter(lambda name: "=" not in name and "\n" not in name)
messages = st.builds(
    KVMsg,
    key=st.text(min_size=1),
    sequence=st.integers(0, (1 << 64) - 1),
    body=st.binary(),
    uuid=st.sampled_from([b"", UUID]),
    properties=st.dictionaries(property_names, st.text().filter(lambda v: "\n" not in v)),
)


@given(messages)
def test_kvmsg_round_trip(msg):
    assert decode_kvmsg(encode_kvmsg(msg)) == msg


# Random frame lists, plus five well-sized frames so fuzzing reaches the
# key, property and text checks behind the framing checks.
fuzzed_frames = st.lists(st.binary(max_size=40), max_size=7) | st.tuples(
    st.binary(max_size=20), st.binary(min_size=8, max_size=8), st.sampled_from([b"", UUID]),
    st.binary(max_size=30) | st.text(max_size=30).map(str.encode), st.binary(max_size=10),
).map(list)


@given(fuzzed_frames)
def test_fuzzed_frames_only_raise_decode_error(frames):
    for decode in (decode_kvmsg, decode_icanhaz):
        with contextlib.suppress(DecodeError):
            decode(frames)


def test_relative_ttl_becomes_absolute_expiry():
    msg = KVMsg(key="k", body=b"v", properties={"ttl": "1.5", "x": "y"})
    stored = with_absolute_ttl(msg, now_ms=1_000_000)
    assert stored.properties == {"ttl": "1001500", "x": "y"}
    assert expiry_ms(stored) == 1_001_500
    assert expiry_ms(KVMsg(key="k")) is None


def test_zero_ttl_means_no_expiry():
    stored = with_absolute_ttl(KVMsg(key="k", properties={"ttl": "0"}), now_ms=5)
    assert stored.properties == {}


@pytest.mark.parametrize("ttl", ["soon", "nan", "inf", "-1"])
def test_bad_ttl_raises_decode_error(ttl):
    with pytest.raises(DecodeError):
        with_absolute_ttl(KVMsg(key="k", properties={"ttl": ttl}), now_ms=0)


peer_messages = st.one_of(
    st.builds(PeerState, st.sampled_from(State), st.integers(0, (1 << 64) - 1)),
    st.just(SyncRequest()),
    st.builds(SyncEntry, messages),
    st.builds(Replicated, messages),
    st.builds(SyncEnd, st.integers(0, (1 << 64) - 1), st.integers(0, (1 << 64) - 1)),
    st.builds(Ack, st.integers(0, (1 << 64) - 1)),
)


@given(peer_messages)
def test_peer_message_round_trip(message):
    assert decode_peer(encode_peer(message)) == message


def test_peer_messages_byte_for_byte():
    assert encode_peer(PeerState(State.PASSIVE, 3)) == [b"STATE", b"PASSIVE", bytes(7) + b"\x03"]
    assert encode_peer(Ack(258)) == [b"KVACK", bytes(6) + b"\x01\x02"]
    assert encode_peer(SyncEnd(1, 2)) == [b"KTHXBAI", bytes(7) + b"\x01", bytes(7) + b"\x02"]
    assert encode_peer(Replicated(KVMsg("k", 1, b"v")))[:2] == [b"KVREPL", b"k"]


@given(st.lists(st.sampled_from([b"STATE", b"SYNC?", b"KVSYNC", b"KTHXBAI", b"KVACK", b"ACTIVE"]) | st.binary(max_size=9),
                max_size=7))
def test_fuzzed_peer_frames_only_raise_decode_error(frames):
    with contextlib.suppress(DecodeError):
        decode_peer(frames)


def test_cas_and_passive_properties():
    assert expected_sequence(KVMsg("k", properties={"cas": "42"})) == 42
    assert expected_sequence(KVMsg("k")) is None
    assert is_passive_hugz(hugz(5, passive=True)) and not is_passive_hugz(hugz(5))
    assert encode_kvmsg(hugz(1, passive=True))[3] == b"passive=1\n"


@pytest.mark.parametrize("cas", ["", "-1", "x", "1.5", "١", "1" * 21])
def test_bad_cas_raises_decode_error(cas):
    with pytest.raises(DecodeError):
        expected_sequence(KVMsg("k", properties={"cas": cas}))


@given(st.integers(0, (1 << 64) - 1), messages)
def test_cas_property_round_trips_through_the_frames(sequence, msg):
    tagged = KVMsg(msg.key, msg.sequence, msg.body, msg.uuid, {**msg.properties, "cas": str(sequence)})
    assert expected_sequence(decode_kvmsg(encode_kvmsg(tagged))) == sequence
