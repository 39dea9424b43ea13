"""The kinds of value a setting takes: text to value, what is allowed, Kafka's type name.

Every kind reads the text of a flag, an environment variable or a line of a
properties file, checks a value given in code the same way, and says in a
few words what it allows, for error messages and --help. For a topic config
it also words a refusal as Kafka's ConfigDef does (`config_error`), since
clients show INVALID_CONFIG's message as it comes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar


class NotAllowed(ValueError):
    """A value outside what its kind allows; the message says what is allowed."""


@dataclass(frozen=True)
class Kind:
    config_type: ClassVar[str] = "STRING"  # DescribeConfigs' type name (BOOLEAN, INT, LONG, STRING, LIST, ...)
    metavar: ClassVar[str] = "TEXT"

    def parse(self, text: str):
        return self.check(text)

    def check(self, value):
        return value

    def text(self, value) -> str:
        """The value as Kafka writes config values."""
        return "" if value is None else str(value)

    def allowed(self) -> str:
        return "any text"

    def refused(self, value) -> NotAllowed:
        return NotAllowed(f"{value!r} is not allowed; allowed: {self.allowed()}")

    def config_error(self, name: str, text: str) -> str:
        """Kafka's ConfigException message for config `name` set to `text`, which parse refused."""
        return config_exception(name, text, self.allowed())


def config_exception(name: str, value, reason: str) -> str:
    """The message of Kafka's ConfigException(name, value, reason)."""
    return f"Invalid value {value} for configuration {name}: {reason}"


JAVA_SHORT, JAVA_INT, JAVA_LONG = 2**15, 2**31, 2**63
INTEGER = re.compile(r"[+-]?[0-9]+")  # what Java's parseInt and parseLong take


@dataclass(frozen=True)
class Integer(Kind):
    low: int = -(2**31)
    high: int = 2**31 - 1
    metavar: ClassVar[str] = "N"

    @property
    def config_type(self) -> str:
        return "INT" if self.high < 2**31 else "LONG"

    def parse(self, text: str) -> int:
        digits = text.strip()
        if not INTEGER.fullmatch(digits):
            raise NotAllowed(f"{digits!r} is not an integer; allowed: {self.allowed()}")
        return self.check(int(digits))

    def config_error(self, name: str, text: str) -> str:
        digits = text.strip()
        bound = {"SHORT": JAVA_SHORT, "INT": JAVA_INT}.get(self.config_type, JAVA_LONG)
        if not INTEGER.fullmatch(digits) or not -bound <= int(digits) < bound:
            return config_exception(name, text, f"Not a number of type {self.config_type}")
        return config_exception(name, int(digits), self.range_error(int(digits)))

    def range_error(self, value: int) -> str:
        """Kafka's Range validator's words."""
        if value < self.low:
            return f"Value must be at least {self.low}"
        return f"Value must be no more than {self.high}"

    def check(self, value) -> int:
        if type(value) is not int or not self.low <= value <= self.high:
            raise self.refused(value)
        return value

    def allowed(self) -> str:
        if self.high in (2**31 - 1, 2**63 - 1):
            return f"an integer of at least {self.low}"
        return f"an integer from {self.low} to {self.high}"


@dataclass(frozen=True)
class IntegerOr(Integer):
    """An integer from low to high, or the one value `alone` (Kafka's gzip level: 1 to 9, or -1)."""

    alone: int = -1

    def check(self, value) -> int:
        if type(value) is int and value == self.alone:
            return value
        return super().check(value)

    def allowed(self) -> str:
        return f"{super().allowed()}, or {self.alone}"

    def range_error(self, value: int) -> str:
        """The words of Kafka's validator of gzip levels."""
        return f"Value must be between {self.low} and {self.high} or equal to {self.alone}"


def long(low: int = -(2**63)) -> Integer:
    return Integer(low, 2**63 - 1)


@dataclass(frozen=True)
class Short(Integer):
    """Kafka's SHORT configs."""

    low: int = -JAVA_SHORT
    high: int = JAVA_SHORT - 1

    @property
    def config_type(self) -> str:
        return "SHORT"


@dataclass(frozen=True)
class Boolean(Kind):
    config_type: ClassVar[str] = "BOOLEAN"
    metavar: ClassVar[str] = "BOOL"

    def parse(self, text: str) -> bool:
        word = text.strip().lower()
        if word not in ("true", "false"):
            raise self.refused(text)
        return word == "true"

    def check(self, value) -> bool:
        if type(value) is not bool:
            raise self.refused(value)
        return value

    def text(self, value) -> str:
        return str(value).lower()

    def allowed(self) -> str:
        return "true or false"

    def config_error(self, name: str, text: str) -> str:
        return config_exception(name, text, "Expected value to be either true or false")


@dataclass(frozen=True)
class Text(Kind):
    empty: bool = True  # whether "" is allowed

    def parse(self, text: str) -> str:
        return self.check(text.strip())

    def check(self, value) -> str:
        if not isinstance(value, str) or (not value and not self.empty):
            raise self.refused(value)
        return value

    def allowed(self) -> str:
        return "any text" if self.empty else "a non-empty text"


@dataclass(frozen=True)
class ClassName(Text):
    """Kafka's CLASS configs: a Java class name, which the gateway has no classes to look up."""

    config_type: ClassVar[str] = "CLASS"


@dataclass(frozen=True)
class Choice(Kind):
    choices: tuple[str, ...] = ()
    metavar: ClassVar[str] = "WORD"
    ignore_case: bool = False  # Kafka reads some enumerations case-insensitively

    def parse(self, text: str) -> str:
        word = text.strip()
        if self.ignore_case:
            word = next((c for c in self.choices if c.lower() == word.lower()), word)
        return self.check(word)

    def check(self, value) -> str:
        if value not in self.choices:
            raise self.refused(value)
        return value

    def allowed(self) -> str:
        return "one of " + ", ".join(choice or "empty" for choice in self.choices)

    def config_error(self, name: str, text: str) -> str:
        ignoring = " (case insensitive)" if self.ignore_case else ""
        return config_exception(name, text.strip(), f"String must be one of{ignoring}: {', '.join(self.choices)}")


@dataclass(frozen=True)
class ChoiceList(Kind):
    """A comma-separated list of words from `choices`, as Kafka's cleanup.policy."""

    choices: tuple[str, ...] = ()
    empty_allowed: bool = False  # Kafka's ValidList takes an empty list; some lists here need an item
    config_type: ClassVar[str] = "LIST"
    metavar: ClassVar[str] = "WORD,..."

    def parse(self, text: str) -> str:
        return self.check(",".join(word.strip() for word in text.split(",") if word.strip()))

    def check(self, value) -> str:
        if not isinstance(value, str) or not (value or self.empty_allowed):
            raise self.refused(value)
        if value and any(w not in self.choices for w in value.split(",")):
            raise self.refused(value)
        return value

    def allowed(self) -> str:
        return "a list of " + ", ".join(self.choices)

    def config_error(self, name: str, text: str) -> str:
        """Kafka's ValidList checks each item as a ValidString."""
        items = [item.strip() for item in text.split(",")]
        wrong = next((item for item in items if item not in self.choices), text.strip())
        return config_exception(name, wrong, f"String must be one of: {', '.join(self.choices)}")


@dataclass(frozen=True)
class Nullable(Kind):
    """Another kind's value, or None when the text is empty (Kafka's null default)."""

    inner: Kind = Kind()

    @property
    def config_type(self) -> str:
        return self.inner.config_type

    @property
    def metavar(self) -> str:
        return self.inner.metavar

    def parse(self, text: str):
        return None if not text.strip() else self.inner.parse(text)

    def check(self, value):
        return None if value is None else self.inner.check(value)

    def text(self, value) -> str:
        return "" if value is None else self.inner.text(value)

    def allowed(self) -> str:
        return f"{self.inner.allowed()}, or empty for none"


@dataclass(frozen=True)
class FilePath(Kind):
    metavar: ClassVar[str] = "FILE"

    def parse(self, text: str) -> Path:
        return self.check(Path(text.strip()))

    def check(self, value) -> Path:
        if not isinstance(value, Path) or not str(value) or str(value) == ".":
            raise self.refused(value)
        return value

    def allowed(self) -> str:
        return "a file path"


@dataclass(frozen=True)
class Directory(Kind):
    """A directory path; Kafka's log.dirs is a list, of which one entry is supported."""

    metavar: ClassVar[str] = "DIR"

    def parse(self, text: str) -> Path:
        paths = [part.strip() for part in text.split(",") if part.strip()]
        if len(paths) != 1:
            raise self.refused(text)
        return Path(paths[0])

    def check(self, value) -> Path:
        if not isinstance(value, Path) or not str(value):
            raise self.refused(value)
        return value

    def allowed(self) -> str:
        return "one directory path"


@dataclass(frozen=True)
class Address(Kind):
    """A ZeroMQ endpoint, tcp://host:port (port * for an ephemeral one where bound)."""

    metavar: ClassVar[str] = "ENDPOINT"

    def check(self, value) -> str:
        if not isinstance(value, str) or not value.startswith("tcp://") or ":" not in value[6:]:
            raise self.refused(value)
        return value

    def parse(self, text: str) -> str:
        return self.check(text.strip())

    def allowed(self) -> str:
        return "an endpoint tcp://HOST:PORT"


HOST_COUNT = re.compile(r"(?P<host>\S+?)\s*:\s*(?P<count>\d+)")  # the count after the host's last colon


@dataclass(frozen=True)
class HostCounts(Kind):
    """HOST:COUNT,... as Kafka's max.connections.per.ip.overrides (an IPv6 host keeps its colons)."""

    metavar: ClassVar[str] = "HOST:COUNT,..."

    def parse(self, text: str) -> tuple[tuple[str, int], ...]:
        pairs = []
        for part in filter(None, (p.strip() for p in text.split(","))):
            match = HOST_COUNT.fullmatch(part)
            if match is None:
                raise self.refused(part)
            pairs.append((match["host"], int(match["count"])))
        return self.check(tuple(pairs))

    def check(self, value) -> tuple[tuple[str, int], ...]:
        if not isinstance(value, tuple) or not all(
                isinstance(host, str) and host and type(count) is int and count >= 0 for host, count in value):
            raise self.refused(value)
        return value

    def text(self, value) -> str:
        return ",".join(f"{host}:{count}" for host, count in value)

    def allowed(self) -> str:
        return "a list of HOST:COUNT"


@dataclass(frozen=True)
class HostPorts(HostCounts):
    """HOST:PORT,... of servers to reach, in order."""

    metavar: ClassVar[str] = "HOST:PORT,..."

    def check(self, value) -> tuple[tuple[str, int], ...]:
        if any(not 0 < port < 65536 for _, port in super().check(value)):
            raise self.refused(value)
        return value

    def allowed(self) -> str:
        return "a list of HOST:PORT"


@dataclass(frozen=True)
class Real(Kind):
    """A number from low to high, as Kafka's DOUBLE configs (min.cleanable.dirty.ratio)."""

    low: float = 0.0
    high: float = 1.0
    config_type: ClassVar[str] = "DOUBLE"
    metavar: ClassVar[str] = "X"

    def parse(self, text: str) -> float:
        try:
            return self.check(float(text.strip()))
        except ValueError:
            raise NotAllowed(f"{text.strip()!r} is not a number; allowed: {self.allowed()}") from None

    def check(self, value) -> float:
        if type(value) not in (int, float) or not self.low <= value <= self.high:
            raise self.refused(value)
        return float(value)

    def allowed(self) -> str:
        return f"a number from {self.low} to {self.high}"

    def config_error(self, name: str, text: str) -> str:
        try:
            value = float(text.strip())
        except ValueError:
            return config_exception(name, text, "Not a number of type DOUBLE")
        if value < self.low:
            return config_exception(name, value, f"Value must be at least {_number(self.low)}")
        return config_exception(name, value, f"Value must be no more than {_number(self.high)}")


def _number(bound: float) -> str:
    """A bound as Kafka's Range names it: the integers it is declared with."""
    return str(int(bound)) if bound.is_integer() else str(bound)


REPLICA = re.compile(r"\d+:\d+")


@dataclass(frozen=True)
class ReplicaList(Kind):
    """Kafka's throttled replicas: PARTITION:BROKER,... or the wildcard *, or empty for none."""

    config_type: ClassVar[str] = "LIST"
    metavar: ClassVar[str] = "PARTITION:BROKER,..."

    def parse(self, text: str) -> str:
        return self.check(",".join(item.strip() for item in text.split(",") if item.strip()))

    def check(self, value) -> str:
        if not isinstance(value, str) or not (value == "*" or all(
                REPLICA.fullmatch(item) for item in value.split(",") if value)):
            raise self.refused(value)
        return value

    def allowed(self) -> str:
        return "the wildcard * or a list of PARTITION:BROKER"

    def config_error(self, name: str, text: str) -> str:
        items = "[" + ", ".join(item.strip() for item in text.strip().split(",")) + "]"  # a Java List's text
        return config_exception(name, items, f"{name} must be the literal '*' or a list of replicas in the "
                                             "following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...")


@dataclass(frozen=True)
class Secret:
    """A password's value: its repr never shows it, so no log line or traceback can."""

    value: str = field(repr=False)

    def __str__(self) -> str:
        return "[hidden]"


@dataclass(frozen=True)
class Password(Kind):
    """Kafka's PASSWORD type: a secret, null by default, described as null and sensitive."""

    config_type: ClassVar[str] = "PASSWORD"
    metavar: ClassVar[str] = "SECRET"

    def parse(self, text: str) -> Secret | None:
        return Secret(text) if text else None

    def check(self, value) -> Secret | None:
        if value is not None and not isinstance(value, Secret):
            raise NotAllowed("a password is given as a Secret")  # never the value itself in the message
        return value

    def text(self, value) -> str:
        return "" if value is None else value.value

    def allowed(self) -> str:
        return "any text (a secret)"


@dataclass(frozen=True)
class Names(Kind):
    """A comma-separated list of free names (Kafka's LIST), empty by default."""

    config_type: ClassVar[str] = "LIST"
    metavar: ClassVar[str] = "NAME,..."

    def parse(self, text: str) -> tuple[str, ...]:
        return self.check(tuple(name.strip() for name in text.split(",") if name.strip()))

    def check(self, value) -> tuple[str, ...]:
        if not isinstance(value, tuple) or not all(isinstance(name, str) and name for name in value):
            raise self.refused(value)
        return value

    def text(self, value) -> str:
        return ",".join(value)

    def allowed(self) -> str:
        return "a list of names"


@dataclass(frozen=True)
class Addresses(Names):
    """One or more distinct ZeroMQ endpoints, comma-separated: a socket connects to each."""

    metavar: ClassVar[str] = "ENDPOINT,..."

    def check(self, value) -> tuple[str, ...]:
        if not super().check(value) or len(set(value)) < len(value):
            raise self.refused(value)
        for endpoint in value:
            Address().check(endpoint)
        return value

    def allowed(self) -> str:
        return "distinct endpoints tcp://HOST:PORT, comma-separated"