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

    With `wake` too (given a callback: calls it once the response may be ready, and returns
    the time by which it is at the latest) a writer with nothing else to send sleeps until
    then instead of waking for the request and again for its answer.
    """

    wait: Callable[[], Awaitable[Any]]
    ready: Callable[[], bool] | None = None
    wake: Callable[[Callable[[], None]], float] | None = None

    def then(self, wait: Callable[[], Awaitable[Any]]) -> Deferred:
        """Another response ready when this one is (`wait` awaits this one's)."""
        return Deferred(wait, self.ready, self.wake)


NO_RESPONSE = object()  # a handler's answer to a request Kafka never answers


class CloseConnection(Exception):
    """Raised by a handler or the dispatcher when the request must end the connection: at once, or
    once `answer` (a response body, or framed buffers once the dispatcher has encoded it) is sent."""

    def __init__(self, reason: str, answer: Any = None):
        super().__init__(reason)
        self.answer = answer
