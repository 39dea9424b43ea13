"""Discovery frames: node beacons to the tower, tower beacons and welcome to nodes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from protocol.dafka.messages import ADDRESS_PATTERN, Buffer
from protocol.errors import DecodeError, EncodeError

BEACON = b"B"
WELCOME = b"W"  # the tower XPUB's welcome message; nodes subscribe to it and to B


@dataclass(frozen=True, slots=True)
class NodeBeacon:
    """A node announcing its data publisher; an empty host means "as the tower sees me"."""

    uuid: str
    host: str
    port: int


@dataclass(frozen=True, slots=True)
class TowerBeacon:
    """The tower relaying a node's beacon with the endpoint to connect to."""

    uuid: str
    endpoint: str


@dataclass(frozen=True, slots=True)
class Welcome:
    """The tower's greeting to a newly subscribed node."""


def encode_node_beacon(beacon: NodeBeacon) -> list[bytes]:
    if not 0 < beacon.port < 65536:
        raise EncodeError(f"port out of range: {beacon.port}")
    return [BEACON, _uuid_bytes(beacon.uuid), beacon.host.encode(), str(beacon.port).encode()]


def encode_tower_beacon(beacon: TowerBeacon) -> list[bytes]:
    return [BEACON, _uuid_bytes(beacon.uuid), beacon.endpoint.encode()]


def decode_node_beacon(frames: Sequence[Buffer]) -> NodeBeacon:
    """A node beacon (4 frames, decimal ASCII port); DecodeError otherwise."""
    if len(frames) != 4 or bytes(frames[0]) != BEACON:
        raise DecodeError("a node beacon is 4 frames starting with B")
    port = bytes(frames[3])
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise DecodeError(f"bad port {port[:16]!r}")
    return NodeBeacon(_uuid_text(frames[1]), _ascii(frames[2]), int(port))


def decode_tower_message(frames: Sequence[Buffer]) -> TowerBeacon | Welcome:
    """What a node receives from the tower: a welcome or a 3-frame beacon."""
    if len(frames) == 1 and bytes(frames[0]) == WELCOME:
        return Welcome()
    if len(frames) != 3 or bytes(frames[0]) != BEACON:
        raise DecodeError("a tower beacon is 3 frames starting with B")
    endpoint = _ascii(frames[2])
    if not endpoint.startswith("tcp://"):
        raise DecodeError(f"bad endpoint {endpoint[:64]!r}")
    return TowerBeacon(_uuid_text(frames[1]), endpoint)


def _uuid_bytes(uuid: str) -> bytes:
    raw = uuid.encode()
    if not ADDRESS_PATTERN.match(raw):
        raise EncodeError(f"not 32 upper-case hex characters: {uuid!r}")
    return raw


def _uuid_text(frame: Buffer) -> str:
    raw = bytes(frame)
    if not ADDRESS_PATTERN.match(raw):
        raise DecodeError("uuid is not 32 upper-case hex characters")
    return raw.decode("ascii")


def _ascii(frame: Buffer) -> str:
    try:
        return bytes(frame).decode("ascii")
    except UnicodeDecodeError:
        raise DecodeError("text is not ASCII") from None
