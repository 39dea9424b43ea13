"""Transaction markers for partitions another gateway leads, written by that gateway.

Kafka's transaction coordinator sends WriteTxnMarkers to each partition's
leader; here the coordinator leaves the marker batch under
`cluster/marker-requests/<leader node id>/<request id>`, the leader appends
it to its partition as it would its own marker, and answers under
`cluster/marker-answers/<request id>` once the stores hold it (or with
Kafka's error: NOT_LEADER_OR_FOLLOWER if it no longer leads the partition,
a fencing error if the marker is refused). The coordinator stops waiting
as soon as CHP names another leader (one killed never answers), and
retries a transaction's completion until every marker is written.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

import structlog

from gateway.chp.chp_client import ChpClient
from gateway.cluster.asking import answered, serve_requests
from gateway.cluster.leadership import Leaders
from gateway.kafka_error import KafkaError
from protocol.kafka.error_codes import ErrorCode
from protocol.records import RecordBatch

log = structlog.get_logger()

REQUESTS = "cluster/marker-requests/"
ANSWERS = "cluster/marker-answers/"
ANSWER_TIMEOUT_S = 10.0
PartitionOf = Callable[[str, int], object | None]  # (topic, index) -> the PartitionLog led here, if any


class RemotePartition:
    """A partition led by gateway `leader`, as the marker writer appends to it. `leader_now()`
    names its leader as CHP says now: a leader that died or handed it over is not waited for."""

    def __init__(self, client: ChpClient, topic: str, index: int, leader: int, leader_now: Callable[[], int | None]):
        self.client = client
        self.topic, self.index, self.leader = topic, index, leader
        self.leader_now = leader_now

    async def append(self, batch: RecordBatch) -> tuple[int, int, int]:
        """(offset, -1, -1) in PartitionLog.append's shape: the leader holds the sequence, a marker
        has no log append time."""
        request = uuid.uuid4().hex
        answer = await answered(self.client, f"{REQUESTS}{self.leader}/{request}",
                                {"topic": self.topic, "index": self.index, "batch": bytes(batch.buffer).hex()},
                                f"{ANSWERS}{request}", ANSWER_TIMEOUT_S,
                                given_up=lambda: self.leader_now() != self.leader)
        if answer is None:
            await self.client.delete(f"{REQUESTS}{self.leader}/{request}")
            if self.leader_now() != self.leader:
                raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER, f"gateway {self.leader} no longer leads the partition")
            raise KafkaError(ErrorCode.REQUEST_TIMED_OUT, f"gateway {self.leader} did not write the marker in time")
        await self.client.delete(f"{ANSWERS}{request}")
        if answer["error"]:
            raise KafkaError(ErrorCode(answer["error"]), answer["message"])
        return answer["offset"], -1, -1

    async def wait_durable(self, sequence: int) -> None:
        """Nothing to wait for: the leader answered once the stores held the marker."""


def remote_partitions(client: ChpClient, leaders: Leaders, node_id: int,
                      topic_id_of: Callable[[str], str | None]) -> Callable[[str, int], RemotePartition | None]:
    """(topic, index) -> the partition as led by another gateway; None for a topic that is gone."""
    def remote(topic: str, index: int) -> RemotePartition | None:
        topic_id = topic_id_of(topic)
        if topic_id is None:
            return None
        def leader_now() -> int | None:
            leader = leaders.leader(topic_id, index)
            return None if leader is None else leader[0]

        leader = leader_now()
        if leader is None or leader == node_id:  # unassigned, or not opened here yet: try again later
            raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER, f"{topic}-{index} has no leader to write to yet")
        return RemotePartition(client, topic, index, leader, leader_now)

    return remote


async def serve_marker_requests(client: ChpClient, node_id: int, partition_of: PartitionOf) -> None:
    """Every gateway: write the markers the transaction coordinator sent for partitions led here."""
    await serve_requests(client, f"{REQUESTS}{node_id}/", ANSWERS, lambda request: _written(partition_of, request))


async def _written(partition_of: PartitionOf, request: dict) -> dict:
    partition = partition_of(request["topic"], request["index"])
    try:
        if partition is None:
            raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER, "this gateway does not lead the partition")
        offset, sequence, _ = await partition.append(RecordBatch(memoryview(bytearray.fromhex(request["batch"]))))
        await partition.wait_durable(sequence)
    except KafkaError as exc:
        log.info("remote_marker_refused", topic=request["topic"], partition=request["index"], error=exc.code.name)
        return {"error": int(exc.code), "message": exc.message}
    return {"error": 0, "offset": offset}
