"""Kafka's `ssl.principal.mapping.rules`: a client certificate's subject to a principal name.

The rules are DEFAULT (the subject's distinguished name as it is) or
RULE:pattern/replacement/[LU], tried in order; the first whose Java-style
regular expression matches the whole name gives the name with every match
replaced (`$1` names a group, a backslash makes the next character literal,
`\\/` is a slash inside a pattern or replacement), lower- or upper-cased by
L or U. A comma may appear inside a pattern: rules are read one after another,
not split at commas.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from gateway.settings.kinds import Kind, NotAllowed

ONE_RULE = re.compile(r"\s*(?:(?P<default>DEFAULT)|RULE:(?P<pattern>(?:\\.|[^\\/])*)/"
                      r"(?P<replacement>(?:\\.|[^\\/])*)/(?P<case>[LU]?))\s*(?:,|$)")
REPLACEMENT_PART = re.compile(r"\\(?P<literal>.)|\$(?P<group>\d+)|(?P<text>[^\\$]+)|(?P<dollar>\$)", re.DOTALL)


@dataclass(frozen=True)
class PrincipalRule:
    """One rule; `pattern` None for DEFAULT."""

    text: str
    pattern: re.Pattern | None = None
    replacement: tuple[tuple[str, int | None], ...] = ()  # (literal text, or a group number) in order
    case: str = ""

    def apply(self, name: str) -> str | None:
        """The principal name this rule makes of a distinguished name, or None if it does not match."""
        if self.pattern is None:
            return name
        if self.pattern.fullmatch(name) is None:
            return None
        mapped = self.pattern.sub(self._replaced, name)
        return {"L": mapped.lower(), "U": mapped.upper()}.get(self.case, mapped)

    def _replaced(self, match: re.Match) -> str:
        return "".join(text if group is None else match[group] or "" for text, group in self.replacement)


def mapped_name(rules: tuple[PrincipalRule, ...], name: str) -> str | None:
    """The name the first matching rule makes; None if no rule matches."""
    return next((mapped for mapped in (rule.apply(name) for rule in rules) if mapped is not None), None)


@dataclass(frozen=True)
class PrincipalRules(Kind):
    """DEFAULT or RULE:pattern/replacement/[LU], comma-separated, tried in order."""

    config_type: ClassVar[str] = "STRING"  # as Kafka types it, since a pattern may hold commas
    metavar: ClassVar[str] = "RULES"

    def parse(self, text: str) -> tuple[PrincipalRule, ...]:
        rules, at = [], 0
        text = text.strip()
        while at < len(text):
            match = ONE_RULE.match(text, at)
            if match is None:
                raise NotAllowed(f"{text[at:]!r} is not a rule; allowed: {self.allowed()}")
            rules.append(_rule(match))
            at = match.end()
        return self.check(tuple(rules))

    def check(self, value) -> tuple[PrincipalRule, ...]:
        if not isinstance(value, tuple) or not value or not all(isinstance(r, PrincipalRule) for r in value):
            raise self.refused(value)
        return value

    def text(self, value) -> str:
        return ",".join(rule.text for rule in value)

    def allowed(self) -> str:
        return "DEFAULT or RULE:pattern/replacement/[LU], comma-separated"


def _rule(match: re.Match) -> PrincipalRule:
    text = match[0].strip().rstrip(",").strip()
    if match["default"]:
        return PrincipalRule(text)
    try:
        pattern = re.compile(match["pattern"])
    except re.error as exc:
        raise NotAllowed(f"{text}: the pattern is not a regular expression: {exc}") from None
    parts = []
    for part in REPLACEMENT_PART.finditer(match["replacement"]):
        if part["group"] is not None:
            if int(part["group"]) > pattern.groups:
                raise NotAllowed(f"{text}: the pattern has no group {part['group']}")
            parts.append(("", int(part["group"])))
        else:
            parts.append((part["literal"] or part["text"] or part["dollar"], None))
    return PrincipalRule(text, pattern, tuple(parts), match["case"])


DEFAULT_RULES = (PrincipalRule("DEFAULT"),)
