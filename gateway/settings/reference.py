"""The settings table of the README, made from the declarations.

`python -m gateway.settings` prints it, `python -m gateway.settings README.md`
puts it in place of the README's copy; a test keeps that copy equal.
"""

from __future__ import annotations

from gateway.settings.declaration import Command, Declared, declared
from gateway.settings.table import SECTIONS

COMMAND_NAMES = {Command.GATEWAY: "gateway", Command.STORE: "store", Command.TOWER: "tower",
                 Command.PRODUCER: "producer", Command.CONSUMER: "consumer", Command.CHP: "chp-server"}
BEGIN = "<!-- settings table: python -m gateway.settings -->"
END = "<!-- end of settings table -->"


def markdown_table() -> str:
    rows = ["| setting | flag | default | commands | meaning |", "|---|---|---|---|---|"]
    rows += [_row(entry) for section in SECTIONS.values() for entry in declared(section)]
    return "\n".join([BEGIN, *rows, END])


def _row(entry: Declared) -> str:
    name = f"`{entry.name}`" + (" (Kafka)" if entry.kafka else "")
    if entry.synonyms:
        name += ", or " + ", ".join(f"`{s}`" for s in entry.synonyms)
    default = entry.kind.text(entry.default)
    commands = ", ".join(label for command, label in COMMAND_NAMES.items() if command & entry.commands)
    meaning = f"{entry.help}; {entry.kind.allowed()}".replace("|", "\\|")
    return f"| {name} | `{entry.flag}` | {f'`{default}`' if default else 'empty'} | {commands} | {meaning} |"


def with_table(text: str) -> str:
    """`text` with the table between its markers made anew."""
    start, end = text.index(BEGIN), text.index(END) + len(END)
    return text[:start] + markdown_table() + text[end:]
