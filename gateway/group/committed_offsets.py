"""Committed offsets of every group, the in-memory side of Kafka's __consumer_offsets.

Offsets a transaction commits (TxnOffsetCommit) are held per producer id
until the transaction's marker reaches the group coordinator: COMMIT makes
them the group's, ABORT drops them (Kafka's pending transactional offset
commits). A later commit or deletion of the same partition's offset outside
the transaction wins, as in Kafka, where the later record in the log does:
the pending offset is dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gateway.wall_clock import now_ms

# Kafka's offset.metadata.max.bytes: longer metadata is refused.
MAX_METADATA_CHARS = 4096


@dataclass(frozen=True)
class Committed:
    offset: int
    leader_epoch: int
    metadata: str
    commit_ms: int
    # Only OffsetCommit v2-v4 may set an expiry of their own.
    expire_ms: int | None = None

    def entry(self, topic: str, partition: int) -> list:
        return [topic, partition, self.offset, self.leader_epoch, self.metadata, self.commit_ms, self.expire_ms]


@dataclass
class Pending:
    """A producer's offsets for one group, waiting for its transaction's marker."""

    epoch: int
    offsets: dict[tuple[str, int], Committed] = field(default_factory=dict)


class OffsetStore:
    def __init__(self):
        self._groups: dict[str, dict[tuple[str, int], Committed]] = {}
        self._pending: dict[int, dict[str, Pending]] = {}  # producer id -> group id -> its offsets

    def groups(self) -> list[str]:
        return list(self._groups)

    def of(self, group_id: str) -> dict[tuple[str, int], Committed]:
        return self._groups.get(group_id, {})

    def get(self, group_id: str, topic: str, partition: int) -> Committed | None:
        return self._groups.get(group_id, {}).get((topic, partition))

    def commit(self, group_id: str, commits: dict[tuple[str, int], Committed]) -> dict:
        """Apply commits; the journal entry that makes them durable."""
        self.apply_commit(group_id, commits)
        return _offsets_entry(group_id, commits)

    def entries(self) -> list[dict]:
        """Every group's committed offsets as journal entries, then the pending ones (which commits
        replayed after them would drop)."""
        return [*(_offsets_entry(group_id, offsets) for group_id, offsets in self._groups.items()),
                *(pending_entry(group_id, (producer_id, pending.epoch), pending.offsets)
                  for producer_id, groups in self._pending.items() for group_id, pending in groups.items())]

    def apply_commit(self, group_id: str, commits: dict[tuple[str, int], Committed]) -> None:
        if commits:
            self._groups.setdefault(group_id, {}).update(commits)
            self._drop_pending(group_id, commits)

    def apply_pending(self, group_id: str, producer: tuple[int, int], commits: dict[tuple[str, int], Committed]
                      ) -> None:
        """Hold a transaction's offsets until its marker."""
        producer_id, epoch = producer
        pending = self._pending.setdefault(producer_id, {}).setdefault(group_id, Pending(epoch))
        pending.epoch = epoch
        pending.offsets.update(commits)

    def open_transactions(self) -> int:
        """How many producers hold pending offsets."""
        return len(self._pending)

    def has_offsets(self, group_id: str) -> bool:
        """Whether the group has offsets, committed or pending (Kafka's hasOffsets: a group without
        is removed once empty)."""
        return bool(self.of(group_id)) or any(group_id in groups for groups in self._pending.values())

    def has_pending(self, group_id: str, topic: str, partition: int) -> bool:
        """Whether an open transaction holds an offset of the partition for the group."""
        return any((topic, partition) in groups[group_id].offsets
                   for groups in self._pending.values() if group_id in groups)

    def end_transaction(self, producer_id: int, commit: bool) -> list[dict]:
        """Apply (commit) or drop the producer's pending offsets; the journal entries that say so."""
        entries = []
        for group_id, pending in self._pending.pop(producer_id, {}).items():
            commits = pending.offsets if commit else {}
            self.apply_commit(group_id, commits)
            entries.append({**_offsets_entry(group_id, commits), "type": "transaction_ended",
                            "producer_id": producer_id})
        return entries

    def _forget(self, producer_id: int, group_id: str) -> None:
        groups = self._pending.get(producer_id, {})
        groups.pop(group_id, None)
        if not groups:
            self._pending.pop(producer_id, None)

    def _drop_pending(self, group_id: str, partitions) -> None:
        """Pending offsets of `partitions` lose to a change made after them."""
        for groups in self._pending.values():
            pending = groups.get(group_id)
            for key in partitions if pending is not None else ():
                pending.offsets.pop(tuple(key), None)

    def delete(self, group_id: str, partitions: list[tuple[str, int]]) -> dict:
        self.apply_delete(group_id, partitions)
        return {"type": "offsets_deleted", "group": group_id, "partitions": [list(p) for p in partitions]}

    def apply_delete(self, group_id: str, partitions: list[tuple[str, int]] | None) -> None:
        """Forget some partitions' offsets, pending ones too (Kafka's removeOffsets), or the
        whole group's (None)."""
        offsets = self._groups.get(group_id, {})
        keys = list(offsets) if partitions is None else [tuple(key) for key in partitions]
        self._drop_pending(group_id, keys)
        for key in keys:
            offsets.pop(key, None)
        if not offsets:
            self._groups.pop(group_id, None)

    def held(self, group_id: str) -> list[tuple[tuple[str, int], Committed]]:
        """The group's offsets, committed and pending, by partition (a partition may have both)."""
        pending = [item for groups in self._pending.values() if group_id in groups
                   for item in groups[group_id].offsets.items()]
        return [*self.of(group_id).items(), *pending]

    def groups_holding(self) -> list[str]:
        """The groups with offsets, committed or pending."""
        return list(dict.fromkeys([*self._groups, *(group for groups in self._pending.values() for group in groups)]))

    def replay(self, entry: dict) -> None:
        kind, group_id = entry["type"], entry["group"]
        if kind in ("offsets", "transaction_ended"):
            commits = {(topic, p): Committed(offset, epoch, metadata, commit_ms, expire_ms)
                       for topic, p, offset, epoch, metadata, commit_ms, expire_ms in entry["commits"]}
            if "producer" in entry:
                self.apply_pending(group_id, tuple(entry["producer"]), commits)
                return
            if kind == "transaction_ended":
                self._forget(entry["producer_id"], group_id)
            self.apply_commit(group_id, commits)
        else:
            self.apply_delete(group_id, None if kind == "group_deleted" else entry["partitions"])

    def expired(self, group_id: str, empty_since_ms: int | None, retention_ms: int) -> list[tuple[str, int]]:
        """Partitions whose offsets have outlived their retention (Kafka's rules).

        Offsets of a group with members never expire; those of an empty group
        expire `retention_ms` after it became empty, or after the commit for a
        group that never had members.
        """
        now = now_ms()
        gone = []
        for key, committed in self.of(group_id).items():
            if committed.expire_ms is not None:
                deadline = committed.expire_ms
            else:
                deadline = (empty_since_ms if empty_since_ms is not None else committed.commit_ms) + retention_ms
            if deadline <= now:
                gone.append(key)
        return gone


def _offsets_entry(group_id: str, commits: dict[tuple[str, int], Committed]) -> dict:
    return {"type": "offsets", "group": group_id,
            "commits": [c.entry(topic, p) for (topic, p), c in commits.items()]}


def pending_entry(group_id: str, producer: tuple[int, int], commits: dict[tuple[str, int], Committed]) -> dict:
    """The journal entry of a transaction's offsets: its producer's (id, epoch) marks them pending."""
    return {**_offsets_entry(group_id, commits), "producer": list(producer)}
