"""Group configs (GROUP config resources, type 32) and ListConfigResources (API 74), driven by
confluent-kafka's and kafka-python's admin clients against the real gateway.

A group's consumer.session.timeout.ms and consumer.heartbeat.interval.ms are
described, changed and refused as Kafka 4.0 does, take effect on the group's
consumer-protocol members at once, and outlive both the group and a restart
of the gateway.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import KafkaError
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    ResourceType,
)

from protocol.kafka.apis import by_name
from protocol.kafka.error_codes import ErrorCode
from tests.gateway.groups import create_topic, wait_until
from tests.gateway.server import GatewayProcess
from tests.gateway.test_admin_apis import exchange
from tests.gateway.test_consumer_protocol import heartbeat
from tests.gateway.test_topic_configs import refusal

TIMEOUT_S = 30.0
SESSION, INTERVAL = "consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"
DESCRIBE, INCREMENTAL, LIST = by_name("DescribeConfigs"), by_name("IncrementalAlterConfigs"), by_name("ListConfigResources")
GROUP_TYPE = 32


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    """Kafka's defaults and bounds but lower minimums, so a group may ask for seconds-long sessions."""
    server = GatewayProcess(tmp_path_factory.mktemp("group-configs"),
                            "--group-consumer-min-session-timeout-ms", "2000",
                            "--group-consumer-min-heartbeat-interval-ms", "100").start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def admin(gateway):
    return AdminClient({"bootstrap.servers": gateway.bootstrap})


def described(admin, group: str) -> dict:
    resource = ConfigResource(ResourceType.GROUP, group)
    return admin.describe_configs([resource])[resource].result(TIMEOUT_S)


def changed(admin, group: str, *ops: tuple[str, str | None, AlterConfigOpType]):
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry(name, value, incremental_operation=op) for name, value, op in ops])
    return admin.incremental_alter_configs([resource])[resource]


def values(admin, group: str) -> dict[str, tuple[str, ConfigSource]]:
    return {name: (entry.value, ConfigSource(entry.source)) for name, entry in described(admin, group).items()}


def set_op(name: str, value: str) -> tuple[str, str, AlterConfigOpType]:
    return name, value, AlterConfigOpType.SET


def test_a_group_without_configs_has_the_brokers(admin):
    """Even a group that does not exist: Kafka keeps group configs apart from groups."""
    entries = described(admin, "never-made")
    assert list(entries) == [SESSION, INTERVAL]
    for name, value in ((SESSION, "45000"), (INTERVAL, "5000")):
        entry = entries[name]
        assert (entry.value, ConfigSource(entry.source), entry.is_read_only, entry.is_sensitive) == (
            value, ConfigSource.DEFAULT_CONFIG, False, False)
        assert [(s.name, s.value, ConfigSource(s.source)) for s in entry.synonyms.values()] == [
            (name, value, ConfigSource.DEFAULT_CONFIG)]


def test_set_then_delete(admin):
    assert refusal(changed(admin, "tuned", set_op(SESSION, "50000"))) is None
    assert values(admin, "tuned") == {SESSION: ("50000", ConfigSource.GROUP_CONFIG),
                                      INTERVAL: ("5000", ConfigSource.DEFAULT_CONFIG)}
    assert refusal(changed(admin, "tuned", (SESSION, None, AlterConfigOpType.DELETE))) is None
    assert values(admin, "tuned")[SESSION] == ("45000", ConfigSource.DEFAULT_CONFIG)


@pytest.mark.parametrize("ops,message", [
    ([set_op(SESSION, "1000")], f"{SESSION} must be greater than or equal to group.consumer.min.session.timeout.ms"),
    ([set_op(SESSION, "70000")], f"{SESSION} must be less than or equal to group.consumer.max.session.timeout.ms"),
    ([set_op(INTERVAL, "99")], f"{INTERVAL} must be greater than or equal to group.consumer.min.heartbeat.interval.ms"),
    ([set_op(INTERVAL, "20000")], f"{INTERVAL} must be less than or equal to group.consumer.max.heartbeat.interval.ms"),
    ([set_op(SESSION, "3000")], f"{SESSION} must be greater than {INTERVAL}"),  # the broker's interval: 5000
    ([set_op(SESSION, "3000"), set_op(INTERVAL, "3000")], f"{SESSION} must be greater than {INTERVAL}"),
    ([set_op(SESSION, "soon")], f"Invalid value soon for configuration {SESSION}: Not a number of type INT"),
    ([set_op(SESSION, "0")], f"Invalid value 0 for configuration {SESSION}: Value must be at least 1"),
    ([set_op("share.session.timeout.ms", "50000")], "Unknown group config name: share.session.timeout.ms"),
    ([(SESSION, "50000", AlterConfigOpType.APPEND)], f"Can't APPEND to key {SESSION} because its type is not LIST."),
], ids=["below-min", "above-max", "interval-below-min", "interval-above-max", "not-above-the-brokers-interval",
        "not-above-its-interval", "not-a-number", "zero", "share-config", "append"])
def test_kafkas_refusals(admin, ops, message):
    assert refusal(changed(admin, "refused", *ops)) == (KafkaError.INVALID_CONFIG, message)
    assert values(admin, "refused")[SESSION] == ("45000", ConfigSource.DEFAULT_CONFIG), "nothing was kept"


def test_the_legacy_api_replaces_every_config(admin):
    assert refusal(changed(admin, "legacy", set_op(SESSION, "50000"), set_op(INTERVAL, "6000"))) is None
    resource = ConfigResource(ResourceType.GROUP, "legacy", set_config={INTERVAL: "7000"})
    assert refusal(admin.alter_configs([resource])[resource]) is None
    assert values(admin, "legacy") == {SESSION: ("45000", ConfigSource.DEFAULT_CONFIG),
                                       INTERVAL: ("7000", ConfigSource.GROUP_CONFIG)}


def test_a_group_resource_needs_a_name(gateway):
    asked = DESCRIBE.Request(resources=[DESCRIBE.Request.Resources(resource_type=GROUP_TYPE, resource_name="",
                                                                   configuration_keys=None)])
    (result,) = exchange(gateway, "DescribeConfigs", 4, asked).results
    assert (result.error_code, result.error_message) == (ErrorCode.INVALID_REQUEST, "Group name must not be empty")
    Resource = INCREMENTAL.Request.Resources
    change = INCREMENTAL.Request(resources=[Resource(resource_type=GROUP_TYPE, resource_name="", configs=[
        Resource.Configs(name=SESSION, config_operation=0, value="50000")])])
    (response,) = exchange(gateway, "IncrementalAlterConfigs", 1, change).responses
    assert (response.error_code, response.error_message) == (
        ErrorCode.INVALID_REQUEST, "Default group resources are not allowed.")


def test_list_config_resources(gateway, admin):
    from kafka import KafkaAdminClient

    create_topic(gateway.bootstrap, "listed-topic", 1)
    assert refusal(changed(admin, "listed-group", set_op(INTERVAL, "6000"))) is None
    client = KafkaAdminClient(bootstrap_servers=gateway.bootstrap)
    try:
        listed = client.list_config_resources()
        assert "listed-group" in listed["group"] and "listed-topic" in listed["topic"]
        assert listed["broker"] == listed["broker_logger"] == ["0"]
        assert set(client.list_config_resources(["GROUP"])) == {"group"}
    finally:
        client.close()
    # v0 (Kafka 4.0's ListClientMetricsResources) lists client-metrics subscriptions: the gateway has none.
    assert exchange(gateway, "ListConfigResources", 0, LIST.Request()) == LIST.Response()
    unknown = exchange(gateway, "ListConfigResources", 1, LIST.Request(resource_types=[GROUP_TYPE, 64]))
    assert (unknown.error_code, unknown.config_resources) == (ErrorCode.UNSUPPORTED_VERSION, [])


def joined(gateway, group: str, member: str):
    return heartbeat(gateway, 1, group_id=group, member_id=member, member_epoch=0, rebalance_timeout_ms=30000,
                     subscribed_topic_names=["live-topic"], topic_partitions=[])


def members(admin, group: str) -> list[str]:
    return [m.member_id for m in admin.describe_consumer_groups([group])[group].result(TIMEOUT_S).members]


def test_members_follow_their_groups_config(gateway, admin):
    """A silent member of the group with a 3 s session is fenced then, one of a group on the
    broker's 45 s stays; the heartbeat interval each is told is its group's."""
    create_topic(gateway.bootstrap, "live-topic", 1)
    assert refusal(changed(admin, "short", set_op(SESSION, "3000"), set_op(INTERVAL, "200"))) is None
    short, default = joined(gateway, "short", "m-short"), joined(gateway, "default", "m-default")
    assert (short.error_code, short.heartbeat_interval_ms) == (ErrorCode.NONE, 200)
    assert (default.error_code, default.heartbeat_interval_ms) == (ErrorCode.NONE, 5000)
    silent_since = time.monotonic()
    fenced_after = silent_since + wait_until(lambda: members(admin, "short") == [], 15, "the short session's end")
    assert fenced_after - silent_since >= 2.5
    assert members(admin, "default") == ["m-default"]


def test_configs_outlive_the_group_and_a_restart(gateway, admin):
    """Last in the module: it restarts the module's gateway."""
    assert refusal(changed(admin, "kept", set_op(SESSION, "55000"))) is None
    assert joined(gateway, "kept", "m-kept").error_code == ErrorCode.NONE
    left = heartbeat(gateway, 1, group_id="kept", member_id="m-kept", member_epoch=-1)
    assert left.error_code == ErrorCode.NONE
    deleted = admin.delete_consumer_groups(["kept"])["kept"]
    assert refusal(deleted) is None, "the empty group is deleted"

    gateway.kill()
    gateway.start()

    assert values(admin, "kept")[SESSION] == ("55000", ConfigSource.GROUP_CONFIG)
    assert joined(gateway, "kept", "m-again").heartbeat_interval_ms == 5000
