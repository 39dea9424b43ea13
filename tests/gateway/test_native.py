"""Native Dafka topics through Kafka clients, and Kafka topics through native consumers."""

from __future__ import annotations

import select
import struct
import subprocess
import sys
import time

import pytest
from confluent_kafka import Consumer as ConfluentConsumer
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka import TopicPartition as ConfluentPartition
from confluent_kafka.admin import AdminClient
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import InvalidTopicError

from protocol.records import RecordBatch
from tests.gateway.clients import TIMEOUT_S, Sent, confluent_consume, kafka_python_consume, kafka_python_produce
from tests.gateway.server import GatewayProcess

BATCH_PREFIX = struct.Struct(">qi")  # a v2 batch starts with its base offset and length


def mesh_options(server: GatewayProcess) -> list[str]:
    return [f"--beacon-sub-address=tcp://127.0.0.1:{server.tower_sub}",
            f"--beacon-pub-address=tcp://127.0.0.1:{server.tower_pub}", "--beacon-interval-ms=200"]


def publish_natively(server: GatewayProcess, topic: str, values: list[bytes]) -> int:
    """Publish `values` from a new native producer (`python -m gateway.mesh.dafka_producer`),
    kept alive until the gateway serves them all; the Kafka partition they became."""
    process = subprocess.Popen(
        [sys.executable, "-m", "gateway.mesh.dafka_producer", topic, "--acks=1", "--head-interval-ms=200",
         *mesh_options(server)],
        stdin=subprocess.PIPE, stderr=subprocess.DEVNULL)
    consumer = KafkaConsumer(bootstrap_servers=server.bootstrap, enable_auto_commit=False)
    try:
        before = len(consumer.partitions_for_topic(topic) or ())
        process.stdin.write(b"".join(value + b"\n" for value in values))
        process.stdin.flush()
        wait_for_end(consumer, TopicPartition(topic, before), len(values))
    finally:
        consumer.close()
        process.stdin.close()
    assert process.wait(TIMEOUT_S) == 0
    return before


def wait_for_end(consumer: KafkaConsumer, partition: TopicPartition, end: int) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        consumer.topics()  # fresh metadata
        if partition.partition in (consumer.partitions_for_topic(partition.topic) or ()):
            if consumer.end_offsets([partition])[partition] == end:
                return
        assert time.monotonic() < deadline, f"{partition} never ended at {end}"
        time.sleep(0.2)


def confluent_watermarks(server: GatewayProcess, topic: str, partition: int) -> tuple[int, int]:
    consumer = ConfluentConsumer({"bootstrap.servers": server.bootstrap, "group.id": "watermarks"})
    try:
        return consumer.get_watermark_offsets(ConfluentPartition(topic, partition), timeout=TIMEOUT_S)
    finally:
        consumer.close()


def test_native_records_read_by_kafka_clients(gateway):
    values = [f"native-{n}".encode() * (n % 7 + 1) for n in range(2000)] + [b""]
    partition = publish_natively(gateway, "native.plain", values)
    assert partition == 0
    for consume in (kafka_python_consume, confluent_consume):
        got = consume(gateway.bootstrap, "native.plain", [0], len(values))
        assert [g.value for g in got] == values
        assert [g.offset for g in got] == list(range(len(values)))
        assert {g.key for g in got} == {None}
        assert all(g.timestamp_ms > 0 for g in got)
    assert confluent_watermarks(gateway, "native.plain", 0) == (0, len(values))
    described = AdminClient({"bootstrap.servers": gateway.bootstrap}).list_topics(timeout=TIMEOUT_S)
    assert list(described.topics["native.plain"].partitions) == [0]
    consumer = KafkaConsumer(bootstrap_servers=gateway.bootstrap)
    try:
        assert "native.plain" in consumer.topics()
        tp = TopicPartition("native.plain", 0)
        assert consumer.beginning_offsets([tp])[tp] == 0
        assert consumer.end_offsets([tp])[tp] == len(values)
        assert consumer.offsets_for_times({tp: 0})[tp].offset == 0
        assert consumer.offsets_for_times({tp: int(time.time() * 1000) + 60_000})[tp] is None
    finally:
        consumer.close()


def test_produce_to_native_topic_is_refused(gateway):
    publish_natively(gateway, "native.readonly", [b"only"])
    producer = KafkaProducer(bootstrap_servers=gateway.bootstrap, retries=0)
    try:
        with pytest.raises(InvalidTopicError):
            producer.send("native.readonly", b"from kafka", partition=0).get(TIMEOUT_S)
    finally:
        producer.close()
    admin = AdminClient({"bootstrap.servers": gateway.bootstrap})
    with pytest.raises(KafkaException) as refused:
        admin.delete_topics(["native.readonly"])["native.readonly"].result(TIMEOUT_S)
    assert refused.value.args[0].code() == KafkaError.TOPIC_DELETION_DISABLED
    got = kafka_python_consume(gateway.bootstrap, "native.readonly", [0], 1)
    assert [g.value for g in got] == [b"only"]


def test_partition_numbers_survive_restart(tmp_path):
    server = GatewayProcess(tmp_path / "gateway").start()
    try:
        first = [b"first-%d" % n for n in range(50)]
        second = [b"second-%d" % n for n in range(70)]
        assert publish_natively(server, "native.kept", first) == 0
        assert publish_natively(server, "native.kept", second) == 1
        admin = AdminClient({"bootstrap.servers": server.bootstrap})
        for future in admin.delete_records([ConfluentPartition("native.kept", 0, 10)]).values():
            future.result(TIMEOUT_S)
        server.stop()
        server.start()
        assert confluent_watermarks(server, "native.kept", 0) == (10, len(first))
        got = kafka_python_consume(server.bootstrap, "native.kept", [0, 1], len(first) - 10 + len(second))
        assert [g.value for g in got if g.partition == 0] == first[10:]
        assert [g.value for g in got if g.partition == 1] == second
        assert confluent_watermarks(server, "native.kept", 1) == (0, len(second))
        assert publish_natively(server, "native.kept", [b"third"]) == 2
    finally:
        server.stop()


def batches_in(output: bytes) -> list[RecordBatch]:
    """The batches a native consumer printed: each record's content, then a newline."""
    batches, position = [], 0
    while position + BATCH_PREFIX.size <= len(output):
        _, length = BATCH_PREFIX.unpack_from(output, position)
        end = position + BATCH_PREFIX.size + length
        if end + 1 > len(output):
            break
        batches.append(RecordBatch(memoryview(output[position:end])))
        position = end + 1
    return batches


def test_native_consumer_reads_kafka_batches(gateway):
    values = [b"kafka-%d\nwith a newline" % n for n in range(300)]
    kafka_python_produce(gateway.bootstrap, "kafka.made", [Sent(value=v) for v in values],
                         acks="all", linger_ms=5)
    process = subprocess.Popen(
        [sys.executable, "-m", "gateway.mesh.dafka_consumer", "kafka.made", "--consumer-offset-reset=earliest",
         *mesh_options(gateway)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    output = b""
    try:
        deadline = time.monotonic() + TIMEOUT_S
        while sum(batch.record_count for batch in batches_in(output)) < len(values):
            assert time.monotonic() < deadline, "the native consumer did not print every batch"
            if select.select([process.stdout], [], [], 0.5)[0]:
                output += process.stdout.read1(1 << 16)
    finally:
        process.kill()
        process.wait()
    batches = batches_in(output)
    for batch in batches:
        batch.verify_crc()
    records = [record for batch in batches for record in batch.records()]
    assert [r.value for r in records] == values
    assert [r.offset for r in records] == list(range(len(values)))
