"""ZeroMQ sockets driven from trio: no busy polling, no thread per socket.

A ZeroMQ socket exposes one file descriptor that is edge-triggered: it becomes
readable when the socket's state *may* have changed, and only reading
`zmq.EVENTS` re-arms it. So we never wait on the FD while EVENTS already says
the socket is ready, and after every send or receive (which may consume the
edge) we wake any task waiting on the FD so that it re-checks EVENTS.
Only one task may wait on an FD in trio; others wait for the watcher's news.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import trio
import zmq

DEFAULT_LINGER_MS = 200


@contextmanager
def zmq_context(io_threads: int = 1) -> Iterator[zmq.Context]:
    """A ZeroMQ context terminated on exit (sockets must be closed by then)."""
    context = zmq.Context(io_threads)
    try:
        yield context
    finally:
        context.term()


class Socket:
    """A ZeroMQ socket whose sends and receives never block the trio loop.

    `zsock` is the raw socket, for bind/connect/subscribe and options.
    Received frames are `zmq.Frame`s (zero-copy; they support the buffer
    protocol); frames to send may be bytes, memoryviews or Frames and are
    sent without copying when large.
    """

    def __init__(self, context: zmq.Context, socket_type: int, *, linger_ms: int = DEFAULT_LINGER_MS):
        self.zsock = context.socket(socket_type)
        self.zsock.linger = linger_ms
        self._fd = self.zsock.getsockopt(zmq.FD)
        self._watcher: trio.CancelScope | None = None
        self._news = trio.Event()

    def __enter__(self) -> Socket:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def close(self) -> None:
        if not self.zsock.closed:
            trio.lowlevel.notify_closing(self._fd)
            self.zsock.close()

    async def send(self, frames: Sequence) -> None:
        """Send one multipart message, waiting (not blocking) while the socket is full."""
        await trio.lowlevel.checkpoint_if_cancelled()
        await self._send(frames)
        await trio.lowlevel.cancel_shielded_checkpoint()

    async def send_batch(self, messages: Sequence[Sequence]) -> None:
        """Send several messages with a single scheduling point (for hot paths)."""
        await trio.lowlevel.checkpoint_if_cancelled()
        for frames in messages:
            await self._send(frames)
        await trio.lowlevel.cancel_shielded_checkpoint()

    async def recv(self) -> list[zmq.Frame]:
        """Receive one multipart message."""
        await trio.lowlevel.checkpoint_if_cancelled()
        message = await self._recv()
        await trio.lowlevel.cancel_shielded_checkpoint()
        return message

    async def recv_batch(self, max_messages: int) -> list[list[zmq.Frame]]:
        """Wait for one message, then take up to `max_messages` that are already queued."""
        await trio.lowlevel.checkpoint_if_cancelled()
        batch = [await self._recv()]
        while len(batch) < max_messages:
            try:
                batch.append(self.zsock.recv_multipart(zmq.NOBLOCK, copy=False))
            except zmq.Again:
                break
        self._spread_news()
        await trio.lowlevel.cancel_shielded_checkpoint()
        return batch

    async def _send(self, frames: Sequence) -> None:
        while True:
            try:
                self.zsock.send_multipart(frames, zmq.NOBLOCK, copy=False)
            except zmq.Again:
                await self._until(zmq.POLLOUT)
            else:
                self._spread_news()
                return

    async def _recv(self) -> list[zmq.Frame]:
        while True:
            try:
                message = self.zsock.recv_multipart(zmq.NOBLOCK, copy=False)
            except zmq.Again:
                await self._until(zmq.POLLIN)
            else:
                self._spread_news()
                return message

    async def _until(self, event: int) -> None:
        while not self.zsock.getsockopt(zmq.EVENTS) & event:
            if self._watcher is None:
                await self._watch_fd()
            else:
                await self._news.wait()

    async def _watch_fd(self) -> None:
        with trio.CancelScope() as self._watcher:
            try:
                await trio.lowlevel.wait_readable(self._fd)
            finally:
                self._watcher = None
                self._spread_news()

    def _spread_news(self) -> None:
        """Make every waiter re-check EVENTS: the FD edge may have been consumed."""
        if self._watcher is not None:
            self._watcher.cancel()
        if self._news.statistics().tasks_waiting:
            self._news.set()
            self._news = trio.Event()
