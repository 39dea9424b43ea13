"""Retention: expired batches move the log start, as Kafka's retention does."""

import time

from kafka import KafkaConsumer, TopicPartition

from tests.gateway.admin import create_topic
from tests.gateway.clients import Sent, confluent_consume, confluent_produce
from tests.gateway.server import GatewayProcess


def earliest(bootstrap: str, topic: str) -> int:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap)
    partition = TopicPartition(topic, 0)
    try:
        return consumer.beginning_offsets([partition])[partition]
    finally:
        consumer.close()


def test_retention_by_time_and_by_size(tmp_path):
    server = GatewayProcess(tmp_path / "gateway", "--log-retention-check-interval-ms", "300").start()
    try:
        now = int(time.time() * 1000)
        create_topic(server.bootstrap, "by-time", configs={"retention.ms": "60000"})
        old = [Sent(value=f"old{i}".encode(), timestamp_ms=now - 3_600_000) for i in range(20)]
        fresh = [Sent(value=f"new{i}".encode(), timestamp_ms=now) for i in range(5)]
        confluent_produce(server.bootstrap, "by-time", old, **{"linger.ms": 0, "batch.num.messages": 5})
        confluent_produce(server.bootstrap, "by-time", fresh)

        create_topic(server.bootstrap, "by-size", configs={"retention.bytes": "2000"})
        sized = [Sent(value=bytes(500)) for _ in range(20)]
        confluent_produce(server.bootstrap, "by-size", sized, **{"linger.ms": 0, "batch.num.messages": 1})

        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and (earliest(server.bootstrap, "by-time") < 20
                                              or earliest(server.bootstrap, "by-size") == 0):
            time.sleep(0.3)
        assert earliest(server.bootstrap, "by-time") == 20
        got = confluent_consume(server.bootstrap, "by-time", [0], len(fresh))
        assert [g.value for g in got] == [s.value for s in fresh]
        kept = 20 - earliest(server.bootstrap, "by-size")
        assert 2000 <= kept * 570 < 2000 + 2 * 570  # at least retention.bytes kept, one batch spare at most
        server.stop()
        server.start()
        assert earliest(server.bootstrap, "by-time") == 20
    finally:
        server.stop()
