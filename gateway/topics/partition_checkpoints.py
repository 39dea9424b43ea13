"""Checkpoints of partitions in log.dirs: start-up reads only the batches after them.

As Kafka keeps index files and producer-state snapshots beside its segments,
the gateway writes each partition's offset index and producer state, as of a
batch the stores have acknowledged, to `<log.dirs>/checkpoints/` every
`log.flush.offset.checkpoint.interval.ms` and at a clean stop (a temporary
file, fsynced, renamed, the directory fsynced). At start-up a checkpoint is
used only if it is intact, names the same topic id and partition, lies within
what the stores hold and agrees with the batch they hold at its sequence;
anything else is logged and the partition is rebuilt from all its batches.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import structlog
import trio

from gateway.kafka_error import KafkaError
from gateway.partitions.offset_index import OffsetIndex
from gateway.partitions.partition_log import MeshRead, PartitionLog
from gateway.partitions.producer_state import ProducerStates
from protocol.errors import DecodeError
from protocol.journal.partition_checkpoint import PartitionCheckpoint, decode_checkpoint, encode_checkpoint
from protocol.records import RecordBatch

log = structlog.get_logger()

DURABLE_WAIT_S = 10.0  # how long a checkpoint waits for its last batch to be acknowledged


@dataclass
class Recovery:
    """How start-up recovered its partitions: from checkpoints, and how many batches it read."""

    from_checkpoints: int = 0
    rebuilt: int = 0
    batches_read: int = 0

    def note(self, from_checkpoint: bool, batches_read: int) -> None:
        self.from_checkpoints += from_checkpoint
        self.rebuilt += not from_checkpoint
        self.batches_read += batches_read

    def summary(self) -> dict[str, int]:
        return {"partitions_from_checkpoints": self.from_checkpoints, "partitions_rebuilt": self.rebuilt,
                "batches_read": self.batches_read}


class PartitionCheckpoints:
    def __init__(self, directory: Path, read: MeshRead):
        self.directory = directory
        self.read = read
        self._written: dict[tuple[str, str], int] = {}  # (topic id, address) -> last sequence written

    def path(self, topic_id: str, address: str) -> Path:
        return self.directory / f"{topic_id}-{address}.checkpoint"

    async def restore(self, topic: str, topic_id: str, address: str, first_sequence: int,
                      head: int | None) -> tuple[OffsetIndex, ProducerStates] | None:
        """The partition's index and producer state from its checkpoint, if one can be trusted
        with the stores' `head`; None to rebuild it from every batch."""
        checkpoint = await trio.to_thread.run_sync(self._load, topic_id, address)
        if checkpoint is None:
            return None
        problem = await self._problem(topic, checkpoint, topic_id, address, first_sequence, head)
        if problem is not None:
            log.warning("checkpoint_not_used", topic=topic, partition=address, reason=problem)
            return None
        self._written[(topic_id, address)] = checkpoint.last_sequence
        offsets = OffsetIndex.restored(checkpoint.first_sequence, checkpoint.next_offset, checkpoint.dropped_bytes,
                                       (checkpoint.base_offsets, checkpoint.max_timestamps, checkpoint.byte_ends))
        return offsets, ProducerStates.restored(checkpoint.producers, checkpoint.transactions)

    def _load(self, topic_id: str, address: str) -> PartitionCheckpoint | None:
        path = self.path(topic_id, address)
        try:
            return decode_checkpoint(path.read_bytes())
        except FileNotFoundError:
            return None
        except (OSError, DecodeError) as exc:
            log.warning("checkpoint_unreadable", path=str(path), reason=str(exc))
            return None

    async def _problem(self, topic: str, checkpoint: PartitionCheckpoint, topic_id: str, address: str,
                       first_sequence: int, head: int | None) -> str | None:
        """Why the checkpoint cannot be used, or None."""
        if (checkpoint.topic_id, checkpoint.address) != (topic_id, address):
            return "it names another partition"
        last = checkpoint.last_sequence
        if last < checkpoint.first_sequence:
            return "it holds no batch"
        if head is None or last > head:
            return f"it goes to sequence {last}, beyond what the stores hold ({head})"
        if not checkpoint.first_sequence <= first_sequence <= last + 1:
            return f"the log starts at sequence {first_sequence}, outside its {checkpoint.first_sequence}..{last}"
        stored = await self.read(topic, address, last, 1)
        if not stored or stored[0][0] != last or RecordBatch(memoryview(stored[0][1])).base_offset != (
                checkpoint.base_offsets[-1]):
            return f"the stores' batch at sequence {last} is not the one it indexed"
        return None

    async def write(self, partitions: list[tuple[str, PartitionLog]]) -> int:
        """Checkpoint the (topic id, partition)s that took batches since their last checkpoint,
        each once its last batch is acknowledged, in one pass over the disk; how many."""
        due = []
        for topic_id, partition in partitions:
            checkpoint = partition.checkpoint(topic_id)
            last = checkpoint.last_sequence
            if last >= checkpoint.first_sequence and self._written.get((topic_id, checkpoint.address)) != last:
                due.append((checkpoint, partition))
        durable: list[PartitionCheckpoint] = []

        async def once_durable(checkpoint: PartitionCheckpoint, partition: PartitionLog) -> None:
            try:
                await partition.wait_durable(checkpoint.last_sequence)
            except KafkaError:  # deposed meanwhile: its new leader checkpoints it
                return
            durable.append(checkpoint)

        # Together, and only those that can become durable now: a partition with fewer stores in sync
        # than its min.insync.replicas would hold up the others' checkpoints and a clean stop for the
        # whole wait, to be rebuilt from its batches at the next start anyway.
        with trio.move_on_after(DURABLE_WAIT_S):
            async with trio.open_nursery() as nursery:
                for checkpoint, partition in due:
                    if partition.in_sync_stores() >= partition.min_insync:
                        nursery.start_soon(once_durable, checkpoint, partition)
        if durable:
            await trio.to_thread.run_sync(self._store, durable)
        for checkpoint in durable:
            self._written[(checkpoint.topic_id, checkpoint.address)] = checkpoint.last_sequence
        return len(durable)

    def forget(self, topic_id: str, address: str) -> None:
        """A deleted partition's checkpoint goes with it."""
        self._written.pop((topic_id, address), None)
        self.path(topic_id, address).unlink(missing_ok=True)

    def _store(self, checkpoints: list[PartitionCheckpoint]) -> None:
        """Each file written aside, fsynced and renamed into place; the directory synced once."""
        self.directory.mkdir(parents=True, exist_ok=True)
        for checkpoint in checkpoints:
            path = self.path(checkpoint.topic_id, checkpoint.address)
            partial = path.with_suffix(".partial")
            with open(partial, "wb") as file:
                file.write(encode_checkpoint(checkpoint))
                file.flush()
                os.fsync(file.fileno())
            os.replace(partial, path)
        directory = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
