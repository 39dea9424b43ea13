"""Retention: expired batches move the log start, as Kafka's retention does."""

import os
import signal
import time
from pathlib import Path

from confluent_kafka import TopicPartition as ConfluentPartition
from confluent_kafka.admin import AdminClient, ConfigResource
from kafka import KafkaConsumer, TopicPartition

from tests.gateway.admin import create_topic
from tests.gateway.clients import Sent, confluent_consume, confluent_produce, kafka_python_produce
from tests.gateway.groups import wait_until
from tests.gateway.server import GatewayProcess, children


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


def segment_bases(data_dir: Path, topic: str, store: int = 0) -> list[int]:
    """The first sequences of a store's segments of the topic's only partition."""
    (partition,) = (data_dir / f"store-{store}" / "log" / ("s-" + topic.encode().hex())).glob("[0-9A-F]*")
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



def test_a_store_down_while_its_peer_discarded_goes_on_from_the_log_start(tmp_path):
    """Two stores: one is stopped while records are produced and then all deleted, so
    nobody holds what it missed; restarted, it skips to the log start (as a Kafka follower
    resets to the leader's) and takes the partition again: with min.insync.replicas=2,
    acks=all produce needs it."""
    server = GatewayProcess(tmp_path / "gateway", "--min-insync-replicas", "1", stores=2).start()
    try:
        create_topic(server.bootstrap, "purged")
        confluent_produce(server.bootstrap, "purged", [Sent(value=b"both%d" % i) for i in range(50)])
        behind = store_pid(server, 1)
        os.kill(behind, signal.SIGSTOP)
        confluent_produce(server.bootstrap, "purged", [Sent(value=b"missed%d" % i) for i in range(50)])
        assert delete_records(server.bootstrap, "purged", 100) == 100
        os.kill(behind, signal.SIGKILL)
        wait_until(lambda: store_pid(server, 1) not in (None, behind), 30, "the gateway restarted the store")
        set_min_insync(server.bootstrap, "purged", 2)
        after = [Sent(value=b"after%d" % i) for i in range(10)]
        assert confluent_produce(server.bootstrap, "purged", after, **{"message.timeout.ms": 30000}) == list(
            range(100, 110))
        assert [g.value for g in confluent_consume(server.bootstrap, "purged", [0], 10)] == [a.value for a in after]
        assert "store_skipped_to_log_start" in server.log_path.read_text()
    finally:
        server.stop()


def store_pid(server: GatewayProcess, store: int) -> int | None:
    """The process of the gateway's embedded store number `store`, if it runs."""
    for pid in children(server.process.pid):
        try:
            if f"store-{store}".encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                return pid
        except OSError:
            pass
    return None


def set_min_insync(bootstrap: str, topic: str, replicas: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource("topic", topic, set_config={"min.insync.replicas": str(replicas)})
    (future,) = admin.alter_configs([resource]).values()
    future.result(30)


def test_a_store_down_while_topics_were_deleted_deletes_them_when_back(tmp_path):
    """Two stores: one is stopped while two topics are deleted one after the other and then
    killed; the gateway starts it again, and once it is back it deletes both (only the newest
    directive, which it fetches itself, would take the second)."""
    server = GatewayProcess(tmp_path / "gateway", "--min-insync-replicas", "1", stores=2).start()
    topics = ("dropped", "dropped-too")
    on_store = [server.data_dir / "store-1" / "log" / ("s-" + topic.encode().hex()) for topic in topics]
    try:
        for topic in topics:
            create_topic(server.bootstrap, topic)
            confluent_produce(server.bootstrap, topic, [Sent(value=b"v%d" % i) for i in range(10)])
        wait_until(lambda: all(path.exists() for path in on_store), 10, "the second store took the topics")
        behind = store_pid(server, 1)
        os.kill(behind, signal.SIGSTOP)
        admin = AdminClient({"bootstrap.servers": server.bootstrap})
        for topic in topics:
            admin.delete_topics([topic])[topic].result(30)
        wait_until(lambda: not any((server.data_dir / "store-0" / "log" / path.name).exists() for path in on_store),
                   10, "the first store deleted the topics")
        os.kill(behind, signal.SIGKILL)
        wait_until(lambda: store_pid(server, 1) not in (None, behind), 30, "the gateway restarted the store")
        wait_until(lambda: not any(path.exists() for path in on_store), 30, "the second store deleted them once back")
    finally:
        server.stop()
