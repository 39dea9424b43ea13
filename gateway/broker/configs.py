"""Topic configs the gateway honours, with Kafka's names, types and defaults.

A topic's value for a config is its own override, else the broker-level
setting it inherits (Kafka's "synonym"). Configs Kafka has but the gateway
does not implement are refused (INVALID_CONFIG) rather than accepted and
ignored.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Callable

from ..config import BrokerDefaults, GatewaySettings


class ConfigSource(IntEnum):
    """DescribeConfigs' config_source values."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6


class ConfigType(IntEnum):
    """DescribeConfigs' config_type values (v3+)."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class InvalidConfig(ValueError):
    """A config name or value the gateway does not accept."""


def _integer(low: int) -> Callable[[str], str]:
    def check(value: str) -> str:
        try:
            number = int(value)
        except ValueError:
            raise InvalidConfig(f"{value!r} is not an integer") from None
        if number < low:
            raise InvalidConfig(f"{value} is below {low}")
        return str(number)

    return check


def _one_of(*choices: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        if value not in choices:
            raise InvalidConfig(f"{value!r} is not one of {', '.join(choices)}")
        return value

    return check


@dataclass(frozen=True)
class TopicConfig:
    name: str
    broker_name: str  # the broker setting a topic inherits
    type: ConfigType
    check: Callable[[str], str]
    doc: str

    def broker_value(self, defaults: BrokerDefaults) -> str:
        return config_text(getattr(defaults, self.broker_name.replace(".", "_")))


def config_text(value) -> str:
    """A setting as Kafka writes config values: booleans in lower case."""
    return str(value).lower() if isinstance(value, bool) else str(value)


TOPIC_CONFIGS = {c.name: c for c in (
    TopicConfig("cleanup.policy", "log.cleanup.policy", ConfigType.LIST, _one_of("delete"),
                "Only delete is supported: old segments are removed by retention."),
    TopicConfig("compression.type", "compression.type", ConfigType.STRING, _one_of("producer"),
                "Batches are stored as the producer compressed them."),
    TopicConfig("max.message.bytes", "message.max.bytes", ConfigType.INT, _integer(0),
                "Largest record batch a produce may append."),
    TopicConfig("message.timestamp.type", "log.message.timestamp.type", ConfigType.STRING,
                _one_of("CreateTime", "LogAppendTime"),
                "Whether records keep the producer's timestamps or get the append time."),
    TopicConfig("min.insync.replicas", "min.insync.replicas", ConfigType.INT, _integer(1),
                "Stores that must hold a batch before an acks=all produce succeeds."),
    TopicConfig("retention.bytes", "log.retention.bytes", ConfigType.LONG, _integer(-1),
                "Bytes a partition keeps before its oldest batches are removed; -1 for no limit."),
    TopicConfig("retention.ms", "log.retention.ms", ConfigType.LONG, _integer(-1),
                "How long batches are kept; -1 for ever."),
)}


def checked_overrides(configs: dict[str, str | None]) -> dict[str, str]:
    """Validated topic overrides; InvalidConfig names the first bad entry."""
    overrides = {}
    for name, value in configs.items():
        config = TOPIC_CONFIGS.get(name)
        if config is None:
            raise InvalidConfig(f"unknown or unsupported topic config {name!r}")
        if value is None:
            raise InvalidConfig(f"{name} needs a value")
        try:
            overrides[name] = config.check(value)
        except InvalidConfig as exc:
            raise InvalidConfig(f"{name}: {exc}") from None
    return overrides


@dataclass(frozen=True)
class BrokerConfig:
    """A broker setting DescribeConfigs reports; all are fixed at start-up."""

    name: str
    type: ConfigType
    read: Callable[[GatewaySettings], object]
    doc: str

    def value(self, settings: GatewaySettings) -> str:
        return config_text(self.read(settings))

    def source(self, settings: GatewaySettings) -> ConfigSource:
        """Kafka's default unless start-up options changed it."""
        if self.value(settings) == self.value(GatewaySettings()):
            return ConfigSource.DEFAULT_CONFIG
        return ConfigSource.STATIC_BROKER_CONFIG


def _inherited(name: str) -> Callable[[GatewaySettings], object]:
    return lambda settings: getattr(settings.defaults, name.replace(".", "_"))


BROKER_CONFIGS = {c.name: c for c in (
    *(BrokerConfig(c.broker_name, c.type, _inherited(c.broker_name), f"Default of the topic config {c.name}.")
      for c in TOPIC_CONFIGS.values()),
    BrokerConfig("num.partitions", ConfigType.INT, _inherited("num.partitions"),
                 "Partitions of topics created without a partition count."),
    BrokerConfig("default.replication.factor", ConfigType.INT, _inherited("default.replication.factor"),
                 "Replication factor of topics created without one."),
    BrokerConfig("auto.create.topics.enable", ConfigType.BOOLEAN, _inherited("auto.create.topics.enable"),
                 "Whether metadata requests and produces create missing topics."),
    BrokerConfig("socket.request.max.bytes", ConfigType.INT, lambda s: s.max_request_bytes,
                 "Largest request the gateway reads; larger ones close the connection."),
    BrokerConfig("max.connections", ConfigType.INT, lambda s: s.max_connections,
                 "Client connections the gateway accepts at once."),
    BrokerConfig("node.id", ConfigType.INT, lambda s: s.node_id, "This gateway's node id."),
    BrokerConfig("broker.id", ConfigType.INT, lambda s: s.node_id, "This gateway's node id."),
    BrokerConfig("advertised.listeners", ConfigType.STRING,
                 lambda s: "PLAINTEXT://{}:{}".format(*s.advertised), "Where clients reach this gateway."),
)}
