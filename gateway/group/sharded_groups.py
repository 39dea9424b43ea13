"""The group coordinator of a cluster of gateways: one GroupCoordinator per __consumer_offsets
partition led here (storage/coordinator_shards.py), journaled on that partition."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial

from gateway.group.group_configs import ConfigValue
from gateway.group.group_coordinator import GroupCoordinator
from gateway.group.offsets_markers import OffsetsPartitionMarkers, PartitionOf
from gateway.group.offsets_records import keyed_slices
from gateway.kafka_error import KafkaError
from gateway.settings.table import BrokerSettings
from gateway.storage.coordinator_shards import BeforeLoad, CoordinatorShards
from gateway.storage.partition_journal import PartitionJournal
from protocol.kafka.coordinator_records import OFFSETS_PARTITIONS, OFFSETS_TOPIC
from protocol.kafka.error_codes import ErrorCode

# Calls whose first argument is the group id, served by that group's coordinator as they are.
BY_GROUP_ID = frozenset({"sync", "heartbeat", "leave", "consumer_group", "commit_offsets",
                         "validate_transactional_commit", "fetch_offsets", "validate_offset_fetch",
                         "delete_offsets", "commit_transactional_offsets", "has_pending_offset",
                         "group"})


class ShardedGroups(CoordinatorShards[GroupCoordinator]):
    def __init__(self, settings: BrokerSettings, topics: Mapping, config_value: ConfigValue, before_load: BeforeLoad):
        super().__init__(OFFSETS_TOPIC, OFFSETS_PARTITIONS, lambda partition: GroupCoordinator(
            settings, PartitionJournal(partition, keyed_slices), topics, config_value), before_load)

    def __getattr__(self, name: str):
        if name not in BY_GROUP_ID:
            raise AttributeError(name)
        return lambda group_id, *args, **kwargs: getattr(self.coordinator(group_id), name)(group_id, *args, **kwargs)

    async def join(self, request):
        return await self.coordinator(request.group_id).join(request)

    async def consumer_heartbeat(self, request):
        return await self.coordinator(request.group_id).consumer_heartbeat(request)

    def marked(self, partition_of: PartitionOf) -> PartitionOf:
        """`partition_of` (partitions led here) where a marker into a __consumer_offsets partition
        also ends the transaction's offsets at its coordinator (group/offsets_markers.py)."""
        def marked_partition(topic: str, index: int):
            partition = partition_of(topic, index)
            if topic != OFFSETS_TOPIC or partition is None:
                return partition
            return OffsetsPartitionMarkers(index, partition, partial(self.serving, index))

        return marked_partition

    def topic_deleted(self, name: str, deleted_at_ms: int) -> None:
        for coordinator in self.every():
            coordinator.topic_deleted(name, deleted_at_ms)

    def group_ids(self) -> list[str]:
        return [group_id for coordinator in self.loaded() for group_id in coordinator.group_ids()]

    async def delete_groups(self, group_ids: list[str]) -> list[ErrorCode]:
        errors = []
        for group_id in group_ids:
            try:
                errors += await self.coordinator(group_id).delete_groups([group_id])
            except KafkaError as exc:
                errors.append(exc.code)
        return errors
