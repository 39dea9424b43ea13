"""The client quotas: their values, durable in a journal, and the rates they bound.

Each change of an entity's quotas is journaled as the entity's whole set of
values (none: the entity is gone), so replay keeps the last entry of each.
A client's quota of a kind is the one of the first entity in Kafka's order
of precedence that has it (user and client id, then the user's default
client, the user, ... down to the default client id); its rate (a token bucket
for controller_mutation_rate) is measured per entity, the defaults standing
for the client's own user and client id, as Kafka's quota sensors are.
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

ENTRY = "client_quota"
ANONYMOUS = "ANONYMOUS"  # the user of a connection not authenticated, as Kafka names it


def _precedence(user: str, client_id: str) -> list[Entity]:
    """The entities whose quota applies to (user, client id), first found first."""
    return [
        ((CLIENT_ID, client_id), (USER, user)), ((CLIENT_ID, None), (USER, user)), ((USER, user),),
        ((CLIENT_ID, client_id), (USER, None)), ((CLIENT_ID, None), (USER, None)), ((USER, None),),
        ((CLIENT_ID, client_id),), ((CLIENT_ID, None),),
    ]


class ClientQuotas:
    def __init__(self, journal: Journal, window_num: int, window_size_s: int):
        self.journal = journal
        self.window_num, self.window_size_s = window_num, window_size_s
        self.values: dict[Entity, dict[str, float]] = {}
        self._stats: dict[tuple[str, Entity], Rate | TokenBucket] = {}
        self._lock = trio.Lock()

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        for entry in await self.journal.replay():
            if entry["type"] == ENTRY:
                self._apply(tuple(tuple(pair) for pair in entry["entity"]), entry["values"])
        async with trio.open_nursery() as nursery:
            self.journal.compact_with(nursery, self._snapshot)
            task_status.started()
            await trio.sleep_forever()

    def _snapshot(self) -> list[dict]:
        return [self._entry(entity, values) for entity, values in self.values.items()]

    @staticmethod
    def _entry(entity: Entity, values: dict[str, float]) -> dict:
        return {"type": ENTRY, "entity": [list(pair) for pair in entity], "values": values}

    def _apply(self, entity: Entity, values: dict[str, float]) -> None:
        if values:
            self.values[entity] = values
        else:
            self.values.pop(entity, None)

    async def alter(self, entity: Entity, changes: dict[str, float | None]) -> None:
        """Set (a value) or remove (None) quotas of an entity, once journaled."""
        async with self._lock:
            values = dict(self.values.get(entity, {}))
            for key, value in changes.items():
                if value is None:
                    values.pop(key, None)
                else:
                    values[key] = value
            await self.journal.write(self._entry(entity, values))
            self._apply(entity, values)

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
        stat = self._stat(key, measured, now)
        stat.record(value, bound, now)
        return stat.throttle_ms(bound, now)

    def throttle_ms(self, key: str, client_id: str | None, user: str = ANONYMOUS) -> int:
        """How long the client is over its quota of `key` already, counting nothing."""
        found = self.quota(key, user, client_id or "")
        if found is None:
            return 0
        now = trio.current_time()
        return self._stat(key, found[1], now).throttle_ms(found[0], now)

    def record_connection(self, address: str) -> int:
        """Count a new connection from `address` against its IP's connection_creation_rate (its own
        quota, else the default IP's): the milliseconds it is throttled for."""
        bound = self.values.get(((IP, address),), self.values.get(((IP, None),), {})).get(CONNECTION_CREATION_RATE)
        if bound is None:
            return 0
        now = trio.current_time()
        stat = self._stat(CONNECTION_CREATION_RATE, ((IP, address),), now)
        stat.record(1, bound, now)
        return stat.throttle_ms(bound, now)

    def unrecord(self, key: str, client_id: str | None, value: float, user: str = ANONYMOUS) -> None:
        found = self.quota(key, user, client_id or "")
        stat = found and self._stats.get((key, found[1]))
        if isinstance(stat, Rate):
            stat.unrecord(value)

    def _stat(self, key: str, measured: Entity, now: float) -> Rate | TokenBucket:
        stat = self._stats.get((key, measured))
        if stat is None:  # a new client: first forget those that have nothing counted any more
            self._stats = {k: s for k, s in self._stats.items() if not s.idle(now)}
            kind = TokenBucket if key == CONTROLLER_MUTATION_RATE else Rate
            stat = self._stats[(key, measured)] = kind(self.window_num, self.window_size_s)
        return stat

    def window_bytes(self, key: str, client_id: str | None, user: str = ANONYMOUS) -> float:
        """The most the client's quota of `key` lets through in all but one window (Kafka bounds a
        fetch by it), unbounded without a quota."""
        found = self.quota(key, user, client_id or "")
        return float("inf") if found is None else found[0] * (self.window_num - 1) * self.window_size_s
