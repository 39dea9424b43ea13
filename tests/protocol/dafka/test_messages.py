"""Dafka messages against bytes written by hand from dafka-wire.md."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol.dafka import (
    Ack,
    ConsumerHello,
    DirectHead,
    DirectRecord,
    EpochAck,
    Fence,
    Fenced,
    Fetch,
    GetHeads,
    Head,
    HeadsDone,
    Record,
    StoreHello,
    decode,
    decode_many,
    decode_subscription,
    encode,
    subscription,
)
from protocol.dafka.messages import _decode_generic
from protocol.errors import DecodeError, EncodeError

P = "0123456789ABCDEF0123456789ABCDEF"  # a partition / producer UUID
C = "FEDCBA9876543210FEDCBA9876543210"  # a consumer / store UUID
ADDR_P = b"\x20" + P.encode()
ADDR_C = b"\x20" + C.encode()

EXPECTED = [
    (
        Record(partition=P, subject="hello", sequence=7, content=b"payload"),
        [b"Mhello\x00\x01" + ADDR_P + b"\x05hello" + b"\x00" * 7 + b"\x07", b"payload"],
    ),
    (
        DirectRecord(requester=C, partition=P, subject="t", sequence=2**64 - 1, content=b""),
        [b"D" + C.encode() + b"\x00\x01" + ADDR_P + b"\x01t" + b"\xff" * 8, b""],
    ),
    (
        Fetch(partition=P, requester=C, subject="t", sequence=256, count=10),
        [b"F" + P.encode() + b"\x00\x01" + ADDR_C + b"\x01t" + b"\x00" * 6 + b"\x01\x00" + b"\x00\x00\x00\x0a"],
    ),
    (
        Ack(partition=P, subject="orders", sequence=3),
        [b"K" + P.encode() + b"\x00\x01" + b"\x06orders" + b"\x00" * 7 + b"\x03"],
    ),
    (
        Head(partition=P, subject="t", sequence=1),
        [b"Ht\x00\x01" + ADDR_P + b"\x01t" + b"\x00" * 7 + b"\x01"],
    ),
    (
        DirectHead(consumer=C, partition=P, subject="t", sequence=0),
        [b"E" + C.encode() + b"\x00\x01" + ADDR_P + b"\x01t" + b"\x00" * 8],
    ),
    (
        GetHeads(subject="topic", consumer=C),
        [b"Gtopic\x00\x01" + ADDR_C],
    ),
    (
        ConsumerHello(store=P, consumer=C, subjects=("a", "bc")),
        [b"W" + P.encode() + b"\x00\x01" + ADDR_C + b"\x00\x00\x00\x02" + b"\x00\x00\x00\x01a" + b"\x00\x00\x00\x02bc"],
    ),
    (
        StoreHello(consumer=C, store=P),
        [b"L" + C.encode() + b"\x00\x01" + ADDR_P],
    ),
    (  # our extension, laid out as the reference's messages are
        HeadsDone(consumer=C, store=P, subject="t"),
        [b"Z" + C.encode() + b"\x00\x01" + ADDR_P + b"\x01t"],
    ),
    (  # a claim: start is 2**64 - 1
        Fence(partition=P, requester=C, subject="t", epoch=7),
        [b"X" + P.encode() + b"\x00\x01" + ADDR_C + b"\x01t" + b"\x00\x00\x00\x07" + b"\xff" * 8 + b"\x00" * 4],
    ),
    (  # an announcement: start, and the leader's epochs
        Fence(partition=P, requester=C, subject="t", epoch=7, start=9, epochs=((2, 0), (7, 9))),
        [b"X" + P.encode() + b"\x00\x01" + ADDR_C + b"\x01t" + b"\x00\x00\x00\x07" + b"\x00" * 7 + b"\x09"
         + b"\x00\x00\x00\x02" + b"\x00\x00\x00\x02" + b"\x00" * 8 + b"\x00\x00\x00\x07" + b"\x00" * 7 + b"\x09"],
    ),
    (
        Fenced(requester=C, store=P, partition=P, subject="t", epoch=7, accepted=1, next_sequence=5, head_epoch=-1),
        [b"Y" + C.encode() + b"\x00\x01" + ADDR_P + ADDR_P + b"\x01t" + b"\x00\x00\x00\x07" + b"\x01"
         + b"\x00" * 7 + b"\x05" + b"\xff" * 4 + b"\x00" * 4],
    ),
    (
        EpochAck(partition=P, subject="t", sequence=3, epoch=2),
        [b"V" + P.encode() + b"\x00\x01" + b"\x01t" + b"\x00" * 7 + b"\x03" + b"\x00\x00\x00\x02"],
    ),
]


@pytest.mark.parametrize("message, frames", EXPECTED, ids=lambda v: type(v).__name__)
def test_encode_matches_hand_written_bytes(message, frames):
    assert [bytes(f) for f in encode(message)] == frames
    assert decode(frames) == message


def test_content_frame_is_passed_through_without_copy():
    content = memoryview(bytearray(b"x" * 1000))
    frames = encode(Record(partition=P, subject="t", sequence=0, content=content))
    assert frames[1] is content
    assert decode(frames).content is content


@pytest.mark.parametrize("extension", [HeadsDone, Fence, Fenced, EpochAck], ids=lambda c: c.__name__)
def test_extensions_have_ids_of_no_reference_message(extension):
    """A reference node drops what it cannot parse, and subscribes to none of ours."""
    assert extension.ID not in b"MDFKHEGWL"


def test_subscription_prefixes():
    assert subscription(Record, "hello") == b"Mhello"
    assert subscription(Ack, P) == b"K" + P.encode()
    assert subscription(Fetch) == b"F"
    assert decode_subscription(b"\x01Mhello") == (True, b"Mhello")
    assert decode_subscription(b"\x00L" + C.encode()) == (False, b"L" + C.encode())


@pytest.mark.parametrize(
    "message",
    [
        Record(partition=P.lower(), subject="t", sequence=0, content=b""),
        Head(partition=P, subject="x" * 256, sequence=0),
        Ack(partition=P, subject="t", sequence=-1),
        Fetch(partition=P, requester=C, subject="t", sequence=0, count=2**32),
        GetHeads(subject="a\x00b", consumer=C),
    ],
)
def test_unencodable_values_raise_encode_error(message):
    with pytest.raises(EncodeError):
        encode(message)


@pytest.mark.parametrize(
    "frames",
    [
        [],
        [b""],
        [b"Zt\x00\x01"],
        [b"Ht\x00\x02" + ADDR_P + b"\x01t" + b"\x00" * 8],  # version 2
        [b"Ht\x01" + ADDR_P + b"\x01t" + b"\x00" * 8],  # no NUL
        [b"Ht\x00\x01" + ADDR_P + b"\x01t" + b"\x00" * 7],  # truncated sequence
        [b"Ht\x00\x01" + ADDR_P + b"\x01t" + b"\x00" * 9],  # trailing byte
        [b"Ht\x00\x01" + b"\x20" + P.lower().encode() + b"\x01t" + b"\x00" * 8],  # lower hex
        [b"Mt\x00\x01" + ADDR_P + b"\x01t" + b"\x00" * 8],  # RECORD without content
        [b"Gt\x00\x01" + ADDR_C, b"extra"],
        [b"W" + P.encode() + b"\x00\x01" + ADDR_C + b"\xff\xff\xff\xff"],  # absurd count
        [b"Gt\x00\x01" + b"\x40" + C.encode()],  # length past end
        [b"G\xff\x00\x01" + ADDR_C],  # topic not UTF-8
    ],
)
def test_bad_frames_raise_decode_error(frames):
    with pytest.raises(DecodeError):
        decode(frames)


addresses = st.text("0123456789ABCDEF", min_size=32, max_size=32)
subjects = st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=60)
u64 = st.integers(0, 2**64 - 1)
u32 = st.integers(0, 2**32 - 1)
i32 = st.integers(-(2**31), 2**31 - 1)
epoch_starts = st.lists(st.tuples(i32, u64), max_size=4).map(tuple)
contents = st.binary(max_size=300)

messages = st.one_of(
    st.builds(Record, partition=addresses, subject=subjects, sequence=u64, content=contents),
    st.builds(DirectRecord, requester=addresses, partition=addresses, subject=subjects, sequence=u64, content=contents),
    st.builds(Fetch, partition=addresses, requester=addresses, subject=subjects, sequence=u64, count=u32),
    st.builds(Ack, partition=addresses, subject=subjects, sequence=u64),
    st.builds(Head, partition=addresses, subject=subjects, sequence=u64),
    st.builds(DirectHead, consumer=addresses, partition=addresses, subject=subjects, sequence=u64),
    st.builds(GetHeads, subject=subjects, consumer=addresses),
    st.builds(ConsumerHello, store=addresses, consumer=addresses, subjects=st.lists(subjects, max_size=5).map(tuple)),
    st.builds(StoreHello, consumer=addresses, store=addresses),
    st.builds(HeadsDone, consumer=addresses, store=addresses, subject=subjects),
    st.builds(Fence, partition=addresses, requester=addresses, subject=subjects, epoch=i32, start=u64,
              epochs=epoch_starts),
    st.builds(Fenced, requester=addresses, store=addresses, partition=addresses, subject=subjects, epoch=i32,
              accepted=st.integers(0, 255), next_sequence=u64, head_epoch=i32, epochs=epoch_starts),
    st.builds(EpochAck, partition=addresses, subject=subjects, sequence=u64, epoch=i32),
)


@given(messages)
def test_round_trip(message):
    assert decode(encode(message)) == message


def test_records_of_a_partition_decode_each_with_its_own_sequence():
    """The fields before the sequence are decoded once per frame-0 prefix, then taken as known."""
    for message in [Record(P, "orders", sequence, b"r") for sequence in (0, 1, 2**64 - 1)] + [
            DirectRecord(C, P, "orders", sequence, b"d") for sequence in (5, 6)]:
        assert decode(encode(message)) == message
    with pytest.raises(DecodeError):  # a byte past the sequence of a partition decoded before
        decode([encode(Record(P, "orders", 3, b""))[0] + b"\x00", b""])


def _outcome(frames):
    """What the generic decoder, without the prefix cache, makes of `frames`."""
    try:
        return _decode_generic(frames)
    except DecodeError as error:
        return str(error)


@given(st.lists(st.one_of(messages.map(lambda message: [bytes(frame) for frame in encode(message)]),
                          st.lists(st.binary(max_size=80), max_size=3)), max_size=8))
def test_a_batch_decodes_as_each_of_its_messages_does(batch):
    """decode_many (and so decode): the messages in order, the errors of the others, each as the
    generic decoder finds it (run twice: the second time every RECORD's prefix is known)."""
    for _ in range(2):
        messages_found, errors = decode_many(batch)
        outcomes = [_outcome(frames) for frames in batch]
        assert messages_found == [outcome for outcome in outcomes if not isinstance(outcome, str)]
        assert [str(error) for error in errors] == [outcome for outcome in outcomes if isinstance(outcome, str)]


@given(messages, st.data())
def test_mutated_frames_raise_only_decode_error(message, data):
    frames = [bytes(f) for f in encode(message)]
    frame = bytearray(frames[0])
    for _ in range(data.draw(st.integers(1, 4))):
        action = data.draw(st.sampled_from(["flip", "cut", "insert"]))
        position = data.draw(st.integers(0, max(len(frame) - 1, 0)))
        if action == "flip" and frame:
            frame[position] = data.draw(st.integers(0, 255))
        elif action == "cut":
            del frame[position:]
        else:
            frame[position:position] = data.draw(st.binary(min_size=1, max_size=4))
    try:
        decode([bytes(frame), *frames[1:]])
    except DecodeError:
        pass


@given(st.lists(st.binary(max_size=80), max_size=3))
def test_random_frames_raise_only_decode_error(frames):
    try:
        decode(frames)
    except DecodeError:
        pass
