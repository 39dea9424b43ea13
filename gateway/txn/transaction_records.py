"""The __transaction_state record of a transactional id's metadata, as Kafka's transaction coordinator writes it."""

from __future__ import annotations

from itertools import groupby

from protocol.kafka.coordinator_records import (
    TRANSACTION_LOG_KEY,
    TRANSACTION_LOG_VALUE_VERSION,
    TRANSACTION_STATUS,
    TRANSACTIONS_PARTITIONS,
    TransactionLogKey,
    TransactionLogValue,
    coordinator_partition,
    encoded,
)


def transaction_state_records(entry: dict) -> list[tuple[int, bytes, bytes | None]]:
    """(partition, key, value) of the record Kafka writes for a transaction journal entry."""
    partition = coordinator_partition(entry["id"], TRANSACTIONS_PARTITIONS)
    return [(partition, key, value) for key, value, _ in keyed_slices(entry)]


def keyed_slices(entry: dict) -> list[tuple[bytes, bytes, dict]]:
    """(key, value, entry) of that record: the entry is the id's whole state."""
    Partitions = TransactionLogValue.TransactionPartitions
    value = TransactionLogValue(
        producer_id=entry["producer_id"], producer_epoch=entry["epoch"], transaction_timeout_ms=entry["timeout_ms"],
        transaction_status=TRANSACTION_STATUS[entry["state"]],
        transaction_partitions=[Partitions(topic=topic, partition_ids=[p for _, p in numbers])
                                for topic, numbers in groupby(sorted(entry["partitions"]), key=lambda tp: tp[0])],
        transaction_last_update_timestamp_ms=entry["update_ms"], transaction_start_timestamp_ms=entry["start_ms"])
    key = encoded(TRANSACTION_LOG_KEY, TransactionLogKey(transactional_id=entry["id"]))
    return [(key, encoded(TRANSACTION_LOG_VALUE_VERSION, value), entry)]
