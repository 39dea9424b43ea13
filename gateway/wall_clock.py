"""The wall clock in milliseconds since the epoch: Kafka's timestamps, and expiries that mean
the same on every host (durations and timeouts use trio's clock instead)."""

from __future__ import annotations

import time


def now_ms() -> int:
    return time.time_ns() // 1_000_000
