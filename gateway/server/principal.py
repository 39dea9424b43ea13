"""Who a connection acts for: Kafka's principal, a type and a name ("User:alice")."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Principal:
    type: str
    name: str

    def __str__(self) -> str:
        return f"{self.type}:{self.name}"


# Kafka's principal of a connection nobody authenticated (PLAINTEXT, or SSL without a client certificate).
ANONYMOUS = Principal("User", "ANONYMOUS")
