"""DescribeLogDirs and AlterReplicaLogDirs: where the gateway's partitions live, and how large they are.

To a Kafka client the gateway has one log directory: its data directory,
under which the embedded stores keep their logs. It holds every partition of
which the gateway is a replica, as a Kafka broker's holds its leaders' and
followers' logs: in a cluster every replica reads the same log from the
stores, so a follower is in sync (Metadata's ISR) and stays in its directory
(AlterReplicaLogDirs below). A partition led here has the bytes of its
batches from the log start on as its size; one followed here reads none of
them and has size 0. The offset lag is 0, the stores' log being the one log
of every replica. Native partitions belong to the mesh: the gateway does not
know their sizes and leaves them out. From v4 the directory's file system
tells its total and usable bytes.

With one directory, AlterReplicaLogDirs has nowhere to move a partition to:
moving a replica it holds to that directory succeeds (it is there), another
path is LOG_DIR_NOT_FOUND, an unknown partition UNKNOWN_TOPIC_OR_PARTITION, a
partition of which this gateway is no replica (in a cluster: Metadata's
replicas, whether or not it leads) REPLICA_NOT_AVAILABLE, as Kafka answers
each. Paths are compared resolved, as DescribeLogDirs reports them.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from gateway.acls.model import Operation, ResourceType
from gateway.api.authorization import allowed, requires
from gateway.api.registry import handles
from gateway.api.services import Services
from gateway.server.dispatch import Request
from protocol.kafka.apis import by_name
from protocol.kafka.error_codes import ErrorCode

API = by_name("DescribeLogDirs")
Result = API.Response.Results
Topic, Partition = Result.Topics, Result.Topics.Partitions
FIRST_VERSION_WITH_SPACE = 4
ALTER = by_name("AlterReplicaLogDirs")
MoveResult = ALTER.Response.Results


@handles("DescribeLogDirs")
@requires(Operation.DESCRIBE, ResourceType.CLUSTER)
async def describe_log_dirs(request: Request, services: Services):
    asked = request.body.topics
    wanted = None if asked is None else {t.topic: set(t.partitions) for t in asked}
    topics = []
    for name in services.topics.names():
        topic = services.topics.get(name)
        if topic.native or (wanted is not None and name not in wanted):
            continue
        partitions = [Partition(partition_index=index, partition_size=size, offset_lag=0)
                      for index, size in hosted(services, topic) if wanted is None or index in wanted[name]]
        if partitions:
            topics.append(Topic(name=name, partitions=partitions))
    directory = services.log_dir.resolve()
    result = Result(log_dir=str(directory), topics=topics)
    if request.version >= FIRST_VERSION_WITH_SPACE and directory.exists():
        usage = shutil.disk_usage(directory)
        result.total_bytes, result.usable_bytes = usage.total, usage.free
    return API.Response(results=[result])


def hosted(services: Services, topic) -> list[tuple[int, int]]:
    """(index, size in bytes) of the topic's partitions of which this gateway is a replica: led
    here, or followed (of whose bytes it reads none: 0)."""
    return [(index, partition.size_bytes) if partition is not None else (index, 0)
            for index, partition in enumerate(topic.partitions)
            if partition is not None or _replica_here(services, topic, index)]


def _replica_here(services: Services, topic, index: int) -> bool:
    """Whether this gateway is one of the partition's replicas, leader or follower: a follower
    holds the partition too (the stores do), so only the replica list decides."""
    replicas, _ = services.cluster.replicas(topic, index)
    return services.cluster.node_id in replicas


@handles("AlterReplicaLogDirs")
async def alter_replica_log_dirs(request: Request, services: Services):
    here = services.log_dir.resolve()
    permitted = allowed(request, services, Operation.ALTER, ResourceType.CLUSTER)
    results: dict[str, list] = {}
    for directory in request.body.dirs:
        found = Path(directory.path).resolve() == here
        for topic in directory.topics:
            results.setdefault(topic.name, []).extend(
                MoveResult.Partitions(partition_index=index, error_code=_move_error(services, topic.name, index, found)
                                      if permitted else ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
                for index in topic.partitions)
    return ALTER.Response(results=[MoveResult(topic_name=name, partitions=partitions)
                                   for name, partitions in results.items()])


def _move_error(services: Services, topic: str, index: int, found: bool) -> ErrorCode:
    if not found:
        return ErrorCode.LOG_DIR_NOT_FOUND
    known = services.topics.get(topic)
    if known is None or not 0 <= index < len(known.partitions):
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    # Kafka's NOT_LEADER_OR_FOLLOWER for no replica, answered as REPLICA_NOT_AVAILABLE by this API
    return ErrorCode.NONE if _replica_here(services, known, index) else ErrorCode.REPLICA_NOT_AVAILABLE
