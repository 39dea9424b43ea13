"""A clean stop's checkpoints wait only for partitions that can become durable, all together."""

from __future__ import annotations

from array import array

import trio

from gateway.kafka_error import KafkaError
from gateway.topics.partition_checkpoints import DURABLE_WAIT_S, PartitionCheckpoints
from protocol.journal.partition_checkpoint import PartitionCheckpoint
from protocol.kafka.error_codes import ErrorCode

EMPTY_TRANSACTIONS = {"ongoing": [], "ending": [], "aborted": []}


class Partition:
    """A led partition of one batch (sequence 0) that `min_insync` stores must hold; `in_sync`
    stores are in sync, and the batch is acknowledged after `acked_after` seconds (None: never)."""

    def __init__(self, address: str, in_sync: int, min_insync: int, acked_after: float | None,
                 deposed: bool = False):
        self.address, self._in_sync, self.min_insync = address, in_sync, min_insync
        self._acked_after, self._deposed = acked_after, deposed

    def in_sync_stores(self) -> int:
        return self._in_sync

    def checkpoint(self, topic_id: str) -> PartitionCheckpoint:
        return PartitionCheckpoint(topic_id, self.address, 0, 1, 0, array("q", [0]), array("q", [0]),
                                   array("q", [100]), [], EMPTY_TRANSACTIONS)

    async def wait_durable(self, sequence: int) -> None:
        if self._acked_after is None:
            await trio.sleep_forever()
        await trio.sleep(self._acked_after)
        if self._deposed:
            raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER, "deposed")


async def test_an_under_replicated_partition_holds_up_neither_the_stop_nor_the_others(tmp_path, autojump_clock):
    checkpoints = PartitionCheckpoints(tmp_path, read=None)
    partitions = [("t", Partition("A" * 32, in_sync=1, min_insync=2, acked_after=None)),
                  ("t", Partition("B" * 32, in_sync=1, min_insync=1, acked_after=0.5)),
                  ("t", Partition("C" * 32, in_sync=1, min_insync=1, acked_after=0.2, deposed=True)),
                  ("t", Partition("D" * 32, in_sync=2, min_insync=2, acked_after=1.0))]
    started = trio.current_time()
    assert await checkpoints.write(partitions) == 2
    assert trio.current_time() - started < DURABLE_WAIT_S / 5
    assert sorted(path.name for path in tmp_path.glob("*.checkpoint")) == [f"t-{'B' * 32}.checkpoint",
                                                                           f"t-{'D' * 32}.checkpoint"]
