"""The updates a passive server got from clients but not yet from the active one.

Clients send every KVSET to both servers. Whichever copy reaches the passive
second (the client's or the active's KVREPL) cancels the first, matched by
the update's UUID. On fail-over the passive applies what is still pending:
updates the dead active never replicated, so no client saw them.
Entries the active, while alive, left unmatched for a whole peer timeout
are dropped: it refused them (a lost compare-and-set) or never got them.
Updates without a UUID (some C clients send none) cannot be matched and
are not kept.
"""

from protocol.chp import KVMsg


class Pending:
    def __init__(self, timeout: float):
        self.timeout = timeout
        # UUID -> (when it came, the client's update, or None if it came from the active first)
        self._entries: dict[bytes, tuple[float, KVMsg | None]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def from_client(self, update: KVMsg, now: float) -> None:
        self._match(update.uuid, update, now)

    def from_active(self, uuid: bytes, now: float) -> None:
        self._match(uuid, None, now)

    def peer_heard(self, now: float) -> None:
        """The active peer spoke at `now`: forget what it had a timeout to replicate."""
        horizon = now - self.timeout
        self._entries = {uuid: entry for uuid, entry in self._entries.items() if entry[0] >= horizon}

    def take(self) -> list[KVMsg]:
        """The client updates still pending, in arrival order; empties the list."""
        updates = [msg for _, msg in self._entries.values() if msg is not None]
        self._entries.clear()
        return updates

    def _match(self, uuid: bytes, update: KVMsg | None, now: float) -> None:
        if not uuid:
            return
        other = self._entries.pop(uuid, None)
        if other is None or (other[1] is None) == (update is None):
            self._entries[uuid] = (now, update)
