"""ListConfigResources (ListClientMetricsResources at v0): the resources DescribeConfigs can describe.

As Kafka 4.1 answers: v0 lists client-metrics subscriptions only; v1 lists
the types asked for (none: every type it knows), groups with configs first,
then client-metrics subscriptions, broker loggers, brokers (this listener's
nodes) and topics; a type v1 does not know fails the whole request with
UNSUPPORTED_VERSION. The gateway has no client-metrics subscriptions (it
wants no client metrics: telemetry.py), so that type lists nothing.
"""

from __future__ import annotations

from gateway.acls import model as acl
from gateway.api.authorization import allowed
from gateway.api.configs import ResourceType
from gateway.api.registry import handles
from gateway.api.services import Services
from gateway.server.dispatch import Request
from protocol.kafka.apis import by_name
from protocol.kafka.apis.list_config_resources import CLIENT_METRICS
from protocol.kafka.error_codes import ErrorCode

LIST = by_name("ListConfigResources")
LISTED_ORDER = (ResourceType.GROUP, CLIENT_METRICS, ResourceType.BROKER_LOGGER, ResourceType.BROKER,
                ResourceType.TOPIC)  # v1's types, in the order Kafka lists them


def names_of(kind: int, request: Request, services: Services) -> list[str]:
    if kind == ResourceType.GROUP:
        return services.group_configs.groups()
    if kind in (ResourceType.BROKER_LOGGER, ResourceType.BROKER):
        return [str(broker.node_id) for broker in services.cluster.brokers(request.connection.listener)]
    if kind == ResourceType.TOPIC:
        return services.topics.names()
    return []  # CLIENT_METRICS


@handles("ListConfigResources")
async def list_config_resources(request: Request, services: Services):
    if not allowed(request, services, acl.Operation.DESCRIBE_CONFIGS, acl.ResourceType.CLUSTER):
        return LIST.Response(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    supported = LISTED_ORDER if request.version >= 1 else (CLIENT_METRICS,)
    wanted = set(request.body.resource_types or supported)
    if not wanted <= set(supported):
        return LIST.Response(error_code=ErrorCode.UNSUPPORTED_VERSION)
    Resource = LIST.Response.ConfigResources
    return LIST.Response(config_resources=[Resource(resource_name=name, resource_type=kind)
                                           for kind in supported if kind in wanted
                                           for name in names_of(kind, request, services)])
