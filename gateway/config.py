"""Gateway settings: one dataclass, filled from options and environment."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from gateway.mesh.config import MeshConfig


@dataclass(frozen=True)
class BrokerDefaults:
    """Kafka's broker-level settings that topics inherit (Kafka's names and defaults)."""

    num_partitions: int = 1
    default_replication_factor: int = 1
    min_insync_replicas: int = 1
    auto_create_topics_enable: bool = True
    message_max_bytes: int = 1048588
    log_retention_ms: int = 7 * 24 * 3600 * 1000
    log_retention_bytes: int = -1
    log_retention_check_interval_ms: int = 300000
    log_message_timestamp_type: str = "CreateTime"
    compression_type: str = "producer"
    log_cleanup_policy: str = "delete"
    # The group coordinator's settings (Kafka's group.* and offsets.* names).
    group_initial_rebalance_delay_ms: int = 3000
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1800000
    offsets_retention_minutes: int = 7 * 24 * 60
    # KIP-848 consumer groups (Kafka's group.consumer.* names).
    group_consumer_heartbeat_interval_ms: int = 5000
    group_consumer_session_timeout_ms: int = 45000
    group_consumer_max_size: int = 2**31 - 1
    # Which online conversions between classic and consumer groups happen:
    # disabled, upgrade, downgrade or bidirectional (Kafka 4's default).
    group_consumer_migration_policy: str = "bidirectional"
    # The transaction coordinator's (Kafka's transaction.* names).
    transaction_max_timeout_ms: int = 900000
    transaction_abort_timed_out_transaction_cleanup_interval_ms: int = 10000


@dataclass(frozen=True)
class GatewaySettings:
    host: str = "127.0.0.1"
    port: int = 9092
    advertised_host: str | None = None
    advertised_port: int | None = None
    node_id: int = 0
    cluster_id: str = "dafka-gateway"
    data_dir: Path = Path("data")
    max_request_bytes: int = 100 * 1024 * 1024  # socket.request.max.bytes
    max_connections: int = 1000
    # In-memory tail of each partition that fetches are served from.
    tail_bytes_per_partition: int = 32 * 1024 * 1024
    # ... and of all partitions together: with many partitions each gets its share.
    tail_bytes_total: int = 1024 * 1024 * 1024
    # Batches published that no store has taken yet, kept for the stores' FETCHes:
    # beyond this, produce requests wait (REQUEST_TIMED_OUT after their timeout).
    max_unacked_bytes: int = 512 * 1024 * 1024
    # Stores that must be reachable before the gateway trusts what the mesh
    # reports it holds (the embedded mesh sets it to its own store count).
    expected_stores: int = 1
    # A metadata, groups or transactions journal is compacted into a new generation once
    # the entries, or bytes, written since its last snapshot pass these (and the snapshot's own).
    journal_compaction_entries: int = 10_000
    journal_compaction_bytes: int = 64 * 1024 * 1024
    mesh: MeshConfig = field(default_factory=MeshConfig)
    defaults: BrokerDefaults = field(default_factory=BrokerDefaults)

    @property
    def advertised(self) -> tuple[str, int]:
        return self.advertised_host or self.host, self.advertised_port or self.port
