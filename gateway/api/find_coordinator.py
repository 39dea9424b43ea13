"""FindCoordinator: a group's coordinator is the leader of its __consumer_offsets partition, a
transactional id's the leader of its __transaction_state partition (Kafka's rule); this gateway
when it is the cluster alone."""

from __future__ import annotations

from gateway.acls.model import Operation, ResourceType
from gateway.api.authorization import FAILURES, allowed
from gateway.api.registry import handles
from gateway.api.services import Services
from gateway.kafka_error import KafkaError
from gateway.server.dispatch import Request
from gateway.topics.internal_topic_specs import INTERNAL_PARTITIONS, internal_topic_id
from protocol.kafka.apis import by_name
from protocol.kafka.coordinator_records import OFFSETS_TOPIC, TRANSACTIONS_TOPIC, coordinator_partition
from protocol.kafka.error_codes import ErrorCode

API = by_name("FindCoordinator")
GROUP, TRANSACTION, SHARE = 0, 1, 2
FIRST_BATCHED_VERSION = 4
KEY_RESOURCES = {GROUP: ResourceType.GROUP, TRANSACTION: ResourceType.TRANSACTIONAL_ID}
KEY_TOPICS = {GROUP: OFFSETS_TOPIC, TRANSACTION: TRANSACTIONS_TOPIC}  # where each type of key is kept


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
    try:
        partition = await _partition_of(services, key_type, key)
    except KafkaError as exc:
        return _failed(exc.code, exc.message)
    coordinator = services.cluster.coordinator(request.connection.listener, partition)
    if coordinator is None:
        return _failed(ErrorCode.COORDINATOR_NOT_AVAILABLE, "the coordinator is not known yet")
    return {"error_code": ErrorCode.NONE, "error_message": None, "node_id": coordinator.node_id,
            "host": coordinator.host, "port": coordinator.port}


async def _partition_of(services: Services, key_type: int, key: str) -> tuple[str, int] | None:
    """(topic id, index) of the internal topic's partition the key is kept in. In a cluster the topic
    is made when a key's coordinator is first looked up, as Kafka makes it: its partitions spread over
    the gateways then live (COORDINATOR_NOT_AVAILABLE meanwhile)."""
    name = KEY_TOPICS.get(key_type)
    if name is None:
        return None
    if services.cluster.is_cluster and services.topics.get(name) is None:
        await services.topics.internal(name)
    return str(internal_topic_id(name)), coordinator_partition(key, INTERNAL_PARTITIONS[name])


def _failed(code: ErrorCode, message: str) -> dict:
    return {"error_code": code, "error_message": message, "node_id": -1, "host": "", "port": -1}
