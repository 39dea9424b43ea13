"""Which mesh peers a node hears, by identity and endpoint together (sans-IO).

A node's SUB socket connects by endpoint, and ZeroMQ disconnects every
connection to an endpoint at once. Ports are reused: a node that exits frees
its port and a new node may bind it. So each endpoint has one owner, the last
identity that beaconed it; a newcomer on an owned endpoint takes it over (its
old owner is gone: two live nodes cannot bind one address) and the connection
already made is kept, and only an endpoint's owner can have it disconnected.
Hence no live peer is ever disconnected, and no endpoint is disconnected twice.
Peers are heard at the times of a relaying clock (mesh_node.py says why).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass


@dataclass
class Peer:
    endpoint: str
    last_seen: float


@dataclass(frozen=True)
class Seen:
    """What a beacon changes: a socket to connect or disconnect, a peer replaced."""

    appeared: bool = False  # a new identity, or one at a new endpoint
    connect: str | None = None
    disconnect: str | None = None  # the peer's previous endpoint
    replaced: str | None = None  # the identity whose endpoint the peer took over


class PeerTable(Mapping[str, Peer]):
    """Peers by UUID, each endpoint owned by one of them."""

    def __init__(self):
        self._peers: dict[str, Peer] = {}
        self._owners: dict[str, str] = {}  # endpoint -> UUID

    def __getitem__(self, uuid: str) -> Peer:
        return self._peers[uuid]

    def __iter__(self) -> Iterator[str]:
        return iter(self._peers)

    def __len__(self) -> int:
        return len(self._peers)

    def owner(self, endpoint: str) -> str | None:
        return self._owners.get(endpoint)

    def saw(self, uuid: str, endpoint: str, now: float) -> Seen:
        """A beacon of `uuid` at `endpoint`, heard at `now`."""
        peer = self._peers.get(uuid)
        if peer is not None and peer.endpoint == endpoint:
            peer.last_seen = now
            return Seen()
        moved_from = self.forget(uuid) if peer is not None else None
        replaced = self._owners.get(endpoint)
        if replaced is not None:
            del self._peers[replaced]
        self._peers[uuid] = Peer(endpoint, now)
        self._owners[endpoint] = uuid
        return Seen(True, None if replaced else endpoint, moved_from, replaced)

    def forget(self, uuid: str) -> str:
        """Drop a peer; its endpoint, now to be disconnected."""
        endpoint = self._peers.pop(uuid).endpoint
        del self._owners[endpoint]
        return endpoint

    def silent_since(self, moment: float) -> list[tuple[str, str]]:
        """(UUID, endpoint) of the peers not heard after `moment`."""
        return [(uuid, peer.endpoint) for uuid, peer in self._peers.items() if peer.last_seen < moment]


class RelayingClock:
    """Time that passes only while towers relay beacons: the time between two relays counts for
    `longest_gap` at most (a beacon interval: a node's own beacon comes back that often)."""

    def __init__(self, longest_gap: float):
        self.longest_gap = longest_gap
        self.time = 0.0
        self._last_relay: float | None = None

    def relayed(self, now: float) -> float:
        """A tower relayed a beacon at `now` (wall clock): the relaying time then."""
        if self._last_relay is not None:
            self.time += min(now - self._last_relay, self.longest_gap)
        self._last_relay = now
        return self.time
