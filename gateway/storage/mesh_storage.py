"""The gateway's place on the mesh: a producer, a consumer and a watcher node.

The producer node publishes every partition this gateway leads (each its
own Dafka partition UUID, all on one socket pair); the consumer node reads
back what the in-memory tails no longer hold, and asks the stores for the
heads of partitions when the gateway starts; the watcher node hears the
HEADs of every topic and the producer node every ACK, which is how native
producers are found (topics/native_topics.py).

A gateway that would lead a partition at a leader epoch fences it first
(`fence`), and leads it only if a quorum of the live stores accepted
(`FenceOutcome`): stores - min.insync.replicas + 1, so that every write
acknowledged by min.insync.replicas stores is on one of them, and two
claimants can never both have writes acknowledged; it continues the newest,
longest log among them (`host` with the epoch, at `FenceOutcome.start`, with
`FenceOutcome.epochs`: stores that hold what an epoch they missed replaced
truncate it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import structlog
import trio
import zmq

from gateway.mesh.dafka_consumer import Consumer
from gateway.mesh.dafka_producer import MAX_UNACKED_BYTES, Producer, ProducerPartition
from gateway.mesh.mesh_node import MeshNode
from gateway.settings.table import MeshSettings
from protocol.dafka import Fenced

log = structlog.get_logger()


def fence_quorum(stores: int, min_insync: int) -> int:
    """Stores that must accept a claim among `stores`: one more than could be missing from any set
    of `min_insync` stores that acknowledged a write."""
    return max(1, stores - min_insync + 1)


@dataclass(frozen=True)
class FenceOutcome:
    """What the stores answered a claim of a partition at `epoch`."""

    epoch: int
    answers: dict[str, Fenced]  # by store writer UUID

    @property
    def accepted(self) -> dict[str, Fenced]:
        return {store: answer for store, answer in self.answers.items() if answer.accepted}

    @property
    def newest_epoch(self) -> int:
        """The highest fence epoch a store named: a refused claimant retries above it."""
        return max((answer.epoch for answer in self.answers.values()), default=self.epoch)

    def won(self, stores: int, min_insync: int) -> bool:
        """Whether enough stores accepted: one more than could be missing from any set of
        `min_insync` stores that acknowledged a write, among `stores`, every store that may
        hold one (the expected stores, or the live ones if more; counting only live ones is
        unsafe while one is down)."""
        return len(self.accepted) >= fence_quorum(stores, min_insync)

    @property
    def _continued(self) -> Fenced | None:
        """The log to continue: of the newest epoch, the longest of those (Raft's rule; a
        longer log of an older epoch may hold what no quorum acknowledged)."""
        return max(self.accepted.values(), key=lambda answer: (answer.head_epoch, answer.next_sequence),
                   default=None)

    @property
    def start(self) -> int:
        """The first sequence to publish: after the log continued."""
        continued = self._continued
        return 0 if continued is None else continued.next_sequence

    @property
    def epochs(self) -> tuple[tuple[int, int], ...]:
        """The epochs of the log continued, to host the partition with."""
        continued = self._continued
        return () if continued is None else continued.epochs

READ_CHUNK = 64
STORES_WAIT_S = 10.0  # between warnings while too few stores answer


class StoresUnavailable(Exception):
    """No store returned records they were asked for in time (down, frozen or behind)."""


class MeshStorage:
    def __init__(self, context: zmq.Context, config: MeshSettings, *, max_unacked_bytes: int = MAX_UNACKED_BYTES):
        self.producer = Producer(context, config, max_unacked_bytes=max_unacked_bytes)
        self.consumer = Consumer(context, config, ())
        self.watcher = MeshNode(context, config, kind="watcher")
        self._prefetched: dict[str, dict[str, int]] = {}
        self._running: set[str] = set()  # embedded stores (writer UUIDs) running now

    def close(self) -> None:
        self.producer.close()
        self.consumer.close()
        self.watcher.close()

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            await nursery.start(self.producer.run)
            await nursery.start(self.consumer.run)
            await nursery.start(self.watcher.run)
            task_status.started()

    async def wait_for_stores(self, count: int) -> None:
        """Wait until `count` store readers hear this gateway's requests.

        Without them the gateway cannot know what the mesh holds, and must not
        guess: it would publish over sequences that exist.
        """
        while True:
            with trio.move_on_after(STORES_WAIT_S):
                await self.consumer.wait_for_stores(count)
                return
            log.warning("waiting_for_stores", wanted=count, seen=self.live_stores())

    def live_stores(self) -> int:
        """The stores connected both ways: a store that exits, even killed, closes its
        connections, and the gateway's publisher sees its subscriptions go at once."""
        return self.consumer.store_count()

    def live_stores_for(self, partition: ProducerPartition) -> int:
        """The live stores that may be in sync for `partition`: not those running again after
        their disk failed that lack records of it (Kafka takes a replica whose log directory
        failed out of the ISR at once, whatever the partition's age). Such a store counts as
        running from its start, a moment before its reader greets us and it counts as live."""
        live = self.live_stores()
        failed = partition.failed_stores
        return max(0, live - sum(store in self._running for store in failed)) if failed else live

    def store_started(self, store: str) -> None:
        """An embedded store whose writer is `store` was started (again)."""
        self._running.add(store)

    def store_exited(self, store: str, disk_failed: bool) -> None:
        """An embedded store exited; if its disk failed, it is not in sync for the partitions
        it lacks records of until it has written them."""
        self._running.discard(store)
        if disk_failed:
            log.warning("store_out_of_sync_until_written", store=store)
            self.producer.store_failed(store)

    def host(self, subject: str, uuid: str, next_sequence: int, epoch: int | None = None,
             epochs: tuple[tuple[int, int], ...] = ()) -> ProducerPartition:
        """Publish a partition from `next_sequence` on; fenced at leader `epoch` if given, after
        a won `fence`: at its `start`, with its `epochs`."""
        return self.producer.host(subject, uuid=uuid, next_sequence=next_sequence, epoch=epoch, epochs=epochs)

    async def fence(self, subject: str, uuid: str, epoch: int, won: Callable[[FenceOutcome], bool],
                    timeout_s: float = 5.0) -> FenceOutcome:
        """Claim a partition at leader `epoch`: the answers of the live stores (those that
        answered within `timeout_s`), or fewer once they `won`. A store answering later cannot
        change the outcome: it holds no acknowledged write the winners lack (see FenceOutcome.won)."""
        answers = await self.producer.fence(subject, uuid, epoch, self.live_stores,
                                            lambda answers: won(FenceOutcome(epoch, answers)), timeout_s)
        outcome = FenceOutcome(epoch, answers)
        log.info("partition_fenced", subject=subject, partition=uuid, epoch=epoch, answers=len(answers),
                 accepted=len(outcome.accepted), newest_epoch=outcome.newest_epoch, start=outcome.start,
                 heads={store[:8]: (a.accepted, a.epoch, a.next_sequence, a.head_epoch) for store, a in answers.items()})
        return outcome

    def release(self, partition: ProducerPartition) -> None:
        self.producer.release(partition)

    async def read(self, subject: str, uuid: str, sequence: int, count: int) -> list[tuple[int, bytes]]:
        return await self.consumer.read(subject, uuid, sequence, count)

    async def prefetch_heads(self, *subjects: str) -> None:
        """Ask the stores for the heads of several subjects in one window; each
        subject's next `heads` call takes the answer instead of asking again."""
        if subjects:
            self._prefetched.update(await self.consumer.heads(*subjects))

    async def heads(self, subject: str) -> dict[str, int]:
        """partition uuid -> the last sequence any store holds, for one subject."""
        prefetched = self._prefetched.pop(subject, None)
        if prefetched is not None:
            return prefetched
        return (await self.consumer.heads(subject))[subject]

    async def contents(self, subject: str, uuid: str, head: int | None, first: int = 0):
        """Every stored record of a partition from `first` up to `head`, in order: (sequence, content)."""
        if head is None:
            return
        sequence = first
        while sequence <= head:
            records = await self.read(subject, uuid, sequence, min(READ_CHUNK, head - sequence + 1))
            if not records:
                raise StoresUnavailable(f"stores did not return {subject}/{uuid} from {sequence}")
            for record in records:
                yield record
            sequence = records[-1][0] + 1
