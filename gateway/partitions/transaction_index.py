"""Transactions seen by one partition: the last stable offset and the aborted ones.

A transaction is unstable from its first batch until its marker is below the
high watermark; the last stable offset (LSO) is the first offset of the
oldest unstable transaction, or the high watermark. read_committed consumers
read up to the LSO and skip the records of the aborted transactions listed
with each fetch, so every aborted transaction is remembered with its first
and last (marker) offset, until compaction removes its marker (Kafka's cleaner
drops the transaction index entry with the marker).
"""

from __future__ import annotations

import bisect
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
        self.forgotten = 0  # aborted transactions forgotten so far: a read that saw one go is done again

    def begin(self, producer_id: int, first_offset: int) -> None:
        """Note a transactional batch; the first of a transaction opens it."""
        self.ongoing.setdefault(producer_id, first_offset)

    def end(self, producer_id: int, marker_offset: int, *, aborted: bool) -> None:
        """A marker closes the producer's transaction (a marker for none changes nothing)."""
        first = self.ongoing.pop(producer_id, None)
        if first is None:
            return
        self._ending.append((first, marker_offset))
        if aborted:
            self._aborted.append(AbortedTransaction(producer_id, first, marker_offset))
            self._aborted_ends.append(marker_offset)

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
            del self._aborted[at], self._aborted_ends[at]
            self.forgotten += 1

    def aborted_before(self, offset: int) -> list[AbortedTransaction]:
        """Aborted transactions whose marker lies below `offset`, oldest first."""
        return self._aborted[:bisect.bisect_left(self._aborted_ends, offset)]

    def state(self) -> dict:
        """What a checkpoint keeps, as plain lists."""
        return {"ongoing": [list(item) for item in self.ongoing.items()],
                "ending": [list(item) for item in self._ending],
                "aborted": [[t.producer_id, t.first_offset, t.last_offset] for t in self._aborted]}

    @classmethod
    def restored(cls, state: dict) -> TransactionIndex:
        index = cls()
        index.ongoing = {producer_id: first for producer_id, first in state["ongoing"]}
        index._ending = [(first, marker) for first, marker in state["ending"]]
        index._aborted = [AbortedTransaction(*fields) for fields in state["aborted"]]
        index._aborted_ends = [t.last_offset for t in index._aborted]
        return index
