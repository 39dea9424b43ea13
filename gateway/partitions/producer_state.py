"""Idempotent producers on one partition: epochs and sequence numbers.

Kafka keeps, per producer id, the epoch and the last five batches appended;
a retried batch that matches one of them is a duplicate and is answered with
its original offset, a gap in sequence numbers is refused, and so is a stale
epoch. As in Kafka since KIP-360, a producer the partition has no state for
may start at any sequence. Transaction markers (control batches) end the
producer's open transaction. A duplicate is answered with its original's
offset and timestamp, as Kafka answers it (the batch's max timestamp as
stored, its LogAppendTime on a LogAppendTime topic). A batch without a sequence (NO_SEQUENCE) is a
coordinator's own, as the group coordinator writes TxnOffsetCommit's
offsets: its epoch is checked, not its sequence, as Kafka appends batches of
coordinator origin. The state is checkpointed with the partition and
rebuilt from the batch headers after the checkpoint when the partition is
opened, so it survives a restart.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from gateway.kafka_error import KafkaError
from gateway.partitions.transaction_index import TransactionIndex
from protocol.kafka.error_codes import ErrorCode
from protocol.records import ControlType, read_batch_marker

KEPT_BATCHES = 5
MAX_SEQUENCE = 0x7FFFFFFF
NO_PRODUCER_ID = -1
NO_SEQUENCE = -1


@dataclass(frozen=True)
class AppendedBatch:
    first_sequence: int
    last_sequence: int
    base_offset: int
    dafka_sequence: int
    max_timestamp: int = -1  # as stored; -1 in checkpoints from before it was kept


@dataclass
class ProducerEntry:
    epoch: int
    batches: deque[AppendedBatch] = field(default_factory=lambda: deque(maxlen=KEPT_BATCHES))
    last_timestamp: int = -1
    coordinator_epoch: int = -1

    def next_sequence(self) -> int:
        return (self.batches[-1].last_sequence + 1) & MAX_SEQUENCE if self.batches else 0


@dataclass(frozen=True)
class ActiveProducer:
    """What DescribeProducers tells of a producer with state on a partition."""

    producer_id: int
    epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    current_txn_start_offset: int  # -1 outside a transaction


def last_sequence(batch) -> int:
    return (batch.base_sequence + batch.last_offset_delta) & MAX_SEQUENCE


class ProducerStates:
    def __init__(self):
        self.producers: dict[int, ProducerEntry] = {}
        self.transactions = TransactionIndex()

    def state(self) -> list:
        """What a checkpoint keeps of the producers, as plain lists."""
        return [[producer_id, entry.epoch, entry.last_timestamp, entry.coordinator_epoch,
                 [[b.first_sequence, b.last_sequence, b.base_offset, b.dafka_sequence, b.max_timestamp]
                  for b in entry.batches]]
                for producer_id, entry in self.producers.items()]

    @classmethod
    def restored(cls, producers: list, transactions: dict) -> ProducerStates:
        states = cls()
        for producer_id, epoch, last_timestamp, coordinator_epoch, batches in producers:
            entry = states.producers[producer_id] = ProducerEntry(epoch, last_timestamp=last_timestamp,
                                                                  coordinator_epoch=coordinator_epoch)
            entry.batches.extend(AppendedBatch(*fields) for fields in batches)
        states.transactions = TransactionIndex.restored(transactions)
        return states

    def active(self) -> list[ActiveProducer]:
        return [ActiveProducer(producer_id, entry.epoch, entry.batches[-1].last_sequence if entry.batches else -1,
                               entry.last_timestamp, entry.coordinator_epoch,
                               self.transactions.ongoing.get(producer_id, -1))
                for producer_id, entry in self.producers.items()]

    def duplicate_of(self, batch) -> AppendedBatch | None:
        """The earlier append `batch` repeats, None for a new batch; KafkaError if refused."""
        producer_id = batch.producer_id
        if producer_id == NO_PRODUCER_ID:
            return None
        entry = self.producers.get(producer_id)
        if entry is None:
            return None
        epoch, first = batch.producer_epoch, batch.base_sequence
        if epoch < entry.epoch:
            raise KafkaError(ErrorCode.INVALID_PRODUCER_EPOCH,
                             f"producer {producer_id} epoch {epoch} is older than {entry.epoch}")
        if batch.is_control:
            coordinator_epoch = read_batch_marker(batch).coordinator_epoch
            if coordinator_epoch < entry.coordinator_epoch:
                raise KafkaError(ErrorCode.TRANSACTION_COORDINATOR_FENCED,
                                 f"marker of coordinator epoch {coordinator_epoch} for producer {producer_id}, "
                                 f"which has seen epoch {entry.coordinator_epoch}")
            return None
        if first == NO_SEQUENCE:
            return None
        if epoch > entry.epoch:
            if first != 0:
                raise KafkaError(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                                 f"producer {producer_id} epoch {epoch} must start at sequence 0, not {first}")
            return None
        last = last_sequence(batch)
        for appended in entry.batches:
            if appended.first_sequence == first and appended.last_sequence == last:
                return appended
        if first != entry.next_sequence():
            raise KafkaError(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                             f"producer {producer_id} sent sequence {first}, {entry.next_sequence()} expected")
        if not batch.is_transactional and producer_id in self.transactions.ongoing:
            raise KafkaError(ErrorCode.INVALID_TXN_STATE,
                             f"producer {producer_id} has a transaction open: its writes must be transactional")
        return None

    def appended(self, batch, base_offset: int, dafka_sequence: int) -> None:
        """Note a batch just appended (or replayed at start-up)."""
        producer_id = batch.producer_id
        if producer_id == NO_PRODUCER_ID:
            return
        entry = self.producers.get(producer_id)
        if entry is None or batch.producer_epoch != entry.epoch:
            entry = self.producers[producer_id] = ProducerEntry(
                batch.producer_epoch, coordinator_epoch=entry.coordinator_epoch if entry else -1)
        entry.last_timestamp = batch.max_timestamp
        if batch.is_control:
            if batch.record_count == 0:  # a marker compaction removed with all its transaction's records
                self.transactions.end(producer_id, base_offset, aborted=None)
                return
            marker = read_batch_marker(batch)
            entry.coordinator_epoch = marker.coordinator_epoch
            self.transactions.end(producer_id, base_offset, aborted=marker.type == ControlType.ABORT)
            return
        if batch.base_sequence != NO_SEQUENCE:
            entry.batches.append(AppendedBatch(batch.base_sequence, last_sequence(batch),
                                               base_offset, dafka_sequence, batch.max_timestamp))
        if batch.is_transactional:
            self.transactions.begin(producer_id, base_offset)
