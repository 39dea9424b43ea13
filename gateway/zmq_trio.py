"""ZeroMQ sockets driven from trio: no busy polling, no thread per socket.

A ZeroMQ socket exposes one file descriptor that is edge-triggered: it becomes
readable when commands reach the socket, and *any* operation on the socket
(send, receive, reading `zmq.EVENTS`, connect, disconnect, subscribe) may
process those commands and so consume the edge. Hence: whoever touches the
socket while tasks wait reads `zmq.EVENTS` afterwards and wakes the waiters
whose event it shows; only then may the FD be waited on again. Only one task
may wait on an FD in trio (the watcher); the others wait for its news.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import structlog
import trio
import zmq

DEFAULT_LINGER_MS = 200
# Plain ints: zmq's flag enums cost about a microsecond per `&` or `|`, several per message.
POLLIN, POLLOUT, EVENTS = int(zmq.POLLIN), int(zmq.POLLOUT), int(zmq.EVENTS)
NOBLOCK, NOBLOCK_MORE = int(zmq.NOBLOCK), int(zmq.NOBLOCK | zmq.SNDMORE)
# pyzmq's compiled send, without the Python wrapper that checks for DRAFT routing ids and
# groups on every frame (0.8 against 0.3 us a frame here)
SEND_FRAME = zmq.backend.Socket.send
# What `send_soon` holds at most: one wake of the I/O thread is paid off by then, and a long
# pass (many requests read at once, or large ones) lets the peers start on its first messages.
SOON_MAX = 64
SOON_MAX_BYTES = 64 * 1024
log = structlog.get_logger()


def _compiled_receive():
    """gateway/_zmq_receive.c's receive, bound to the libzmq pyzmq loaded; None where it was not
    built or pyzmq's backend is not the compiled one (receives then go through pyzmq)."""
    try:
        from gateway._zmq_receive import bind, receive
        bind(zmq.backend.cython._zmq.__file__, zmq.ZMQError)
    except (ImportError, AttributeError, OSError):
        return None
    return receive


RECEIVE_COPIES = _compiled_receive()
# recv_batch(copies=True): smaller frames come as bytes; larger ones are held as ZeroMQ received
# them (a copy of a megabyte costs more than the Frame, of a record of 100 B far less).
COPIED_BELOW = 64 << 10


def subscription_event(prefix: bytes = b"") -> bytes:
    """What an XSUB sends upstream to subscribe to `prefix` (b"": everything)."""
    return b"\x01" + prefix


def is_subscription_event(frame) -> bool:
    """Whether a frame an XPUB received subscribes (rather than unsubscribes or carries data)."""
    return bytes(memoryview(frame)[:1]) == b"\x01"


@contextmanager
def zmq_context(io_threads: int = 1) -> Iterator[zmq.Context]:
    """A ZeroMQ context terminated on exit; sockets left open (a start-up that failed half way)
    are closed then without linger, where terminating would wait for them for ever."""
    context = zmq.Context(io_threads)
    try:
        yield context
    finally:
        context.destroy(linger=0)


class Socket:
    """A ZeroMQ socket whose sends and receives never block the trio loop.

    `zsock` is the raw socket, for bind and options before use; connect and
    subscribe through the methods here, which keep waiting tasks informed.
    Received frames are `zmq.Frame`s (zero-copy; they support the buffer
    protocol); frames to send may be bytes, memoryviews or Frames and are
    sent without copying when large.
    """

    def __init__(self, context: zmq.Context, socket_type: int, *, linger_ms: int = DEFAULT_LINGER_MS):
        self.zsock = context.socket(socket_type)
        self.zsock.linger = linger_ms
        self._fd = self.zsock.getsockopt(zmq.FD)
        self._watcher: trio.CancelScope | None = None  # the task waiting on the FD
        self._watched_flag = 0
        self._waiters: dict[int, trio.Event] = {}  # POLLIN/POLLOUT -> set when it may be ready
        self._drops = socket_type in (zmq.PUB, zmq.XPUB)  # never waits to send: drops at its high-water mark
        self._soon: list[Sequence] = []  # messages of `send_soon`, sent ahead of any other
        self._soon_bytes = 0
        self._held: list[list[zmq.Frame]] = []  # received by `disconnect`, returned before any other

    def never_drop(self) -> None:
        """An XPUB that says zmq.Again at a peer's high-water mark instead of dropping (XPUB_NODROP)."""
        self.zsock.setsockopt(zmq.XPUB_NODROP, 1)
        self._drops = False

    def unlimited(self) -> None:
        """No high-water mark: what a peer has not read yet waits in memory, however much, and
        TCP holds the sender back; nothing is dropped (ZeroMQ 2's queues, which CHP was written for)."""
        self.zsock.setsockopt(zmq.SNDHWM, 0)
        self.zsock.setsockopt(zmq.RCVHWM, 0)

    def __enter__(self) -> Socket:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def close(self) -> None:
        if not self.zsock.closed:
            self.send_queued()  # the linger delivers them
            trio.lowlevel.notify_closing(self._fd)
            self.zsock.close()

    async def send(self, frames: Sequence) -> None:
        """Send one multipart message, waiting (not blocking) while the socket is full."""
        await self.send_batch([frames])

    async def send_batch(self, messages: Sequence[Sequence]) -> None:
        """Send several messages with a single scheduling point (for hot paths)."""
        await trio.lowlevel.checkpoint_if_cancelled()
        self.send_queued()
        for frames in messages:
            try:
                self._send_now(frames)
            except zmq.Again:
                await self._send(frames)
        self._touched()
        await trio.lowlevel.cancel_shielded_checkpoint()

    def send_nowait(self, messages: Sequence[Sequence]) -> int:
        """Send messages while the socket takes them; how many it took.

        For XPUB with XPUB_NODROP, whose EVENTS always claim POLLOUT: waiting
        for POLLOUT there would spin while a peer's pipe is full.
        """
        self.send_queued()
        sent = 0
        try:
            for frames in messages:
                self._send_now(frames)
                sent += 1
        except zmq.Again:
            pass
        self._touched()
        return sent

    def send_soon(self, messages: Sequence[Sequence]) -> None:
        """Send messages of a (X)PUB when the trio loop's pass ends, or before any later send on
        it, or once SOON_MAX or SOON_MAX_BYTES are queued, without a scheduling point: ZeroMQ's I/O thread is
        woken once for all that the pass publishes, not once per call. What the PUB cannot
        send then is dropped, as at its high-water mark (a send error is logged)."""
        if not self._drops:
            raise TypeError("send_soon is for sockets that never wait to send (PUB, XPUB)")
        if not self._soon and messages:
            _pass_end().due.append(self)
        self._soon.extend(messages)
        self._soon_bytes += sum(len(frame) for frames in messages for frame in frames)
        if len(self._soon) >= SOON_MAX or self._soon_bytes >= SOON_MAX_BYTES:
            self.send_queued()

    def send_queued(self) -> None:
        """Send what `send_soon` queued, now."""
        if not self._soon:
            return
        messages, self._soon, self._soon_bytes = self._soon, [], 0
        if self.zsock.closed:
            return
        try:
            for frames in messages:
                self._send_now(frames)
        except Exception:  # a PUB never says Again; run by the loop itself, where nothing could handle it
            log.exception("queued_sends_dropped", messages=len(messages))

    async def recv(self) -> list[zmq.Frame]:
        """Receive one multipart message."""
        return (await self.recv_batch(1))[0]

    async def recv_batch(self, max_messages: int, *, copies: bool = False) -> list[list]:
        """Wait for one message, then take up to `max_messages` that are already queued.

        `copies`: frames may come as bytes, or buffers of ZeroMQ's when not smaller than
        COPIED_BELOW (received in one compiled call, see RECEIVE_COPIES), for a caller that only
        reads them: they have no ZMTP metadata.
        Otherwise, after the first message one read of `zmq.EVENTS` (about 1.7 us) tells whether more
        wait; only then is the socket received from until zmq.Again (about 5 us, an exception
        pyzmq builds), not while EVENTS shows one: most batches on a quiet path are one message."""
        await trio.lowlevel.checkpoint_if_cancelled()
        waited = await self._until(POLLIN)
        if copies and RECEIVE_COPIES is not None:
            batch, events = self._take_copies(max_messages), None
        else:
            batch, events = self._take_frames(max_messages)
        if self._watcher is not None or self._waiters:
            self._announce(self._events() if events is None else events)
        if not waited:  # a receive that waited has yielded already: a second pass of the loop costs a step
            await trio.lowlevel.cancel_shielded_checkpoint()
        return batch

    def _take_frames(self, max_messages: int) -> tuple[list[list[zmq.Frame]], int | None]:
        """The messages held, or one received, and more while EVENTS shows them; with the
        events last read, None if the receives may have eaten an edge since."""
        batch, self._held = self._held or [self._recv_now()], []
        events = self._events()
        if events & POLLIN and len(batch) < max_messages:
            try:
                while len(batch) < max_messages:
                    batch.append(self._recv_now())
            except zmq.Again:
                pass
            return batch, None
        return batch, events

    def _take_copies(self, max_messages: int) -> list[list]:
        """The messages held, then those RECEIVE_COPIES takes until none waits or `max_messages`."""
        if self.zsock.closed:  # its address is gone: pyzmq's receive says so, as for any other call
            self._recv_now()
        batch, self._held = self._held, []
        batch += RECEIVE_COPIES(self.zsock.underlying, max_messages - len(batch), COPIED_BELOW)
        if not batch:  # EVENTS showed a message that is not there: zmq.Again, as pyzmq's receive says
            batch.append(self._recv_now())
        return batch

    def connect(self, endpoint: str) -> None:
        self.zsock.connect(endpoint)
        self._touched()

    def disconnect(self, endpoint: str) -> None:
        """A SUB that said a message was ready holds its first frame already; were the connection
        it came from cut now, the rest could never be read and libzmq aborts the process (fq.cpp
        `!_more`, libzmq issue 2163). That message is received first, and kept for recv_batch."""
        if self.zsock.getsockopt(EVENTS) & POLLIN:
            self._held.append(self._recv_now())
        self.zsock.disconnect(endpoint)
        self._touched()

    def subscribe(self, prefix: bytes) -> None:
        self.zsock.subscribe(prefix)
        self._touched()

    def unsubscribe(self, prefix: bytes) -> None:
        self.zsock.unsubscribe(prefix)
        self._touched()

    async def _send(self, frames: Sequence) -> None:
        while True:
            try:
                self._send_now(frames)
            except zmq.Again:
                await self._until(POLLOUT)
            else:
                return

    def _send_now(self, frames: Sequence) -> None:
        """One message or zmq.Again. Frame by frame: half the cost of send_multipart, whose
        per-frame type checks and Frame objects dominate for small messages. Only the first
        part can meet the high-water mark; ZeroMQ then takes the rest of the message."""
        zsock = self.zsock
        for frame in frames[:-1]:
            SEND_FRAME(zsock, frame, NOBLOCK_MORE, copy=False)
        SEND_FRAME(zsock, frames[-1], NOBLOCK, copy=False)

    def _recv_now(self) -> list[zmq.Frame]:
        """One message or zmq.Again; a Frame's `more` saves recv_multipart's RCVMORE lookups."""
        recv = self.zsock.recv
        frame = recv(NOBLOCK, copy=False)
        message = [frame]
        while frame.more:
            frame = recv(NOBLOCK, copy=False)
            message.append(frame)
        return message

    def _touched(self) -> None:
        """After an operation that may have eaten the FD's edge: tell waiters what it hid."""
        if self._watcher is not None or self._waiters:
            self._announce(self._events())

    def _events(self) -> int:
        """The socket's events, a held message counting as one ready to receive."""
        events = self.zsock.getsockopt(EVENTS)
        return events | POLLIN if self._held else events

    def _announce(self, events: int) -> None:
        for flag in [flag for flag in self._waiters if events & flag]:
            self._waiters.pop(flag).set()
        if self._watcher is not None and events & self._watched_flag:
            self._watcher.cancel()

    async def _until(self, flag: int) -> bool:
        """Once `flag` shows in the socket's events; whether that took a wait."""
        waited = False
        while True:
            events = self._events()
            self._announce(events)
            if events & flag:
                return waited
            waited = True
            if self._watcher is None:
                await self._watch_fd(flag)
            else:
                await self._waiters.setdefault(flag, trio.Event()).wait()

    async def _watch_fd(self, flag: int) -> None:
        self._watched_flag = flag
        with trio.CancelScope() as self._watcher:
            try:
                await trio.lowlevel.wait_readable(self._fd)
            finally:
                self._watcher = None
                for waiter in self._waiters.values():  # one of them must take over the FD
                    waiter.set()
                self._waiters.clear()


class _PassEnd(trio.abc.Instrument):
    """Sends what sockets queued (`Socket.send_soon`) at the end of each pass of the trio
    loop, before it waits for I/O: the tasks that queued them have yielded by then. Nothing
    here wakes a task (the loop has chosen how long to wait already): a PUB has no waiters."""

    def __init__(self):
        self.due: list[Socket] = []

    def before_io_wait(self, timeout: float) -> None:
        due, self.due = self.due, []
        for socket in due:
            socket.send_queued()


def _pass_end() -> _PassEnd:
    """This trio run's instrument, added on first use."""
    try:
        return _PASS_END.get()
    except LookupError:
        instrument = _PassEnd()
        trio.lowlevel.add_instrument(instrument)
        _PASS_END.set(instrument)
        return instrument


_PASS_END = trio.lowlevel.RunVar("zmq_trio_pass_end")
