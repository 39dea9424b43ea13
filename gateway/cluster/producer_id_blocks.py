"""Producer ids on a gateway that is not the controller: blocks the controller journals.

Only the controller writes the metadata journal, where the blocks of producer
ids given out are kept. Another gateway that needs ids (an idempotent
producer's InitProducerId may go to any broker) asks for a block under
`cluster/producer-id-requests/<node.id>` with a fresh request id; the
controller journals a block and answers under
`cluster/producer-id-blocks/<node.id>` with that request id, so that an answer
to an earlier life of the gateway is never taken.
"""

from __future__ import annotations

import uuid
from typing import Protocol

import trio

from gateway.chp.chp_client import ChpClient
from gateway.cluster.asking import answered
from gateway.cluster.leadership import on_changes
from gateway.cluster.membership import decoded, encoded
from gateway.kafka_error import KafkaError
from protocol.kafka.error_codes import ErrorCode

REQUESTS = "cluster/producer-id-requests/"
BLOCKS = "cluster/producer-id-blocks/"
ANSWER_TIMEOUT_S = 10.0


class BlockSource(Protocol):
    async def take_block(self) -> tuple[int, int]: ...


class ProducerIdBlocks:
    def __init__(self, client: ChpClient, node_id: int):
        self.client = client
        self.node_id = node_id
        self._next = self._end = 0
        self._lock = trio.Lock()

    async def allocate(self) -> int:
        async with self._lock:
            if self._next >= self._end:
                self._next, self._end = await self._new_block()
            self._next += 1
            return self._next - 1

    async def _new_block(self) -> tuple[int, int]:
        request = uuid.uuid4().hex
        block = await answered(self.client, f"{REQUESTS}{self.node_id}", {"request": request},
                               f"{BLOCKS}{self.node_id}", ANSWER_TIMEOUT_S, lambda answer: answer["request"] == request)
        if block is None:
            raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "the controller handed out no producer ids in time")
        return block["first"], block["end"]


async def serve_producer_id_requests(client: ChpClient, producer_ids: BlockSource) -> None:
    """The controller: a journaled block for every gateway that asks."""
    async def react():
        for key, body in [(key, client.get(key)) for key in client.keys_under(REQUESTS)]:
            request = decoded(body)
            if request is not None:
                first, end = await producer_ids.take_block()
                await client.set(f"{BLOCKS}{key.removeprefix(REQUESTS)}",
                                 encoded({"request": request["request"], "first": first, "end": end}))
            await client.delete(key)

    await on_changes(client, react, (REQUESTS,))
