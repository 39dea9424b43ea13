"""The dynamic broker configs of the cluster, durable in the gateway's `configs` journal.

Each change is journaled as the resource's whole set of dynamic configs (the
cluster default "" or one node's, by its id; none: the resource has none),
so replay keeps the last entry of each, as Kafka's metadata log keeps its
ConfigRecords. What this gateway runs with is its static settings, over them
the cluster default's configs, over those its own node's (`effective`);
every watcher is told the new settings after each change, and the
listeners' TLS (listener_tls) its dynamic configs, which it checks first when
this node's change it would serve. In a cluster of gateways (`sharing`) the
controller alone journals the changes and shares the resources after each;
every other gateway mirrors them and forwards the changes it is sent to the
controller, as the ACLs are kept, once checked here as Kafka's broker checks
a change of its own configs before it forwards it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Protocol

import structlog
import trio

from gateway.configs.dynamic_config_rules import (
    DEFAULT,
    LIVE,
    SETTINGS,
    changed,
    check_applied,
    checked,
    loggable,
    parsed,
)
from gateway.configs.inert_broker_configs import check_thread_counts
from gateway.settings.table import BrokerSettings
from gateway.storage.journal import Journal
from gateway.storage.journal_sharing import JournaledState, JournalSharing

log = structlog.get_logger()
ENTRY = "broker_configs"

Operations = list[tuple[str, int, str | None]]  # IncrementalAlterConfigs' (name, operation, value)


class ListenerReconfigurable(Protocol):
    """What serves listeners from this node's dynamic configs in effect (the listeners' TLS)."""

    def check(self, configs: dict[str, str]) -> None:
        """KafkaError if these configs cannot be served."""

    def reconfigure(self, configs: dict[str, str]) -> None:
        """Serve new connections with these configs."""


class DynamicConfigs(JournaledState):
    def __init__(self, journal: Journal, static: BrokerSettings, sharing: JournalSharing | None = None,
                 listener_tls: ListenerReconfigurable | None = None):
        super().__init__(journal, sharing)
        self.static = static
        self.node = str(static.node_id)
        self.listener_tls = listener_tls
        self.resources: dict[str, dict[str, str]] = {}  # "" or a node id -> its dynamic configs
        self.effective = static
        self.watchers: list[Callable[[BrokerSettings], None]] = []
        self._lock = trio.Lock()

    ENTRY = ENTRY

    def _replay(self, entries: list[dict]) -> None:
        super()._replay(entries)
        self._reconfigure()

    def _snapshot(self) -> list[dict]:
        return [_entry(resource, configs) for resource, configs in self.resources.items()]

    def _clear(self) -> None:
        self.resources = {}

    def configs(self, resource: str) -> dict[str, str]:
        return self.resources.get(resource, {})

    async def alter(self, resource: str, *, replaced: dict[str, str] | None = None,
                    operations: Operations = (), validate_only: bool = False) -> None:
        """Replace a resource's dynamic configs (AlterConfigs) or change them (IncrementalAlterConfigs),
        once checked and journaled; KafkaError as Kafka refuses the change."""
        if self.follows:
            if resource == self.node:
                self._changed(resource, replaced, operations)
            await self.forwarded({"resource": resource, "replaced": replaced, "operations": list(operations),
                                  "validate_only": validate_only})
            return
        async with self._lock:
            stored = self._changed(resource, replaced, operations)
            if validate_only:
                return
            await self.journal.write(_entry(resource, stored))
            self._apply(_entry(resource, stored))
            self._reconfigure()
            await self._share()
        log.info("broker_configs_altered", resource=resource or "<default>", configs=loggable(stored))

    def _changed(self, resource: str, replaced: dict[str, str] | None, operations: Operations) -> dict[str, str]:
        """The resource's dynamic configs after the change, checked as Kafka checks them (the listeners' TLS
        only by the node it serves)."""
        configs = changed(self.configs(resource), operations) if replaced is None else replaced
        stored = checked(configs, per_broker=resource != DEFAULT)
        resources = {**self.resources, resource: stored}
        check_applied(self.effective, self._applied(resources))
        if self.listener_tls is not None and resource == self.node:
            self.listener_tls.check(self.in_effect(resources))
        check_thread_counts(self.in_effect(self.resources), self.in_effect(resources))
        return stored

    async def apply_forwarded(self, change: dict) -> dict:
        """The controller: a change another gateway of the cluster was sent."""
        await self.alter(change["resource"], replaced=change["replaced"],
                         operations=[tuple(operation) for operation in change["operations"]],
                         validate_only=change["validate_only"])
        return {}

    def _apply(self, entry: dict) -> None:
        resource, configs = entry["resource"], entry["configs"]
        if configs:
            self.resources[resource] = configs
        else:
            self.resources.pop(resource, None)

    def _applied(self, resources: dict[str, dict[str, str]]) -> BrokerSettings:
        """The settings this gateway runs with under these resources' configs. A config a later version
        no longer applies live is left out, as Kafka ignores invalid dynamic configs it replays."""
        return dataclasses.replace(self.static, **{
            SETTINGS[name].attribute: parsed(name, text) for name, text in self.in_effect(resources).items()
            if name in LIVE})

    def in_effect(self, resources: dict[str, dict[str, str]] | None = None) -> dict[str, str]:
        """The dynamic configs this gateway runs with (its own over the cluster default's)."""
        resources = self.resources if resources is None else resources
        return {**resources.get(DEFAULT, {}), **resources.get(self.node, {})}

    def _reconfigure(self) -> None:
        """Work out the settings this gateway runs with and tell the watchers."""
        self.effective = self._applied(self.resources)
        for watcher in self.watchers:
            watcher(self.effective)
        if self.listener_tls is not None:
            self.listener_tls.reconfigure(self.in_effect())


def _entry(resource: str, configs: dict[str, str]) -> dict:
    return {"type": ENTRY, "resource": resource, "configs": configs}
