"""The client quotas: their values, durable in a journal, and the rates they bound.

Each change of an entity's quotas is journaled as the entity's whole set of
values (none: the entity is gone), so replay keeps the last entry of each.
In a cluster of gateways the controller alone journals the changes and
shares the values after each; every other gateway mirrors them and forwards
the changes it is sent to the controller, as Kafka keeps quotas in the
cluster's metadata, which every broker has.

A client's quota of a kind is the one of the first entity in Kafka's order
of precedence that has it (user and client id, then the user's default
client, the user, ... down to the default client id); its rate (a token bucket
for controller_mutation_rate) is measured per entity, the defaults standing
for the client's own user and client id, as Kafka's quota sensors are. Each
gateway measures its own connections only, as each Kafka broker does, and
keeps what it measured when its role in the cluster changes.
"""

from __future__ import annotations

import trio

from gateway.quotas.entities import (
    CLIENT_ID,
    CONNECTION_CREATION_RATE,
    CONTROLLER_MUTATION_RATE,
    IP,
    USER,
    Entity,
    matches,
)
from gateway.quotas.rate import Rate
from gateway.quotas.token_bucket import TokenBucket
from gateway.storage.journal import Journal
from gateway.storage.journal_sharing import JournaledState, JournalSharing

ENTRY = "client_quota"
ANONYMOUS = "ANONYMOUS"  # the user of a connection not authenticated, as Kafka names it


def _precedence(user: str, client_id: str) -> list[Entity]:
    """The entities whose quota applies to (user, client id), first found first."""
    return [
        ((CLIENT_ID, client_id), (USER, user)), ((CLIENT_ID, None), (USER, user)), ((USER, user),),
        ((CLIENT_ID, client_id), (USER, None)), ((CLIENT_ID, None), (USER, None)), ((USER, None),),
        ((CLIENT_ID, client_id),), ((CLIENT_ID, None),),
    ]


class QuotaRates:
    """The rates a gateway measures of its clients, by quota key and measured entity. They outlive the
    quotas' values, which a change of the gateway's role rebuilds: a client keeps what it was counted."""

    def __init__(self, window_num: int, window_size_s: int):
        self.window_num, self.window_size_s = window_num, window_size_s
        self._stats: dict[tuple[str, Entity], Rate | TokenBucket] = {}

    def of(self, key: str, measured: Entity, now: float) -> Rate | TokenBucket:
        stat = self._stats.get((key, measured))
        if stat is None:  # a new client: first forget those that have nothing counted any more
            self._stats = {k: s for k, s in self._stats.items() if not s.idle(now)}
            kind = TokenBucket if key == CONTROLLER_MUTATION_RATE else Rate
            stat = self._stats[(key, measured)] = kind(self.window_num, self.window_size_s)
        return stat

    def counted(self, key: str, measured: Entity) -> Rate | TokenBucket | None:
        return self._stats.get((key, measured))


class ClientQuotas(JournaledState):
    ENTRY = ENTRY

    def __init__(self, journal: Journal, rates: QuotaRates, sharing: JournalSharing | None = None):
        super().__init__(journal, sharing)
        self.values: dict[Entity, dict[str, float]] = {}  # by entity: its quotas
        self.rates = rates
        self._lock = trio.Lock()

    def _clear(self) -> None:
        self.values = {}

    def _snapshot(self) -> list[dict]:
        return [_entry(entity, values) for entity, values in self.values.items()]

    def _apply(self, entry: dict) -> None:
        entity = _entity(entry["entity"])
        if entry["values"]:
            self.values[entity] = entry["values"]
        else:
            self.values.pop(entity, None)

    async def alter(self, entity: Entity, changes: dict[str, float | None]) -> None:
        """Set (a value) or remove (None) quotas of an entity, once journaled."""
        await self.changed({"entity": [list(pair) for pair in entity], "changes": changes})

    async def apply_forwarded(self, change: dict) -> dict:
        async with self._lock:
            entity = _entity(change["entity"])
            values = dict(self.values.get(entity, {}))
            for key, value in change["changes"].items():
                if value is None:
                    values.pop(key, None)
                else:
                    values[key] = value
            entry = _entry(entity, values)
            await self.journal.write(entry)
            self._apply(entry)
            await self._share()
        return {}

    def describe(self, exact: dict[str, str | None], any_name: set[str], strict: bool
                 ) -> list[tuple[Entity, dict[str, float]]]:
        return [(entity, values) for entity, values in self.values.items()
                if matches(entity, exact, any_name, strict)]

    def quota(self, key: str, user: str, client_id: str) -> tuple[float, Entity] | None:
        """The bound of `key` for the client and the entity its rate is measured for, if any."""
        if not self.values:  # as mostly: no request pays for the search
            return None
        for entity in _precedence(user, client_id):
            bound = self.values.get(entity, {}).get(key)
            if bound is not None:
                names = {USER: user, CLIENT_ID: client_id}
                return bound, tuple((entity_type, names[entity_type]) for entity_type, _ in entity)
        return None

    def record(self, key: str, client_id: str | None, value: float, user: str = ANONYMOUS) -> int:
        """Count `value` against the client's quota of `key`: the milliseconds it is to be throttled."""
        found = self.quota(key, user, client_id or "")
        if found is None:
            return 0
        bound, measured = found
        now = trio.current_time()
        stat = self.rates.of(key, measured, now)
        stat.record(value, bound, now)
        return stat.throttle_ms(bound, now)

    def throttle_ms(self, key: str, client_id: str | None, user: str = ANONYMOUS) -> int:
        """How long the client is over its quota of `key` already, counting nothing."""
        found = self.quota(key, user, client_id or "")
        if found is None:
            return 0
        now = trio.current_time()
        return self.rates.of(key, found[1], now).throttle_ms(found[0], now)

    def record_connection(self, address: str) -> int:
        """Count a new connection from `address` against its IP's connection_creation_rate (its own
        quota, else the default IP's): the milliseconds it is throttled for."""
        bound = self.values.get(((IP, address),), self.values.get(((IP, None),), {})).get(CONNECTION_CREATION_RATE)
        if bound is None:
            return 0
        now = trio.current_time()
        stat = self.rates.of(CONNECTION_CREATION_RATE, ((IP, address),), now)
        stat.record(1, bound, now)
        return stat.throttle_ms(bound, now)

    def unrecord(self, key: str, client_id: str | None, value: float, user: str = ANONYMOUS) -> None:
        found = self.quota(key, user, client_id or "")
        stat = found and self.rates.counted(key, found[1])
        if isinstance(stat, Rate):
            stat.unrecord(value)

    def window_bytes(self, key: str, client_id: str | None, user: str = ANONYMOUS) -> float:
        """The most the client's quota of `key` lets through in all but one window (Kafka bounds a
        fetch by it), unbounded without a quota."""
        found = self.quota(key, user, client_id or "")
        return float("inf") if found is None else found[0] * (self.rates.window_num - 1) * self.rates.window_size_s


def _entry(entity: Entity, values: dict[str, float]) -> dict:
    return {"type": ENTRY, "entity": [list(pair) for pair in entity], "values": values}


def _entity(pairs: list[list]) -> Entity:
    return tuple(tuple(pair) for pair in pairs)
