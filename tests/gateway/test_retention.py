"""Retention: expired batches move the log start, as Kafka's retention does."""

import time
from pathlib import Path

from confluent_kafka import TopicPartition as ConfluentPartition
from confluent_kafka.admin import AdminClient
from kafka import KafkaConsumer, TopicPartition

from tests.gateway.admin import create_topic
from tests.gateway.clients import Sent, confluent_consume, confluent_produce, kafka_python_produce
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


def segment_bases(data_dir: Path, topic: str) -> list[int]:
    """The first sequences of the store's segments of the topic's only partition."""
    (partition,) = (data_dir / "store-0" / "log" / ("s-" + topic.encode().hex())).glob("[0-9A-F]*")
    return sorted(int(path.stem) for path in partition.glob("*.log"))


def delete_records(bootstrap: str, topic: str, before: int) -> int:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    (future,) = admin.delete_records([ConfluentPartition(topic, 0, before)]).values()
    return future.result(30).low_watermark


def test_delete_records_frees_the_store_segments_below_and_survives_restarts(tmp_path):
    server = GatewayProcess(tmp_path / "gateway", "--store-segment-bytes", "4096").start()
    try:
        sent = [Sent(key=b"k%d" % i, value=b"%d" % i + bytes(200)) for i in range(200)]
        confluent_produce(server.bootstrap, "trimmed", sent, **{"linger.ms": 0, "batch.num.messages": 1})
        assert segment_bases(server.data_dir, "trimmed")[0] == 0
        assert delete_records(server.bootstrap, "trimmed", 101) == 101
        # One record per batch: the batch holding offset 101 is sequence 101, and the
        # segments before the one holding it go.
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and segment_bases(server.data_dir, "trimmed")[1] <= 101:
            time.sleep(0.1)
        first, second, *_ = segment_bases(server.data_dir, "trimmed")
        assert 0 < first <= 101 < second

        for restart in (server.kill, server.stop):
            restart()
            server.start()
            assert earliest(server.bootstrap, "trimmed") == 101
            got = confluent_consume(server.bootstrap, "trimmed", [0], len(sent) - 101)
            assert [(g.offset, g.key, g.value) for g in got] == [
                (offset, r.key, r.value) for offset, r in enumerate(sent) if offset >= 101]
            more = [Sent(key=b"after", value=b"%d" % i) for i in range(5)]
            assert kafka_python_produce(server.bootstrap, "trimmed", more) == list(range(len(sent), len(sent) + 5))
            sent += more
    finally:
        server.stop()
