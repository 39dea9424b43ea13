"""FindCoordinator: this gateway coordinates every group and transaction (one coordinator for now)."""

from __future__ import annotations

from protocol.kafka.apis import by_name
from protocol.kafka.error_codes import ErrorCode

from .registry import handles

API = by_name("FindCoordinator")
GROUP, TRANSACTION, SHARE = 0, 1, 2
FIRST_BATCHED_VERSION = 4


@handles("FindCoordinator")
async def find_coordinator(request):
    body, settings = request.body, request.broker.settings
    host, port = settings.advertised
    node = settings.node_id
    if body.key_type not in (GROUP, TRANSACTION, SHARE):
        code, message, node, host, port = ErrorCode.INVALID_REQUEST, f"unknown key type {body.key_type}", -1, "", -1
    else:
        code, message = ErrorCode.NONE, None
    if request.version < FIRST_BATCHED_VERSION:
        return API.Response(error_code=code, error_message=message, node_id=node, host=host, port=port)
    return API.Response(coordinators=[
        API.Response.Coordinators(key=key, node_id=node, host=host, port=port, error_code=code, error_message=message)
        for key in body.coordinator_keys
    ])
