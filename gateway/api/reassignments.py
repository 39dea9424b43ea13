"""List and AlterPartitionReassignments: every store holds every partition, so nothing moves.

Metadata names this gateway as the one replica of each partition (the stores
behind it are not Kafka brokers), so a partition's replica list is
[node_id], and no reassignment is ever in progress. Altering to that same
list succeeds, as Kafka answers a reassignment to the current replicas;
cancelling answers NO_REASSIGNMENT_IN_PROGRESS, as Kafka does when nothing
is moving; any other list is INVALID_REPLICA_ASSIGNMENT, there being no
other replica to move to.
"""

from __future__ import annotations

from gateway.acls.model import Operation, ResourceType
from gateway.api.authorization import requires
from gateway.api.registry import handles
from gateway.api.services import Services
from gateway.server.dispatch import Request
from protocol.kafka.apis import by_name
from protocol.kafka.error_codes import ErrorCode

LIST = by_name("ListPartitionReassignments")
ALTER = by_name("AlterPartitionReassignments")
TopicResult = ALTER.Response.Responses
PartitionResult = TopicResult.Partitions


@handles("ListPartitionReassignments")
@requires(Operation.DESCRIBE, ResourceType.CLUSTER)
async def list_partition_reassignments(request: Request, services: Services):
    return LIST.Response(topics=[])


@handles("AlterPartitionReassignments")
@requires(Operation.ALTER, ResourceType.CLUSTER)
async def alter_partition_reassignments(request: Request, services: Services):
    return ALTER.Response(
        allow_replication_factor_change=request.body.allow_replication_factor_change,
        responses=[TopicResult(name=topic.name, partitions=[
            _alter(services, topic.name, partition.partition_index, partition.replicas)
            for partition in topic.partitions]) for topic in request.body.topics])


def _alter(services: Services, topic: str, index: int, replicas: list[int] | None) -> PartitionResult:
    current = [services.cluster.node_id]
    if services.topics.partition(topic, index) is None:
        code, message = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{topic}-{index} is not a partition of this cluster"
    elif replicas is None:
        code, message = ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, f"no ongoing reassignment for {topic}-{index}"
    elif list(replicas) != current:
        code, message = ErrorCode.INVALID_REPLICA_ASSIGNMENT, (
            f"{topic}-{index} cannot move to replicas {list(replicas)}: every store holds every partition, "
            f"and its only replica is this gateway, node {current[0]}")
    else:
        code, message = ErrorCode.NONE, None
    return PartitionResult(partition_index=index, error_code=code, error_message=message)
