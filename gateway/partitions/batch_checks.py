"""Checking what a Produce request carries, before anything is appended.

Two steps, as Kafka takes them and answers them. `request_checked` is what
Kafka checks of the request before it looks at the partition (magic 2 and
one batch per partition from v3, zstd only from v7): Kafka answers those
without the partition's log start offset. `log_checked` is what its log
checks (a batch based at offset 0, sizes against max.message.bytes, the CRC,
no control batches from clients, and every record of the batch,
protocol.records.validation). Legacy message sets (produce v0-2) become one
v2 batch, since the gateway stores v2 only.

A topic whose compression.type is a codec (not `producer`) stores its
batches with that codec: a batch with another is recompressed from the
records its validation inflated, so it is inflated once (Kafka's validator
too converts in its validation pass). As in Kafka, the target codec zstd
needs no particular request version (only a zstd batch sent does), and the
recompressed batch must still fit max.message.bytes.

On a CreateTime topic every record's timestamp must lie within
message.timestamp.before.max.ms before and message.timestamp.after.max.ms
after the broker's clock (KIP-937), as Kafka's validator checks each record:
the walk gives the range of a batch's timestamps, and only a batch whose
range passes a bound has its records decoded, to name each one out of range
(Kafka's INVALID_TIMESTAMP, with a record error per record). A compacted
topic's batches are decoded to find keyless records (INVALID_RECORD), in the
same pass, so that a batch with both is refused in Kafka's words.

A producer may not stamp its batch LogAppendTime (the timestamp type bit):
on a LogAppendTime topic, or without a timestamp, Kafka's validator refuses
each of its records with INVALID_TIMESTAMP; on a CreateTime topic it checks
the stamp as every record's timestamp and stores the batch as CreateTime.

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
from protocol.records import DEFAULT_LIMIT, Codec, RecordBatch, TimestampType, legacy_to_batch, split_records
from protocol.records.builder import recompressed
from protocol.records.compression import LEVELS
from protocol.records.offsets import as_create_time
from protocol.records.record import Record, decode_records
from protocol.records.split import Entry
from protocol.records.validation import InvalidRecords, validate_batch

FIRST_V2_PRODUCE = 3
FIRST_ZSTD_PRODUCE = 7
LONG_MAX = 2**63 - 1
NO_TIMESTAMP = -1


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


class TimestampBounds(NamedTuple):
    """How far record timestamps may lie before and after `now_ms`, the broker's clock."""

    now_ms: int
    before_ms: int
    after_ms: int

    def holds(self, timestamp: int) -> bool:
        return -self.after_ms <= self.now_ms - timestamp <= self.before_ms


def timestamp_bounds(config: Callable[[str], str], now_ms: int) -> TimestampBounds | None:
    """From a topic's `config` values: the bounds of its CreateTime timestamps, None for LogAppendTime.

    The deprecated message.timestamp.difference.max.ms stands for a bound left
    at Long.MAX_VALUE, as in Kafka 3.6 to 3.9."""
    if config("message.timestamp.type") != "CreateTime":
        return None
    difference = int(config("message.timestamp.difference.max.ms"))
    before, after = (int(config(f"message.timestamp.{side}.max.ms")) for side in ("before", "after"))
    return TimestampBounds(now_ms, difference if before == LONG_MAX else before,
                           difference if after == LONG_MAX else after)


def checked_batch(records, version: int, max_message_bytes: int, target: TopicCodec | None = None,
                  timestamps: TimestampBounds | None = None, keyed_in: str | None = None, *,
                  append_time: bool = False) -> RecordBatch:
    """The request's record data as one writable v2 batch, or KafkaError: both steps at once."""
    return log_checked(request_checked(records, version), version, max_message_bytes, target, timestamps, keyed_in,
                       append_time=append_time)


def request_checked(records, version: int) -> list[Entry]:
    """The entries of a partition's record data, or KafkaError: what Kafka checks of the request
    (ProduceRequest.validateRecords, in KafkaApis) before anything looks at the partition's log.
    Kafka answers these refusals without the log start offset."""
    if records is None:
        raise KafkaError(ErrorCode.INVALID_RECORD, "produce without records")
    try:
        entries = split_records(records).entries
    except DecodeError as exc:
        raise KafkaError(ErrorCode.CORRUPT_MESSAGE, f"malformed records: {exc}") from None
    if not entries:
        raise KafkaError(ErrorCode.INVALID_RECORD, "produce with an empty record set")
    if version < FIRST_V2_PRODUCE:
        if any(entry.magic == 2 for entry in entries):
            raise KafkaError(ErrorCode.INVALID_RECORD, f"produce v{version} cannot carry magic 2 batches")
        return entries
    first = entries[0]  # Kafka's order: the first batch's magic, its codec, then the number of batches
    if first.magic != 2:
        raise KafkaError(ErrorCode.INVALID_RECORD, f"produce v{version} must carry magic 2 batches")
    if first.compression == Codec.ZSTD and version < FIRST_ZSTD_PRODUCE:
        raise KafkaError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
                         f"zstd needs produce v{FIRST_ZSTD_PRODUCE}, not v{version}")
    if len(entries) != 1:
        raise KafkaError(ErrorCode.INVALID_RECORD, f"produce v{version} must carry exactly one batch per partition")
    return entries


def log_checked(entries: list[Entry], version: int, max_message_bytes: int, target: TopicCodec | None = None,
                timestamps: TimestampBounds | None = None, keyed_in: str | None = None, *,
                append_time: bool = False) -> RecordBatch:
    """`request_checked` entries as one writable v2 batch, or KafkaError: the checks of Kafka's log.

    With a `target`, the batch comes with the target's codec; with
    `timestamps`, its records' timestamps must hold within them; with
    `keyed_in` (a compacted topic's "topic-partition"), its records must have keys;
    with `append_time` (a LogAppendTime topic), it may not come stamped LogAppendTime."""
    for entry in entries:  # Kafka's analyzeAndValidateRecords: base offset, size, CRC, batch by batch
        if entry.magic == 2 and entry.base_offset != 0:
            raise KafkaError(ErrorCode.INVALID_RECORD, f"a produced batch must be based at offset 0, "
                                                       f"not {entry.base_offset}")
        _check_size(entry.size, max_message_bytes)
        try:
            entry.verify_crc()
        except DecodeError as exc:
            raise KafkaError(ErrorCode.CORRUPT_MESSAGE, f"malformed records: {exc}") from None
    if version >= FIRST_V2_PRODUCE:
        batch, records = _checked_v2(entries[0], max(DEFAULT_LIMIT, max_message_bytes), timestamps, keyed_in,
                                     append_time, target)
        if target is None or batch.compression == target.codec:
            return batch
        batch = RecordBatch(memoryview(bytearray(recompressed(batch, records, target.codec, level=target.level))))
    else:
        batch = _from_legacy(entries, target)
        if timestamps is not None or keyed_in is not None:
            _check_records(batch.records(), timestamps, keyed_in)
    _check_size(batch.size, max_message_bytes)  # conversion changed its size
    return batch


def _record_errors_message(errors: tuple[tuple[int, str], ...]) -> str:
    """Kafka's message for a batch refused for its records' sake: their count and the first three."""
    shown = ", ".join(f"RecordError(batchIndex={index}, message='{why}')" for index, why in errors[:3])
    return (f"One or more records have been rejected due to {len(errors)} record errors in total, "
            f"and only showing the first three errors at most: [{shown}]")


def _check_size(size: int, max_message_bytes: int) -> None:
    if size > max_message_bytes:
        raise KafkaError(ErrorCode.MESSAGE_TOO_LARGE,
                         f"batch of {size} bytes exceeds max.message.bytes {max_message_bytes}")


def _checked_v2(batch: RecordBatch, inflate_limit: int, timestamps: TimestampBounds | None,
                keyed_in: str | None, append_time: bool,
                target: TopicCodec | None) -> tuple[RecordBatch, bytes | memoryview]:
    """The batch, and its records uncompressed."""
    if batch.is_control:
        raise KafkaError(ErrorCode.INVALID_RECORD, "clients may not produce control batches")
    try:
        records, earliest, latest = validate_batch(batch, limit=inflate_limit)
    except DecodeError as exc:
        raise KafkaError(ErrorCode.CORRUPT_MESSAGE, f"malformed records: {exc}") from None
    except InvalidRecords as exc:
        raise KafkaError(ErrorCode.INVALID_RECORD, str(exc)) from None
    stamped = batch.timestamp_type == TimestampType.LOG_APPEND_TIME
    stamp_refused = stamped and (append_time or batch.max_timestamp == NO_TIMESTAMP)
    if timestamps is not None or keyed_in is not None or stamp_refused:
        _check_range(batch, records, earliest, latest, timestamps, keyed_in,
                     _record_class(batch, target) if stamp_refused else None)
    if stamped:
        as_create_time(batch)
    return batch, records


def _record_class(batch: RecordBatch, target: TopicCodec | None) -> str:
    """The class of the records Kafka's validator reads from `batch`: key and value left unread
    (their sizes -1 when null) where it keeps the batch's compressed bytes."""
    kept = batch.compression != Codec.NONE and (target is None or target.codec == batch.compression)
    return "PartialDefaultRecord" if kept else "DefaultRecord"


def _check_range(batch: RecordBatch, records, earliest: int, latest: int, bounds: TimestampBounds | None,
                 keyed_in: str | None, stamp_refused_as: str | None) -> None:
    """The records' timestamps within `bounds` and keys; decoded only for keys, a refused
    LogAppendTime stamp, or when their range is not."""
    append_time = batch.max_timestamp if batch.timestamp_type == TimestampType.LOG_APPEND_TIME else None
    if append_time is not None:  # Kafka reads every record's timestamp as the batch's then
        earliest = latest = append_time
    if keyed_in is not None or stamp_refused_as is not None or not (
            bounds is None or bounds.holds(earliest) and bounds.holds(latest)):
        _check_records(decode_records(records, batch.record_count, batch.base_offset, batch.base_timestamp,
                                      append_time), bounds, keyed_in, stamp_refused_as)


def _check_records(records: list[Record], bounds: TimestampBounds | None, keyed_in: str | None,
                   stamp_refused_as: str | None = None) -> None:
    """A refusal naming each record without a key (with `keyed_in`) or else with its batch's
    LogAppendTime stamp refused (named as a `stamp_refused_as`) or out of `bounds`, in Kafka's
    words and as its validator checks each record: the key first, and INVALID_TIMESTAMP once any
    record's timestamp is refused (naming the keyless ones too), else INVALID_RECORD. The index
    is the record's in its batch, whatever the batch's base offset."""
    errors, timestamp_refused = [], False
    for index, record in enumerate(records):
        if keyed_in is not None and record.key is None:
            errors.append((index, f"Compacted topic cannot accept message without key in topic partition {keyed_in}"))
        elif stamp_refused_as is not None:
            errors.append((index, f"Invalid timestamp type in message {_java_record(record, stamp_refused_as)}. "
                                  "Producer should not set timestamp type to LogAppendTime."))
            timestamp_refused = True
        elif bounds is not None and record.timestamp != NO_TIMESTAMP and not bounds.holds(record.timestamp):
            errors.append((index, _out_of_range(record, bounds)))
            timestamp_refused = True
    if timestamp_refused:
        raise KafkaError(ErrorCode.INVALID_TIMESTAMP,
                         "One or more records have been rejected due to invalid timestamp", tuple(errors))
    if errors:
        raise KafkaError(ErrorCode.INVALID_RECORD, _record_errors_message(errors), tuple(errors))


def _java_record(record: Record, kind: str) -> str:
    """A record as Kafka's DefaultRecord or PartialDefaultRecord shows itself: a null key or value
    counts 0 bytes in the first, -1 in the second, which never read them."""
    null_size = -1 if kind == "PartialDefaultRecord" else 0
    sizes = [null_size if data is None else len(data) for data in (record.key, record.value)]
    return (f"{kind}(offset={record.offset}, timestamp={record.timestamp}, "
            f"key={sizes[0]} bytes, value={sizes[1]} bytes)")


def _out_of_range(record: Record, bounds: TimestampBounds) -> str:
    earliest = _java_long(bounds.now_ms - bounds.before_ms)  # Kafka's message shows them as Java computes them
    latest = _java_long(bounds.now_ms + bounds.after_ms)
    return (f"Timestamp {record.timestamp} of message with offset {record.offset} is out of range. "
            f"The timestamp should be within [{earliest}, {latest}]")


def _java_long(value: int) -> int:
    return (value + 2**63) % 2**64 - 2**63


def _from_legacy(messages, target: TopicCodec | None) -> RecordBatch:
    try:
        converted = legacy_to_batch(messages, base_offset=0, **(target._asdict() if target else {}))
    except (DecodeError, EncodeError) as exc:
        raise KafkaError(ErrorCode.CORRUPT_MESSAGE, f"malformed message set: {exc}") from None
    return RecordBatch(memoryview(bytearray(converted)))
