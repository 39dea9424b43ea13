"""The consumer protocol embedded in JoinGroup and SyncGroup (Kafka's ConsumerProtocol).

A consumer's JoinGroup metadata is a ConsumerProtocolSubscription and the
assignment it gets back from SyncGroup a ConsumerProtocolAssignment, each
an int16 version and a non-flexible struct of that version. Versions above
the latest known are read as the latest: later versions only add fields.
"""

from __future__ import annotations

import struct
from functools import cache

from protocol.errors import DecodeError
from protocol.kafka.codec import decoded, struct_codec
from protocol.kafka.message_classes import build_class
from protocol.kafka.schema import F

LATEST_VERSION = 3
TOPIC_PARTITION = (
    F("topic", "string", map_key=True),
    F("partitions", "[]int32"),
)

Subscription = build_class("ConsumerProtocolSubscription", "ConsumerProtocolSubscription", (
    F("topics", "[]string"),
    F("user_data", "bytes", nullable="0+", default=None),
    F("owned_partitions", "[]", "1+", *TOPIC_PARTITION, ignorable=True),
    F("generation_id", "int32", "2+", default=-1, ignorable=True),
    F("rack_id", "string", "3+", nullable="0+", default=None, ignorable=True),
))
Assignment = build_class("ConsumerProtocolAssignment", "ConsumerProtocolAssignment", (
    F("assigned_partitions", "[]", "0+", *TOPIC_PARTITION),
    F("user_data", "bytes", nullable="0+", default=None),
))
_VERSION = struct.Struct(">h")


@cache
def _codec(cls: type, version: int):
    return struct_codec(cls, version, flexible=False)


def version_of(data: bytes) -> int:
    """The version a serialized subscription or assignment starts with."""
    if len(data) < _VERSION.size:
        raise DecodeError("consumer protocol data has no version")
    (version,) = _VERSION.unpack_from(data)
    if version < 0:
        raise DecodeError(f"unsupported consumer protocol version {version}")
    return version


def _decode(cls: type, data: bytes):
    version = min(version_of(data), LATEST_VERSION)
    message, _ = decoded(cls.__name__, _codec(cls, version).decode, memoryview(data), _VERSION.size)
    return message


def decode_subscription(data: bytes):
    """A ConsumerProtocolSubscription; DecodeError if malformed."""
    return _decode(Subscription, data)


def decode_assignment(data: bytes):
    """A ConsumerProtocolAssignment; DecodeError if malformed."""
    return _decode(Assignment, data)


def encode_assignment(partitions: dict[str, list[int]], version: int) -> bytes:
    """A ConsumerProtocolAssignment of `version` (clamped to the known ones) without user data."""
    version = max(0, min(version, LATEST_VERSION))
    message = Assignment(assigned_partitions=[
        Assignment.AssignedPartitions(topic=topic, partitions=sorted(numbers))
        for topic, numbers in sorted(partitions.items())])
    out = bytearray(_VERSION.pack(version))
    _codec(Assignment, version).encode(out, message)
    return bytes(out)


def subscribed_topics(metadata: bytes) -> set[str] | None:
    """The topic names a subscription of any version starts with (all a classic
    coordinator needs of it), or None if they are not readable; the rest is not checked."""
    try:
        (count,) = struct.unpack_from(">i", metadata, 2)
        position, topics = 6, set()
        for _ in range(count):
            (length,) = struct.unpack_from(">h", metadata, position)
            position += 2
            if length < 0 or position + length > len(metadata):
                return None
            topics.add(metadata[position:position + length].decode())
            position += length
        return topics
    except (struct.error, UnicodeDecodeError):
        return None
