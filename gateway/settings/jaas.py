"""Kafka's JAAS configuration text, as `sasl.jaas.config` holds it.

One or more login module entries, each `CLASS FLAG key="value" ...;`, e.g.
`org.apache.kafka.common.security.plain.PlainLoginModule required
user_alice="alice-secret";`. The text holds passwords: an error names where
it fails, never the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from gateway.settings.kinds import Kind, NotAllowed

PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
OAUTHBEARER_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
CLOCK_SKEW = "unsecuredValidatorAllowableClockSkewMs"
MODULE = re.compile(r"\s*(?P<module>[A-Za-z_$][\w.$]*)\s+(?P<flag>required|requisite|sufficient|optional)\s*")
OPTION = re.compile(r'(?P<key>[A-Za-z_][\w.-]*)\s*=\s*(?:"(?P<quoted>(?:[^"\\]|\\.)*)"|(?P<bare>[^\s;"=]+))\s*')
END = re.compile(r";\s*")


@dataclass(frozen=True)
class LoginModule:
    module: str
    options: tuple[tuple[str, str], ...]


def login_modules(text: str) -> tuple[LoginModule, ...]:
    """The entries of a JAAS configuration text (NotAllowed, naming the offset, if malformed)."""
    entries, position = [], 0
    while position < len(text) and text[position:].strip():
        module = MODULE.match(text, position)
        if module is None:
            raise NotAllowed(f"a login module name and flag (required, ...) expected at character {position}")
        options, position = [], module.end()
        while (option := OPTION.match(text, position)) is not None:
            value = option["bare"] if option["quoted"] is None else re.sub(r"\\(.)", r"\1", option["quoted"])
            options.append((option["key"], value))
            position = option.end()
        end = END.match(text, position)
        if end is None:
            raise NotAllowed(f"key=value or ';' expected at character {position}")
        entries.append(LoginModule(module["module"], tuple(options)))
        position = end.end()
    return tuple(entries)


def module_options(text: str, module: str) -> dict[str, str]:
    """The options of the entries for `module`, later ones winning."""
    return {key: value for entry in login_modules(text) if entry.module == module for key, value in entry.options}


@dataclass(frozen=True)
class JaasConfig(Kind):
    """A JAAS configuration text; a secret (DescribeConfigs reports it as sensitive, without its value)."""

    config_type: ClassVar[str] = "PASSWORD"
    metavar: ClassVar[str] = "JAAS"

    def parse(self, text: str) -> str:
        return self.check(text.strip())

    def check(self, value) -> str:
        if not isinstance(value, str):
            raise NotAllowed("allowed: " + self.allowed())
        skew = module_options(value, OAUTHBEARER_MODULE).get(CLOCK_SKEW, "0")
        if not skew.isdigit():
            raise NotAllowed(f"{CLOCK_SKEW} must be a number of milliseconds")
        return value

    def allowed(self) -> str:
        return 'JAAS login module entries, CLASS required key="value" ...;'
