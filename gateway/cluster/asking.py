"""Asking the controller through CHP: a request key, then the answer key it writes."""

from __future__ import annotations

from collections.abc import Callable

import trio

from gateway.chp.changes import Update
from gateway.chp.chp_client import ChpClient
from gateway.cluster.membership import decoded, encoded


async def answered(client: ChpClient, key: str, request: dict, answer_key: str, timeout: float,
                   accept: Callable[[dict], bool] = lambda _: True) -> dict | None:
    """Set `key` to `request`, then the first value of `answer_key` that `accept`s (an answer to an
    earlier request may still be there); None if none came within `timeout` seconds."""
    with client.watch() as changes, trio.move_on_after(timeout):
        await client.set(key, encoded(request))
        async for change in changes:
            if isinstance(change, Update) and change.key == answer_key:
                answer = decoded(change.value)
                if answer is not None and accept(answer):
                    return answer
    return None
