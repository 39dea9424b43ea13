"""__consumer_offsets and __transaction_state read as Kafka serves them, after real groups and a transaction.

The records are decoded here by a decoder of Kafka's formats written for the
test (struct unpacking by the layouts of Kafka's OffsetCommit, GroupMetadata
and TransactionLog definitions), not by the gateway's codec.
"""

from __future__ import annotations

import struct
import subprocess
import time

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer
from confluent_kafka import TopicPartition as ConfluentPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    OffsetSpec,
    ResourceType,
)
from kafka import KafkaConsumer, TopicPartition

from protocol.kafka.apis import by_name
from tests.gateway.admin import create_topic
from tests.gateway.clients import Sent, kafka_python_produce
from tests.gateway.groups import wait_until
from tests.gateway.sasl_connection import RawConnection
from tests.gateway.server import GatewayProcess
from tests.gateway.test_cluster import gateway_cluster

TIMEOUT_S = 30.0
OFFSETS, TRANSACTIONS = "__consumer_offsets", "__transaction_state"
ONGOING, PREPARE_COMMIT, COMPLETE_COMMIT = 1, 2, 4
OFFSET_KEYS = (0, 1)  # the versions of OffsetCommitKey
LEADER_EPOCH = by_name("OffsetForLeaderEpoch")


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


@pytest.fixture(scope="module")
def cleaning_gateway(tmp_path_factory):
    """Compacted topics (the internal ones among them, which inherit these) cleaned within moments."""
    server = GatewayProcess(tmp_path_factory.mktemp("internal-compaction"), "--log-cleaner-backoff-ms", "100",
                            "--log-roll-ms", "100", "--log-cleaner-min-cleanable-ratio", "0.01",
                            "--log-cleaner-delete-retention-ms", "300").start()
    yield server
    server.stop()


def whole_partition(bootstrap: str, topic: str, partition: int) -> list:
    """(offset, key, value) of every record the partition holds now, read with librdkafka."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "internal-reader", "enable.auto.commit": False})
    try:
        _, end = consumer.get_watermark_offsets(ConfluentPartition(topic, partition), TIMEOUT_S)
        consumer.assign([ConfluentPartition(topic, partition, OFFSET_BEGINNING)])
        got = []
        deadline = time.monotonic() + TIMEOUT_S
        while not got or got[-1][0] < end - 1:
            assert time.monotonic() < deadline, f"{topic}/{partition} ends before {end}"
            got += [(m.offset(), m.key(), m.value()) for m in consumer.consume(1000, 0.2) if m.error() is None]
        return got
    finally:
        consumer.close()


def test_consumer_offsets_is_compacted_to_the_newest_record_of_each_key(cleaning_gateway):
    """Kafka compacts __consumer_offsets: the stores' cleaner keeps each key's newest record and,
    after delete.retention.ms, drops tombstones (here those of a deleted group's offsets)."""
    bootstrap = cleaning_gateway.bootstrap
    create_topic(bootstrap, "ic-data", partitions=2)
    committer = Consumer({"bootstrap.servers": bootstrap, "group.id": "ic-group", "enable.auto.commit": False})
    partition = kafka_partition("ic-group")

    def commit(data_partition: int, offset: int) -> None:
        committer.commit(offsets=[ConfluentPartition("ic-data", data_partition, offset)], asynchronous=False)

    def offsets_of(data_partition: int) -> list:
        decoded = [decoded_offsets_record(key, value) for _, key, value in whole_partition(bootstrap, OFFSETS, partition)
                   if struct.unpack_from(">h", key)[0] in OFFSET_KEYS]
        return [d[4] for d in decoded if d[:4] == ("offset", "ic-group", "ic-data", data_partition)]
    try:
        for offset in range(1, 6):
            commit(0, offset)

        def cleaned() -> bool:  # each check commits again: the active segment rolls only at an append
            commit(1, 7)
            return offsets_of(0) == [(5, "")]
        wait_until(cleaned, 60, "the stores cleaned __consumer_offsets")
        admin = AdminClient({"bootstrap.servers": bootstrap})
        (future,) = admin.delete_consumer_groups(["ic-group"]).values()
        future.result(TIMEOUT_S)

        def tombstone_gone() -> bool:
            commit(1, 7)
            return offsets_of(0) == []
        wait_until(tombstone_gone, 60, "the tombstone of the deleted offset went")
    finally:
        committer.close()


@pytest.fixture(scope="module")
def internal_gateway(tmp_path_factory):
    """A gateway whose internal topics hold a group's commit and a transaction's states, created with
    segment sizes of their own."""
    server = GatewayProcess(tmp_path_factory.mktemp("internal-configs"), "--offsets-topic-segment-bytes", "2097152",
                            "--transaction-state-log-segment-bytes", "3145728").start()
    create_topic(server.bootstrap, "ik-data")
    committer = Consumer({"bootstrap.servers": server.bootstrap, "group.id": "ik-group", "enable.auto.commit": False})
    committer.commit(offsets=[ConfluentPartition("ik-data", 0, 3)], asynchronous=False)
    committer.close()
    producer = Producer({"bootstrap.servers": server.bootstrap, "transactional.id": "ik-txn"})
    producer.init_transactions(TIMEOUT_S)
    producer.begin_transaction()
    producer.produce("ik-data", b"in a transaction")
    producer.commit_transaction(TIMEOUT_S)
    read_partition(server.bootstrap, OFFSETS, kafka_partition("ik-group"), lambda records: len(records) >= 1)
    read_partition(server.bootstrap, TRANSACTIONS, kafka_partition("ik-txn"), lambda records: len(records) >= 4)
    yield server
    server.stop()


def described(bootstrap: str, topic: str) -> dict:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    (future,) = admin.describe_configs([ConfigResource(ResourceType.TOPIC, topic)]).values()
    return future.result(TIMEOUT_S)


def test_internal_topics_are_described_with_the_configs_kafka_creates_them_with(internal_gateway):
    """GroupCoordinatorService.groupMetadataTopicConfigs and TransactionStateManager.transactionTopicConfigs,
    segment.bytes from offsets.topic.segment.bytes and transaction.state.log.segment.bytes."""
    def overrides(topic: str) -> dict:
        return {name: entry.value for name, entry in described(internal_gateway.bootstrap, topic).items()
                if entry.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value}
    assert overrides(OFFSETS) == {"cleanup.policy": "compact", "compression.type": "producer",
                                  "segment.bytes": "2097152"}
    assert overrides(TRANSACTIONS) == {"cleanup.policy": "compact", "compression.type": "uncompressed",
                                       "segment.bytes": "3145728", "unclean.leader.election.enable": "false"}


def test_internal_topic_configs_are_altered_as_any_topics(internal_gateway):
    """Kafka 4's controller checks the topic's name and the configs, not whether it is internal."""
    admin = AdminClient({"bootstrap.servers": internal_gateway.bootstrap})
    change = ConfigEntry("min.compaction.lag.ms", "60000", incremental_operation=AlterConfigOpType.SET)
    (future,) = admin.incremental_alter_configs(
        [ConfigResource(ResourceType.TOPIC, TRANSACTIONS, incremental_configs=[change])]).values()
    future.result(TIMEOUT_S)
    assert described(internal_gateway.bootstrap, TRANSACTIONS)["min.compaction.lag.ms"].value == "60000"


def test_records_of_internal_topics_are_not_deleted(internal_gateway):
    """Kafka's ReplicaManager refuses DeleteRecords on an internal topic with INVALID_TOPIC_EXCEPTION."""
    admin = AdminClient({"bootstrap.servers": internal_gateway.bootstrap})
    partition = ConfluentPartition(OFFSETS, kafka_partition("ik-group"), 1)
    (future,) = admin.delete_records([partition]).values()
    with pytest.raises(KafkaException) as refused:
        future.result(TIMEOUT_S)
    assert refused.value.args[0].code() == KafkaError.TOPIC_EXCEPTION
    assert whole_partition(internal_gateway.bootstrap, OFFSETS, partition.partition)[0][0] == 0


def test_internal_topics_are_positioned_as_any_topics(internal_gateway):
    """ListOffsets (earliest, latest, by timestamp) and OffsetForLeaderEpoch on __transaction_state."""
    admin = AdminClient({"bootstrap.servers": internal_gateway.bootstrap})
    partition = kafka_partition("ik-txn")
    records = whole_partition(internal_gateway.bootstrap, TRANSACTIONS, partition)

    def offset(spec) -> int:
        (future,) = admin.list_offsets({ConfluentPartition(TRANSACTIONS, partition): spec}).values()
        return future.result(TIMEOUT_S).offset
    assert [offset(OffsetSpec.earliest()), offset(OffsetSpec.latest()), offset(OffsetSpec.for_timestamp(0))] == [
        0, records[-1][0] + 1, 0]
    connection = RawConnection(internal_gateway.port)
    Topic = LEADER_EPOCH.Request.Topics
    answer = connection.call(LEADER_EPOCH, 4, LEADER_EPOCH.Request(replica_id=-1, topics=[Topic(
        topic=TRANSACTIONS, partitions=[Topic.Partitions(partition=partition, current_leader_epoch=-1,
                                                         leader_epoch=0)])]))
    (answered,) = answer.topics[0].partitions
    assert (answered.error_code, answered.end_offset) == (0, records[-1][0] + 1)


def test_a_cluster_serves_internal_topics_through_any_gateway(tmp_path):
    """The controller creates them with Kafka's configs, which the other gateway describes too; DeleteRecords
    is refused at the partition's leader, whichever gateway leads it."""
    with gateway_cluster(tmp_path, 2) as gateways:
        follower = gateways[1].bootstrap
        create_topic(follower, "icl-data")
        committer = Consumer({"bootstrap.servers": follower, "group.id": "icl-group", "enable.auto.commit": False})
        committer.commit(offsets=[ConfluentPartition("icl-data", 0, 4)], asynchronous=False)
        committer.close()
        partition = kafka_partition("icl-group")
        records = whole_partition(follower, OFFSETS, partition)
        assert [decoded_offsets_record(key, value)[1:] for _, key, value in records
                if struct.unpack_from(">h", key)[0] in OFFSET_KEYS] == [("icl-group", "icl-data", 0, (4, ""))]
        configs = described(follower, OFFSETS)
        assert [configs[name].value for name in ("cleanup.policy", "compression.type", "segment.bytes")] == [
            "compact", "producer", "104857600"]
        admin = AdminClient({"bootstrap.servers": follower})  # kept: its futures end with it
        (future,) = admin.delete_records([ConfluentPartition(OFFSETS, partition, 1)]).values()
        with pytest.raises(KafkaException) as refused:
            future.result(TIMEOUT_S)
        assert refused.value.args[0].code() == KafkaError.TOPIC_EXCEPTION
