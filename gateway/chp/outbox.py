"""The active server's sequenced updates that wait for the passive before they are published.

While a passive follows this server, an update goes out to clients only
once the passive acknowledged it, so no client sees a state a successor
lacks. Without a following passive (none, or silent for a peer timeout)
updates are published at once.
"""

from collections import deque

from protocol.chp import KVMsg


class Outbox:
    def __init__(self, published: int = 0):
        self.published = published
        self.acknowledged = 0
        self.replicating = False
        self._waiting: deque[KVMsg] = deque()

    def add(self, msg: KVMsg) -> None:
        self._waiting.append(msg)

    def releasable(self) -> list[KVMsg]:
        """The updates that may be published now, in order; they count as published."""
        released = []
        while self._waiting and (not self.replicating or self._waiting[0].sequence <= self.acknowledged):
            released.append(self._waiting.popleft())
        if released:
            self.published = released[-1].sequence
        return released

    def follow(self) -> None:
        """A passive is taking our hashmap: from now on wait for its acknowledgements."""
        self.replicating = True

    def acknowledge(self, sequence: int) -> None:
        self.acknowledged = max(self.acknowledged, sequence)

    def alone(self) -> None:
        """The passive is gone: stop waiting for it."""
        self.replicating = False
