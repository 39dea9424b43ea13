"""The CHP commands built on kvmsg, and the ICANHAZ? snapshot request."""

from collections.abc import Sequence

from protocol.chp.kvmsg import KVMsg, decode_text
from protocol.errors import DecodeError

ICANHAZ = b"ICANHAZ?"
KTHXBAI = "KTHXBAI"
HUGZ = "HUGZ"
PASSIVE = "passive"
CAS = "cas"


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


def hugz(sequence: int, passive: bool = False) -> KVMsg:
    """The heartbeat; its sequence lets clients notice a restarted server.

    A passive server of a Binary Star pair says so, so that its clients
    move to the active one (C clients ignore the property).
    """
    return KVMsg(key=HUGZ, sequence=sequence, properties={PASSIVE: "1"} if passive else {})


def is_passive_hugz(msg: KVMsg) -> bool:
    return msg.key == HUGZ and PASSIVE in msg.properties


def expected_sequence(msg: KVMsg) -> int | None:
    """A compare-and-set's expected sequence of the key (0: absent), or None for a plain set."""
    text = msg.properties.get(CAS)
    if text is None:
        return None
    if not text.isascii() or not text.isdigit() or len(text) > 20:
        raise DecodeError(f"cas {text[:24]!r} is not a sequence")
    return int(text)


def is_command_key(key: str) -> bool:
    """Keys a KVSET may not use, since clients read them as commands."""
    return key in (HUGZ, KTHXBAI)
