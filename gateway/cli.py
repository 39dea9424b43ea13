"""`dafka-gateway`: the command line, every option also an environment variable.

With no options it is the embedded default: a tower, one durable store
under ./data and the gateway on 127.0.0.1:9092.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import replace
from pathlib import Path

import trio

from .app import Embedded, run_gateway
from .config import BrokerDefaults, GatewaySettings
from .mesh.cli import configure_logging
from .mesh.config import MeshConfig

ENV_PREFIX = "DAFKA_GATEWAY_"

# option: (settings object, field, help)
OPTIONS = {
    "--host": ("gateway", "host", "address the Kafka listener binds"),
    "--port": ("gateway", "port", "port of the Kafka listener"),
    "--advertised-host": ("gateway", "advertised_host", "host clients are told to connect to; default: --host"),
    "--advertised-port": ("gateway", "advertised_port", "port clients are told to connect to; default: --port"),
    "--node-id": ("gateway", "node_id", "this gateway's broker id"),
    "--cluster-id": ("gateway", "cluster_id", "cluster id reported to clients; names the metadata journal"),
    "--data-dir": ("gateway", "data_dir", "directory of the embedded stores' data"),
    "--max-request-bytes": ("gateway", "max_request_bytes", "largest request accepted (socket.request.max.bytes)"),
    "--max-connections": ("gateway", "max_connections", "client connections served at once"),
    "--tail-bytes-total": ("gateway", "tail_bytes_total",
                           "recent bytes kept in memory for all partitions together; each partition "
                           "gets an equal share, at most --tail-bytes-per-partition"),
    "--max-unacked-bytes": ("gateway", "max_unacked_bytes",
                            "bytes of batches no store has taken yet that the gateway keeps; beyond "
                            "them produce requests wait, REQUEST_TIMED_OUT after their timeout"),
    "--tail-bytes-per-partition": ("gateway", "tail_bytes_per_partition",
                                   "recent bytes per partition kept in memory for fetches"),
    "--expected-stores": ("gateway", "expected_stores",
                          "stores to wait for at start-up when joining a mesh (--stores 0)"),
    "--journal-compaction-entries": ("gateway", "journal_compaction_entries",
                                     "entries written since the last snapshot that compact a metadata, "
                                     "groups or transactions journal"),
    "--journal-compaction-bytes": ("gateway", "journal_compaction_bytes",
                                   "bytes written since the last snapshot that compact a metadata, "
                                   "groups or transactions journal"),
    "--num-partitions": ("defaults", "num_partitions", "partitions of auto-created topics (num.partitions)"),
    "--default-replication-factor": ("defaults", "default_replication_factor",
                                     "replication factor of topics that ask for none"),
    "--min-insync-replicas": ("defaults", "min_insync_replicas",
                              "stores that must hold a batch before acks=all succeeds (min.insync.replicas)"),
    "--auto-create-topics": ("defaults", "auto_create_topics_enable",
                             "create unknown topics on Metadata and Produce (auto.create.topics.enable)"),
    "--message-max-bytes": ("defaults", "message_max_bytes", "largest batch a produce may append (message.max.bytes)"),
    "--log-retention-ms": ("defaults", "log_retention_ms", "default retention.ms of topics"),
    "--log-retention-bytes": ("defaults", "log_retention_bytes", "default retention.bytes of topics"),
    "--log-retention-check-interval-ms": ("defaults", "log_retention_check_interval_ms",
                                          "how often retention moves log start offsets"),
    "--log-message-timestamp-type": ("defaults", "log_message_timestamp_type",
                                     "CreateTime or LogAppendTime (log.message.timestamp.type)"),
    "--group-initial-rebalance-delay-ms": ("defaults", "group_initial_rebalance_delay_ms",
                                           "how long a new group waits for more members to join"),
    "--group-min-session-timeout-ms": ("defaults", "group_min_session_timeout_ms",
                                       "smallest session timeout a group member may ask for"),
    "--group-max-session-timeout-ms": ("defaults", "group_max_session_timeout_ms",
                                       "largest session timeout a group member may ask for"),
    "--group-consumer-heartbeat-interval-ms": ("defaults", "group_consumer_heartbeat_interval_ms",
                                               "heartbeat interval given to consumer-protocol members"),
    "--group-consumer-session-timeout-ms": ("defaults", "group_consumer_session_timeout_ms",
                                            "silence after which a consumer-protocol member is fenced"),
    "--group-consumer-max-size": ("defaults", "group_consumer_max_size",
                                  "most members a consumer-protocol group may have"),
    "--group-consumer-migration-policy": ("defaults", "group_consumer_migration_policy",
                                          "which online conversions of groups with members happen: "
                                          "disabled, upgrade, downgrade or bidirectional"),
    "--offsets-retention-minutes": ("defaults", "offsets_retention_minutes",
                                    "how long committed offsets of an empty group are kept"),
    "--transaction-max-timeout-ms": ("defaults", "transaction_max_timeout_ms",
                                     "largest transaction.timeout.ms a producer may ask for"),
    "--transaction-abort-interval-ms": ("defaults", "transaction_abort_timed_out_transaction_cleanup_interval_ms",
                                        "milliseconds between looks for timed-out transactions to abort"),
    "--beacon-sub-address": ("mesh", "beacon_sub_address", "the tower's XSUB endpoint, where beacons go"),
    "--beacon-pub-address": ("mesh", "beacon_pub_address", "the tower's XPUB endpoint, where beacons come from"),
    "--beacon-address": ("mesh", "beacon_address", "host advertised to mesh peers; empty: as the tower sees us"),
    "--beacon-interval": ("mesh", "beacon_interval_ms", "milliseconds between beacons"),
    "--beacon-timeout": ("mesh", "beacon_timeout_ms", "milliseconds of silence before a mesh peer expires"),
    "--tower-sub-address": ("mesh", "tower_sub_address", "where the embedded tower binds its XSUB"),
    "--tower-pub-address": ("mesh", "tower_pub_address", "where the embedded tower binds its XPUB"),
    "--head-interval": ("mesh", "head_interval_ms", "milliseconds between a partition's HEADs"),
    "--store-fsync": ("mesh", "store_fsync", "embedded stores: batch (every ACKed batch is on disk) or "
                                             "interval (ACK once written, fsync every --store-fsync-interval-ms)"),
    "--store-fsync-interval-ms": ("mesh", "store_fsync_interval_ms",
                                  "embedded stores: milliseconds between fsyncs of the interval policy"),
    "--store-segment-bytes": ("mesh", "store_segment_bytes",
                              "embedded stores: bytes of a log segment, the unit in which they delete "
                              "what lies below a partition's log start"),
}
DEFAULTS = {"gateway": GatewaySettings(), "defaults": BrokerDefaults(), "mesh": MeshConfig()}
CHOICES = {"--store-fsync": ["batch", "interval"], "--log-message-timestamp-type": ["CreateTime", "LogAppendTime"],
           "--group-consumer-migration-policy": ["disabled", "upgrade", "downgrade", "bidirectional"]}


def env_name(option: str) -> str:
    return ENV_PREFIX + option.lstrip("-").replace("-", "_").upper()


def _converter(default):
    if isinstance(default, bool):
        return lambda text: text.lower() in ("1", "true", "yes", "on")
    if isinstance(default, (int, Path)):
        return type(default)
    return str


def parser() -> argparse.ArgumentParser:
    result = argparse.ArgumentParser(
        prog="dafka-gateway",
        description="A Kafka-compatible broker on a Dafka mesh. Every option can also be set "
                    f"through the environment variable named after it ({env_name('--port')}, ...).",
    )
    for option, (group, name, help_text) in OPTIONS.items():
        default = getattr(DEFAULTS[group], name)
        kind = _converter(default if default is not None else "")
        env = os.environ.get(env_name(option))
        result.add_argument(option, dest=f"{group}.{name}", type=kind, choices=CHOICES.get(option),
                            default=kind(env) if env is not None else default,
                            help=f"{help_text}; default {default!r}; env {env_name(option)}")
    embedded = os.environ.get(env_name("--stores"), "1")
    result.add_argument("--stores", type=int, default=int(embedded),
                        help="stores of the embedded mesh (each its own process under --data-dir); "
                             f"0 joins an existing mesh instead of starting a tower and stores; "
                             f"default 1; env {env_name('--stores')}")
    return result


def settings_from(arguments: argparse.Namespace) -> GatewaySettings:
    groups = {group: {} for group in DEFAULTS}
    for key, value in vars(arguments).items():
        if "." in key:
            group, name = key.split(".")
            groups[group][name] = value
    return replace(GatewaySettings(**groups["gateway"]),
                   defaults=BrokerDefaults(**groups["defaults"]), mesh=MeshConfig(**groups["mesh"]))


def main() -> None:
    arguments = parser().parse_args()
    configure_logging()
    embedded = Embedded(arguments.stores) if arguments.stores > 0 else None
    settings = settings_from(arguments)
    if embedded is not None:
        settings = replace(settings, expected_stores=embedded.stores)
    trio.run(run_gateway, settings, embedded)


