"""Which broker configs change at run time, and Kafka's checks of a change (KIP-226, Kafka 4's
DynamicBrokerConfig and ConfigAdminManager).

A dynamic config is set for one broker (the resource named by its node id)
or as the cluster's default (the resource named ""); a broker's own value
wins over the default, which wins over its static setting. The gateway
applies live the defaults of topic configs (Kafka's DynamicLogConfig: the
first broker synonym of every topic config) and the connection limits
(SocketServer's), which the listeners read at each connection they accept.
A listener's SSL configs (`listener.name.NAME.ssl.*`,
per broker only, each checked as its base config) rotate that listener's
keystore and truststore live (gateway/configs/listener_tls.py); the base
`ssl.*` stores are dynamic only under that prefix, as in Kafka. Kafka's
other dynamic configs that the gateway has as settings are read only at
start-up here, so a change of them is refused; those it has no setting for
are inert (inert_broker_configs.py); Kafka's static configs are refused, and
a name Kafka does not know is stored unchecked, as Kafka stores it.
"""

from __future__ import annotations

import re

from gateway.configs.inert_broker_configs import INERT_CONFIGS
from gateway.configs.kafka_static_configs import NON_DYNAMIC
from gateway.kafka_error import KafkaError
from gateway.settings.declaration import Command, Declared, declared
from gateway.settings.kinds import INTEGER, JAVA_INT, NotAllowed, Nullable
from gateway.settings.table import SECTIONS, BrokerSettings
from gateway.topics.topic_configs import TOPIC_CONFIGS
from protocol.kafka.config_values import ConfigOperation
from protocol.kafka.error_codes import ErrorCode

DEFAULT = ""  # the name of the cluster-default resource

SETTINGS: dict[str, Declared] = {entry.name: entry for section in SECTIONS.values() for entry in declared(section)
                                 if entry.commands & Command.GATEWAY}

OVERRIDES = "max.connections.per.ip.overrides"
# Kafka's SocketServer.ReconfigurableConfigs, the connection limits
CONNECTION_LIMITS = frozenset({"max.connections", "max.connections.per.ip", OVERRIDES, "max.connection.creation.rate"})
LIVE = frozenset(config.synonyms[0] for config in TOPIC_CONFIGS.values() if config.synonyms) | CONNECTION_LIMITS

# Kafka's SslConfigs.RECONFIGURABLE_CONFIGS: dynamic only under a listener.name.NAME. prefix.
LISTENER_PREFIX_ONLY = frozenset({
    "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password", "ssl.truststore.type",
    "ssl.truststore.location", "ssl.truststore.password", "ssl.keystore.certificate.chain", "ssl.keystore.key",
    "ssl.truststore.certificates"})
# Kafka's PASSWORD configs of the stores that the gateway has no setting for (its PEM stores take none).
STORE_PASSWORDS = frozenset({"ssl.keystore.password", "ssl.truststore.password"})
# Kafka's per-broker dynamic configs (DynamicListenerConfig's, the SSL ones above) that the gateway has.
PER_BROKER_SETTINGS = LISTENER_PREFIX_ONLY | {
    "listeners", "listener.security.protocol.map", "ssl.protocol", "ssl.cipher.suites",
    "ssl.enabled.protocols", "ssl.endpoint.identification.algorithm", "ssl.client.auth", "sasl.jaas.config",
    "sasl.enabled.mechanisms"}
PER_BROKER = PER_BROKER_SETTINGS | {name for name, config in INERT_CONFIGS.items() if config.per_broker}
# Kafka's dynamic configs that the gateway has but reads only at start-up: the listeners and their security
# (bound before the broker's state is read), the stores' cleaner's.
AT_START_UP = PER_BROKER_SETTINGS | {"log.cleaner.dedupe.buffer.size", "log.cleaner.backoff.ms"}
LISTENER_CONFIG = re.compile(r"listener\.name\.[^.]*\.(?P<base>.*)")  # Kafka's per-listener form
LISTENER_SSL_CONFIG = re.compile(r"listener\.name\.[^.]*\.(?P<base>ssl\..*)")  # the only one taken here
VALID_HOST = re.compile(r"[0-9a-zA-Z\-%._:]*")  # Kafka's Utils.validHostPattern


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
    _refuse([name for name in configs if _not_dynamic(name)], "Cannot update these configs dynamically")
    _refuse([name for name in configs if name in LISTENER_PREFIX_ONLY],
            "These security configs can be dynamically updated only per-listener using the listener prefix")
    stored = {name: _value(name, text) for name, text in configs.items()}
    if not per_broker:
        _refuse([name for name in configs if name in PER_BROKER or LISTENER_CONFIG.fullmatch(name)],
                "Cannot update these configs at default cluster level, broker id must be specified")
    _refuse([name for name in configs if name in AT_START_UP - LIVE], "Cannot update these configs dynamically")
    return stored


def _not_dynamic(name: str) -> bool:
    """Kafka's static configs, the gateway's own settings, and the per-listener configs but the SSL ones,
    which the gateway does not take."""
    return name not in LIVE | AT_START_UP and (
        name in NON_DYNAMIC or name in SETTINGS
        or (LISTENER_CONFIG.fullmatch(name) is not None and LISTENER_SSL_CONFIG.fullmatch(name) is None))


def base_name(name: str) -> str:
    """The config a per-listener one overrides (Kafka's synonym of it), else the name itself."""
    found = LISTENER_CONFIG.fullmatch(name)
    return name if found is None else found["base"]


def config_type(name: str) -> str | None:
    """Kafka's type of a broker config (a per-listener one's is its base config's, as Kafka describes it);
    None: a name Kafka does not know."""
    name = base_name(name)
    if name in INERT_CONFIGS:
        return INERT_CONFIGS[name].kind.config_type
    if name in SETTINGS:
        return SETTINGS[name].kind.config_type
    return "PASSWORD" if name in STORE_PASSWORDS else None


def loggable(configs: dict[str, str]) -> dict[str, str]:
    """Configs as a log line may show them: a password's value, or a value of unknown type, hidden
    (Kafka's loggableValue)."""
    return {name: text if config_type(name) not in (None, "PASSWORD") else "[hidden]"
            for name, text in configs.items()}


def _value(name: str, text: str) -> str:
    """The value as stored: a config of the gateway's or an inert one of Kafka's checked and in Kafka's
    spelling (a per-listener one as its base config, which Kafka's message names), a name Kafka does not
    know as given."""
    name = base_name(name)
    if name == OVERRIDES:
        _read_overrides(text)
    if name in INERT_CONFIGS:
        kind = INERT_CONFIGS[name].kind
    elif name in SETTINGS:
        kind = SETTINGS[name].kind
    else:
        return text
    kind = kind.inner if isinstance(kind, Nullable) else kind  # a dynamic value is never Kafka's null
    try:
        return kind.text(kind.parse(text))
    except NotAllowed:
        raise KafkaError(ErrorCode.INVALID_REQUEST, kind.config_error(name, text)) from None


def _read_overrides(text: str) -> None:
    """Kafka's reading of max.connections.per.ip.overrides as it builds the new config (a Java String.split
    on commas, each host before its last colon, the count parsed as an Int, then the hosts' characters),
    refused with the words of the Java exceptions it meets."""
    entries = re.split(r"\s*,\s*", text) if text else []
    while entries and not entries[-1]:  # Java's split drops trailing empty strings
        entries.pop()
    hosts = {}
    for entry in entries:
        colon = entry.rfind(":")
        if colon < 0:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Error parsing configuration property '{OVERRIDES}': "
                                                        f"begin 0, end -1, length {len(entry)}")
        hosts[entry[:colon].strip()] = entry[colon + 1:].strip()
    for count in hosts.values():
        if not INTEGER.fullmatch(count) or not -JAVA_INT <= int(count) < JAVA_INT:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f'For input string: "{count}"')
    invalid = [host for host in hosts if not VALID_HOST.fullmatch(host)]
    _refuse_if(invalid, f"{OVERRIDES} contains invalid addresses : {','.join(invalid)}")


def check_applied(current: BrokerSettings, new: BrokerSettings) -> None:
    """Kafka's checks of the broker's whole config once changed (KafkaConfig's, then its listeners' connection
    quotas', which see a changed limit only)."""
    _refuse_if(new.max_connections_per_ip == 0 and not new.max_connections_per_ip_overrides,
               f"requirement failed: max.connections.per.ip can be set to zero only if {OVERRIDES} property is set.")
    _refuse_if(any(getattr(new, limit) != getattr(current, limit) and getattr(new, limit) <= 0
                   for limit in ("max_connections", "max_connection_creation_rate")),
               "Invalid dynamic configuration")


def _refuse_if(refused, message: str) -> None:
    if refused:
        raise KafkaError(ErrorCode.INVALID_REQUEST, message)


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


def _list_config(name: str):
    """The kind and default text of a config APPEND or SUBTRACT may change, looked up as Kafka looks it up
    among KafkaConfig's entries."""
    inert = INERT_CONFIGS.get(name)
    if inert is not None and inert.kafka_config:
        return inert.kind, inert.default or ""
    entry = SETTINGS.get(name)
    if entry is None:  # Kafka looks the name up in its own configs and fails: no message
        raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, None)
    return entry.kind, entry.kind.text(entry.default)


def _list_changed(configs: dict[str, str], name: str, operation: ConfigOperation, value: str) -> list[str]:
    kind, default = _list_config(name)
    if kind.config_type != "LIST":
        raise KafkaError(ErrorCode.INVALID_CONFIG,
                         f"Config value {operation.name.lower()} is not allowed for config key: {name}")
    current = configs.get(name, default)
    if operation == ConfigOperation.APPEND:
        items = [item for item in current.split(",") if item]
        return items + [item for item in value.split(",") if item not in items]
    items = current.split(",")
    for item in value.split(","):  # Scala's diff: each item given takes one away
        if item in items:
            items.remove(item)
    return items
