"""InitProducerId: ids and epochs for idempotent and transactional producers.

Without a transactional id Kafka hands out a fresh producer id at epoch 0
on every call, whatever id the request names. With one, the transaction
coordinator bumps the id's epoch, fencing its previous producer.
"""

from __future__ import annotations

from gateway.acls.model import Operation, ResourceType
from gateway.api.authorization import allowed, allowed_any
from gateway.api.registry import handles
from gateway.api.services import Services
from gateway.api.transactions import for_version
from gateway.kafka_error import KafkaError
from gateway.server.dispatch import Request
from protocol.kafka.apis import by_name
from protocol.kafka.error_codes import ErrorCode

API = by_name("InitProducerId")
FIRST_PRODUCER_FENCED = 4
NO_PRODUCER_ID = NO_EPOCH = -1


@handles("InitProducerId", "0-5")
async def init_producer_id(request: Request, services: Services):
    body = request.body
    refusal = _refusal(request, services)
    if refusal is not None:
        return API.Response(error_code=refusal, producer_epoch=NO_EPOCH)
    if body.transactional_id is None:
        try:
            producer_id = await services.producer_ids.allocate()
        except KafkaError as exc:  # in a cluster, the controller gave this gateway no ids in time
            return API.Response(error_code=exc.code, producer_epoch=NO_EPOCH)
        return API.Response(producer_id=producer_id, producer_epoch=0)
    if body.transactional_id == "" or (body.producer_id == NO_PRODUCER_ID) != (body.producer_epoch == NO_EPOCH):
        return API.Response(error_code=ErrorCode.INVALID_REQUEST, producer_epoch=NO_EPOCH)
    expected = None if body.producer_id == NO_PRODUCER_ID else (body.producer_id, body.producer_epoch)
    try:
        txn = await services.transactions.init_producer_id(
            body.transactional_id, body.transaction_timeout_ms, expected)
    except KafkaError as exc:
        code = for_version(exc.code, request.version, FIRST_PRODUCER_FENCED)
        return API.Response(error_code=code, producer_epoch=NO_EPOCH)
    return API.Response(producer_id=txn.producer_id, producer_epoch=txn.producer_epoch)


def _refusal(request: Request, services: Services) -> ErrorCode | None:
    """Kafka's check: WRITE on the transactional id; for an idempotent producer IDEMPOTENT_WRITE on the
    cluster or WRITE on some topic (KIP-679)."""
    transactional_id = request.body.transactional_id
    if transactional_id is not None:
        if allowed(request, services, Operation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id):
            return None
        return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    if (allowed(request, services, Operation.IDEMPOTENT_WRITE, ResourceType.CLUSTER)
            or allowed_any(request, services, Operation.WRITE, ResourceType.TOPIC)):
        return None
    return ErrorCode.CLUSTER_AUTHORIZATION_FAILED
