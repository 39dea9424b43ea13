"""Subscription regexes in RE2 syntax, as Kafka's (RE2/J) are: a full match of the
topic name, in linear time whatever pattern a client sends."""

from __future__ import annotations

import functools

import re2

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # a client's bad pattern is answered, not logged by RE2 itself


@functools.lru_cache(maxsize=1024)
def compiled(regex: str):
    """The compiled pattern; re2.error if it is not one."""
    return re2.compile(regex, _OPTIONS)


def problem(regex: str) -> str | None:
    """Why the pattern is invalid, or None if it is valid."""
    try:
        compiled(regex)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else "invalid"
        return reason.decode(errors="replace") if isinstance(reason, bytes) else str(reason)
    return None


def matches(regex: str, name: str) -> bool:
    return compiled(regex).fullmatch(name) is not None
