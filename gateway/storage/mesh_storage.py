"""The gateway's place on the mesh: a producer, a consumer and a watcher node.

The producer node publishes every partition this gateway leads (each its
own Dafka partition UUID, all on one socket pair); the consumer node reads
back what the in-memory tails no longer hold, and asks the stores for the
heads of partitions when the gateway starts; the watcher node hears the
HEADs and ACKs of every topic, which is how native producers are found
(topics/native_topics.py).
"""

from __future__ import annotations

import structlog
import trio
import zmq

from gateway.mesh.dafka_consumer import Consumer
from gateway.mesh.dafka_producer import MAX_UNACKED_BYTES, Producer, ProducerPartition
from gateway.mesh.mesh_node import MeshNode
from gateway.settings.table import MeshSettings

log = structlog.get_logger()

READ_CHUNK = 64
STORES_WAIT_S = 10.0  # between warnings while too few stores answer


class MeshStorage:
    def __init__(self, context: zmq.Context, config: MeshSettings, *, max_unacked_bytes: int = MAX_UNACKED_BYTES):
        self.producer = Producer(context, config, max_unacked_bytes=max_unacked_bytes)
        self.consumer = Consumer(context, config, ())
        self.watcher = MeshNode(context, config, kind="watcher")
        self._prefetched: dict[str, dict[str, int]] = {}

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
        return len(self.consumer.stores())

    def store_failed(self, store: str) -> None:
        """The store whose writer is `store` exited as its disk failed: until it has written
        again, it is not in sync for the partitions it lacks records of."""
        log.warning("store_out_of_sync_until_written", store=store)
        self.producer.store_failed(store)

    def host(self, subject: str, uuid: str, next_sequence: int) -> ProducerPartition:
        return self.producer.host(subject, uuid=uuid, next_sequence=next_sequence)

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
                raise RuntimeError(f"stores did not return {subject}/{uuid} from {sequence}")
            for record in records:
                yield record
            sequence = records[-1][0] + 1
