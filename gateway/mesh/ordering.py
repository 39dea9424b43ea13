"""Puts one partition's records back in sequence order and says what to FETCH.

Used by consumers and store writers alike: records arrive live, late, twice,
or not at all (a publisher at its high-water mark drops them), and HEADs tell
how far the partition goes.
"""

from __future__ import annotations

import trio

from protocol.dafka import Fetch, encode

FETCH_BATCH = 1000  # records asked for per FETCH, so one answer cannot flood memory
FETCH_RETRY_S = 0.5  # ask again if the gap has not closed by then
MAX_BUFFERED_BYTES = 64 << 20  # content held ahead of a gap; beyond it, records are fetched again later


class PartitionSequencer:
    def __init__(self, next_sequence: int):
        self.next_sequence = next_sequence
        self.known_head = next_sequence - 1  # highest sequence known to exist
        self._ahead: dict[int, object] = {}
        self._ahead_bytes = 0
        self._fetch_end = -1  # the last sequence asked for by the outstanding FETCH
        self._fetch_deadline = 0.0
        self._asked_from = next_sequence  # next_sequence when the deadline was set

    @property
    def behind(self) -> bool:
        return self.known_head >= self.next_sequence

    def take_next(self, sequence: int) -> bool:
        """Whether `sequence` is the next one with none held ahead of it (the common case, which
        needs no list): if so it is taken."""
        if sequence != self.next_sequence or self._ahead:
            return False
        self.next_sequence = sequence + 1
        if sequence > self.known_head:
            self.known_head = sequence
        return True

    def offer(self, sequence: int, content) -> list[tuple[int, object]]:
        """The records now deliverable in order; duplicates and old records vanish."""
        if self.take_next(sequence):
            return [(sequence, content)]
        if sequence < self.next_sequence:
            return []
        self.known_head = max(self.known_head, sequence)
        if sequence > self.next_sequence:
            if sequence not in self._ahead and self._ahead_bytes < MAX_BUFFERED_BYTES:
                self._ahead[sequence] = content
                self._ahead_bytes += len(content)
            return []
        ready = [(sequence, content)]
        sequence += 1
        while self._ahead:
            content = self._ahead.pop(sequence, None)
            if content is None:
                break
            self._ahead_bytes -= len(content)
            ready.append((sequence, content))
            sequence += 1
        self.next_sequence = sequence
        return ready

    def skip_to(self, sequence: int) -> list[tuple[int, object]]:
        """Stop waiting for the records below `sequence`: they are gone for good (discarded).
        Returns the buffered records now deliverable from `sequence` on."""
        if sequence <= self.next_sequence:
            return []
        for below in [buffered for buffered in self._ahead if buffered < sequence]:
            self._ahead_bytes -= len(self._ahead.pop(below))
        self.next_sequence = sequence
        self.known_head = max(self.known_head, sequence - 1)
        self._fetch_end = -1  # the outstanding FETCH asked for what nobody holds
        content = self._ahead.pop(sequence, None)
        if content is None:
            return []
        self._ahead_bytes -= len(content)
        return self.offer(sequence, content)

    def rewind(self, sequence: int) -> None:
        """Take records again from `sequence` on: the one there was refused, or truncated."""
        self.next_sequence = sequence
        self._fetch_end = -1

    def note_head(self, sequence: int) -> None:
        self.known_head = max(self.known_head, sequence)

    def fetch_due(self, now: float) -> tuple[int, int] | None:
        """(first sequence, count) to FETCH now, or None if nothing is missing or asked.

        Once half of the outstanding FETCH has arrived, the next range is asked for
        already, so a long replay streams instead of waiting a round trip per FETCH.
        Such a FETCH extends the deadline only if records came in order since it was
        set: a lost FETCH or answer is asked again even while live records keep coming.
        """
        if not self.behind:
            return None
        first = self.next_sequence
        if first <= self._fetch_end and now < self._fetch_deadline:
            if self._fetch_end - first >= FETCH_BATCH // 2:
                return None
            first = self._fetch_end + 1
        last = self.known_head
        if self._ahead:
            last = min(min(self._ahead) - 1, last) if first == self.next_sequence else last
        count = min(FETCH_BATCH, last - first + 1)
        if count <= 0:
            return None
        self._fetch_end = first + count - 1
        if first == self.next_sequence or self.next_sequence > self._asked_from:
            self._fetch_deadline = now + FETCH_RETRY_S
            self._asked_from = self.next_sequence
        return first, count


class Sequencers(dict):
    """(subject, partition) -> PartitionSequencer, for a node that FETCHes its gaps."""

    def fetches_due(self, keys, requester: str, now: float) -> list[list]:
        """Encoded FETCHes, sent by `requester`, for those of `keys` that lag."""
        fetches = []
        for subject, partition in keys:
            due = self[(subject, partition)].fetch_due(now)
            if due is not None:
                fetches.append(encode(Fetch(partition, requester, subject, *due)))
        return fetches

    def lagging(self) -> list[tuple[str, str]]:
        return [key for key, sequencer in self.items() if sequencer.behind]


async def fill_gaps(node, sequencers: Sequencers, keys) -> None:
    """FETCH what is missing from `keys` on behalf of `node` (nothing missing: no scheduling point)."""
    fetches = sequencers.fetches_due(keys, node.uuid, trio.current_time())
    if fetches:
        await node.publisher.send_batch(fetches)


async def keep_filling_gaps(node, sequencers: Sequencers) -> None:
    """Ask again for gaps that are still open, even when no traffic arrives."""
    while True:
        await trio.sleep(FETCH_RETRY_S)
        await fill_gaps(node, sequencers, sequencers.lagging())
