"""Kafka's internal topics, shown as Kafka shows __consumer_offsets and __transaction_state.

The gateway keeps group state and committed offsets, and transaction states,
on journals of its own, not in topics; but clients and tools expect Kafka's
internal topics. Metadata and DescribeTopicPartitions list each, marked
internal, once it has something to hold (Kafka creates __consumer_offsets
when the first group coordinator is looked up, __transaction_state when the
first transaction coordinator is), and describe it whenever it is named.
Each has Kafka's default partition count (offsets.topic.num.partitions and
transaction.state.log.num.partitions, 50; group ids are hashed over the
first), all led by this gateway. Their records are the gateway's own, in
Kafka's formats (topics/internal_logs.py): once the first is written, the
topic is in the registry, read like any other and still described as
internal. Clients cannot produce to them nor delete their records
(INVALID_TOPIC_EXCEPTION, as Kafka refuses both on an internal topic), nor
delete them.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass

from gateway.api.services import Services
from gateway.topics.internal_topic_specs import internal_topic_id
from protocol.kafka.coordinator_records import (
    OFFSETS_PARTITIONS,
    OFFSETS_TOPIC,
    TRANSACTIONS_PARTITIONS,
    TRANSACTIONS_TOPIC,
)


@dataclass(frozen=True)
class InternalPartition:
    index: int
    leader_epoch: int = 0


@dataclass(frozen=True)
class InternalTopic:
    """What the describing handlers read of a Topic, and when the topic is listed."""

    name: str
    partition_count: int
    in_use: Callable[[Services], bool]
    native: bool = False

    @property
    def topic_id(self) -> uuid.UUID:
        return internal_topic_id(self.name)

    @property
    def partitions(self) -> tuple[InternalPartition, ...]:
        return tuple(InternalPartition(index) for index in range(self.partition_count))


INTERNAL = {topic.name: topic for topic in (
    InternalTopic(OFFSETS_TOPIC, OFFSETS_PARTITIONS, lambda services: bool(services.groups.group_ids())),
    InternalTopic(TRANSACTIONS_TOPIC, TRANSACTIONS_PARTITIONS,
                  lambda services: bool(services.transactions.transactions())),
)}
BY_ID = {topic.topic_id: topic for topic in INTERNAL.values()}


def internal_topic(name: str) -> InternalTopic | None:
    return INTERNAL.get(name)


def internal_topic_by_id(topic_id: uuid.UUID) -> InternalTopic | None:
    return BY_ID.get(topic_id)


def listed_internal_topics(services: Services) -> list[str]:
    """The internal topics a request for every topic lists besides the registry's: those in use."""
    return [topic.name for topic in INTERNAL.values()
            if topic.in_use(services) and services.topics.get(topic.name) is None]


def is_internal(name: str) -> bool:
    return name in INTERNAL
