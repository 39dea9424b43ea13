"""Dynamic broker configs (KIP-226) through the real gateway with unmodified admin clients: the cluster
default (BROKER "") and this broker's own (BROKER "0"), as topics inherit them, as Kafka refuses them,
live and across restarts."""

from __future__ import annotations

from contextlib import closing

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    ResourceType,
)
from kafka.admin import ConfigResource as KafkaPythonResource
from kafka.admin import KafkaAdminClient

from protocol.kafka.apis import by_name
from protocol.kafka.config_values import ConfigOperation
from tests.gateway.admin import create_topic
from tests.gateway.groups import wait_until
from tests.gateway.server import GatewayProcess
from tests.gateway.test_admin_apis import exchange
from tests.gateway.test_cluster import create_topic_through, gateway_cluster

TIMEOUT_S = 30.0
WEEK_MS = str(7 * 24 * 3600 * 1000)
SET, DELETE, APPEND = ConfigOperation.SET, ConfigOperation.DELETE, ConfigOperation.APPEND
BROKER = 4
INCREMENTAL, DESCRIBE = by_name("IncrementalAlterConfigs"), by_name("DescribeConfigs")
OK = (0, None)
INVALID_REQUEST, INVALID_CONFIG = 42, 40
TOPIC = 2


@pytest.fixture
def admin(gateway):
    return AdminClient({"bootstrap.servers": gateway.bootstrap})


def change(gateway, broker: str, *changes, validate_only: bool = False) -> tuple[int, str | None]:
    """IncrementalAlterConfigs v1 of BROKER `broker`, as kafka-configs.sh sends it (neither librdkafka nor
    kafka-python can name the cluster default, ""): the error code and message."""
    Resource = INCREMENTAL.Request.Resources
    asked = INCREMENTAL.Request(validate_only=validate_only, resources=[Resource(
        resource_type=BROKER, resource_name=broker,
        configs=[Resource.Configs(name=name, config_operation=op, value=value) for name, value, op in changes])])
    (answer,) = exchange(gateway, "IncrementalAlterConfigs", 1, asked).responses
    return answer.error_code, answer.error_message


def on_the_wire(gateway, kind: int, name: str) -> dict[str, tuple]:
    """A resource's configs as DescribeConfigs v4 answers (librdkafka keys synonyms by name, so two of
    one name show as one): (value, source, read-only, synonyms) by name."""
    asked = DESCRIBE.Request(resources=[DESCRIBE.Request.Resources(resource_type=kind, resource_name=name)],
                             include_synonyms=True)
    (result,) = exchange(gateway, "DescribeConfigs", 4, asked).results
    return {c.name: (c.value, ConfigSource(c.config_source), c.read_only,
                     [(s.name, s.value, ConfigSource(s.source)) for s in c.synonyms]) for c in result.configs}


def cluster_default(gateway) -> dict[str, tuple]:
    return on_the_wire(gateway, BROKER, "")


def seen(gateway, kind: int, name: str, config: str) -> tuple:
    """(value, source, synonyms) of one config."""
    value, source, _, synonyms = on_the_wire(gateway, kind, name)[config]
    return value, source, synonyms


def confluent_change(admin: AdminClient, *changes) -> None:
    """IncrementalAlterConfigs of this broker (BROKER "0") through confluent-kafka."""
    resource = ConfigResource(ResourceType.BROKER, "0", incremental_configs=[
        ConfigEntry(name, value, incremental_operation=AlterConfigOpType[op.name]) for name, value, op in changes])
    admin.incremental_alter_configs([resource])[resource].result(TIMEOUT_S)


def described(admin, kind: ResourceType, name: str) -> dict:
    resource = ConfigResource(kind, name)
    return admin.describe_configs([resource])[resource].result(TIMEOUT_S)  # librdkafka asks for synonyms




def test_topics_take_the_cluster_default_then_the_broker_own_value(admin, gateway):
    create_topic(gateway.bootstrap, "inherits")
    create_topic(gateway.bootstrap, "overrides", configs={"retention.ms": "1000"})
    assert change(gateway, "", ("log.retention.ms", "3600000", SET)) == OK
    assert seen(gateway, TOPIC, "inherits", "retention.ms") == ("3600000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, [
        ("log.retention.ms", "3600000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        ("log.retention.hours", "168", ConfigSource.DEFAULT_CONFIG)])
    assert described(admin, ResourceType.TOPIC, "overrides")["retention.ms"].value == "1000"
    assert cluster_default(gateway) == {"log.retention.ms": (
        "3600000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, False,
        [("log.retention.ms", "3600000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)])}

    confluent_change(admin, ("log.retention.ms", "7200000", SET))
    assert seen(gateway, TOPIC, "inherits", "retention.ms") == (
        "7200000", ConfigSource.DYNAMIC_BROKER_CONFIG, [
            ("log.retention.ms", "7200000", ConfigSource.DYNAMIC_BROKER_CONFIG),
            ("log.retention.ms", "3600000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
            ("log.retention.hours", "168", ConfigSource.DEFAULT_CONFIG)])
    broker = described(admin, ResourceType.BROKER, "0")
    assert seen(gateway, BROKER, "0", "log.retention.ms") == ("7200000", ConfigSource.DYNAMIC_BROKER_CONFIG, [
        ("log.retention.ms", "7200000", ConfigSource.DYNAMIC_BROKER_CONFIG),
        ("log.retention.ms", "3600000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)])
    assert (broker["log.retention.ms"].is_read_only, broker["num.partitions"].is_read_only) == (False, True)

    confluent_change(admin, ("log.retention.ms", None, DELETE))
    assert described(admin, ResourceType.TOPIC, "inherits")["retention.ms"].value == "3600000"
    assert change(gateway, "", ("log.retention.ms", None, DELETE), ("log.retention.bytes", None, DELETE)) == OK
    assert seen(gateway, TOPIC, "inherits", "retention.ms") == (
        WEEK_MS, ConfigSource.DEFAULT_CONFIG, [("log.retention.hours", "168", ConfigSource.DEFAULT_CONFIG)])
    assert cluster_default(gateway) == {}


def test_changes_kafka_refuses_are_refused_with_its_words(gateway):
    def refused(broker: str, *changes) -> str | None:
        code, message = change(gateway, broker, *changes)
        assert code == INVALID_REQUEST, message
        return message

    assert refused("0", ("num.partitions", "4", SET), ("log.retention.hours", "1", SET)) == (
        "Cannot update these configs dynamically: Set(num.partitions, log.retention.hours)")
    assert refused("", ("listeners", "PLAINTEXT://:9093", SET)) == (
        "Cannot update these configs at default cluster level, broker id must be specified: Set(listeners)")
    assert refused("0", ("advertised.listeners", "PLAINTEXT://elsewhere:9092", SET)) == (
        "Cannot update these configs dynamically: Set(advertised.listeners)")  # no longer dynamic in Kafka 4
    # Kafka's, but read only at start-up here
    assert refused("0", ("sasl.enabled.mechanisms", "PLAIN", SET)) == (
        "Cannot update these configs dynamically: Set(sasl.enabled.mechanisms)")
    assert refused("", ("log.cleaner.backoff.ms", "5", SET)) == (
        "Cannot update these configs dynamically: Set(log.cleaner.backoff.ms)")
    assert refused("", ("ssl.keystore.location", "/tmp/k", SET)) == (
        "These security configs can be dynamically updated only per-listener using the listener "
        "prefix: Set(ssl.keystore.location)")
    assert refused("", ("log.retention.ms", "soon", SET)) == (
        "Invalid value soon for configuration log.retention.ms: Not a number of type LONG")
    assert refused("", ("min.insync.replicas", "0", SET)) == (
        "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1")
    assert refused("1", ("log.retention.ms", "1", SET)) == "Unexpected broker id, expected 0, but received 1"
    # the connection limits, as Kafka reads them into a new config, then as its listeners' quotas take them
    overrides = "max.connections.per.ip.overrides"
    assert refused("", (overrides, "127.0.0.1", SET)) == (
        f"Error parsing configuration property '{overrides}': begin 0, end -1, length 9")
    assert refused("", (overrides, "a:1, b:many", SET)) == 'For input string: "many"'
    assert refused("0", (overrides, "a:1,no host:2", SET)) == f"{overrides} contains invalid addresses : no host"
    assert refused("", ("max.connections.per.ip", "0", SET)) == (
        f"requirement failed: max.connections.per.ip can be set to zero only if {overrides} property is set.")
    assert change(gateway, "", ("max.connections.per.ip", "0", SET), (overrides, "127.0.0.1:100", SET),
                  validate_only=True) == OK
    assert refused("0", ("max.connections", "0", SET)) == "Invalid dynamic configuration"
    assert refused("0", ("max.connection.creation.rate", "0", SET)) == "Invalid dynamic configuration"
    assert refused("0", ("max.connections", "-1", SET)) == (
        "Invalid value -1 for configuration max.connections: Value must be at least 0")
    assert change(gateway, "", ("min.insync.replicas", "2", APPEND)) == (
        INVALID_CONFIG, "Config value append is not allowed for config key: min.insync.replicas")
    assert change(gateway, "", ("log.retention.ms", "1", SET), validate_only=True) == OK
    assert change(gateway, "", ("log.cleaner.delete.retention.ms", None, DELETE)) == OK  # absent: nothing to do
    assert cluster_default(gateway) == {}


def test_lists_append_to_the_default_and_legacy_alter_replaces_the_whole_set(admin, gateway):
    create_topic(gateway.bootstrap, "cleaned")
    assert change(gateway, "", ("log.cleanup.policy", "compact", APPEND)) == OK
    assert described(admin, ResourceType.TOPIC, "cleaned")["cleanup.policy"].value == "delete,compact"
    with closing(KafkaAdminClient(bootstrap_servers=gateway.bootstrap)) as kafka_python:
        for replaced in ({"compression.type": "gzip", "log.retention.bytes": "4096"}, {"message.max.bytes": "2048"}):
            legacy = ConfigResource(ResourceType.BROKER, "0", set_config=replaced)
            admin.alter_configs([legacy])[legacy].result(TIMEOUT_S)
        broker = kafka_python.describe_configs([KafkaPythonResource("BROKER", "0")])["broker"]["0"]
        assert {name: config["value"] for name, config in broker.items()
                if config["config_source"] == "DYNAMIC_BROKER_CONFIG"} == {"message.max.bytes": "2048"}
        resource = KafkaPythonResource("BROKER", "0", {"log.retention.bytes": "8192"})  # its read, modify, write
        assert kafka_python.alter_configs([resource], incremental=False) == {"broker": {"0": "OK"}}
    topic = described(admin, ResourceType.TOPIC, "cleaned")
    assert {name: topic[name].value for name in ("cleanup.policy", "compression.type", "max.message.bytes")} == {
        "cleanup.policy": "delete,compact", "compression.type": "producer", "max.message.bytes": "2048"}
    assert topic["retention.bytes"].value == "8192"


def produce_error(bootstrap: str, topic: str, size: int) -> KafkaError | None:
    errors = []
    producer = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": 10000})
    producer.produce(topic, b"x" * size, on_delivery=lambda error, message: errors.append(error))
    producer.flush(TIMEOUT_S)
    return errors[0]


def test_message_max_bytes_applies_live_to_topics_without_their_own(gateway):
    create_topic(gateway.bootstrap, "bounded")
    assert produce_error(gateway.bootstrap, "bounded", 5000) is None
    assert change(gateway, "", ("message.max.bytes", "1000", SET)) == OK
    assert produce_error(gateway.bootstrap, "bounded", 5000).code() == KafkaError.MSG_SIZE_TOO_LARGE
    assert change(gateway, "", ("message.max.bytes", None, DELETE)) == OK
    assert produce_error(gateway.bootstrap, "bounded", 5000) is None


def test_dynamic_configs_outlive_a_restart(tmp_path):
    server = GatewayProcess(tmp_path / "gateway", "--log-retention-hours", "24").start()
    try:
        create_topic(server.bootstrap, "kept")
        assert change(server, "", ("log.retention.ms", "60000", SET), ("compression.type", "lz4", SET)) == OK
        with closing(KafkaAdminClient(bootstrap_servers=server.bootstrap)) as client:
            resource = KafkaPythonResource("BROKER", "0", {"compression.type": ("SET", "zstd")})
            assert client.alter_configs([resource], incremental=True) == {"broker": {"0": "OK"}}
        server.stop()
        server.start()
        admin = AdminClient({"bootstrap.servers": server.bootstrap})
        topic = described(admin, ResourceType.TOPIC, "kept")
        assert seen(server, TOPIC, "kept", "retention.ms") == ("60000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, [
            ("log.retention.ms", "60000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
            ("log.retention.hours", "24", ConfigSource.STATIC_BROKER_CONFIG),
            ("log.retention.hours", "168", ConfigSource.DEFAULT_CONFIG)])
        assert topic["compression.type"].value == "zstd"
        confluent_change(admin, ("compression.type", None, DELETE))
        assert described(admin, ResourceType.TOPIC, "kept")["compression.type"].value == "lz4"
    finally:
        server.stop()


def test_a_cluster_takes_the_default_everywhere_and_each_gateway_its_own(tmp_path):
    """Changes sent to a gateway that is not the controller are forwarded to it; every gateway applies
    the cluster default, only gateway 2 its own value."""
    with gateway_cluster(tmp_path, 2) as (first, second):
        create_topic_through(first, "everywhere")
        assert change(second, "", ("log.retention.ms", "3600000", SET)) == OK
        assert change(second, "2", ("log.retention.ms", "60000", SET)) == OK
        assert change(first, "2", ("log.retention.ms", "1", SET))[0] == INVALID_REQUEST  # gateway 2's, not 1's
        wait_until(lambda: seen(first, TOPIC, "everywhere", "retention.ms")[:2] == (
            "3600000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG), 10, "the controller applies the default")
        assert seen(second, TOPIC, "everywhere", "retention.ms")[:2] == ("60000", ConfigSource.DYNAMIC_BROKER_CONFIG)
        assert list(cluster_default(first)) == ["log.retention.ms"]


KERBEROS = "sasl.kerberos.min.time.before.relogin"


def test_kafka_dynamic_configs_without_a_setting_here_are_inert_and_described_as_kafka_does(admin, gateway):
    """librdkafka's test 0081 sets sasl.kerberos.min.time.before.relogin on its broker; Kafka stores it,
    and so does the gateway, for nothing (no Kerberos here), with Kafka's checks and descriptions."""
    assert seen(gateway, BROKER, "0", KERBEROS) == ("60000", ConfigSource.DEFAULT_CONFIG, [
        (KERBEROS, "60000", ConfigSource.DEFAULT_CONFIG)])
    assert on_the_wire(gateway, BROKER, "0")["num.io.threads"][:3] == ("8", ConfigSource.DEFAULT_CONFIG, False)
    assert "leader.replication.throttled.rate" not in on_the_wire(gateway, BROKER, "0")  # no KafkaConfig entry

    confluent_change(admin, (KERBEROS, "58000", SET))
    legacy = ConfigResource(ResourceType.BROKER, "0", set_config={KERBEROS: "58000", "num.io.threads": "12"})
    admin.alter_configs([legacy])[legacy].result(TIMEOUT_S)
    broker = described(admin, ResourceType.BROKER, "0")
    assert (broker[KERBEROS].value, broker[KERBEROS].source, broker[KERBEROS].is_read_only) == (
        "58000", ConfigSource.DYNAMIC_BROKER_CONFIG.value, False)
    assert seen(gateway, BROKER, "0", "num.io.threads") == ("12", ConfigSource.DYNAMIC_BROKER_CONFIG, [
        ("num.io.threads", "12", ConfigSource.DYNAMIC_BROKER_CONFIG),
        ("num.io.threads", "8", ConfigSource.DEFAULT_CONFIG)])

    def refused(broker: str, *changes) -> str | None:
        code, message = change(gateway, broker, *changes)
        assert code == INVALID_REQUEST, message
        return message

    # a thread pool grows to double and shrinks to half the count in effect, as Kafka's resize
    assert refused("0", ("num.io.threads", "25", SET)) == "Invalid dynamic configuration"
    assert refused("", ("background.threads", "4", SET)) == "Invalid dynamic configuration"
    assert refused("0", ("num.io.threads", "0", SET)) == (
        "Invalid value 0 for configuration num.io.threads: Value must be at least 1")
    assert refused("0", (KERBEROS, "soon", SET)) == (
        f"Invalid value soon for configuration {KERBEROS}: Not a number of type LONG")
    assert refused("", (KERBEROS, "1000", SET)) == (
        f"Cannot update these configs at default cluster level, broker id must be specified: Set({KERBEROS})")
    assert refused("", ("log.cleaner.enable", "false", SET)) == (
        "Cannot update these configs dynamically: Set(log.cleaner.enable)")
    assert change(gateway, "0", ("num.io.threads", "24", SET)) == OK
    assert refused("0", ("num.io.threads", None, DELETE)) == "Invalid dynamic configuration"  # 8 is below half
    assert change(gateway, "0", ("num.io.threads", "16", SET)) == OK

    # a name Kafka does not know is stored as given and described as Kafka describes what it cannot type
    custom = "custom.config.of.a.plugin"
    assert change(gateway, "", (custom, "anything", SET), ("leader.replication.throttled.rate", "1024", SET)) == OK
    assert cluster_default(gateway) == {
        custom: (None, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, True,
                 [(custom, None, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)]),
        "leader.replication.throttled.rate": ("1024", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, True,
                                              [("leader.replication.throttled.rate", "1024",
                                                ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)])}
    broker = on_the_wire(gateway, BROKER, "0")
    assert broker[custom] == (None, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, True,
                              [(custom, None, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)])
    assert broker["leader.replication.throttled.rate"][:2] == ("1024", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
    described_custom = described(admin, ResourceType.BROKER, "0")[custom]
    assert (described_custom.value, described_custom.is_sensitive) == (None, True)

    confluent_change(admin, (KERBEROS, None, DELETE), ("num.io.threads", None, DELETE))
    assert change(gateway, "", (custom, None, DELETE), ("leader.replication.throttled.rate", None, DELETE)) == OK
    assert seen(gateway, BROKER, "0", KERBEROS)[:2] == ("60000", ConfigSource.DEFAULT_CONFIG)
    assert cluster_default(gateway) == {}
