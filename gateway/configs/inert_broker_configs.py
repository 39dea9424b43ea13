"""Kafka 4.0's dynamic broker configs that mean nothing here: accepted, checked and stored as Kafka does,
described with Kafka's defaults, and inert (each `why` says why; the README lists them).

They are DynamicBrokerConfig.AllDynamicConfigs' names the gateway has no setting for (its thread pools,
log cleaner, metrics reporters, SSL and SASL/Kerberos listener configs, producer-state and remote-storage
configs) and the broker quotas of DynamicConfig.Broker (replication throttles), which are no KafkaConfig
entry: Kafka describes those only once set, as read-only. A change of a thread count is refused as
Kafka's thread pools refuse it (DynamicThreadPool, the cleaner's, the acceptor's, the remote log
manager's): not below 1, half or above double the count in effect, in the words Kafka's ConfigAdminManager
sends for any reconfiguration that fails.
"""

from __future__ import annotations

from dataclasses import dataclass

from gateway.kafka_error import KafkaError
from gateway.settings.kinds import Boolean, ClassName, Integer, Kind, Names, Real, Short, Text, long
from protocol.kafka.error_codes import ErrorCode

INFINITE = float("inf")
NUMBER = Real(-INFINITE, INFINITE)
LONG_MAX = str(2**63 - 1)


@dataclass(frozen=True)
class InertConfig:
    name: str
    kind: Kind
    default: str | None  # Kafka's default as Kafka writes it; None: null
    why: str
    per_broker: bool = False  # Kafka refuses it at the cluster default
    threads: bool = False  # a thread count, changed by half to double
    kafka_config: bool = True  # a KafkaConfig entry, described with its default when unset


THREADS = "the gateway runs on trio tasks, without Kafka's thread pools"
NO_CLEANER = "the stores compact partitions themselves, without Kafka's log cleaner"
NO_JMX = "the gateway has no Java metrics reporters: it logs through structlog"
NO_KERBEROS = "the gateway offers no GSSAPI (Kerberos) and no SASL/OAUTHBEARER login of its own"
NO_INTER_BROKER = "gateways share state through the mesh and CHP, not broker-to-broker Kafka connections"
JAVA_SSL = "the gateway's TLS is Python's ssl module, without Java's providers or engines"
NO_TIERS = "the gateway has no tiered storage: the stores keep every partition whole"
NO_FETCHERS = "the stores replicate by publish and subscribe, not by followers fetching from a leader"

INERT_CONFIGS = {config.name: config for config in (
    InertConfig("num.io.threads", Integer(1), "8", THREADS, threads=True),
    InertConfig("num.network.threads", Integer(1), "3", THREADS, threads=True),
    InertConfig("num.replica.fetchers", Integer(), "1", NO_FETCHERS, threads=True),
    InertConfig("num.recovery.threads.per.data.dir", Integer(1), "2", THREADS, threads=True),
    InertConfig("background.threads", Integer(1), "10", THREADS, threads=True),
    InertConfig("log.cleaner.threads", Integer(0), "1", NO_CLEANER, threads=True),
    InertConfig("log.cleaner.io.buffer.load.factor", NUMBER, "0.9", NO_CLEANER),
    InertConfig("log.cleaner.io.buffer.size", Integer(0), "524288", NO_CLEANER),
    InertConfig("log.cleaner.io.max.bytes.per.second", NUMBER, "1.7976931348623157E308", NO_CLEANER),
    InertConfig("metric.reporters", Names(), "org.apache.kafka.common.metrics.JmxReporter", NO_JMX),
    InertConfig("principal.builder.class", ClassName(),
                "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder",
                "principals are built by the gateway's own rules (ssl.principal.mapping.rules)", per_broker=True),
    InertConfig("ssl.provider", Text(), None, JAVA_SSL, per_broker=True),
    InertConfig("ssl.keymanager.algorithm", Text(), "SunX509", JAVA_SSL, per_broker=True),
    InertConfig("ssl.trustmanager.algorithm", Text(), "PKIX", JAVA_SSL, per_broker=True),
    InertConfig("ssl.secure.random.implementation", Text(), None, JAVA_SSL, per_broker=True),
    InertConfig("ssl.engine.factory.class", ClassName(), None, JAVA_SSL, per_broker=True),
    InertConfig("sasl.mechanism.inter.broker.protocol", Text(), "GSSAPI", NO_INTER_BROKER, per_broker=True),
    InertConfig("sasl.kerberos.service.name", Text(), None, NO_KERBEROS, per_broker=True),
    InertConfig("sasl.kerberos.kinit.cmd", Text(), "/usr/bin/kinit", NO_KERBEROS, per_broker=True),
    InertConfig("sasl.kerberos.ticket.renew.window.factor", NUMBER, "0.8", NO_KERBEROS, per_broker=True),
    InertConfig("sasl.kerberos.ticket.renew.jitter", NUMBER, "0.05", NO_KERBEROS, per_broker=True),
    InertConfig("sasl.kerberos.min.time.before.relogin", long(), "60000", NO_KERBEROS, per_broker=True),
    InertConfig("sasl.kerberos.principal.to.local.rules", Names(), "DEFAULT", NO_KERBEROS, per_broker=True),
    InertConfig("sasl.login.refresh.window.factor", NUMBER, "0.8", NO_KERBEROS, per_broker=True),
    InertConfig("sasl.login.refresh.window.jitter", NUMBER, "0.05", NO_KERBEROS, per_broker=True),
    InertConfig("sasl.login.refresh.min.period.seconds", Short(), "60", NO_KERBEROS, per_broker=True),
    InertConfig("sasl.login.refresh.buffer.seconds", Short(), "300", NO_KERBEROS, per_broker=True),
    InertConfig("producer.id.expiration.ms", Integer(1), "86400000",
                "the partitions' producer state keeps a producer id's last batches without expiring idle ids"),
    InertConfig("transaction.partition.verification.enable", Boolean(), "true",
                "where the gateway coordinates a transactional id, a batch is always checked against its transaction"),
    InertConfig("remote.log.index.file.cache.total.size.bytes", long(1), "1073741824", NO_TIERS),
    InertConfig("remote.fetch.max.wait.ms", Integer(1), "500", NO_TIERS),
    InertConfig("remote.log.manager.copy.max.bytes.per.second", long(1), LONG_MAX, NO_TIERS),
    InertConfig("remote.log.manager.fetch.max.bytes.per.second", long(1), LONG_MAX, NO_TIERS),
    InertConfig("remote.list.offsets.request.timeout.ms", long(1), "30000", NO_TIERS),
    InertConfig("remote.log.manager.copier.thread.pool.size", Integer(1), "10", NO_TIERS, threads=True),
    InertConfig("remote.log.manager.expiration.thread.pool.size", Integer(1), "10", NO_TIERS, threads=True),
    InertConfig("remote.log.reader.threads", Integer(1), "10", NO_TIERS, threads=True),
    InertConfig("leader.replication.throttled.rate", long(0), LONG_MAX, NO_FETCHERS, kafka_config=False),
    InertConfig("follower.replication.throttled.rate", long(0), LONG_MAX, NO_FETCHERS, kafka_config=False),
    InertConfig("replica.alter.log.dirs.io.max.bytes.per.second", long(0), LONG_MAX,
                "a store keeps its partitions in one directory", kafka_config=False),
)}


def doc(config: InertConfig) -> str:
    return f"Accepted; has no effect here because {config.why}."


def in_effect(values: dict[str, str], config: InertConfig) -> str | None:
    """The config's value under the dynamic values in effect, else Kafka's default."""
    return values.get(config.name, config.default)


def check_thread_counts(current: dict[str, str], new: dict[str, str]) -> None:
    """Kafka's thread pools' checks of a changed count, against the count in effect (Java's integer halves)."""
    for config in INERT_CONFIGS.values():
        if not config.threads:
            continue
        old, count = int(in_effect(current, config)), int(in_effect(new, config))
        if count != old and (count <= 0 or count < old // 2 or count > old * 2):
            raise KafkaError(ErrorCode.INVALID_REQUEST, "Invalid dynamic configuration")
