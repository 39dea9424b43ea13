"""Topic configs the gateway honours, with Kafka's names, types and defaults.

A topic's value for a config is its own override, else the broker setting
it inherits (Kafka's "synonyms", most specific first; a dynamic broker
config of it wins over the static one, gateway/configs/dynamic_configs.py),
else Kafka's default for the few without a broker setting. A topic config takes the values its
broker setting takes. Every topic config of Kafka 4 is accepted; those that
mean nothing here are inert (their doc says why, the README lists them),
while a config the gateway honours takes only the values it honours.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gateway.settings.declaration import declared
from gateway.settings.kinds import Boolean, Kind, NotAllowed, ReplicaList, long
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
    kind: Kind | None = None  # when the first synonym's kind allows more or less, or there is none
    default: str = ""  # Kafka's default, for a config without a broker setting

    @property
    def value_kind(self) -> Kind:
        return self.kind or BROKER_SETTINGS[self.synonyms[0]].kind

    def inherited(self, settings: BrokerSettings) -> str:
        """The value a topic without an override has."""
        if self.inherit is not None:
            return self.value_kind.text(self.inherit(settings))
        if not self.synonyms:
            return self.default
        entry = BROKER_SETTINGS[self.synonyms[0]]
        return entry.kind.text(getattr(settings, entry.attribute))

    def check(self, text: str) -> str:
        """The value as stored: checked, in Kafka's spelling; refused in Kafka's words."""
        try:
            return self.value_kind.text(self.value_kind.parse(text))
        except NotAllowed:
            raise InvalidConfig(self.value_kind.config_error(self.name, text)) from None


INERT = "Accepted; has no effect here because "
NO_TIERS = INERT + "the gateway has no tiered storage: the stores keep every partition whole."
THROTTLE = INERT + "the stores replicate by publish and subscribe, not by followers fetching from a leader."


TOPIC_CONFIGS = {c.name: c for c in (
    TopicConfig("cleanup.policy", ("log.cleanup.policy",),
                "delete: old batches go by retention; compact: the stores keep the newest record of each key; "
                "compact,delete: both; empty: neither, batches are kept for ever."),
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
    TopicConfig("segment.bytes", ("log.segment.bytes",),
                "Size of a log segment: a compacted partition's active segment, never cleaned, rolls at it "
                "(the stores cut their own files by store.segment.bytes)."),
    TopicConfig("segment.ms", ("log.roll.ms", "log.roll.hours"),
                "Time after which a compacted partition's active segment rolls and becomes cleanable.",
                inherit=lambda s: s.segment_ms, kind=long(1)),
    TopicConfig("segment.jitter.ms", ("log.roll.jitter.ms", "log.roll.jitter.hours"),
                "Random jitter subtracted from segment.ms. " + INERT + "segments are not rolled by time.",
                inherit=lambda s: s.segment_jitter_ms, kind=long(0)),
    TopicConfig("segment.index.bytes", ("log.index.size.max.bytes",),
                "Size of a segment's offset index. " + INERT + "each gateway indexes offsets in memory."),
    TopicConfig("index.interval.bytes", ("log.index.interval.bytes",),
                "Bytes between offset index entries. " + INERT + "each gateway indexes every batch."),
    TopicConfig("flush.messages", ("log.flush.interval.messages",),
                "Records between forced fsyncs. " + INERT + "the stores fsync as store.fsync says."),
    TopicConfig("flush.ms", ("log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
                "Time between forced fsyncs. " + INERT + "the stores fsync as store.fsync says.",
                inherit=lambda s: s.flush_ms, kind=long(0)),
    TopicConfig("file.delete.delay.ms", ("log.segment.delete.delay.ms",),
                "Delay before a deleted segment's file is removed. " + INERT + "the stores remove files at once."),
    TopicConfig("delete.retention.ms", ("log.cleaner.delete.retention.ms",),
                "How long tombstones of a compacted topic are kept once they are cleanable."),
    TopicConfig("min.compaction.lag.ms", ("log.cleaner.min.compaction.lag.ms",),
                "Least time a record stays uncompacted."),
    TopicConfig("max.compaction.lag.ms", ("log.cleaner.max.compaction.lag.ms",),
                "Most time a record stays uncompacted, whatever the dirty ratio."),
    TopicConfig("min.cleanable.dirty.ratio", ("log.cleaner.min.cleanable.ratio",),
                "Share of a log that must be uncompacted before it is cleaned."),
    TopicConfig("preallocate", ("log.preallocate",),
                "Whether segment files are preallocated. " + INERT + "the stores reserve space ahead of "
                "each active segment themselves."),
    TopicConfig("unclean.leader.election.enable", ("unclean.leader.election.enable",),
                "Whether an out-of-sync replica may become leader. " + INERT + "every store holds what was "
                "acknowledged to acks=all producers, and any gateway can lead."),
    TopicConfig("message.timestamp.before.max.ms", ("log.message.timestamp.before.max.ms",),
                "How far before the broker's clock a record's CreateTime timestamp may be."),
    TopicConfig("message.timestamp.after.max.ms", ("log.message.timestamp.after.max.ms",),
                "How far after the broker's clock a record's CreateTime timestamp may be."),
    TopicConfig("message.timestamp.difference.max.ms", ("log.message.timestamp.difference.max.ms",),
                "Deprecated (Kafka 3.6): how far from the broker's clock a CreateTime timestamp may be, "
                "for message.timestamp.before.max.ms or message.timestamp.after.max.ms left at Long.MAX_VALUE."),
    TopicConfig("message.downconversion.enable", ("log.message.downconversion.enable",),
                "Whether old fetch versions get converted batches. " + INERT + "clients get batches in the one "
                "format they are stored in (a no-op in Kafka 4 too)."),
    TopicConfig("local.retention.ms", ("log.local.retention.ms",),
                "How long batches stay on local disk before tiered storage alone keeps them. " + NO_TIERS),
    TopicConfig("local.retention.bytes", ("log.local.retention.bytes",),
                "Bytes kept on local disk before tiered storage alone keeps them. " + NO_TIERS),
    TopicConfig("remote.storage.enable", (), "Whether the topic is tiered. " + NO_TIERS, kind=Boolean(),
                default="false"),
    TopicConfig("remote.log.copy.disable", (), "Whether copying to tiered storage stops. " + NO_TIERS,
                kind=Boolean(), default="false"),
    TopicConfig("remote.log.delete.on.disable", (), "Whether tiered data goes when tiering is disabled. "
                + NO_TIERS, kind=Boolean(), default="false"),
    TopicConfig("leader.replication.throttled.replicas", (),
                "Replicas whose replication is throttled on the leader side. " + THROTTLE, kind=ReplicaList()),
    TopicConfig("follower.replication.throttled.replicas", (),
                "Replicas whose replication is throttled on the follower side. " + THROTTLE, kind=ReplicaList()),
)}


def topic_config(name: str) -> TopicConfig:
    config = TOPIC_CONFIGS.get(name)
    if config is None:
        raise InvalidConfig(f"Unknown topic config name: {name}")
    return config


def checked_overrides(configs: dict[str, str | None]) -> dict[str, str]:
    """Validated topic overrides; InvalidConfig names the null ones, else the first bad entry, as Kafka does."""
    nulls = [name for name, value in configs.items() if value is None]
    if nulls:
        raise InvalidConfig(f"Null value not supported for topic configs: {','.join(nulls)}")
    return {name: topic_config(name).check(value) for name, value in configs.items()}
