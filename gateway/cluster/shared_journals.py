"""Journaled state the controller shares with every gateway: the ACLs, the SCRAM credentials, the delegation tokens,
the client quotas, the group configs and the dynamic broker configs.

Only the controller writes their journals. After
replaying one, and after every change, it puts the store's state (the entries
a compaction would write: bindings; salted credentials, never passwords) in
`cluster/journals/<journal>`, which the other gateways mirror live. A change
sent to another gateway is forwarded as Kafka's brokers forward them to the
controller: the gateway leaves `cluster/journal-requests/<request id>`, the
controller applies it through its own store and answers under
`cluster/journal-answers/<request id>` (with a ttl, in case nobody waits any
more), after sharing the changed state.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable

import structlog

from gateway.chp.chp_client import ChpClient
from gateway.cluster.asking import answered, serve_requests
from gateway.cluster.leadership import on_changes
from gateway.cluster.membership import decoded, encoded
from gateway.kafka_error import KafkaError
from protocol.kafka.error_codes import ErrorCode

log = structlog.get_logger()

JOURNALS = "cluster/journals/"
REQUESTS = "cluster/journal-requests/"
ANSWERS = "cluster/journal-answers/"
ANSWER_TIMEOUT_S = 10.0

Apply = Callable[[dict], Awaitable[dict]]


class SharedJournal:
    """One journal's store in a cluster: shared by the controller, mirrored and forwarded to elsewhere."""

    def __init__(self, client: ChpClient, journal: str, follows: bool):
        self.client = client
        self.journal = journal
        self.follows = follows

    async def share(self, entries: list[dict]) -> None:
        await self.client.set(f"{JOURNALS}{self.journal}", encoded({"entries": entries}))

    def shared(self) -> list[dict]:
        return shared_entries(self.client, self.journal)

    async def forward(self, change: dict) -> dict:
        """The controller's outcome of `change`: its result, or its KafkaError raised here."""
        request = uuid.uuid4().hex
        answer = await answered(self.client, f"{REQUESTS}{request}", {"journal": self.journal, "change": change},
                                f"{ANSWERS}{request}", ANSWER_TIMEOUT_S)
        if answer is None:
            await self.client.delete(f"{REQUESTS}{request}")
            raise KafkaError(ErrorCode.REQUEST_TIMED_OUT, "the controller did not answer in time")
        await self.client.delete(f"{ANSWERS}{request}")
        if "error" in answer:
            raise KafkaError(ErrorCode(answer["error"]), answer["message"])
        return answer["result"]


def shared_entries(client: ChpClient, journal: str) -> list[dict]:
    value = decoded(client.get(f"{JOURNALS}{journal}"))
    return [] if value is None else value["entries"]


async def follow_journals(client: ChpClient, stores: dict[str, Callable[[list[dict]], None]]) -> None:
    """A gateway other than the controller: each store's state as the controller shared it."""
    async def react():
        for journal, replace in stores.items():
            replace(shared_entries(client, journal))

    await on_changes(client, react, (JOURNALS,))


async def serve_journal_changes(client: ChpClient, stores: dict[str, Apply]) -> None:
    """The controller: apply the changes other gateways were sent, each once, and answer them."""
    async def applied(request: dict) -> dict:
        answer = await _outcome(stores[request["journal"]], request["change"])
        log.info("forwarded_change_applied", journal=request["journal"], error=answer.get("error"))
        return answer

    await serve_requests(client, REQUESTS, ANSWERS, applied)


async def _outcome(apply: Apply, change: dict) -> dict:
    try:
        return {"result": await apply(change)}
    except KafkaError as exc:
        log.info("forwarded_change_refused", error=exc.code.name, message=exc.message)
        return {"error": int(exc.code), "message": exc.message}
