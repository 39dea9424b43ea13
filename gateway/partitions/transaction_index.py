"""Transactions seen by one partition: the last stable offset and the aborted ones.

A transaction is unstable from its first batch until its marker is below the
high watermark; the last stable offset (LSO) is the first offset of the
oldest unstable transaction, or the high watermark. read_committed consumers
read up to the LSO and skip the records of the aborted transactions listed
with each fetch, so every aborted transaction is remembered with its first
and last (marker) offset, until compaction removes its marker (Kafka's cleaner
drops the transaction index entry with the marker).

A forgotten transaction stays known as cleaned, and so does one whose marker
start-up replays emptied: with several stores, a read may still take its
records, or its marker not emptied, from a store that has not cleaned yet, and
reads drop those batches (`in_cleaned_transaction`) so that every consumer sees
the cleaned log whichever store answers. A cleaned transaction, one (first,
marker) pair, is kept until the log start passes its marker: a compacted topic
without retention keeps them all, as it kept them aborted.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass


@dataclass(frozen=True)
class AbortedTransaction:
    producer_id: int
    first_offset: int
    last_offset: int  # the offset of its ABORT marker


class TransactionIndex:
    def __init__(self):
        self.ongoing: dict[int, int] = {}  # producer id -> first offset of its open transaction
        self._ending: list[tuple[int, int]] = []  # (first offset, marker offset) not yet stable
        self._aborted: list[AbortedTransaction] = []  # in marker order
        self._aborted_ends: list[int] = []
        self._cleaned: dict[int, list[tuple[int, int]]] = {}  # producer id -> (first, marker) ascending
        self.forgotten = 0  # aborted transactions forgotten so far: a read that saw one go is done again

    def begin(self, producer_id: int, first_offset: int) -> None:
        """Note a transactional batch; the first of a transaction opens it."""
        self.ongoing.setdefault(producer_id, first_offset)

    def end(self, producer_id: int, marker_offset: int, *, aborted: bool | None) -> None:
        """A marker closes the producer's transaction (a marker for none changes nothing).
        `aborted` None: a marker replayed emptied, of either kind; its transaction is kept
        as cleaned, as nothing of it is left in the store it came from, and all stores
        clean alike."""
        first = self.ongoing.pop(producer_id, None)
        if first is None:
            return
        self._ending.append((first, marker_offset))
        if aborted is None:
            self._clean(producer_id, first, marker_offset)
        elif aborted:
            self._aborted.append(AbortedTransaction(producer_id, first, marker_offset))
            self._aborted_ends.append(marker_offset)

    def _clean(self, producer_id: int, first_offset: int, marker_offset: int) -> None:
        bisect.insort(self._cleaned.setdefault(producer_id, []), (first_offset, marker_offset))

    def last_stable_offset(self, high_watermark: int) -> int:
        self._ending = [(first, marker) for first, marker in self._ending if marker >= high_watermark]
        firsts = [*self.ongoing.values(), *(first for first, _ in self._ending)]
        return min([high_watermark, *firsts])

    def aborted_between(self, start: int, end: int) -> list[AbortedTransaction]:
        """Aborted transactions with records in [start, end)."""
        since = bisect.bisect_left(self._aborted_ends, start)
        return [t for t in self._aborted[since:] if t.first_offset < end]

    def forget_aborted(self, marker_offset: int) -> None:
        """The ABORT marker at `marker_offset` is gone (compaction emptied it, its records
        went first): no consumer can meet the transaction any more."""
        at = bisect.bisect_left(self._aborted_ends, marker_offset)
        if at < len(self._aborted_ends) and self._aborted_ends[at] == marker_offset:
            aborted = self._aborted.pop(at)
            del self._aborted_ends[at]
            self._clean(aborted.producer_id, aborted.first_offset, aborted.last_offset)
            self.forgotten += 1

    @property
    def has_cleaned(self) -> bool:
        return bool(self._cleaned)

    def in_cleaned_transaction(self, producer_id: int, offset: int) -> bool:
        """Whether a transactional batch of `producer_id` at `offset` belongs to a cleaned
        transaction, its marker included (a producer has one transaction at a time)."""
        ranges = self._cleaned.get(producer_id)
        if not ranges:
            return False
        at = bisect.bisect_right(ranges, (offset, math.inf)) - 1
        return at >= 0 and offset <= ranges[at][1]

    def drop_cleaned_before(self, offset: int) -> None:
        """The log starts at `offset` now: no read meets the cleaned transactions ending below."""
        for producer_id, ranges in list(self._cleaned.items()):
            kept = [(first, marker) for first, marker in ranges if marker >= offset]
            if kept:
                self._cleaned[producer_id] = kept
            else:
                del self._cleaned[producer_id]

    def aborted_before(self, offset: int) -> list[AbortedTransaction]:
        """Aborted transactions whose marker lies below `offset`, oldest first."""
        return self._aborted[:bisect.bisect_left(self._aborted_ends, offset)]

    def state(self) -> dict:
        """What a checkpoint keeps, as plain lists."""
        return {"ongoing": [list(item) for item in self.ongoing.items()],
                "ending": [list(item) for item in self._ending],
                "aborted": [[t.producer_id, t.first_offset, t.last_offset] for t in self._aborted],
                "cleaned": [[producer_id, first, marker] for producer_id, ranges in self._cleaned.items()
                            for first, marker in ranges]}

    @classmethod
    def restored(cls, state: dict) -> TransactionIndex:
        index = cls()
        index.ongoing = {producer_id: first for producer_id, first in state["ongoing"]}
        index._ending = [(first, marker) for first, marker in state["ending"]]
        index._aborted = [AbortedTransaction(*fields) for fields in state["aborted"]]
        index._aborted_ends = [t.last_offset for t in index._aborted]
        for producer_id, first, marker in sorted(state.get("cleaned", ())):  # absent in older checkpoints
            index._cleaned.setdefault(producer_id, []).append((first, marker))
        return index
