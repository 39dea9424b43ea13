"""This gateway's membership of the cluster, as CHP holds it, and the controller key.

Each gateway keeps `cluster/gateways/<node.id>` set with a ttl of
`chp.session.timeout.ms` (its advertised listeners and rack), refreshed three
times per ttl: a gateway that stops refreshing, even killed, leaves the
cluster when its key expires. The first gateway to claim `cluster/controller`
is the controller; it refreshes that key the same way, and when it expires
the others claim it again. A gateway in a controlled shutdown says so in its
key (the controller then moves its partitions away), and deletes its keys
when it stops, so that the others need not wait for them to expire. A
gateway's record also says whether it can lead partitions now (`eligible`: it
reaches enough stores to); the controller gives leadership to eligible gateways
only, as Kafka's controller never makes a fenced broker leader, and moves it
away from one that stops being eligible.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

import structlog
import trio

from gateway.chp.changes import Update
from gateway.chp.chp_client import ChpClient
from gateway.cluster.claims import KeyClaims
from gateway.settings.listeners import Listener

log = structlog.get_logger()

MEMBERS = "cluster/gateways/"
CONTROLLER = "cluster/controller"
REFRESHES_PER_TTL = 3
ELIGIBILITY_CHECK_S = 0.5  # how soon a change of the stores a gateway reaches shows in its record


@dataclass(frozen=True)
class Member:
    node_id: int
    rack: str | None
    listeners: dict[str, tuple[str, int]]  # listener name -> advertised host and port
    shutting_down: bool = False  # in a controlled shutdown: leads nothing more
    eligible: bool = True  # it can lead partitions now


def encoded(value: dict) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def decoded(body: bytes | None) -> dict | None:
    """A key's JSON value; None for an absent or unreadable one (logged: never written by us)."""
    if body is None:
        return None
    try:
        value = json.loads(body)
    except ValueError:
        log.warning("chp_value_unreadable", value=body[:100])
        return None
    return value if isinstance(value, dict) else None


class Membership:
    def __init__(self, client: ChpClient, claims: KeyClaims, node_id: int, rack: str | None, ttl_s: float,
                 can_lead: Callable[[], bool] = lambda: True):
        self.client = client
        self.claims = claims
        self.node_id = node_id
        self.rack = rack
        self.ttl_s = ttl_s
        self.can_lead = can_lead  # whether this gateway reaches the stores it needs to lead partitions
        self.eligible = True
        self.is_controller = False
        self.shutting_down = False
        self._members: tuple[int, dict[int, Member]] = (-1, {})  # as of the mirror's changes count
        self._refreshing = trio.CancelScope()

    def members(self) -> dict[int, Member]:
        """The live gateways by node id, decoded once per change of the mirror (Metadata asks for
        each partition's in-sync replicas, and the mirror holds keys of every partition)."""
        changes, members = self._members
        if changes != self.client.changes:
            members = self._decoded_members()
            self._members = (self.client.changes, members)
        return members

    def _decoded_members(self) -> dict[int, Member]:
        found = {}
        for key in self.client.keys_under(MEMBERS):
            value = self.client.decoded(key, decoded)
            if value is not None:
                member = Member(value["node"], value.get("rack"),
                                {name: (host, port) for name, (host, port) in value["listeners"].items()},
                                value.get("shutting_down", False), value.get("eligible", True))
                found[member.node_id] = member
        return found

    def candidates(self) -> set[int]:
        """The live gateways that may lead partitions: those not shutting down, and of them those
        eligible (any, while none is: none could do better)."""
        staying = [member for member in self.members().values() if not member.shutting_down]
        return {m.node_id for m in staying if m.eligible} or {m.node_id for m in staying}

    @property
    def controller_id(self) -> int:
        value = decoded(self.client.get(CONTROLLER))
        return -1 if value is None else value["node"]

    async def join(self, listeners: tuple[Listener, ...]) -> None:
        """Announce this gateway, then claim the controller key if nobody holds it."""
        self._announced = {"node": self.node_id, "rack": self.rack,
                           "listeners": {listener.name: [listener.host, listener.port] for listener in listeners}}
        self.eligible = self.can_lead()
        await self._announce()
        self._controller = encoded({"node": self.node_id})
        self.is_controller = await self._claim_controller()
        log.info("cluster_joined", node_id=self.node_id, controller=self.controller_id)

    async def _claim_controller(self) -> bool:
        """Claim the controller key if nobody holds it, or if an earlier run of this gateway does (node
        ids are unique in a cluster, so that one is gone: its key would only expire after the ttl, while
        every gateway waited on a controller that no longer serves)."""
        sequence = self.claims.sequence(CONTROLLER)
        if self.shutting_down:  # it would only have to hand the key on
            return False
        if sequence != 0 and self.controller_id != self.node_id:
            return False
        return await self.claims.claim(CONTROLLER, self._controller, sequence, self.ttl_s)

    async def claim_controller_when_free(self) -> None:
        """Return once this gateway has won the controller key, claimed whenever it is absent, or
        names this gateway: a claim the CHP server applied after the claimer stopped waiting (a
        fail-over of the pair outlasts a claim's timeout), which no one would refresh."""
        while True:
            with self.client.watch() as changes:
                if await self._claim_controller():
                    self.is_controller = True
                    log.info("controller_won", node_id=self.node_id)
                    return
                async for change in changes:
                    if not isinstance(change, Update) or (
                            change.key == CONTROLLER and change.value in (None, self._controller)):
                        break

    async def _announce(self) -> None:
        stopping = {"shutting_down": True} if self.shutting_down else {}
        await self.client.set(f"{MEMBERS}{self.node_id}",
                              encoded({**self._announced, "eligible": self.eligible, **stopping}), self.ttl_s)

    async def refresh(self) -> None:
        """Keep the keys alive until this gateway leaves."""
        with self._refreshing:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._renew_controller_key)
                await self._refresh_record()

    async def _refresh_record(self) -> None:
        """This gateway's record, and at once when the gateway becomes able or unable to lead partitions."""
        refreshed = trio.current_time()
        while True:
            await trio.sleep(ELIGIBILITY_CHECK_S)
            eligible = self.can_lead()
            if eligible == self.eligible and trio.current_time() - refreshed < self.ttl_s / REFRESHES_PER_TTL:
                continue
            if eligible != self.eligible:
                self.eligible = eligible
                log.warning("leadership_eligibility_changed", node_id=self.node_id, eligible=eligible)
            refreshed = trio.current_time()
            await self._announce()

    async def _renew_controller_key(self) -> None:
        """The controller key's refreshes, apart from the membership's: a renewal is a claim,
        which waits for its outcome (up to its timeout while the CHP pair fails over), and the
        membership must not expire meanwhile. Each is due a third of the ttl after the one
        before was sent, from when the server counts its ttl: one whose outcome showed late
        is followed at once."""
        renewed = trio.current_time()
        while True:
            await trio.sleep_until(renewed + self.ttl_s / REFRESHES_PER_TTL)
            renewed = trio.current_time()
            if self.is_controller:
                await self._refresh_controller()

    async def announce_shutdown(self) -> None:
        """Tell the controller that this gateway is stopping: it is to lead nothing more."""
        self.shutting_down = True
        await self._announce()

    async def leave(self, timeout_s: float) -> None:
        """Delete this gateway's keys (the controller key too, if it holds it), so that the others
        act at once rather than after the ttl; waits at most `timeout_s` to see them gone."""
        self._refreshing.cancel()
        member = f"{MEMBERS}{self.node_id}"
        mine = [member] + ([CONTROLLER] if self.client.get(CONTROLLER) == self._controller else [])
        with self.client.watch() as changes, trio.move_on_after(timeout_s):
            for key in mine:
                await self.client.delete(key)
            async for _ in changes:  # the server's updates tell that it applied the deletions (or a successor won)
                if self.client.get(member) is None and self.client.get(CONTROLLER) != self._controller:
                    break
        log.info("cluster_left", node_id=self.node_id, deleted=mine)

    async def _refresh_controller(self) -> None:
        """Renew the controller key only while it is still this gateway's: a successor that won it
        after it expired (this gateway paused) is never overwritten (`hold_controller` steps down).
        A renewal lost while the key stays this gateway's is made again at the key's sequence: it
        lost to this gateway's earlier one, which the CHP backup applied when it took over, with
        a ttl counted from when that one was sent."""
        while self.client.get(CONTROLLER) == self._controller:
            if await self.claims.claim(CONTROLLER, self._controller, self.claims.sequence(CONTROLLER), self.ttl_s):
                return
            log.warning("controller_key_not_renewed", node_id=self.node_id, holder=self.controller_id)

    async def hold_controller(self) -> None:
        """The controller: return once the key is no longer this gateway's, stepped down
        (`is_controller` False, logged once): it paused past the key's ttl and another gateway
        won the key, or the key expired. It then serves as a follower, as Kafka's resigned
        controller does, and claims the key again when it is free."""
        while True:
            with self.client.watch() as changes:
                if self.client.get(CONTROLLER) != self._controller:
                    break
                async for change in changes:
                    if not isinstance(change, Update) or change.key == CONTROLLER:
                        break
        self.is_controller = False
        log.warning("controller_key_lost", node_id=self.node_id, holder=self.controller_id)
