"""Metadata: brokers, and topics with their partitions' leaders.

A partition's replicas are the gateways that may lead it, its preferred
leader first, and its ISR the live ones among them: any gateway can lead it
from the stores, which hold its copies but are not Kafka brokers a client
could reach (ARCHITECTURE.md, "A cluster of gateways"). The internal offsets topic is
described as Kafka describes __consumer_offsets (internal_topics), led by
the coordinator.
"""

from __future__ import annotations

from gateway.acls.model import CLUSTER_NAME, Operation, ResourceType
from gateway.api.authorization import allowed, authorized_operations, failure, may_create
from gateway.api.internal_topics import internal_topic, internal_topic_by_id, listed_internal_topics
from gateway.api.leaders import leadership
from gateway.api.registry import handles
from gateway.api.services import Services
from gateway.kafka_error import KafkaError
from gateway.server.dispatch import Request
from protocol.kafka.apis import by_name
from protocol.kafka.error_codes import ErrorCode

API = by_name("Metadata")
NO_OPERATIONS = -2147483648  # Kafka's "authorized operations not requested"
TOPIC_OPERATIONS = (Operation.READ, Operation.WRITE, Operation.CREATE, Operation.DELETE, Operation.ALTER,
                    Operation.DESCRIBE, Operation.DESCRIBE_CONFIGS, Operation.ALTER_CONFIGS)
CLUSTER_OPERATIONS = (Operation.CREATE, Operation.ALTER, Operation.DESCRIBE, Operation.CLUSTER_ACTION,
                      Operation.DESCRIBE_CONFIGS, Operation.ALTER_CONFIGS, Operation.IDEMPOTENT_WRITE)


@handles("Metadata")
async def metadata(request: Request, services: Services):
    body, cluster = request.body, services.cluster
    auto_create = request.version < 4 or body.allow_auto_topic_creation
    every_topic = lists_every_topic(body, request.version)
    described = []
    for wanted in requested_topics(body, request.version, services):
        name = wanted if isinstance(wanted, str) else _name_of(services, wanted)
        if name is None or allowed(request, services, Operation.DESCRIBE, ResourceType.TOPIC, name):
            described.append(await describe_topic(request, services, wanted, auto_create))
        elif not every_topic:  # one it may not describe is left out of a list of all, refused when named
            described.append(API.Response.Topics(
                error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, name=wanted if isinstance(wanted, str) else None,
                topic_authorized_operations=NO_OPERATIONS))
    return API.Response(
        brokers=[API.Response.Brokers(node_id=b.node_id, host=b.host, port=b.port, rack=b.rack)
                 for b in cluster.brokers(request.connection.listener)],
        cluster_id=cluster.cluster_id,
        controller_id=cluster.controller_id,
        topics=described,
        # v8-10 only: librdkafka's DescribeCluster asks here
        cluster_authorized_operations=cluster_operations(request, services, body.include_cluster_authorized_operations),
    )


def lists_every_topic(body, version: int) -> bool:
    return body.topics is None or (version == 0 and not body.topics)


def requested_topics(body, version: int, services: Services) -> list:
    """The requested topics (name or id), or every topic when the request says all."""
    if lists_every_topic(body, version):
        return services.topics.names() + listed_internal_topics(services)
    return [t.name if t.name is not None else t.topic_id for t in body.topics]


def _name_of(services: Services, topic_id) -> str | None:
    topic = services.topics.by_id(topic_id) or internal_topic_by_id(topic_id)
    return None if topic is None else topic.name


async def describe_topic(request: Request, services: Services, wanted, auto_create: bool):
    topics = services.topics
    with_operations = request.body.include_topic_authorized_operations
    internal = internal_topic(wanted) if isinstance(wanted, str) else internal_topic_by_id(wanted)
    if internal is not None:  # its records' topic once it has any, else the controller's
        stored = topics.get(internal.name)
        return _described(stored or internal, leadership(services, stored, internal),
                          topic_operations(request, services, internal.name, with_operations), is_internal=True)
    if isinstance(wanted, str):
        try:
            topic = topics.get(wanted)
            if topic is None and auto_create and _auto_creating(services):
                if not may_create(request, services, wanted):
                    raise failure(ResourceType.TOPIC)
                topic = await topics.auto_create(wanted)
        except KafkaError as exc:
            return API.Response.Topics(error_code=exc.code, name=wanted, topic_authorized_operations=NO_OPERATIONS)
    else:
        topic = topics.by_id(wanted)
    if topic is None:
        missing = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if isinstance(wanted, str) else ErrorCode.UNKNOWN_TOPIC_ID
        name = wanted if isinstance(wanted, str) else None
        return API.Response.Topics(error_code=missing, name=name, topic_authorized_operations=NO_OPERATIONS)
    return _described(topic, leadership(services, topic),
                      topic_operations(request, services, topic.name, with_operations), is_internal=False)


def _auto_creating(services: Services) -> bool:
    return services.broker_configs.get("auto.create.topics.enable").value == "true"


def topic_operations(request: Request, services: Services, name: str, wanted: bool) -> int:
    """The topic's operations the request may do, as Kafka's bit field, if asked for."""
    if not wanted:
        return NO_OPERATIONS
    return authorized_operations(request, services, ResourceType.TOPIC, name, TOPIC_OPERATIONS)


def cluster_operations(request: Request, services: Services, wanted: bool) -> int:
    """The cluster's operations the request may do, as Kafka's bit field, if asked for: none
    unless it may describe the cluster, as in Kafka."""
    if not wanted:
        return NO_OPERATIONS
    if not allowed(request, services, Operation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        return 0
    return authorized_operations(request, services, ResourceType.CLUSTER, CLUSTER_NAME, CLUSTER_OPERATIONS)


def _described(topic, leadership_of, operations: int, *, is_internal: bool):
    partitions = []
    for index in range(len(topic.partitions)):
        leader, epoch, replicas, isr = leadership_of(index)
        partitions.append(API.Response.Topics.Partitions(
            error_code=ErrorCode.LEADER_NOT_AVAILABLE if leader < 0 else ErrorCode.NONE,
            partition_index=index, leader_id=leader, leader_epoch=epoch, replica_nodes=replicas, isr_nodes=isr))
    return API.Response.Topics(name=topic.name, topic_id=topic.topic_id, partitions=partitions,
                               is_internal=is_internal, topic_authorized_operations=operations)
