"""Kafka's internal topics as logs clients can read, written by the gateway itself.

A lone gateway's coordinators keep their state on journals of their own
(in a cluster the group coordinators write __consumer_offsets themselves:
group/partition_journal.py); each change they journal is also appended, in Kafka's record formats, to the internal
topic Kafka would have written it to (`__consumer_offsets`,
`__transaction_state`), so that tools reading those topics see what Kafka
shows. Each is an ordinary topic of the registry, created on its first
record with Kafka's 50 partitions and a topic id derived from its name (the
one Metadata gives it before it exists); its offsets are durable like any
topic's. Changes are turned into records and appended in their order by one
task, never awaited by the coordinators: a record not appended (no store in
sync) or not encoded (a bug) is logged and lost, the journal being the
state's truth, and the gateway serves on.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from itertools import groupby

import structlog
import trio

from gateway.kafka_error import KafkaError
from gateway.topics.topic_registry import TopicRegistry
from gateway.wall_clock import now_ms
from protocol.errors import EncodeError
from protocol.kafka.error_codes import ErrorCode
from protocol.records import Record, RecordBatch, build_batch

log = structlog.get_logger()
ROOM_TIMEOUT_S = 30.0  # how long an append waits for the stores to take batches, before its records are lost

Keyed = tuple[int, bytes, bytes | None]  # (partition, key, value; None: a tombstone)
Change = tuple[str, Callable[[dict], list[Keyed]], dict]  # topic, records of, entry


class InternalLogs:
    def __init__(self, registry: TopicRegistry):
        self.registry = registry
        self._send, self._receive = trio.open_memory_channel[Change](math.inf)

    def emit(self, topic: str, records_of: Callable[[dict], list[Keyed]], entry: dict) -> None:
        """Append the records of a journal `entry` to the internal `topic`, soon and in order."""
        self._send.send_nowait((topic, records_of, entry))

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        async for topic, records_of, entry in self._receive:
            try:
                records = records_of(entry)
            except EncodeError as exc:  # a bug of ours: the journal holds the change, the gateway serves on
                log.error("internal_record_not_encoded", topic=topic, entry_type=entry.get("type"), reason=str(exc))
                continue
            try:
                if records:
                    await self._append(topic, records)
            except KafkaError as exc:
                log.warning("internal_record_lost", topic=topic, error=exc.code.name, reason=exc.message)

    async def _append(self, name: str, records: list[Keyed]) -> None:
        topic = await self.registry.internal(name)
        now = now_ms()
        for partition, keyed in groupby(sorted(records, key=lambda r: r[0]), key=lambda r: r[0]):
            rows = [Record(index, now, key, value) for index, (_, key, value) in enumerate(keyed)]
            if topic.partitions[partition] is None:  # a new controller, before it leads the internal topics
                raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER, f"{name}-{partition} is not led here yet")
            await topic.partitions[partition].append(RecordBatch(memoryview(bytearray(build_batch(rows)))),
                                                     room_timeout_s=ROOM_TIMEOUT_S)
