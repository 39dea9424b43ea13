"""DescribeQuorum: the cluster's controller, as a KRaft quorum of one voter.

A Kafka broker forwards DescribeQuorum to the active controller; here the
controller is the cluster view's controller_id (this gateway today), so the
answer is the quorum this model truly has: one voter, the controller, its
leader, and the other brokers as observers. The gateway keeps no KRaft
metadata log: the leader epoch is 1 (the first and only election) and every
offset 0, so no replica lags. Only __cluster_metadata-0 is described, as a
controller answers: another partition is UNKNOWN_TOPIC_OR_PARTITION, a
request for more or fewer than one partition INVALID_REQUEST.
"""

from __future__ import annotations

from gateway.acls.model import Operation, ResourceType
from gateway.api.authorization import requires
from gateway.api.registry import handles
from gateway.api.services import Services
from gateway.server.dispatch import Request
from gateway.wall_clock import now_ms
from protocol.kafka.apis import by_name
from protocol.kafka.error_codes import ErrorCode

API = by_name("DescribeQuorum")
Topic = API.Response.Topics
Partition = Topic.Partitions
Replica = Partition.CurrentVoters
Node = API.Response.Nodes
METADATA_TOPIC, METADATA_PARTITION = "__cluster_metadata", 0
LEADER_EPOCH = 1
FIRST_VERSION_WITH_NODES = 2


@handles("DescribeQuorum")
@requires(Operation.DESCRIBE, ResourceType.CLUSTER)
async def describe_quorum(request: Request, services: Services):
    asked = [(topic.topic_name, partition.partition_index)
             for topic in request.body.topics for partition in topic.partitions]
    if len(asked) != 1:
        return API.Response(error_code=ErrorCode.INVALID_REQUEST,
                            error_message="DescribeQuorum describes exactly one partition, __cluster_metadata-0")
    name, index = asked[0]
    if (name, index) != (METADATA_TOPIC, METADATA_PARTITION):
        return API.Response(topics=[Topic(topic_name=name, partitions=[Partition(
            partition_index=index, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, leader_id=-1, leader_epoch=-1,
            high_watermark=-1, error_message=f"{name}-{index} is not the metadata partition")])])
    return _quorum(services, request.connection.listener, request.version)


def _quorum(services: Services, listener: str, version: int):
    cluster, now = services.cluster, now_ms()
    brokers, controller = cluster.brokers(listener), cluster.controller_id

    def replica(node: int):
        return Replica(replica_id=node, log_end_offset=0, last_fetch_timestamp=now, last_caught_up_timestamp=now)

    partition = Partition(partition_index=METADATA_PARTITION, leader_id=controller, leader_epoch=LEADER_EPOCH,
                          high_watermark=0, current_voters=[replica(controller)],
                          observers=[replica(b.node_id) for b in brokers if b.node_id != controller])
    nodes = [Node(node_id=b.node_id, listeners=[Node.Listeners(name=listener, host=b.host, port=b.port)])
             for b in brokers if b.node_id == controller and version >= FIRST_VERSION_WITH_NODES]
    return API.Response(topics=[Topic(topic_name=METADATA_TOPIC, partitions=[partition])], nodes=nodes)
