"""The controller mutation rate as Kafka measures it (KIP-599): a token bucket.

The bucket holds up to quota x `quota.window.num` x `quota.window.size.seconds`
tokens, refilled at the quota per second; each partition created or deleted
takes one. A client that took more than the bucket held waits until it is
back at zero. Tokens are kept in seconds of quota, so a changed quota
applies at once.
"""

from __future__ import annotations


class TokenBucket:
    def __init__(self, samples: int, window_s: float):
        self.burst_s = samples * window_s
        self._tokens_s = self.burst_s
        self._last: float | None = None

    def _refill(self, now: float) -> float:
        if self._last is not None:
            self._tokens_s = min(self.burst_s, self._tokens_s + (now - self._last))
        self._last = now
        return self._tokens_s

    def record(self, value: float, bound: float, now: float) -> None:
        self._refill(now)
        self._tokens_s -= value / bound if bound > 0 else self.burst_s

    def throttle_ms(self, bound: float, now: float) -> int:
        return round(max(-self._refill(now), 0.0) * 1000)

    def idle(self, now: float) -> bool:
        return self._refill(now) >= self.burst_s
