"""A lone gateway's groups and transactions, carried over to the cluster it becomes the controller of.

A lone gateway journals its groups and offsets on the `groups` journal and
its transactional ids on `transactions`; a cluster's coordinators journal
on the __consumer_offsets (__transaction_state) partition of each key
(storage/partition_journal.py) and never read those journals. So the
controller of a cluster replays them at start-up: what they hold since they
were last carried over (each group's latest state and offsets, pending
transactional offsets, each transactional id's metadata) is written, as the
entries a lone replay ends with, into the partition of its key, by this
gateway, before its coordinator of that partition replays it. Once every
such partition is written, a marker closes the lone journal: a later start,
lone or in a cluster, reads only what was written after it (a lone gateway
started again after that starts with no groups: their state is the
cluster's).

A crash before the marker carries the journal again: a group's entries get
the same serials, above every lone one, so written twice they replay once,
and a newer change made in the cluster meanwhile (a higher serial) wins; a
transactional id already in its partition is not written again (there the
newest record wins). Partitions this gateway does not lead (other gateways
joined first) are carried when it leads them; until then their groups are
empty where they are coordinated, and the lone journal stays open.
"""

from __future__ import annotations

import structlog

from gateway.group.committed_offsets import OffsetStore
from gateway.group.group_journal import GROUP_STATES, GroupLog
from gateway.group.offsets_records import keyed_slices as group_slices
from gateway.storage.coordinator_shards import BeforeLoad
from gateway.storage.journal import CARRIED_OVER, Journal, since_carried_over
from gateway.storage.partition_journal import PartitionJournal
from gateway.txn.transaction_records import keyed_slices as transaction_slices
from protocol.kafka.coordinator_records import OFFSETS_PARTITIONS, TRANSACTIONS_PARTITIONS, coordinator_partition

log = structlog.get_logger()

class LoneStateCarryOver:
    def __init__(self, journals: dict[str, Journal]):
        self.journals = {kind: journals[kind] for kind in ("groups", "transactions")}
        self.pending: dict[str, dict[int, list[dict]]] = {}  # kind -> partition -> entries still to write
        self.marker: dict[str, dict] = {}  # kind -> the marker closing its journal once carried

    async def load(self) -> None:
        """Replay the lone journals: what they hold that no cluster took yet."""
        groups, serial = _group_state(await self.journals["groups"].replay())
        newest = {entry["id"]: entry for entry in since_carried_over(await self.journals["transactions"].replay())}
        for kind, entries, partitions, key, marker in (
                ("groups", groups, OFFSETS_PARTITIONS, "group", {**CARRIED_OVER, "serial": serial + 1}),
                ("transactions", list(newest.values()), TRANSACTIONS_PARTITIONS, "id", CARRIED_OVER)):
            if entries:
                self.marker[kind] = marker
                for entry in entries:
                    self.pending.setdefault(kind, {}).setdefault(
                        coordinator_partition(entry[key], partitions), []).append(entry)
                log.info("lone_state_to_carry_over", kind=kind, entries=len(entries),
                         partitions=len(self.pending[kind]))

    def before_load(self, kind: str) -> BeforeLoad:
        """What a coordinator of `kind` runs before it replays a partition led here."""
        slices = group_slices if kind == "groups" else transaction_slices
        return lambda index, partition: self.carry(kind, index, PartitionJournal(partition, slices))

    async def carry(self, kind: str, index: int, journal: PartitionJournal) -> None:
        """Write the lone state of partition `index` into it; close the lone journal after the last."""
        entries = self.pending.get(kind, {}).get(index)
        if entries:
            if kind == "transactions":  # the newest record of an id wins: never write it over a newer one
                present = {part["id"] for part in await journal.replay()}
                entries = [entry for entry in entries if entry["id"] not in present]
            for entry in entries:
                await journal.write(entry)
            del self.pending[kind][index]
            log.info("lone_state_carried_over", kind=kind, partition=index, entries=len(entries))
        if kind in self.marker and not self.pending[kind]:
            await self.journals[kind].write(self.marker.pop(kind))
            log.info("lone_journal_carried_over", kind=kind)


def _group_state(journaled: list[dict]) -> tuple[list[dict], int]:
    """The entries a lone group coordinator's replay ends with, since the last carry-over, and the
    serial they end at."""
    offsets = OffsetStore()
    group_log = GroupLog(None, offsets)
    for entry in group_log.restore(journaled):
        if entry["type"] not in GROUP_STATES:
            offsets.replay(entry)
    entries = group_log.snapshot()
    return entries, max((entry["serial"] for entry in entries), default=0)
