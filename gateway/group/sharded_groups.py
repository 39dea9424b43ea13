"""The group coordinator of a cluster of gateways: one coordinator per __consumer_offsets partition led here.

As in Kafka, a group belongs to partition Utils.abs(hashCode(group id)) % 50 of
__consumer_offsets, and the leader of that partition is its coordinator. The
registry tells which partitions this gateway leads (`leadership_changed`):
for each newly led one a GroupCoordinator replays the partition
(PartitionJournal) and then serves its groups; a lost one is dropped, its
waiting joins and syncs answered NOT_COORDINATOR. Requests for a group of a
partition led elsewhere get NOT_COORDINATOR, of one still replaying
COORDINATOR_LOAD_IN_PROGRESS: Kafka's answers, on which clients find the
coordinator again or retry.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import structlog
import trio

from gateway.group.group_coordinator import GroupCoordinator
from gateway.group.offsets_records import keyed_slices
from gateway.group.partition_journal import CoordinatorPartition, PartitionJournal
from gateway.kafka_error import KafkaError
from gateway.settings.table import BrokerSettings
from protocol.kafka.coordinator_records import OFFSETS_PARTITIONS, OFFSETS_TOPIC, coordinator_partition
from protocol.kafka.error_codes import ErrorCode

log = structlog.get_logger()

RELOAD_DELAY_S = 1.0  # before a coordinator that failed replays its partition again
# Calls whose first argument is the group id, served by that group's coordinator as they are.
BY_GROUP_ID = frozenset({"sync", "heartbeat", "leave", "consumer_group", "commit_offsets",
                         "validate_transactional_commit", "fetch_offsets", "validate_offset_fetch",
                         "delete_offsets", "commit_transactional_offsets"})


@dataclass
class Shard:
    index: int
    partition: CoordinatorPartition
    coordinator: GroupCoordinator
    scope: trio.CancelScope = field(default_factory=trio.CancelScope)
    loaded: bool = False


class ShardedGroups:
    def __init__(self, settings: BrokerSettings, topics: Mapping):
        self.settings = settings
        self.topics = topics  # the broker's topics by name, read only
        self._shards: dict[int, Shard] = {}
        self._nursery: trio.Nursery | None = None

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            task_status.started()
            await trio.sleep_forever()

    def leadership_changed(self, topic: str, index: int, partition: CoordinatorPartition | None) -> None:
        """The registry opened (`partition`) or closed (None) a partition led here."""
        if topic != OFFSETS_TOPIC:
            return
        gone = self._shards.pop(index, None)
        if gone is not None:
            gone.scope.cancel()
            gone.coordinator.unloaded()
            log.info("group_coordinator_unloaded", partition=index, groups=len(gone.coordinator.groups))
        if partition is not None:
            shard = self._shards[index] = Shard(index, partition, self._coordinator_of(partition))
            self._nursery.start_soon(self._serve, shard)

    def _coordinator_of(self, partition: CoordinatorPartition) -> GroupCoordinator:
        return GroupCoordinator(self.settings, PartitionJournal(partition, keyed_slices), self.topics)

    async def _serve(self, shard: Shard) -> None:
        """Replay the shard's partition, then serve it until it is lost; replayed again after a failure."""
        with shard.scope:
            try:
                async with trio.open_nursery() as nursery:
                    await nursery.start(shard.coordinator.run)
                    shard.loaded = True
                    log.info("group_coordinator_loaded", partition=shard.index, groups=len(shard.coordinator.groups))
            except Exception:
                log.exception("group_coordinator_failed", partition=shard.index)
            await trio.sleep(RELOAD_DELAY_S)
            if self._shards.get(shard.index) is shard:
                self.leadership_changed(OFFSETS_TOPIC, shard.index, shard.partition)

    def _coordinator(self, group_id: str) -> GroupCoordinator:
        shard = self._shards.get(coordinator_partition(group_id, OFFSETS_PARTITIONS))
        if shard is None:
            raise KafkaError(ErrorCode.NOT_COORDINATOR, f"this gateway is not the coordinator of group {group_id}")
        if not shard.loaded:
            raise KafkaError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, f"the coordinator of {group_id} is loading")
        return shard.coordinator

    def _loaded(self) -> list[GroupCoordinator]:
        return [shard.coordinator for shard in self._shards.values() if shard.loaded]

    def __getattr__(self, name: str):
        if name not in BY_GROUP_ID:
            raise AttributeError(name)
        return lambda group_id, *args, **kwargs: getattr(self._coordinator(group_id), name)(group_id, *args, **kwargs)

    async def join(self, request):
        return await self._coordinator(request.group_id).join(request)

    async def consumer_heartbeat(self, request):
        return await self._coordinator(request.group_id).consumer_heartbeat(request)

    def group(self, group_id: str):
        """The group if coordinated here (None otherwise, as for a group that does not exist)."""
        shard = self._shards.get(coordinator_partition(group_id, OFFSETS_PARTITIONS))
        return shard.coordinator.group(group_id) if shard is not None and shard.loaded else None

    def group_ids(self) -> list[str]:
        return [group_id for coordinator in self._loaded() for group_id in coordinator.group_ids()]

    async def delete_groups(self, group_ids: list[str]) -> list[ErrorCode]:
        errors = []
        for group_id in group_ids:
            try:
                errors += await self._coordinator(group_id).delete_groups([group_id])
            except KafkaError as exc:
                errors.append(exc.code)
        return errors
