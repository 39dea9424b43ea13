"""Asking another gateway through CHP: a request key, then the answer key it writes."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import structlog
import trio

from gateway.chp.changes import Update
from gateway.chp.chp_client import ChpClient
from gateway.cluster.leadership import on_changes
from gateway.cluster.membership import decoded, encoded
from protocol.kafka.error_codes import ErrorCode

ANSWER_TTL_S = 60.0  # an answer nobody waits for any more expires
log = structlog.get_logger()


async def answered(client: ChpClient, key: str, request: dict, answer_key: str, timeout: float,
                   accept: Callable[[dict], bool] = lambda _: True,
                   given_up: Callable[[], bool] = lambda: False) -> dict | None:
    """Set `key` to `request`, then the first value of `answer_key` that `accept`s (an answer to an
    earlier request may still be there); None if none came within `timeout` seconds, or once a
    change in the cluster makes `given_up()` true (the gateway asked is no longer the one to ask)."""
    with client.watch() as changes, trio.move_on_after(timeout):
        await client.set(key, encoded(request))
        async for change in changes:
            if given_up():
                return None
            if isinstance(change, Update) and change.key == answer_key:
                answer = decoded(change.value)
                if answer is not None and accept(answer):
                    return answer
    return None


async def serve_requests(client: ChpClient, requests: str, answers: str, answer: Callable[[dict], Awaitable[dict]]
                         ) -> None:
    """Answer each request key under `requests` once: `await answer(request)` under `answers` and the
    request's id, then the request removed."""
    handled: set[str] = set()  # until their deletion shows

    async def react():
        pending = {key: decoded(client.get(key)) for key in client.keys_under(requests)}
        handled.intersection_update(pending)
        for key, request in pending.items():
            if key not in handled and request is not None:
                handled.add(key)
                outcome = await _outcome(answer, request, key)
                await client.set(f"{answers}{key.removeprefix(requests)}", encoded(outcome), ttl=ANSWER_TTL_S)
                await client.delete(key)

    await on_changes(client, react, (requests,))


async def _outcome(answer: Callable[[dict], Awaitable[dict]], request: dict, key: str) -> dict:
    """The answer to one request; a failure of its handler, as Kafka's request handler answers an
    unexpected exception: UNKNOWN_SERVER_ERROR, logged, the serving task going on (it ending
    would end the gateway, for one request another gateway left)."""
    try:
        return await answer(request)
    except Exception as exc:  # trio.Cancelled is not one
        log.exception("cluster_request_failed", key=key)
        return {"error": int(ErrorCode.UNKNOWN_SERVER_ERROR), "message": f"{type(exc).__name__}: {exc}"}
