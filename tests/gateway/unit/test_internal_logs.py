"""The internal topics' writer serves on past a change it cannot encode."""

from __future__ import annotations

from types import SimpleNamespace

import trio

from gateway.topics.internal_logs import InternalLogs
from protocol.errors import EncodeError
from protocol.records import RecordBatch


class Partition:
    def __init__(self):
        self.batches: list[RecordBatch] = []

    async def append(self, batch: RecordBatch, room_timeout_s: float) -> None:
        self.batches.append(batch)


class Registry:
    def __init__(self):
        self.partition = Partition()

    async def internal(self, name: str):
        return SimpleNamespace(partitions=[self.partition])


def unencodable(entry: dict):
    raise EncodeError("protocol_type: None is not a string")


def one_record(entry: dict):
    return [(0, b"key", b"value")]


async def test_a_change_that_does_not_encode_is_logged_and_the_next_written():
    registry = Registry()
    logs = InternalLogs(registry)
    async with trio.open_nursery() as nursery:
        await nursery.start(logs.run)
        logs.emit("__consumer_offsets", unencodable, {"type": "group"})
        logs.emit("__consumer_offsets", one_record, {"type": "offsets"})
        with trio.fail_after(5):
            while not registry.partition.batches:
                await trio.sleep(0.01)
        nursery.cancel_scope.cancel()
    [batch] = registry.partition.batches
    assert [(record.key, record.value) for record in batch.records()] == [(b"key", b"value")]
