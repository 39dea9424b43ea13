"""FindCoordinator: a group's coordinator is the leader of its __consumer_offsets partition (Kafka's
rule; this gateway when it is the cluster alone); transactions are the controller's in a cluster
(transaction coordinators are not spread over gateways yet)."""

from __future__ import annotations

from gateway.acls.model import Operation, ResourceType
from gateway.api.authorization import FAILURES, allowed
from gateway.api.registry import handles
from gateway.api.services import Services
from gateway.kafka_error import KafkaError
from gateway.server.dispatch import Request
from gateway.topics.internal_topic_specs import internal_topic_id
from protocol.kafka.apis import by_name
from protocol.kafka.coordinator_records import OFFSETS_PARTITIONS, OFFSETS_TOPIC, coordinator_partition
from protocol.kafka.error_codes import ErrorCode

API = by_name("FindCoordinator")
GROUP, TRANSACTION, SHARE = 0, 1, 2
FIRST_BATCHED_VERSION = 4
KEY_RESOURCES = {GROUP: ResourceType.GROUP, TRANSACTION: ResourceType.TRANSACTIONAL_ID}
OFFSETS_TOPIC_ID = str(internal_topic_id(OFFSETS_TOPIC))


@handles("FindCoordinator")
async def find_coordinator(request: Request, services: Services):
    if request.version < FIRST_BATCHED_VERSION:
        return API.Response(**await _answer_for(request, services, request.body.key))
    return API.Response(coordinators=[API.Response.Coordinators(key=key, **await _answer_for(request, services, key))
                                      for key in request.body.coordinator_keys])


async def _answer_for(request: Request, services: Services, key: str) -> dict:
    """The key's coordinator, or Kafka's error for a key the request may not DESCRIBE (its group or
    transactional id)."""
    key_type = request.body.key_type
    resource_type = KEY_RESOURCES.get(key_type)
    if resource_type is not None and not allowed(request, services, Operation.DESCRIBE, resource_type, key):
        return _failed(*FAILURES[resource_type])
    if key_type not in (GROUP, TRANSACTION, SHARE):
        return _failed(ErrorCode.INVALID_REQUEST, f"unknown key type {key_type}")
    partition = None
    if key_type == GROUP:
        partition = (OFFSETS_TOPIC_ID, coordinator_partition(key, OFFSETS_PARTITIONS))
        try:
            await _offsets_topic(services)
        except KafkaError as exc:
            return _failed(exc.code, exc.message)
    coordinator = services.cluster.coordinator(request.connection.listener, partition)
    if coordinator is None:
        return _failed(ErrorCode.COORDINATOR_NOT_AVAILABLE, "the coordinator is not known yet")
    return {"error_code": ErrorCode.NONE, "error_message": None, "node_id": coordinator.node_id,
            "host": coordinator.host, "port": coordinator.port}


async def _offsets_topic(services: Services) -> None:
    """In a cluster, __consumer_offsets made when a group's coordinator is first looked up, as Kafka
    makes it: its partitions spread over the gateways then live (COORDINATOR_NOT_AVAILABLE meanwhile)."""
    if services.cluster.is_cluster and services.topics.get(OFFSETS_TOPIC) is None:
        await services.topics.internal(OFFSETS_TOPIC)


def _failed(code: ErrorCode, message: str) -> dict:
    return {"error_code": code, "error_message": message, "node_id": -1, "host": "", "port": -1}
