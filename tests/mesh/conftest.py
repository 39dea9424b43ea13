"""Shared pieces for mesh tests: free ports and a fast mesh configuration."""

import pytest

from gateway.settings.table import MeshSettings
from gateway.testing.ports import free_port


def fast_config(**overrides) -> MeshSettings:
    """A mesh on free local ports with short beacon and head intervals."""
    sub, pub = free_port(), free_port()
    settings = dict(
        beacon_interval_ms=200,
        beacon_timeout_ms=3000,
        beacon_sub_address=(f"tcp://127.0.0.1:{sub}",),
        beacon_pub_address=(f"tcp://127.0.0.1:{pub}",),
        tower_sub_address=f"tcp://127.0.0.1:{sub}",
        tower_pub_address=f"tcp://127.0.0.1:{pub}",
        head_interval_ms=100,
    )
    settings.update(overrides)
    return MeshSettings(**settings)


def on_towers(towers: list[MeshSettings], **overrides) -> MeshSettings:
    """A node's fast configuration, connected to each of `towers` (each a fast_config)."""
    return fast_config(beacon_sub_address=tuple(tower.tower_sub_address for tower in towers),
                       beacon_pub_address=tuple(tower.tower_pub_address for tower in towers), **overrides)


@pytest.fixture
def config() -> MeshSettings:
    return fast_config()
