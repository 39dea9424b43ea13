"""Mesh settings, named after the reference nodes' configuration keys."""

from __future__ import annotations

import uuid
from dataclasses import dataclass


@dataclass(frozen=True)
class MeshConfig:
    beacon_interval_ms: int = 1000  # beacon/interval
    beacon_timeout_ms: int = 4000  # beacon/timeout
    beacon_sub_address: str = "tcp://127.0.0.1:5556"  # the tower's XSUB, where beacons go
    beacon_pub_address: str = "tcp://127.0.0.1:5557"  # the tower's XPUB, where beacons come from
    beacon_address: str = ""  # host advertised in beacons; empty: as the tower sees us
    tower_sub_address: str = "tcp://*:5556"
    tower_pub_address: str = "tcp://*:5557"
    head_interval_ms: int = 1000  # producer/head_interval
    offset_reset: str = "latest"  # consumer/offset/reset: earliest | latest
    store_db: str = "storedb"  # store/db
    store_fsync: str = "batch"  # batch: durable before each ACK | interval: fsync at most once per interval
    store_fsync_interval_ms: int = 1000
    # Store-wide retention of every subject but the gateway's own (-1: unlimited).
    store_retention_bytes: int = -1  # per partition
    store_retention_ms: int = -1
    store_retention_check_interval_ms: int = 300000
    store_segment_bytes: int = 64 * 1024 * 1024  # retention and discards delete whole segments


def new_uuid() -> str:
    """A node or partition address as it travels: 32 upper-case hex characters."""
    return uuid.uuid4().hex.upper()
