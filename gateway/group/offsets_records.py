"""The __consumer_offsets records of the group journal's changes, as Kafka's group coordinator writes them.

An offset commit is an OffsetCommitKey and OffsetCommitValue per partition;
a classic group's state a GroupMetadataKey and GroupMetadataValue; a removal
the key with no value (a tombstone). Offsets committed within a transaction
are the same records, which the group coordinator of a cluster writes in a
transactional batch of the producer (storage/partition_journal.py): its
marker ends them there. A lone gateway copies them only once committed.
Groups of the consumer protocol
(KIP-848) keep their membership in several records of their own in Kafka;
here one ConsumerGroupMetadata record (the group epoch) stands for them.
"""

from __future__ import annotations

from protocol.kafka.coordinator_records import (
    CONSUMER_GROUP_METADATA_KEY,
    EXPIRING_OFFSET_COMMIT_VALUE_VERSION,
    GROUP_METADATA_KEY,
    GROUP_METADATA_VALUE_VERSION,
    OFFSET_COMMIT_KEY,
    OFFSET_COMMIT_VALUE_VERSION,
    OFFSETS_PARTITIONS,
    ConsumerGroupMetadataKey,
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    consumer_group_metadata_value,
    coordinator_partition,
    encoded,
)


def offsets_topic_records(entry: dict) -> list[tuple[int, bytes, bytes | None]]:
    """(partition, key, value) of the records Kafka writes for a group journal entry, as committed
    records: a transaction's offsets once it commits."""
    if "producer" in entry:
        return []
    if entry["type"] == "transaction_ended":
        entry = {**entry, "type": "offsets"}
    partition = coordinator_partition(entry["group"], OFFSETS_PARTITIONS)
    return [(partition, key, value) for key, value, _ in keyed_slices(entry)]


def keyed_slices(entry: dict) -> list[tuple[bytes, bytes | None, dict]]:
    """(key, value, the part of `entry` about that key) of each record of a group journal entry.

    Each part is the key's whole state (or its removal), so that the newest
    record of every key replays the group as the entry left it: what a
    compacted __consumer_offsets partition keeps is enough. A transaction's
    end has no record of its own: its marker is it.
    """
    group, kind = entry["group"], entry["type"]
    if kind == "offsets":
        return [(_offset_key(group, topic, number), _offset_value(*committed),
                 {**entry, "commits": [[topic, number, *committed]]})
                for topic, number, *committed in entry["commits"]]
    if kind in ("offsets_deleted", "group_deleted"):
        removed = [(_offset_key(group, topic, number), None,
                    {**entry, "type": "offsets_deleted", "partitions": [[topic, number]]})
                   for topic, number in entry["partitions"]]
        if kind == "offsets_deleted":
            return removed
        gone = {**entry, "partitions": []}
        return [*removed, (_group_key(group), None, gone), (_consumer_group_key(group), None, gone)]
    if kind == "classic_group":
        return [(_group_key(group), _group_value(entry), entry)]
    if kind == "consumer_group":
        return [(_consumer_group_key(group), consumer_group_metadata_value(entry["epoch"]), entry)]
    return []


def _offset_key(group: str, topic: str, partition: int) -> bytes:
    return encoded(OFFSET_COMMIT_KEY, OffsetCommitKey(group=group, topic=topic, partition=partition))


def _offset_value(offset: int, leader_epoch: int, metadata: str, commit_ms: int, expire_ms: int | None) -> bytes:
    value = OffsetCommitValue(offset=offset, leader_epoch=leader_epoch, metadata=metadata,
                              commit_timestamp=commit_ms, expire_timestamp=-1 if expire_ms is None else expire_ms)
    return encoded(OFFSET_COMMIT_VALUE_VERSION if expire_ms is None else EXPIRING_OFFSET_COMMIT_VALUE_VERSION, value)


def _consumer_group_key(group: str) -> bytes:
    return encoded(CONSUMER_GROUP_METADATA_KEY, ConsumerGroupMetadataKey(group_id=group))


def _group_key(group: str) -> bytes:
    return encoded(GROUP_METADATA_KEY, GroupMetadataKey(group=group))


def _group_value(entry: dict) -> bytes:
    Member = GroupMetadataValue.Members
    # A group no member joined yet (an empty consumer group made classic) has no protocol type:
    # Kafka writes "" there, the field not being nullable.
    return encoded(GROUP_METADATA_VALUE_VERSION, GroupMetadataValue(
        protocol_type=entry["protocol_type"] or "", generation=entry["generation"], protocol=entry["protocol"],
        leader=entry["leader"], current_state_timestamp=entry["state_timestamp"],
        members=[Member(member_id=m["id"], group_instance_id=m["instance"], client_id=m["client_id"],
                        client_host=m["client_host"], rebalance_timeout=m["rebalance_timeout"],
                        session_timeout=m["session_timeout"], subscription=bytes.fromhex(m["subscription"]),
                        assignment=bytes.fromhex(m["assignment"]))
                 for m in entry["members"]]))
