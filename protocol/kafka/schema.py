"""How Kafka APIs are declared: fields with version ranges, as data.

One `Api` per Kafka API holds its request and response field lists. A field
names the versions it exists in, the versions where it may be null and the
versions where it travels as a tagged field, in the notation of Kafka's own
message definitions: "0+", "3-7", "none". The generic codec (`codec.py`)
compiles these declarations; nothing else knows about versions.

Types:
  bool int8 int16 int32 int64 uint16 uint32 float64 uuid string bytes records
  "[]T"     array of a primitive type T
  "[]"      array of structs whose fields are given in `fields`
  "struct"  a single struct whose fields are given in `fields`
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

OPEN_END = 0x7FFF

PRIMITIVES = frozenset(
    "bool int8 int16 int32 int64 uint16 uint32 float64 uuid string bytes records".split()
)


@dataclass(frozen=True)
class Versions:
    """An inclusive range of versions; `none` is empty."""

    low: int
    high: int

    @classmethod
    def parse(cls, spec: str) -> Versions:
        if spec == "none":
            return cls(1, 0)
        if spec.endswith("+"):
            return cls(int(spec[:-1]), OPEN_END)
        low, _, high = spec.partition("-")
        return cls(int(low), int(high or low))

    def __contains__(self, version: int) -> bool:
        return self.low <= version <= self.high

    def __bool__(self) -> bool:
        return self.low <= self.high


NO_DEFAULT: Any = object()


@dataclass(frozen=True)
class Field:
    """One field of a request, response or struct.

    `default` is the value the field takes in versions that lack it, or when
    a tagged field is absent. Left out, it is the type's zero value (0, False,
    "", b"", empty list, the zero UUID, a struct of defaults), as in Kafka;
    Kafka's `"default": "null"` is `default=None`.
    """

    name: str
    type: str
    versions: str = "0+"
    nullable: str = "none"
    tag: int | None = None
    tagged: str = "none"
    default: Any = NO_DEFAULT
    ignorable: bool = False
    fields: tuple[Field, ...] = ()
    # Kafka's "mapKey": part of the key of an array that Kafka keeps as a map;
    # the wire form is an ordinary array, it is kept here as documentation.
    map_key: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", tuple(self.fields))
        base = self.type[2:] if self.type.startswith("[]") else self.type
        if self.type in ("[]", "struct"):
            if not self.fields:
                raise ValueError(f"{self.name}: {self.type} needs fields")
        elif base not in PRIMITIVES:
            raise ValueError(f"{self.name}: unknown type {self.type!r}")
        if (self.tag is None) != (not Versions.parse(self.tagged)):
            raise ValueError(f"{self.name}: tag and tagged go together")

    @cached_property  # asked for every request and response
    def version_range(self) -> Versions:
        return Versions.parse(self.versions)

    @property
    def nullable_range(self) -> Versions:
        return Versions.parse(self.nullable)

    @property
    def tagged_range(self) -> Versions:
        return Versions.parse(self.tagged)


def F(name: str, type: str, versions: str = "0+", /, *fields: Field, **options: Any) -> Field:
    """Shorthand: `F("acks", "int16")`, `F("topics", "[]", "0+", F(...), F(...))`."""
    return Field(name, type, versions, fields=fields, **options)


@dataclass(frozen=True)
class Api:
    """A Kafka API: its key, version range, flexible versions and fields."""

    key: int
    name: str
    versions: str
    flexible: str
    request: tuple[Field, ...]
    response: tuple[Field, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "request", tuple(self.request))
        object.__setattr__(self, "response", tuple(self.response))

    @cached_property  # asked for every request and response
    def version_range(self) -> Versions:
        return Versions.parse(self.versions)

    @cached_property  # asked for every request and response: the import below runs once
    def Request(self) -> type:  # noqa: N802 - it is a class
        """The request message class, generated from `request` on first use."""
        from protocol.kafka.message_classes import message_classes

        return message_classes(self)[0]

    @cached_property
    def Response(self) -> type:  # noqa: N802 - it is a class
        """The response message class, generated from `response` on first use."""
        from protocol.kafka.message_classes import message_classes

        return message_classes(self)[1]

    @cached_property
    def flexible_range(self) -> Versions:
        return Versions.parse(self.flexible)

    def request_header_version(self, version: int) -> int:
        return 2 if version in self.flexible_range else 1

    def response_header_version(self, version: int) -> int:
        # ApiVersions answers with header v0 whatever the version, so that a
        # client can read the reply before it knows what the broker speaks.
        if self.key == 18:
            return 0
        return 1 if version in self.flexible_range else 0
