"""The topics in a consumer's subscription, as the classic consumer protocol encodes it.

Every version of ConsumerProtocolSubscription starts with an int16 version
and an array of topic names; the coordinator needs no more of it.
"""

from __future__ import annotations

import struct


def subscribed_topics(metadata: bytes) -> set[str] | None:
    """The subscribed topic names, or None if the metadata is not readable."""
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
