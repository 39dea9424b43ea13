"""The broker configs DescribeConfigs reports: every setting of the gateway, from the settings table.

A config's value comes from the first of Kafka's levels that has it: this
broker's dynamic config (DYNAMIC_BROKER_CONFIG), the cluster's dynamic
default (DYNAMIC_DEFAULT_BROKER_CONFIG), the setting given in a file, the
environment or a flag (STATIC_BROKER_CONFIG), its default (DEFAULT_CONFIG);
its synonyms are every level that has it, in that order, as Kafka lists
them. Only the configs the gateway changes live (dynamic_config_rules.py)
are not read-only. A setting Kafka knows by two names (node.id and
broker.id) is reported under both. A password's value is never reported: it
is null and sensitive, as Kafka describes PASSWORD configs.

A listener's config (`listener.name.NAME.ssl.*`) is described once set,
dynamically or in the settings (then STATIC_BROKER_CONFIG), as Kafka
describes it: read-only, typed as its base config (a password's value null),
its synonyms its own levels then the base config's static and default
values. Kafka's dynamic configs that are inert here (inert_broker_configs.py) are
described as Kafka describes them: with Kafka's default until set (the
broker quotas, no KafkaConfig entry, only once set, read-only). A name Kafka
does not know is described once set, as Kafka describes what it cannot type:
read-only, sensitive, its value null.
"""

from __future__ import annotations

from dataclasses import dataclass

from gateway.cluster.cluster_view import ClusterView
from gateway.configs.dynamic_config_rules import DEFAULT, LISTENER_CONFIG, LIVE, base_name, config_type
from gateway.configs.dynamic_configs import DynamicConfigs
from gateway.configs.inert_broker_configs import INERT_CONFIGS, doc, in_effect
from gateway.settings.declaration import Command, Declared, declared
from gateway.settings.table import LISTENER_SSL, SECTIONS, Settings
from protocol.kafka.config_values import ConfigSource, ConfigType

# Settings whose value comes from others: given when any of those was.
DERIVED_FROM = {"listeners": ("listeners", "host.name", "port"),
                "advertised.listeners": ("advertised.listeners", "listeners", "host.name", "port")}
DECLARED = [(name, entry) for name, section in SECTIONS.items() for entry in declared(section)
            if entry.commands & Command.GATEWAY]
BY_NAME = {name: (section, entry) for section, entry in DECLARED for name in (entry.name, *entry.synonyms)}


@dataclass(frozen=True)
class Synonym:
    name: str
    value: str | None
    source: ConfigSource


@dataclass(frozen=True)
class BrokerConfig:
    name: str
    value: str | None  # None: Kafka's null (unset, no default)
    source: ConfigSource
    type: ConfigType
    doc: str
    sensitive: bool = False
    read_only: bool = True
    synonyms: tuple[Synonym, ...] = ()  # most specific first


class BrokerConfigs:
    def __init__(self, settings: Settings, cluster: ClusterView, dynamic: DynamicConfigs):
        self._settings = settings
        self._cluster = cluster
        self.dynamic = dynamic

    def entries(self) -> list[BrokerConfig]:
        """This broker's configs (the resource named by its node id)."""
        node = str(self._cluster.node_id)
        set_here = {**self.dynamic.configs(DEFAULT), **self.dynamic.configs(node)}
        inert = [config for config in INERT_CONFIGS.values() if config.kafka_config or config.name in set_here]
        return [*(self._config(section, entry, name) for section, entry in DECLARED
                  for name in (entry.name, *entry.synonyms)),
                *(self._dynamic_only(config.name, per_broker=True) for config in inert),
                *(self._listener_config(name) if LISTENER_CONFIG.fullmatch(name) else
                  self._dynamic_only(name, per_broker=True) for name in set_here
                  if name not in BY_NAME and name not in INERT_CONFIGS),
                *(self._listener_config(name) for name in self._settings.listener_ssl if name not in set_here)]

    def get(self, name: str) -> BrokerConfig | None:
        found = BY_NAME.get(name)
        return None if found is None else self._config(*found, name)

    def default_entries(self) -> list[BrokerConfig]:
        """The cluster-default resource's configs: its dynamic ones alone, as Kafka describes it."""
        source = ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
        return [BrokerConfig(name, text, source, _type(BY_NAME[name][1]), BY_NAME[name][1].help, read_only=False,
                             synonyms=(Synonym(name, text, source),)) if name in BY_NAME
                else self._dynamic_only(name, per_broker=False)
                for name, text in self.dynamic.configs(DEFAULT).items()]

    def _dynamic_only(self, name: str, per_broker: bool) -> BrokerConfig:
        """A config the gateway has no setting of: Kafka's inert ones, and names Kafka does not know; of the
        cluster default (not `per_broker`) its own level alone."""
        levels = [(str(self._cluster.node_id), ConfigSource.DYNAMIC_BROKER_CONFIG)] if per_broker else []
        levels.append((DEFAULT, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG))
        found = [(source, self.dynamic.configs(resource).get(name)) for resource, source in levels]
        inert = INERT_CONFIGS.get(name)
        if inert is None:
            synonyms = tuple(Synonym(name, None, source) for source, text in found if text is not None)
            return BrokerConfig(name, None, synonyms[0].source, ConfigType.UNKNOWN, None, sensitive=True,
                                synonyms=synonyms)
        if per_broker and inert.kafka_config:
            found.append((ConfigSource.DEFAULT_CONFIG, inert.default))
        synonyms = tuple(Synonym(name, text, source) for source, text in found if text is not None)
        values = self.dynamic.in_effect() if per_broker else self.dynamic.configs(DEFAULT)
        return BrokerConfig(name, in_effect(values, inert), synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG,
                            ConfigType[inert.kind.config_type], doc(inert), read_only=not inert.kafka_config,
                            synonyms=synonyms)

    def _listener_config(self, name: str) -> BrokerConfig:
        """A per-listener config of this broker, set dynamically (Kafka takes none at the cluster default) or
        statically; its synonyms level by level, itself before its base config, as Kafka lists them."""
        kind = config_type(name)
        hidden = kind in (None, "PASSWORD")
        base = base_name(name)
        found = BY_NAME.get(base)
        static = self._settings.listener_ssl.get(name)
        own = ((ConfigSource.DYNAMIC_BROKER_CONFIG, self.dynamic.configs(str(self._cluster.node_id)).get(name)),
               (ConfigSource.STATIC_BROKER_CONFIG, None if static is None else LISTENER_SSL[base].kind.text(static)))
        inherited = () if found is None else tuple(
            synonym for synonym in self._levels(*found, base) if synonym.source in LEVELS[2:])
        synonyms = sorted((*(Synonym(name, None if hidden else text, source) for source, text in own
                             if text is not None), *inherited), key=lambda synonym: LEVELS.index(synonym.source))
        return BrokerConfig(name, synonyms[0].value, synonyms[0].source, ConfigType[kind or "UNKNOWN"],
                            None if found is None else found[1].help, sensitive=hidden, synonyms=tuple(synonyms))

    def synonyms(self, names: tuple[str, ...]) -> tuple[Synonym, ...]:
        """Every level that sets one of `names` (a topic config's broker synonyms), in Kafka's order:
        level by level, each name in turn."""
        found = [synonym for name in names for synonym in self._levels(*BY_NAME[name], name)]
        return tuple(sorted(found, key=lambda synonym: LEVELS.index(synonym.source)))

    def _config(self, section: str, entry: Declared, name: str) -> BrokerConfig:
        kind = _type(entry)
        synonyms = self._levels(section, entry, name)
        source = synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG
        value = self._text(section, entry, self._current(section))
        return BrokerConfig(name, _hidden(entry, value), source, kind, entry.help,
                            kind == ConfigType.PASSWORD, read_only=name not in LIVE, synonyms=synonyms)

    def _levels(self, section: str, entry: Declared, name: str) -> tuple[Synonym, ...]:
        """The levels that set config `name`, most specific first (a password's values null)."""
        node = str(self._cluster.node_id)
        found = [(source, self.dynamic.configs(resource).get(name)) for resource, source in (
            (node, ConfigSource.DYNAMIC_BROKER_CONFIG), (DEFAULT, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG))]
        if set(DERIVED_FROM.get(entry.name, (entry.name,))) & self._settings.given:
            found.append((ConfigSource.STATIC_BROKER_CONFIG, self._text(section, entry, getattr(self._settings, section))))
        if entry.default is not None:
            found.append((ConfigSource.DEFAULT_CONFIG, entry.kind.text(entry.default)))
        return tuple(Synonym(name, _hidden(entry, text), source) for source, text in found if text is not None)

    def _current(self, section: str):
        """The section's settings as the gateway runs with them: the broker's with its dynamic configs."""
        return self.dynamic.effective if section == "broker" else getattr(self._settings, section)

    def _text(self, section: str, entry: Declared, settings) -> str | None:
        """The setting's value in `settings`, as Kafka writes it."""
        value = getattr(settings, entry.attribute)
        if entry.name == "listeners":
            value = self._settings.broker.bound_listeners()
        elif entry.name == "advertised.listeners":
            value = self._cluster.advertised_listeners()
        return None if value is None else entry.kind.text(value)


LEVELS = (ConfigSource.DYNAMIC_BROKER_CONFIG, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
           ConfigSource.STATIC_BROKER_CONFIG, ConfigSource.DEFAULT_CONFIG)


def _type(entry: Declared) -> ConfigType:
    return ConfigType[entry.kind.config_type]


def _hidden(entry: Declared, text: str | None) -> str | None:
    """A password's value is never told."""
    return None if _type(entry) == ConfigType.PASSWORD else text
