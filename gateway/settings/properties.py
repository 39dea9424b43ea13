"""Java properties files, as Kafka reads server.properties.

Lines are `key=value`, `key: value` or `key value`; `#` and `!` start
comments; a line ending in an odd number of backslashes goes on with the
next; backslash escapes a separator, itself, t, n, r and f, and \\uXXXX
names a character.
"""

from __future__ import annotations

import re

ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
ESCAPED = re.compile(r"\\(u[0-9A-Fa-f]{4}|.)", re.DOTALL)
SEPARATOR = re.compile(r"(?<!\\)(?:\\\\)*(\s*[=:]\s*|\s+)")


def read_properties(text: str) -> list[tuple[str, str, int]]:
    """(key, value, line number) of every entry, in file order."""
    entries = []
    for line, number in _logical_lines(text):
        match = SEPARATOR.search(line)
        key, value = (line[:match.start(1)], line[match.end(1):]) if match else (line, "")
        entries.append((_unescaped(key), _unescaped(value), number))
    return entries


def _logical_lines(text: str):
    """Lines with continuations joined and comments and blank lines left out."""
    pending, first = "", 0
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.lstrip()
        if not pending and (not line or line[0] in "#!"):
            continue
        if not pending:
            first = number
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2:
            pending += line[:-1]
            continue
        yield pending + line, first
        pending = ""
    if pending:
        yield pending, first


def _unescaped(text: str) -> str:
    def replace(match: re.Match) -> str:
        code = match[1]
        if len(code) == 5 and code[0] == "u":
            return chr(int(code[1:], 16))
        return ESCAPES.get(code, code)

    return ESCAPED.sub(replace, text)
