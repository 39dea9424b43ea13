"""The client quotas: their values, durable in a journal, and the rates they bound.

Each change of an entity's quotas is journaled as the entity's whole set of
values (none: the entity is gone), so replay keeps the last entry of each.
A client's quota of a kind is the one of the first entity in Kafka's order
of precedence that has it (user and client id, then the user's default
client, the user, ... down to the default client id); its rate is measured
per entity, the defaults standing for the client's own user and client id,
as Kafka's quota sensors are.
"""

from __future__ import annotations

import trio

from gateway.quotas.entities import CLIENT_ID, USER, Entity, matches
from gateway.quotas.rate import Rate, throttle_ms
from gateway.storage.journal import Journal

ENTRY = "client_quota"
ANONYMOUS = "ANONYMOUS"  # the user of every connection: the gateway authenticates nobody


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
        self._rates: dict[tuple[str, Entity], Rate] = {}
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
        rate = self._rates.get((key, measured))
        if rate is None:
            rate = self._rates[(key, measured)] = Rate(self.window_num, self.window_size_s)
        now = trio.current_time()
        rate.record(value, now)
        return throttle_ms(rate, bound, now)

    def unrecord(self, key: str, client_id: str | None, value: float, user: str = ANONYMOUS) -> None:
        found = self.quota(key, user, client_id or "")
        rate = found and self._rates.get((key, found[1]))
        if rate:
            rate.unrecord(value)

    def window_bytes(self, key: str, client_id: str | None, user: str = ANONYMOUS) -> float:
        """The most the client's quota of `key` lets through in all but one window (Kafka bounds a
        fetch by it), unbounded without a quota."""
        found = self.quota(key, user, client_id or "")
        return float("inf") if found is None else found[0] * (self.window_num - 1) * self.window_size_s
