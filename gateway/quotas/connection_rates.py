"""Connection creation rates bounded as Kafka bounds them (KIP-612).

Two bounds, each measured over `quota.window.num` samples like every quota:
the broker's `max.connection.creation.rate`, over all listeners, which
makes accepting wait once new connections come faster (the client waits,
unaware), and the `connection_creation_rate` quota of an IP address (set
with AlterClientQuotas on the `ip` entity, or its default), over which a
connection is accepted but closed once its throttle time has passed, so
that the client does not reconnect at once.
"""

from __future__ import annotations

from collections.abc import Callable

import trio

from gateway.quotas.quota_store import ClientQuotas
from gateway.quotas.rate import Rate

UNLIMITED = 2**31 - 1  # Kafka's default rate: no bound


class ConnectionRates:
    def __init__(self, quotas: Callable[[], ClientQuotas], max_rate: Callable[[], int], window_num: int,
                 window_size_s: int):
        self.quotas = quotas  # those now serving: a gateway that becomes the controller replaces them
        self.max_rate = max_rate  # max.connection.creation.rate now: a dynamic config changes it
        self._accepted = Rate(window_num, window_size_s)

    def accept_delay_s(self) -> float:
        """Count a connection just accepted against max.connection.creation.rate: how long
        accepting waits before serving it."""
        max_rate = self.max_rate()
        if max_rate >= UNLIMITED:
            return 0.0
        now = trio.current_time()
        self._accepted.record(1, max_rate, now)
        return self._accepted.throttle_ms(max_rate, now) / 1000

    def ip_throttle_s(self, address: str) -> float:
        """Count the connection against its IP's quota: how long it is throttled (then closed), 0 if not."""
        return self.quotas().record_connection(address) / 1000
