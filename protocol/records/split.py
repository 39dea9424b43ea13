"""Cutting a records blob (what Produce and Fetch carry) into entries.

Entries are v2 batches or legacy messages, told apart by their magic byte;
nothing is decompressed or copied.
"""

from __future__ import annotations

from typing import NamedTuple

from protocol.errors import DecodeError
from protocol.records.batch import RecordBatch
from protocol.records.entry_prefix import MAGIC_POSITION, split_frames
from protocol.records.legacy import LegacyMessage

Entry = RecordBatch | LegacyMessage


class Split(NamedTuple):
    entries: list[Entry]
    truncated: int  # bytes of an incomplete trailing entry (Fetch only)


def split_records(data: bytes | memoryview, *, allow_truncated: bool = False) -> Split:
    """The entries of `data`; DecodeError on malformed input.

    Produce input must be complete. Fetch-side callers pass
    `allow_truncated` to accept (and skip) a partial last entry.
    """
    frames, truncated = split_frames(data, allow_truncated=allow_truncated)
    entries = []
    start = 0
    for frame in frames:
        try:
            entries.append(_entry(frame))
        except DecodeError as error:
            raise DecodeError(error.reason, start + (error.offset or 0)) from None
        start += len(frame)
    return Split(entries, truncated)


def _entry(frame: memoryview) -> Entry:
    magic = frame[MAGIC_POSITION]
    if magic == 2:
        return RecordBatch(frame)
    if magic < 2:
        return LegacyMessage(frame)
    raise DecodeError(f"unknown magic {magic}", MAGIC_POSITION)
