"""DescribeAcls, CreateAcls, DeleteAcls, answered as Kafka's broker does.

Without an authorizer (`authorizer.class.name` empty) each fails with
SECURITY_DISABLED, as Kafka's does: admin tools learn that ACLs are off, not
that the broker is too old for them. With one, describing needs DESCRIBE on
the cluster and changing ALTER; each creation is checked on its own
(INVALID_REQUEST with Kafka's messages), each filter of a deletion matches
on its own, and every change is journaled before it is answered. A request's
changes are applied together, as Kafka applies them as one batch of records.
"""

from __future__ import annotations

from itertools import groupby

from gateway.acls.model import (
    AclBinding,
    AclFilter,
    Operation,
    PatternType,
    Permission,
    ResourceType,
    coded,
    invalid_binding,
)
from gateway.api.authorization import require
from gateway.api.registry import handles
from gateway.api.services import Services
from gateway.kafka_error import KafkaError
from gateway.server.dispatch import Request
from protocol.kafka.apis import by_name
from protocol.kafka.error_codes import ErrorCode

DESCRIBE, CREATE, DELETE = by_name("DescribeAcls"), by_name("CreateAcls"), by_name("DeleteAcls")
# Kafka's own messages: describe says where, create and delete do not.
DESCRIBE_MESSAGE = "No Authorizer is configured on the broker"
CHANGE_MESSAGE = "No Authorizer is configured."
UNKNOWN_FILTER = "Filter contain UNKNOWN elements"


def _check_enabled(services: Services, message: str) -> None:
    if not services.acls.enabled:
        raise KafkaError(ErrorCode.SECURITY_DISABLED, message)


def _filter(kind, name, pattern, principal, host, operation, permission) -> AclFilter:
    """The filter on the wire; INVALID_REQUEST if it holds an UNKNOWN (or unknown code), as Kafka refuses it."""
    selected = AclFilter(coded(ResourceType, kind), name, coded(PatternType, pattern), principal, host,
                         coded(Operation, operation), coded(Permission, permission))
    if selected.has_unknown():
        raise KafkaError(ErrorCode.INVALID_REQUEST, UNKNOWN_FILTER)
    return selected


@handles("DescribeAcls")
async def describe_acls(request: Request, services: Services):
    body = request.body
    try:
        _check_enabled(services, DESCRIBE_MESSAGE)
        require(request, services, Operation.DESCRIBE, ResourceType.CLUSTER)
        found = services.acls.describe(_filter(
            body.resource_type_filter, body.resource_name_filter, body.pattern_type_filter, body.principal_filter,
            body.host_filter, body.operation, body.permission_type))
    except KafkaError as exc:
        return DESCRIBE.Response(error_code=exc.code, error_message=exc.message, resources=[])
    resource, acl = DESCRIBE.Response.Resources, DESCRIBE.Response.Resources.Acls
    return DESCRIBE.Response(resources=[
        resource(resource_type=kind, resource_name=name, pattern_type=pattern,
                 acls=[acl(principal=b.principal, host=b.host, operation=b.operation, permission_type=b.permission)
                       for b in bindings])
        for (kind, name, pattern), bindings in groupby(found, key=lambda b: b.pattern)])


@handles("CreateAcls")
async def create_acls(request: Request, services: Services):
    answers = [_creation(request, services, creation) for creation in request.body.creations]
    wanted = [answer for answer in answers if isinstance(answer, AclBinding)]
    failed: KafkaError | None = None
    try:
        if wanted:
            await services.acls.create(wanted)
    except KafkaError as exc:
        failed = exc
    results = []
    for answer in answers:
        error = answer if isinstance(answer, KafkaError) else failed
        results.append(CREATE.Response.Results() if error is None
                       else CREATE.Response.Results(error_code=error.code, error_message=error.message))
    return CREATE.Response(results=results)


def _creation(request: Request, services: Services, creation) -> AclBinding | KafkaError:
    try:
        _check_enabled(services, CHANGE_MESSAGE)
        require(request, services, Operation.ALTER, ResourceType.CLUSTER)
        binding = AclBinding(coded(ResourceType, creation.resource_type), creation.resource_name,
                             coded(PatternType, creation.resource_pattern_type), creation.principal, creation.host,
                             coded(Operation, creation.operation), coded(Permission, creation.permission_type))
        reason = invalid_binding(binding)
        if reason:
            raise KafkaError(ErrorCode.INVALID_REQUEST, reason)
        return binding
    except KafkaError as exc:
        return exc


@handles("DeleteAcls")
async def delete_acls(request: Request, services: Services):
    filters = request.body.filters
    answers: list[KafkaError | AclFilter] = [_delete_filter(request, services, f) for f in filters]
    wanted = [answer for answer in answers if isinstance(answer, AclFilter)]
    deleted = iter(await services.acls.delete(wanted) if wanted else [])
    result, matching = DELETE.Response.FilterResults, DELETE.Response.FilterResults.MatchingAcls
    return DELETE.Response(filter_results=[
        result(error_code=answer.code, error_message=answer.message, matching_acls=[])
        if isinstance(answer, KafkaError) else
        result(matching_acls=[matching(resource_type=b.resource_type, resource_name=b.name,
                                       pattern_type=b.pattern_type, principal=b.principal, host=b.host,
                                       operation=b.operation, permission_type=b.permission)
                              for b in next(deleted)])
        for answer in answers])


def _delete_filter(request: Request, services: Services, wire) -> AclFilter | KafkaError:
    try:
        _check_enabled(services, CHANGE_MESSAGE)
        require(request, services, Operation.ALTER, ResourceType.CLUSTER)
        return _filter(wire.resource_type_filter, wire.resource_name_filter, wire.pattern_type_filter,
                       wire.principal_filter, wire.host_filter, wire.operation, wire.permission_type)
    except KafkaError as exc:
        return exc
