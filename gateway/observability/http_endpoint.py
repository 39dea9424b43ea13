"""/metrics, /health and /ready over HTTP, as operators of Kafka-compatible brokers expect.

Prometheus scrapes /metrics (its text format, from the process's default
registry). /health answers 200 while the process runs; /ready answers 200
once the node serves (a gateway: its listeners; a store: its log is open
and its nodes are on the mesh), 503 before that and once it stops.
"""

from __future__ import annotations

import logging

import structlog
import trio
from prometheus_client import make_asgi_app

from gateway.settings.table import HttpSettings

log = structlog.get_logger()


class Readiness:
    """Whether the node serves, and why not."""

    def __init__(self):
        self.reason = "starting"

    @property
    def ready(self) -> bool:
        return self.reason == ""

    def serving(self) -> None:
        self.reason = ""

    def stopping(self) -> None:
        self.reason = "stopping"


def http_app(readiness: Readiness):
    """The ASGI application: Prometheus' for /metrics, plain text for /health and /ready."""
    metrics = make_asgi_app()

    async def app(scope, receive, send):
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
        elif scope["path"] == "/metrics":
            await metrics(scope, receive, send)
        elif scope["path"] == "/health":
            await _text(send, 200, "alive")
        elif scope["path"] == "/ready":
            await _text(send, 200 if readiness.ready else 503, "ready" if readiness.ready else readiness.reason)
        else:
            await _text(send, 404, "not found: /metrics, /health or /ready")

    return app


async def serve_http(host: str, port: int, readiness: Readiness, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
    """Serve the endpoints on host:port until cancelled; started with the bound address."""
    # Imported only when an endpoint is served: hypercorn and its HTTP/2 and WebSocket stacks are
    # about 0.07 s of every process's start, which embedded stores (no endpoint) and tests need not wait.
    from hypercorn.config import Config
    from hypercorn.trio import serve

    config = Config()
    host = host or "0.0.0.0"
    config.bind = [f"[{host}]:{port}" if ":" in host else f"{host}:{port}"]
    config.accesslog = None
    config.errorlog = logging.getLogger("hypercorn.error")
    config.graceful_timeout = 1.0
    await serve(http_app(readiness), config, task_status=task_status)


async def start_http(nursery: trio.Nursery, settings: HttpSettings, readiness: Readiness) -> None:
    """Serve the endpoints in `nursery` if http.port is set."""
    if settings.http_port is not None:
        bound = await nursery.start(serve_http, settings.http_host, settings.http_port, readiness)
        log.info("http_listening", address=bound[0])


async def _text(send, status: int, text: str) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8")]})
    await send({"type": "http.response.body", "body": text.encode() + b"\n"})


async def _lifespan(receive, send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
