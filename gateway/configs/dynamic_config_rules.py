"""Which broker configs change at run time, and Kafka's checks of a change (KIP-226, Kafka 4's
DynamicBrokerConfig and ConfigAdminManager).

A dynamic config is set for one broker (the resource named by its node id)
or as the cluster's default (the resource named ""); a broker's own value
wins over the default, which wins over its static setting. The gateway
applies live the defaults of topic configs (Kafka's DynamicLogConfig: the
first broker synonym of every topic config) and the connection limits.
Kafka's other dynamic configs that the gateway has as settings are read only
at start-up here, so a change of them is refused; names outside Kafka's
dynamic set are refused as Kafka refuses its static configs.
"""

from __future__ import annotations

from gateway.kafka_error import KafkaError
from gateway.settings.declaration import Command, Declared, declared
from gateway.settings.kinds import NotAllowed, Nullable
from gateway.settings.table import SECTIONS
from gateway.topics.topic_configs import TOPIC_CONFIGS
from protocol.kafka.config_values import ConfigOperation
from protocol.kafka.error_codes import ErrorCode

DEFAULT = ""  # the name of the cluster-default resource

SETTINGS: dict[str, Declared] = {entry.name: entry for section in SECTIONS.values() for entry in declared(section)
                                 if entry.commands & Command.GATEWAY}

LIVE = frozenset(config.synonyms[0] for config in TOPIC_CONFIGS.values() if config.synonyms)

# Kafka's SslConfigs.RECONFIGURABLE_CONFIGS: dynamic only under a listener.name.NAME. prefix.
LISTENER_PREFIX_ONLY = frozenset({
    "ssl.keystore.type", "ssl.keystore.location", "ssl.key.password", "ssl.truststore.type",
    "ssl.truststore.location", "ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.truststore.certificates"})
# Kafka's per-broker dynamic configs (DynamicListenerConfig's, the SSL ones above) that the gateway has.
PER_BROKER = LISTENER_PREFIX_ONLY | {
    "listeners", "advertised.listeners", "listener.security.protocol.map", "ssl.protocol", "ssl.cipher.suites",
    "ssl.enabled.protocols", "ssl.endpoint.identification.algorithm", "ssl.client.auth", "sasl.jaas.config",
    "sasl.enabled.mechanisms"}
# Kafka's dynamic configs that the gateway has but reads only at start-up: the listeners, their security
# and connection limits (the listeners take them before the broker's state is read), the stores' cleaner's.
AT_START_UP = PER_BROKER | {"max.connections", "max.connections.per.ip", "max.connections.per.ip.overrides",
                            "max.connection.creation.rate", "log.cleaner.dedupe.buffer.size", "log.cleaner.backoff.ms"}


def scala_set(names: list[str]) -> str:
    """Names as Kafka's messages show a Scala immutable Set of them."""
    return f"{'Set' if len(names) <= 4 else 'HashSet'}({', '.join(names)})"


def _refuse(names: list[str], reason: str) -> None:
    if names:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"{reason}: {scala_set(names)}")


def checked(configs: dict[str, str], per_broker: bool) -> dict[str, str]:
    """A resource's whole set of dynamic configs after a change, in Kafka's spelling; refused in the
    order and words of Kafka's DynamicBrokerConfig.validateConfigs (INVALID_REQUEST throughout, as
    ConfigAdminManager answers even a bad value, KAFKA-13609)."""
    _refuse([name for name in configs if name not in LIVE | AT_START_UP], "Cannot update these configs dynamically")
    _refuse([name for name in configs if name in LISTENER_PREFIX_ONLY],
            "These security configs can be dynamically updated only per-listener using the listener prefix")
    stored = {name: _value(name, text) for name, text in configs.items()}
    if not per_broker:
        _refuse([name for name in configs if name in PER_BROKER],
                "Cannot update these configs at default cluster level, broker id must be specified")
    _refuse([name for name in configs if name not in LIVE], "Cannot update these configs dynamically")
    return stored


def _value(name: str, text: str) -> str:
    kind = SETTINGS[name].kind
    kind = kind.inner if isinstance(kind, Nullable) else kind  # a dynamic value is never Kafka's null
    try:
        return kind.text(kind.parse(text))
    except NotAllowed:
        raise KafkaError(ErrorCode.INVALID_REQUEST, kind.config_error(name, text)) from None


def parsed(name: str, text: str):
    """A stored dynamic value as its setting holds it."""
    return SETTINGS[name].kind.parse(text)


def changed(current: dict[str, str], operations: list[tuple[str, int, str | None]]) -> dict[str, str]:
    """A resource's dynamic configs after IncrementalAlterConfigs' operations (name, operation, value),
    as Kafka's ConfigAdminManager.prepareIncrementalConfigs applies them: a list's items come from the
    resource's own value, else the config's default."""
    configs = dict(current)
    for name, operation, value in operations:
        if operation == ConfigOperation.SET:
            configs[name] = value
        elif operation == ConfigOperation.DELETE:
            configs.pop(name, None)
        elif operation in (ConfigOperation.APPEND, ConfigOperation.SUBTRACT):
            configs[name] = ",".join(_list_changed(configs, name, ConfigOperation(operation), value))
        else:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unknown operations type {operation}")
    return configs


def _list_changed(configs: dict[str, str], name: str, operation: ConfigOperation, value: str) -> list[str]:
    entry = SETTINGS.get(name)
    if entry is None:  # Kafka looks the name up in its own configs and fails: no message
        raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, None)
    if entry.kind.config_type != "LIST":
        raise KafkaError(ErrorCode.INVALID_CONFIG,
                         f"Config value {operation.name.lower()} is not allowed for config key: {name}")
    current = configs.get(name, entry.kind.text(entry.default))
    if operation == ConfigOperation.APPEND:
        items = [item for item in current.split(",") if item]
        return items + [item for item in value.split(",") if item not in items]
    items = current.split(",")
    for item in value.split(","):  # Scala's diff: each item given takes one away
        if item in items:
            items.remove(item)
    return items
