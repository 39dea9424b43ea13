"""Admin APIs against the real gateway: topics, partitions, configs and the cluster.

One gateway serves the module; each test works on topics of its own.
"""

from __future__ import annotations

import asyncio
import subprocess

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicCollection
from confluent_kafka.admin import (
    AclOperation,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    ResourceType,
)

from protocol.kafka.apis import by_name
from protocol.kafka.error_codes import ErrorCode
from tests.gateway.admin import create_topic
from tests.gateway.test_validation import Connection

TIMEOUT_S = 30.0
MAX_CONNECTIONS = 2147483647  # Kafka's default
CREATE_TOPICS, CREATE_PARTITIONS = by_name("CreateTopics"), by_name("CreatePartitions")


@pytest.fixture(scope="module")
def admin(shared_gateway):
    return AdminClient({"bootstrap.servers": shared_gateway.bootstrap})


@pytest.fixture
def kafka_python_admin(shared_gateway):
    from kafka.admin import KafkaAdminClient

    client = KafkaAdminClient(bootstrap_servers=shared_gateway.bootstrap)
    yield client
    client.close()


def outcome(future):
    """None on success, else the Kafka error code the broker answered."""
    try:
        future.result(TIMEOUT_S)
    except KafkaException as exc:
        return exc.args[0].code()
    return None


def topic_configs(admin, name: str) -> dict:
    resource = ConfigResource(ResourceType.TOPIC, name)
    return admin.describe_configs([resource])[resource].result(TIMEOUT_S)


def partition_count(admin, name: str) -> int:
    return len(admin.list_topics(name, timeout=TIMEOUT_S).topics[name].partitions)


# confluent-kafka ----------------------------------------------------------

def test_create_topics_with_configs(admin):
    futures = admin.create_topics([NewTopic("ct-configs", 3, 1, config={"retention.ms": "60000"})])
    assert outcome(futures["ct-configs"]) is None
    assert partition_count(admin, "ct-configs") == 3
    configs = topic_configs(admin, "ct-configs")
    assert configs["retention.ms"].value == "60000"
    assert configs["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value


def test_create_topics_validate_only_creates_nothing(admin):
    futures = admin.create_topics([NewTopic("ct-dry-run", 2, 1)], validate_only=True)
    assert outcome(futures["ct-dry-run"]) is None
    assert "ct-dry-run" not in admin.list_topics(timeout=TIMEOUT_S).topics


def test_create_topics_refusals(admin, shared_gateway):
    create_topic(shared_gateway.bootstrap, "ct-exists")
    futures = admin.create_topics([
        NewTopic("ct-exists", 1, 1),
        NewTopic("ct-bad-config", 1, 1, config={"no.such.config": "1"}),
        NewTopic("ct-bad-value", 1, 1, config={"retention.ms": "soon"}),
        NewTopic("ct bad name", 1, 1),
        NewTopic("ct-zero", 0, 1),
    ])
    assert outcome(futures["ct-exists"]) == KafkaError.TOPIC_ALREADY_EXISTS
    assert outcome(futures["ct-bad-config"]) == KafkaError.INVALID_CONFIG
    assert outcome(futures["ct-bad-value"]) == KafkaError.INVALID_CONFIG
    assert outcome(futures["ct bad name"]) == KafkaError.TOPIC_EXCEPTION
    assert outcome(futures["ct-zero"]) == KafkaError.INVALID_PARTITIONS


def test_create_topic_with_manual_assignment(admin):
    futures = admin.create_topics([NewTopic("ct-assigned", 2, replica_assignment=[[0], [0]]),
                                   NewTopic("ct-stranger", 1, replica_assignment=[[0, 5]])])
    assert outcome(futures["ct-assigned"]) is None
    assert outcome(futures["ct-stranger"]) == KafkaError.INVALID_REPLICA_ASSIGNMENT
    assert partition_count(admin, "ct-assigned") == 2


def test_delete_topics(admin, shared_gateway):
    create_topic(shared_gateway.bootstrap, "dt-gone")
    futures = admin.delete_topics(["dt-gone", "dt-never-was"])
    assert outcome(futures["dt-gone"]) is None
    assert outcome(futures["dt-never-was"]) == KafkaError.UNKNOWN_TOPIC_OR_PART
    assert "dt-gone" not in admin.list_topics(timeout=TIMEOUT_S).topics


def test_create_partitions(admin, shared_gateway):
    create_topic(shared_gateway.bootstrap, "cp-grow")
    dry = admin.create_partitions([NewPartitions("cp-grow", 5)], validate_only=True)
    assert outcome(dry["cp-grow"]) is None
    assert partition_count(admin, "cp-grow") == 1
    futures = admin.create_partitions([NewPartitions("cp-grow", 3), NewPartitions("cp-missing", 2)])
    assert outcome(futures["cp-grow"]) is None
    assert outcome(futures["cp-missing"]) == KafkaError.UNKNOWN_TOPIC_OR_PART
    assert partition_count(admin, "cp-grow") == 3
    shrink = admin.create_partitions([NewPartitions("cp-grow", 2)])
    assert outcome(shrink["cp-grow"]) == KafkaError.INVALID_PARTITIONS


def test_changes_that_wait_for_nothing_are_made_and_answered_request_timed_out(admin, shared_gateway):
    """With timeout_ms <= 0 Kafka's broker answers CreateTopics and CreatePartitions at once:
    REQUEST_TIMED_OUT for each topic it created or grew, the change made all the same (a
    validation changes nothing and is answered as always); librdkafka, told to wait for nothing
    (operation_timeout=0), takes that answer for done."""
    Wanted, More = CREATE_TOPICS.Request.Topics, CREATE_PARTITIONS.Request.Topics
    connection = Connection(shared_gateway.port)
    try:
        created = connection.call(CREATE_TOPICS, 7, CREATE_TOPICS.Request(
            topics=[Wanted(name="nw-raw", num_partitions=1, replication_factor=1)], timeout_ms=0))
        assert [(t.name, t.error_code, t.num_partitions) for t in created.topics] == [
            ("nw-raw", ErrorCode.REQUEST_TIMED_OUT, -1)]
        grown = connection.call(CREATE_PARTITIONS, 3, CREATE_PARTITIONS.Request(
            topics=[More(name="nw-raw", count=3, assignments=None)], timeout_ms=-1))
        assert [(r.name, r.error_code) for r in grown.results] == [("nw-raw", ErrorCode.REQUEST_TIMED_OUT)]
        checked = connection.call(CREATE_TOPICS, 7, CREATE_TOPICS.Request(
            topics=[Wanted(name="nw-checked", num_partitions=1, replication_factor=1)], timeout_ms=0,
            validate_only=True))
        assert [(t.name, t.error_code) for t in checked.topics] == [("nw-checked", ErrorCode.NONE)]
    finally:
        connection.close()
    assert partition_count(admin, "nw-raw") == 3
    assert "nw-checked" not in admin.list_topics(timeout=TIMEOUT_S).topics
    futures = admin.create_topics([NewTopic("nw-confluent", 2, 1)], operation_timeout=0)
    assert outcome(futures["nw-confluent"]) is None
    assert partition_count(admin, "nw-confluent") == 2


def test_describe_topic_configs(admin, shared_gateway):
    create_topic(shared_gateway.bootstrap, "dc-topic", configs={"retention.bytes": "1000000"})
    configs = topic_configs(admin, "dc-topic")
    assert {"cleanup.policy", "retention.ms", "retention.bytes", "min.insync.replicas"} <= set(configs)
    own = configs["retention.bytes"]
    assert (own.value, own.source, own.is_read_only, own.is_sensitive) == (
        "1000000", ConfigSource.DYNAMIC_TOPIC_CONFIG.value, False, False)
    assert [(s.name, s.value) for s in own.synonyms.values()] == [
        ("retention.bytes", "1000000"), ("log.retention.bytes", "-1")]
    inherited = configs["retention.ms"]
    assert (inherited.value, inherited.source, inherited.is_default) == (
        str(7 * 24 * 3600 * 1000), ConfigSource.DEFAULT_CONFIG.value, True)


def test_describe_unknown_topic_configs(admin):
    resource = ConfigResource(ResourceType.TOPIC, "dc-no-such-topic")
    future = admin.describe_configs([resource])[resource]
    assert outcome(future) == KafkaError.UNKNOWN_TOPIC_OR_PART


def test_describe_broker_configs(admin, shared_gateway):
    resource = ConfigResource(ResourceType.BROKER, "0")
    configs = admin.describe_configs([resource])[resource].result(TIMEOUT_S)
    assert configs["num.partitions"].value == "1"
    assert configs["auto.create.topics.enable"].value == "true"
    assert configs["max.connections"].value == str(MAX_CONNECTIONS)
    assert configs["node.id"].value == "0"
    assert configs["advertised.listeners"].value == f"PLAINTEXT://{shared_gateway.bootstrap}"
    assert configs["advertised.listeners"].source == ConfigSource.STATIC_BROKER_CONFIG.value
    assert configs["num.partitions"].source == ConfigSource.DEFAULT_CONFIG.value
    assert configs["num.partitions"].is_read_only and not configs["log.retention.ms"].is_read_only


def test_alter_configs_replaces_every_override(admin, shared_gateway):
    create_topic(shared_gateway.bootstrap, "ac-replace", configs={"retention.ms": "1000"})
    resource = ConfigResource(ResourceType.TOPIC, "ac-replace", set_config={"retention.bytes": "2048"})
    assert outcome(admin.alter_configs([resource])[resource]) is None
    configs = topic_configs(admin, "ac-replace")
    assert configs["retention.bytes"].value == "2048"
    assert configs["retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value
    bad = ConfigResource(ResourceType.TOPIC, "ac-replace", set_config={"no.such.config": "1"})
    assert outcome(admin.alter_configs([bad])[bad]) == KafkaError.INVALID_CONFIG
    broker = ConfigResource(ResourceType.BROKER, "0", set_config={"num.partitions": "4"})
    assert outcome(admin.alter_configs([broker])[broker]) == KafkaError.INVALID_REQUEST


def test_incremental_alter_configs(admin, shared_gateway):
    create_topic(shared_gateway.bootstrap, "iac-topic", configs={"retention.ms": "1000"})
    change = ConfigResource(ResourceType.TOPIC, "iac-topic", incremental_configs=[
        ConfigEntry("retention.bytes", "4096", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE),
        ConfigEntry("cleanup.policy", "delete", incremental_operation=AlterConfigOpType.APPEND),
    ])
    assert outcome(admin.incremental_alter_configs([change])[change]) is None
    configs = topic_configs(admin, "iac-topic")
    assert configs["retention.bytes"].value == "4096"
    assert configs["retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value
    assert (configs["cleanup.policy"].value, configs["cleanup.policy"].source) == (
        "delete", ConfigSource.DYNAMIC_TOPIC_CONFIG.value)

    not_a_list = ConfigResource(ResourceType.TOPIC, "iac-topic", incremental_configs=[
        ConfigEntry("retention.bytes", "1", incremental_operation=AlterConfigOpType.APPEND)])
    unknown = ConfigResource(ResourceType.TOPIC, "iac-missing", incremental_configs=[
        ConfigEntry("retention.bytes", "1", incremental_operation=AlterConfigOpType.SET)])
    dry = ConfigResource(ResourceType.TOPIC, "iac-topic", incremental_configs=[
        ConfigEntry("retention.bytes", "1", incremental_operation=AlterConfigOpType.SET)])
    futures = admin.incremental_alter_configs([not_a_list, unknown])
    assert outcome(futures[not_a_list]) == KafkaError.INVALID_CONFIG
    assert outcome(futures[unknown]) == KafkaError.UNKNOWN_TOPIC_OR_PART
    assert outcome(admin.incremental_alter_configs([dry], validate_only=True)[dry]) is None
    assert topic_configs(admin, "iac-topic")["retention.bytes"].value == "4096"


def test_describe_cluster(admin, shared_gateway):
    cluster = admin.describe_cluster().result(TIMEOUT_S)
    assert cluster.cluster_id == "dafka-gateway"
    assert cluster.controller.id == 0
    assert [(n.id, n.host, n.port) for n in cluster.nodes] == [(0, "127.0.0.1", shared_gateway.port)]


def test_describe_cluster_with_authorized_operations(admin):
    """librdkafka asks Metadata v8-10 for them; without an authorizer every cluster operation is allowed."""
    cluster = admin.describe_cluster(include_authorized_operations=True).result(TIMEOUT_S)
    assert set(cluster.authorized_operations) == {
        AclOperation.CREATE, AclOperation.ALTER, AclOperation.DESCRIBE, AclOperation.CLUSTER_ACTION,
        AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS, AclOperation.IDEMPOTENT_WRITE}


def test_describe_and_list_topics(admin, shared_gateway):
    create_topic(shared_gateway.bootstrap, "dtp-two", partitions=2)
    futures = admin.describe_topics(TopicCollection(["dtp-two", "dtp-none"]))
    description = futures["dtp-two"].result(TIMEOUT_S)
    assert [(p.id, p.leader.id, [r.id for r in p.replicas], [r.id for r in p.isr])
            for p in description.partitions] == [(0, 0, [0], [0]), (1, 0, [0], [0])]
    assert outcome(futures["dtp-none"]) == KafkaError.UNKNOWN_TOPIC_OR_PART
    listed = admin.list_topics(timeout=TIMEOUT_S)
    assert sorted(listed.topics["dtp-two"].partitions) == [0, 1]
    assert listed.cluster_id == "dafka-gateway"


# kafka-python -------------------------------------------------------------

def test_kafka_python_topics_and_partitions(kafka_python_admin):
    created = kafka_python_admin.create_topics(
        {"kp-topic": {"num_partitions": 2, "replication_factor": 1, "configs": {"retention.ms": "5000"}}})
    (topic,) = created["topics"]
    assert (topic["name"], topic["error_code"], topic["num_partitions"], topic["replication_factor"]) == (
        "kp-topic", 0, 2, 1)
    assert topic["configs"]["retention.ms"]["value"] == "5000"
    kafka_python_admin.create_partitions({"kp-topic": 4})
    described = kafka_python_admin.describe_topics(["kp-topic"])
    assert len(described[0]["partitions"]) == 4
    deleted = kafka_python_admin.delete_topics(["kp-topic"])
    assert [(r["name"], r["error_code"]) for r in deleted["topics"]] == [("kp-topic", 0)]
    assert "kp-topic" not in kafka_python_admin.list_topics()


def test_kafka_python_describe_configs_and_cluster(kafka_python_admin):
    from kafka.admin import ConfigResource as KafkaPythonResource

    kafka_python_admin.create_topics({"kp-configs": {"configs": {"retention.bytes": "777"}}})
    described = kafka_python_admin.describe_configs([KafkaPythonResource("topic", "kp-configs")])
    (modified,) = described["topic"]["kp-configs"].items()
    assert modified[0] == "retention.bytes" and modified[1]["value"] == "777"
    cluster = kafka_python_admin.describe_cluster()
    assert (cluster["cluster_id"], cluster["controller_id"]) == ("dafka-gateway", 0)
    assert [(b["broker_id"], b["host"], b["is_fenced"]) for b in cluster["brokers"]] == [(0, "127.0.0.1", False)]
    assert {"DESCRIBE", "ALTER_CONFIGS", "IDEMPOTENT_WRITE"} <= set(cluster["authorized_operations"])


def test_kafka_python_describe_topic_partitions_pages(kafka_python_admin):
    kafka_python_admin.create_topics({"kpp-a": {"num_partitions": 3}, "kpp-b": {"num_partitions": 2}})
    first = kafka_python_admin.describe_topic_partitions(["kpp-b", "kpp-a"], response_partition_limit=2)
    assert [(t["name"], [p["partition_index"] for p in t["partitions"]]) for t in first["topics"]] == [
        ("kpp-a", [0, 1])]
    assert first["next_cursor"] == {"topic_name": "kpp-a", "partition_index": 2}
    rest = kafka_python_admin.describe_topic_partitions(["kpp-b", "kpp-a"], response_partition_limit=2,
                                                        cursor=first["next_cursor"])
    assert [(t["name"], [p["partition_index"] for p in t["partitions"]]) for t in rest["topics"]] == [
        ("kpp-a", [2]), ("kpp-b", [0])]
    assert rest["next_cursor"] == {"topic_name": "kpp-b", "partition_index": 1}
    partition = rest["topics"][0]["partitions"][0]
    assert (partition["leader_id"], partition["replica_nodes"], partition["isr_nodes"]) == (0, [0], [0])
    assert (partition["eligible_leader_replicas"], partition["offline_replicas"]) == (None, [])


# aiokafka -----------------------------------------------------------------

def test_aiokafka_create_topics_and_describe_configs(shared_gateway):
    from aiokafka.admin import AIOKafkaAdminClient
    from aiokafka.admin import NewTopic as AioNewTopic
    from aiokafka.admin.config_resource import ConfigResource as AioResource
    from aiokafka.admin.config_resource import ConfigResourceType as AioResourceType

    async def run():
        client = AIOKafkaAdminClient(bootstrap_servers=shared_gateway.bootstrap)
        await client.start()
        try:
            created = await client.create_topics(
                [AioNewTopic("aio-topic", 2, 1, topic_configs={"retention.ms": "9000"})])
            described = await client.describe_configs([AioResource(AioResourceType.TOPIC, "aio-topic")])
            return created.to_object(), [r.to_object() for r in described]
        finally:
            await client.close()

    created, described = asyncio.run(run())
    assert [(t["topic"], t["error_code"]) for t in created["topic_errors"]] == [("aio-topic", 0)]
    (response,) = described
    (result,) = response["resources"]
    assert (result["error_code"], result["resource_name"]) == (0, "aio-topic")
    sources = {c["config_names"]: (c["config_value"], c["config_source"]) for c in result["config_entries"]}
    assert sources["retention.ms"] == ("9000", ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
    assert sources["cleanup.policy"] == ("delete", ConfigSource.DEFAULT_CONFIG.value)


# kcat ---------------------------------------------------------------------

def test_kcat_lists_brokers_and_topics(shared_gateway):
    create_topic(shared_gateway.bootstrap, "kcat-listed", partitions=2)
    listing = subprocess.run(["kcat", "-b", shared_gateway.bootstrap, "-L", "-t", "kcat-listed"],
                             capture_output=True, text=True, timeout=TIMEOUT_S, check=True).stdout
    assert f"broker 0 at {shared_gateway.bootstrap} (controller)" in listing
    assert 'topic "kcat-listed" with 2 partitions:' in listing
    assert "partition 1, leader 0, replicas: 0, isrs: 0" in listing


def test_acl_apis_say_that_no_authorizer_is_configured(admin, kafka_python_admin):
    """As a Kafka broker without an authorizer: every ACL call fails with SECURITY_DISABLED."""
    from confluent_kafka.admin import AclBinding, AclBindingFilter, AclOperation, AclPermissionType, ResourcePatternType
    from kafka.admin import ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType, ResourcePatternFilter
    from kafka.admin import ResourceType as KafkaPythonResource
    from kafka.errors import SecurityDisabledError

    binding = AclBinding(ResourceType.TOPIC, "acl-topic", ResourcePatternType.LITERAL, "User:alice", "*",
                         AclOperation.READ, AclPermissionType.ALLOW)
    any_binding = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                                   AclOperation.ANY, AclPermissionType.ANY)
    disabled = KafkaError.SECURITY_DISABLED
    described = admin.describe_acls(any_binding)
    # librdkafka 2.16 turns the top-level error of DescribeAcls into an empty list.
    assert outcome(described) == disabled or described.result(TIMEOUT_S) == []
    assert [outcome(f) for f in admin.create_acls([binding]).values()] == [disabled]
    assert [outcome(f) for f in admin.delete_acls([any_binding]).values()] == [disabled]
    every_acl = ACLFilter(principal=None, host=None, operation=ACLOperation.ANY,
                          permission_type=ACLPermissionType.ANY,
                          resource_pattern=ResourcePatternFilter(KafkaPythonResource.ANY, None,
                                                                 ACLResourcePatternType.ANY))
    with pytest.raises(SecurityDisabledError):
        kafka_python_admin.describe_acls(every_acl)


def test_kafka_python_describe_log_dirs(kafka_python_admin, shared_gateway):
    """One log directory, the gateway's data directory; each partition with its bytes."""
    from tests.gateway.clients import Sent, confluent_produce

    create_topic(shared_gateway.bootstrap, "sized", partitions=2)
    confluent_produce(shared_gateway.bootstrap, "sized", [Sent(b"v" * 1000, partition=0) for _ in range(20)])
    (broker,) = kafka_python_admin.describe_log_dirs()
    (directory,) = broker["log_dirs"]
    assert directory["error_code"] == 0 and directory["log_dir"].endswith(shared_gateway.data_dir.name)
    assert directory["total_bytes"] > 0 and directory["usable_bytes"] > 0
    sized = next(t for t in directory["topics"] if t["name"] == "sized")
    sizes = {p["partition_index"]: p["partition_size"] for p in sized["partitions"]}
    assert sizes[1] == 0 and 20 * 1000 < sizes[0] < 20 * 1100


def test_kafka_python_elect_leaders(kafka_python_admin, shared_gateway):
    """The gateway leads every partition already: Kafka's ELECTION_NOT_NEEDED (which
    kafka-python takes as success); an unknown partition is named."""
    create_topic(shared_gateway.bootstrap, "elected", partitions=2)
    response = kafka_python_admin.elect_leaders(0, {"elected": [1, 7]}, raise_errors=False)
    (result,) = response.replica_election_results
    codes = {p.partition_id: p.error_code for p in result.partition_result}
    assert result.topic == "elected" and codes == {1: KafkaError.ELECTION_NOT_NEEDED,
                                                   7: KafkaError.UNKNOWN_TOPIC_OR_PART}
