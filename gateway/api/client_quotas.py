"""DescribeClientQuotas and AlterClientQuotas (KIP-546), answered as Kafka answers them.

An alteration is checked whole (entity, then every key and value) before
anything of it changes; each entry succeeds or fails on its own.
"""

from __future__ import annotations

from gateway.acls.model import Operation, ResourceType
from gateway.api.authorization import require, requires
from gateway.api.registry import handles
from gateway.api.services import Services
from gateway.kafka_error import KafkaError
from gateway.quotas.entities import check_value, checked_entity, describe_filter, invalid
from gateway.server.dispatch import Request
from protocol.kafka.apis import by_name

DESCRIBE, ALTER = by_name("DescribeClientQuotas"), by_name("AlterClientQuotas")


@handles("DescribeClientQuotas")
@requires(Operation.DESCRIBE_CONFIGS, ResourceType.CLUSTER)
async def describe_client_quotas(request: Request, services: Services):
    body = request.body
    try:
        exact, any_name = describe_filter([(c.entity_type, c.match_type, c.match) for c in body.components])
    except KafkaError as exc:
        return DESCRIBE.Response(error_code=exc.code, error_message=exc.message, entries=None)
    entry, name, value = DESCRIBE.Response.Entries, DESCRIBE.Response.Entries.Entity, DESCRIBE.Response.Entries.Values
    return DESCRIBE.Response(entries=[
        entry(entity=[name(entity_type=t, entity_name=n) for t, n in entity],
              values=[value(key=k, value=v) for k, v in sorted(values.items())])
        for entity, values in services.quotas.describe(exact, any_name, body.strict)])


@handles("AlterClientQuotas")
async def alter_client_quotas(request: Request, services: Services):
    results = []
    for entry in request.body.entries:
        pairs = [(e.entity_type, e.entity_name) for e in entry.entity]
        result = ALTER.Response.Entries(entity=[ALTER.Response.Entries.Entity(entity_type=t, entity_name=n)
                                                for t, n in pairs])
        try:
            require(request, services, Operation.ALTER_CONFIGS, ResourceType.CLUSTER)
            await _alter(services, pairs, entry.ops, request.body.validate_only)
        except KafkaError as exc:
            result.error_code, result.error_message = exc.code, exc.message
        results.append(result)
    return ALTER.Response(entries=results)


async def _alter(services: Services, pairs, ops, validate_only: bool) -> None:
    entity = checked_entity(pairs)
    changes: dict[str, float | None] = {}
    for op in ops:
        if op.key in changes:
            raise invalid(f"Duplicate quota key {op.key} not updating quota for entity")
        changes[op.key] = None if op.remove else op.value
        check_value(entity, op.key, changes[op.key])
    if not validate_only:
        await services.quotas.alter(entity, changes)
