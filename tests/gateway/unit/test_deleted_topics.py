"""A deleted topic's partitions: the directives deleting them are journaled, kept by
every snapshot of the metadata journal and sent again at start-up."""

import uuid
from types import SimpleNamespace

from gateway.settings.table import BrokerSettings
from gateway.topics.topic_registry import DELETED_PARTITIONS, TopicRegistry
from protocol.journal.discard_directive import Discard

ADDRESSES = ["0123456789ABCDEF0123456789ABCDEF", "FEDCBA9876543210FEDCBA9876543210"]


def broker() -> TopicRegistry:
    """A registry that only replays and snapshots: it never reaches the mesh."""
    return TopicRegistry(BrokerSettings(), SimpleNamespace(watcher=None, read=None), None, None)


def topic(name: str) -> dict:
    return {"type": "topic", "name": name, "id": str(uuid.uuid4()), "replication_factor": 1,
            "partitions": [[address, 0, 0] for address in ADDRESSES], "configs": {}}


def test_a_deleted_topics_directives_outlive_snapshots():
    deleting = broker()
    states = deleting._replayed([
        topic("gone"),
        {"type": "topic_deleted", "name": "gone", "ends": {ADDRESSES[0]: 12, ADDRESSES[1]: 0}},
        topic("old"), {"type": "topic_deleted", "name": "old"},  # journaled before ends were
    ])
    assert states == {}
    # Each partition deleted whole, also one nothing was written to (its fence goes).
    assert list(deleting.deleted_partitions.values()) == [Discard("gone", ADDRESSES[0], 12, deleted=True),
                                                          Discard("gone", ADDRESSES[1], 0, deleted=True)]

    restarted = broker()
    snapshot = deleting._metadata_snapshot()
    assert any(entry["type"] == DELETED_PARTITIONS for entry in snapshot)
    restarted._replayed(snapshot)
    assert restarted.deleted_partitions == deleting.deleted_partitions
