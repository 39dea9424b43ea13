"""List and AlterPartitionReassignments: every store holds every partition, so no data moves.

A partition's replicas are the gateways that may lead it, its preferred leader
first (gateway/cluster/replicas.py). A reassignment replaces that list at once
(the stores already hold what any replica needs), moving leadership to its
first live gateway if the leader is not in it; so none is ever in progress, and
cancelling answers NO_REASSIGNMENT_IN_PROGRESS, as Kafka does when nothing is
moving. Replicas must be distinct live gateways (INVALID_REPLICA_ASSIGNMENT).
A gateway alone is the one replica of each partition: only that list is taken.
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
            await _alter(services, topic.name, partition.partition_index, partition.replicas,
                         request.body.allow_replication_factor_change)
            for partition in topic.partitions]) for topic in request.body.topics])


async def _alter(services: Services, topic_name: str, index: int, replicas: list[int] | None,
                 allow_factor_change: bool) -> PartitionResult:
    topic = services.topics.get(topic_name)
    if topic is None or not 0 <= index < len(topic.partitions):
        code, message = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{topic_name}-{index} is not a partition of this cluster"
    elif replicas is None:
        code, message = ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, f"no ongoing reassignment for {topic_name}-{index}"
    elif not allow_factor_change and len(replicas) != len(current := services.cluster.replicas(topic, index)[0]):
        code, message = ErrorCode.INVALID_REPLICATION_FACTOR, (
            f"The replication factor is changed from {len(current)} to {len(replicas)} but "
            f"allowReplicationFactorChange is false")
    else:
        code, message = await services.cluster.reassign(topic, index, list(replicas))
    return PartitionResult(partition_index=index, error_code=code, error_message=message)
