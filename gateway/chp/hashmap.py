"""The hashmap a CHP server owns and a CHP client mirrors (no I/O here)."""

from bisect import bisect_left, insort
from collections.abc import Iterator
from dataclasses import replace

from protocol.chp import CAS, KVMsg, expected_sequence, expiry_ms, with_absolute_ttl


class Hashmap:
    """Key -> latest message for that key, and the last sequence applied."""

    def __init__(self) -> None:
        self.entries: dict[str, KVMsg] = {}
        self.sequence = 0
        # The keys in order, for `subtree`: a cluster holds a key per partition, and its
        # reconcilers list a few gateways' keys at every change of one.
        self._keys: list[str] = []

    def store(self, msg: KVMsg) -> None:
        """Apply a sequenced update: set the key, or delete it if the body is empty."""
        if msg.is_delete:
            if self.entries.pop(msg.key, None) is not None:
                del self._keys[bisect_left(self._keys, msg.key)]
        else:
            if msg.key not in self.entries:
                insort(self._keys, msg.key)
            self.entries[msg.key] = msg
        self.sequence = msg.sequence

    def key_sequence(self, key: str) -> int:
        """The sequence of the update that set `key`; 0 if it is absent."""
        msg = self.entries.get(key)
        return 0 if msg is None else msg.sequence

    def accept(self, update: KVMsg, now_ms: int) -> KVMsg | None:
        """Sequence a client's KVSET, store it and return it for publishing.

        None if it is a compare-and-set that failed; DecodeError if its ttl
        or cas is not a number.
        """
        return self.apply(with_absolute_ttl(update, now_ms))

    def apply(self, update: KVMsg) -> KVMsg | None:
        """`accept` for an update whose ttl is already absolute."""
        expected = expected_sequence(update)
        if expected is not None and expected != self.key_sequence(update.key):
            return None
        properties = {name: value for name, value in update.properties.items() if name != CAS}
        sequenced = replace(update, sequence=self.sequence + 1, properties=properties)
        self.store(sequenced)
        return sequenced

    def expire(self, now_ms: int) -> list[KVMsg]:
        """Delete every key whose expiry has passed; the deletions to publish."""
        expired = [
            msg.key
            for msg in self.entries.values()
            if (expiry := expiry_ms(msg)) is not None and expiry <= now_ms
        ]
        return [self.accept(KVMsg(key=key), now_ms) for key in expired]

    def subtree(self, prefix: str) -> Iterator[KVMsg]:
        """The stored messages whose keys start with `prefix`, in the keys' order."""
        keys = self._keys
        index = bisect_left(keys, prefix)
        while index < len(keys) and keys[index].startswith(prefix):
            yield self.entries[keys[index]]
            index += 1
