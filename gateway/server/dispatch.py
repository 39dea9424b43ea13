"""From a request frame to its handler, and from the handler's answer to bytes.

Kafka's rules for requests it cannot read: an ApiVersions request of a
version newer than the broker's is answered in the v0 format with
UNSUPPORTED_VERSION and the ApiVersions range alone (Kafka's
ApiVersionsRequest.getErrorResponse), so that the client can retry with a
version both speak; any other unknown API, unsupported version or
malformed request closes the connection.

On a SASL listener the connection's `authentication` (server/authentication.py)
says which requests are served before it has authenticated, and takes the bare
tokens that follow a SaslHandshake v0.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

import structlog
import trio

from gateway.observability.broker_metrics import FAILED_REQUESTS, request_seconds
from gateway.server.answers import NO_RESPONSE, CloseConnection, Deferred
from gateway.server.principal import ANONYMOUS
from protocol.errors import DecodeError
from protocol.kafka import decode_request, encode_response_pieces, peek_request_header
from protocol.kafka.apis import by_name
from protocol.kafka.error_codes import ErrorCode
from protocol.kafka.framing import SIZE_PREFIX_BYTES
from protocol.kafka.schema import Api, Versions

log = structlog.get_logger()

API_VERSIONS = by_name("ApiVersions")


@dataclass
class Request:
    """What a handler gets besides the services: the decoded request and where it came from."""

    header: Any
    body: Any
    version: int
    connection: Any  # the Connection: its peer and the listener it came through
    size: int = 0  # bytes of the request frame, as client quotas count them

    @property
    def client_id(self) -> str | None:
        return self.header.client_id

    @property
    def user(self) -> str:
        """The user quotas know the client as: its principal's name, ANONYMOUS unless authenticated."""
        return getattr(self.connection, "principal", ANONYMOUS).name


@dataclass(frozen=True)
class Route:
    """An API, the versions served, and its handler: `await handler(request, services)`.

    An API not `advertised` is served all the same but left out of ApiVersions, as
    Kafka leaves out the telemetry APIs of a broker with no metrics reporter for them.
    """

    api: Api
    versions: Versions
    handler: Callable[[Request, Any], Awaitable[Any]]
    advertised: bool = True


def advertised(routes: dict[int, Route]) -> list:
    """ApiVersions' entry (api key, min and max version) of every API it lists, by key."""
    return [API_VERSIONS.Response.ApiKeys(api_key=key, min_version=r.versions.low, max_version=r.versions.high)
            for key, r in sorted(routes.items()) if r.advertised]


def _handler_failure(exc: Exception, route: Route, version: int, correlation_id: int) -> CloseConnection:
    """What a handler's exception ends its connection with (never the server): a CloseConnection
    as raised, its answer encoded; a bug's, with a log line. Called where `exc` is caught (a
    try statement, not a context manager: it is on every request's path)."""
    FAILED_REQUESTS.labels(route.api.name).inc()
    if isinstance(exc, CloseConnection):
        if exc.answer is not None:  # sent before the connection closes
            exc.answer = encode_response_pieces(route.api.key, version, correlation_id, exc.answer)
        return exc
    log.exception("handler_failed", api=route.api.name, version=version)
    return CloseConnection(f"{route.api.name} v{version} failed: {exc!r}")


class Dispatcher:
    """Routes request frames to handlers, each given the request and the services."""

    def __init__(self, routes: dict[int, Route], services: Any):
        self.routes = routes
        self.services = services

    async def dispatch(self, payload: bytes, connection) -> list | Deferred | None:
        """The response frame (size prefix included) as buffers to send in order,
        a Deferred one, or None."""
        authentication = getattr(connection, "authentication", None)  # None: a listener without SASL
        if authentication is not None and authentication.raw_tokens:
            token = await authentication.raw_token(bytes(payload))
            return [len(token).to_bytes(SIZE_PREFIX_BYTES, "big"), token]
        try:
            api_key, version, correlation_id = peek_request_header(payload)
        except DecodeError as exc:
            raise CloseConnection(f"unreadable request header: {exc}") from None
        refusal = authentication and authentication.refusal(api_key, trio.current_time())
        if refusal:
            raise CloseConnection(refusal)
        route = self.routes.get(api_key)
        if route is None:
            raise CloseConnection(f"unsupported API key {api_key}")
        if version not in route.versions:
            if api_key == API_VERSIONS.key:
                return self.unsupported_api_versions(correlation_id)
            raise CloseConnection(f"{route.api.name} v{version} is not supported")
        try:
            header, body = decode_request(payload)
        except DecodeError as exc:
            raise CloseConnection(f"malformed {route.api.name} v{version}: {exc}") from None
        request = Request(header, body, version, connection, len(payload))
        started = time.perf_counter()
        try:
            answer = await route.handler(request, self.services)
            if isinstance(answer, Deferred):
                return answer.then(lambda: self._encode_later(answer, route, version, correlation_id, started))
            return self._encode(answer, route, version, correlation_id, started)
        except Exception as exc:  # trio.Cancelled is not one
            raise _handler_failure(exc, route, version, correlation_id) from None

    async def _encode_later(self, deferred: Deferred, route: Route, version, correlation_id, started: float):
        try:
            return self._encode(await deferred.wait(), route, version, correlation_id, started)
        except Exception as exc:
            raise _handler_failure(exc, route, version, correlation_id) from None

    @staticmethod
    def _encode(answer, route: Route, version: int, correlation_id: int, started: float) -> list | None:
        """The framed response as buffers to send in order; the request's time is measured to here."""
        request_seconds(route.api.name).observe(time.perf_counter() - started)
        if answer is NO_RESPONSE:
            return None
        return encode_response_pieces(route.api.key, version, correlation_id, answer)

    def unsupported_api_versions(self, correlation_id: int) -> list:
        own = {API_VERSIONS.key: self.routes[API_VERSIONS.key]}
        body = API_VERSIONS.Response(error_code=ErrorCode.UNSUPPORTED_VERSION, api_keys=advertised(own))
        return encode_response_pieces(API_VERSIONS.key, 0, correlation_id, body)
