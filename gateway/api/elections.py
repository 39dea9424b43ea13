"""ElectLeaders: move leadership to a partition's preferred replica (PREFERRED), or to a live
one where it has no live leader (UNCLEAN), answered as Kafka's controller answers.

A partition's replicas are the gateways that may lead it, its preferred leader
first (gateway/cluster/replicas.py). PREFERRED: ELECTION_NOT_NEEDED when it
leads already, PREFERRED_LEADER_NOT_AVAILABLE when that gateway is not live (or
is shutting down). UNCLEAN: ELECTION_NOT_NEEDED while the leader is live; no
election here is unclean in Kafka's sense, as every gateway leads from what the
stores acknowledged. With no partitions named, every partition is tried, and
only those not answered ELECTION_NOT_NEEDED are listed, as Kafka does. A gateway
alone leads every partition already.
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
            ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE: "The preferred leader was not available.",
            ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE: "Eligible topic partition leaders are not available.",
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: "This server does not host this topic-partition.",
            ErrorCode.REQUEST_TIMED_OUT: "The partition's leadership kept changing."}


@handles("ElectLeaders")
@requires(Operation.ALTER, ResourceType.CLUSTER)
async def elect_leaders(request: Request, services: Services):
    election = request.body.election_type  # 0 (PREFERRED) before version 1
    if request.body.topic_partitions is None:
        every = [(name, range(len(services.topics.get(name).partitions))) for name in services.topics.names()]
        results = [(name, [answer for answer in [await _elect(services, name, n, election) for n in numbers]
                           if answer.error_code != ErrorCode.ELECTION_NOT_NEEDED]) for name, numbers in every]
    else:
        results = [(asked.topic, [await _elect(services, asked.topic, n, election) for n in asked.partitions])
                   for asked in request.body.topic_partitions]
    return API.Response(replica_election_results=[Result(topic=name, partition_result=answers)
                                                  for name, answers in results])


async def _elect(services: Services, name: str, number: int, election: int) -> PartitionResult:
    topic = services.topics.get(name)
    if topic is None or not 0 <= number < len(topic.partitions):
        code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    else:
        code = await services.cluster.elect(topic, number, election)
    return PartitionResult(partition_id=number, error_code=code, error_message=MESSAGES.get(code))
