"""The three Python Kafka clients behind one small interface, for tests.

Each client produces a list of `Sent` records and reads partitions back
from the beginning by assignment (no group), returning `Got` records.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Sent:
    value: bytes | None
    key: bytes | None = None
    headers: tuple[tuple[str, bytes], ...] = ()
    timestamp_ms: int | None = None
    partition: int = 0


@dataclass(frozen=True)
class Got:
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...] = field(default=())
    timestamp_ms: int = -1
    leader_epoch: int | None = None  # of the batch, where the client tells it


def same_records(sent: list[Sent], got: list[Got]) -> bool:
    """Whether `got` holds exactly `sent`, partition by partition, in order."""
    def view(records, partition):
        return [(r.key, r.value, tuple(r.headers)) for r in records if r.partition == partition]

    partitions = {r.partition for r in sent} | {r.partition for r in got}
    return all(view(sent, p) == view(got, p) for p in partitions)


# kafka-python -------------------------------------------------------------

def kafka_python_produce(bootstrap: str, topic: str, records: list[Sent], **config) -> list[int]:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, **config)
    try:
        futures = [
            producer.send(topic, value=r.value, key=r.key, headers=list(r.headers),
                          partition=r.partition, timestamp_ms=r.timestamp_ms)
            for r in records
        ]
        producer.flush(TIMEOUT_S)
        return [f.get(TIMEOUT_S).offset if config.get("acks", 1) != 0 else -1 for f in futures]
    finally:
        producer.close(TIMEOUT_S)


def kafka_python_consume(bootstrap: str, topic: str, partitions: list[int], count: int,
                         **config) -> list[Got]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, **config)
    try:
        consumer.assign([TopicPartition(topic, p) for p in partitions])
        consumer.seek_to_beginning()
        got: list[Got] = []
        deadline = time.monotonic() + TIMEOUT_S
        while len(got) < count and time.monotonic() < deadline:
            for messages in consumer.poll(timeout_ms=500).values():
                got += [Got(m.partition, m.offset, m.key, m.value, tuple(m.headers or ()), m.timestamp)
                        for m in messages]
        return got
    finally:
        consumer.close()


# confluent-kafka ----------------------------------------------------------

def confluent_produce(bootstrap: str, topic: str, records: list[Sent], **config) -> list[int]:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, **config})
    offsets: dict[int, int] = {}
    errors = []

    def delivered(index):
        def report(error, message):
            if error is not None:
                errors.append(error)
            else:
                offsets[index] = message.offset()
        return report

    for index, r in enumerate(records):
        while True:
            try:
                producer.produce(topic, value=r.value, key=r.key, headers=list(r.headers) or None,
                                 partition=r.partition, timestamp=r.timestamp_ms or 0,
                                 on_delivery=delivered(index))
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
    remaining = producer.flush(TIMEOUT_S)
    assert remaining == 0 and not errors, f"{remaining} undelivered, errors: {errors[:3]}"
    return [offsets[i] for i in range(len(records))]


def confluent_consume(bootstrap: str, topic: str, partitions: list[int], count: int,
                      **config) -> list[Got]:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused",
                         "enable.auto.commit": False, **config})
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        got: list[Got] = []
        deadline = time.monotonic() + TIMEOUT_S
        while len(got) < count and time.monotonic() < deadline:
            for m in consumer.consume(num_messages=10000, timeout=0.5):
                assert m.error() is None, m.error()
                got.append(Got(m.partition(), m.offset(), m.key(), m.value(),
                               tuple(m.headers() or ()), m.timestamp()[1], m.leader_epoch()))
        return got
    finally:
        consumer.close()


# aiokafka -----------------------------------------------------------------

def aiokafka_produce(bootstrap: str, topic: str, records: list[Sent], **config) -> list[int]:
    from aiokafka import AIOKafkaProducer

    async def run():
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, **config)
        await producer.start()
        try:
            futures = [
                await producer.send(topic, value=r.value, key=r.key, headers=list(r.headers),
                                    partition=r.partition, timestamp_ms=r.timestamp_ms)
                for r in records
            ]
            results = [await f for f in futures]  # None under acks=0
            return [-1 if r is None else r.offset for r in results]
        finally:
            await producer.stop()

    return asyncio.run(run())


def aiokafka_consume(bootstrap: str, topic: str, partitions: list[int], count: int,
                     **config) -> list[Got]:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def run():
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, **config)
        await consumer.start()
        try:
            assigned = [TopicPartition(topic, p) for p in partitions]
            consumer.assign(assigned)
            await consumer.seek_to_beginning(*assigned)
            got: list[Got] = []
            deadline = time.monotonic() + TIMEOUT_S
            while len(got) < count and time.monotonic() < deadline:
                batches = await consumer.getmany(timeout_ms=500)
                for messages in batches.values():
                    got += [Got(m.partition, m.offset, m.key, m.value, tuple(m.headers or ()),
                                m.timestamp) for m in messages]
            return got
        finally:
            await consumer.stop()

    return asyncio.run(run())


CLIENTS = {
    "kafka-python": (kafka_python_produce, kafka_python_consume),
    "confluent-kafka": (confluent_produce, confluent_consume),
    "aiokafka": (aiokafka_produce, aiokafka_consume),
}

# Each client's name for a compression codec (None: the client lacks it).
COMPRESSION = {
    "kafka-python": {"none": None, "gzip": "gzip", "snappy": "snappy", "lz4": "lz4", "zstd": "zstd"},
    "confluent-kafka": {"none": "none", "gzip": "gzip", "snappy": "snappy", "lz4": "lz4", "zstd": "zstd"},
    "aiokafka": {"none": None, "gzip": "gzip", "snappy": "snappy", "lz4": "lz4", "zstd": "zstd"},
}


def compression_config(client: str, codec: str) -> dict:
    name = COMPRESSION[client][codec]
    if client == "confluent-kafka":
        return {"compression.type": name}
    return {"compression_type": name}
