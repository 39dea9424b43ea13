"""The nine Dafka messages, framed as the C reference nodes send them, and our extensions.

Frame 0 is `[id][topic][0x00][0x01][fields...]`; RECORD and DIRECT-RECORD add
the content as frame 1, which is passed through untouched (no copy). Each
message type declares its layout as data, so one codec serves them all.

Our extensions (HEADS-DONE, FENCE, FENCED, EPOCH-ACK) use command ids no
reference node subscribes to: they never receive them.
"""

from __future__ import annotations

import re
import struct
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from functools import partial
from typing import ClassVar, Union

from protocol.errors import DecodeError, EncodeError

VERSION = 1

# Field kinds.
ADDRESS = "address"  # `string` holding 32 upper-case hex characters
STRING = "string"  # 1-byte length + UTF-8
STRINGS = "strings"  # 4-byte count of `longstr` (4-byte length + UTF-8)
U64 = "u64"
U32 = "u32"
I32 = "i32"  # a Kafka leader epoch: -1 for none
U8 = "u8"
EPOCHS = "epochs"  # 4-byte count of (i32 leader epoch, u64 its first sequence), ascending

Buffer = Union[bytes, bytearray, memoryview]

ADDRESS_PATTERN = re.compile(rb"[0-9A-F]{32}\Z")  # how every node UUID travels


def new_uuid() -> str:
    """A fresh node or partition address, as it travels: 32 upper-case hex characters."""
    return uuid.uuid4().hex.upper()

# RECORD and DIRECT-RECORD after the topic's NUL: version, address, subject length byte.
_CONTENT_FIELDS = re.compile(rb"\x01\x20([0-9A-F]{32})(.)", re.DOTALL)
_U64 = struct.Struct(">Q")
encode_sequence = _U64.pack  # the last field of RECORD and DIRECT-RECORD
_U32 = struct.Struct(">I")
_I32 = struct.Struct(">i")
_U8 = struct.Struct(">B")
_NUMBERS = {U64: _U64, U32: _U32, I32: _I32, U8: _U8}
_EPOCH_START = struct.Struct(">iQ")
NO_START = 2**64 - 1  # FENCE: a claim of leadership, its first sequence not chosen yet

# The messages are values, hashable and never changed, yet not frozen: a frozen dataclass's
# __init__ sets each field through object.__setattr__, twice the cost of a plain one, and a
# store builds one RECORD per record received.


@dataclass(slots=True, unsafe_hash=True)
class Record:
    """A record published by a partition's producer to the topic."""

    ID: ClassVar[bytes] = b"M"
    TOPIC: ClassVar[str] = "subject"
    FIELDS: ClassVar[tuple] = (("partition", ADDRESS), ("subject", STRING), ("sequence", U64))
    partition: str
    subject: str
    sequence: int
    content: Buffer


@dataclass(slots=True, unsafe_hash=True)
class DirectRecord:
    """A record sent to the node that FETCHed it."""

    ID: ClassVar[bytes] = b"D"
    TOPIC: ClassVar[str] = "requester"
    FIELDS: ClassVar[tuple] = (("partition", ADDRESS), ("subject", STRING), ("sequence", U64))
    requester: str
    partition: str
    subject: str
    sequence: int
    content: Buffer


@dataclass(slots=True, unsafe_hash=True)
class Fetch:
    """A request for `count` records of a partition from `sequence` on."""

    ID: ClassVar[bytes] = b"F"
    TOPIC: ClassVar[str] = "partition"
    FIELDS: ClassVar[tuple] = (
        ("requester", ADDRESS),
        ("subject", STRING),
        ("sequence", U64),
        ("count", U32),
    )
    partition: str
    requester: str
    subject: str
    sequence: int
    count: int


@dataclass(slots=True, unsafe_hash=True)
class Ack:
    """A store's cumulative acknowledgement: it holds the partition up to `sequence`."""

    ID: ClassVar[bytes] = b"K"
    TOPIC: ClassVar[str] = "partition"
    FIELDS: ClassVar[tuple] = (("subject", STRING), ("sequence", U64))
    partition: str
    subject: str
    sequence: int


@dataclass(slots=True, unsafe_hash=True)
class Head:
    """A producer's periodic note of the last sequence it published."""

    ID: ClassVar[bytes] = b"H"
    TOPIC: ClassVar[str] = "subject"
    FIELDS: ClassVar[tuple] = (("partition", ADDRESS), ("subject", STRING), ("sequence", U64))
    partition: str
    subject: str
    sequence: int


@dataclass(slots=True, unsafe_hash=True)
class DirectHead:
    """A store's answer to GET-HEADS or CONSUMER-HELLO: one partition's head."""

    ID: ClassVar[bytes] = b"E"
    TOPIC: ClassVar[str] = "consumer"
    FIELDS: ClassVar[tuple] = (("partition", ADDRESS), ("subject", STRING), ("sequence", U64))
    consumer: str
    partition: str
    subject: str
    sequence: int


@dataclass(slots=True, unsafe_hash=True)
class GetHeads:
    """A consumer's request for the heads of every partition of a topic."""

    ID: ClassVar[bytes] = b"G"
    TOPIC: ClassVar[str] = "subject"
    FIELDS: ClassVar[tuple] = (("consumer", ADDRESS),)
    subject: str
    consumer: str


@dataclass(slots=True, unsafe_hash=True)
class ConsumerHello:
    """A consumer introducing itself and its topics to a store reader."""

    ID: ClassVar[bytes] = b"W"
    TOPIC: ClassVar[str] = "store"
    FIELDS: ClassVar[tuple] = (("consumer", ADDRESS), ("subjects", STRINGS))
    store: str
    consumer: str
    subjects: tuple[str, ...]


@dataclass(slots=True, unsafe_hash=True)
class StoreHello:
    """A store reader greeting a consumer whose subscription it saw."""

    ID: ClassVar[bytes] = b"L"
    TOPIC: ClassVar[str] = "consumer"
    FIELDS: ClassVar[tuple] = (("store", ADDRESS),)
    consumer: str
    store: str


@dataclass(slots=True, unsafe_hash=True)
class HeadsDone:
    """Our extension: a store reader has sent every DIRECT-HEAD it holds for `subject` to
    `consumer`, so the consumer need not wait out a window for stores that hold nothing.
    Its ID is one no reference node subscribes to: they never receive it."""

    ID: ClassVar[bytes] = b"Z"
    TOPIC: ClassVar[str] = "consumer"
    FIELDS: ClassVar[tuple] = (("store", ADDRESS), ("subject", STRING))
    consumer: str
    store: str
    subject: str


@dataclass(slots=True, unsafe_hash=True)
class Fence:
    """Our extension: a gateway that leads, or would lead, a partition at leader `epoch` asks
    the stores to refuse its records of older epochs. With `start` NO_START it is a claim,
    each store answers FENCED; with `start`, the first sequence the leader publishes, it is
    the leader's announcement, unanswered: older epochs' records from `start` on are refused
    (and truncated where held), those below are the leader's log too, whose epochs
    (epoch, first sequence) `epochs` lists, so that a store truncates where its own differ."""

    ID: ClassVar[bytes] = b"X"
    TOPIC: ClassVar[str] = "partition"
    FIELDS: ClassVar[tuple] = (("requester", ADDRESS), ("subject", STRING), ("epoch", I32), ("start", U64),
                               ("epochs", EPOCHS))
    partition: str
    requester: str
    subject: str
    epoch: int
    start: int = NO_START
    epochs: tuple[tuple[int, int], ...] = ()


@dataclass(slots=True, unsafe_hash=True)
class Fenced:
    """Our extension: a store writer's answer to a FENCE claim, sent to the requester once
    the outcome is durable. `epoch` is the store's fence epoch now (the claim's if
    `accepted`); `head` the last sequence it holds (-1: none) and `head_epoch` that record's
    leader epoch (-1: unknown), so that the claimant continues the longest log of the
    newest epoch; `epochs` where each epoch it holds starts, as far as it knows."""

    ID: ClassVar[bytes] = b"Y"
    TOPIC: ClassVar[str] = "requester"
    FIELDS: ClassVar[tuple] = (("store", ADDRESS), ("partition", ADDRESS), ("subject", STRING), ("epoch", I32),
                               ("accepted", U8), ("next_sequence", U64), ("head_epoch", I32), ("epochs", EPOCHS))
    requester: str
    store: str
    partition: str
    subject: str
    epoch: int
    accepted: int
    next_sequence: int  # head + 1
    head_epoch: int
    epochs: tuple[tuple[int, int], ...] = ()

    @property
    def head(self) -> int:
        return self.next_sequence - 1


@dataclass(slots=True, unsafe_hash=True)
class EpochAck:
    """Our extension: ACK of a fenced partition, naming the leader epoch of the record at
    `sequence`, so that only the leader of that epoch counts it (a deposed leader publishing
    the same sequences must not)."""

    ID: ClassVar[bytes] = b"V"
    TOPIC: ClassVar[str] = "partition"
    FIELDS: ClassVar[tuple] = (("subject", STRING), ("sequence", U64), ("epoch", I32))
    partition: str
    subject: str
    sequence: int
    epoch: int


Message = Union[
    Record, DirectRecord, Fetch, Ack, Head, DirectHead, GetHeads, ConsumerHello, StoreHello, HeadsDone,
    Fence, Fenced, EpochAck,
]
MESSAGE_TYPES = (Record, DirectRecord, Fetch, Ack, Head, DirectHead, GetHeads, ConsumerHello, StoreHello,
                 HeadsDone, Fence, Fenced, EpochAck)
_BY_ID = {cls.ID[0]: cls for cls in MESSAGE_TYPES}
_WITH_CONTENT = (Record, DirectRecord)
# Topic kinds: an address where the topic names a node, else a topic name.
_TOPIC_KIND = {cls: STRING if cls.TOPIC == "subject" else ADDRESS for cls in MESSAGE_TYPES}
# Whether the topic part is a field of its own or repeats a wire field.
_TOPIC_OWN = {cls: all(name != cls.TOPIC for name, _ in cls.FIELDS) for cls in MESSAGE_TYPES}
_ARGUMENTS = {cls: tuple(f.name for f in fields(cls)) for cls in MESSAGE_TYPES}


def subscription(message_type: type, topic: str = "") -> bytes:
    """The ZeroMQ subscription prefix for `message_type` on `topic` ("" for all)."""
    return message_type.ID + topic.encode()


def decode_subscription(frame: Buffer) -> tuple[bool, bytes]:
    """An XPUB subscription event: (subscribed, prefix); DecodeError otherwise."""
    raw = bytes(frame)
    if not raw or raw[0] > 1:
        raise DecodeError("not a subscription event", 0)
    return raw[0] == 1, raw[1:]


def subscribed_address(frame: Buffer, message_type: type) -> str | None:
    """The address in an XPUB event subscribing to `message_type` + address, else None."""
    return _event_address(frame, message_type, subscribed=True)


def unsubscribed_address(frame: Buffer, message_type: type) -> str | None:
    """The address in an XPUB event unsubscribing from `message_type` + address, else None."""
    return _event_address(frame, message_type, subscribed=False)


def _event_address(frame: Buffer, message_type: type, *, subscribed: bool) -> str | None:
    try:
        is_subscription, prefix = decode_subscription(frame)
    except DecodeError:
        return None
    if is_subscription == subscribed and prefix[:1] == message_type.ID and ADDRESS_PATTERN.match(prefix, 1):
        return prefix[1:].decode("ascii")
    return None


def encode(message: Message) -> list[Buffer]:
    """The frames of `message`; a content frame is the caller's buffer itself."""
    cls = type(message)
    parts = [cls.ID, _encode_topic(getattr(message, cls.TOPIC)), b"\x00\x01"]
    for name, kind in cls.FIELDS:
        parts.append(_encode_field(kind, getattr(message, name), name))
    frame = b"".join(parts)
    if cls in _WITH_CONTENT:
        return [frame, message.content]
    return [frame]


def content_prefix(message: Record | DirectRecord | Head) -> bytes:
    """Frame 0 of `message` without its sequence: `prefix + encode_sequence(n)` frames
    sequence n of the same partition, subject (and requester) without the generic codec."""
    return encode(message)[0][: -_U64.size]


def decode(frames: Sequence[Buffer]) -> Message:
    """The message carried by `frames`; DecodeError if they are not one."""
    messages, errors = decode_many((frames,))
    if errors:
        raise errors[0]
    return messages[0]


def decode_many(batch: Iterable[Sequence[Buffer]]) -> tuple[list[Message], list[DecodeError]]:
    """The messages a batch carries, in order, and the errors of those that are not one. A
    RECORD or DIRECT-RECORD whose prefix was seen lately (_PREFIXES) is made here, without the
    generic decoder's call: a store receives every record so, and this halves its cost."""
    made_from, sequence_of, size = _PREFIXES.get, _U64.unpack_from, _U64.size
    messages, errors = [], []
    for frames in batch:
        if len(frames) == 2:
            frame = frames[0] if frames[0].__class__ is bytes else bytes(frames[0])
            if (made := made_from(frame[:-size])) is not None:
                messages.append(made(sequence_of(frame, len(frame) - size)[0], frames[1]))
                continue
        try:
            messages.append(_decode_generic(frames))
        except DecodeError as error:
            errors.append(error)
    return messages, errors


def _decode_generic(frames: Sequence[Buffer]) -> Message:
    """`decode` by the messages' layouts, without the prefix cache (which it fills)."""
    if not frames:
        raise DecodeError("no frames")
    frame = bytes(frames[0])
    if not frame:
        raise DecodeError("empty frame 0", 0)
    cls = _BY_ID.get(frame[0])
    if cls is None:
        raise DecodeError(f"unknown command id {frame[:1]!r}", 0)
    expected = 2 if cls in _WITH_CONTENT else 1
    if len(frames) != expected:
        raise DecodeError(f"{cls.__name__} has {len(frames)} frames, expected {expected}")
    end = frame.find(b"\x00", 1)
    if end < 0:
        raise DecodeError("topic not terminated", len(frame))
    if cls in _WITH_CONTENT and (message := _decode_content(cls, frames, frame, end)) is not None:
        return message
    values = {}
    if _TOPIC_OWN[cls]:
        values[cls.TOPIC] = _decode_text(frame[1:end], _TOPIC_KIND[cls], 1)
    if end + 1 >= len(frame) or frame[end + 1] != VERSION:
        raise DecodeError("missing or unknown version", end + 1)
    position = end + 2
    for name, kind in cls.FIELDS:
        values[name], position = _decode_field(kind, frame, position)
    if position != len(frame):
        raise DecodeError("trailing bytes", position)
    if cls in _WITH_CONTENT:
        values["content"] = frames[1]
    return cls(*(values[name] for name in _ARGUMENTS[cls]))


def _decode_content(cls, frames: Sequence[Buffer], frame: bytes, end: int) -> Record | DirectRecord | None:
    """A well-formed RECORD or DIRECT-RECORD, else None (the generic decoder then finds what
    is wrong). Frame 0 differs from the partition's previous one only in its sequence, so the
    fields before it are decoded once per prefix, which `decode_many` looks up first (_PREFIXES):
    a prefix held there is a well-formed one of its own message type."""
    prefix = frame[: -_U64.size]
    known = _fields_before_sequence(cls, frame, end)
    if known is None:
        return None
    if len(_PREFIXES) >= _PREFIXES_HELD:
        _PREFIXES.clear()
    _PREFIXES[prefix] = partial(cls, *known)
    return cls(*known, _U64.unpack_from(frame, len(prefix))[0], frames[1])


# frame 0 but its sequence -> its message type with the fields before the sequence given
_PREFIXES: dict[bytes, partial] = {}
_PREFIXES_HELD = 4096  # prefixes, one per partition (and requester) lately received; then it starts over


def _fields_before_sequence(cls, frame: bytes, end: int) -> tuple[str, ...] | None:
    """(requester of a DIRECT-RECORD,) partition, subject; None if malformed."""
    fields = _CONTENT_FIELDS.match(frame, end + 1)
    if fields is None:
        return None
    start = fields.end()
    stop = start + fields[2][0]
    if len(frame) != stop + _U64.size:
        return None
    try:
        subject = frame[start:stop].decode()
    except UnicodeDecodeError:
        return None
    partition = fields[1].decode("ascii")
    if cls is Record:
        return partition, subject
    requester = frame[1:end]
    if not ADDRESS_PATTERN.match(requester):
        return None
    return requester.decode("ascii"), partition, subject


def _encode_topic(topic: str) -> bytes:
    raw = topic.encode()
    if b"\x00" in raw:
        raise EncodeError("a topic cannot contain NUL")
    return raw


def _encode_field(kind: str, value, name: str) -> bytes:
    try:
        if kind in _NUMBERS:
            return _NUMBERS[kind].pack(value)
        if kind == STRINGS:
            items = [item.encode() for item in value]
            return _U32.pack(len(items)) + b"".join(_U32.pack(len(i)) + i for i in items)
        if kind == EPOCHS:
            return _U32.pack(len(value)) + b"".join(_EPOCH_START.pack(*pair) for pair in value)
    except struct.error as error:
        raise EncodeError(f"{name}: {error}") from None
    raw = value.encode()
    if kind == ADDRESS and not ADDRESS_PATTERN.match(raw):
        raise EncodeError(f"{name} is not 32 upper-case hex characters: {value!r}")
    if len(raw) > 255:
        raise EncodeError(f"{name} is longer than 255 bytes")
    return bytes((len(raw),)) + raw


def _decode_field(kind: str, frame: bytes, position: int) -> tuple[object, int]:
    if kind in _NUMBERS:
        layout = _NUMBERS[kind]
        return _unpack(layout, frame, position), position + layout.size
    if kind == STRINGS:
        count = _unpack(_U32, frame, position)
        position += 4
        if count > len(frame) - position:  # each item takes at least 4 bytes
            raise DecodeError("strings count exceeds the frame", position - 4)
        items = []
        for _ in range(count):
            size = _unpack(_U32, frame, position)
            items.append(_decode_text(_slice(frame, position + 4, size), STRING, position + 4))
            position += 4 + size
        return tuple(items), position
    if kind == EPOCHS:
        count = _unpack(_U32, frame, position)
        end = position + 4 + count * _EPOCH_START.size
        if end > len(frame):
            raise DecodeError("epochs count exceeds the frame", position)
        pairs = tuple(_EPOCH_START.iter_unpack(frame[position + 4 : end]))
        return pairs, end
    if position >= len(frame):
        raise DecodeError("truncated string length", position)
    size = frame[position]
    raw = _slice(frame, position + 1, size)
    return _decode_text(raw, kind, position + 1), position + 1 + size


def _decode_text(raw: bytes, kind: str, position: int) -> str:
    if kind == ADDRESS:
        if not ADDRESS_PATTERN.match(raw):
            raise DecodeError("address is not 32 upper-case hex characters", position)
        return raw.decode("ascii")
    try:
        return raw.decode()
    except UnicodeDecodeError:
        raise DecodeError("text is not UTF-8", position) from None


def _slice(frame: bytes, position: int, size: int) -> bytes:
    if position + size > len(frame):
        raise DecodeError("truncated field", position)
    return frame[position : position + size]


def _unpack(layout: struct.Struct, frame: bytes, position: int) -> int:
    try:
        return layout.unpack_from(frame, position)[0]
    except struct.error:
        raise DecodeError("truncated number", position) from None
