"""The BROKER_LOGGER resource through the real gateway: every logger described with its level, levels
changed live with kafka-python's admin client (kafka-configs.sh --entity-type broker-loggers sends the same
IncrementalAlterConfigs), what the gateway logs changing with them, Kafka 4.0's refusals in its words, and
nothing kept across a restart. confluent-kafka's admin client has no BROKER_LOGGER resource type."""

from __future__ import annotations

import time

import pytest
from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, ResourcePatternType, ResourceType
from kafka.admin import AlterConfigOp, ConfigResource, ConfigResourceType, KafkaAdminClient

from protocol.kafka.apis import by_name
from protocol.kafka.config_values import ConfigOperation
from protocol.kafka.error_codes import ErrorCode
from tests.gateway.server import GatewayProcess
from tests.gateway.test_acls import create_acls, open_gateway  # noqa: F401  (the fixture `gateway`)
from tests.gateway.test_admin_apis import exchange

TIMEOUT_S = 30.0
BROKER_LOGGER = 8
INCREMENTAL, DESCRIBE, ALTER = by_name("IncrementalAlterConfigs"), by_name("DescribeConfigs"), by_name("AlterConfigs")


@pytest.fixture(scope="module")
def gateway(open_gateway):  # noqa: F811
    """A gateway whose authorizer lets everyone do what no ACL speaks of, so that a refusal can be logged."""
    return open_gateway


@pytest.fixture
def client(gateway):
    client = KafkaAdminClient(bootstrap_servers=gateway.bootstrap)
    yield client
    client.close()


def loggers(client: KafkaAdminClient, *names: str) -> dict[str, str]:
    """The loggers' levels (every logger's without names), checking each is described as Kafka does."""
    resource = ConfigResource(ConfigResourceType.BROKER_LOGGER, "0", list(names) or None)
    described = client.describe_configs([resource], config_filter="all")["broker_logger"]["0"]
    assert all((entry["config_source"], entry["read_only"], entry["synonyms"], entry["config_type"]) ==
               ("DYNAMIC_BROKER_LOGGER_CONFIG", False, [], "UNKNOWN") for entry in described.values())
    return {name: entry["value"] for name, entry in described.items()}


def change(client: KafkaAdminClient, configs: dict, **options) -> str:
    resource = ConfigResource(ConfigResourceType.BROKER_LOGGER, "0", configs)
    return client.alter_configs([resource], raise_on_unknown=False, **options)["broker_logger"]["0"]


def logged(gateway, event: str) -> int:
    return sum(f"event='{event}'" in line for line in gateway.log_path.read_text().splitlines())


def wait_logged(gateway, event: str, count: int) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while logged(gateway, event) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    assert logged(gateway, event) == count


def test_every_logger_is_described_with_the_level_it_logs_from(client):
    levels = loggers(client)
    assert levels["root"] == "INFO"
    assert {"gateway", "gateway.server", "gateway.server.connection", "gateway.api.configs"} <= levels.keys()
    assert {levels[name] for name in levels if name.startswith("gateway")} == {"INFO"}
    assert loggers(client, "root", "gateway.acls") == {"root": "INFO", "gateway.acls": "INFO"}


def test_a_level_set_live_changes_what_the_gateway_logs(gateway, client):
    create_acls(gateway, AclBinding(ResourceType.TOPIC, "closed", ResourcePatternType.LITERAL, "User:ANONYMOUS", "*",
                                    AclOperation.DESCRIBE_CONFIGS, AclPermissionType.DENY))

    def refused() -> None:  # kafka-python leaves out a resource refused
        topic = ConfigResource(ConfigResourceType.TOPIC, "closed")
        assert client.describe_configs([topic]) == {"topic": {"closed": {}}}

    refused()
    assert logged(gateway, "authorization_denied") == 0  # a debug event, below INFO
    assert change(client, {"gateway.acls": "DEBUG"}) == "OK"
    assert loggers(client, "gateway.acls", "gateway.acls.acl_store", "gateway") == {
        "gateway.acls": "DEBUG", "gateway.acls.acl_store": "DEBUG", "gateway": "INFO"}
    refused()
    wait_logged(gateway, "authorization_denied", 1)
    # DELETE: the logger takes its parent's level again
    assert change(client, {"gateway.acls": (AlterConfigOp.DELETE, None)}) == "OK"
    assert loggers(client, "gateway.acls.acl_store")["gateway.acls.acl_store"] == "INFO"
    refused()
    # a module's own level wins over its package's, the root's reaches every logger without one
    assert change(client, {"root": "ERROR", "gateway.acls.acl_store": "TRACE"}) == "OK"
    assert loggers(client, "gateway.acls", "gateway.acls.acl_store", "gateway.server.connection") == {
        "gateway.acls": "ERROR", "gateway.acls.acl_store": "TRACE", "gateway.server.connection": "ERROR"}
    refused()
    wait_logged(gateway, "authorization_denied", 2)
    opened = logged(gateway, "connection_opened")
    KafkaAdminClient(bootstrap_servers=gateway.bootstrap).close()  # an INFO event, below ERROR
    assert logged(gateway, "connection_opened") == opened
    changes = logged(gateway, "logger_level_changed")  # a warning, as Kafka logs it
    assert change(client, {"root": "INFO", "gateway.acls.acl_store": (AlterConfigOp.DELETE, None)}) == "OK"
    wait_logged(gateway, "logger_level_changed", changes + 2)


def test_validate_only_changes_nothing(client):
    assert change(client, {"gateway.server": "WARN"}, validate_only=True) == "OK"
    assert loggers(client, "gateway.server") == {"gateway.server": "INFO"}


@pytest.mark.parametrize(("configs", "error"), [
    ({"kafka.server.ReplicaManager": "DEBUG"}, "InvalidConfigurationError: Logger kafka.server.ReplicaManager does "
                                               "not exist!"),
    ({"gateway.server": "debug"}, "InvalidConfigurationError: Cannot set the log level of gateway.server to debug as it "
                                  "is not a supported log level. Valid log levels are DEBUG, ERROR, FATAL, INFO, TRACE, "
                                  "WARN"),
    ({"root": (AlterConfigOp.DELETE, None)}, "InvalidRequestError: Removing the log level of the root logger is not "
                                             "allowed"),
    ({"root": (AlterConfigOp.APPEND, "DEBUG")}, "InvalidRequestError: APPEND operation is not allowed for the "
                                                "BROKER_LOGGER resource"),
    ({"gateway": (AlterConfigOp.SUBTRACT, "DEBUG")}, "InvalidRequestError: SUBTRACT operation is not allowed for the "
                                                     "BROKER_LOGGER resource"),
    # every change is checked before any is made
    ({"gateway.server": "WARN", "nowhere": "WARN"}, "InvalidConfigurationError: Logger nowhere does not exist!"),
])
def test_refused_as_kafka_refuses(client, configs, error):
    assert error in change(client, configs)
    assert loggers(client, "gateway.server", "root") == {"gateway.server": "INFO", "root": "INFO"}


def incremental(gateway, name: str, *configs: tuple[str, int, str | None]) -> tuple[int, str | None]:
    Resource = INCREMENTAL.Request.Resources
    asked = INCREMENTAL.Request(resources=[Resource(
        resource_type=BROKER_LOGGER, resource_name=name,
        configs=[Resource.Configs(name=logger, config_operation=op, value=level) for logger, op, level in configs])])
    (answer,) = exchange(gateway, "IncrementalAlterConfigs", 1, asked).responses
    return answer.error_code, answer.error_message


def described(gateway, name: str) -> tuple[int, str | None]:
    asked = DESCRIBE.Request(resources=[DESCRIBE.Request.Resources(resource_type=BROKER_LOGGER, resource_name=name)])
    (result,) = exchange(gateway, "DescribeConfigs", 4, asked).results
    return result.error_code, result.error_message


def test_resource_names_and_apis_refused_as_kafka_refuses(gateway):
    set_debug = ("gateway", ConfigOperation.SET, "DEBUG")
    assert incremental(gateway, "", set_debug) == (ErrorCode.INVALID_REQUEST, "Node id must be an integer, but it is: ")
    # Kafka's message names the broker's own id where the id asked for belongs
    assert incremental(gateway, "7", set_debug) == (ErrorCode.INVALID_REQUEST,
                                                    "Unexpected node id. Expected 0, but received 0")
    assert incremental(gateway, "0", ("gateway", 9, "DEBUG")) == (ErrorCode.UNKNOWN_SERVER_ERROR, None)
    assert incremental(gateway, "0", ("gateway", ConfigOperation.SET, None)) == (
        ErrorCode.INVALID_REQUEST, "Null value not supported for : gateway")
    assert described(gateway, "") == (ErrorCode.INVALID_REQUEST, "Broker id must not be empty")
    assert described(gateway, "one") == (ErrorCode.INVALID_REQUEST, "Broker id must be an integer, but it is: one")
    assert described(gateway, "7") == (ErrorCode.INVALID_REQUEST, "Unexpected broker id, expected 0 but received 7")
    Resource = ALTER.Request.Resources
    legacy = ALTER.Request(resources=[Resource(resource_type=BROKER_LOGGER, resource_name="0",
                                               configs=[Resource.Configs(name="gateway", value="DEBUG")])])
    (answer,) = exchange(gateway, "AlterConfigs", 2, legacy).responses
    assert (answer.error_code, answer.error_message) == (ErrorCode.INVALID_REQUEST, "Unknown resource type 8")


def test_levels_are_not_kept_across_a_restart(tmp_path):
    server = GatewayProcess(tmp_path / "data", "--log-level", "warning").start()
    try:
        client = KafkaAdminClient(bootstrap_servers=server.bootstrap)
        assert change(client, {"root": "DEBUG", "gateway.server": "ERROR"}) == "OK"
        client.close()
        server.stop()
        server.start()
        client = KafkaAdminClient(bootstrap_servers=server.bootstrap)
        assert loggers(client, "root", "gateway.server") == {"root": "WARN", "gateway.server": "WARN"}
        client.close()
    finally:
        server.stop()
