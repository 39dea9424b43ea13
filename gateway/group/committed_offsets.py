"""Committed offsets of every group, the in-memory side of Kafka's __consumer_offsets."""

from __future__ import annotations

from dataclasses import dataclass

from gateway.group.classic import now_ms

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


class OffsetStore:
    def __init__(self):
        self._groups: dict[str, dict[tuple[str, int], Committed]] = {}

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
        """Every group's committed offsets as journal entries."""
        return [_offsets_entry(group_id, offsets) for group_id, offsets in self._groups.items()]

    def apply_commit(self, group_id: str, commits: dict[tuple[str, int], Committed]) -> None:
        self._groups.setdefault(group_id, {}).update(commits)

    def delete(self, group_id: str, partitions: list[tuple[str, int]]) -> dict:
        self.apply_delete(group_id, partitions)
        return {"type": "offsets_deleted", "group": group_id, "partitions": [list(p) for p in partitions]}

    def apply_delete(self, group_id: str, partitions: list[tuple[str, int]] | None) -> None:
        """Forget some partitions' offsets, or the whole group's (None)."""
        offsets = self._groups.get(group_id)
        if offsets is None:
            return
        for key in partitions if partitions is not None else list(offsets):
            offsets.pop(tuple(key), None)
        if not offsets:
            del self._groups[group_id]

    def replay(self, entry: dict) -> None:
        if entry["type"] == "offsets":
            self.apply_commit(entry["group"], {
                (topic, p): Committed(offset, epoch, metadata, commit_ms, expire_ms)
                for topic, p, offset, epoch, metadata, commit_ms, expire_ms in entry["commits"]})
        else:
            self.apply_delete(entry["group"], entry["partitions"])

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
