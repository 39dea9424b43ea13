"""Metadata: brokers, and topics with their partitions' leaders.

A partition's replicas and ISR name its leader gateway alone: the stores
behind it hold its copies but are not Kafka brokers a client could reach
(ARCHITECTURE.md, "A cluster of gateways"). The internal offsets topic is
described as Kafka describes __consumer_offsets (internal_topics), led by
the coordinator.
"""

from __future__ import annotations

from gateway.api.internal_topics import internal_topic, internal_topic_by_id, listed_internal_topics
from gateway.api.registry import handles
from gateway.api.services import Cluster, Services, Topics
from gateway.kafka_error import KafkaError
from gateway.server.dispatch import Request
from protocol.kafka.apis import by_name
from protocol.kafka.error_codes import ErrorCode

API = by_name("Metadata")
NO_OPERATIONS = -2147483648  # Kafka's "authorized operations not requested"
# READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS
TOPIC_OPERATIONS = sum(1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11))


@handles("Metadata")
async def metadata(request: Request, services: Services):
    body, cluster, topics = request.body, services.cluster, services.topics
    auto_create = request.version < 4 or body.allow_auto_topic_creation
    described = [
        await describe_topic(topics, cluster, wanted, auto_create, body.include_topic_authorized_operations)
        for wanted in requested_topics(body, request.version, services)
    ]
    return API.Response(
        brokers=[API.Response.Brokers(node_id=b.node_id, host=b.host, port=b.port, rack=b.rack)
                 for b in cluster.brokers(request.connection.listener)],
        cluster_id=cluster.cluster_id,
        controller_id=cluster.controller_id,
        topics=described,
    )


def requested_topics(body, version: int, services: Services) -> list:
    """The requested topics (name or id), or every topic when the request says all."""
    if body.topics is None or (version == 0 and not body.topics):
        return services.topics.names() + listed_internal_topics(services)
    return [t.name if t.name is not None else t.topic_id for t in body.topics]


async def describe_topic(topics: Topics, cluster: Cluster, wanted, auto_create: bool, with_operations: bool):
    operations = TOPIC_OPERATIONS if with_operations else NO_OPERATIONS
    internal = internal_topic(wanted) if isinstance(wanted, str) else internal_topic_by_id(wanted)
    if internal is not None:
        return _described(internal, lambda index: (cluster.controller_id, internal.partitions[index].leader_epoch),
                          operations, is_internal=True)
    if isinstance(wanted, str):
        try:
            topic = await topics.auto_create(wanted) if auto_create else topics.get(wanted)
        except KafkaError as exc:
            return API.Response.Topics(error_code=exc.code, name=wanted,
                                       topic_authorized_operations=operations)
    else:
        topic = topics.by_id(wanted)
    if topic is None:
        missing = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if isinstance(wanted, str) else ErrorCode.UNKNOWN_TOPIC_ID
        name = wanted if isinstance(wanted, str) else None
        return API.Response.Topics(error_code=missing, name=name, topic_authorized_operations=operations)
    return _described(topic, lambda index: cluster.leader(topic, index), operations, is_internal=False)


def _described(topic, leader_of, operations: int, *, is_internal: bool):
    partitions = []
    for index in range(len(topic.partitions)):
        leader, epoch = leader_of(index)
        partitions.append(API.Response.Topics.Partitions(
            error_code=ErrorCode.LEADER_NOT_AVAILABLE if leader < 0 else ErrorCode.NONE,
            partition_index=index, leader_id=leader, leader_epoch=epoch,
            replica_nodes=[leader] if leader >= 0 else [], isr_nodes=[leader] if leader >= 0 else []))
    return API.Response.Topics(name=topic.name, topic_id=topic.topic_id, partitions=partitions,
                               is_internal=is_internal, topic_authorized_operations=operations)
