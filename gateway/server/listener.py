"""The Kafka TCP listener: accepts clients, caps their number, shuts down gently."""

from __future__ import annotations

from dataclasses import dataclass

import structlog
import trio

from .connection import Connection, ConnectionLimits

log = structlog.get_logger()


@dataclass
class ListenerSettings:
    host: str = "127.0.0.1"
    port: int = 9092
    max_connections: int = 1000
    # How long in-flight requests may take to finish once shutdown begins.
    shutdown_grace_s: float = 10.0


class KafkaListener:
    """Serves Kafka connections with one dispatcher until cancelled."""

    def __init__(self, dispatcher, settings: ListenerSettings, limits: ConnectionLimits | None = None):
        self.dispatcher = dispatcher
        self.settings = settings
        self.limits = limits or ConnectionLimits()
        self.connections: set[Connection] = set()
        self.port: int | None = None
        self._stopping = trio.Event()
        self.stopped = trio.Event()

    def shutdown(self) -> None:
        """Stop accepting and reading; requests already read are still answered."""
        self._stopping.set()

    async def serve(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Serve until `shutdown()`, then drain within the grace period."""
        listeners = await trio.open_tcp_listeners(self.settings.port, host=self.settings.host)
        self.port = listeners[0].socket.getsockname()[1]
        log.info("listening", host=self.settings.host, port=self.port)
        async with trio.open_nursery() as connections:
            async with trio.open_nursery() as accepting:
                for listener in listeners:
                    accepting.start_soon(self._accept, listener, connections)
                task_status.started(self.port)
                await self._stopping.wait()
                accepting.cancel_scope.cancel()
            for listener in listeners:
                await trio.aclose_forcefully(listener)
            for connection in list(self.connections):
                connection.stop_reading()
            connections.cancel_scope.deadline = trio.current_time() + self.settings.shutdown_grace_s
        log.info("listener_stopped", port=self.port)
        self.stopped.set()

    async def _accept(self, listener: trio.SocketListener, connections: trio.Nursery) -> None:
        while True:
            stream = await listener.accept()
            if len(self.connections) >= self.settings.max_connections:
                log.warning("connection_refused", reason="max_connections",
                            limit=self.settings.max_connections)
                await trio.aclose_forcefully(stream)
                continue
            connections.start_soon(self._serve, stream)

    async def _serve(self, stream: trio.SocketStream) -> None:
        try:
            host, port = stream.socket.getpeername()[:2]
        except OSError:  # the peer reset between accept and here
            await trio.aclose_forcefully(stream)
            return
        connection = Connection(stream, f"{host}:{port}", self.dispatcher, self.limits)
        self.connections.add(connection)
        try:
            await connection.serve()
        except Exception:  # a bug met by one client must not stop the broker for all
            log.exception("connection_failed", peer=connection.peer)
        finally:
            self.connections.discard(connection)
