"""What the coordinator knows of one transactional id, as Kafka's TransactionMetadata.

Every change is written whole to the transaction journal before it takes
effect, so a restarted coordinator finds each id as it last was.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

NO_PRODUCER_ID = -1
NO_EPOCH = -1
MAX_EPOCH = 32767  # an int16: a producer id's epochs run out at MAX_EPOCH - 1


class TxnState(Enum):
    """Kafka's states, named as DescribeTransactions and ListTransactions name them."""

    EMPTY = "Empty"
    ONGOING = "Ongoing"
    PREPARE_COMMIT = "PrepareCommit"
    PREPARE_ABORT = "PrepareAbort"
    COMPLETE_COMMIT = "CompleteCommit"
    COMPLETE_ABORT = "CompleteAbort"
    DEAD = "Dead"
    PREPARE_EPOCH_FENCE = "PrepareEpochFence"


PREPARING = (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)
COMPLETED = (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)


@dataclass
class TransactionMetadata:
    transactional_id: str
    producer_id: int
    timeout_ms: int
    producer_epoch: int = NO_EPOCH
    last_producer_id: int = NO_PRODUCER_ID
    last_producer_epoch: int = NO_EPOCH
    state: TxnState = TxnState.EMPTY
    partitions: set[tuple[str, int]] = field(default_factory=set)
    start_ms: int = -1
    update_ms: int = -1

    @property
    def epoch_exhausted(self) -> bool:
        return self.producer_epoch >= MAX_EPOCH - 1

    def entry(self) -> dict:
        """The journal entry that restores this metadata."""
        return {
            "type": "transaction", "id": self.transactional_id, "producer_id": self.producer_id,
            "epoch": self.producer_epoch, "last_producer_id": self.last_producer_id,
            "last_epoch": self.last_producer_epoch, "timeout_ms": self.timeout_ms,
            "state": self.state.value, "partitions": sorted(self.partitions),
            "start_ms": self.start_ms, "update_ms": self.update_ms,
        }

    @classmethod
    def from_entry(cls, entry: dict) -> TransactionMetadata:
        return cls(
            entry["id"], entry["producer_id"], entry["timeout_ms"], entry["epoch"],
            entry["last_producer_id"], entry["last_epoch"], TxnState(entry["state"]),
            {(t, p) for t, p in entry["partitions"]},
            entry["start_ms"], entry["update_ms"],
        )
