"""Discard directives: the gateway tells the stores what lies below each log start.

Retention and DeleteRecords move a partition's log start; once that is in the
metadata journal, the gateway publishes on the cluster's discard partition the
sequence below which the stores may delete the partition's records. Nothing
waits for the stores' ACKs: a directive only grows, a later one supersedes a
lost one, and start-up sends every partition's again.
"""

from __future__ import annotations

import structlog

from gateway.storage.mesh_storage import MeshStorage
from protocol.journal.discard_directive import DISCARD_SUBJECT, Discard, encode_discard
from protocol.journal.journal_records import generation_uuid

log = structlog.get_logger()


class DiscardDirectives:
    def __init__(self, storage: MeshStorage, cluster_id: str):
        self.storage = storage
        self.address = generation_uuid(cluster_id, "discard", 0)
        self._partition = None

    async def open(self) -> None:
        """Publish after what the stores hold already (the heads were prefetched)."""
        head = (await self.storage.heads(DISCARD_SUBJECT)).get(self.address, -1)
        self._partition = self.storage.host(DISCARD_SUBJECT, self.address, head + 1)

    def close(self) -> None:
        """Stop hosting the discard partition: another gateway sends the directives from now on."""
        if self._partition is not None:
            self.storage.release(self._partition)
            self._partition = None

    async def send(self, discards: list[Discard]) -> None:
        if discards:
            await self._partition.publish_many([encode_discard(discard) for discard in discards])
            log.info("discard_directives_sent", directives=len(discards))
