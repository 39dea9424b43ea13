"""The gateway's own state, durable as JSON records on Dafka partitions.

Kafka keeps cluster metadata, group offsets and transaction states in
internal logs; so does the gateway, one journal per kind of state: every
change is appended, acknowledged by the stores before it is answered, and
replayed in order when the gateway starts.

A journal is compacted by generations, as Kafka compacts __consumer_offsets:
generation 0 is the journal's original partition; generation g > 0 is a
partition of its own that starts with a header, then the owner's whole state
as ordinary entries, then a complete marker, then the writes made since.
Replay reads only the newest generation whose snapshot completed. Once one
is complete (compacted into, or chosen by a replay), the journal sends discard
directives that empty every older one: the stores' own retention spares the
gateway's subjects, and a generation can appear every few minutes. An emptied
generation keeps its place among the heads, so numbering still finds them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import structlog
import trio

from protocol.journal.discard_directive import Discard
from protocol.journal.journal_records import (
    COMPLETE,
    encoded,
    existing_generations,
    generation_uuid,
    header,
    replayable,
)

if TYPE_CHECKING:
    from gateway.settings.table import BrokerSettings
    from gateway.storage.discard_directives import DiscardDirectives
    from gateway.storage.mesh_storage import MeshStorage

log = structlog.get_logger()

# Snapshot records published before waiting for their ACKs (within the mesh's DATA_HWM).
SNAPSHOT_WINDOW = 1000

Snapshot = Callable[[], list[dict]]

# Closes a lone coordinator's journal whose state a cluster's coordinators took (gateway/carry_over.py).
CARRIED_OVER = {"type": "carried_over"}


def since_carried_over(entries: list[dict]) -> list[dict]:
    """The entries after the last carried-over marker: the state no cluster took yet."""
    marks = [index for index, entry in enumerate(entries) if entry.get("type") == CARRIED_OVER["type"]]
    return entries[marks[-1] + 1:] if marks else entries


class Journal:
    """One journal per `kind` of state: topic metadata, group state and offsets, transactions."""

    def __init__(self, storage: MeshStorage, settings: BrokerSettings, kind: str, discards: DiscardDirectives):
        self.storage = storage
        self.discards = discards  # open before the journal replays
        self.cluster_id = settings.cluster_id
        self.kind = kind
        self.subject = f"__dafka_gateway_{kind}"
        self.min_insync = settings.min_insync_replicas
        self.max_entries = settings.journal_compaction_entries
        self.max_bytes = settings.journal_compaction_bytes
        self.generation = 0
        self._next_generation = 1
        self._partition = None
        self._snapshot_size = (0, 0)  # entries and bytes of the current generation's snapshot
        self._since_snapshot = [0, 0]  # entries and bytes written since
        self._writing = 0  # writes admitted to the current generation and not yet acknowledged
        self._drained = trio.Event()
        self._compacting: trio.Event | None = None  # set when the compaction ends; writes wait for it
        self._snapshot: Snapshot | None = None
        self._nursery: trio.Nursery | None = None

    @property
    def uuid(self) -> str:
        return generation_uuid(self.cluster_id, self.kind, self.generation)

    def size(self) -> tuple[int, int]:
        """Entries and bytes a replay of the current generation reads."""
        return self._snapshot_size[0] + self._since_snapshot[0], self._snapshot_size[1] + self._since_snapshot[1]

    async def replay(self) -> list[dict]:
        """Every entry of the newest complete generation, oldest first; then the journal takes writes."""
        heads = await self.storage.heads(self.subject)
        generations = existing_generations(self.cluster_id, self.kind, heads)
        self.generation, contents, (entries, since) = await self._newest_complete(heads, generations)
        self._partition = self.storage.host(self.subject, self.uuid, len(contents))
        self._since_snapshot = [len(since), sum(map(len, since))]
        self._snapshot_size = (len(entries) - len(since), sum(map(len, contents)) - self._since_snapshot[1])
        log.info("journal_replayed", subject=self.subject, generation=self.generation, entries=len(entries),
                 since_snapshot=len(since), uuid=self.uuid)
        # Again for stores that missed them: down, new, or the gateway died before sending.
        await self._discard([Discard(self.subject, address, heads[address] + 1)
                             for generation, address in generations.items() if generation < self.generation])
        return entries

    async def _newest_complete(self, heads: dict[str, int], generations: dict[int, str]
                               ) -> tuple[int, list[bytes], tuple[list[dict], list[bytes]]]:
        """The newest generation whose snapshot completed: its number, contents and `replayable` parts.
        Newer incomplete ones are read, never discarded, so they must stay readable."""
        self._next_generation = max(generations, default=0) + 1  # above incomplete ones too
        for generation in sorted(generations, reverse=True):
            address = generations[generation]
            contents = [bytes(c) async for _, c in self.storage.contents(self.subject, address, heads[address])]
            replayed = replayable(generation, contents)
            if replayed is not None:
                return generation, contents, replayed
            log.warning("journal_generation_incomplete", kind=self.kind, generation=generation)
        return 0, [], ([], [])

    def close(self) -> None:
        """Stop hosting the journal's partition: another gateway writes it from now on."""
        if self._partition is not None:
            self.storage.release(self._partition)
            self._partition = None

    def compact_with(self, nursery: trio.Nursery, snapshot: Snapshot) -> None:
        """Compact the journal into a new generation whenever its thresholds are
        passed, with the entries `snapshot()` returns: the owner's whole state."""
        self._nursery, self._snapshot = nursery, snapshot

    async def write(self, entry: dict) -> None:
        """Append an entry and return once `min_insync` stores hold it."""
        while self._compacting is not None:
            await self._compacting.wait()
        self._writing += 1
        await self._append(entry)

    def write_soon(self, nursery: trio.Nursery, entry: dict) -> None:
        """Write an entry nobody waits for, into the generation a write made now would go to."""
        if self._compacting is not None:
            nursery.start_soon(self.write, entry)
            return
        self._writing += 1
        nursery.start_soon(self._append, entry)

    async def _append(self, entry: dict) -> None:
        """Publish on the current generation; admitted (counted in `_writing`) by the caller."""
        content = encoded(entry)
        try:
            sequence = await self._partition.publish(content)
            await self._partition.wait_acked(sequence, self.min_insync)
        finally:
            self._writing -= 1
            if not self._writing:
                self._drained.set()
        self._since_snapshot[0] += 1
        self._since_snapshot[1] += len(content)
        if self._due():
            self._compacting = trio.Event()  # later writes wait for the new generation
            self._nursery.start_soon(self._compact)

    def _due(self) -> bool:
        """Whether the writes since the snapshot pass the thresholds and the snapshot
        itself, so that compacting never writes more than was written since the last time."""
        (entries, size), (snapshot_entries, snapshot_size) = self._since_snapshot, self._snapshot_size
        return (self._snapshot is not None and self._compacting is None
                and (entries > max(self.max_entries, snapshot_entries) or size > max(self.max_bytes, snapshot_size)))

    async def _compact(self) -> None:
        """Write the owner's state as the next generation, then move writes there.

        The snapshot is taken once the writes already admitted are acknowledged,
        so it holds them even for owners that apply a change after its write.
        A failure leaves writes waiting and goes to the owner, which ends the
        gateway: the stores may hold the complete marker already, and a write to
        the old generation would then be lost to the next replay.
        """
        started = time.monotonic()
        generation, self._next_generation = self._next_generation, self._next_generation + 1
        if self._writing:
            self._drained = trio.Event()
            await self._drained.wait()
        entries = self._snapshot()
        contents = [encoded(entry) for entry in (header(generation), *entries, COMPLETE)]
        partition = await self._write_generation(generation, contents)
        previous = self._partition
        self.storage.release(previous)
        self._partition, self.generation = partition, generation
        self._snapshot_size, self._since_snapshot = (len(entries), sum(map(len, contents))), [0, 0]
        self._compacting.set()
        self._compacting = None
        log.info("journal_compacted", kind=self.kind, generation=generation, entries=len(entries),
                 seconds=round(time.monotonic() - started, 3))
        # No write is left in flight on the previous generation: it waited for the drain.
        await self._discard([Discard(self.subject, previous.uuid, previous.next_sequence)])

    async def _discard(self, older: list[Discard]) -> None:
        """Empty generations older than the current one, which replay never reads again."""
        await self.discards.send(older)
        if older:
            log.info("journal_generations_discarded", kind=self.kind, generation=self.generation,
                     discarded=len(older))

    async def _write_generation(self, generation: int, contents: list[bytes]):
        """A new generation's header, snapshot entries and complete marker, acknowledged."""
        partition = self.storage.host(self.subject, generation_uuid(self.cluster_id, self.kind, generation), 0)
        for start in range(0, len(contents), SNAPSHOT_WINDOW):
            window = contents[start:start + SNAPSHOT_WINDOW]
            first = await partition.publish_many(window)
            await partition.wait_acked(first + len(window) - 1, self.min_insync)
        return partition
