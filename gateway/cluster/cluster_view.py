"""The cluster as clients see it: its id, its brokers and where each is reached.

Alone (no `chp.servers`) the cluster is this gateway, its own controller.
In a cluster the brokers are the live gateways CHP lists (membership.py); a
client is told the endpoint each advertises for the listener it connected
through. A partition's replicas are the gateways that may lead it (replicas.py),
its in-sync replicas the live ones among them; alone, this gateway is both.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from gateway.cluster.leadership import Leaders
from gateway.cluster.membership import Membership
from gateway.cluster.preferred_leaders import Elections
from gateway.cluster.replicas import replicas_of
from gateway.settings.listeners import Listener
from gateway.settings.table import BrokerSettings
from protocol.kafka.error_codes import ErrorCode


@dataclass(frozen=True)
class BrokerEndpoint:
    node_id: int
    host: str
    port: int
    rack: str | None = None


class ClusterView:
    def __init__(self, settings: BrokerSettings, membership: Membership | None = None, leaders: Leaders | None = None,
                 elections: Elections | None = None):
        self.cluster_id = settings.cluster_id
        self.node_id = settings.node_id
        self.rack = settings.broker_rack
        self.membership = membership
        self.leaders = leaders
        self.elections = elections
        self._advertised = {listener.name: listener for listener in settings.client_listeners()}

    @property
    def is_cluster(self) -> bool:
        """Whether other gateways may share the work (`chp.servers` given)."""
        return self.membership is not None

    @property
    def controller_id(self) -> int:
        return self.node_id if self.membership is None else self.membership.controller_id

    def bound(self, ports: dict[str, int]) -> None:
        """Advertise the ports the system chose for listeners bound on port 0."""
        self._advertised = {name: replace(listener, port=listener.port or ports[name])
                            for name, listener in self._advertised.items()}

    def brokers(self, listener: str) -> list[BrokerEndpoint]:
        """Every live broker, with its endpoint on `listener`."""
        if self.membership is None:
            return [self.this_broker(listener)]
        return [BrokerEndpoint(member.node_id, *member.listeners[listener], member.rack)
                for member in sorted(self.membership.members().values(), key=lambda m: m.node_id)
                if listener in member.listeners]

    def broker(self, node_id: int, listener: str) -> BrokerEndpoint | None:
        return next((b for b in self.brokers(listener) if b.node_id == node_id), None)

    def this_broker(self, listener: str) -> BrokerEndpoint:
        advertised = self._advertised[listener]
        return BrokerEndpoint(self.node_id, advertised.host, advertised.port, self.rack)

    def coordinator(self, listener: str, partition: tuple[str, int] | None = None) -> BrokerEndpoint | None:
        """The coordinator of what is kept in `partition` ((topic id, index) of an internal topic): this
        gateway alone; in a cluster the partition's leader (the controller for a share group's key)."""
        if self.membership is None:
            return self.this_broker(listener)
        if partition is None:
            return self.broker(self.controller_id, listener)
        leader = self.leaders.leader(*partition)
        return None if leader is None else self.broker(leader[0], listener)

    def leader(self, topic, index: int) -> tuple[int, int]:
        """(leader node id, leader epoch) of a partition; (-1, -1) while it has none."""
        return self.leadership(topic)(index)[:2]

    def replicas(self, topic, index: int) -> tuple[list[int], list[int]]:
        """(replicas, in-sync replicas) of a partition, its preferred leader first."""
        return self.leadership(topic)(index)[2:]

    def leadership(self, topic) -> Callable[[int], tuple[int, int, list[int], list[int]]]:
        """index -> (leader, leader epoch, replicas, in-sync replicas) of the topic's partitions:
        the gateways that may lead one, its preferred leader first, and the live ones among them;
        (-1, -1, [], []) while it has no leader. Made once per topic: Metadata asks it of every partition."""
        if self.leaders is None:
            return lambda index: (self.node_id, topic.partitions[index].leader_epoch, [self.node_id], [self.node_id])
        topic_id, live = str(topic.topic_id), self.membership.members()

        def of(index: int) -> tuple[int, int, list[int], list[int]]:
            value = self.leaders.value(topic_id, index)
            if value is None:
                return -1, -1, [], []
            replicas = replicas_of(value)
            return value["leader"], value["epoch"], replicas, [node for node in replicas if node in live]
        return of

    async def elect(self, topic, index: int, election: int) -> ErrorCode:
        if self.elections is None:  # the one replica leads already
            return ErrorCode.ELECTION_NOT_NEEDED
        return await self.elections.elect(str(topic.topic_id), index, election)

    async def reassign(self, topic, index: int, replicas: list[int]) -> tuple[ErrorCode, str | None]:
        if self.elections is not None:
            return await self.elections.reassign(str(topic.topic_id), index, replicas)
        if replicas != [self.node_id]:
            return ErrorCode.INVALID_REPLICA_ASSIGNMENT, (
                f"{topic.name}-{index} cannot move to replicas {replicas}: every store holds every partition, "
                f"and its only replica is this gateway, node {self.node_id}")
        return ErrorCode.NONE, None

    def advertised_listeners(self) -> tuple[Listener, ...]:
        return tuple(self._advertised.values())
