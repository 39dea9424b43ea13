"""Partition leadership and shared topics, kept in CHP.

`cluster/partitions/<topic id>/<index>` = {leader, epoch, replicas}: the
controller changes it by a claim on the key's sequence, bumping the epoch at
every change of leader (`assign_leaders`, and preferred_leaders.py: the
replicas, the first of them the preferred leader); the leader named claims a
newer epoch the same way when the stores hold a claim of its epoch that is
not its own (`claim_epoch`: its life before a restart). Once it serves the
partition it says so in `cluster/serving/<topic id>/<index>` = {leader, epoch,
start}, start the sequence its log goes on at: what a gateway handing its
partitions over waits for, and what tells the previous leader which of its
batches on their way the log holds. `cluster/topics/<name>` holds each
topic's journaled state: the controller writes the metadata journal and then
this key, the other gateways follow it; a deleted topic leaves a notice in
`cluster/deleted-topics/<topic id>` = {name, at} for
chp.deleted.topic.notice.ms, on which every gateway's group coordinators
remove the topic's committed offsets (a key gone from `cluster/topics/` is
no such notice: CHP may have lost its keys).
A gateway asked to auto-create a
topic it cannot create leaves `cluster/topic-requests/<name>` for the
controller. Every gateway opens the partitions it leads and closes those it
lost (`follow_cluster`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from functools import partial
from typing import Protocol

import structlog
import trio

from gateway.chp.changes import Update
from gateway.chp.chp_client import ChpClient
from gateway.cluster.claims import KeyClaims
from gateway.cluster.membership import Membership, decoded, encoded
from gateway.cluster.replicas import assignment, successor
from gateway.kafka_error import KafkaError

log = structlog.get_logger()

PARTITIONS = "cluster/partitions/"
TOPICS = "cluster/topics/"
TOPIC_REQUESTS = "cluster/topic-requests/"
LOG_STARTS = "cluster/log-starts/"
SERVING = "cluster/serving/"
DELETED_TOPICS = "cluster/deleted-topics/"
# Partition keys the controller claims at once: each claim waits a round trip to the CHP server,
# one after another 10,000 new partitions took that many round trips to get leaders.
ASSIGNMENTS_IN_FLIGHT = 64

# A reaction reads the whole mirror (tens of ms at 10,000 partitions). Changes streaming in (a
# failover's thousands of assignments) would start one after another and take the loop from the
# work they start: after each, on_changes rests as long as it took, up to this, and the changes
# that came meanwhile are taken together.
REACTION_REST_MAX_S = 0.25

Wanted = dict[tuple[str, int], int]  # (topic id, index) -> leader epoch


class ClusterTopics(Protocol):
    """What the cluster asks of the topic registry."""

    async def follow_shared(self, states: dict[str, dict]) -> None: ...

    async def follow_new_shared(self, states: dict[str, dict]) -> None: ...

    async def lead(self, wanted: Wanted) -> float | None: ...

    async def close_retired(self) -> None: ...

    async def auto_create(self, name: str): ...

    async def log_starts_reported(self, reports: dict[tuple[str, int], tuple[int, int]]) -> None: ...

    def deleted_elsewhere(self, notices: dict[str, tuple[str, int]]) -> None: ...


def partition_key(topic_id: str, index: int, prefix: str = PARTITIONS) -> str:
    return f"{prefix}{topic_id}/{index}"


def partition_values(client: ChpClient, prefix: str) -> dict[tuple[str, int], dict]:
    """(topic id, index) -> value of every partition key under `prefix`."""
    found = {}
    for key in client.keys_under(prefix):
        value = client.decoded(key, decoded)
        if value is not None:
            topic_id, index = key.removeprefix(prefix).rsplit("/", 1)
            found[(topic_id, int(index))] = value
    return found


class Leaders:
    """Who leads which partition, as this gateway's CHP mirror says."""

    def __init__(self, client: ChpClient):
        self.client = client

    def value(self, topic_id: str, index: int) -> dict | None:
        """The partition's key: {leader, epoch, replicas}; None while unassigned."""
        return self.client.decoded(partition_key(topic_id, index), decoded)

    def leader(self, topic_id: str, index: int) -> tuple[int, int] | None:
        """(leader node id, leader epoch), or None while unassigned."""
        value = self.value(topic_id, index)
        return None if value is None else (value["leader"], value["epoch"])

    def serving(self, topic_id: str, index: int) -> tuple[int, int] | None:
        """(node id, epoch) of the last leader that began to serve the partition."""
        value = self.client.decoded(partition_key(topic_id, index, SERVING), decoded)
        return None if value is None else (value["leader"], value["epoch"])

    def shared_topics(self) -> dict[str, dict]:
        return {key.removeprefix(TOPICS): state for key in self.client.keys_under(TOPICS)
                if (state := self.client.decoded(key, decoded)) is not None}

    def deletion_notices(self) -> dict[str, tuple[str, int]]:
        """topic id -> (name, when it was deleted, ms) of the topics deleted within the notices' TTL."""
        notices = {}
        for key in self.client.keys_under(DELETED_TOPICS):
            value = self.client.decoded(key, decoded)
            if value is not None:
                notices[key.removeprefix(DELETED_TOPICS)] = (value["name"], value["at"])
        return notices

    def led_by(self, node_id: int) -> Wanted:
        return {partition: value["epoch"] for partition, value in partition_values(self.client, PARTITIONS).items()
                if value["leader"] == node_id}


class TopicSharing:
    """The registry's side of shared topics: the controller publishes, the others request."""

    def __init__(self, client: ChpClient, membership: Membership, claims: KeyClaims, deletion_notice_s: float):
        self.client = client
        self.membership = membership
        self.claims = claims
        self.deletion_notice_s = deletion_notice_s  # how long a deleted topic's notice stays

    @property
    def is_controller(self) -> bool:
        return self.membership.is_controller

    async def share(self, state: dict) -> None:
        await self.client.set(f"{TOPICS}{state['name']}", encoded(state))

    async def unshare(self, state: dict, deleted_at_ms: int) -> None:
        await self.client.set(f"{DELETED_TOPICS}{state['id']}", encoded({"name": state["name"], "at": deleted_at_ms}),
                              ttl=self.deletion_notice_s)
        await self.client.delete(f"{TOPICS}{state['name']}")
        for index in range(len(state["partitions"])):
            await self.client.delete(partition_key(state["id"], index))
            await self.client.delete(partition_key(state["id"], index, LOG_STARTS))
            await self.client.delete(partition_key(state["id"], index, SERVING))

    async def request_creation(self, name: str) -> None:
        await self.client.set(f"{TOPIC_REQUESTS}{name}", encoded({"requested_by": self.membership.node_id}))

    async def leaders_assigned(self, topic_id: str, count: int, deadline: float) -> bool:
        """Whether each of the topic's first `count` partitions has a leader by `deadline` (trio's
        clock), waiting until then: Kafka answers CreateTopics once the records naming the leaders
        are committed, so a client's next Metadata never shows a new partition leaderless. Not
        waited for while no gateway may lead."""
        keys = [partition_key(topic_id, index) for index in range(count)]

        def led() -> bool:
            return not self.membership.candidates() or all(self.client.get(key) is not None for key in keys)

        with trio.move_on_at(deadline):
            await until(self.client, led)
        return led()

    async def claim_epoch(self, topic_id: str, index: int, epoch: int, newer: int) -> bool:
        """Lead a partition led here at `epoch` at `newer` instead, as the stores hold a claim of
        `epoch` or above that is not this gateway's (its life before a restart, or epochs CHP
        counted again): by a claim on the key's sequence, so that a stale mirror changes nothing."""
        key = partition_key(topic_id, index)
        sequence, value = self.claims.sequence(key), decoded(self.client.get(key))
        if value is None or (value["leader"], value["epoch"]) != (self.membership.node_id, epoch):
            return False
        return await self.claims.claim(key, encoded({**value, "epoch": newer}), sequence)

    async def serving(self, topic_id: str, index: int, epoch: int, start: int) -> None:
        """This gateway began to serve a partition at `epoch`, its log going on at sequence `start`."""
        await self.client.set(partition_key(topic_id, index, SERVING),
                              encoded({"leader": self.membership.node_id, "epoch": epoch, "start": start}))

    def moved(self, topic_id: str, index: int, epoch: int) -> bool:
        """Whether another gateway leads the partition now, at an epoch after `epoch`."""
        value = self.client.decoded(partition_key(topic_id, index), decoded)
        return value is not None and value["leader"] != self.membership.node_id and value["epoch"] > epoch

    def continued(self, topic_id: str, index: int) -> tuple[int, int] | None:
        """(epoch, start) of the last leader that began to serve the partition: its log holds
        every sequence below `start`."""
        value = self.client.decoded(partition_key(topic_id, index, SERVING), decoded)
        return None if value is None or "start" not in value else (value["epoch"], value["start"])

    async def report_log_start(self, topic_id: str, index: int, log_start_offset: int, first_sequence: int) -> None:
        """A partition's log start moved where it is led, for the controller to journal."""
        await self.client.set(partition_key(topic_id, index, LOG_STARTS),
                              encoded({"log_start_offset": log_start_offset, "first_sequence": first_sequence}))


async def on_changes(client: ChpClient, react: Callable, prefixes: tuple[str, ...]) -> None:
    """`await react()` now and after every change of keys under `prefixes`; changes that come
    while it runs are taken together. A react that returns seconds is called again after them
    even without a change (what it failed to do is tried again then)."""
    dirty = trio.Event()
    dirty.set()

    async def watch():
        nonlocal dirty
        while True:  # a watch that fell too far behind ends: open another
            with client.watch() as changes:
                dirty.set()
                async for change in changes:
                    if not isinstance(change, Update) or change.key.startswith(prefixes):
                        dirty.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(watch)
        again = None
        while True:
            with trio.move_on_after(math.inf if again is None else again):
                await dirty.wait()
            dirty = trio.Event()
            started = trio.current_time()
            again = await react()
            await trio.sleep(min(trio.current_time() - started, REACTION_REST_MAX_S))


async def until(client: ChpClient, condition: Callable[[], bool]) -> None:
    """Return once `condition()` holds, checked now and after every change of the mirror."""
    while True:  # a watch that fell too far behind ends: open another
        with client.watch() as changes:
            if condition():
                return
            async for _ in changes:
                if condition():
                    return


async def follow_cluster(client: ChpClient, leaders: Leaders, topics: ClusterTopics, node_id: int) -> None:
    """Keep the registry's topics and led partitions as CHP says (every gateway)."""
    async def react():
        await topics.follow_shared(leaders.shared_topics())
        return await topics.lead(leaders.led_by(node_id))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(on_changes, client, react, (TOPICS, PARTITIONS))
        # New topics at once: react waits for the takeovers it started, then rests.
        nursery.start_soon(on_changes, client, partial(_new_topics, leaders, topics), (TOPICS,))
        # A new leader's serving key ends a retirement here: only that is looked at again.
        nursery.start_soon(on_changes, client, topics.close_retired, (SERVING,))
        nursery.start_soon(on_changes, client, partial(_told_deleted, leaders, topics), (DELETED_TOPICS,))


async def _new_topics(leaders: Leaders, topics: ClusterTopics) -> None:
    await topics.follow_new_shared(leaders.shared_topics())


async def _told_deleted(leaders: Leaders, topics: ClusterTopics) -> None:
    topics.deleted_elsewhere(leaders.deletion_notices())


async def serve_topic_requests(client: ChpClient, topics: ClusterTopics) -> None:
    """The controller: create the topics other gateways were asked to auto-create."""
    async def react():
        for key in client.keys_under(TOPIC_REQUESTS):
            name = key.removeprefix(TOPIC_REQUESTS)
            try:
                await topics.auto_create(name)
            except KafkaError as exc:  # one request's refusal (a bad name, control lost): the others go on
                log.warning("topic_request_refused", topic=name, error=exc.code.name, message=exc.message)
            await client.delete(key)

    await on_changes(client, react, (TOPIC_REQUESTS,))


async def serve_log_starts(client: ChpClient, topics: ClusterTopics) -> None:
    """The controller: journal the log starts other gateways moved (retention, DeleteRecords)."""
    async def react():
        await topics.log_starts_reported({partition: (value["log_start_offset"], value["first_sequence"])
                                          for partition, value in partition_values(client, LOG_STARTS).items()})

    await on_changes(client, react, (LOG_STARTS,))


async def assign_leaders(client: ChpClient, claims: KeyClaims, membership: Membership, leaders: Leaders) -> None:
    """The controller: give every partition without a live, eligible leader (or led by a gateway
    shutting down) to a candidate replica (`Membership.candidates`), the one leading fewest, with
    the next epoch."""
    async def react():
        live = membership.candidates()
        if not live or membership.controller_id != membership.node_id:  # stepping down
            return
        load = Counter({node: 0 for node in live})
        orphans = []
        for state in leaders.shared_topics().values():
            for index in range(len(state["partitions"])):
                key, value = partition_key(state["id"], index), leaders.value(state["id"], index)
                holder = None if value is None else value["leader"]
                if holder in live:
                    load[holder] += 1
                else:
                    orphans.append((key, claims.sequence(key), value))
        in_flight = trio.CapacityLimiter(ASSIGNMENTS_IN_FLIGHT)
        async with trio.open_nursery() as nursery:
            for key, sequence, value in orphans:
                node, replicas = successor(value, live, load)
                load[node] += 1  # as if won: one that is lost is counted again at the next reaction
                nursery.start_soon(assign, key, sequence, value, node, replicas, in_flight)

    async def assign(key: str, sequence: int, value: dict | None, node: int, replicas: list[int],
                     in_flight: trio.CapacityLimiter) -> None:
        epoch = 0 if value is None else value["epoch"] + 1
        async with in_flight:
            if await claims.claim(key, encoded(assignment(node, epoch, replicas)), sequence):
                log.info("partition_leader_assigned", partition=key.removeprefix(PARTITIONS), leader=node, epoch=epoch,
                         previous=None if value is None else value["leader"], replicas=replicas)

    await on_changes(client, react, (TOPICS, PARTITIONS, "cluster/gateways/"))
