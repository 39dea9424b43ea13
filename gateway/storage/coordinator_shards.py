"""Coordinators sharded over an internal topic's partitions: one per partition led here.

As in Kafka, a group (a transactional id) belongs to partition
Utils.abs(hashCode(key)) % partitions of its internal topic, and the leader
of that partition is its coordinator. The registry tells which partitions
this gateway leads (`leadership_changed`): for each newly led one a
coordinator replays the partition (PartitionJournal) and then serves it; a
lost one is cancelled and told (`unloaded`). Before the replay, a controller
writes into the partition what a lone gateway's journals held for it
(gateway/carry_over.py). A key of a partition led elsewhere gets
NOT_COORDINATOR, of one still replaying COORDINATOR_LOAD_IN_PROGRESS:
Kafka's answers, on which clients find the coordinator again or retry.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

import structlog
import trio

from gateway.kafka_error import KafkaError
from gateway.storage.partition_journal import CoordinatorPartition
from protocol.kafka.coordinator_records import coordinator_partition
from protocol.kafka.error_codes import ErrorCode

log = structlog.get_logger()

RELOAD_DELAY_S = 1.0  # before a coordinator that failed replays its partition again

BeforeLoad = Callable[[int, CoordinatorPartition], Awaitable[None]]  # run before a partition's replay



class Coordinator(Protocol):
    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None: ...

    def unloaded(self) -> None: ...


C = TypeVar("C", bound=Coordinator)


@dataclass
class Shard(Generic[C]):
    index: int
    partition: CoordinatorPartition
    coordinator: C
    scope: trio.CancelScope = field(default_factory=trio.CancelScope)
    loaded: bool = False


class CoordinatorShards(Generic[C]):
    def __init__(self, topic: str, partitions: int, coordinator_of: Callable[[CoordinatorPartition], C],
                 before_load: BeforeLoad):
        self.topic, self.partitions = topic, partitions
        self.coordinator_of = coordinator_of  # a partition's coordinator, journaled on it
        self.before_load = before_load  # what is written into a partition before it is replayed
        self._shards: dict[int, Shard[C]] = {}
        self._nursery: trio.Nursery | None = None

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            task_status.started()
            await trio.sleep_forever()

    def leadership_changed(self, topic: str, index: int, partition: CoordinatorPartition | None) -> None:
        """The registry opened (`partition`) or closed (None) a partition led here."""
        if topic != self.topic:
            return
        gone = self._shards.pop(index, None)
        if gone is not None:
            gone.scope.cancel()
            gone.coordinator.unloaded()
            log.info("coordinator_unloaded", topic=topic, partition=index)
        if partition is not None:
            shard = self._shards[index] = Shard(index, partition, self.coordinator_of(partition))
            self._nursery.start_soon(self._serve, shard)

    async def _serve(self, shard: Shard[C]) -> None:
        """Replay the shard's partition, then serve it until it is lost; replayed again after a failure."""
        with shard.scope:
            try:
                async with trio.open_nursery() as nursery:
                    await self.before_load(shard.index, shard.partition)
                    await nursery.start(shard.coordinator.run)
                    shard.loaded = True
                    log.info("coordinator_loaded", topic=self.topic, partition=shard.index)
            except Exception:
                log.exception("coordinator_failed", topic=self.topic, partition=shard.index)
            await trio.sleep(RELOAD_DELAY_S)
            if self._shards.get(shard.index) is shard:
                self.leadership_changed(self.topic, shard.index, shard.partition)

    def local(self, key: str) -> Shard[C] | None:
        """The shard of `key` if its partition is led here."""
        return self._shards.get(coordinator_partition(key, self.partitions))

    def coordinator(self, key: str) -> C:
        """The coordinator of `key`; KafkaError as Kafka answers if it is elsewhere or loading."""
        return self.serving(coordinator_partition(key, self.partitions), key)

    def serving(self, index: int, what: str = "the partition") -> C:
        """The coordinator of partition `index`; KafkaError if it is elsewhere or loading."""
        shard = self._shards.get(index)
        if shard is None:
            raise KafkaError(ErrorCode.NOT_COORDINATOR, f"this gateway is not the coordinator of {what}")
        if not shard.loaded:
            raise KafkaError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, f"the coordinator of {what} is loading")
        return shard.coordinator

    def loaded(self) -> list[C]:
        return [shard.coordinator for shard in self._shards.values() if shard.loaded]

    def every(self) -> list[C]:
        """The coordinators of the partitions led here, loading ones too."""
        return [shard.coordinator for shard in self._shards.values()]


async def nothing_to_carry(index: int, partition: CoordinatorPartition) -> None:
    """A coordinator's partition with no lone state to take first."""
