"""ElectLeaders: the gateway is already the leader, and the preferred one, of its partitions.

Each partition has one replica, this gateway (until leadership is shared
between gateways): a preferred or unclean election asked for a partition is
answered ELECTION_NOT_NEEDED, as Kafka answers when the leader is already
the preferred live replica; with no partitions named, Kafka elects only
where a leader is missing or not preferred, so nothing here.
"""

from __future__ import annotations

from gateway.acls.model import Operation, ResourceType
from gateway.api.authorization import requires
from gateway.api.registry import handles
from gateway.api.services import Services
from gateway.server.dispatch import Request
from protocol.kafka.apis import by_name
from protocol.kafka.error_codes import ErrorCode

API = by_name("ElectLeaders")
Result = API.Response.ReplicaElectionResults
PartitionResult = Result.PartitionResult
MESSAGES = {ErrorCode.ELECTION_NOT_NEEDED: "Leader election not needed for topic partition.",
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: "This server does not host this topic-partition."}


@handles("ElectLeaders")
@requires(Operation.ALTER, ResourceType.CLUSTER)
async def elect_leaders(request: Request, services: Services):
    asked = request.body.topic_partitions or []
    return API.Response(replica_election_results=[
        Result(topic=topic.topic, partition_result=[
            _result(services.topics.partition(topic.topic, number), number) for number in topic.partitions])
        for topic in asked])


def _result(partition, number: int) -> PartitionResult:
    code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if partition is None else ErrorCode.ELECTION_NOT_NEEDED
    return PartitionResult(partition_id=number, error_code=code, error_message=MESSAGES[code])
