"""Kafka's internal topics as topics of the registry: their partition counts, configs and ids."""

from __future__ import annotations

import uuid

from gateway.settings.table import BrokerSettings
from protocol.kafka.coordinator_records import (
    OFFSETS_PARTITIONS,
    OFFSETS_TOPIC,
    TRANSACTIONS_PARTITIONS,
    TRANSACTIONS_TOPIC,
)


def internal_configs(name: str, settings: BrokerSettings) -> dict[str, str]:
    """The configs Kafka creates internal topic `name` with (GroupCoordinatorService's and
    TransactionStateManager's): compacted, as the newest record of each group, offset and
    transaction is what a reader needs."""
    if name == OFFSETS_TOPIC:
        return {"cleanup.policy": "compact", "compression.type": "producer",
                "segment.bytes": str(settings.offsets_topic_segment_bytes)}
    return {"unclean.leader.election.enable": "false", "compression.type": "uncompressed",
            "cleanup.policy": "compact", "segment.bytes": str(settings.transaction_state_log_segment_bytes)}


INTERNAL_PARTITIONS = {OFFSETS_TOPIC: OFFSETS_PARTITIONS, TRANSACTIONS_TOPIC: TRANSACTIONS_PARTITIONS}


def internal_topic_id(name: str) -> uuid.UUID:
    """The id of an internal topic, the same on every gateway and before the topic exists."""
    return uuid.uuid5(uuid.NAMESPACE_URL, f"kafka:{name}")
