"""Many partitions, many records, and offsets that must be exact."""

import random

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec
from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaTopicPartition

from tests.gateway.admin import create_topic
from tests.gateway.clients import Sent, confluent_consume, confluent_produce, same_records


def test_hundred_partitions(shared_gateway):
    create_topic(shared_gateway.bootstrap, "wide", partitions=100)
    sent = [Sent(value=f"v{i}".encode(), key=f"k{i}".encode(), partition=i % 100) for i in range(5000)]
    confluent_produce(shared_gateway.bootstrap, "wide", sent, **{"linger.ms": 5})
    got = confluent_consume(shared_gateway.bootstrap, "wide", list(range(100)), len(sent))
    assert same_records(sent, got)
    assert all(g.offset == int(g.value[1:]) // 100 for g in got)


def test_hundred_thousand_records_in_order(shared_gateway):
    sent = [Sent(value=f"{i:06d}".encode() * 10) for i in range(100_000)]
    offsets = confluent_produce(shared_gateway.bootstrap, "many", sent, **{"linger.ms": 20})
    assert offsets == list(range(len(sent)))
    got = confluent_consume(shared_gateway.bootstrap, "many", [0], len(sent))
    assert [g.value for g in got] == [s.value for s in sent]
    assert [g.offset for g in got] == list(range(len(sent)))


def test_list_offsets_exact(shared_gateway):
    """Earliest, latest, by timestamp and max timestamp after shuffled timestamps."""
    base = 1_600_000_000_000
    stamps = [base + i * 10 for i in range(300)]
    random.Random(7).shuffle(stamps)
    sent = [Sent(value=f"v{i}".encode(), timestamp_ms=t) for i, t in enumerate(stamps)]
    # Small batches, so that answers depend on records inside batches.
    confluent_produce(shared_gateway.bootstrap, "stamped", sent, **{"linger.ms": 0, "batch.num.messages": 7})
    bootstrap = shared_gateway.bootstrap

    consumer = KafkaConsumer(bootstrap_servers=bootstrap)
    partition = KafkaTopicPartition("stamped", 0)
    assert consumer.beginning_offsets([partition])[partition] == 0
    assert consumer.end_offsets([partition])[partition] == len(sent)
    for target in (base - 5, base + 1234, base + 2000, base + 2995, base + 99999):
        expected = next(((i, t) for i, t in enumerate(stamps) if t >= target), None)
        found = consumer.offsets_for_times({partition: target})[partition]
        assert (found and (found.offset, found.timestamp)) == expected
    consumer.close()

    confluent = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused"})
    low, high = confluent.get_watermark_offsets(TopicPartition("stamped", 0), timeout=10)
    assert (low, high) == (0, len(sent))
    confluent.close()

    admin = AdminClient({"bootstrap.servers": bootstrap})
    spec = {TopicPartition("stamped", 0): OffsetSpec.max_timestamp()}
    result = admin.list_offsets(spec)[TopicPartition("stamped", 0)].result(10)
    assert (result.offset, result.timestamp) == (stamps.index(max(stamps)), max(stamps))
