"""The admin APIs a one-gateway cluster answers as Kafka would, and the internal offsets topic.

Reassignments, AlterReplicaLogDirs, DescribeQuorum and the internal topic are
driven with kafka-python's admin; telemetry (KIP-714), not advertised, with
librdkafka, whose log must stay clean, and raw requests. One gateway serves
the module; each test uses topics of its own.
"""

from __future__ import annotations

import logging
import socket
import struct

import pytest
from confluent_kafka import KafkaError, Producer
from kafka import KafkaConsumer, TopicPartition, TopicPartitionReplica
from kafka import errors as kafka_errors
from kafka.protocol.api_key import ApiKey

from protocol.kafka import decode_response, encode_request
from protocol.kafka.apis import by_name
from protocol.kafka.error_codes import ErrorCode
from tests.gateway.admin import create_topic
from tests.gateway.clients import confluent_consume

NODE = 0
INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state")
TIMEOUT_S = 30.0
TELEMETRY_APIS = (ApiKey.GetTelemetrySubscriptions, ApiKey.PushTelemetry)


@pytest.fixture
def admin(shared_gateway):
    from kafka.admin import KafkaAdminClient

    client = KafkaAdminClient(bootstrap_servers=shared_gateway.bootstrap)
    yield client
    client.close()


def test_no_reassignment_moves_a_partition(admin, shared_gateway):
    create_topic(shared_gateway.bootstrap, "reassigned", partitions=2)
    here, other = TopicPartition("reassigned", 0), TopicPartition("reassigned", 1)
    unknown = TopicPartition("reassigned", 7)

    assert admin.list_partition_reassignments() == {}
    assert admin.list_partition_reassignments([here, unknown]) == {}
    answers = admin.alter_partition_reassignments({here: [NODE], other: [NODE, 5], unknown: [NODE]})
    cancelled = admin.alter_partition_reassignments({here: None})

    assert answers == {here: None, other: kafka_errors.InvalidReplicationAssignmentError,
                       unknown: kafka_errors.UnknownTopicOrPartitionError}
    assert cancelled == {here: kafka_errors.NoReassignmentInProgressError}
    assert admin.list_partition_reassignments() == {}


def test_replica_log_dir_stays_in_the_one_directory(admin, shared_gateway):
    create_topic(shared_gateway.bootstrap, "log-dir-moved")
    ((directory,),) = [[d["log_dir"] for d in broker["log_dirs"]] for broker in admin.describe_log_dirs()]
    here, unknown = TopicPartitionReplica("log-dir-moved", 0, NODE), TopicPartitionReplica("log-dir-moved", 3, NODE)

    answers = admin.alter_replica_log_dirs({here: directory, unknown: directory})
    elsewhere = admin.alter_replica_log_dirs({here: directory + "-elsewhere"})

    assert answers == {here: kafka_errors.NoError, unknown: kafka_errors.UnknownTopicOrPartitionError}
    assert elsewhere == {here: kafka_errors.LogDirNotFoundError}


def exchange(gateway, api_name: str, version: int, body):
    """The decoded answer to one request sent on a raw socket."""
    api = by_name(api_name)
    with socket.create_connection(("127.0.0.1", gateway.port), timeout=TIMEOUT_S) as sock:
        request = encode_request(api.key, version, 1, "raw", body)
        sock.sendall(struct.pack(">i", len(request)) + request)
        size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
        return decode_response(api.key, version, sock.recv(size, socket.MSG_WAITALL))[1]


@pytest.mark.parametrize("version", [0, 1, 2])
def test_quorum_in_every_version(shared_gateway, version):
    quorum = by_name("DescribeQuorum")
    Topic = quorum.Request.Topics
    asked = quorum.Request(topics=[Topic(topic_name="__cluster_metadata",
                                         partitions=[Topic.Partitions(partition_index=0)])])
    wrong = quorum.Request(topics=[Topic(topic_name="__cluster_metadata",
                                         partitions=[Topic.Partitions(partition_index=1)])])

    answer = exchange(shared_gateway, "DescribeQuorum", version, asked)
    (partition,) = answer.topics[0].partitions
    assert (answer.error_code, partition.error_code, partition.leader_id) == (0, 0, NODE)
    assert len(answer.nodes) == (1 if version >= 2 else 0)
    (unknown,) = exchange(shared_gateway, "DescribeQuorum", version, wrong).topics[0].partitions
    assert unknown.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert exchange(shared_gateway, "DescribeQuorum", version, quorum.Request()).error_code == \
        ErrorCode.INVALID_REQUEST


def test_quorum_is_the_controller_alone(admin):
    quorum = admin.describe_metadata_quorum()

    (topic,) = quorum["topics"]
    (partition,) = topic["partitions"]
    assert topic["topic_name"] == "__cluster_metadata" and partition["error"] is None
    assert partition["leader_id"] == NODE and partition["leader_epoch"] >= 1
    assert [voter["replica_id"] for voter in partition["current_voters"]] == [NODE]
    assert partition["observers"] == []
    assert [node["node_id"] for node in quorum["nodes"]] == [NODE]


def test_internal_topics_are_listed_once_in_use(gateway):
    from kafka.admin import KafkaAdminClient

    create_topic(gateway.bootstrap, "grouped-internal")
    admin = KafkaAdminClient(bootstrap_servers=gateway.bootstrap)
    try:
        assert not set(INTERNAL_TOPICS) & set(admin.list_topics())
        assert committed_by_a_group(gateway.bootstrap, TopicPartition("grouped-internal", 0), 5) == 5
        assert "__consumer_offsets" in admin.list_topics()
        Producer({"bootstrap.servers": gateway.bootstrap, "transactional.id": "internal"}).init_transactions(TIMEOUT_S)

        assert set(INTERNAL_TOPICS) <= set(admin.list_topics())
        described = admin.describe_topics(list(INTERNAL_TOPICS))
        created = admin.create_topics(list(INTERNAL_TOPICS), raise_errors=False)
    finally:
        admin.close()
    assert [(t["name"], t["error_code"], t["is_internal"], len(t["partitions"])) for t in described] == [
        (name, 0, True, 50) for name in INTERNAL_TOPICS]
    assert {(p["leader_id"], tuple(p["replica_nodes"])) for t in described for p in t["partitions"]} == {
        (NODE, (NODE,))}
    assert [refused_produce(gateway.bootstrap, name) for name in INTERNAL_TOPICS] == [
        KafkaError.TOPIC_EXCEPTION] * 2
    assert [topic["error_code"] for topic in created["topics"]] == [ErrorCode.TOPIC_ALREADY_EXISTS] * 2


def committed_by_a_group(bootstrap: str, partition: TopicPartition, offset: int) -> int:
    """Commit `offset` for `partition` as a group, and read the commit back."""
    from kafka.structs import OffsetAndMetadata

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id="internal-topic-group", enable_auto_commit=False)
    try:
        consumer.assign([partition])
        consumer.commit({partition: OffsetAndMetadata(offset, "", -1)})
        return consumer.committed(partition)
    finally:
        consumer.close()


def refused_produce(bootstrap: str, topic: str) -> int:
    """The error code a confluent-kafka produce to partition 0 of `topic` is answered
    (kafka-python refuses internal topics itself)."""
    producer = Producer({"bootstrap.servers": bootstrap})
    errors = []
    producer.produce(topic, b"forged", partition=0, on_delivery=lambda error, _: errors.append(error))
    assert producer.flush(TIMEOUT_S) == 0
    (error,) = errors
    return error.code()


def test_telemetry_is_answered_though_not_advertised(shared_gateway):
    """As Kafka's isApiEnabled, which looks at the listener and version only, serves the
    telemetry APIs its ApiVersions leaves out: a client asking anyway gets an empty subscription."""
    get, push = by_name("GetTelemetrySubscriptions"), by_name("PushTelemetry")
    subscription = exchange(shared_gateway, get.name, 0, get.Request())
    again = exchange(shared_gateway, get.name, 0, get.Request(client_instance_id=subscription.client_instance_id))
    assert subscription.error_code == ErrorCode.NONE
    assert subscription.client_instance_id.int != 0 and subscription.requested_metrics == []
    assert (again.client_instance_id, again.subscription_id) == (subscription.client_instance_id,
                                                                  subscription.subscription_id)

    def pushed(**fields) -> int:
        body = {"client_instance_id": subscription.client_instance_id,
                "subscription_id": subscription.subscription_id, "metrics": b"m", **fields}
        return exchange(shared_gateway, push.name, 0, push.Request(**body)).error_code

    assert pushed() == ErrorCode.NONE
    assert pushed(terminating=True, compression_type=4) == ErrorCode.NONE
    assert pushed(subscription_id=subscription.subscription_id + 1) == ErrorCode.UNKNOWN_SUBSCRIPTION_ID
    assert pushed(compression_type=9) == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    assert pushed(metrics=bytes(subscription.telemetry_max_bytes + 1)) == ErrorCode.TELEMETRY_TOO_LARGE


def test_api_versions_leaves_telemetry_out(admin):
    """As a Kafka broker without a metrics reporter for client telemetry."""
    advertised = admin.api_versions()
    assert ApiKey.Produce in advertised and ApiKey.DescribeCluster in advertised
    assert not [key for key in TELEMETRY_APIS if key in advertised], advertised


class Collected(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_librdkafka_asks_no_telemetry(shared_gateway):
    """With enable.metrics.push on, a producer and a consumer neither pick a telemetry broker
    nor ask a subscription (no debug line of telemetry), so the info line of a new client
    instance id ("Telemetry client instance id changed") never comes."""
    create_topic(shared_gateway.bootstrap, "telemetry-quiet")
    log_start = shared_gateway.log_path.stat().st_size
    handler, logger = Collected(), logging.getLogger("librdkafka-telemetry")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    config = {"logger": logger, "debug": "telemetry", "enable.metrics.push": True}

    producer = Producer({"bootstrap.servers": shared_gateway.bootstrap, **config})
    producer.produce("telemetry-quiet", b"v", partition=0)
    assert producer.flush(TIMEOUT_S) == 0
    got = confluent_consume(shared_gateway.bootstrap, "telemetry-quiet", [0], 1, **config)

    assert [g.value for g in got] == [b"v"]
    logged = [r.getMessage() for r in handler.records if not r.getMessage().startswith("INIT ")]  # debug's banner
    assert not logged, logged
    with shared_gateway.log_path.open() as log:
        log.seek(log_start)
        assert not [line for line in log if "level='warning'" in line or "level='error'" in line]
