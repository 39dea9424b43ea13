"""Discard directives: how a gateway tells the stores which records no client can read any more.

A directive is one JSON record {"subject", "address", "before"} on the reserved
subject DISCARD_SUBJECT: no client or replay reads the records of that partition
with a sequence below `before` any more (they lie below a Kafka log start, in a
deleted topic, or in an older journal generation). A partition's directives
only grow, so a lost one is superseded by the next.

The directive of a compacted topic's partition also carries "compact", what the
stores may clean (see `Compaction`); a directive without it stops cleaning. The
directive of a deleted topic's partition carries "deleted": true, and the stores
delete the partition whole (its files and fence), as Kafka deletes a deleted
topic's log directories.
"""

from __future__ import annotations

import json
from typing import NamedTuple

RESERVED_PREFIX = "__dafka_gateway_"  # the gateway's own subjects: journals and directives
DISCARD_SUBJECT = RESERVED_PREFIX + "discard"


class Compaction(NamedTuple):
    """How far the stores may clean a partition, in sequences, and when (the gateway
    decides the positions, so every store cleans the same batches)."""

    clean_before: int  # the batches below are cleanable: never the active segment or past the stable end
    tombstones_before: int  # tombstones below were cleanable delete.retention.ms ago: they may go
    must_clean_before: int  # batches below waited max.compaction.lag.ms: cleaned whatever the dirty ratio
    dirty_ratio: float  # min.cleanable.dirty.ratio


class Discard(NamedTuple):
    subject: str
    address: str
    before: int
    compact: Compaction | None = None
    deleted: bool = False  # the partition's topic was deleted: nothing of it is read again


OPTIONAL_FIELDS = {"compact", "deleted"}


def encode_discard(discard: Discard) -> bytes:
    fields = discard._asdict()
    if discard.compact is None:
        del fields["compact"]
    else:
        fields["compact"] = discard.compact._asdict()
    if not discard.deleted:  # as before deletions were directed: older stores read it
        del fields["deleted"]
    return json.dumps(fields, separators=(",", ":")).encode()


def decode_discard(content) -> Discard:
    """The directive a record holds; ValueError if it holds none."""
    try:
        fields = json.loads(bytes(content))
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
    if not isinstance(fields, dict) or fields.keys() - OPTIONAL_FIELDS != set(Discard._fields[:3]):
        raise ValueError(f"a directive is an object of {', '.join(Discard._fields[:3])} "
                         f"and optionally {', '.join(sorted(OPTIONAL_FIELDS))}")
    discard = Discard(**fields)
    if not (isinstance(discard.subject, str) and isinstance(discard.address, str) and _is_sequence(discard.before)):
        raise ValueError("subject and address must be strings, before a sequence")
    if type(discard.deleted) is not bool:
        raise ValueError("deleted must be true or false")
    return discard._replace(compact=None if discard.compact is None else _compaction(discard.compact))


def _compaction(fields) -> Compaction:
    if not isinstance(fields, dict) or fields.keys() != set(Compaction._fields):
        raise ValueError(f"compact is an object of {', '.join(Compaction._fields)}")
    compaction = Compaction(**fields)
    if not (all(map(_is_sequence, compaction[:3])) and type(compaction.dirty_ratio) in (int, float)
            and 0 <= compaction.dirty_ratio <= 1):
        raise ValueError("compact holds three sequences and a ratio from 0 to 1")
    return compaction


def _is_sequence(value) -> bool:
    return type(value) is int and value >= 0
