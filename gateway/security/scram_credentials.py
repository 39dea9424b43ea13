"""Users' SCRAM credentials, durable in the gateway's credentials journal, changed as Kafka changes them.

A credential is kept as RFC 5802 asks of a server: salt, iterations, StoredKey
and ServerKey, derived from the salted password when it is set; neither the
password nor the salted password is kept or journaled. Each change of a
user's credential for a mechanism is one journal entry (a deletion has no
keys), so replay keeps the last of each. In a cluster of gateways
(`sharing`) the controller alone journals them and shares the credentials
(salted, as journaled) after every change; every other gateway
authenticates against its mirror of them and forwards the changes it is sent
to the controller.
"""

from __future__ import annotations

import base64

import trio

from gateway.kafka_error import KafkaError
from gateway.storage.journal import Journal
from gateway.storage.journal_sharing import JournaledState, JournalSharing
from protocol.kafka.error_codes import ErrorCode
from protocol.sasl.scram import BY_TYPE, MAX_ITERATIONS, MIN_ITERATIONS, ScramCredential, ScramMechanism

ENTRY = "scram_credential"
KEYS = ("salt", "stored_key", "server_key")

Key = tuple[str, str]  # user, mechanism name


def checked_mechanism(user: str, type_id: int) -> ScramMechanism:
    """Kafka's first checks of any alteration: a user name, a known mechanism."""
    if not user:
        raise KafkaError(ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
    mechanism = BY_TYPE.get(type_id)
    if mechanism is None:
        raise KafkaError(ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")
    return mechanism


def check_iterations(iterations: int) -> None:
    if iterations < MIN_ITERATIONS:
        raise KafkaError(ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
    if iterations > MAX_ITERATIONS:
        raise KafkaError(ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations")


class ScramCredentials(JournaledState):
    ENTRY = ENTRY

    def __init__(self, journal: Journal, sharing: JournalSharing | None = None):
        super().__init__(journal, sharing)
        self.credentials: dict[Key, ScramCredential] = {}
        self._lock = trio.Lock()

    def _snapshot(self) -> list[dict]:
        return [_entry(key, credential) for key, credential in self.credentials.items()]

    def _clear(self) -> None:
        self.credentials = {}

    def _apply(self, entry: dict) -> None:
        key, credential = (entry["user"], entry["mechanism"]), _credential(entry)
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

    def has(self, user: str, mechanism: ScramMechanism) -> bool:
        return (user, mechanism.name) in self.credentials

    async def alter(self, user: str, mechanism: ScramMechanism, credential: ScramCredential | None) -> None:
        """Set (or, None, delete) a user's credential for a mechanism, once journaled."""
        entry = _entry((user, mechanism.name), credential)
        await self.changed(entry)

    async def apply_forwarded(self, entry: dict) -> dict:
        """Journal and apply a change: one this gateway was sent, or (the controller) another gateway."""
        async with self._lock:  # applied in the order journaled
            await self.journal.write(entry)
            self._apply(entry)
            await self._share()
        return {}


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
