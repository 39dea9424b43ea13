"""message.timestamp.before.max.ms / after.max.ms (KIP-937) enforced on produce, seen by real clients."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import KafkaError as ConfluentError
from confluent_kafka import Producer
from kafka import KafkaProducer
from kafka.errors import InvalidTimestampError

from tests.gateway.admin import create_topic
from tests.gateway.clients import TIMEOUT_S, Sent, confluent_consume, kafka_python_produce

HOUR_MS = 3_600_000


def now_ms() -> int:
    return int(time.time() * 1000)


def test_confluent_kafka_is_refused_a_timestamp_past_the_default_hour_ahead(shared_gateway):
    create_topic(shared_gateway.bootstrap, "ts-ahead")
    reports = []
    producer = Producer({"bootstrap.servers": shared_gateway.bootstrap, "linger.ms": 0})
    for value, stamp in ((b"future", now_ms() + 2 * HOUR_MS), (b"present", now_ms())):  # one batch each
        producer.produce("ts-ahead", value, timestamp=stamp, on_delivery=lambda err, msg: reports.append(err))
        assert producer.flush(TIMEOUT_S) == 0
    assert [None if err is None else err.code() for err in reports] == [ConfluentError.INVALID_TIMESTAMP, None]
    assert [got.value for got in confluent_consume(shared_gateway.bootstrap, "ts-ahead", [0], 1)] == [b"present"]


def test_kafka_python_is_refused_a_timestamp_older_than_the_topic_allows(shared_gateway):
    create_topic(shared_gateway.bootstrap, "ts-before", configs={"message.timestamp.before.max.ms": "60000"})
    producer = KafkaProducer(bootstrap_servers=shared_gateway.bootstrap, retries=0)
    try:
        old = producer.send("ts-before", b"old", timestamp_ms=now_ms() - 120_000)
        with pytest.raises(InvalidTimestampError):
            old.get(TIMEOUT_S)
    finally:
        producer.close(TIMEOUT_S)
    assert kafka_python_produce(shared_gateway.bootstrap, "ts-before", [Sent(b"recent", timestamp_ms=now_ms())]) == [0]


def test_log_append_time_topics_take_any_timestamp(shared_gateway):
    create_topic(shared_gateway.bootstrap, "ts-append", configs={
        "message.timestamp.type": "LogAppendTime", "message.timestamp.after.max.ms": "0"})
    assert kafka_python_produce(shared_gateway.bootstrap, "ts-append",
                                [Sent(b"far", timestamp_ms=now_ms() + 10 * HOUR_MS)]) == [0]
