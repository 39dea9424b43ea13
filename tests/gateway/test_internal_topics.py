"""__consumer_offsets and __transaction_state read as Kafka serves them, after real groups and a transaction.

The records are decoded here by a decoder of Kafka's formats written for the
test (struct unpacking by the layouts of Kafka's OffsetCommit, GroupMetadata
and TransactionLog definitions), not by the gateway's codec.
"""

from __future__ import annotations

import struct
import subprocess
import time

from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as ConfluentPartition
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType
from kafka import KafkaConsumer, TopicPartition

from tests.gateway.admin import create_topic
from tests.gateway.clients import Sent, kafka_python_produce

TIMEOUT_S = 30.0
OFFSETS, TRANSACTIONS = "__consumer_offsets", "__transaction_state"
ONGOING, PREPARE_COMMIT, COMPLETE_COMMIT = 1, 2, 4


def kafka_partition(key: str, partitions: int = 50) -> int:
    """Java's String.hashCode over UTF-16 units, made positive as Kafka's Utils.abs, modulo `partitions`."""
    units = key.encode("utf-16-be")
    code = 0
    for (unit,) in struct.iter_unpack(">H", units):
        code = (31 * code + unit) % 2**32
    signed = code - 2**32 if code >= 2**31 else code
    return (0 if signed == -(2**31) else abs(signed)) % partitions


class Reader:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def take(self, fmt: str):
        (value,) = struct.unpack_from(">" + fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return value

    def string(self) -> str | None:
        size = self.take("h")
        if size < 0:
            return None
        self.pos += size
        return self.data[self.pos - size:self.pos].decode()

    def blob(self) -> bytes:
        size = self.take("i")
        self.pos += size
        return self.data[self.pos - size:self.pos]

    def array(self, item):
        count = self.take("i")
        return None if count < 0 else [item() for _ in range(count)]


def decoded_offsets_record(key: bytes, value: bytes | None) -> tuple:
    """("offset", group, topic, partition, offset or None) or ("group", group, fields or None)."""
    k = Reader(key)
    kind = k.take("h")
    if kind in (0, 1):
        group, topic, partition = k.string(), k.string(), k.take("i")
        if value is None:
            return "offset", group, topic, partition, None
        v = Reader(value)
        version = v.take("h")
        assert version == 3
        offset, _epoch, metadata, _commit_ms = v.take("q"), v.take("i"), v.string(), v.take("q")
        return "offset", group, topic, partition, (offset, metadata)
    assert kind == 2
    group = k.string()
    if value is None:
        return "group", group, None
    v = Reader(value)
    assert v.take("h") == 3
    protocol_type, generation, protocol, leader, _state_ms = v.string(), v.take("i"), v.string(), v.string(), v.take("q")

    def member():
        return (r.string(), r.string(), r.string(), r.string(), r.take("i"), r.take("i"), r.blob(), r.blob())
    r = v
    members = v.array(member)
    assert v.pos == len(value)
    return "group", group, (protocol_type, generation, protocol, leader, [m[0] for m in members])


def decoded_transaction_record(key: bytes, value: bytes) -> tuple:
    """(transactional id, producer id, status, {topic: partitions})."""
    k = Reader(key)
    assert k.take("h") == 0
    transactional_id = k.string()
    v = Reader(value)
    assert v.take("h") == 0
    producer_id, _epoch, _timeout, status = v.take("q"), v.take("h"), v.take("i"), v.take("b")
    partitions = v.array(lambda: (v.string(), v.array(lambda: v.take("i"))))
    v.take("q"), v.take("q")
    assert v.pos == len(value)
    return transactional_id, producer_id, status, dict(partitions or [])


def read_partition(bootstrap: str, topic: str, partition: int, done) -> list:
    """(offset, key, value) of the partition's records from the start, with kafka-python, until `done(records)`."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        tp = TopicPartition(topic, partition)
        consumer.assign([tp])
        consumer.seek_to_beginning()
        records = []
        deadline = time.monotonic() + TIMEOUT_S
        while not done(records):
            assert time.monotonic() < deadline, f"{topic}/{partition} never held what was awaited: {records}"
            for batch in consumer.poll(timeout_ms=200).values():
                records += [(m.offset, m.key, m.value) for m in batch]
        return records
    finally:
        consumer.close()


def confluent_read(bootstrap: str, topic: str, partition: int, count: int) -> list:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "internal-reader", "enable.auto.commit": False})
    try:
        consumer.assign([ConfluentPartition(topic, partition, 0)])
        got = []
        deadline = time.monotonic() + TIMEOUT_S
        while len(got) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                got.append((message.offset(), message.key(), message.value()))
        return got
    finally:
        consumer.close()


def consumed_by_group(bootstrap: str, group: str, topic: str, count: int) -> list[str]:
    """Consume `count` records of `topic` in `group`, commit, leave; the member's assignment."""
    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                             auto_offset_reset="earliest")
    try:
        got, deadline = 0, time.monotonic() + TIMEOUT_S
        while got < count and time.monotonic() < deadline:
            got += sum(len(batch) for batch in consumer.poll(timeout_ms=200).values())
        assert got == count
        consumer.commit()
        return [tp.topic for tp in consumer.assignment()]
    finally:
        consumer.close()


def compaction_configs(bootstrap: str, topic: str) -> tuple[str, str]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    (future,) = admin.describe_configs([ConfigResource(ResourceType.TOPIC, topic)]).values()
    configs = future.result(TIMEOUT_S)
    return configs["cleanup.policy"].value, configs["segment.bytes"].value


def test_group_commits_are_read_from_consumer_offsets_in_kafkas_format(gateway):
    create_topic(gateway.bootstrap, "it-data")
    kafka_python_produce(gateway.bootstrap, "it-data", [Sent(b"v%d" % i) for i in range(3)])
    assert consumed_by_group(gateway.bootstrap, "it-group", "it-data", 3) == ["it-data"]
    partition = kafka_partition("it-group")

    def holds_all(records):
        decoded = [decoded_offsets_record(key, value) for _, key, value in records]
        return ("offset", "it-group", "it-data", 0, (3, "")) in decoded and any(
            d[0] == "group" and d[2] is not None and d[2][4] == [] for d in decoded)  # the member left
    records = read_partition(gateway.bootstrap, OFFSETS, partition, holds_all)
    decoded = [decoded_offsets_record(key, value) for _, key, value in records]
    groups = [d[2] for d in decoded if d[0] == "group"]
    protocol_type, generation, protocol, leader, members = groups[0]  # the first generation the member synced
    assert (protocol_type, protocol, members) == ("consumer", "range", [leader]) and generation >= 1
    assert [offset for offset, _, _ in records] == list(range(len(records)))
    assert confluent_read(gateway.bootstrap, OFFSETS, partition, len(records)) == records

    kcat = subprocess.run(["kcat", "-b", gateway.bootstrap, "-C", "-t", OFFSETS, "-p", str(partition),
                           "-o", "beginning", "-e", "-q", "-f", "%o\\n"], capture_output=True, text=True,
                          timeout=TIMEOUT_S, check=True)
    assert kcat.stdout.split() == [str(offset) for offset, _, _ in records]
    assert compaction_configs(gateway.bootstrap, OFFSETS) == ("compact", "104857600")  # as Kafka keeps it

    gateway.stop()
    gateway.start()
    assert read_partition(gateway.bootstrap, OFFSETS, partition, lambda got: len(got) >= len(records)) == records


def test_regex_subscriptions_leave_internal_topics_out(shared_gateway):
    create_topic(shared_gateway.bootstrap, "rx-internal-data")
    kafka_python_produce(shared_gateway.bootstrap, "rx-internal-data", [Sent(b"x")])
    consumer = KafkaConsumer(bootstrap_servers=shared_gateway.bootstrap, group_id="rx-internal",
                             auto_offset_reset="earliest", enable_auto_commit=False)
    try:
        consumer.subscribe(pattern="^(__consumer_offsets|__transaction_state|rx-internal-.*)$")
        deadline = time.monotonic() + TIMEOUT_S
        while not consumer.assignment():
            assert time.monotonic() < deadline
            consumer.poll(timeout_ms=200)
        assert {tp.topic for tp in consumer.assignment()} == {"rx-internal-data"}
    finally:
        consumer.close()


def test_a_transaction_is_read_from_transaction_state_in_kafkas_format(shared_gateway):
    create_topic(shared_gateway.bootstrap, "it-txn-data")
    producer = Producer({"bootstrap.servers": shared_gateway.bootstrap, "transactional.id": "it-txn"})
    producer.init_transactions(TIMEOUT_S)
    producer.begin_transaction()
    producer.produce("it-txn-data", b"in a transaction")
    producer.commit_transaction(TIMEOUT_S)

    def completed(records):
        return any(decoded_transaction_record(key, value)[2] == COMPLETE_COMMIT for _, key, value in records)
    records = read_partition(shared_gateway.bootstrap, TRANSACTIONS, kafka_partition("it-txn"), completed)
    decoded = [decoded_transaction_record(key, value) for _, key, value in records]
    assert {d[0] for d in decoded} == {"it-txn"} and len({d[1] for d in decoded}) == 1
    statuses = [status for _, _, status, _ in decoded]
    assert statuses[-3:] == [ONGOING, PREPARE_COMMIT, COMPLETE_COMMIT]
    assert decoded[-3][3] == {"it-txn-data": [0]} and decoded[-1][3] == {}
