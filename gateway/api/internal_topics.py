"""The internal group-offsets topic, shown as Kafka shows __consumer_offsets.

The gateway keeps committed offsets and group state on its own journal, not
in a topic, but clients and tools expect Kafka's internal topic: Metadata and
DescribeTopicPartitions list it, marked internal, once a group exists (Kafka
creates it when the first group coordinator is looked up), and describe it
whenever it is named. It has Kafka's default offsets.topic.num.partitions,
50, the count the transaction coordinator hashes group ids over; this
gateway leads them all. Clients cannot produce to it (INVALID_TOPIC_EXCEPTION,
as Kafka refuses appends to an internal topic) and it holds no records.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from gateway.api.services import Services
from gateway.txn.txn_coordinator import OFFSETS_PARTITIONS, OFFSETS_TOPIC


@dataclass(frozen=True)
class InternalPartition:
    index: int
    leader_epoch: int = 0


@dataclass(frozen=True)
class InternalTopic:
    """What the describing handlers read of a Topic."""

    name: str
    topic_id: uuid.UUID
    partitions: tuple[InternalPartition, ...]
    native: bool = False


OFFSETS = InternalTopic(OFFSETS_TOPIC, uuid.uuid5(uuid.NAMESPACE_URL, f"kafka:{OFFSETS_TOPIC}"),
                        tuple(InternalPartition(index) for index in range(OFFSETS_PARTITIONS)))


def internal_topic(name: str) -> InternalTopic | None:
    return OFFSETS if name == OFFSETS.name else None


def internal_topic_by_id(topic_id: uuid.UUID) -> InternalTopic | None:
    return OFFSETS if topic_id == OFFSETS.topic_id else None


def listed_internal_topics(services: Services) -> list[str]:
    """The internal topics a request for every topic lists: the offsets topic once a group exists."""
    return [OFFSETS.name] if services.groups.group_ids() else []


def is_internal(name: str) -> bool:
    return internal_topic(name) is not None
