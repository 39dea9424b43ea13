"""Helpers shared by the store log tests."""

from gateway.mesh.store.store_log import StoreLog

ADDRESS = "0123456789ABCDEF0123456789ABCDEF"


def content_for(sequence: int, size: int | None = None) -> bytes:
    """Content that can be checked later from its sequence alone."""
    size = sequence % 300 if size is None else size
    return (sequence.to_bytes(8, "big") * (size // 8 + 1))[:size]


def fill(store: StoreLog, subject: str, count: int, *, start: int = 0, address: str = ADDRESS,
         timestamp_ms: int = 0) -> None:
    for sequence in range(start, start + count):
        store.append(subject, address, sequence, content_for(sequence), timestamp_ms + sequence)


def sequences(store: StoreLog, subject: str, start: int = 0, address: str = ADDRESS) -> list[int]:
    """Every sequence readable from `start`, each checked against its content."""
    found = []
    for entry in store.read(subject, address, start, 10**9, 10**12):
        assert entry.content == content_for(entry.sequence)
        found.append(entry.sequence)
    return found
