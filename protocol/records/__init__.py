"""Kafka records: v2 batches, legacy message sets and their compression.

The produce path only splits, checks CRCs and stamps offsets
(`split_records`, `RecordBatch.verify_crc`, `assign_offsets`); records
are decoded only when something asks for them.
"""

from protocol.records.batch import RecordBatch, TimestampType, first_batch_transactional
from protocol.records.builder import (
    ControlMarker,
    ControlType,
    build_batch,
    build_control_batch,
    read_batch_marker,
    read_control_record,
)
from protocol.records.compression import DEFAULT_LIMIT, Codec, compress, decompress
from protocol.records.convert import batch_to_legacy, legacy_to_batch
from protocol.records.legacy import LegacyMessage, build_message_set
from protocol.records.offsets import assign_offsets
from protocol.records.record import Record
from protocol.records.split import Split, split_records

__all__ = [
    "DEFAULT_LIMIT",
    "Codec",
    "ControlMarker",
    "ControlType",
    "LegacyMessage",
    "Record",
    "RecordBatch",
    "Split",
    "TimestampType",
    "assign_offsets",
    "batch_to_legacy",
    "build_batch",
    "build_control_batch",
    "build_message_set",
    "compress",
    "decompress",
    "first_batch_transactional",
    "legacy_to_batch",
    "read_batch_marker",
    "read_control_record",
    "split_records",
]
