"""One client connection: frames in, handlers, responses out in request order.

Requests are read and handed to their handler one after another, so that the
effects of pipelined requests (appends of produce requests above all) happen
in the order the client sent them. A handler that must wait for something
(stores to acknowledge a produce, data to arrive for a fetch) returns a
`Deferred`; its wait runs in the connection's nursery while later requests
are read, and the writer task still sends every response in request order.

Memory stays bounded by configuration: each request holds its size in the
gateway's request memory (queued.max.request.bytes) from its size prefix until
its response is sent or dropped; a connection whose responses built but not yet
sent reach unsent.response.max.bytes is muted (not read, no further request of
it handled) until the client reads them, as Kafka mutes channels; and a Fetch
answers at most what the connection has room for. A client over its quota is
muted likewise for its throttle time.
"""

from __future__ import annotations

import math
import os
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass, field

import structlog
import trio

from gateway.observability.broker_metrics import UNSENT_RESPONSE_BYTES
from gateway.server.answers import CloseConnection, Deferred
from gateway.server.principal import ANONYMOUS, KafkaPrincipal
from gateway.server.request_memory import HeldBytes, RequestMemory
from protocol.errors import DecodeError
from protocol.kafka.framing import SIZE_PREFIX_BYTES, FrameReader

log = structlog.get_logger()

READ_CHUNK = 256 * 1024
QUIET_S = 1.0  # a connection that received nothing for this long gives its receive buffer up
IOV_MAX = os.sysconf("SC_IOV_MAX") if "SC_IOV_MAX" in os.sysconf_names else 1024  # buffers per sendmsg


@dataclass
class ResponseSlot:
    """The place of one request's response frame in the connection's send order."""

    done: trio.Event = field(default_factory=trio.Event)
    payload: list | None = None  # buffers to send in order
    close: bool = False
    in_turn: Deferred | None = None  # awaited by the writer when the slot's turn comes
    request_bytes: int = 0  # held in the request memory until the response is sent or dropped
    response_bytes: int = 0

    def fill(self, payload: list | None, close: bool = False) -> None:
        self.payload = payload
        self.close = close
        self.response_bytes = sum(len(piece) for piece in payload) if payload else 0
        self.done.set()


@dataclass
class ConnectionLimits:
    max_request_bytes: int = 100 * 1024 * 1024
    max_in_flight: int = 64
    idle_timeout_s: float = 600.0
    receive_timeout_s: float = 30.0  # for the whole of a request, from its first bytes
    send_timeout_s: float = 60.0
    max_unsent_response_bytes: int = 4 * 1024 * 1024  # beyond them the connection is muted
    request_memory: RequestMemory = field(default_factory=RequestMemory)  # shared by all connections


class Connection:
    """Serves one accepted stream until the peer leaves or shutdown."""

    def __init__(self, stream: trio.abc.Stream, peer: str, listener: str, dispatcher, limits: ConnectionLimits,
                 security_protocol: str = "PLAINTEXT", principal: KafkaPrincipal = ANONYMOUS):
        self.stream = stream
        self.peer = peer
        self.listener = listener  # the name of the listener it came through
        self.security_protocol = security_protocol  # of that listener: PLAINTEXT, SSL
        self.principal = principal  # who the client is, as authorization sees it
        self.dispatcher = dispatcher
        self.limits = limits
        self.log = log.bind(peer=peer, listener=listener)
        self.authentication = None  # a SASL listener's Authentication (server/authentication.py)
        self._stopping = False
        self._receiving = trio.CancelScope()
        self._memory = limits.request_memory
        self._requests_held = 0  # of this connection's requests, in the request memory
        self._frame_reserved = 0  # reserved for the request being received
        self._unsent = HeldBytes()  # responses built, not yet sent
        self._muted_until = 0.0  # a client over its quota is throttled: no request of it handled before
        self._unmuted = trio.Event()  # set at shutdown: a throttled client's last request is answered at once
        self._answers: deque[ResponseSlot] = deque()  # read, not yet taken by the writer, in request order
        self._reading_done = False  # no more slots will be queued
        self._room = trio.Event()  # set when the writer takes slots (the reader waits at max_in_flight)
        self._writer_asleep: trio.CancelScope | None = None  # the writer waits for a first queued answer
        self._wake_writer = trio.Event()

    def stop_reading(self) -> None:
        """Read no more requests; those already read are still answered."""
        self._stopping = True
        self._receiving.cancel()
        self._unmuted.set()

    async def serve(self) -> None:
        self.log.info("connection_opened", security_protocol=self.security_protocol, principal=str(self.principal))
        reason = "closed by peer"
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._write_responses, nursery.cancel_scope)
                try:
                    reason = await self._read_requests(nursery)
                finally:
                    self._reading_done = True
                    self._wake_writer.set()
        except* (trio.BrokenResourceError, trio.ClosedResourceError) as group:
            reason = f"stream broken: {group.exceptions[0]}"
        finally:
            self._memory.give_back(self._requests_held)
            UNSENT_RESPONSE_BYTES.dec(self._unsent.held)
            with trio.CancelScope(shield=True):
                await trio.aclose_forcefully(self.stream)
            self.log.info("connection_closed", reason=reason)

    async def _read_requests(self, nursery) -> str:
        frames = FrameReader(self.limits.max_request_bytes)
        receive_by = math.inf  # when the request under way must be whole
        while True:
            try:
                payload = frames.next_frame()
            except DecodeError as exc:
                if _tls_record(frames.next_frame_size):
                    self.log.warning("wrong_protocol", reason="a TLS handshake on a plaintext listener")
                    return "TLS client"
                self.log.warning("bad_frame", error=str(exc))
                return "bad frame"
            if payload is None:
                admission_began = trio.current_time()
                await self._admit(frames)
                # time spent waiting for the gateway's own budget is not the client's
                receive_by += trio.current_time() - admission_began
                if frames.pending_bytes and receive_by == math.inf:
                    receive_by = trio.current_time() + self.limits.receive_timeout_s
                received = await self._receive(frames, receive_by)
                if not received:
                    return "closed by peer" if received == 0 else "shutdown, idle or too slow"
                continue
            receive_by = math.inf
            slot = ResponseSlot()
            handled = await self._handle(payload, slot, nursery)
            await self._queue(slot)  # after the handler: the slot says how it will be answered
            if not handled:
                return "request refused"

    async def _receive(self, frames: FrameReader, receive_by: float) -> int | None:
        """Bytes received into `frames`: 0 at end of stream, None on shutdown, idleness, or a
        request under way not whole by `receive_by` (a slow-loris client must not hold its
        connection and buffer for ever).

        A connection quiet for QUIET_S gives its receive buffer up and takes a new one once
        bytes are there: idle connections cost little memory."""
        under_way = frames.pending_bytes > 0
        give_up_at = receive_by if under_way else trio.current_time() + self.limits.idle_timeout_s
        while not self._stopping:
            quiet_at = trio.current_time() + QUIET_S if frames.holds_buffer and not under_way else math.inf
            with trio.CancelScope(deadline=min(give_up_at, quiet_at)) as self._receiving:
                return await self._receive_into(frames)
            if self._stopping or trio.current_time() >= give_up_at:
                break
            frames.release()
        if self._stopping:
            return None
        if under_way:
            self.log.warning("request_too_slow", seconds=self.limits.receive_timeout_s,
                             received=frames.pending_bytes)
        else:
            self.log.info("connection_idle", seconds=self.limits.idle_timeout_s)
        return None

    async def _receive_into(self, frames: FrameReader) -> int:
        if not isinstance(self.stream, trio.SocketStream):  # e.g. TLS: no recv_into
            data = await self.stream.receive_some(READ_CHUNK)
            frames.feed(data)
            return len(data)
        with _broken_on_os_error():  # straight into the frame's buffer, no copy of our own
            if not frames.holds_buffer:
                await trio.lowlevel.wait_readable(self.stream.socket)
            count = await self.stream.socket.recv_into(frames.buffer_to_fill())
        frames.filled(count)
        return count

    async def _send(self, pieces: list) -> bool:
        """Whether `pieces` went out within send.timeout (else the client is not reading)."""
        if not isinstance(self.stream, trio.SocketStream):  # TLS: one write, not a record per small piece
            with trio.move_on_after(self.limits.send_timeout_s):
                await self.stream.send_all(b"".join(pieces))
                return True
            return False
        gathered = GatheredSend(pieces)  # record data goes out from where it lies: one call for many buffers
        with _broken_on_os_error():
            if gathered.send_now(self.stream.socket.fileno()):  # the common case: no timer, no yield
                return True
            with trio.move_on_after(self.limits.send_timeout_s):
                await gathered.send_all(self.stream.socket)
                return True
        return False

    async def _admit(self, frames: FrameReader) -> None:
        """Before receiving more: the request under way reserved in the request memory once its
        size prefix is in; between requests, wait while the request memory is exhausted."""
        size = frames.next_frame_size
        if size is None:
            await self._memory.wait_for_room()
        elif not self._frame_reserved:
            self._frame_reserved = await self._reserve(SIZE_PREFIX_BYTES + size)

    async def _reserve(self, size: int) -> int:
        await self._memory.reserve(size)
        self._requests_held += size
        return size

    def throttle(self, throttle_ms: int) -> None:
        """Handle no further request of this client for `throttle_ms` (KIP-219: its response
        carries the time and goes out at once, the connection is muted meanwhile)."""
        self._muted_until = max(self._muted_until, trio.current_time() + throttle_ms / 1000)

    def response_room(self) -> int:
        """Bytes of response this connection may still build before it is muted."""
        return max(self.limits.max_unsent_response_bytes - self._unsent.held, 0)

    async def _handle(self, payload: bytes, slot: ResponseSlot, nursery) -> bool:
        """Hand the request to its handler once it holds its bytes in the request memory and
        the connection is not muted (its unsent responses below the bound)."""
        slot.request_bytes = self._frame_reserved or await self._reserve(SIZE_PREFIX_BYTES + len(payload))
        self._frame_reserved = 0
        await self._unsent.wait_until(self.response_room)
        if self._muted_until > trio.current_time():
            with trio.move_on_at(self._muted_until):
                await self._unmuted.wait()
        try:
            answer = await self.dispatcher.dispatch(payload, self)
        except CloseConnection as exc:
            self.log.warning("request_refused", error=str(exc))
            self._fill(slot, exc.answer, close=True)
            return False
        if isinstance(answer, Deferred) and answer.ready is not None:
            slot.in_turn = answer
        elif isinstance(answer, Deferred):
            nursery.start_soon(self._complete, answer, slot)
        else:
            self._fill(slot, answer)
        return True

    async def _complete(self, deferred: Deferred, slot: ResponseSlot) -> None:
        try:
            self._fill(slot, await deferred.wait())
        except CloseConnection as exc:
            self.log.warning("request_failed", error=str(exc))
            self._fill(slot, exc.answer, close=True)

    def _fill(self, slot: ResponseSlot, payload: list | None, close: bool = False) -> None:
        slot.fill(payload, close)
        self._unsent.take(slot.response_bytes)
        UNSENT_RESPONSE_BYTES.inc(slot.response_bytes)
        if self._writer_asleep is not None and self._answers and self._answers[0] is slot:
            self._wake_writer.set()

    async def _queue(self, slot: ResponseSlot) -> None:
        """`slot` in the send order, at most max_in_flight waiting. A sleeping writer is woken
        when the slot can be sent, not before: for a produce, by the ACK that answers it."""
        while len(self._answers) >= self.limits.max_in_flight:
            self._room = trio.Event()
            await self._room.wait()
        self._answers.append(slot)
        if self._writer_asleep is None or len(self._answers) > 1:
            return
        wake = slot.in_turn.wake if slot.in_turn is not None else None
        if wake is not None:
            self._writer_asleep.deadline = wake(self._wake_writer.set)
        elif slot.done.is_set() or slot.in_turn is not None:
            self._wake_writer.set()
        # else the task that completes it fills it (`_fill`)

    async def _first_answer(self) -> ResponseSlot | None:
        """The first slot queued, once it may be sent (None: the reading is over and all sent)."""
        if not self._answers and not self._reading_done:
            self._wake_writer = trio.Event()
            with trio.CancelScope() as self._writer_asleep:  # its deadline: by when the answer is due
                await self._wake_writer.wait()
            self._writer_asleep = None
        return self._take_answer()

    def _take_answer(self) -> ResponseSlot | None:
        if not self._answers:
            return None
        self._room.set()
        return self._answers.popleft()

    def _sent(self, slots: list[ResponseSlot]) -> None:
        """The responses of `slots` are sent or dropped: their bytes are free."""
        requests = sum(slot.request_bytes for slot in slots)
        responses = sum(slot.response_bytes for slot in slots)
        self._requests_held -= requests
        self._memory.give_back(requests)
        self._unsent.give_back(responses)
        UNSENT_RESPONSE_BYTES.dec(responses)

    async def _write_responses(self, scope: trio.CancelScope) -> None:
        slot = None
        while True:
            if slot is None:
                slot = await self._first_answer()
                if slot is None:
                    break
            answered, slot, close = await self._ready_responses(slot)
            pieces = [piece for done in answered if done.payload for piece in done.payload]
            if pieces and not await self._send(pieces):
                self.log.warning("client_not_reading", seconds=self.limits.send_timeout_s)
                break
            self._sent(answered)
            if close:
                break
        scope.cancel()

    async def _ready_responses(self, slot: ResponseSlot) -> tuple[list[ResponseSlot], ResponseSlot | None, bool]:
        """`slot`, once answered, and the slots after it already answered, whose responses go
        out in one write (one store acknowledgement often answers many requests); the first
        slot not answered yet; whether the connection closes after these."""
        answered = []
        while True:
            if slot.in_turn is not None:
                await self._complete(slot.in_turn, slot)
            if not slot.done.is_set():  # a set Event's wait is a scheduling point; sending is one anyway
                await slot.done.wait()
            answered.append(slot)
            if slot.close:
                return answered, None, True
            slot = self._take_answer()
            if slot is None:
                return answered, None, False
            if not (slot.done.is_set() or slot.in_turn is not None and slot.in_turn.ready()):
                return answered, slot, False


def _tls_record(size_prefix: int | None) -> bool:
    """Whether a refused size prefix is the start of a TLS handshake record (type 22, version 3.x)."""
    return size_prefix is not None and size_prefix >> 16 == 0x1603


@contextmanager
def _broken_on_os_error():
    """What SocketStream turns a socket's OSError into, for calls made on its socket directly."""
    try:
        yield
    except OSError as exc:
        raise trio.BrokenResourceError(f"socket connection broken: {exc}") from exc


class GatheredSend:
    """Buffers to send in order, with as few system calls as the kernel allows (writev)."""

    def __init__(self, pieces: list):
        self._pending = [memoryview(piece) for piece in pieces]
        self._first = 0

    def send_now(self, fd: int) -> bool:
        """Send what the socket takes without waiting; whether all is sent."""
        pending = self._pending
        while self._first < len(pending):
            try:
                sent = os.writev(fd, pending[self._first : self._first + IOV_MAX])
            except BlockingIOError:
                return False
            while self._first < len(pending) and sent >= pending[self._first].nbytes:
                sent -= pending[self._first].nbytes
                self._first += 1
            if sent:
                pending[self._first] = pending[self._first][sent:]
        return True

    async def send_all(self, socket) -> None:
        """Send the rest, waiting while the socket is full.

        Unlike trio's socket calls this takes no scheduling point after a send that did not
        have to wait. That is safe for the connection's writer: it yields whenever it waits for
        an answer, and it has at most max_in_flight answers to send before it must; a
        cancellation is taken at the next wait, after bytes that are whole answers anyway."""
        while not self.send_now(socket.fileno()):
            await trio.lowlevel.wait_writable(socket)
