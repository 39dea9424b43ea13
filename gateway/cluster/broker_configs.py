"""The broker configs DescribeConfigs reports: every setting of the gateway, from the settings table.

All are fixed at start-up: a setting given (in a file, the environment or a
flag) is STATIC_BROKER_CONFIG, one left at its default DEFAULT_CONFIG, as
Kafka reports server.properties lines and defaults. A setting Kafka knows by
two names (node.id and broker.id) is reported under both.
"""

from __future__ import annotations

from dataclasses import dataclass

from gateway.cluster.cluster_view import ClusterView
from gateway.settings.declaration import Command, declared
from gateway.settings.table import SECTIONS, Settings
from protocol.kafka.config_values import ConfigSource, ConfigType

# Settings whose value comes from others: given when any of those was.
DERIVED_FROM = {"listeners": ("listeners", "host.name", "port"),
                "advertised.listeners": ("advertised.listeners", "listeners", "host.name", "port")}


@dataclass(frozen=True)
class BrokerConfig:
    name: str
    value: str | None  # None: Kafka's null (unset, no default)
    source: ConfigSource
    type: ConfigType
    doc: str


class BrokerConfigs:
    def __init__(self, settings: Settings, cluster: ClusterView):
        self._settings = settings
        self._cluster = cluster

    def entries(self) -> list[BrokerConfig]:
        return [config for section, entries in self._declared() for entry in entries
                for config in self._configs(section, entry)]

    def get(self, name: str) -> BrokerConfig | None:
        return next((config for config in self.entries() if config.name == name), None)

    def _declared(self):
        return [(name, [d for d in declared(section) if d.commands & Command.GATEWAY])
                for name, section in SECTIONS.items()]

    def _configs(self, section: str, entry) -> list[BrokerConfig]:
        value = getattr(getattr(self._settings, section), entry.attribute)
        if entry.name == "listeners":
            value = self._settings.broker.bound_listeners()
        elif entry.name == "advertised.listeners":
            value = self._cluster.advertised_listeners()
        secret = entry.kind.config_type == ConfigType.PASSWORD.name  # Kafka never tells a password's value
        text = None if value is None or secret else entry.kind.text(value)
        given = set(DERIVED_FROM.get(entry.name, (entry.name,))) & self._settings.given
        source = ConfigSource.STATIC_BROKER_CONFIG if given else ConfigSource.DEFAULT_CONFIG
        return [BrokerConfig(name, text, source, ConfigType[entry.kind.config_type], entry.help)
                for name in (entry.name, *entry.synonyms)]
