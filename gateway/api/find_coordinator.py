"""FindCoordinator: one gateway coordinates every group and transaction: this one alone, the
controller in a cluster (coordinators are not spread over gateways yet)."""

from __future__ import annotations

from gateway.api.registry import handles
from gateway.api.services import Services
from gateway.server.dispatch import Request
from protocol.kafka.apis import by_name
from protocol.kafka.error_codes import ErrorCode

API = by_name("FindCoordinator")
GROUP, TRANSACTION, SHARE = 0, 1, 2
FIRST_BATCHED_VERSION = 4


@handles("FindCoordinator")
async def find_coordinator(request: Request, services: Services):
    body = request.body
    coordinator = services.cluster.coordinator(request.connection.listener)
    code, message, node, host, port = ErrorCode.NONE, None, -1, "", -1
    if body.key_type not in (GROUP, TRANSACTION, SHARE):
        code, message = ErrorCode.INVALID_REQUEST, f"unknown key type {body.key_type}"
    elif coordinator is None:
        code, message = ErrorCode.COORDINATOR_NOT_AVAILABLE, "the controller is not known yet"
    else:
        node, host, port = coordinator.node_id, coordinator.host, coordinator.port
    if request.version < FIRST_BATCHED_VERSION:
        return API.Response(error_code=code, error_message=message, node_id=node, host=host, port=port)
    return API.Response(coordinators=[
        API.Response.Coordinators(key=key, node_id=node, host=host, port=port, error_code=code, error_message=message)
        for key in body.coordinator_keys
    ])
