"""The five-frame key-value message (kvmsg) that carries every CHP update."""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from protocol.errors import DecodeError, EncodeError

FRAME_COUNT = 5
SEQUENCE_SIZE = 8
UUID_SIZE = 16


@dataclass(frozen=True)
class KVMsg:
    """One key-value message; an empty body means "delete this key"."""

    key: str
    sequence: int = 0
    body: bytes = b""
    uuid: bytes = b""
    properties: Mapping[str, str] = field(default_factory=dict)

    @property
    def is_delete(self) -> bool:
        return not self.body


def encode_kvmsg(msg: KVMsg) -> list[bytes]:
    """The five frames of `msg`, ready for a multipart send."""
    if not msg.key:
        raise EncodeError("kvmsg key is empty")
    if not 0 <= msg.sequence < 1 << 64:
        raise EncodeError(f"sequence {msg.sequence} does not fit 8 bytes")
    if len(msg.uuid) not in (0, UUID_SIZE):
        raise EncodeError(f"uuid is {len(msg.uuid)} bytes, not 0 or 16")
    return [
        msg.key.encode(),
        msg.sequence.to_bytes(SEQUENCE_SIZE, "big"),
        msg.uuid,
        _encode_properties(msg.properties),
        msg.body,
    ]


def decode_kvmsg(frames: Sequence[bytes]) -> KVMsg:
    """The kvmsg in `frames`; DecodeError if they are not exactly one."""
    if len(frames) != FRAME_COUNT:
        raise DecodeError(f"kvmsg has {len(frames)} frames, not {FRAME_COUNT}")
    key, sequence, uuid, properties, body = (bytes(frame) for frame in frames)
    if not key:
        raise DecodeError("kvmsg key is empty")
    if len(sequence) != SEQUENCE_SIZE:
        raise DecodeError(f"sequence frame is {len(sequence)} bytes, not 8")
    if len(uuid) not in (0, UUID_SIZE):
        raise DecodeError(f"uuid frame is {len(uuid)} bytes, not 0 or 16")
    return KVMsg(
        key=decode_text(key, "key"),
        sequence=int.from_bytes(sequence, "big"),
        body=body,
        uuid=uuid,
        properties=_decode_properties(properties),
    )


def _encode_properties(properties: Mapping[str, str]) -> bytes:
    # Each property is "name=value" closed by a newline, so neither part may
    # hold a newline and the name may not hold "=".
    entries = []
    for name, value in properties.items():
        if not name or "=" in name or "\n" in name or "\n" in value:
            raise EncodeError(f"property {name!r}={value!r} cannot be framed")
        entries.append(f"{name}={value}\n")
    return "".join(entries).encode()


def _decode_properties(frame: bytes) -> dict[str, str]:
    text = decode_text(frame, "properties")
    if text and not text.endswith("\n"):
        raise DecodeError("last property is not closed by a newline")
    properties: dict[str, str] = {}
    for entry in text.split("\n")[:-1]:
        name, equals, value = entry.partition("=")
        if not name or not equals:
            raise DecodeError(f"property {entry!r} is not name=value")
        if name in properties:
            raise DecodeError(f"property {name!r} appears twice")
        properties[name] = value
    return properties


def decode_text(frame: bytes, what: str) -> str:
    try:
        return frame.decode()
    except UnicodeDecodeError as error:
        raise DecodeError(f"{what} is not UTF-8", error.start) from None
