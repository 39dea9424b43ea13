"""The records of Kafka's internal topics, __consumer_offsets and __transaction_state.

Each record's key and value is an int16 (the key's record type, the value's
version) and a struct of that version, declared here as data from Kafka's
own definitions (group-coordinator's OffsetCommitKey/Value and
GroupMetadataKey/Value, transaction-coordinator's TransactionLogKey/Value)
and encoded by the generic codec. The versions written are the ones Kafka 4
writes: OffsetCommitValue 3 (1 when the commit has an expiry of its own),
GroupMetadataValue 3, TransactionLogValue 0. A key's partition is Kafka's:
Java's String.hashCode of the group or transactional id, made positive as
Utils.abs does, modulo the partition count.
"""

from __future__ import annotations

import struct
from functools import cache

from protocol.kafka.codec import struct_codec
from protocol.kafka.message_classes import build_class
from protocol.kafka.schema import F

OFFSETS_TOPIC, OFFSETS_PARTITIONS = "__consumer_offsets", 50  # Kafka's offsets.topic.num.partitions
TRANSACTIONS_TOPIC, TRANSACTIONS_PARTITIONS = "__transaction_state", 50  # transaction.state.log.num.partitions
OFFSET_COMMIT_KEY, GROUP_METADATA_KEY, TRANSACTION_LOG_KEY = 1, 2, 0  # the keys' record types
CONSUMER_GROUP_METADATA_KEY = 3
OFFSET_COMMIT_VALUE_VERSION, EXPIRING_OFFSET_COMMIT_VALUE_VERSION = 3, 1
GROUP_METADATA_VALUE_VERSION = 3
TRANSACTION_LOG_VALUE_VERSION = 0

OffsetCommitKey = build_class("OffsetCommitKey", "OffsetCommitKey", (
    F("group", "string"), F("topic", "string"), F("partition", "int32"),
))
OffsetCommitValue = build_class("OffsetCommitValue", "OffsetCommitValue", (
    F("offset", "int64"),
    F("leader_epoch", "int32", "3+", default=-1, ignorable=True),
    F("metadata", "string"),
    F("commit_timestamp", "int64"),
    F("expire_timestamp", "int64", "1", default=-1, ignorable=True),
))
GroupMetadataKey = build_class("GroupMetadataKey", "GroupMetadataKey", (F("group", "string"),))
ConsumerGroupMetadataKey = build_class("ConsumerGroupMetadataKey", "ConsumerGroupMetadataKey",
                                       (F("group_id", "string"),))
GroupMetadataValue = build_class("GroupMetadataValue", "GroupMetadataValue", (
    F("protocol_type", "string"),
    F("generation", "int32"),
    F("protocol", "string", nullable="0+"),
    F("leader", "string", nullable="0+"),
    F("current_state_timestamp", "int64", "2+", default=-1, ignorable=True),
    F("members", "[]", "0+",
      F("member_id", "string"),
      F("group_instance_id", "string", "3+", nullable="3+", default=None, ignorable=True),
      F("client_id", "string"),
      F("client_host", "string"),
      F("rebalance_timeout", "int32", "1+", ignorable=True),
      F("session_timeout", "int32"),
      F("subscription", "bytes"),
      F("assignment", "bytes")),
))
TransactionLogKey = build_class("TransactionLogKey", "TransactionLogKey", (F("transactional_id", "string"),))
TransactionLogValue = build_class("TransactionLogValue", "TransactionLogValue", (
    F("producer_id", "int64"),
    F("producer_epoch", "int16"),
    F("transaction_timeout_ms", "int32"),
    F("transaction_status", "int8"),
    F("transaction_partitions", "[]", "0+", F("topic", "string"), F("partition_ids", "[]int32"), nullable="0+"),
    F("transaction_last_update_timestamp_ms", "int64"),
    F("transaction_start_timestamp_ms", "int64"),
))
# TransactionLogValue's transaction_status, by Kafka's state names
TRANSACTION_STATUS = {name: code for code, name in enumerate((
    "Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead",
    "PrepareEpochFence"))}
_INT16 = struct.Struct(">h")


@cache
def _codec(cls: type, version: int):
    return struct_codec(cls, version, flexible=False)  # the versions written are all non-flexible


def encoded(version: int, message) -> bytes:
    """A key or value: its record type or version, then the message in that version."""
    out = bytearray(_INT16.pack(version))
    _codec(type(message), 0 if type(message).__name__.endswith("Key") else version).encode(out, message)
    return bytes(out)


def consumer_group_metadata_value(epoch: int) -> bytes:
    """ConsumerGroupMetadataValue version 0, a flexible version: the group epoch and no tagged field."""
    return _INT16.pack(0) + struct.pack(">i", epoch) + b"\x00"


def coordinator_partition(key: str, partitions: int) -> int:
    """The partition of a group or transactional id: Utils.abs(key.hashCode()) % partitions, as Kafka has
    it (Utils.abs maps Integer.MIN_VALUE to 0; a mask would move every other negative code elsewhere)."""
    code = 0
    for unit in struct.unpack(f">{len(key.encode('utf-16-be')) // 2}H", key.encode("utf-16-be")):
        code = (code * 31 + unit) & 0xFFFFFFFF
    signed = code - (1 << 32) if code & 0x80000000 else code
    return (0 if signed == -(1 << 31) else abs(signed)) % partitions
