"""Native Dafka topics in a cluster of gateways: the controller numbers the native producers' partitions
in its journal and shares them, every gateway lists them alike, and each partition's leader serves it."""

from __future__ import annotations

import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient
from kafka import KafkaConsumer

from protocol.kafka.apis import by_name
from protocol.kafka.error_codes import ErrorCode
from tests.gateway.clients import TIMEOUT_S, confluent_consume, kafka_python_consume
from tests.gateway.groups import wait_until
from tests.gateway.test_cluster import gateway_cluster, metadata
from tests.gateway.test_native import confluent_watermarks, publish_natively
from tests.gateway.test_validation import Connection

DESCRIBE_TOPIC_PARTITIONS = by_name("DescribeTopicPartitions")

TOPIC = "native.clustered"


def led_alike(gateways, topic: str, partitions: int, live: set[int]) -> bool:
    """Whether every gateway names the same live leader for each of the topic's partitions."""
    seen = [led_by(gateway, topic) for gateway in gateways]
    return all(found == seen[0] for found in seen) and len(seen[0]) == partitions and set(seen[0].values()) <= live


def led_by(gateway, topic: str) -> dict[int, int]:
    """Partition -> leader as `gateway` tells, without asking for the topic by name (that would
    auto-create it); nothing while it does not list the topic."""
    described = metadata(gateway).topics.get(topic)
    return {} if described is None else {number: p.leader for number, p in described.partitions.items()}


def described_partitions(gateway, topic: str) -> dict[int, tuple[int, int]]:
    """Partition -> (leader, leader epoch) as DescribeTopicPartitions on `gateway` answers."""
    connection = Connection(gateway.port)
    try:
        answer = connection.call(DESCRIBE_TOPIC_PARTITIONS, 0, DESCRIBE_TOPIC_PARTITIONS.Request(
            topics=[DESCRIBE_TOPIC_PARTITIONS.Request.Topics(name=topic)]))
    finally:
        connection.close()
    (described,) = answer.topics
    assert described.error_code == ErrorCode.NONE
    return {p.partition_index: (p.leader_id, p.leader_epoch) for p in described.partitions}


def consumed(consumer: Consumer, count: int) -> list:
    messages = []
    deadline = time.monotonic() + TIMEOUT_S
    while len(messages) < count:
        assert time.monotonic() < deadline, f"{len(messages)} of {count} consumed"
        for message in consumer.consume(num_messages=count - len(messages), timeout=0.5):
            assert message.error() is None, message.error()
            messages.append(message)
    return messages


def watermarks(gateway, partition: int) -> tuple[int, int] | None:
    """The partition's watermarks, None while its leader does not serve it yet (named before it opened it)."""
    try:
        return confluent_watermarks(gateway, TOPIC, partition)
    except KafkaException:
        return None


def read_by_partition(got) -> dict[int, list[bytes]]:
    by_partition: dict[int, list[bytes]] = {}
    for record in sorted(got, key=lambda g: (g.partition, g.offset)):
        by_partition.setdefault(record.partition, []).append(record.value)
    return by_partition


def test_native_topics_are_served_through_any_gateway(tmp_path):
    """Published natively, read to the end by clients bootstrapped at the gateway that is not the
    controller; a group's offsets committed there are the cluster's."""
    first = [b"first-%d" % n for n in range(500)]
    second = [b"second-%d" % n for n in range(300)]
    with gateway_cluster(tmp_path, 2) as gateways:
        controller, other = gateways
        assert publish_natively(other, TOPIC, first) == 0
        assert publish_natively(other, TOPIC, second) == 1
        wait_until(lambda: led_alike(gateways, TOPIC, 2, {1, 2}), 30, "both gateways name the same leaders")
        described = described_partitions(controller, TOPIC)
        assert described_partitions(other, TOPIC) == described
        assert {number: leader for number, (leader, _) in described.items()} == led_by(controller, TOPIC)
        for consume in (kafka_python_consume, confluent_consume):
            got = consume(other.bootstrap, TOPIC, [0, 1], len(first) + len(second))
            assert read_by_partition(got) == {0: first, 1: second}, consume.__name__
            assert [g.offset for g in got if g.partition == 0] == list(range(len(first)))
        reader = KafkaConsumer(TOPIC, bootstrap_servers=other.bootstrap, group_id="native-readers",
                               auto_offset_reset="earliest", enable_auto_commit=False)
        try:
            read = 0
            while read < len(first) + len(second):
                batches = reader.poll(timeout_ms=int(TIMEOUT_S * 1000))
                assert batches, f"read {read} of {len(first) + len(second)} in the group"
                read += sum(len(records) for records in batches.values())
            reader.commit()
        finally:
            reader.close()
        committed = Consumer({"bootstrap.servers": controller.bootstrap, "group.id": "native-readers"})
        try:
            found = committed.committed([TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)], timeout=TIMEOUT_S)
        finally:
            committed.close()
        assert [p.offset for p in found] == [len(first), len(second)]


def test_native_partition_numbers_survive_the_controllers_death(tmp_path):
    """The numbering is journaled: the next controller keeps it, and numbers the next producer after it."""
    first = [b"first-%d" % n for n in range(200)]
    second = [b"second-%d" % n for n in range(100)]
    with gateway_cluster(tmp_path, 3) as gateways:
        assert publish_natively(gateways[1], TOPIC, first) == 0
        assert publish_natively(gateways[2], TOPIC, second) == 1
        wait_until(lambda: led_alike(gateways, TOPIC, 2, {1, 2, 3}), 30, "every gateway names the same leaders")
        assert led_by(gateways[1], TOPIC)[0] == 1  # the first partition of an empty cluster: the controller's
        reading = Consumer({"bootstrap.servers": gateways[2].bootstrap, "group.id": "unused",
                            "enable.auto.commit": False, "max.partition.fetch.bytes": 256, "queued.min.messages": 1,
                            "queued.max.messages.kbytes": 1, "fetch.queue.backoff.ms": 20})
        reading.assign([TopicPartition(TOPIC, 0, OFFSET_BEGINNING)])
        before = consumed(reading, 20)
        admin = AdminClient({"bootstrap.servers": gateways[2].bootstrap})
        trimmed = admin.delete_records([TopicPartition(TOPIC, 0, 10), TopicPartition(TOPIC, 1, 5)])
        assert sorted(future.result(TIMEOUT_S).low_watermark for future in trimmed.values()) == [5, 10]
        gateways[0].kill()
        survivors = gateways[1:]
        wait_until(lambda: led_alike(survivors, TOPIC, 2, {2, 3}), 30, "the survivors lead the partitions")
        # journaled by the controller, also where another gateway led the partition
        wait_until(lambda: watermarks(survivors[1], 0) == (10, len(first)), 30, "partition 0 served from 10")
        assert watermarks(survivors[1], 1) == (5, len(second))
        try:  # read on from the partition's next leader (its epoch newer, so librdkafka takes it)
            after = consumed(reading, len(first) - len(before))
        finally:
            reading.close()
        assert [m.offset() for m in before + after] == list(range(len(first)))
        assert [m.value() for m in before + after] == first
        first, second = first[10:], second[5:]
        got = kafka_python_consume(survivors[1].bootstrap, TOPIC, [0, 1], len(first) + len(second))
        assert read_by_partition(got) == {0: first, 1: second}
        assert publish_natively(survivors[0], TOPIC, [b"third"]) == 2
        got = confluent_consume(survivors[1].bootstrap, TOPIC, [0, 1, 2], len(first) + len(second) + 1)
        assert read_by_partition(got) == {0: first, 1: second, 2: [b"third"]}
