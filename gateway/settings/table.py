"""Every setting of every command, declared once: name, kind, default, help, commands.

Kafka's broker config names wherever Kafka has one (so the lines of an
operator's server.properties carry over), the Dafka reference's keys for the
mesh, and names of our own only for what neither has. The sections group
what each part of the program reads; `Settings` holds them all.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from gateway.settings.declaration import EVERY, MESH_NODES, Command, check_values, declared, setting
from gateway.settings.jaas import JaasConfig
from gateway.settings.kinds import (
    Address,
    Addresses,
    Boolean,
    Choice,
    ChoiceList,
    Directory,
    FilePath,
    HostCounts,
    HostPorts,
    Integer,
    IntegerOr,
    Names,
    NotAllowed,
    Nullable,
    Password,
    Real,
    Secret,
    Text,
    long,
)
from gateway.settings.listeners import (
    TLS_PROTOCOLS,
    Listener,
    Listeners,
    ProtocolMap,
    advertised_listeners,
    bound_listeners,
)
from gateway.settings.principal_rules import DEFAULT_RULES, PrincipalRule, PrincipalRules

G, S = Command.GATEWAY, Command.STORE
SERVERS = G | S | Command.TOWER | Command.CHP
PORT = Integer(0, 65535)
POSITIVE = Integer(1)
MS = BYTES = POSITIVE
UNLIMITED_OR = long(-1)  # -1: no limit
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
KAFKA_PROTOCOL_MAP = (("PLAINTEXT", "PLAINTEXT"), ("SSL", "SSL"), ("SASL_PLAINTEXT", "SASL_PLAINTEXT"),
                      ("SASL_SSL", "SASL_SSL"))

# Kafka's authorizer classes (KRaft's and the older ZooKeeper one): both mean the gateway's own.
AUTHORIZERS = ("org.apache.kafka.metadata.authorizer.StandardAuthorizer", "kafka.security.authorizer.AclAuthorizer")


def kafka(kind, default, help: str, commands: Command = G, **more):
    """A setting with Kafka's broker config name."""
    return setting(kind, default, help, commands, kafka=True, **more)


@dataclass(frozen=True)
class BrokerSettings:
    """The Kafka broker the gateway is to clients, and the defaults its topics inherit."""

    node_id: int = kafka(Integer(0), 0, "this gateway's broker id", synonyms=("broker.id",))
    broker_rack: str | None = kafka(Nullable(inner=Text(empty=False)), None, "rack of this gateway, told to clients "
                                                                         "in Metadata and DescribeCluster")
    cluster_id: str = setting(Text(empty=False), "dafka-gateway",
                              "cluster id told to clients; it also names the gateway's journals on the mesh", G)
    listeners: tuple[Listener, ...] = kafka(
        Listeners(), (), "where clients connect, NAME://HOST:PORT,...; empty: PLAINTEXT://host.name:port")
    host_name: str = kafka(Text(), "127.0.0.1", "host of the PLAINTEXT listener when listeners is empty "
                                                "(empty: every interface)")
    port: int = kafka(PORT, 9092, "port of the PLAINTEXT listener when listeners is empty")
    advertised_listeners: tuple[Listener, ...] = kafka(
        Listeners(), (), "what clients are told to connect to, per listener name; empty: the listeners")
    listener_security_protocol_map: tuple[tuple[str, str], ...] = kafka(
        ProtocolMap(), KAFKA_PROTOCOL_MAP, "the security protocol of each listener name")
    log_dirs: Path = kafka(Directory(), Path("data"), "directory of the embedded stores' data",
                           synonyms=("log.dir",))
    socket_request_max_bytes: int = kafka(BYTES, 104857600, "largest request accepted, checked before its body "
                                                            "is read")
    max_connections: int = kafka(Integer(0), 2147483647, "client connections served at once; more are closed "
                                                         "as they come")
    max_connections_per_ip: int = kafka(Integer(0), 2147483647, "client connections from one IP address served "
                                                                "at once; more are closed as they come")
    max_connections_per_ip_overrides: tuple[tuple[str, int], ...] = kafka(
        HostCounts(), (), "max.connections.per.ip of particular hosts or addresses, HOST:COUNT,...")
    max_connection_creation_rate: int = kafka(Integer(0), 2147483647, "new client connections accepted per "
                                                                       "second over all listeners; faster ones wait "
                                                                       "to be accepted")
    connections_max_idle_ms: int = kafka(long(1), 600000, "idle time after which a client connection is closed")
    request_receive_timeout_ms: int = setting(long(1), 30000, "time a request may take to arrive whole from its "
                                                              "first bytes, else its connection is closed (Kafka "
                                                              "has no such setting)", G)
    num_partitions: int = kafka(POSITIVE, 1, "partitions of topics created without a partition count")
    default_replication_factor: int = kafka(POSITIVE, 1, "replication factor of topics created without one")
    min_insync_replicas: int = kafka(POSITIVE, 1, "stores that must hold a batch before acks=all succeeds")
    replica_lag_time_max_ms: int = kafka(POSITIVE, 30000, "a live store that has not taken what was produced this "
                                                          "long ago is out of sync")
    auto_create_topics_enable: bool = kafka(Boolean(), True, "create a topic that a Metadata request names "
                                                             "(as Kafka, never on Produce)")
    message_max_bytes: int = kafka(Integer(0), 1048588, "largest record batch a produce may append")
    queued_max_request_bytes: int = kafka(UNLIMITED_OR, -1, "bytes of requests read and not yet answered, over "
                                                        "all connections; when reached, no socket is read until "
                                                        "some are answered (-1: no limit)")
    log_retention_hours: int = kafka(Integer(-1), 168, "how long batches are kept, in hours (-1: for ever)")
    log_retention_minutes: int | None = kafka(Nullable(inner=Integer(-1)), None,
                                              "as log.retention.hours, in minutes; wins over it")
    log_retention_ms: int | None = kafka(Nullable(inner=UNLIMITED_OR), None,
                                         "as log.retention.hours, in milliseconds; wins over both")
    log_retention_bytes: int = kafka(UNLIMITED_OR, -1, "bytes a partition keeps before its oldest batches go "
                                                  "(-1: no limit)")
    log_retention_check_interval_ms: int = kafka(long(1), 300000, "how often retention moves log start offsets")
    log_flush_offset_checkpoint_interval_ms: int = kafka(long(1), 60000, "how often each partition's offset "
                                                         "index and producer state are checkpointed in log.dirs, "
                                                         "so that start-up reads only the batches after")
    # Defaults of topic configs that have no effect here (see the README's inert topic configs).
    log_segment_bytes: int = kafka(Integer(1048576), 1073741824, "segment.bytes of topics: what a compacted "
                                                                  "partition's active segment holds at most")
    log_roll_ms: int | None = kafka(Nullable(inner=long(1)), None, "segment.ms of topics; wins over log.roll.hours")
    log_roll_hours: int = kafka(POSITIVE, 168, "segment.ms of topics, in hours: the age at which a compacted "
                                               "partition's active segment becomes cleanable")
    log_roll_jitter_ms: int | None = kafka(Nullable(inner=long(0)), None, "segment.jitter.ms of topics; wins over "
                                                                          "log.roll.jitter.hours (inert)")
    log_roll_jitter_hours: int = kafka(Integer(0), 0, "segment.jitter.ms of topics, in hours (inert)")
    log_index_size_max_bytes: int = kafka(Integer(4), 10485760, "segment.index.bytes of topics (inert)")
    log_index_interval_bytes: int = kafka(Integer(0), 4096, "index.interval.bytes of topics (inert)")
    log_flush_interval_messages: int = kafka(long(1), 2**63 - 1, "flush.messages of topics (inert: store.fsync "
                                                                  "decides)")
    log_flush_interval_ms: int | None = kafka(Nullable(inner=long(0)), None, "flush.ms of topics; wins over "
                                                                             "log.flush.scheduler.interval.ms "
                                                                             "(inert)")
    log_flush_scheduler_interval_ms: int = kafka(long(0), 2**63 - 1, "flush.ms of topics (inert: store.fsync "
                                                                      "decides)")
    log_segment_delete_delay_ms: int = kafka(long(0), 60000, "file.delete.delay.ms of topics (inert)")
    log_cleaner_delete_retention_ms: int = kafka(long(0), 86400000, "delete.retention.ms of topics: how long "
                                                                     "tombstones stay once cleanable")
    log_cleaner_min_compaction_lag_ms: int = kafka(long(0), 0, "min.compaction.lag.ms of topics: least age of a "
                                                               "record before it may be cleaned")
    log_cleaner_max_compaction_lag_ms: int = kafka(long(1), 2**63 - 1, "max.compaction.lag.ms of topics: age after "
                                                                       "which a record is cleaned whatever the ratio")
    log_cleaner_min_cleanable_ratio: float = kafka(Real(0.0, 1.0), 0.5, "min.cleanable.dirty.ratio of topics: "
                                                                        "share of a log uncleaned before a pass")
    log_preallocate: bool = kafka(Boolean(), False, "preallocate of topics (inert)")
    unclean_leader_election_enable: bool = kafka(Boolean(), False, "unclean.leader.election.enable of topics "
                                                                   "(inert: every store is a replica)")
    log_message_timestamp_before_max_ms: int = kafka(long(0), 2**63 - 1, "message.timestamp.before.max.ms of "
                                                                          "topics: how old a CreateTime timestamp "
                                                                          "may be")
    log_message_timestamp_after_max_ms: int = kafka(long(0), 3600000, "message.timestamp.after.max.ms of topics: "
                                                                      "how far ahead a CreateTime timestamp may be")
    log_message_timestamp_difference_max_ms: int = kafka(long(0), 2**63 - 1, "message.timestamp.difference.max.ms "
                                                                              "of topics (deprecated): the bound of "
                                                                              "either side left at its maximum")
    log_message_downconversion_enable: bool = kafka(Boolean(), True, "message.downconversion.enable of topics "
                                                                     "(inert, as in Kafka 4)")
    log_local_retention_ms: int = kafka(long(-2), -2, "local.retention.ms of topics (inert: no tiered storage)")
    log_local_retention_bytes: int = kafka(long(-2), -2, "local.retention.bytes of topics (inert)")
    log_message_timestamp_type: str = kafka(Choice(choices=("CreateTime", "LogAppendTime")), "CreateTime",
                                            "whether records keep the producer's timestamp or get the append time")
    log_cleanup_policy: str = kafka(ChoiceList(choices=("compact", "delete"), empty_allowed=True), "delete",
                                    "what happens to old batches: delete (by retention), compact (the newest "
                                    "record of each key kept), both, or neither (empty: kept for ever)")
    compression_type: str = kafka(Choice(choices=("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")),
                                  "producer", "codec topics store batches with; producer: the producer's own, "
                                              "else batches with another are recompressed")
    compression_gzip_level: int = kafka(IntegerOr(1, 9, alone=-1), -1, "gzip level of recompressed batches "
                                                                       "(-1: zlib's default)")
    compression_lz4_level: int = kafka(Integer(1, 17), 9, "lz4 level of recompressed batches")
    compression_zstd_level: int = kafka(Integer(-131072, 22), 3, "zstd level of recompressed batches")
    group_initial_rebalance_delay_ms: int = kafka(Integer(0), 3000, "how long a new classic group waits for "
                                                                    "more members")
    group_min_session_timeout_ms: int = kafka(POSITIVE, 6000, "smallest session timeout a member may ask for")
    group_max_session_timeout_ms: int = kafka(POSITIVE, 1800000, "largest session timeout a member may ask for")
    group_consumer_heartbeat_interval_ms: int = kafka(POSITIVE, 5000, "heartbeat interval of "
                                                                      "group.protocol=consumer members")
    group_consumer_session_timeout_ms: int = kafka(POSITIVE, 45000, "silence after which such a member is fenced")
    group_consumer_min_session_timeout_ms: int = kafka(POSITIVE, 45000, "smallest consumer.session.timeout.ms "
                                                                        "a group config may set")
    group_consumer_max_session_timeout_ms: int = kafka(POSITIVE, 60000, "largest consumer.session.timeout.ms "
                                                                        "a group config may set")
    group_consumer_min_heartbeat_interval_ms: int = kafka(POSITIVE, 5000, "smallest consumer.heartbeat.interval.ms "
                                                                          "a group config may set")
    group_consumer_max_heartbeat_interval_ms: int = kafka(POSITIVE, 15000, "largest consumer.heartbeat.interval.ms "
                                                                           "a group config may set")
    group_consumer_max_size: int = kafka(POSITIVE, 2**31 - 1, "members of one consumer-protocol group at most")
    group_consumer_migration_policy: str = kafka(
        Choice(choices=("disabled", "upgrade", "downgrade", "bidirectional"), ignore_case=True), "bidirectional",
        "which online conversions between classic and consumer groups happen")
    offsets_retention_minutes: int = kafka(POSITIVE, 10080, "how long an empty group's committed offsets are kept")
    offsets_retention_check_interval_ms: int = kafka(long(1), 600000, "how often expired offsets are removed")
    offsets_topic_segment_bytes: int = kafka(Integer(1048576), 104857600, "segment.bytes __consumer_offsets is "
                                                                           "created with")
    transaction_max_timeout_ms: int = kafka(POSITIVE, 900000, "largest transaction.timeout.ms a producer may ask")
    transaction_abort_timed_out_transaction_cleanup_interval_ms: int = kafka(
        POSITIVE, 10000, "how often timed-out transactions are looked for and aborted")
    transaction_state_log_segment_bytes: int = kafka(Integer(1048576), 104857600, "segment.bytes "
                                                                                   "__transaction_state is created with")
    telemetry_max_bytes: int = kafka(POSITIVE, 1048576, "largest client metrics push accepted (KIP-714); "
                                                        "the telemetry APIs are not advertised (as by a broker "
                                                        "without a metrics reporter), so it applies only to a "
                                                        "client that uses them anyway; pushes are dropped")
    embedded_stores: int = setting(Integer(0, 64), 1, "stores the gateway runs itself under log.dirs, each a "
                                                      "process (or in its own, embedded.stores.in.process); 0: "
                                                      "join an existing mesh", G)
    embedded_stores_in_process: bool = setting(Boolean(), False, "run the embedded stores in the gateway's "
                                               "process, records and ACKs passed over inproc: lower latency, "
                                               "but the store's work on the gateway's core", G)
    expected_stores: int = setting(POSITIVE, 1, "stores to wait for at start-up when joining a mesh "
                                                "(embedded.stores 0)", G)
    expected_stores_wait_ms: int = setting(MS, 5000, "once min.insync.replicas stores answer, how long start-up "
                                                     "waits for the rest of expected.stores or embedded.stores", G)
    concurrent_takeovers: int = setting(Integer(1, 1024), 16, "partitions a gateway takes over at once when "
                                        "named their leader (each fenced and read back from the stores)", G)
    tail_bytes_per_partition: int = setting(BYTES, 33554432, "recent bytes of each partition kept in memory "
                                                             "for fetches", G)
    tail_bytes_total: int = setting(BYTES, 1073741824, "recent bytes kept in memory for all partitions "
                                                       "together; each gets an equal share", G)
    read_ahead_bytes_total: int = setting(BYTES, 268435456, "batches read ahead from the stores for consumers "
                                                            "catching up, all partitions together (runs on their "
                                                            "way included): beyond it fetches read from the "
                                                            "stores when they ask", G)
    max_unacked_bytes: int = setting(BYTES, 536870912, "batches no store has taken yet kept in memory; beyond "
                                                       "them produce waits, then REQUEST_TIMED_OUT", G)
    unsent_response_max_bytes: int = setting(BYTES, 4194304, "bytes of responses a connection may hold built "
                                                              "but unsent: once they reach it, the connection is "
                                                              "not read until the client reads, and a Fetch answers "
                                                              "no more than the room left (Kafka has no such "
                                                              "setting)", G)
    journal_compaction_entries: int = setting(POSITIVE, 10000, "entries written since its last snapshot that "
                                                               "compact a journal (metadata, groups, quotas, "
                                                               "transactions)", G)
    journal_compaction_bytes: int = setting(BYTES, 67108864, "bytes written since its last snapshot that "
                                                             "compact a journal", G)
    quota_window_num: int = kafka(POSITIVE, 11, "samples a client quota's rate is measured over")
    quota_window_size_seconds: int = kafka(POSITIVE, 1, "time span of each sample of a client quota's rate")
    authorizer_class_name: str = kafka(
        Choice(("", *AUTHORIZERS)), "", "the authorizer that checks every request against the ACLs: either of "
                                        "Kafka's names turns on the gateway's; empty: none, everything allowed")
    super_users: str = kafka(Text(), "", "principals the authorizer allows everything, User:NAME;User:NAME...")
    allow_everyone_if_no_acl_found: bool = kafka(Boolean(), False, "with an authorizer, whether a resource no "
                                                                   "ACL applies to is open to everyone")
    sasl_enabled_mechanisms: str = kafka(ChoiceList(choices=SASL_MECHANISMS), "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
                                         "SASL mechanisms SASL listeners offer (Kafka's default, GSSAPI, is not "
                                         "served)")
    sasl_jaas_config: str = kafka(JaasConfig(), "", "JAAS login modules of SASL listeners: PlainLoginModule's "
                                                    "user_NAME=\"PASSWORD\" options are the PLAIN users, "
                                                    "OAuthBearerLoginModule's unsecuredValidator* options set the "
                                                    "OAUTHBEARER validator; a file's listener.name.*.sasl."
                                                    "jaas.config lines add theirs (one value serves every SASL "
                                                    "listener)")
    connections_max_reauth_ms: int = kafka(long(0), 0, "lifetime of a SASL session (KIP-368): a client that has not "
                                                       "re-authenticated by then is disconnected at its next "
                                                       "request (0: no limit, but an OAUTHBEARER session still "
                                                       "ends with its token)")
    connection_failed_authentication_delay_ms: int = kafka(Integer(0), 100, "delay before a failed authentication "
                                                                            "is answered and its connection closed")
    delegation_token_secret_key: Secret | None = kafka(
        Password(), None, "key of the delegation tokens' HMACs, the same on every gateway of a cluster; unset: "
                          "delegation tokens are off (their APIs answer DELEGATION_TOKEN_AUTH_DISABLED)")
    delegation_token_max_lifetime_ms: int = kafka(long(1), 604800000, "longest a delegation token lives, "
                                                                       "renewals included")
    delegation_token_expiry_time_ms: int = kafka(long(1), 86400000, "how long a delegation token lives from its "
                                                                     "creation or renewal, at most")
    delegation_token_expiry_check_interval_ms: int = kafka(long(1), 3600000, "how often expired delegation tokens "
                                                                              "are removed")

    def __post_init__(self):
        check_values(self)
        self.bound_listeners()
        self.client_listeners()

    def bound_listeners(self) -> tuple[Listener, ...]:
        """The listeners to bind: `listeners`, or PLAINTEXT on host.name and port."""
        listeners = self.listeners or (Listener("PLAINTEXT", self.host_name, self.port),)
        return bound_listeners(listeners, self.listener_security_protocol_map)

    def security_protocol(self, listener: str) -> str:
        """The security protocol of the listener named `listener`."""
        return dict(self.listener_security_protocol_map)[listener]

    def client_listeners(self) -> tuple[Listener, ...]:
        """What clients are told, one entry per bound listener, in the same order."""
        return advertised_listeners(self.bound_listeners(), self.advertised_listeners)

    @property
    def retention_ms(self) -> int:
        """Kafka's log.retention.ms, else .minutes, else .hours, as milliseconds."""
        if self.log_retention_ms is not None:
            return self.log_retention_ms
        if self.log_retention_minutes is not None:
            return _unlimited_or(self.log_retention_minutes, 60_000)
        return _unlimited_or(self.log_retention_hours, 3_600_000)

    @property
    def segment_ms(self) -> int:
        """Kafka's log.roll.ms, else .hours, as milliseconds."""
        return self.log_roll_ms if self.log_roll_ms is not None else self.log_roll_hours * 3_600_000

    @property
    def segment_jitter_ms(self) -> int:
        """Kafka's log.roll.jitter.ms, else .hours, as milliseconds."""
        if self.log_roll_jitter_ms is not None:
            return self.log_roll_jitter_ms
        return self.log_roll_jitter_hours * 3_600_000

    @property
    def flush_ms(self) -> int:
        """Kafka's log.flush.interval.ms, else log.flush.scheduler.interval.ms."""
        if self.log_flush_interval_ms is not None:
            return self.log_flush_interval_ms
        return self.log_flush_scheduler_interval_ms


def _unlimited_or(value: int, unit_ms: int) -> int:
    return -1 if value < 0 else value * unit_ms


STORE_TYPES = Choice(choices=("JKS", "PKCS12", "PEM"))
TLS_VERSIONS = ("TLSv1.2", "TLSv1.3")


@dataclass(frozen=True)
class SslSettings:
    """TLS of the SSL listeners, with Kafka's PEM settings (KIP-651)."""

    ssl_keystore_type: str = kafka(STORE_TYPES, "JKS", "format of the key store: PEM (the only one served)")
    ssl_keystore_location: str | None = kafka(Nullable(inner=Text()), None, "a PEM file holding the private "
                                                                          "key and its certificate chain")
    ssl_keystore_key: Secret | None = kafka(Password(), None, "the private key, PEM, instead of a file")
    ssl_keystore_certificate_chain: Secret | None = kafka(Password(), None, "the certificate chain, PEM, with "
                                                                            "ssl.keystore.key")
    ssl_key_password: Secret | None = kafka(Password(), None, "password of an encrypted private key")
    ssl_truststore_type: str = kafka(STORE_TYPES, "JKS", "format of the trust store: PEM (the only one served)")
    ssl_truststore_location: str | None = kafka(Nullable(inner=Text()), None, "a PEM file of the CA certificates "
                                                                            "client certificates are checked "
                                                                            "against")
    ssl_truststore_certificates: Secret | None = kafka(Password(), None, "the CA certificates, PEM, instead of "
                                                                         "a file")
    ssl_protocol: str = kafka(Choice(choices=("TLSv1.3", "TLSv1.2", "TLS")), "TLSv1.3",
                              "the highest TLS version offered (TLS: any)")
    ssl_enabled_protocols: str = kafka(ChoiceList(choices=TLS_VERSIONS), "TLSv1.2,TLSv1.3",
                                       "the TLS versions accepted")
    ssl_cipher_suites: tuple[str, ...] = kafka(Names(), (), "TLS 1.2 cipher suites accepted, OpenSSL's names "
                                                           "(empty: OpenSSL's defaults; TLS 1.3 suites are always "
                                                           "OpenSSL's)")
    ssl_client_auth: str = kafka(Choice(choices=("required", "requested", "none")), "none",
                                 "whether clients must (required) or may (requested) present a certificate")
    ssl_endpoint_identification_algorithm: str = kafka(Text(), "https", "host name check of the peer's "
                                                                        "certificate (inert: the gateway makes "
                                                                        "no TLS connections of its own)")
    ssl_allow_dn_changes: bool = kafka(Boolean(), False, "whether a certificate rotated by a dynamic "
                                                         "listener.name.NAME.ssl.* config may change its "
                                                         "distinguished name")
    ssl_allow_san_changes: bool = kafka(Boolean(), False, "whether a certificate rotated by a dynamic "
                                                          "listener.name.NAME.ssl.* config may drop subject "
                                                          "alternative names")
    ssl_principal_mapping_rules: tuple[PrincipalRule, ...] = kafka(
        PrincipalRules(), DEFAULT_RULES, "how a client certificate's subject becomes a principal "
                                         "name, the first matching rule's")
    ssl_handshake_timeout_ms: int = setting(MS, 10000, "time a client has to complete its TLS handshake, else "
                                                       "its connection is closed (Kafka has no such setting)", G)

    def __post_init__(self):
        check_values(self)

    def check_served(self, listener: str, protocol: str) -> None:
        """NotAllowed unless a listener of a TLS protocol can be served with these settings."""
        truststore = (self.ssl_truststore_location, self.ssl_truststore_certificates) != (None, None)
        for name, kind in (("ssl.keystore.type", self.ssl_keystore_type),
                           ("ssl.truststore.type", self.ssl_truststore_type if truststore else "PEM")):
            if kind != "PEM":
                raise NotAllowed(f"listener {listener} uses {protocol}: {name} {kind} is not served; set it to PEM")
        inline = [value is not None for value in (self.ssl_keystore_key, self.ssl_keystore_certificate_chain)]
        if not (all(inline) if self.ssl_keystore_location is None else not any(inline)):
            raise NotAllowed(f"listener {listener} uses {protocol}: give either ssl.keystore.location or both "
                             f"ssl.keystore.key and ssl.keystore.certificate.chain")
        if self.ssl_truststore_location is not None and self.ssl_truststore_certificates is not None:
            raise NotAllowed("give ssl.truststore.location or ssl.truststore.certificates, not both")


# The SSL settings a listener may override under its prefix (Kafka's ListenerName.configPrefix,
# listener.name.<name in lower case>.): those its SSL context is built from.
LISTENER_SSL = {entry.name: entry for entry in declared(SslSettings) if entry.name in {
    "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.key", "ssl.keystore.certificate.chain",
    "ssl.key.password", "ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.certificates",
    "ssl.protocol", "ssl.enabled.protocols", "ssl.cipher.suites", "ssl.client.auth",
    "ssl.endpoint.identification.algorithm"}}


def listener_prefix(listener: str) -> str:
    """Kafka's prefix of a listener's own configs."""
    return f"listener.name.{listener.lower()}."


@dataclass(frozen=True)
class MeshSettings:
    """A node's place on the Dafka mesh, named after the reference nodes' keys."""

    beacon_interval_ms: int = setting(MS, 1000, "milliseconds between a node's beacons (beacon/interval)",
                                      MESH_NODES)
    beacon_timeout_ms: int = setting(MS, 4000, "silence after which a mesh peer expires (beacon/timeout)",
                                     MESH_NODES)
    beacon_sub_address: tuple[str, ...] = setting(Addresses(), ("tcp://127.0.0.1:5556",),
                                                  "each tower's endpoint beacons are sent to (beacon/sub_address, "
                                                  "which names one)", MESH_NODES)
    beacon_pub_address: tuple[str, ...] = setting(Addresses(), ("tcp://127.0.0.1:5557",),
                                                  "each tower's endpoint beacons come from (beacon/pub_address, "
                                                  "which names one)", MESH_NODES)
    beacon_reconnect_backoff_max_ms: int = setting(MS, 5000, "longest wait between a node's attempts to reach a "
                                                             "tower that is down, doubling from 100 ms (each "
                                                             "attempt resolves the tower's host name)", MESH_NODES)
    beacon_address: str = setting(Text(), "", "host advertised to mesh peers; empty: as the tower sees the node "
                                              "(beacon/address)", MESH_NODES)
    mesh_bind_host: str = setting(Text(empty=False), "127.0.0.1", "interface a node's data sockets bind (a mesh "
                                                                  "without CURVE has no authentication); * for "
                                                                  "every one",
                                  MESH_NODES)
    mesh_curve_secret_key_file: Path | None = setting(
        Nullable(inner=FilePath()), None, "the mesh's ZeroMQ certificate (secret key): CURVE on every mesh socket; "
                                          "empty: plaintext, as the C reference nodes",
        MESH_NODES | Command.TOWER | Command.CHP)
    mesh_curve_public_keys_dir: Path | None = setting(
        Nullable(inner=Directory()), None, "directory of the public certificates of the peers admitted to a CURVE "
                                           "mesh", MESH_NODES | Command.TOWER | Command.CHP)
    tower_sub_address: str = setting(Address(), "tcp://127.0.0.1:5556", "where a tower binds the endpoint "
                                                                         "beacons are sent to (tower/sub_address; "
                                                                         "tcp://*:5556 for every interface)",
                                     G | Command.TOWER)
    tower_pub_address: str = setting(Address(), "tcp://127.0.0.1:5557", "where a tower binds the endpoint "
                                                                         "beacons come from (tower/pub_address)",
                                     G | Command.TOWER)
    head_interval_ms: int = setting(MS, 1000, "milliseconds between a producer's HEADs (producer/head_interval)",
                                    G | Command.PRODUCER)
    consumer_offset_reset: str = setting(Choice(choices=("earliest", "latest")), "latest",
                                         "where a consumer starts on a partition new to it (consumer/offset/reset)",
                                         Command.CONSUMER)

    def __post_init__(self):
        check_values(self)
        if (self.mesh_curve_secret_key_file is None) != (self.mesh_curve_public_keys_dir is None):
            raise NotAllowed("mesh.curve.secret.key.file and mesh.curve.public.keys.dir go together")


@dataclass(frozen=True)
class StoreSettings:
    """A Dafka store's log (the gateway passes its own to its embedded stores)."""

    store_db: Path = setting(Directory(), Path("storedb"), "the store's data directory (store/db)", S)
    store_fsync: str = setting(Choice(choices=("batch", "interval")), "batch",
                               "batch: ACK once a batch is on disk; interval: ACK once written, fsync at most "
                               "once per store.fsync.interval.ms", G | S)
    store_fsync_interval_ms: int = setting(MS, 1000, "milliseconds between fsyncs of the interval policy", G | S)
    store_segment_bytes: int = setting(BYTES, 67108864, "bytes of a log segment, the unit retention and "
                                                        "discards delete", G | S)
    store_segment_reserve_max_bytes: int = setting(Integer(0), 4194304, "most disk space an active segment "
                                                   "reserves ahead of its appends (16384 at first, as much again as "
                                                   "it holds later), so that a sync need not commit a new file "
                                                   "size; 0: none",
                                                   G | S)
    store_retention_bytes: int = setting(UNLIMITED_OR, -1, "bytes each partition keeps at least before its oldest "
                                                      "segments go (-1: no limit; __dafka_gateway_* kept)", S)
    store_retention_ms: int = setting(UNLIMITED_OR, -1, "age of a segment's newest record after which it goes "
                                                   "(-1: for ever; __dafka_gateway_* kept)", S)
    store_retention_check_interval_ms: int = setting(long(1), 300000, "how often the store retention is "
                                                                      "applied", S)
    log_cleaner_dedupe_buffer_size: int = kafka(long(1 << 20), 134217728, "memory of the offset map a cleaning "
                                                "pass builds (24 bytes a key, as Kafka counts)", G | S)
    log_cleaner_backoff_ms: int = kafka(long(0), 15000, "how long the cleaner rests when no partition needs "
                                        "cleaning; also how often gateways move what is cleanable", G | S)

    def __post_init__(self):
        check_values(self)


@dataclass(frozen=True)
class ChpSettings:
    """A clustered-hashmap server."""

    chp_host: str = setting(Text(), "127.0.0.1", "interface the CHP server binds (* for every one)", Command.CHP)
    chp_port: int = setting(Integer(1, 65532), 5556, "base port P: snapshots on P, updates on P+1, client "
                                                     "updates on P+2, the Binary Star peer on P+3", Command.CHP)
    chp_hugz_interval_ms: int = setting(MS, 1000, "milliseconds between HUGZ heartbeats", Command.CHP)
    chp_flush_interval_ms: int = setting(MS, 1000, "milliseconds between sweeps for expired keys", Command.CHP)
    chp_client_timeout_ms: int = setting(MS, 10000, "silence of a client's connection (ZMTP heartbeats) after which "
                                                    "the server drops it and the updates it has not read: a client "
                                                    "stopped or cut off that long takes a snapshot again", Command.CHP)
    chp_max_message_bytes: int = setting(BYTES, 1048576, "largest inbound frame", Command.CHP)
    chp_role: str = setting(Choice(choices=("standalone", "primary", "backup")), "standalone",
                            "this server's part in a Binary Star pair; standalone: no peer", Command.CHP)
    chp_peer_host: str = setting(Text(), "", "host of the pair's other server (needed for primary and "
                                             "backup)", Command.CHP)
    chp_peer_port: int = setting(Integer(1, 65532), 5566, "base port P of the pair's other server; the two talk "
                                                          "on each one's P+3", Command.CHP)
    chp_peer_timeout_ms: int = setting(MS, 2000, "silence after which the peer counts as gone: an active server "
                                                 "then publishes without waiting for it, a passive one takes over "
                                                 "at the next client request", Command.CHP)
    chp_servers: tuple[tuple[str, int], ...] = setting(
        HostPorts(), (), "CHP servers (host and base port) through which gateways form one cluster; empty: this "
                         "gateway alone is the cluster", G)
    chp_session_timeout_ms: int = setting(MS, 6000, "a gateway whose membership in CHP is not refreshed this long "
                                                    "leaves the cluster; its partitions move", G)
    chp_deleted_topic_notice_ms: int = setting(MS, 3600000, "how long the controller's notice of a deleted topic "
                                                            "stays in CHP: a gateway away longer keeps its "
                                                            "coordinators' group offsets of that topic", G)
    controlled_shutdown_enable: bool = kafka(Boolean(), True, "at SIGTERM, a gateway of a cluster hands the "
                                             "leadership of its partitions to others before it stops")
    controlled_shutdown_max_retries: int = kafka(Integer(0), 3, "attempts of a controlled shutdown before the "
                                                 "gateway stops anyway")
    controlled_shutdown_retry_backoff_ms: int = kafka(long(0), 5000, "how long each attempt of a controlled "
                                                      "shutdown waits for its partitions' new leaders to serve")
    auto_leader_rebalance_enable: bool = kafka(Boolean(), True, "the controller moves leadership back to "
                                               "preferred leaders whose gateways lead too few of them")
    leader_imbalance_check_interval_seconds: int = kafka(long(1), 300, "how often the controller checks how "
                                                         "many partitions are led by others than their "
                                                         "preferred leader")
    leader_imbalance_per_broker_percentage: int = kafka(Integer(0, 100), 10, "share of a gateway's preferred "
                                                        "partitions led elsewhere above which they move back")

    def __post_init__(self):
        check_values(self)
        if self.chp_role != "standalone" and not self.chp_peer_host:
            raise NotAllowed(f"chp.role {self.chp_role} needs chp.peer.host")


@dataclass(frozen=True)
class HttpSettings:
    """The HTTP endpoint of a long-running node: /metrics (Prometheus), /health, /ready."""

    http_host: str = setting(Text(), "127.0.0.1", "interface the HTTP endpoint binds (empty: every one)", SERVERS)
    http_port: int | None = setting(Nullable(inner=PORT), None, "port of the HTTP endpoint for /metrics, /health "
                                                               "and /ready; empty: no endpoint", SERVERS)

    def __post_init__(self):
        check_values(self)


@dataclass(frozen=True)
class LoggingSettings:
    log_level: str = setting(Choice(choices=("debug", "info", "warning", "error"), ignore_case=True), "info",
                             "the least important log events written: the root logger's level at start, which the "
                             "BROKER_LOGGER configs change live with each logger's", EVERY)
    log_format: str = setting(Choice(choices=("keyvalue", "json", "console")), "keyvalue",
                              "one event per line as key=value pairs, as JSON, or for a terminal", EVERY)

    def __post_init__(self):
        check_values(self)


SECTIONS = {"broker": BrokerSettings, "ssl": SslSettings, "mesh": MeshSettings, "store": StoreSettings, "chp": ChpSettings,
            "http": HttpSettings, "logging": LoggingSettings}


@dataclass(frozen=True)
class Settings:
    """Every section, and which settings were given rather than left at their defaults."""

    broker: BrokerSettings = field(default_factory=BrokerSettings)
    ssl: SslSettings = field(default_factory=SslSettings)
    mesh: MeshSettings = field(default_factory=MeshSettings)
    store: StoreSettings = field(default_factory=StoreSettings)
    chp: ChpSettings = field(default_factory=ChpSettings)
    http: HttpSettings = field(default_factory=HttpSettings)
    logging: LoggingSettings = field(default_factory=LoggingSettings)
    given: frozenset[str] = frozenset()
    # static listener.name.NAME.ssl.* configs: their value by full name
    listener_ssl: dict[str, object] = field(default_factory=dict)

    def __post_init__(self):
        for listener in self.broker.bound_listeners():
            protocol = self.broker.security_protocol(listener.name)
            if protocol in TLS_PROTOCOLS:
                self.ssl_of(listener.name).check_served(listener.name, protocol)

    def ssl_of(self, listener: str) -> SslSettings:
        """The SSL settings of one listener: its own static configs over the ssl.* ones."""
        prefix = listener_prefix(listener)
        return dataclasses.replace(self.ssl, **{
            LISTENER_SSL[name.removeprefix(prefix)].attribute: value for name, value in self.listener_ssl.items()
            if name.startswith(prefix)})

    def unknown_listener_configs(self) -> list[str]:
        """The listener.name.NAME.ssl.* configs whose prefix names none of the listeners."""
        prefixes = tuple(listener_prefix(listener.name) for listener in self.broker.bound_listeners())
        return [name for name in self.listener_ssl if not name.startswith(prefixes)]

