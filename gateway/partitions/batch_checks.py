"""Checking what a Produce request carries, before anything is appended.

The rules of Kafka's log validator: the CRC, magic against the request
version, one batch per partition from v3, sizes against max.message.bytes,
zstd only from v7, no control batches from clients, and every record of the
batch (protocol.records.validation). Legacy message sets (produce v0-2)
become one v2 batch, since the gateway stores v2 only.

A topic whose compression.type is a codec (not `producer`) stores its
batches with that codec: a batch with another is recompressed from the
records its validation inflated, so it is inflated once (Kafka's validator
too converts in its validation pass). As in Kafka, the target codec zstd
needs no particular request version (only a zstd batch sent does), and the
recompressed batch must still fit max.message.bytes.

A compressed batch may inflate to max(64 MiB, max.message.bytes): Kafka sets
no such bound (it streams records), but the gateway holds a batch's records
in memory while it checks them, so a small batch of zeros (a decompression
bomb) is refused with CORRUPT_MESSAGE once its output passes the bound.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from gateway.kafka_error import KafkaError
from protocol.errors import DecodeError, EncodeError
from protocol.kafka.error_codes import ErrorCode
from protocol.records import DEFAULT_LIMIT, Codec, RecordBatch, legacy_to_batch, split_records
from protocol.records.builder import recompressed
from protocol.records.compression import LEVELS
from protocol.records.validation import InvalidRecords, validate_batch

FIRST_V2_PRODUCE = 3
FIRST_ZSTD_PRODUCE = 7


class TopicCodec(NamedTuple):
    """The codec a topic stores batches with, and its compression.<codec>.level."""

    codec: Codec
    level: int | None


def topic_codec(config: Callable[[str], str]) -> TopicCodec | None:
    """From a topic's `config` values: its codec, or None to keep the producer's."""
    name = config("compression.type")
    if name == "producer":
        return None
    codec = Codec.NONE if name == "uncompressed" else Codec[name.upper()]
    return TopicCodec(codec, int(config(f"compression.{name}.level")) if codec in LEVELS else None)


def checked_batch(records, version: int, max_message_bytes: int, target: TopicCodec | None = None) -> RecordBatch:
    """The request's record data as one writable v2 batch, or KafkaError.

    With a `target`, the batch comes with the target's codec."""
    if records is None:
        raise KafkaError(ErrorCode.INVALID_RECORD, "produce without records")
    try:
        entries = split_records(records).entries
        for entry in entries:
            entry.verify_crc()
    except DecodeError as exc:
        raise KafkaError(ErrorCode.CORRUPT_MESSAGE, f"malformed records: {exc}") from None
    if not entries:
        raise KafkaError(ErrorCode.INVALID_RECORD, "produce with an empty record set")
    for entry in entries:
        _check_size(entry.size, max_message_bytes)
    if version >= FIRST_V2_PRODUCE:
        batch, records = _checked_v2(entries, version, max(DEFAULT_LIMIT, max_message_bytes))
        if target is None or batch.compression == target.codec:
            return batch
        batch = RecordBatch(memoryview(bytearray(recompressed(batch, records, target.codec, level=target.level))))
    elif any(entry.magic == 2 for entry in entries):
        raise KafkaError(ErrorCode.INVALID_RECORD, f"produce v{version} cannot carry magic 2 batches")
    else:
        batch = _from_legacy(entries, target)
    _check_size(batch.size, max_message_bytes)  # conversion changed its size
    return batch


def check_keyed(batch: RecordBatch, topic_partition: str) -> None:
    """A compacted topic takes only records with keys, in Kafka's words."""
    try:
        keyless = any(record.key is None for record in batch.records())
    except DecodeError as exc:
        raise KafkaError(ErrorCode.CORRUPT_MESSAGE, f"malformed records: {exc}") from None
    if keyless:
        raise KafkaError(ErrorCode.INVALID_RECORD,
                         f"Compacted topic cannot accept message without key in topic partition {topic_partition}.")


def _check_size(size: int, max_message_bytes: int) -> None:
    if size > max_message_bytes:
        raise KafkaError(ErrorCode.MESSAGE_TOO_LARGE,
                         f"batch of {size} bytes exceeds max.message.bytes {max_message_bytes}")


def _checked_v2(entries, version: int, inflate_limit: int) -> tuple[RecordBatch, bytes | memoryview]:
    """The batch, and its records uncompressed."""
    if len(entries) != 1 or entries[0].magic != 2:
        raise KafkaError(ErrorCode.INVALID_RECORD,
                         f"produce v{version} must carry exactly one magic 2 batch per partition")
    batch = entries[0]
    if batch.compression == Codec.ZSTD and version < FIRST_ZSTD_PRODUCE:
        raise KafkaError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
                         f"zstd needs produce v{FIRST_ZSTD_PRODUCE}, not v{version}")
    if batch.is_control:
        raise KafkaError(ErrorCode.INVALID_RECORD, "clients may not produce control batches")
    try:
        records = validate_batch(batch, limit=inflate_limit)
    except DecodeError as exc:
        raise KafkaError(ErrorCode.CORRUPT_MESSAGE, f"malformed records: {exc}") from None
    except InvalidRecords as exc:
        raise KafkaError(ErrorCode.INVALID_RECORD, str(exc)) from None
    return batch, records


def _from_legacy(messages, target: TopicCodec | None) -> RecordBatch:
    try:
        converted = legacy_to_batch(messages, base_offset=0, **(target._asdict() if target else {}))
    except (DecodeError, EncodeError) as exc:
        raise KafkaError(ErrorCode.CORRUPT_MESSAGE, f"malformed message set: {exc}") from None
    return RecordBatch(memoryview(bytearray(converted)))
