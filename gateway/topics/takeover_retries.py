"""When a partition whose takeover failed is tried again.

A gateway named leader of a partition may fail to take it over: too few
stores accept its claim, or none returns the log to read back in time. The
partition then stays unled here (clients are told NOT_LEADER_OR_FOLLOWER and
look again) and the takeover is tried again after a backoff that doubles with
every failure at the same epoch, until it succeeds or the leadership moves.
"""

from __future__ import annotations

from dataclasses import dataclass

import trio

BACKOFF_S = (0.5, 5.0)  # the first and the longest wait before a failed takeover is tried again

Partition = tuple[str, int]  # (topic id, index)


@dataclass(frozen=True)
class Failure:
    epoch: int
    attempts: int  # failed in a row at this epoch
    due: float  # trio time of the next attempt

    @property
    def wait_s(self) -> float:
        return max(0.0, self.due - trio.current_time())


class TakeoverRetries:
    def __init__(self):
        self._failures: dict[Partition, Failure] = {}

    def due(self, partition: Partition, epoch: int) -> bool:
        """Whether to try taking `partition` over at `epoch` now."""
        failure = self._failures.get(partition)
        return failure is None or failure.epoch != epoch or failure.wait_s == 0

    def failed(self, partition: Partition, epoch: int) -> Failure:
        previous = self._failures.get(partition)
        attempts = 1 if previous is None or previous.epoch != epoch else previous.attempts + 1
        first, longest = BACKOFF_S
        failure = Failure(epoch, attempts, trio.current_time() + min(first * 2 ** (attempts - 1), longest))
        self._failures[partition] = failure
        return failure

    def succeeded(self, partition: Partition) -> None:
        self._failures.pop(partition, None)

    def next_wait_s(self, wanted: dict[Partition, int]) -> float | None:
        """Seconds until the next takeover still `wanted` (partition -> epoch) is due, None if
        none failed; those led elsewhere or at another epoch now are forgotten."""
        self._failures = {partition: failure for partition, failure in self._failures.items()
                          if wanted.get(partition) == failure.epoch}
        return min((failure.wait_s for failure in self._failures.values()), default=None)
