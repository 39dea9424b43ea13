"""Discard directives: how a gateway tells the stores which records no client can read any more.

A directive is one JSON record {"subject", "address", "before"} on the reserved
subject DISCARD_SUBJECT: no client or replay reads the records of that partition
with a sequence below `before` any more (they lie below a Kafka log start, in a
deleted topic, or in an older journal generation). A partition's directives
only grow, so a lost one is superseded by the next.
"""

from __future__ import annotations

import json
from typing import NamedTuple

RESERVED_PREFIX = "__dafka_gateway_"  # the gateway's own subjects: journals and directives
DISCARD_SUBJECT = RESERVED_PREFIX + "discard"


class Discard(NamedTuple):
    subject: str
    address: str
    before: int


def encode_discard(discard: Discard) -> bytes:
    return json.dumps(discard._asdict(), separators=(",", ":")).encode()


def decode_discard(content) -> Discard:
    """The directive a record holds; ValueError if it holds none."""
    try:
        fields = json.loads(bytes(content))
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
    if not isinstance(fields, dict) or fields.keys() != set(Discard._fields):
        raise ValueError(f"a directive is an object of {', '.join(Discard._fields)}")
    discard = Discard(**fields)
    if not (isinstance(discard.subject, str) and isinstance(discard.address, str)
            and type(discard.before) is int and discard.before >= 0):
        raise ValueError("subject and address must be strings, before a sequence")
    return discard
