"""A rate measured as Kafka's quota sensors measure it.

Kafka's Rate keeps `quota.window.num` samples of `quota.window.size.seconds`
each; the rate is the samples' total over the time they span, never counted
as less than all but one window, so a burst after a quiet time is measured
against the whole window and not against the moment it took.
"""

from __future__ import annotations

from collections import deque


class Rate:
    def __init__(self, samples: int, window_s: float):
        self.samples = samples
        self.window_s = window_s
        self._windows: deque[list[float]] = deque()  # [start, total] of each sample, oldest first

    def record(self, value: float, bound: float, now: float) -> None:
        """Count `value` (the bound plays no part in a rate: taken for a token bucket's sake)."""
        self._purge(now)
        if not self._windows or now >= self._windows[-1][0] + self.window_s:
            self._windows.append([now, 0.0])
            if len(self._windows) > self.samples:
                self._windows.popleft()
        self._windows[-1][1] += value

    def unrecord(self, value: float) -> None:
        if self._windows:
            self._windows[-1][1] -= value

    def span_s(self, now: float) -> float:
        """The time the rate is measured over (Kafka's Rate.windowSize)."""
        self._purge(now)
        elapsed = now - self._windows[0][0] if self._windows else 0.0
        full = int(elapsed // self.window_s)
        return elapsed + max(self.samples - 1 - full, 0) * self.window_s

    def per_second(self, now: float) -> float:
        return sum(total for _, total in self._windows) / self.span_s(now)

    def throttle_ms(self, bound: float, now: float) -> int:
        """How long a client whose rate is above `bound` must wait for it to fall back to it
        (Kafka's QuotaUtils.throttleTime); 0 within the bound."""
        value = self.per_second(now)
        if value <= bound:
            return 0
        span_ms = self.span_s(now) * 1000
        if bound <= 0:
            return round(span_ms)
        return round((value - bound) / bound * span_ms)

    def idle(self, now: float) -> bool:
        """Whether every sample has expired: the rate may be forgotten."""
        self._purge(now)
        return not self._windows

    def _purge(self, now: float) -> None:
        expired = now - self.samples * self.window_s
        while self._windows and self._windows[0][0] <= expired:
            self._windows.popleft()
