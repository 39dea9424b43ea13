"""The cluster's finalized feature levels and their epoch, durable in the `features` journal.

Each change is journaled as the whole set of levels with the epoch it
brings, one more than the last: ApiVersions reports that epoch, so a client
can tell newer finalized levels from older ones. A cluster that has never
changed its features has the levels a new cluster finalizes, at epoch 0.
In a cluster of gateways the controller alone journals them and shares them
after every change; every other gateway mirrors them and forwards the
changes it is sent to the controller, which checks them against its own
levels, as Kafka's brokers forward UpdateFeatures to the controller.
"""

from __future__ import annotations

import structlog
import trio

from gateway.features.levels import INITIAL, Update, updated
from gateway.kafka_error import KafkaError
from gateway.storage.journal import Journal
from gateway.storage.journal_sharing import JournaledState, JournalSharing

ENTRY = "features"
log = structlog.get_logger()


class FinalizedFeatures(JournaledState):
    ENTRY = ENTRY

    def __init__(self, journal: Journal, controller_id: int, sharing: JournalSharing | None = None):
        super().__init__(journal, sharing)
        self.controller_id = controller_id  # whose refusals name it, as Kafka's local controller
        self.levels: dict[str, int] = dict(INITIAL)
        self.epoch = 0
        self._lock = trio.Lock()

    def _apply(self, entry: dict) -> None:
        self.levels, self.epoch = dict(entry["levels"]), entry["epoch"]

    def _snapshot(self) -> list[dict]:
        return [_entry(self.levels, self.epoch)]

    def _clear(self) -> None:
        self.levels, self.epoch = dict(INITIAL), 0

    def level(self, feature: str) -> int:
        """The feature's finalized level; 0 where it is not finalized."""
        return self.levels.get(feature, 0)

    async def update(self, updates: list[Update], *, validate_only: bool) -> None:
        """Change finalized levels once Kafka's checks pass (unless `validate_only`, journaled);
        else Kafka's refusal raised."""
        await self.changed({"updates": [[u.feature, u.level, u.upgrade_type] for u in updates],
                            "validate_only": validate_only})

    async def apply_forwarded(self, change: dict) -> dict:
        async with self._lock:  # checked against the levels the changes before it left
            try:
                levels = updated(self.levels, [Update(*u) for u in change["updates"]], self.controller_id)
            except KafkaError as refusal:
                log.warning("feature_update_refused", reason=refusal.message)
                raise
            if not change["validate_only"]:
                entry = _entry(levels, self.epoch + 1)
                await self.journal.write(entry)
                self._apply(entry)
                log.info("features_finalized", levels=levels, epoch=self.epoch)
                await self._share()
        return {}


def _entry(levels: dict[str, int], epoch: int) -> dict:
    return {"type": ENTRY, "levels": levels, "epoch": epoch}
