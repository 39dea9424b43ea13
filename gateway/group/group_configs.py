"""Group configs (Kafka 4's GROUP config resources): a consumer group's own session timeout and
heartbeat interval, in place of the broker's group.consumer.* settings.

A group may have configs before it exists and keeps them when it is deleted,
as in Kafka, where they live in the cluster's metadata, not in the group.
Kafka's share.* group configs are not taken: the gateway serves no share
groups (KIP-932), so they could never act, and a name it does not know is
refused as Kafka refuses one.

A group's overrides are checked as Kafka's controller checks them: the whole
set a change leaves, over the broker's settings, each value an INT of at
least 1 within the broker's bounds, and the session timeout longer than the
heartbeat interval. Each change is journaled as the group's whole set (none:
the group has no configs left), so replay keeps the last entry of each. In a
cluster of gateways the controller alone journals them and shares them after
every change; every other gateway mirrors them and forwards the changes it is
sent to the controller, which checks them against its own state.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import trio

from gateway.kafka_error import KafkaError
from gateway.settings.kinds import Integer, NotAllowed
from gateway.settings.table import BrokerSettings
from gateway.storage.journal import Journal
from gateway.storage.journal_sharing import JournaledState, JournalSharing
from protocol.kafka.error_codes import ErrorCode

ENTRY = "group_config"
VALUE_KIND = Integer(1)  # Kafka's INT with atLeast(1)


@dataclass(frozen=True)
class GroupConfig:
    name: str
    setting: str  # the broker setting a group without the config follows
    low: str  # the broker settings that bound it
    high: str
    doc: str


SESSION_TIMEOUT = GroupConfig(
    "consumer.session.timeout.ms", "group.consumer.session.timeout.ms", "group.consumer.min.session.timeout.ms",
    "group.consumer.max.session.timeout.ms",
    "Silence after which a member of this consumer-protocol group is fenced and its partitions reassigned.")
HEARTBEAT_INTERVAL = GroupConfig(
    "consumer.heartbeat.interval.ms", "group.consumer.heartbeat.interval.ms",
    "group.consumer.min.heartbeat.interval.ms", "group.consumer.max.heartbeat.interval.ms",
    "How often the members of this consumer-protocol group are told to heartbeat.")
GROUP_CONFIGS = {config.name: config for config in (SESSION_TIMEOUT, HEARTBEAT_INTERVAL)}  # Kafka's order


ConfigValue = Callable[[str, GroupConfig], int]  # a group's value of a config


def broker_values(settings: BrokerSettings) -> ConfigValue:
    """Every group's values where no group has configs: the broker's settings."""
    return lambda group_id, config: setting_value(settings, config.setting)


def invalid(message: str) -> KafkaError:
    return KafkaError(ErrorCode.INVALID_CONFIG, message)


def setting_value(settings: BrokerSettings, setting: str) -> int:
    return getattr(settings, setting.replace(".", "_"))


def checked(overrides: dict[str, str], settings: BrokerSettings) -> dict[str, str]:
    """A group's overrides as stored (each value in Kafka's spelling), or Kafka's refusal raised."""
    for name in overrides:
        if name not in GROUP_CONFIGS:
            raise invalid(f"Unknown group config name: {name}")
    values = {}
    for config in GROUP_CONFIGS.values():
        text = overrides.get(config.name)
        try:
            values[config] = setting_value(settings, config.setting) if text is None else VALUE_KIND.parse(text)
        except NotAllowed:
            raise invalid(VALUE_KIND.config_error(config.name, text)) from None
    for config in (HEARTBEAT_INTERVAL, SESSION_TIMEOUT):  # Kafka checks the interval's bounds first
        if values[config] < setting_value(settings, config.low):
            raise invalid(f"{config.name} must be greater than or equal to {config.low}")
        if values[config] > setting_value(settings, config.high):
            raise invalid(f"{config.name} must be less than or equal to {config.high}")
    if values[SESSION_TIMEOUT] <= values[HEARTBEAT_INTERVAL]:
        raise invalid(f"{SESSION_TIMEOUT.name} must be greater than {HEARTBEAT_INTERVAL.name}")
    return {name: VALUE_KIND.text(values[GROUP_CONFIGS[name]]) for name in overrides}


class GroupConfigs(JournaledState):
    """Every group's config overrides, durable in the `group_configs` journal."""

    ENTRY = ENTRY

    def __init__(self, journal: Journal, settings: BrokerSettings, sharing: JournalSharing | None = None):
        super().__init__(journal, sharing)
        self.settings = settings
        self.overrides: dict[str, dict[str, str]] = {}
        self._lock = trio.Lock()

    def _apply(self, entry: dict) -> None:
        if entry["configs"]:
            self.overrides[entry["group"]] = entry["configs"]
        else:
            self.overrides.pop(entry["group"], None)

    def _snapshot(self) -> list[dict]:
        return [_entry(group, configs) for group, configs in self.overrides.items()]

    def _clear(self) -> None:
        self.overrides = {}

    def of(self, group_id: str) -> dict[str, str]:
        return self.overrides.get(group_id, {})

    def value(self, group_id: str, config: GroupConfig) -> int:
        """The group's value of a config: its override, else the broker's setting."""
        text = self.of(group_id).get(config.name)
        return setting_value(self.settings, config.setting) if text is None else int(text)

    def groups(self) -> list[str]:
        return list(self.overrides)

    async def alter(self, group_id: str, changes: dict[str, str | None], *, replace: bool,
                    validate_only: bool) -> None:
        """Set (a value) or remove (None) configs of a group (`replace`: every other one removed too),
        once checked and, unless `validate_only`, journaled."""
        await self.changed({"group": group_id, "changes": changes, "replace": replace,
                            "validate_only": validate_only})

    async def apply_forwarded(self, change: dict) -> dict:
        """Check, journal and apply a change: one this gateway was sent, or (the controller) another gateway."""
        async with self._lock:  # checked against the state the changes before it left
            group_id = change["group"]
            configs = {} if change["replace"] else dict(self.of(group_id))
            for name, value in change["changes"].items():
                if value is None:
                    configs.pop(name, None)
                else:
                    configs[name] = value
            configs = checked(configs, self.settings)
            if not change["validate_only"]:
                entry = _entry(group_id, configs)
                await self.journal.write(entry)
                self._apply(entry)
                await self._share()
        return {}


def _entry(group_id: str, configs: dict[str, str]) -> dict:
    return {"type": ENTRY, "group": group_id, "configs": configs}
