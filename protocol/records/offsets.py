"""Stamping a produced v2 batch with its log position, in place.

base_offset and partition_leader_epoch lie outside the CRC, so setting them
is two small writes into the batch's own buffer whatever its size; Produce
handlers patch the batch inside the request buffer and pass it on. This is
faster than returning new bytes, which copies the whole batch (see
bench/records.py).

LogAppendTime is the exception: the timestamp type bit (in attributes) and
max_timestamp are CRC-covered, so stamping them recomputes the CRC over the
whole batch, once, after checking the old one; so does taking back a
producer's own LogAppendTime stamp (`as_create_time`).
"""

from __future__ import annotations

import struct

import crc32c

from protocol.records.batch import (
    ATTRIBUTES_POSITION,
    CRC_POSITION,
    CRC_START,
    LEADER_EPOCH_POSITION,
    MAX_TIMESTAMP_POSITION,
    TIMESTAMP_TYPE_FLAG,
    RecordBatch,
)

_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT16 = struct.Struct(">h")


def assign_offsets(
    batch: RecordBatch,
    base_offset: int,
    partition_leader_epoch: int,
    *,
    log_append_time: int | None = None,
) -> None:
    """Write the log's offsets (and maybe LogAppendTime) into `batch`.

    The batch's buffer must be writable (a view of a bytearray). Verify the
    CRC before calling: a LogAppendTime stamp makes a fresh, valid CRC.
    """
    buffer = batch.buffer
    _INT64.pack_into(buffer, 0, base_offset)
    _INT32.pack_into(buffer, LEADER_EPOCH_POSITION, partition_leader_epoch)
    if log_append_time is None:
        return
    _INT16.pack_into(buffer, ATTRIBUTES_POSITION, batch.attributes | TIMESTAMP_TYPE_FLAG)
    _INT64.pack_into(buffer, MAX_TIMESTAMP_POSITION, log_append_time)
    _UINT32.pack_into(buffer, CRC_POSITION, crc32c.crc32c(buffer[CRC_START:]))


def as_create_time(batch: RecordBatch) -> None:
    """Turn a batch stamped LogAppendTime into a CreateTime one, in place, its max_timestamp kept:
    what Kafka's log makes of a producer's stamp on a CreateTime topic. Verify the CRC before."""
    buffer = batch.buffer
    _INT16.pack_into(buffer, ATTRIBUTES_POSITION, batch.attributes & ~TIMESTAMP_TYPE_FLAG)
    _UINT32.pack_into(buffer, CRC_POSITION, crc32c.crc32c(buffer[CRC_START:]))
