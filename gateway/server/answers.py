"""What a handler may answer besides a response body: later, nothing, or an end to the connection."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Awaitable, Callable


@dataclass
class Deferred:
    """A response that a coroutine function will produce later."""

    wait: Callable[[], Awaitable[Any]]


NO_RESPONSE = object()  # a handler's answer to a request Kafka never answers


class CloseConnection(Exception):
    """Raised by a handler or the dispatcher when the request must end the connection."""
