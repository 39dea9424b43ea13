"""Mesh nodes of one process that exchange their data over inproc rather than TCP.

With the embedded store in the gateway's process, records and ACKs would still
go through ZeroMQ's I/O threads and loopback TCP, and waking an I/O thread
costs a send about 20 us on a VM (2 us once it is awake): several wakes a
record. Over inproc a send queues the message straight to the receiving
socket, which the same loop reads.

inproc carries no ZMTP metadata, so a receiver cannot tell who sent a message
(`MeshNode.sender_of`). Each node therefore takes one local peer over inproc,
its partner (the kind it exchanges most with: a producer and a store writer,
a consumer and a store reader), and every other peer over TCP; a message that
came without metadata came from that partner.

Enabled per ZeroMQ context (`share_inproc`): inproc joins only sockets of one
context, and a context whose nodes all run in one process says so by it.
"""

from __future__ import annotations

import itertools
import weakref

import zmq

PARTNERS = {"producer": "store-writer", "store-writer": "producer",
            "consumer": "store-reader", "store-reader": "consumer"}
_ENDPOINTS = itertools.count()


class LocalPeers:
    """The nodes of one context that publish over inproc too: UUID -> (kind, inproc endpoint)."""

    def __init__(self):
        self._nodes: dict[str, tuple[str, str]] = {}

    def publish(self, uuid: str, kind: str) -> str:
        """A new inproc endpoint for node `uuid`'s publisher, registered under it."""
        endpoint = f"inproc://dafka-{kind}-{next(_ENDPOINTS)}"
        self._nodes[uuid] = (kind, endpoint)
        return endpoint

    def withdraw(self, uuid: str, endpoint: str) -> None:
        """A closed node's endpoint forgotten, unless the UUID (a store restarted) has a newer one."""
        if self._nodes.get(uuid, (None, None))[1] == endpoint:
            del self._nodes[uuid]

    def partner_endpoint(self, kind: str, peer: str) -> str | None:
        """Where a node of `kind` reaches `peer` over inproc, if that peer is of its partner kind here."""
        entry = self._nodes.get(peer)
        if entry is None or entry[0] != PARTNERS.get(kind):
            return None
        return entry[1]


_SHARED: weakref.WeakKeyDictionary[zmq.Context, LocalPeers] = weakref.WeakKeyDictionary()


def share_inproc(context: zmq.Context) -> None:
    """The nodes made on `context` from now on pair with their local partners over inproc."""
    _SHARED.setdefault(context, LocalPeers())


def local_peers(context: zmq.Context) -> LocalPeers | None:
    return _SHARED.get(context)
