"""Moving leadership to preferred leaders, as Kafka's controller and ElectLeaders do, and
replacing replicas (AlterPartitionReassignments).

A move is a claim on the partition key's sequence naming the new leader at the
next epoch: the old leader closes the partition when its mirror shows the key,
the new one fences the stores at that epoch and opens it (leadership.py,
topics/shared_topics.py), so only one ever gets writes acknowledged. Since the
stores hold every partition, a reassignment moves no data: it completes at
once, and none is ever listed in progress.
"""

from __future__ import annotations

from collections import defaultdict

import structlog
import trio

from gateway.cluster.claims import KeyClaims
from gateway.cluster.leadership import PARTITIONS, Leaders, on_changes, partition_key, partition_values
from gateway.cluster.membership import MEMBERS, Membership, encoded
from gateway.cluster.replicas import adopted, assignment, replicas_of
from protocol.kafka.error_codes import ErrorCode

log = structlog.get_logger()

PREFERRED, UNCLEAN = 0, 1  # ElectLeaders' election types
CLAIM_ATTEMPTS = 5  # a claim lost to a concurrent change is decided again on the newer value


class Elections:
    def __init__(self, claims: KeyClaims, membership: Membership, leaders: Leaders):
        self.claims = claims
        self.membership = membership
        self.leaders = leaders
        self._adopted: set[int] = set()  # gateways a replica list named: never adopted again

    async def elect(self, topic_id: str, index: int, election: int) -> ErrorCode:
        """ElectLeaders for one partition, answered as Kafka's controller answers."""
        for _ in range(CLAIM_ATTEMPTS):
            key = partition_key(topic_id, index)
            sequence, value = self.claims.sequence(key), self.leaders.value(topic_id, index)
            code, leader = self._elected(value, election)
            if leader is None:
                return code
            if await self._move(key, sequence, value, leader, replicas_of(value), "elected"):
                return ErrorCode.NONE
        return ErrorCode.REQUEST_TIMED_OUT

    def _elected(self, value: dict | None, election: int) -> tuple[ErrorCode, int | None]:
        """The outcome of an election and the leader to move to, if any."""
        live, replicas = self.membership.candidates(), [] if value is None else replicas_of(value)
        if election == PREFERRED:
            if value is not None and value["leader"] == replicas[0]:
                return ErrorCode.ELECTION_NOT_NEEDED, None
            if not replicas or replicas[0] not in live:
                return ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, None
            return ErrorCode.NONE, replicas[0]
        if value is not None and value["leader"] in self.membership.members():
            return ErrorCode.ELECTION_NOT_NEEDED, None
        eligible = [node for node in replicas if node in live]
        return (ErrorCode.NONE, eligible[0]) if eligible else (ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, None)

    async def reassign(self, topic_id: str, index: int, replicas: list[int]) -> tuple[ErrorCode, str | None]:
        """Replace a partition's replicas; its leader moves to the first live one if it is not among them."""
        unknown = sorted(set(replicas) - set(self.membership.members()))
        if not replicas or len(set(replicas)) < len(replicas) or unknown:
            return ErrorCode.INVALID_REPLICA_ASSIGNMENT, (
                f"replicas {replicas} must be distinct live gateways" + (f"; {unknown} are not" if unknown else ""))
        for _ in range(CLAIM_ATTEMPTS):
            key = partition_key(topic_id, index)
            sequence, value = self.claims.sequence(key), self.leaders.value(topic_id, index)
            if value is None:
                return ErrorCode.LEADER_NOT_AVAILABLE, "the partition has no leader yet"
            live = [node for node in replicas if node in self.membership.candidates()]
            leader = value["leader"] if value["leader"] in live or not live else live[0]
            if await self._move(key, sequence, value, leader, replicas, "reassigned"):
                return ErrorCode.NONE, None
        return ErrorCode.REQUEST_TIMED_OUT, "the partition kept changing"

    async def _move(self, key: str, sequence: int, value: dict, leader: int, replicas: list[int], why: str) -> bool:
        """Claim the key for `leader` and `replicas`, at the next epoch if the leader changes."""
        epoch = value["epoch"] + (leader != value["leader"])
        if not await self.claims.claim(key, encoded(assignment(leader, epoch, replicas)), sequence):
            return False
        log.info(f"partition_leader_{why}", partition=key.removeprefix(PARTITIONS), leader=leader, epoch=epoch,
                 previous=value["leader"], replicas=replicas)
        return True

    def replica_lists(self) -> dict[tuple[str, int], list[int]]:
        """Every partition's replicas."""
        return {partition: replicas_of(value)
                for partition, value in partition_values(self.leaders.client, PARTITIONS).items()}

    async def adopt(self) -> None:
        """Make every live gateway that no replica list names (it joined for the first time) a replica of
        every partition, and the preferred leader of its share (replicas.py). Called at every
        change of a partition's key, it reads them only when a gateway not seen in one is live."""
        for node in sorted(self.membership.candidates() - self._adopted):
            lists = self.replica_lists()
            if not lists:
                continue
            if any(node in replicas for replicas in lists.values()):
                self._adopted.add(node)
                continue
            log.info("gateway_adopted", node=node, partitions=len(lists))
            for (topic_id, index), replicas in adopted(lists, node).items():
                key = partition_key(topic_id, index)
                sequence, value = self.claims.sequence(key), self.leaders.value(topic_id, index)
                if value is not None:  # a claim lost to a change is tried again at the change
                    await self._move(key, sequence, value, value["leader"], replicas, "reassigned")

    async def rebalance(self, percentage: int) -> None:
        """Kafka's auto leader rebalance: for each live gateway whose preferred partitions are led
        elsewhere more than `percentage` % of the time, move those back to it."""
        live = self.membership.candidates()
        preferred = defaultdict(list)
        for (topic_id, index), value in partition_values(self.leaders.client, PARTITIONS).items():
            preferred[replicas_of(value)[0]].append((topic_id, index, value))
        for node, partitions in preferred.items():
            elsewhere = [(topic_id, index) for topic_id, index, value in partitions if value["leader"] != node]
            if node in live and len(elsewhere) * 100 > percentage * len(partitions):
                log.info("leader_imbalance", node=node, preferred=len(partitions), led_elsewhere=len(elsewhere))
                for topic_id, index in elsewhere:
                    await self.elect(topic_id, index, PREFERRED)


async def rebalance_periodically(elections: Elections, interval_s: float, percentage: int) -> None:
    """The controller: check the leaders' balance every `interval_s` seconds."""
    while True:
        await trio.sleep(interval_s)
        await elections.rebalance(percentage)


async def adopt_new_gateways(elections: Elections) -> None:
    """The controller: adopt gateways that join for the first time, whenever membership or partitions change."""
    await on_changes(elections.leaders.client, elections.adopt, (MEMBERS, PARTITIONS))
