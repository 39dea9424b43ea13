"""Users' SCRAM credentials, durable in the gateway's credentials journal, changed as Kafka changes them.

A credential is kept as RFC 5802 asks of a server: salt, iterations, StoredKey
and ServerKey, derived from the salted password when it is set; neither the
password nor the salted password is kept or journaled. Each change of a
user's credential for a mechanism is one journal entry (a deletion has no
keys), so replay keeps the last of each.
"""

from __future__ import annotations

import base64

import trio

from gateway.kafka_error import KafkaError
from gateway.storage.journal import Journal
from protocol.kafka.error_codes import ErrorCode
from protocol.sasl.scram import BY_TYPE, MAX_ITERATIONS, MIN_ITERATIONS, ScramCredential, ScramMechanism

ENTRY = "scram_credential"
KEYS = ("salt", "stored_key", "server_key")

Key = tuple[str, str]  # user, mechanism name
Upsertion = tuple[str, int, int, bytes, bytes]  # user, mechanism type, iterations, salt, salted password


def mechanism_of(type_id: int) -> ScramMechanism:
    mechanism = BY_TYPE.get(type_id)
    if mechanism is None:
        raise KafkaError(ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")
    return mechanism


def check_upsertion(name: str, type_id: int, iterations: int, salt: bytes, salted_password: bytes) -> None:
    """Kafka's checks of one credential to set, in its order."""
    mechanism_of(type_id)
    if iterations < MIN_ITERATIONS:
        raise KafkaError(ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
    if iterations > MAX_ITERATIONS:
        raise KafkaError(ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
    if not salt or not salted_password:
        raise KafkaError(ErrorCode.UNACCEPTABLE_CREDENTIAL, "Salt and salted password must not be empty")


class ScramCredentials:
    def __init__(self, journal: Journal):
        self.journal = journal
        self.credentials: dict[Key, ScramCredential] = {}
        self._lock = trio.Lock()

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        for entry in await self.journal.replay():
            if entry["type"] == ENTRY:
                self._apply((entry["user"], entry["mechanism"]), _credential(entry))
        async with trio.open_nursery() as nursery:
            self.journal.compact_with(nursery, self._snapshot)
            task_status.started()
            await trio.sleep_forever()

    def _snapshot(self) -> list[dict]:
        return [_entry(key, credential) for key, credential in self.credentials.items()]

    def _apply(self, key: Key, credential: ScramCredential | None) -> None:
        if credential is None:
            self.credentials.pop(key, None)
        else:
            self.credentials[key] = credential

    def lookup(self, user: str, mechanism: str) -> ScramCredential | None:
        return self.credentials.get((user, mechanism))

    def users(self) -> dict[str, list[tuple[int, int]]]:
        """(mechanism type, iterations) of each user's credentials, by user."""
        found: dict[str, list[tuple[int, int]]] = {}
        for (user, mechanism), credential in sorted(self.credentials.items()):
            found.setdefault(user, []).append((_type_of(mechanism), credential.iterations))
        return found

    async def alter(self, deletions: list[tuple[str, int]], upsertions: list[Upsertion]) -> None:
        """One user's deletions (user, mechanism type) and upsertions, checked already, once journaled.
        RESOURCE_NOT_FOUND, changing nothing, if a deletion names a credential that does not exist."""
        async with self._lock:
            for user, type_id in deletions:
                if (user, mechanism_of(type_id).name) not in self.credentials:
                    raise KafkaError(ErrorCode.RESOURCE_NOT_FOUND,
                                     "Attempt to delete a user credential that does not exist")
            changes: list[tuple[Key, ScramCredential | None]] = [
                ((user, mechanism_of(type_id).name), None) for user, type_id in deletions]
            for user, type_id, iterations, salt, salted_password in upsertions:
                mechanism = mechanism_of(type_id)
                changes.append(((user, mechanism.name),
                                ScramCredential.from_salted_password(mechanism, salt, salted_password, iterations)))
            for key, credential in changes:
                await self.journal.write(_entry(key, credential))
                self._apply(key, credential)


def _type_of(mechanism: str) -> int:
    return next(type_id for type_id, known in BY_TYPE.items() if known.name == mechanism)


def _entry(key: Key, credential: ScramCredential | None) -> dict:
    entry = {"type": ENTRY, "user": key[0], "mechanism": key[1]}
    if credential is not None:
        entry.update({name: base64.b64encode(getattr(credential, name)).decode() for name in KEYS},
                     iterations=credential.iterations)
    return entry


def _credential(entry: dict) -> ScramCredential | None:
    if "salt" not in entry:
        return None
    return ScramCredential(*(base64.b64decode(entry[name]) for name in KEYS), entry["iterations"])
