"""Kafka's request quota (request_percentage): the share of time a client's requests may take.

Every request's handling time is counted, as a percentage of a second, against
the client's request_percentage; a client over it is throttled: the response
carries the larger of this and any byte-rate throttle time, and the
connection is muted as long. The time counted is the handler's own (up to
its answer or deferred answer), where Kafka counts its threads' time.
"""

from __future__ import annotations

import time

from gateway.quotas.entities import REQUEST_PERCENTAGE
from gateway.server.answers import NO_RESPONSE, Deferred


def measured(handler):
    """`handler`, its time counted against the client's request quota."""
    async def handle(request, services):
        started = time.perf_counter()
        answer = await handler(request, services)
        percent_seconds = (time.perf_counter() - started) * 100
        throttle_ms = services.quotas.record(REQUEST_PERCENTAGE, request.client_id, percent_seconds, request.user)
        if not throttle_ms:
            return answer
        request.connection.throttle(throttle_ms)
        if isinstance(answer, Deferred):
            return answer.then(lambda: _later(answer, throttle_ms))
        return _throttled(answer, throttle_ms)

    return handle


async def _later(deferred: Deferred, throttle_ms: int):
    return _throttled(await deferred.wait(), throttle_ms)


def _throttled(answer, throttle_ms: int):
    if answer is not NO_RESPONSE and hasattr(answer, "throttle_time_ms"):
        answer.throttle_time_ms = max(answer.throttle_time_ms, throttle_ms)
    return answer
