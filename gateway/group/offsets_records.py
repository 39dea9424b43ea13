"""The __consumer_offsets records of the group journal's changes, as Kafka's group coordinator writes them.

An offset commit is an OffsetCommitKey and OffsetCommitValue per partition;
a classic group's state a GroupMetadataKey and GroupMetadataValue; a removal
the key with no value (a tombstone). Groups of the consumer protocol
(KIP-848) keep their membership in records of their own in Kafka, which are
not written here: only their offsets are.
"""

from __future__ import annotations

from protocol.kafka.coordinator_records import (
    EXPIRING_OFFSET_COMMIT_VALUE_VERSION,
    GROUP_METADATA_KEY,
    GROUP_METADATA_VALUE_VERSION,
    OFFSET_COMMIT_KEY,
    OFFSET_COMMIT_VALUE_VERSION,
    OFFSETS_PARTITIONS,
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    coordinator_partition,
    encoded,
)


def offsets_topic_records(entry: dict) -> list[tuple[int, bytes, bytes | None]]:
    """(partition, key, value) of the records Kafka writes for a group journal entry."""
    group = entry["group"]
    partition = coordinator_partition(group, OFFSETS_PARTITIONS)
    kind = entry["type"]
    if kind == "offsets":
        return [(partition, _offset_key(group, topic, number), _offset_value(*committed))
                for topic, number, *committed in entry["commits"]]
    if kind == "offsets_deleted":
        return [(partition, _offset_key(group, topic, number), None) for topic, number in entry["partitions"]]
    if kind == "classic_group":
        return [(partition, _group_key(group), _group_value(entry))]
    if kind == "group_deleted":
        return [*((partition, _offset_key(group, topic, number), None) for topic, number in entry["partitions"]),
                (partition, _group_key(group), None)]
    return []


def _offset_key(group: str, topic: str, partition: int) -> bytes:
    return encoded(OFFSET_COMMIT_KEY, OffsetCommitKey(group=group, topic=topic, partition=partition))


def _offset_value(offset: int, leader_epoch: int, metadata: str, commit_ms: int, expire_ms: int | None) -> bytes:
    value = OffsetCommitValue(offset=offset, leader_epoch=leader_epoch, metadata=metadata,
                              commit_timestamp=commit_ms, expire_timestamp=-1 if expire_ms is None else expire_ms)
    return encoded(OFFSET_COMMIT_VALUE_VERSION if expire_ms is None else EXPIRING_OFFSET_COMMIT_VALUE_VERSION, value)


def _group_key(group: str) -> bytes:
    return encoded(GROUP_METADATA_KEY, GroupMetadataKey(group=group))


def _group_value(entry: dict) -> bytes:
    Member = GroupMetadataValue.Members
    return encoded(GROUP_METADATA_VALUE_VERSION, GroupMetadataValue(
        protocol_type=entry["protocol_type"], generation=entry["generation"], protocol=entry["protocol"],
        leader=entry["leader"], current_state_timestamp=entry["state_timestamp"],
        members=[Member(member_id=m["id"], group_instance_id=m["instance"], client_id=m["client_id"],
                        client_host=m["client_host"], rebalance_timeout=m["rebalance_timeout"],
                        session_timeout=m["session_timeout"], subscription=bytes.fromhex(m["subscription"]),
                        assignment=bytes.fromhex(m["assignment"]))
                 for m in entry["members"]]))
