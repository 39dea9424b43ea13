"""Topic configs the gateway honours, with Kafka's names, types and defaults.

A topic's value for a config is its own override, else the broker setting
it inherits (Kafka's "synonyms", most specific first). A topic config takes
the values its broker setting takes. Configs Kafka has but the gateway does
not implement are refused (INVALID_CONFIG) rather than accepted and ignored.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gateway.settings.declaration import declared
from gateway.settings.kinds import Kind, NotAllowed, long
from gateway.settings.table import BrokerSettings

BROKER_SETTINGS = {entry.name: entry for entry in declared(BrokerSettings)}


class InvalidConfig(ValueError):
    """A config name or value the gateway does not accept."""


@dataclass(frozen=True)
class TopicConfig:
    name: str
    synonyms: tuple[str, ...]  # the broker settings it inherits, most specific first
    doc: str
    inherit: Callable[[BrokerSettings], object] | None = None  # when the first synonym alone does not say
    kind: Kind | None = None  # when the first synonym's kind allows more or less

    @property
    def value_kind(self) -> Kind:
        return self.kind or BROKER_SETTINGS[self.synonyms[0]].kind

    def inherited(self, settings: BrokerSettings) -> str:
        """The value a topic without an override has."""
        if self.inherit is not None:
            return self.value_kind.text(self.inherit(settings))
        entry = BROKER_SETTINGS[self.synonyms[0]]
        return entry.kind.text(getattr(settings, entry.attribute))

    def check(self, text: str) -> str:
        """The value as stored: checked, in Kafka's spelling."""
        try:
            return self.value_kind.text(self.value_kind.parse(text))
        except NotAllowed as exc:
            raise InvalidConfig(str(exc)) from None


TOPIC_CONFIGS = {c.name: c for c in (
    TopicConfig("cleanup.policy", ("log.cleanup.policy",),
                "Only delete is supported: old segments are removed by retention."),
    TopicConfig("compression.type", ("compression.type",),
                "Codec batches are stored with: producer keeps the producer's, else batches with another codec "
                "are recompressed (uncompressed, gzip, snappy, lz4, zstd)."),
    TopicConfig("compression.gzip.level", ("compression.gzip.level",),
                "Level of gzip recompression: 1 to 9, or -1 for zlib's default."),
    TopicConfig("compression.lz4.level", ("compression.lz4.level",), "Level of lz4 recompression: 1 to 17."),
    TopicConfig("compression.zstd.level", ("compression.zstd.level",), "Level of zstd recompression: -131072 to 22."),
    TopicConfig("max.message.bytes", ("message.max.bytes",), "Largest record batch a produce may append."),
    TopicConfig("message.timestamp.type", ("log.message.timestamp.type",),
                "Whether records keep the producer's timestamps or get the append time."),
    TopicConfig("min.insync.replicas", ("min.insync.replicas",),
                "Stores that must hold a batch before an acks=all produce succeeds."),
    TopicConfig("retention.bytes", ("log.retention.bytes",),
                "Bytes a partition keeps before its oldest batches are removed; -1 for no limit."),
    TopicConfig("retention.ms", ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
                "How long batches are kept; -1 for ever.", inherit=lambda s: s.retention_ms, kind=long(-1)),
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
