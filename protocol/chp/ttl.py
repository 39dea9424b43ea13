"""The `ttl` property: relative seconds on KVSET, absolute after the server.

A client's KVSET says how many seconds the key should live. The server
rewrites that to an absolute expiry in milliseconds since the Unix epoch
before it publishes or stores the message, so every later copy (KVPUB,
KVSYNC, a peer's replica) names the same instant and no copy can be
mistaken for a relative value.
"""

from dataclasses import replace

from protocol.chp.kvmsg import KVMsg
from protocol.errors import DecodeError

TTL = "ttl"


def with_absolute_ttl(msg: KVMsg, now_ms: int) -> KVMsg:
    """`msg` with a relative ttl (seconds) turned into an expiry at `now_ms`."""
    seconds = _number(msg)
    if not seconds:
        return replace(msg, properties={k: v for k, v in msg.properties.items() if k != TTL})
    expiry = now_ms + round(seconds * 1000)
    return replace(msg, properties={**msg.properties, TTL: str(expiry)})


def expiry_ms(msg: KVMsg) -> int | None:
    """When a stored (absolute-ttl) message expires, or None if it never does."""
    return int(_number(msg)) or None


def _number(msg: KVMsg) -> float:
    text = msg.properties.get(TTL, "")
    if not text:
        return 0
    try:
        value = float(text)
    except ValueError:
        raise DecodeError(f"ttl {text!r} is not a number") from None
    if not 0 <= value < 1e15:
        raise DecodeError(f"ttl {text!r} is out of range")
    return value
