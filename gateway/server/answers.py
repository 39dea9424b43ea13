"""What a handler may answer besides a response body: later, nothing, or an end to the connection."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Awaitable, Callable


@dataclass
class Deferred:
    """A response that a coroutine function will produce later.

    With `ready` (whether the response would come at once) the coroutine only waits, its
    deadlines fixed when the request arrived: the connection's writer then awaits it when the
    response's turn comes, instead of a task of its own per request, and sends the responses
    that are ready together.
    """

    wait: Callable[[], Awaitable[Any]]
    ready: Callable[[], bool] | None = None


NO_RESPONSE = object()  # a handler's answer to a request Kafka never answers


class CloseConnection(Exception):
    """Raised by a handler or the dispatcher when the request must end the connection: at once, or
    once `answer` (a response body, or framed buffers once the dispatcher has encoded it) is sent."""

    def __init__(self, reason: str, answer: Any = None):
        super().__init__(reason)
        self.answer = answer
