"""The gateway's own metadata, durable as JSON records on one Dafka partition.

Kafka keeps cluster metadata in an internal log; so does the gateway: every
change to a topic is appended as the topic's whole new state (or its
deletion), acknowledged by the stores before the change is answered, and
replayed in order when the gateway starts.
"""

from __future__ import annotations

import json
import uuid

from typing import TYPE_CHECKING

import structlog

if TYPE_CHECKING:
    from .broker.storage import MeshStorage

log = structlog.get_logger()


def journal_uuid(cluster_id: str, kind: str = "metadata") -> str:
    """The journal's partition address: the same for every start of a cluster."""
    return uuid.uuid5(uuid.NAMESPACE_URL, f"dafka-gateway:{cluster_id}:{kind}").hex.upper()


class Journal:
    """One journal per `kind` of state: topic metadata, or group state and offsets."""

    def __init__(self, storage: MeshStorage, cluster_id: str, min_insync: int, kind: str = "metadata"):
        self.storage = storage
        self.subject = f"__dafka_gateway_{kind}"
        self.uuid = journal_uuid(cluster_id, kind)
        self.min_insync = min_insync
        self._partition = None

    async def replay(self) -> list[dict]:
        """Every entry written so far, oldest first; then the journal takes writes."""
        entries = []
        next_sequence = 0
        head = (await self.storage.heads(self.subject)).get(self.uuid)
        async for sequence, content in self.storage.contents(self.subject, self.uuid, head):
            entries.append(json.loads(bytes(content)))
            next_sequence = sequence + 1
        self._partition = self.storage.host(self.subject, self.uuid, next_sequence)
        log.info("journal_replayed", subject=self.subject, entries=len(entries), uuid=self.uuid)
        return entries

    async def write(self, entry: dict) -> None:
        """Append an entry and return once `min_insync` stores hold it."""
        content = json.dumps(entry, separators=(",", ":")).encode()
        sequence = await self._partition.publish(content)
        await self._partition.wait_acked(sequence, self.min_insync)
