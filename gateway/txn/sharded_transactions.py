"""The transaction coordinator of a cluster of gateways: one TransactionCoordinator per
__transaction_state partition led here (storage/coordinator_shards.py), journaled on that partition.

A partition's leader checks a transactional batch against the transaction
only where it coordinates the id (Kafka's partition verification); elsewhere
the batch is taken unverified, as Kafka's leaders take it without
verification, the partition's producer state still fencing older epochs.
So does a group coordinator with TxnOffsetCommit's offsets.
"""

from __future__ import annotations

from gateway.settings.table import BrokerSettings
from gateway.storage.coordinator_shards import BeforeLoad, CoordinatorShards
from gateway.storage.partition_journal import PartitionJournal
from gateway.txn.marker_writer import PartitionOf
from gateway.txn.transaction_records import keyed_slices
from gateway.txn.txn_coordinator import ProducerIds, TransactionCoordinator
from gateway.txn.txn_metadata import TransactionMetadata
from protocol.kafka.coordinator_records import TRANSACTIONS_PARTITIONS, TRANSACTIONS_TOPIC

# Calls whose first argument is the transactional id, served by its coordinator as they are.
BY_TRANSACTIONAL_ID = frozenset({"init_producer_id", "add_partitions", "add_offsets", "end_transaction"})


class ShardedTransactions(CoordinatorShards[TransactionCoordinator]):
    def __init__(self, settings: BrokerSettings, producer_ids: ProducerIds, partition_of: PartitionOf,
                 before_load: BeforeLoad):
        super().__init__(TRANSACTIONS_TOPIC, TRANSACTIONS_PARTITIONS, lambda partition: TransactionCoordinator(
            settings, PartitionJournal(partition, keyed_slices), producer_ids, partition_of,
            coordinator_epoch=partition.leader_epoch), before_load)

    def __getattr__(self, name: str):
        if name not in BY_TRANSACTIONAL_ID:
            raise AttributeError(name)
        return lambda transactional_id, *args: getattr(self.coordinator(transactional_id), name)(transactional_id,
                                                                                                  *args)

    def check_produce(self, transactional_id: str, producer_id: int, epoch: int, topic: str, partition: int) -> None:
        shard = self.local(transactional_id)
        if shard is not None and shard.loaded:
            shard.coordinator.check_produce(transactional_id, producer_id, epoch, topic, partition)

    def check_offsets(self, transactional_id: str, producer_id: int, epoch: int, group_id: str) -> None:
        """TxnOffsetCommit's verification, where this gateway coordinates the id (the group
        coordinator's partition fences older epochs wherever it is)."""
        shard = self.local(transactional_id)
        if shard is not None and shard.loaded:
            shard.coordinator.check_offsets(transactional_id, producer_id, epoch, group_id)

    def transaction(self, transactional_id: str) -> TransactionMetadata | None:
        shard = self.local(transactional_id)
        return shard.coordinator.transaction(transactional_id) if shard is not None and shard.loaded else None

    def transactions(self) -> list[TransactionMetadata]:
        return [txn for coordinator in self.loaded() for txn in coordinator.transactions()]
