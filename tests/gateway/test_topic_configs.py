"""Every topic config of Kafka 4, driven by real admin clients against the real gateway.

Configs the gateway honours keep only the values it honours; the others are
inert: accepted with Kafka's type, range and default, reported and changed
like any other. One gateway serves the module; each test has its own topics.
"""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
    ResourceType,
)

from gateway.topics.topic_configs import TOPIC_CONFIGS
from protocol.kafka.apis import by_name
from protocol.kafka.config_values import ConfigType
from tests.gateway.admin import create_topic
from tests.gateway.test_admin_apis import exchange

TIMEOUT_S = 30.0
THROTTLED = "leader.replication.throttled.replicas"
KAFKA_4_TOPIC_CONFIGS = {
    "cleanup.policy", "compression.type", "compression.gzip.level", "compression.lz4.level",
    "compression.zstd.level", "delete.retention.ms", "file.delete.delay.ms", "flush.messages", "flush.ms",
    "follower.replication.throttled.replicas", "index.interval.bytes", THROTTLED, "local.retention.bytes",
    "local.retention.ms", "max.compaction.lag.ms", "max.message.bytes", "message.downconversion.enable",
    "message.timestamp.after.max.ms", "message.timestamp.before.max.ms", "message.timestamp.type",
    "min.cleanable.dirty.ratio", "min.compaction.lag.ms", "min.insync.replicas", "preallocate",
    "remote.log.copy.disable", "remote.log.delete.on.disable", "remote.storage.enable", "retention.bytes",
    "retention.ms", "segment.bytes", "segment.index.bytes", "segment.jitter.ms", "segment.ms",
    "unclean.leader.election.enable",
}


@pytest.fixture(scope="module")
def admin(shared_gateway):
    return AdminClient({"bootstrap.servers": shared_gateway.bootstrap})


def described(admin, name: str) -> dict:
    resource = ConfigResource(ResourceType.TOPIC, name)
    return admin.describe_configs([resource])[resource].result(TIMEOUT_S)  # librdkafka asks for synonyms


def refusal(future) -> tuple[int, str] | None:
    """None on success, else the error code and message the broker answered."""
    try:
        future.result(TIMEOUT_S)
    except KafkaException as exc:
        return exc.args[0].code(), exc.args[0].str()
    return None


def incremental(admin, name: str, *changes: tuple[str, str | None, AlterConfigOpType]):
    resource = ConfigResource(ResourceType.TOPIC, name, incremental_configs=[
        ConfigEntry(key, value, incremental_operation=op) for key, value, op in changes])
    return refusal(admin.incremental_alter_configs([resource])[resource])


def test_every_kafka_4_topic_config_is_known_and_inert_ones_say_so():
    assert set(TOPIC_CONFIGS) == KAFKA_4_TOPIC_CONFIGS | {"message.timestamp.difference.max.ms"}  # Kafka 3's too
    assert "has no effect here because" in TOPIC_CONFIGS["segment.index.bytes"].doc
    for honoured in ("retention.ms", "segment.bytes", "segment.ms", "delete.retention.ms", "min.compaction.lag.ms",
                     "max.compaction.lag.ms", "min.cleanable.dirty.ratio"):
        assert "no effect" not in TOPIC_CONFIGS[honoured].doc


def test_inert_configs_are_created_and_described(admin, shared_gateway):
    create_topic(shared_gateway.bootstrap, "tc-inert", configs={
        "segment.bytes": "1048576", "flush.ms": "1000", "min.cleanable.dirty.ratio": "0.25",
        "preallocate": "TRUE", THROTTLED: "0:0, 1:0", "remote.storage.enable": "false"})
    configs = described(admin, "tc-inert")
    assert KAFKA_4_TOPIC_CONFIGS <= set(configs)
    own = {name: configs[name].value for name in (
        "segment.bytes", "flush.ms", "min.cleanable.dirty.ratio", "preallocate", THROTTLED)}
    assert own == {"segment.bytes": "1048576", "flush.ms": "1000", "min.cleanable.dirty.ratio": "0.25",
                   "preallocate": "true", THROTTLED: "0:0,1:0"}
    assert configs["segment.bytes"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert [(s.name, s.value) for s in configs["segment.bytes"].synonyms.values()] == [
        ("segment.bytes", "1048576"), ("log.segment.bytes", "1073741824")]

    segment_ms = configs["segment.ms"]  # log.roll.ms is unset, so log.roll.hours says
    assert (segment_ms.value, segment_ms.source) == (str(7 * 24 * 3600 * 1000), ConfigSource.DEFAULT_CONFIG.value)
    assert [(s.name, s.value) for s in segment_ms.synonyms.values()] == [("log.roll.hours", "168")]
    defaults = {name: configs[name].value for name in (
        "delete.retention.ms", "file.delete.delay.ms", "index.interval.bytes", "segment.index.bytes",
        "message.timestamp.after.max.ms", "local.retention.ms", "unclean.leader.election.enable",
        "follower.replication.throttled.replicas", "remote.log.copy.disable", "flush.messages")}
    assert defaults == {"delete.retention.ms": "86400000", "file.delete.delay.ms": "60000",
                        "index.interval.bytes": "4096", "segment.index.bytes": "10485760",
                        "message.timestamp.after.max.ms": "3600000", "local.retention.ms": "-2",
                        "unclean.leader.election.enable": "false",
                        "follower.replication.throttled.replicas": "", "remote.log.copy.disable": "false",
                        "flush.messages": str(2**63 - 1)}
    no_broker_setting = configs["follower.replication.throttled.replicas"]
    assert (no_broker_setting.source, no_broker_setting.is_default) == (ConfigSource.DEFAULT_CONFIG.value, True)


def test_list_configs_take_append_subtract_and_delete(admin, shared_gateway):
    create_topic(shared_gateway.bootstrap, "tc-lists")
    assert incremental(admin, "tc-lists", (THROTTLED, "0:1,2:1", AlterConfigOpType.APPEND)) is None
    assert incremental(admin, "tc-lists", (THROTTLED, "0:1,3:1", AlterConfigOpType.APPEND),
                       ("flush.messages", "10", AlterConfigOpType.SET)) is None
    configs = described(admin, "tc-lists")
    assert (configs[THROTTLED].value, configs["flush.messages"].value) == ("0:1,2:1,3:1", "10")
    assert incremental(admin, "tc-lists", (THROTTLED, "2:1", AlterConfigOpType.SUBTRACT),
                       ("flush.messages", None, AlterConfigOpType.DELETE)) is None
    configs = described(admin, "tc-lists")
    assert configs[THROTTLED].value == "0:1,3:1"
    assert (configs["flush.messages"].value, configs["flush.messages"].source) == (
        str(2**63 - 1), ConfigSource.DEFAULT_CONFIG.value)
    assert incremental(admin, "tc-lists", (THROTTLED, None, AlterConfigOpType.DELETE)) is None
    assert described(admin, "tc-lists")[THROTTLED].value == ""
    assert incremental(admin, "tc-lists", ("cleanup.policy", "delete", AlterConfigOpType.APPEND)) is None
    assert incremental(admin, "tc-lists", ("cleanup.policy", "compact", AlterConfigOpType.APPEND)) is None
    assert described(admin, "tc-lists")["cleanup.policy"].value == "delete,compact"
    code, _ = incremental(admin, "tc-lists", ("cleanup.policy", "shred", AlterConfigOpType.APPEND))
    assert code == KafkaError.INVALID_CONFIG
    assert incremental(admin, "tc-lists", ("cleanup.policy", "delete", AlterConfigOpType.SUBTRACT)) is None
    assert described(admin, "tc-lists")["cleanup.policy"].value == "compact"
    code, _ = incremental(admin, "tc-lists", ("preallocate", "true", AlterConfigOpType.APPEND))
    assert code == KafkaError.INVALID_CONFIG  # not a list


def test_subtracting_the_last_cleanup_policy_leaves_it_empty(admin, shared_gateway):
    """Kafka's ValidList takes an empty list: a topic neither deleted nor compacted keeps its batches."""
    create_topic(shared_gateway.bootstrap, "tc-no-cleanup")
    assert incremental(admin, "tc-no-cleanup", ("cleanup.policy", "delete", AlterConfigOpType.SUBTRACT)) is None
    configs = described(admin, "tc-no-cleanup")
    assert (configs["cleanup.policy"].value, configs["cleanup.policy"].source) == (
        "", ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
    assert incremental(admin, "tc-no-cleanup", ("cleanup.policy", "", AlterConfigOpType.SET)) is None


REPLICAS = "must be the literal '*' or a list of replicas in the following format: " \
           "[partitionId]:[brokerId],[partitionId]:[brokerId],..."
INVALID = [  # Kafka's ConfigDef words, the value as Kafka's message shows it
    ("segment.ms", "0", "Invalid value 0 for configuration segment.ms: Value must be at least 1"),
    ("segment.bytes", "1000", "Invalid value 1000 for configuration segment.bytes: Value must be at least 1048576"),
    ("min.cleanable.dirty.ratio", "1.5",
     "Invalid value 1.5 for configuration min.cleanable.dirty.ratio: Value must be no more than 1"),
    ("min.cleanable.dirty.ratio", "half",
     "Invalid value half for configuration min.cleanable.dirty.ratio: Not a number of type DOUBLE"),
    ("preallocate", "yes", "Invalid value yes for configuration preallocate: Expected value to be either true or false"),
    ("local.retention.ms", "-3", "Invalid value -3 for configuration local.retention.ms: Value must be at least -2"),
    (THROTTLED, "0-1", f"Invalid value [0-1] for configuration {THROTTLED}: {THROTTLED} {REPLICAS}"),
    (THROTTLED, "*,0:1", f"Invalid value [*, 0:1] for configuration {THROTTLED}: {THROTTLED} {REPLICAS}"),
    ("max.compaction.lag.ms", "0", "Invalid value 0 for configuration max.compaction.lag.ms: Value must be at least 1"),
    ("cleanup.policy", "shred",
     "Invalid value shred for configuration cleanup.policy: String must be one of: compact, delete"),
    ("segment.index.bytes", "2147483648",
     "Invalid value 2147483648 for configuration segment.index.bytes: Not a number of type INT"),
    ("retention.ms", "+-5", "Invalid value +-5 for configuration retention.ms: Not a number of type LONG"),
    ("compression.gzip.level", "0",
     "Invalid value 0 for configuration compression.gzip.level: Value must be between 1 and 9 or equal to -1"),
    ("compression.zstd.level", "23", "Invalid value 23 for configuration compression.zstd.level: "
                                     "Value must be no more than 22"),
    ("compression.type", "brotli", "Invalid value brotli for configuration compression.type: "
                                   "String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer"),
    ("message.timestamp.type", "createtime", "Invalid value createtime for configuration message.timestamp.type: "
                                             "String must be one of: CreateTime, LogAppendTime"),
]


@pytest.mark.parametrize(("number", "name", "value", "message"), [(n, *case) for n, case in enumerate(INVALID)])
def test_invalid_values_get_invalid_config_in_kafkas_words(admin, shared_gateway, number, name, value, message):
    topic = f"tc-invalid-{number}"
    created = admin.create_topics([NewTopic(topic, 1, 1, config={name: value})], operation_timeout=TIMEOUT_S)
    assert refusal(created[topic]) == (KafkaError.INVALID_CONFIG, message)
    create_topic(shared_gateway.bootstrap, topic)
    assert incremental(admin, topic, (name, value, AlterConfigOpType.SET)) == (KafkaError.INVALID_CONFIG, message)


def test_kafka_python_gets_kafkas_words_for_an_invalid_value(shared_gateway):
    from kafka.admin import KafkaAdminClient
    from kafka.admin import NewTopic as KafkaPythonTopic
    from kafka.errors import InvalidConfigurationError

    client = KafkaAdminClient(bootstrap_servers=shared_gateway.bootstrap)
    try:
        with pytest.raises(InvalidConfigurationError, match="Invalid value 0 for configuration segment.ms: "
                                                            "Value must be at least 1"):
            client.create_topics([KafkaPythonTopic("tc-kp-invalid", 1, 1, topic_configs={"segment.ms": "0"})])
    finally:
        client.close()


def test_unknown_config_name(admin, shared_gateway):
    create_topic(shared_gateway.bootstrap, "tc-unknown")
    assert incremental(admin, "tc-unknown", ("no.such.config", "1", AlterConfigOpType.SET)) == (
        KafkaError.INVALID_CONFIG, "Unknown topic config name: no.such.config")


def test_kafka_python_alters_and_describes_inert_configs(shared_gateway):
    from kafka.admin import ConfigResource as KafkaPythonResource
    from kafka.admin import KafkaAdminClient

    client = KafkaAdminClient(bootstrap_servers=shared_gateway.bootstrap)
    try:
        client.create_topics({"tc-kafka-python": {"configs": {"segment.jitter.ms": "5"}}})
        client.alter_configs([KafkaPythonResource("topic", "tc-kafka-python", configs={
            "follower.replication.throttled.replicas": ("APPEND", "*"),
            "message.timestamp.before.max.ms": ("SET", "60000"),
            "segment.jitter.ms": ("DELETE", None)})])
        described = client.describe_configs([KafkaPythonResource("topic", "tc-kafka-python")],
                                            include_synonyms=True)
        modified = described["topic"]["tc-kafka-python"]
        assert {name: entry["value"] for name, entry in modified.items()} == {
            "follower.replication.throttled.replicas": "*", "message.timestamp.before.max.ms": "60000"}
    finally:
        client.close()


def test_documentation_and_types_on_the_wire(shared_gateway):
    create_topic(shared_gateway.bootstrap, "tc-wire")
    describe = by_name("DescribeConfigs")
    asked = describe.Request(resources=[describe.Request.Resources(
        resource_type=2, resource_name="tc-wire", configuration_keys=["preallocate", "min.cleanable.dirty.ratio",
                                                                     THROTTLED])],
        include_synonyms=False, include_documentation=True)
    (result,) = exchange(shared_gateway, "DescribeConfigs", 4, asked).results
    configs = {c.name: c for c in result.configs}
    assert {name: (c.value, ConfigType(c.config_type).name) for name, c in configs.items()} == {
        "preallocate": ("false", "BOOLEAN"), "min.cleanable.dirty.ratio": ("0.5", "DOUBLE"), THROTTLED: ("", "LIST")}
    assert all("has no effect here because" in configs[name].documentation for name in ("preallocate", THROTTLED))
    assert configs["min.cleanable.dirty.ratio"].documentation == TOPIC_CONFIGS["min.cleanable.dirty.ratio"].doc
