"""The Kafka TCP listeners: accept clients, cap their number, shut down gently.

Each configured listener (Kafka's `listeners`) is bound on its own port; a
connection remembers the listener it came through, so that answers name the
endpoints advertised for that listener, and its security protocol. An SSL
listener's connections begin with the TLS handshake, in their own task; a
PLAINTEXT listener's get the socket itself, with nothing in between.

Connections are counted, in all and per IP address, from the moment they are
accepted; one over a limit is closed at once, as Kafka does. The limits are
read at each connection accepted, as dynamic broker configs change them. Connection
creation rates (KIP-612) are the `connection_quota`'s to bound: accepting
waits while connections come faster than the broker allows, and a connection
from an IP address over its quota is closed after its throttle time. When the process
runs out of file descriptors or kernel memory, accepting pauses with a backoff
(the clients wait in the backlog) rather than failing.
"""

from __future__ import annotations

import errno
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import structlog
import trio

from gateway.observability.broker_metrics import CONNECTIONS
from gateway.server.authentication import Authentication
from gateway.server.connection import Connection, ConnectionLimits
from gateway.server.principal import ANONYMOUS
from gateway.server.tls import TlsAcceptor
from gateway.settings.listeners import TLS_PROTOCOLS, Listener

log = structlog.get_logger()


# accept's failures for want of resources, that pass once connections close
RESOURCE_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
FIRST_BACKOFF_S = 0.01
MAX_BACKOFF_S = 1.0


@dataclass
class ListenerLimits:
    max_connections: int = 2**31 - 1  # over all listeners, as Kafka's max.connections
    max_connections_per_ip: int = 2**31 - 1
    per_ip_overrides: tuple[tuple[str, int], ...] = ()  # (host or address, limit), as given
    # How long in-flight requests may take to finish once shutdown begins.
    shutdown_grace_s: float = 10.0


class ConnectionQuota(Protocol):
    def accept_delay_s(self) -> float:
        """Count a connection just accepted: how long accepting waits before serving it."""

    def ip_throttle_s(self, address: str) -> float:
        """Count it against its IP's quota: how long it is throttled, then closed; 0 to serve it."""


class NoConnectionQuota:
    def accept_delay_s(self) -> float:
        return 0.0

    def ip_throttle_s(self, address: str) -> float:
        return 0.0


class KafkaListener:
    """Serves Kafka connections on every listener with one dispatcher until shut down.

    `authentication(connection)` gives each new connection its SASL state (None: its listener
    authenticates nobody)."""

    def __init__(self, dispatcher, listeners: tuple[Listener, ...],
                 limits: Callable[[], ListenerLimits] = ListenerLimits,
                 connection_limits: ConnectionLimits | None = None, protocols: dict[str, str] | None = None,
                 tls: TlsAcceptor | None = None,
                 authentication: Callable[[Connection], Authentication | None] = lambda connection: None):
        self.dispatcher = dispatcher
        self.authentication = authentication
        self.listeners = listeners
        self.protocols = protocols or {}  # security protocol by listener name; PLAINTEXT if not named
        self.tls = tls  # for SSL and SASL_SSL listeners
        self.limits = limits  # the limits now
        self.connection_limits = connection_limits or ConnectionLimits()
        self.connection_quota: ConnectionQuota = NoConnectionQuota()
        self.connections: set[Connection] = set()
        self._handshakes: set[trio.CancelScope] = set()  # of TLS handshakes under way
        self._accepted = Counter()  # connections accepted and not yet ended, by peer IP address
        self._per_ip_limits: dict[str, int] = {}  # the overrides, by address
        self._resolved: tuple[tuple[str, int], ...] = ()  # the overrides they were resolved from
        self._sockets: dict[str, list[trio.SocketListener]] = {}
        self._stopping = trio.Event()
        self.stopped = trio.Event()

    async def bind(self) -> dict[str, int]:
        """Bind every listener's sockets (clients wait in the backlog until `serve`): the port
        each got, by name; OSError if one cannot be bound."""
        await self._resolve(self.limits().per_ip_overrides)
        try:
            for listener in self.listeners:
                self._sockets[listener.name] = await _bound(listener)
        except OSError:
            self.close()
            raise
        return {name: found[0].socket.getsockname()[1] for name, found in self._sockets.items()}

    def close(self) -> None:
        for found in self._sockets.values():
            for socket in found:
                socket.socket.close()

    def shutdown(self) -> None:
        """Stop accepting and reading; requests already read are still answered."""
        self._stopping.set()

    async def serve(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Accept on the bound sockets until `shutdown()`, then drain within the grace period."""
        for listener in self.listeners:
            port = self._sockets[listener.name][0].socket.getsockname()[1]
            log.info("listening", listener=listener.name, host=listener.host or "*", port=port,
                     security_protocol=self.protocols.get(listener.name, "PLAINTEXT"))
        async with trio.open_nursery() as connections:
            async with trio.open_nursery() as accepting:
                for name, found in self._sockets.items():
                    for socket in found:
                        accepting.start_soon(self._accept, name, socket, connections)
                task_status.started()
                await self._stopping.wait()
                accepting.cancel_scope.cancel()
            for found in self._sockets.values():
                for socket in found:
                    await trio.aclose_forcefully(socket)
            for connection in list(self.connections):
                connection.stop_reading()
            for handshaking in list(self._handshakes):
                handshaking.cancel()
            connections.cancel_scope.deadline = trio.current_time() + self.limits().shutdown_grace_s
        log.info("listener_stopped")
        self.stopped.set()

    async def _accept(self, listener: str, socket: trio.SocketListener, connections: trio.Nursery) -> None:
        backoff = FIRST_BACKOFF_S
        while True:
            try:
                stream = await socket.accept()
            except OSError as exc:
                if exc.errno not in RESOURCE_ERRNOS:
                    raise
                log.warning("accept_failed", listener=listener, error=errno.errorcode[exc.errno],
                            retry_in_s=backoff, connections=self._accepted.total())
                await trio.sleep(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF_S)
                continue
            backoff = FIRST_BACKOFF_S
            peer = _peer(stream)
            limits = self.limits()
            await self._resolve(limits.per_ip_overrides)
            if peer is None or not self._admitted(limits, *peer):
                await trio.aclose_forcefully(stream)
                continue
            delay_s = self.connection_quota.accept_delay_s()
            if delay_s:
                log.info("accept_throttled", listener=listener, peer=f"{peer[0]}:{peer[1]}",
                         reason="max.connection.creation.rate", delay_ms=round(delay_s * 1000))
                await trio.sleep(delay_s)
            throttle_s = self.connection_quota.ip_throttle_s(peer[0])
            if throttle_s:
                log.info("connection_throttled", peer=f"{peer[0]}:{peer[1]}", reason="connection_creation_rate",
                         close_in_ms=round(throttle_s * 1000))
                connections.start_soon(_close_after, stream, throttle_s)
                continue
            self._accepted[peer[0]] += 1
            connections.start_soon(self._serve, listener, stream, *peer)

    async def _connection(self, listener: str, stream: trio.SocketStream, peer: str) -> Connection | None:
        """The connection of an accepted stream; on a TLS listener once its handshake is done (None,
        the stream closed, if the handshake failed or shutdown began meanwhile)."""
        protocol = self.protocols.get(listener, "PLAINTEXT")
        principal = ANONYMOUS
        if protocol in TLS_PROTOCOLS:
            secured = None
            with trio.CancelScope() as handshaking:  # cancelled at shutdown
                self._handshakes.add(handshaking)
                try:
                    secured = await self.tls.handshake(stream, peer, listener)
                finally:
                    self._handshakes.discard(handshaking)
            if secured is None:
                return None
            stream, principal = secured
            if self._stopping.is_set():
                await trio.aclose_forcefully(stream)
                return None
        return Connection(stream, peer, listener, self.dispatcher, self.connection_limits,
                          security_protocol=protocol, principal=principal)

    async def _resolve(self, overrides: tuple[tuple[str, int], ...]) -> None:
        """The per-IP overrides by address, resolved again once they change."""
        if overrides != self._resolved:
            self._per_ip_limits = await _by_address(overrides)
            self._resolved = overrides

    def _admitted(self, limits: ListenerLimits, address: str, port: int) -> bool:
        """Whether the peer may have one more connection (logged if not)."""
        limit, reason = limits.max_connections, "max.connections"
        if self._accepted.total() < limit:
            limit = self._per_ip_limits.get(address, limits.max_connections_per_ip)
            reason = "max.connections.per.ip"
            if self._accepted[address] < limit:
                return True
        log.warning("connection_refused", peer=f"{address}:{port}", reason=reason, limit=limit)
        return False

    async def _serve(self, listener: str, stream: trio.SocketStream, address: str, port: int) -> None:
        peer = f"{address}:{port}"
        connection = None  # once the stream carries requests
        CONNECTIONS.labels(listener).inc()
        try:
            connection = await self._connection(listener, stream, peer)
            if connection is not None:
                connection.authentication = self.authentication(connection)
                self.connections.add(connection)
                await connection.serve()
        except Exception:  # a bug met by one client must not stop the broker for all
            log.exception("connection_failed", peer=peer)
        finally:
            self.connections.discard(connection)
            self._accepted[address] -= 1
            if not self._accepted[address]:
                del self._accepted[address]
            CONNECTIONS.labels(listener).dec()


async def _close_after(stream: trio.SocketStream, delay_s: float) -> None:
    """Close a throttled connection, unread, once its throttle time has passed (Kafka's delayed close)."""
    try:
        await trio.sleep(delay_s)
    finally:
        await trio.aclose_forcefully(stream)


def _peer(stream: trio.SocketStream) -> tuple[str, int] | None:
    """The peer's IP address (an IPv4 one as such on a dual-stack socket) and port."""
    try:
        address, port = stream.socket.getpeername()[:2]
    except OSError:  # the peer reset between accept and here
        return None
    return address.removeprefix("::ffff:"), port


async def _bound(listener: Listener) -> list[trio.SocketListener]:
    """The listening sockets of one listener: every interface for an empty host."""
    return await trio.open_tcp_listeners(listener.port, host=listener.host or None)


async def _by_address(overrides: tuple[tuple[str, int], ...]) -> dict[str, int]:
    """Per-IP limits by address: a host name stands for every address it resolves to when set."""
    limits = {}
    for host, limit in overrides:
        try:
            found = await trio.socket.getaddrinfo(host, None, proto=trio.socket.IPPROTO_TCP)
        except OSError as exc:
            log.warning("connection_limit_host_unknown", host=host, error=str(exc))
            continue
        limits.update((sockaddr[0], limit) for *_, sockaddr in found)
    return limits
