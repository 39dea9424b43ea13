"""The cluster as clients see it: its id, its brokers and where each is reached.

Today the cluster is this gateway alone, its own controller; a client is
told the endpoint advertised for the listener it connected through.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gateway.settings.listeners import Listener
from gateway.settings.table import BrokerSettings


@dataclass(frozen=True)
class BrokerEndpoint:
    node_id: int
    host: str
    port: int
    rack: str | None = None


class ClusterView:
    def __init__(self, settings: BrokerSettings):
        self.cluster_id = settings.cluster_id
        self.node_id = settings.node_id
        self._advertised = {listener.name: listener for listener in settings.client_listeners()}

    @property
    def controller_id(self) -> int:
        return self.node_id

    def bound(self, ports: dict[str, int]) -> None:
        """Advertise the ports the system chose for listeners bound on port 0."""
        self._advertised = {name: replace(listener, port=listener.port or ports[name])
                            for name, listener in self._advertised.items()}

    def brokers(self, listener: str) -> list[BrokerEndpoint]:
        """Every live broker, with its endpoint on `listener`."""
        return [self.this_broker(listener)]

    def this_broker(self, listener: str) -> BrokerEndpoint:
        advertised = self._advertised[listener]
        return BrokerEndpoint(self.node_id, advertised.host, advertised.port)

    def advertised_listeners(self) -> tuple[Listener, ...]:
        return tuple(self._advertised.values())
