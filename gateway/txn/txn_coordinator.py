"""The transaction coordinator, as Kafka's for transaction protocol version 1.

A transactional id moves Empty -> Ongoing -> PrepareCommit/PrepareAbort ->
CompleteCommit/CompleteAbort. Each change is durable in the transaction
journal before it is answered. EndTxn is answered once the Prepare state is
durable; the markers are then written to every partition of the
transaction, and until the Complete state is recorded the id answers
CONCURRENT_TRANSACTIONS. Offsets sent to the transaction are the group
coordinator's (TxnOffsetCommit goes there): AddOffsetsToTxn adds the group's
__consumer_offsets partition, whose marker ends them
(group/offsets_markers.py). A transaction open longer than its timeout, or
still open when a new producer takes over its id, is aborted with the epoch
bumped, which fences its producer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Protocol

import structlog
import trio

from gateway.kafka_error import KafkaError
from gateway.lifecycle import failures
from gateway.settings.table import BrokerSettings
from gateway.storage.journal import Journal, since_carried_over
from gateway.txn.marker_writer import PartitionOf, write_markers
from gateway.txn.txn_metadata import MAX_EPOCH, NO_EPOCH, PREPARING, TransactionMetadata, TxnState
from gateway.wall_clock import now_ms
from protocol.kafka.coordinator_records import OFFSETS_PARTITIONS, OFFSETS_TOPIC, coordinator_partition
from protocol.kafka.error_codes import ErrorCode

log = structlog.get_logger()

RETRY_DELAY_S = 1.0


def offsets_partition(group_id: str) -> int:
    """The __consumer_offsets partition Kafka keeps a group in."""
    return coordinator_partition(group_id, OFFSETS_PARTITIONS)


def refuse(code: ErrorCode, message: str):
    raise KafkaError(code, message)


class ProducerIds(Protocol):
    async def allocate(self) -> int: ...


class TransactionCoordinator:
    def __init__(self, settings: BrokerSettings, journal: Journal, producer_ids: ProducerIds,
                 partition_of: PartitionOf, coordinator_epoch: int = 0):
        self.journal = journal
        self.coordinator_epoch = coordinator_epoch  # its partition's leader epoch in a cluster
        self.producer_ids = producer_ids
        self.partition_of = partition_of
        self.max_timeout_ms = settings.transaction_max_timeout_ms
        self.abort_interval_s = settings.transaction_abort_timed_out_transaction_cleanup_interval_ms / 1000
        self._transactions: dict[str, TransactionMetadata] = {}
        self._writing: set[str] = set()  # ids whose next state is being journaled
        self._nursery: trio.Nursery | None = None
        self.on_change: Callable[[dict], None] = lambda entry: None  # told each id's journaled metadata

    def transaction(self, transactional_id: str) -> TransactionMetadata | None:
        return self._transactions.get(transactional_id)

    def transactions(self) -> list[TransactionMetadata]:
        return list(self._transactions.values())

    def unloaded(self) -> None:
        """Another gateway coordinates these ids now: nothing waits here (completions are cancelled
        with the coordinator, and the next one completes what was prepared)."""

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Load the journal, finish what was prepared, then abort timed-out transactions."""
        for entry in since_carried_over(await self.journal.replay()):
            txn = TransactionMetadata.from_entry(entry)
            self._transactions[txn.transactional_id] = txn
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            self.journal.compact_with(nursery, self._snapshot)
            for txn in self._transactions.values():
                if txn.state in PREPARING:
                    nursery.start_soon(self._complete, txn)
            log.info("transactions_loaded", ids=len(self._transactions))
            task_status.started()
            while True:
                await trio.sleep(self.abort_interval_s)
                await self._abort_timed_out()

    # InitProducerId --------------------------------------------------------

    async def init_producer_id(self, transactional_id: str, timeout_ms: int,
                               expected: tuple[int, int] | None) -> TransactionMetadata:
        """The id's producer id and new epoch; `expected` is the (id, epoch) the producer
        had, for a producer recovering from an error (KIP-360)."""
        if not 0 < timeout_ms <= self.max_timeout_ms:
            refuse(ErrorCode.INVALID_TRANSACTION_TIMEOUT,
                   f"transaction.timeout.ms {timeout_ms} is not in (0, {self.max_timeout_ms}]")
        txn = self._transactions.get(transactional_id)
        if txn is None:
            producer_id = await self.producer_ids.allocate()
            txn = self._transactions.setdefault(
                transactional_id, TransactionMetadata(transactional_id, producer_id, timeout_ms))
        self._check_not_writing(txn)
        if expected is not None and not _may_continue(txn, *expected):
            refuse(ErrorCode.PRODUCER_FENCED, f"producer {expected} is not the current one of {transactional_id}")
        if txn.state in PREPARING:
            refuse(ErrorCode.CONCURRENT_TRANSACTIONS, f"{transactional_id} is completing a transaction")
        if txn.state == TxnState.ONGOING:
            await self._abort(txn, fence=True)
            refuse(ErrorCode.CONCURRENT_TRANSACTIONS, f"aborting the open transaction of {transactional_id}")
        if txn.epoch_exhausted and (expected is None or expected[1] == txn.producer_epoch):
            producer_id = await self.producer_ids.allocate()
            self._check_not_writing(txn)
            fresh = replace(txn, producer_id=producer_id, producer_epoch=0, last_producer_id=txn.producer_id,
                            last_producer_epoch=txn.producer_epoch if expected else NO_EPOCH)
        else:
            fresh = replace(txn, **_next_epoch(txn, expected))
        return await self._record(replace(fresh, state=TxnState.EMPTY, timeout_ms=timeout_ms, partitions=set(),
                                          start_ms=-1, update_ms=now_ms()))

    # Within a transaction --------------------------------------------------

    async def add_partitions(self, transactional_id: str, producer_id: int, epoch: int,
                             partitions: set[tuple[str, int]]) -> None:
        txn = self._current(transactional_id, producer_id, epoch)
        if txn.state == TxnState.ONGOING and partitions <= txn.partitions:
            return
        await self._record(_ongoing(txn, partitions=txn.partitions | partitions))

    async def add_offsets(self, transactional_id: str, producer_id: int, epoch: int, group_id: str) -> None:
        await self.add_partitions(transactional_id, producer_id, epoch, {(OFFSETS_TOPIC, offsets_partition(group_id))})

    def check_offsets(self, transactional_id: str, producer_id: int, epoch: int, group_id: str) -> None:
        """Refuse TxnOffsetCommit's offsets of a group whose partition is not in the producer's
        transaction (AddOffsetsToTxn did not add it): Kafka's verification of the group coordinator."""
        txn = self._current(transactional_id, producer_id, epoch)
        if txn.state != TxnState.ONGOING or (OFFSETS_TOPIC, offsets_partition(group_id)) not in txn.partitions:
            refuse(ErrorCode.INVALID_TXN_STATE, f"group {group_id} was not added to the transaction of "
                                                f"{transactional_id}")

    def check_produce(self, transactional_id: str, producer_id: int, epoch: int, topic: str, partition: int) -> None:
        """Refuse a transactional batch for a partition outside the producer's transaction
        (Kafka's partition verification, KIP-890), with the codes of Kafka's coordinator
        (handleVerifyPartitionsInTransaction), which Produce translates as Kafka's broker does."""
        txn = self._transactions.get(transactional_id)
        if txn is None or txn.producer_id != producer_id:
            refuse(ErrorCode.INVALID_PRODUCER_ID_MAPPING, f"{transactional_id} does not hold producer {producer_id}")
        if epoch != txn.producer_epoch:
            refuse(ErrorCode.PRODUCER_FENCED, f"epoch {epoch} is not {transactional_id}'s current one")
        if txn.state in PREPARING:
            refuse(ErrorCode.CONCURRENT_TRANSACTIONS, f"{transactional_id} is completing its transaction")
        if txn.state != TxnState.ONGOING or (topic, partition) not in txn.partitions:
            refuse(ErrorCode.TRANSACTION_ABORTABLE,
                   f"{topic}/{partition} is not in the transaction of {transactional_id}")

    # EndTxn ----------------------------------------------------------------

    async def end_transaction(self, transactional_id: str, producer_id: int, epoch: int, commit: bool) -> None:
        txn = self._holder(transactional_id, producer_id, epoch)
        self._check_not_writing(txn)
        wanted = (TxnState.PREPARE_COMMIT, TxnState.COMPLETE_COMMIT) if commit else \
            (TxnState.PREPARE_ABORT, TxnState.COMPLETE_ABORT)
        if txn.state == TxnState.ONGOING:
            await self._prepare(txn, commit)
        elif txn.state == wanted[0]:
            refuse(ErrorCode.CONCURRENT_TRANSACTIONS, f"{transactional_id} is completing its transaction")
        elif txn.state != wanted[1]:  # a retry of a completed EndTxn succeeds
            refuse(ErrorCode.INVALID_TXN_STATE,
                   f"cannot {'commit' if commit else 'abort'} {transactional_id} in state {txn.state.value}")

    async def _abort(self, txn: TransactionMetadata, *, fence: bool) -> None:
        bumped = txn.producer_epoch if txn.epoch_exhausted else txn.producer_epoch + 1
        await self._prepare(replace(txn, producer_epoch=bumped, last_producer_epoch=NO_EPOCH) if fence else txn,
                            commit=False)

    async def _prepare(self, txn: TransactionMetadata, commit: bool) -> None:
        state = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
        prepared = await self._record(replace(txn, state=state, update_ms=now_ms()))
        self._nursery.start_soon(self._complete, prepared)

    async def _complete(self, txn: TransactionMetadata) -> None:
        """Markers, then the Complete state; retried until it succeeds."""
        commit = txn.state == TxnState.PREPARE_COMMIT
        while True:
            try:
                await write_markers(self.partition_of, txn, commit, self.coordinator_epoch)
                state = TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT
                await self._record(replace(txn, state=state, partitions=set(), update_ms=now_ms()))
                log.info("transaction_completed", id=txn.transactional_id, state=state.value,
                         producer_id=txn.producer_id, epoch=txn.producer_epoch)
                return
            except* KafkaError as refused:  # a partition moving to another leader, or short of stores
                log.warning("transaction_completion_retried", id=txn.transactional_id,
                            errors=[f"{exc.code.name}: {exc.message}" for exc in failures(refused)])
            except* Exception:
                log.exception("transaction_completion_failed", id=txn.transactional_id)
            await trio.sleep(RETRY_DELAY_S)

    async def _abort_timed_out(self) -> None:
        now = now_ms()
        for txn in list(self._transactions.values()):
            if (txn.state == TxnState.ONGOING and txn.start_ms + txn.timeout_ms < now
                    and txn.transactional_id not in self._writing):
                log.info("transaction_timed_out", id=txn.transactional_id, timeout_ms=txn.timeout_ms)
                await self._abort(txn, fence=True)

    # Checks and the journal ------------------------------------------------

    def _holder(self, transactional_id: str, producer_id: int, epoch: int) -> TransactionMetadata:
        """The id's metadata if the producer (id and epoch) holds it."""
        txn = self._transactions.get(transactional_id)
        if txn is None or txn.producer_id != producer_id:
            refuse(ErrorCode.INVALID_PRODUCER_ID_MAPPING, f"{transactional_id} does not hold producer {producer_id}")
        if epoch != txn.producer_epoch:
            refuse(ErrorCode.PRODUCER_FENCED,
                   f"epoch {epoch} of producer {producer_id} is not the current {txn.producer_epoch}")
        return txn

    def _current(self, transactional_id: str, producer_id: int, epoch: int) -> TransactionMetadata:
        """The holder's metadata if a transaction may be added to now."""
        txn = self._holder(transactional_id, producer_id, epoch)
        self._check_not_writing(txn)
        if txn.state in PREPARING:
            refuse(ErrorCode.CONCURRENT_TRANSACTIONS, f"{transactional_id} is completing a transaction")
        return txn

    def _check_not_writing(self, txn: TransactionMetadata) -> None:
        if txn.transactional_id in self._writing:
            refuse(ErrorCode.CONCURRENT_TRANSACTIONS, f"{txn.transactional_id} is changing state")

    def _snapshot(self) -> list[dict]:
        """Every id's metadata as journal entries (the journal's compaction)."""
        return [txn.entry() for txn in self._transactions.values()]

    async def _record(self, txn: TransactionMetadata) -> TransactionMetadata:
        """Journal `txn`, then make it the id's metadata."""
        self._writing.add(txn.transactional_id)
        try:
            entry = txn.entry()
            await self.journal.write(entry)
            self.on_change(entry)
        finally:
            self._writing.discard(txn.transactional_id)
        self._transactions[txn.transactional_id] = txn
        return txn


def _may_continue(txn: TransactionMetadata, producer_id: int, epoch: int) -> bool:
    """Whether a producer that names (id, epoch) may take the id's next epoch."""
    # A retry of an InitProducerId that moved the id to a new producer id.
    retried_rotation = producer_id == txn.last_producer_id and epoch >= MAX_EPOCH - 1
    return txn.producer_epoch == NO_EPOCH or producer_id == txn.producer_id or retried_rotation


def _next_epoch(txn: TransactionMetadata, expected: tuple[int, int] | None) -> dict:
    """The epoch fields after InitProducerId: bumped, or unchanged for a retry."""
    bumped = txn.producer_epoch + 1
    if expected is None:
        return {"producer_epoch": bumped, "last_producer_epoch": NO_EPOCH}
    if txn.producer_epoch == NO_EPOCH or expected[1] == txn.producer_epoch:
        return {"producer_epoch": bumped, "last_producer_epoch": txn.producer_epoch}
    if expected[1] == txn.last_producer_epoch:
        return {}
    refuse(ErrorCode.PRODUCER_FENCED, f"epoch {expected[1]} of {txn.transactional_id} is stale")


def _ongoing(txn: TransactionMetadata, *, partitions: set[tuple[str, int]]) -> TransactionMetadata:
    """`txn` with a transaction open over `partitions` (a new one if none was)."""
    now = now_ms()
    if txn.state == TxnState.ONGOING:
        return replace(txn, partitions=partitions, update_ms=now)
    return replace(txn, state=TxnState.ONGOING, partitions=partitions, start_ms=now, update_ms=now)
