"""The CHP commands built on kvmsg, and the ICANHAZ? snapshot request."""

from collections.abc import Sequence

from protocol.chp.kvmsg import KVMsg, decode_text
from protocol.errors import DecodeError

ICANHAZ = b"ICANHAZ?"
KTHXBAI = "KTHXBAI"
HUGZ = "HUGZ"


def encode_icanhaz(subtree: str) -> list[bytes]:
    """A snapshot request for every key that starts with `subtree`."""
    return [ICANHAZ, subtree.encode()]


def decode_icanhaz(frames: Sequence[bytes]) -> str:
    """The subtree a snapshot request asks for."""
    if len(frames) != 2:
        raise DecodeError(f"ICANHAZ? has {len(frames)} frames, not 2")
    if bytes(frames[0]) != ICANHAZ:
        raise DecodeError("snapshot request is not ICANHAZ?")
    return decode_text(bytes(frames[1]), "subtree")


def kthxbai(sequence: int, subtree: str) -> KVMsg:
    """The end of a snapshot, at the sequence the snapshot reflects."""
    return KVMsg(key=KTHXBAI, sequence=sequence, body=subtree.encode())


def hugz(sequence: int) -> KVMsg:
    """The heartbeat; its sequence lets clients notice a restarted server."""
    return KVMsg(key=HUGZ, sequence=sequence)


def is_command_key(key: str) -> bool:
    """Keys a KVSET may not use, since clients read them as commands."""
    return key in (HUGZ, KTHXBAI)
