"""FindCoordinator: one gateway coordinates every group and transaction: this one alone, the
controller in a cluster (coordinators are not spread over gateways yet)."""

from __future__ import annotations

from gateway.acls.model import Operation, ResourceType
from gateway.api.authorization import FAILURES, allowed
from gateway.api.registry import handles
from gateway.api.services import Services
from gateway.server.dispatch import Request
from protocol.kafka.apis import by_name
from protocol.kafka.error_codes import ErrorCode

API = by_name("FindCoordinator")
GROUP, TRANSACTION, SHARE = 0, 1, 2
FIRST_BATCHED_VERSION = 4
KEY_RESOURCES = {GROUP: ResourceType.GROUP, TRANSACTION: ResourceType.TRANSACTIONAL_ID}


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
    found = {"error_code": code, "error_message": message, "node_id": node, "host": host, "port": port}
    if request.version < FIRST_BATCHED_VERSION:
        return API.Response(**_answer_for(request, services, body.key, found))
    return API.Response(coordinators=[
        API.Response.Coordinators(key=key, **_answer_for(request, services, key, found))
        for key in body.coordinator_keys
    ])


def _answer_for(request: Request, services: Services, key: str, found: dict) -> dict:
    """`found`, or Kafka's error for a key the request may not DESCRIBE (its group or transactional id)."""
    resource_type = KEY_RESOURCES.get(request.body.key_type)
    if resource_type is None or allowed(request, services, Operation.DESCRIBE, resource_type, key):
        return found
    code, message = FAILURES[resource_type]
    return {"error_code": code, "error_message": message, "node_id": -1, "host": "", "port": -1}
