"""What a request may do: the authorizer asked for the connection's principal and peer address.

Handlers state what they authorize through these functions, which answer
with Kafka's error for the resource's type; without an authorizer every
question is answered yes at once.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

from gateway.acls.authorizer import Who
from gateway.acls.model import CLUSTER_NAME, Operation, ResourceType
from gateway.api.services import Services
from gateway.kafka_error import KafkaError
from gateway.server.dispatch import Request
from protocol.kafka.apis import ALL
from protocol.kafka.error_codes import ErrorCode

FAILURES = {  # Kafka's error, and its default message, for a refused operation on a resource of a type
    ResourceType.TOPIC: (ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed."),
    ResourceType.GROUP: (ErrorCode.GROUP_AUTHORIZATION_FAILED, "Group authorization failed."),
    ResourceType.CLUSTER: (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."),
    ResourceType.TRANSACTIONAL_ID: (ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                                    "Transactional Id authorization failed."),
    ResourceType.DELEGATION_TOKEN: (ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED,
                                    "Delegation Token authorization failed."),
}


def who(request: Request) -> Who:
    connection = request.connection
    return Who(str(connection.principal), connection.peer.rsplit(":", 1)[0])


def allowed(request: Request, services: Services, operation: Operation, resource_type: ResourceType,
            name: str = CLUSTER_NAME) -> bool:
    acls = services.acls
    return not acls.enabled or acls.authorize(who(request), operation, resource_type, name)


def allowed_names(request: Request, services: Services, operation: Operation, resource_type: ResourceType,
                  names: Iterable[str]) -> set[str]:
    """Those of `names` the request may do `operation` to."""
    if not services.acls.enabled:
        return set(names)
    return {name for name in set(names) if allowed(request, services, operation, resource_type, name)}


def failure(resource_type: ResourceType) -> KafkaError:
    return KafkaError(*FAILURES[resource_type])


def require(request: Request, services: Services, operation: Operation, resource_type: ResourceType,
            name: str = CLUSTER_NAME) -> None:
    """Nothing if the request may do `operation` to the resource; else Kafka's error for it, raised."""
    if not allowed(request, services, operation, resource_type, name):
        raise failure(resource_type)


def allowed_any(request: Request, services: Services, operation: Operation, resource_type: ResourceType) -> bool:
    """Whether the request may do `operation` to some resource of the type."""
    acls = services.acls
    return not acls.enabled or acls.authorize_any(who(request), operation, resource_type)


def may_create(request: Request, services: Services, topic: str) -> bool:
    """Whether the request may create the topic: CREATE on the cluster or on the topic, as Kafka asks."""
    return (allowed(request, services, Operation.CREATE, ResourceType.CLUSTER)
            or allowed(request, services, Operation.CREATE, ResourceType.TOPIC, topic))


def authorized_operations(request: Request, services: Services, resource_type: ResourceType, name: str,
                          operations: Iterable[Operation]) -> int:
    """Kafka's bit field of those of `operations` the request may do to the resource."""
    return sum(1 << op for op in operations if allowed(request, services, op, resource_type, name))


def requires(operation: Operation, resource_type: ResourceType, name_of: Callable[[Any], str] | None = None):
    """What a handler authorizes, declared on it: unless the request may do `operation` to the resource
    named `name_of(body)` (the cluster without it), the handler is not called and the answer is its API's
    response with Kafka's error at the top, every other field left empty."""
    def declare(handler):
        @functools.wraps(handler)
        async def checked(request: Request, services: Services):
            name = CLUSTER_NAME if name_of is None else name_of(request.body)
            if allowed(request, services, operation, resource_type, name):
                return await handler(request, services)
            return refused(request, resource_type)
        return checked
    return declare


def refused(request: Request, resource_type: ResourceType):
    """The request's API's response with nothing but Kafka's error for the resource's type."""
    code, message = FAILURES[resource_type]
    response = ALL[request.header.api_key].Response(error_code=code)
    if hasattr(response, "error_message"):
        response.error_message = message
    return response


def group_id(body) -> str:
    return body.group_id


def transactional_id(body) -> str:
    return body.transactional_id
