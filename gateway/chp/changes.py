"""What a CHP client tells its watchers, and the fan-out to them."""

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import structlog
import trio

log = structlog.get_logger()

Endpoint = tuple[str, int]
"""A CHP server: host and base port P."""


@dataclass(frozen=True)
class Update:
    """A key in the client's subtree changed; `value` None means deleted.

    `uuid` is the one its writer tagged the update with (empty if none).
    """

    key: str
    value: bytes | None
    sequence: int
    uuid: bytes = b""


@dataclass(frozen=True)
class ServerLost:
    """The server stopped answering (no HUGZ in time, or it restarted)."""

    server: Endpoint
    reason: str


@dataclass(frozen=True)
class Synced:
    """The client holds `server`'s snapshot and follows its updates."""

    server: Endpoint
    sequence: int


Change = Update | ServerLost | Synced


class Watchers:
    """Every open watch gets every change, through its own bounded buffer.

    A watcher that falls `buffer` changes behind is cut off (its iteration
    ends) rather than stalling the client, whose heartbeat timing must not
    depend on how fast callers read.
    """

    def __init__(self, buffer: int):
        self._buffer = buffer
        self._channels: set[trio.MemorySendChannel[Change]] = set()

    @contextmanager
    def watch(self) -> Iterator[trio.MemoryReceiveChannel[Change]]:
        send, receive = trio.open_memory_channel[Change](self._buffer)
        self._channels.add(send)
        try:
            with receive:
                yield receive
        finally:
            self._channels.discard(send)
            send.close()

    def emit(self, change: Change) -> None:
        for channel in list(self._channels):
            try:
                channel.send_nowait(change)
            except trio.WouldBlock:
                log.warning("chp.watcher_cut_off", buffer=self._buffer)
                self._drop(channel)
            except trio.BrokenResourceError:
                self._drop(channel)

    def _drop(self, channel: trio.MemorySendChannel[Change]) -> None:
        self._channels.discard(channel)
        channel.close()
