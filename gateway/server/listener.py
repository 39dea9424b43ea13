"""The Kafka TCP listeners: accept clients, cap their number, shut down gently.

Each configured listener (Kafka's `listeners`) is bound on its own port; a
connection remembers the listener it came through, so that answers name the
endpoints advertised for that listener.
"""

from __future__ import annotations

from dataclasses import dataclass

import structlog
import trio

from gateway.observability.broker_metrics import CONNECTIONS
from gateway.server.connection import Connection, ConnectionLimits
from gateway.settings.listeners import Listener

log = structlog.get_logger()


@dataclass
class ListenerLimits:
    max_connections: int = 1000  # over all listeners, as Kafka's max.connections
    # How long in-flight requests may take to finish once shutdown begins.
    shutdown_grace_s: float = 10.0


class KafkaListener:
    """Serves Kafka connections on every listener with one dispatcher until shut down."""

    def __init__(self, dispatcher, listeners: tuple[Listener, ...], limits: ListenerLimits | None = None,
                 connection_limits: ConnectionLimits | None = None):
        self.dispatcher = dispatcher
        self.listeners = listeners
        self.limits = limits or ListenerLimits()
        self.connection_limits = connection_limits or ConnectionLimits()
        self.connections: set[Connection] = set()
        self._sockets: dict[str, list[trio.SocketListener]] = {}
        self._stopping = trio.Event()
        self.stopped = trio.Event()

    async def bind(self) -> dict[str, int]:
        """Bind every listener's sockets (clients wait in the backlog until `serve`): the port
        each got, by name; OSError if one cannot be bound."""
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
            log.info("listening", listener=listener.name, host=listener.host or "*", port=port)
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
            connections.cancel_scope.deadline = trio.current_time() + self.limits.shutdown_grace_s
        log.info("listener_stopped")
        self.stopped.set()

    async def _accept(self, listener: str, socket: trio.SocketListener, connections: trio.Nursery) -> None:
        while True:
            stream = await socket.accept()
            if len(self.connections) >= self.limits.max_connections:
                log.warning("connection_refused", reason="max_connections", limit=self.limits.max_connections)
                await trio.aclose_forcefully(stream)
                continue
            connections.start_soon(self._serve, listener, stream)

    async def _serve(self, listener: str, stream: trio.SocketStream) -> None:
        try:
            host, port = stream.socket.getpeername()[:2]
        except OSError:  # the peer reset between accept and here
            await trio.aclose_forcefully(stream)
            return
        connection = Connection(stream, f"{host}:{port}", listener, self.dispatcher, self.connection_limits)
        self.connections.add(connection)
        CONNECTIONS.labels(listener).inc()
        try:
            await connection.serve()
        except Exception:  # a bug met by one client must not stop the broker for all
            log.exception("connection_failed", peer=connection.peer)
        finally:
            self.connections.discard(connection)
            CONNECTIONS.labels(listener).dec()


async def _bound(listener: Listener) -> list[trio.SocketListener]:
    """The listening sockets of one listener: every interface for an empty host."""
    return await trio.open_tcp_listeners(listener.port, host=listener.host or None)
