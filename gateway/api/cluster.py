"""DescribeCluster and DescribeTopicPartitions: the cluster and its partitions, for admin clients.

Brokers, controller and partition leaders come from the cluster view (the
gateway alone, or the live gateways of a cluster); a partition's replicas
and ISR are its leader, as in Metadata; no replica is offline and the
eligible-leader lists (KIP-966) are empty.
"""

from __future__ import annotations

from gateway.acls.model import Operation, ResourceType
from gateway.api.authorization import allowed, authorized_operations
from gateway.api.internal_topics import internal_topic, is_internal, listed_internal_topics
from gateway.api.leaders import leadership
from gateway.api.metadata import NO_OPERATIONS, TOPIC_OPERATIONS, cluster_operations
from gateway.api.registry import handles
from gateway.api.services import Services
from gateway.server.dispatch import Request
from gateway.topics.topic import KafkaError, check_topic_name
from protocol.kafka.apis import by_name
from protocol.kafka.error_codes import ErrorCode

CLUSTER = by_name("DescribeCluster")
PARTITIONS = by_name("DescribeTopicPartitions")

BROKER_ENDPOINT, CONTROLLER_ENDPOINT = 1, 2
# Kafka's max.request.partition.size.limit default: the most partitions one answer holds.
MAX_PARTITIONS = 2000


@handles("DescribeCluster")
async def describe_cluster(request: Request, services: Services):
    body, cluster = request.body, services.cluster
    if body.endpoint_type != BROKER_ENDPOINT:
        return wrong_endpoint(body.endpoint_type, request.version)
    return CLUSTER.Response(
        cluster_id=cluster.cluster_id, controller_id=cluster.controller_id, endpoint_type=BROKER_ENDPOINT,
        brokers=[CLUSTER.Response.Brokers(broker_id=b.node_id, host=b.host, port=b.port, rack=b.rack)
                 for b in cluster.brokers(request.connection.listener)],
        cluster_authorized_operations=cluster_operations(request, services, body.include_cluster_authorized_operations),
    )


def wrong_endpoint(endpoint_type: int, version: int):
    if endpoint_type == CONTROLLER_ENDPOINT:
        code = ErrorCode.MISMATCHED_ENDPOINT_TYPE
        message = "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER"
    else:
        code, message = ErrorCode.UNSUPPORTED_ENDPOINT_TYPE, f"Unsupported endpoint type {endpoint_type}"
    # v0 clients know neither endpoint error.
    return CLUSTER.Response(error_code=ErrorCode.INVALID_REQUEST if version == 0 else code, error_message=message)


@handles("DescribeTopicPartitions")
async def describe_topic_partitions(request: Request, services: Services):
    body = request.body
    every_topic = not body.topics
    cursor = body.cursor
    first = cursor.topic_name if cursor else ""
    asked = services.topics.names() + listed_internal_topics(services) if every_topic else [t.name for t in body.topics]
    names = sorted({name for name in asked if name >= first})
    if cursor and not every_topic and cursor.topic_name not in names:
        # Kafka fails the whole request: every topic asked for carries the error.
        return PARTITIONS.Response(topics=[PARTITIONS.Response.Topics(name=t.name, error_code=ErrorCode.INVALID_REQUEST)
                                           for t in body.topics])

    def start_of(name: str) -> int:
        return cursor.partition_index if cursor and name == cursor.topic_name else 0

    topics, next_cursor = page(request, services, names, start_of, min(MAX_PARTITIONS, body.response_partition_limit),
                               every_topic)
    return PARTITIONS.Response(topics=topics, next_cursor=next_cursor)


def page(request: Request, services: Services, names: list[str], start_of, limit: int, every_topic: bool):
    """Topics from `names` until `limit` partitions are described, and where the next page starts; those
    the request may not describe are left out of every topic, refused when named."""
    Cursor = PARTITIONS.Response.NextCursor
    topics, remaining = [], limit
    for name in names:
        if remaining <= 0:
            # The cursor names the next topic, whether or not it exists.
            return topics, Cursor(topic_name=name, partition_index=0) if remaining == 0 else None
        if not allowed(request, services, Operation.DESCRIBE, ResourceType.TOPIC, name):
            if not every_topic:
                topics.append(PARTITIONS.Response.Topics(name=name, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                                         topic_authorized_operations=NO_OPERATIONS))
            continue
        stored = services.topics.get(name)
        topic = stored or internal_topic(name)  # an internal topic before its first record: the controller's
        leader_of = leadership(services, stored, topic)
        if topic is None:
            if not every_topic:
                topics.append(missing(name))
            continue
        start = start_of(name)
        end = min(len(topic.partitions), start + remaining)
        operations = authorized_operations(request, services, ResourceType.TOPIC, name, TOPIC_OPERATIONS)
        topics.append(described(topic, range(start, end), leader_of, operations))
        if end < len(topic.partitions):
            return topics, Cursor(topic_name=name, partition_index=end)
        remaining -= max(0, end - start)
    return topics, None


def missing(name: str):
    try:
        check_topic_name(name)
        code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    except KafkaError as exc:
        code = exc.code
    return PARTITIONS.Response.Topics(name=name, error_code=code, topic_authorized_operations=NO_OPERATIONS)


def described(topic, numbers: range, leader_of, operations: int):
    Topic = PARTITIONS.Response.Topics
    partitions = []
    for n in numbers:
        leader, epoch, replicas, isr = leader_of(n)
        partitions.append(Topic.Partitions(
            error_code=ErrorCode.LEADER_NOT_AVAILABLE if leader < 0 else ErrorCode.NONE, partition_index=n,
            leader_id=leader, leader_epoch=epoch, replica_nodes=replicas, isr_nodes=isr,
            eligible_leader_replicas=[], last_known_elr=[]))
    return Topic(name=topic.name, topic_id=topic.topic_id, partitions=partitions, is_internal=is_internal(topic.name),
                 topic_authorized_operations=operations)
