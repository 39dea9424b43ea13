"""Who a connection is: Kafka's principal, `User:ANONYMOUS` until something says more.

A TLS client certificate names its user (`ssl.principal.mapping.rules` over
its subject); authentication on the connection may name another. Whatever
decides what a client may do reads `connection.principal`.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class KafkaPrincipal:
    type: str  # Kafka's principal type, "User" for every principal the gateway makes
    name: str
    # authenticated with a delegation token: such a session may not ask for tokens. As in Kafka, the
    # same principal however it authenticated.
    token_authenticated: bool = field(default=False, compare=False)

    def __str__(self) -> str:
        return f"{self.type}:{self.name}"


def user(name: str, token_authenticated: bool = False) -> KafkaPrincipal:
    return KafkaPrincipal("User", name, token_authenticated)


ANONYMOUS = user("ANONYMOUS")
