"""How a setting is declared: a dataclass field that carries its kind, help and commands.

A setting's name is its attribute with dots for underscores (the attribute
`min_insync_replicas` is Kafka's `min.insync.replicas`), so the name is
written once. From the name come the command-line flag (--min-insync-replicas)
and the environment variable (DAFKA_MIN_INSYNC_REPLICAS).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import Flag, auto

from gateway.settings.kinds import Kind

ENV_PREFIX = "DAFKA_"


class Command(Flag):
    """The programs that take a setting."""

    GATEWAY = auto()
    STORE = auto()
    TOWER = auto()
    PRODUCER = auto()
    CONSUMER = auto()
    CHP = auto()


EVERY = Command.GATEWAY | Command.STORE | Command.TOWER | Command.PRODUCER | Command.CONSUMER | Command.CHP
MESH_NODES = Command.GATEWAY | Command.STORE | Command.PRODUCER | Command.CONSUMER


@dataclass(frozen=True)
class Declared:
    """One setting, as the table declares it."""

    name: str
    attribute: str
    kind: Kind
    default: object
    help: str
    commands: Command
    kafka: bool  # Kafka's own broker config name, so server.properties lines carry over
    synonyms: tuple[str, ...]  # other names Kafka accepts for it (in files and the environment)

    @property
    def flag(self) -> str:
        return "--" + self.name.replace(".", "-")

    @property
    def env(self) -> str:
        return env_name(self.name)


def env_name(name: str) -> str:
    return ENV_PREFIX + name.replace(".", "_").upper()


def setting(kind: Kind, default, help: str, commands: Command, *, kafka: bool = False,
            synonyms: tuple[str, ...] = ()):
    """A dataclass field declaring a setting; `help` is one line, without the default."""
    return dataclasses.field(default=default, metadata={
        "kind": kind, "help": help, "commands": commands, "kafka": kafka, "synonyms": synonyms})


def declared(section: type) -> list[Declared]:
    """The settings a section dataclass declares, in order."""
    return [Declared(f.name.replace("_", "."), f.name, f.metadata["kind"], f.default, f.metadata["help"],
                     f.metadata["commands"], f.metadata["kafka"], f.metadata["synonyms"])
            for f in dataclasses.fields(section) if "kind" in f.metadata]


def check_values(section) -> None:
    """Check a section's values against their kinds (NotAllowed names the setting)."""
    for entry in declared(type(section)):
        try:
            entry.kind.check(getattr(section, entry.attribute))
        except ValueError as exc:
            raise type(exc)(f"{entry.name}: {exc}") from None
