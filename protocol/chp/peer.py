"""The link between the two servers of a Binary Star pair (each binds port P+3).

Every message starts with a command frame:

    STATE   state, term            heartbeat: the sender's Binary Star state and the number of
                                   times a server of the pair became active, as far as it knows
    SYNC?                          the passive asks the active for its whole hashmap
    KVSYNC  kvmsg (5 frames)       one entry of that hashmap
    KTHXBAI sequence, count        its end: the hashmap's sequence and how many entries it sent
    KVREPL  kvmsg (5 frames)       an update the active sequenced and publishes once acknowledged
    KVACK   sequence               the passive holds every update up to `sequence`

Sequences, terms and counts are 8 bytes big-endian, as in kvmsg.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from protocol.chp.kvmsg import SEQUENCE_SIZE, KVMsg, decode_kvmsg, decode_text, encode_kvmsg
from protocol.errors import DecodeError


class State(Enum):
    """A server's Binary Star state; PRIMARY and BACKUP until it knows its peer's."""

    PRIMARY = "PRIMARY"
    BACKUP = "BACKUP"
    ACTIVE = "ACTIVE"
    PASSIVE = "PASSIVE"


@dataclass(frozen=True)
class PeerState:
    state: State
    term: int


@dataclass(frozen=True)
class SyncRequest:
    pass


@dataclass(frozen=True)
class SyncEntry:
    msg: KVMsg


@dataclass(frozen=True)
class SyncEnd:
    sequence: int
    count: int


@dataclass(frozen=True)
class Replicated:
    msg: KVMsg


@dataclass(frozen=True)
class Ack:
    sequence: int


PeerMessage = PeerState | SyncRequest | SyncEntry | SyncEnd | Replicated | Ack
_KVMSG_COMMANDS = {b"KVSYNC": SyncEntry, b"KVREPL": Replicated}


def encode_peer(message: PeerMessage) -> list[bytes]:
    match message:
        case PeerState(state, term):
            return [b"STATE", state.value.encode(), _number(term)]
        case SyncRequest():
            return [b"SYNC?"]
        case SyncEntry(msg):
            return [b"KVSYNC", *encode_kvmsg(msg)]
        case Replicated(msg):
            return [b"KVREPL", *encode_kvmsg(msg)]
        case SyncEnd(sequence, count):
            return [b"KTHXBAI", _number(sequence), _number(count)]
        case Ack(sequence):
            return [b"KVACK", _number(sequence)]
    raise TypeError(f"not a peer message: {message!r}")


def decode_peer(frames: Sequence[bytes]) -> PeerMessage:
    """The peer message in `frames`; DecodeError if they are not one."""
    if not frames:
        raise DecodeError("peer message has no frames")
    command, *rest = (bytes(frame) for frame in frames)
    if command in _KVMSG_COMMANDS:
        return _KVMSG_COMMANDS[command](decode_kvmsg(rest))
    match command, rest:
        case b"STATE", [state, term]:
            return PeerState(_state(state), _read_number(term))
        case b"SYNC?", []:
            return SyncRequest()
        case b"KTHXBAI", [sequence, count]:
            return SyncEnd(_read_number(sequence), _read_number(count))
        case b"KVACK", [sequence]:
            return Ack(_read_number(sequence))
    raise DecodeError(f"peer command {command[:16]!r} with {len(rest)} frames is unknown")


def _state(frame: bytes) -> State:
    try:
        return State(decode_text(frame, "state"))
    except ValueError:
        raise DecodeError(f"Binary Star state {frame[:16]!r} is unknown") from None


def _number(value: int) -> bytes:
    return value.to_bytes(SEQUENCE_SIZE, "big")


def _read_number(frame: bytes) -> int:
    if len(frame) != SEQUENCE_SIZE:
        raise DecodeError(f"number frame is {len(frame)} bytes, not {SEQUENCE_SIZE}")
    return int.from_bytes(frame, "big")
