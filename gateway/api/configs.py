"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs.

Topics keep config overrides. A BROKER resource is this gateway (named by
its node id) or the cluster's default (named ""): its dynamic configs are
changed as Kafka's are (gateway/configs/dynamic_configs.py), and a topic
without an override of a config takes what its broker synonyms say, dynamic
ones first. Groups keep config overrides too (gateway/group/group_configs.py). The BROKER_LOGGER
resource is this gateway's loggers, whose levels change live (gateway/configs/broker_loggers.py).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from enum import IntEnum

from gateway.acls import model as acl
from gateway.api.authorization import require
from gateway.api.registry import handles
from gateway.api.services import BrokerConfigs, Services, Topics
from gateway.configs.broker_configs import Synonym
from gateway.configs.broker_loggers import change_levels, check_described
from gateway.group.group_configs import GROUP_CONFIGS
from gateway.logging_setup import logger_levels
from gateway.server.dispatch import Request
from gateway.topics.topic import KafkaError, check_topic_name
from gateway.topics.topic_configs import TOPIC_CONFIGS, InvalidConfig, topic_config
from protocol.kafka.apis import by_name
from protocol.kafka.config_values import ConfigOperation as Operation
from protocol.kafka.config_values import ConfigSource, ConfigType
from protocol.kafka.error_codes import ErrorCode

DESCRIBE = by_name("DescribeConfigs")
ALTER = by_name("AlterConfigs")
INCREMENTAL = by_name("IncrementalAlterConfigs")

class ResourceType(IntEnum):
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    GROUP = 32


@dataclass(frozen=True)
class ConfigEntry:
    """One config as DescribeConfigs and CreateTopics report it."""

    name: str
    value: str
    source: ConfigSource
    type: ConfigType = ConfigType.UNKNOWN
    doc: str | None = None
    read_only: bool = False
    synonyms: tuple[Synonym, ...] = ()  # most specific first, as Kafka lists them
    sensitive: bool = False  # a password: its value is null


def repeated(items) -> set:
    """The items that occur more than once."""
    return {item for item, count in Counter(items).items() if count > 1}


def topic_entries(overrides: dict[str, str], services: Services) -> list[ConfigEntry]:
    """Every topic config: the override if any, else what it inherits from the broker's settings."""
    entries = []
    for config in TOPIC_CONFIGS.values():
        synonyms = services.broker_configs.synonyms(config.synonyms)
        if config.name in overrides:
            synonyms = (Synonym(config.name, overrides[config.name], ConfigSource.DYNAMIC_TOPIC_CONFIG), *synonyms)
            value, source = overrides[config.name], ConfigSource.DYNAMIC_TOPIC_CONFIG
        else:
            # A config without a broker setting has Kafka's default.
            source = synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG
            value = services.topics.inherited(config.name)
        entries.append(ConfigEntry(config.name, value, source, ConfigType[config.value_kind.config_type],
                                   config.doc, synonyms=synonyms))
    return entries


def broker_entries(broker_configs: BrokerConfigs, name: str) -> list[ConfigEntry]:
    """This broker's configs, or the cluster default's (name "")."""
    configs = broker_configs.entries() if name else broker_configs.default_entries()
    return [ConfigEntry(c.name, c.value, c.source, c.type, c.doc, read_only=c.read_only, synonyms=c.synonyms,
                        sensitive=c.sensitive) for c in configs]


def logger_entries() -> list[ConfigEntry]:
    """Every logger of this gateway with the level it logs from (gateway/configs/broker_loggers.py)."""
    return [ConfigEntry(name, level, ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG) for name, level in logger_levels().items()]


def check_node(name: str, node: int) -> None:
    """Kafka's rule for a BROKER resource name: this node's id, or "" for the cluster default."""
    if not name:
        return
    try:
        number = int(name)
    except ValueError:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Broker id must be an integer, but it is: {name}") from None
    if number != node:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unexpected broker id, expected {node}, but received {name}")


def resource_entries(services: Services, kind: int, name: str) -> list[ConfigEntry]:
    node = services.cluster.node_id
    if kind == ResourceType.TOPIC:
        check_topic_name(name)
        topic = services.topics.get(name)
        if topic is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "")  # Kafka sends no message here
        return topic_entries(topic.configs, services)
    if kind == ResourceType.BROKER:
        check_node(name, node)
        return broker_entries(services.broker_configs, name)
    if kind == ResourceType.BROKER_LOGGER:
        check_described(name, node)
        return logger_entries()
    if kind == ResourceType.GROUP:
        return group_entries(services, name)
    raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unsupported resource type: {kind}")


def described(entry: ConfigEntry, version: int, synonyms: bool, documentation: bool):
    Config = DESCRIBE.Response.Results.Configs
    return Config(
        name=entry.name, value=entry.value, read_only=entry.read_only, config_source=entry.source,
        # v0 had a flag where later versions have the source.
        is_default=version == 0 and entry.source == ConfigSource.DEFAULT_CONFIG, is_sensitive=entry.sensitive,
        synonyms=[Config.Synonyms(name=s.name, value=s.value, source=s.source) for s in entry.synonyms]
        if synonyms else [],
        config_type=entry.type, documentation=entry.doc if documentation else None,
    )


@handles("DescribeConfigs")
async def describe_configs(request: Request, services: Services):
    body = request.body
    Result = DESCRIBE.Response.Results
    results = []
    for resource in body.resources:
        result = Result(resource_type=resource.resource_type, resource_name=resource.resource_name,
                        error_message=None)
        try:
            require_on_resource(request, services, acl.Operation.DESCRIBE_CONFIGS, resource)
            entries = resource_entries(services, resource.resource_type, resource.resource_name)
        except KafkaError as exc:
            result.error_code, result.error_message = exc.code, exc.message or None
        else:
            wanted = resource.configuration_keys
            # No keys, or an empty list of them, asks for every config (as Kafka reads it).
            result.configs = [described(e, request.version, body.include_synonyms, body.include_documentation)
                              for e in entries if not wanted or e.name in wanted]
        results.append(result)
    return DESCRIBE.Response(results=results)


def check_entries(configs, nullable_deletes: bool) -> None:
    """Kafka's checks on one resource's config list before anything is applied."""
    if repeated(c.name for c in configs):
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    missing = [c.name for c in configs if c.value is None
               and not (nullable_deletes and c.config_operation == Operation.DELETE)]
    if missing:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Null value not supported for : {', '.join(missing)}")


def require_on_resource(request: Request, services: Services, operation: acl.Operation, resource) -> None:
    """Kafka's check of a config resource: the operation on the topic, or on the cluster for a broker
    and its loggers."""
    if resource.resource_type == ResourceType.TOPIC:
        require(request, services, operation, acl.ResourceType.TOPIC, resource.resource_name)
    elif resource.resource_type in (ResourceType.BROKER, ResourceType.BROKER_LOGGER):
        require(request, services, operation, acl.ResourceType.CLUSTER)
    elif resource.resource_type == ResourceType.GROUP:
        require(request, services, operation, acl.ResourceType.GROUP, resource.resource_name)


async def alter_resources(request: Request, services: Services, api, alter_one):
    """Apply `alter_one` to each resource named once; one response per resource."""
    twice = repeated((r.resource_type, r.resource_name) for r in request.body.resources)
    responses = []
    for resource in request.body.resources:
        response = api.Response.Responses(resource_type=resource.resource_type,
                                          resource_name=resource.resource_name, error_message=None)
        try:
            if (resource.resource_type, resource.resource_name) in twice:
                raise KafkaError(ErrorCode.INVALID_REQUEST, "Each resource must appear at most once.")
            require_on_resource(request, services, acl.Operation.ALTER_CONFIGS, resource)
            await alter_one(resource, request.body.validate_only)
        except KafkaError as exc:
            response.error_code, response.error_message = exc.code, exc.message
        responses.append(response)
    return api.Response(responses=responses)


@handles("AlterConfigs")
async def alter_configs(request: Request, services: Services):
    async def replace(resource, validate_only):
        check_entries(resource.configs, nullable_deletes=False)
        if resource.resource_type == ResourceType.TOPIC:
            await services.topics.replace_configs(resource.resource_name, {c.name: c.value for c in resource.configs},
                                                  validate_only=validate_only)
        elif resource.resource_type == ResourceType.BROKER:
            check_node(resource.resource_name, services.cluster.node_id)
            await services.broker_configs.dynamic.alter(
                resource.resource_name, replaced={c.name: c.value for c in resource.configs},
                validate_only=validate_only)
        elif resource.resource_type == ResourceType.GROUP:
            await alter_group(services, resource, replace=True, validate_only=validate_only)
        else:  # the legacy API never took BROKER_LOGGER
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unknown resource type {resource.resource_type}")

    return await alter_resources(request, services, ALTER, replace)


@handles("IncrementalAlterConfigs")
async def incremental_alter_configs(request: Request, services: Services):
    async def change(resource, validate_only):
        check_entries(resource.configs, nullable_deletes=True)
        kind, name = resource.resource_type, resource.resource_name
        if kind == ResourceType.TOPIC:
            await services.topics.change_configs(
                name, lambda current: applied(current, resource.configs, services.topics), validate_only=validate_only)
        elif kind == ResourceType.BROKER:
            check_node(name, services.cluster.node_id)
            await services.broker_configs.dynamic.alter(
                name, operations=[(c.name, c.config_operation, c.value) for c in resource.configs],
                validate_only=validate_only)
        elif kind == ResourceType.BROKER_LOGGER:
            change_levels(name, services.cluster.node_id,
                          [(c.name, c.config_operation, c.value) for c in resource.configs], validate_only)
        elif kind == ResourceType.GROUP:
            await alter_group(services, resource, replace=False, validate_only=validate_only)
        else:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unknown resource type {kind}")

    return await alter_resources(request, services, INCREMENTAL, change)


def applied(overrides: dict[str, str], operations, topics: Topics) -> dict[str, str]:
    """A topic's overrides after IncrementalAlterConfigs' operations, in order."""
    overrides = dict(overrides)
    for op in operations:
        if op.config_operation == Operation.SET:
            overrides[op.name] = op.value
        elif op.config_operation == Operation.DELETE:
            overrides.pop(op.name, None)
        elif op.config_operation in (Operation.APPEND, Operation.SUBTRACT):
            overrides[op.name] = ",".join(changed_list(overrides, op, topics))
        else:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unknown operation type {op.config_operation}")
    return overrides


def changed_list(overrides: dict[str, str], op, topics: Topics) -> list[str]:
    """A LIST config's items after APPEND or SUBTRACT; the current value may be inherited."""
    try:
        config = topic_config(op.name)
    except InvalidConfig as exc:
        raise KafkaError(ErrorCode.INVALID_CONFIG, str(exc)) from None
    verb = Operation(op.config_operation).name
    if config.value_kind.config_type != "LIST":
        raise KafkaError(ErrorCode.INVALID_CONFIG, f"Can't {verb} to key {op.name} because its type is not LIST.")
    current = overrides.get(op.name, topics.inherited(op.name))
    items = [item for item in current.split(",") if item]
    for item in op.value.split(","):
        if op.config_operation == Operation.APPEND and item not in items:
            items.append(item)
        elif op.config_operation == Operation.SUBTRACT and item in items:
            items.remove(item)
    return items


def group_entries(services: Services, name: str) -> list[ConfigEntry]:
    """Every group config: the group's override if any, else the broker's setting as Kafka's default."""
    if not name:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Group name must not be empty")
    overrides = services.group_configs.of(name)
    entries = []
    for config in GROUP_CONFIGS.values():
        value = str(services.group_configs.value(name, config))
        source = ConfigSource.DYNAMIC_GROUP_CONFIG if config.name in overrides else ConfigSource.DEFAULT_CONFIG
        entries.append(ConfigEntry(config.name, value, source, ConfigType.INT, config.doc,
                                   synonyms=(Synonym(config.name, value, source),)))
    return entries


async def alter_group(services: Services, resource, *, replace: bool, validate_only: bool) -> None:
    """A group's configs set (`replace`: the legacy API's whole new set) or changed; no group config is a LIST."""
    if not resource.resource_name:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Default group resources are not allowed.")
    changes = {}
    for op in resource.configs:
        operation = getattr(op, "config_operation", Operation.SET)  # the legacy API only sets
        if operation in (Operation.APPEND, Operation.SUBTRACT):
            verb = Operation(operation).name
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Can't {verb} to key {op.name} because its type is not LIST.")
        if operation not in (Operation.SET, Operation.DELETE):
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unknown operation type {operation}")
        changes[op.name] = op.value if operation == Operation.SET else None
    await services.group_configs.alter(resource.resource_name, changes, replace=replace, validate_only=validate_only)
