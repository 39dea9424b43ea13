"""Kafka's internal topics as topics of the registry: their partition counts, configs and ids."""

from __future__ import annotations

import uuid

from protocol.kafka.coordinator_records import (
    OFFSETS_PARTITIONS,
    OFFSETS_TOPIC,
    TRANSACTIONS_PARTITIONS,
    TRANSACTIONS_TOPIC,
)

# As Kafka makes them (offsets.topic.segment.bytes, transaction.state.log.segment.bytes): the newest
# record of each group, offset and transaction is what a reader needs.
INTERNAL_CONFIGS = {"cleanup.policy": "compact", "segment.bytes": "104857600"}
INTERNAL_PARTITIONS = {OFFSETS_TOPIC: OFFSETS_PARTITIONS, TRANSACTIONS_TOPIC: TRANSACTIONS_PARTITIONS}


def internal_topic_id(name: str) -> uuid.UUID:
    """The id of an internal topic, the same on every gateway and before the topic exists."""
    return uuid.uuid5(uuid.NAMESPACE_URL, f"kafka:{name}")
