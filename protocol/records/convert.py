"""Converting between legacy message sets and v2 batches.

The gateway stores v2 only: messages produced with magic 0 or 1 become one
v2 batch. Fetch versions older than 4 can only carry legacy messages, so
stored batches are down-converted for them, as Kafka does: same codec,
headers dropped, magic 0 without timestamps, control batches left out.
"""

from __future__ import annotations

from collections.abc import Sequence

from protocol.errors import EncodeError
from protocol.records.batch import RecordBatch, TimestampType
from protocol.records.builder import build_batch
from protocol.records.compression import DEFAULT_LIMIT, Codec
from protocol.records.legacy import LegacyMessage, build_message_set


def legacy_to_batch(
    messages: Sequence[LegacyMessage],
    *,
    base_offset: int,
    codec: Codec | None = None,
    level: int | None = None,
    limit: int = DEFAULT_LIMIT,
) -> bytes:
    """One v2 batch of every record in `messages`, at offsets from `base_offset`.

    Timestamps are kept (-1 for magic 0). `codec` (at `level`) defaults to
    the codec of the first message, as for a topic with compression.type=producer.
    Check each message's CRC before calling; inner CRCs are checked here.
    """
    records = [record for message in messages for record in message.records(limit=limit)]
    if codec is None:
        codec = messages[0].compression if messages else Codec.NONE
    return build_batch(
        [record._replace(offset=base_offset + index) for index, record in enumerate(records)],
        codec=codec,
        level=level,
    )


def batch_to_legacy(batch: RecordBatch, magic: int, *, limit: int = DEFAULT_LIMIT) -> bytes:
    """`batch` as a magic 0 or 1 message set; empty for control batches."""
    if batch.is_control:
        return b""
    if batch.compression == Codec.ZSTD:
        raise EncodeError("zstd batches cannot be down-converted")
    timestamp_type = batch.timestamp_type if magic == 1 else TimestampType.NONE
    records = batch.records(limit=limit)
    return build_message_set(
        records, magic=magic, codec=batch.compression, timestamp_type=timestamp_type
    )
