"""Kafka's listener settings: `listeners`, `advertised.listeners`, `listener.security.protocol.map`.

A listener is NAME://HOST:PORT; the name picks its security protocol in the
map (by default each protocol's own name). An empty host binds every
interface. Clients learn the advertised endpoint of the listener they
connected to, so clients on the host and in a container network can each be
told an address they reach.
"""

from __future__ import annotations

import re
import socket
from dataclasses import dataclass
from typing import ClassVar

from gateway.settings.kinds import Kind, NotAllowed

ENTRY = re.compile(r"(?P<name>[A-Za-z0-9_]+)://(?P<host>\[[0-9A-Fa-f:.]+\]|[^:/\s,]*):(?P<port>\d+)")
WILDCARDS = ("0.0.0.0", "::", "")
# Protocols a listener may use now; Kafka's others are recognised and refused.
SERVED_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
KAFKA_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
# Protocols whose connections begin with a TLS handshake.
TLS_PROTOCOLS = frozenset({"SSL", "SASL_SSL"})


@dataclass(frozen=True)
class Listener:
    name: str
    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.name}://{host}:{self.port}"

    @property
    def binds_all(self) -> bool:
        return self.host in WILDCARDS


@dataclass(frozen=True)
class Listeners(Kind):
    """A comma-separated list of NAME://HOST:PORT, each name once."""

    config_type: ClassVar[str] = "LIST"
    metavar: ClassVar[str] = "NAME://HOST:PORT,..."

    def parse(self, text: str) -> tuple[Listener, ...]:
        listeners = []
        for part in (p.strip() for p in text.split(",")):
            if not part:
                continue
            match = ENTRY.fullmatch(part)
            if match is None:
                raise self.refused(part)
            host = match["host"].strip("[]")
            listeners.append(Listener(match["name"].upper(), host, int(match["port"])))
        return self.check(tuple(listeners))

    def check(self, value) -> tuple[Listener, ...]:
        if not isinstance(value, tuple) or not all(isinstance(v, Listener) for v in value):
            raise self.refused(value)
        names = [listener.name for listener in value]
        if len(set(names)) != len(names):
            raise NotAllowed(f"each listener name may appear once: {', '.join(names)}")
        for listener in value:
            if not 0 <= listener.port <= 65535:
                raise NotAllowed(f"port {listener.port} of {listener} is not from 0 to 65535")
        return value

    def text(self, value) -> str:
        return ",".join(str(listener) for listener in value)

    def allowed(self) -> str:
        return "a list of NAME://HOST:PORT (empty HOST: every interface)"


@dataclass(frozen=True)
class ProtocolMap(Kind):
    """listener.security.protocol.map: NAME:PROTOCOL,..."""

    metavar: ClassVar[str] = "NAME:PROTOCOL,..."

    def parse(self, text: str) -> tuple[tuple[str, str], ...]:
        pairs = []
        for part in (p.strip() for p in text.split(",")):
            if not part:
                continue
            name, colon, protocol = part.partition(":")
            if not colon or not name.strip():
                raise self.refused(part)
            pairs.append((name.strip().upper(), protocol.strip().upper()))
        return self.check(tuple(pairs))

    def check(self, value) -> tuple[tuple[str, str], ...]:
        for name, protocol in value:
            if protocol not in KAFKA_PROTOCOLS:
                raise NotAllowed(f"{name}:{protocol}: the security protocol must be one of "
                                 f"{', '.join(KAFKA_PROTOCOLS)}")
        return value

    def text(self, value) -> str:
        return ",".join(f"{name}:{protocol}" for name, protocol in value)

    def allowed(self) -> str:
        return "a list of LISTENER_NAME:SECURITY_PROTOCOL"


def bound_listeners(listeners: tuple[Listener, ...], protocols: tuple[tuple[str, str], ...]
                    ) -> tuple[Listener, ...]:
    """The listeners to bind, once each has a protocol the gateway serves."""
    known = dict(protocols)
    for listener in listeners:
        protocol = known.get(listener.name)
        if protocol is None:
            raise NotAllowed(f"listener {listener.name} has no security protocol in "
                             f"listener.security.protocol.map")
        if protocol not in SERVED_PROTOCOLS:
            raise NotAllowed(f"listener {listener.name} uses {protocol}, which is not served yet; "
                             f"served: {', '.join(SERVED_PROTOCOLS)}")
    return listeners


def advertised_listeners(listeners: tuple[Listener, ...], advertised: tuple[Listener, ...]
                         ) -> tuple[Listener, ...]:
    """What clients are told for each listener: its advertised entry, else the listener
    itself with a wildcard host replaced by this machine's name, as Kafka does."""
    bound = {listener.name: listener for listener in listeners}
    for entry in advertised:
        if entry.name not in bound:
            raise NotAllowed(f"advertised listener {entry.name} is not one of listeners "
                             f"({', '.join(bound)})")
        if entry.host in ("0.0.0.0", "::"):
            raise NotAllowed(f"advertised.listeners cannot use the nonroutable meta-address {entry.host} "
                             f"({entry}): give a routable host")
        if entry.port == 0:
            raise NotAllowed(f"advertised listener {entry} needs a port")
    given = {entry.name: entry for entry in advertised}
    return tuple(given.get(listener.name) or _reachable(listener) for listener in listeners)


def _reachable(listener: Listener) -> Listener:
    if listener.host in ("0.0.0.0", "::"):
        raise NotAllowed(f"listener {listener} binds the nonroutable meta-address {listener.host}, which "
                         f"clients cannot be told: set advertised.listeners (or bind an empty host, "
                         f"{listener.name}://:{listener.port}, to advertise this machine's name)")
    if not listener.host:
        return Listener(listener.name, socket.getfqdn(), listener.port)
    return listener
