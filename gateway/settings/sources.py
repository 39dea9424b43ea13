"""Where settings come from, in rising precedence: defaults, a properties file
(--config, Kafka's key names), the environment (DAFKA_<NAME>), the command line.

A value that its kind does not allow ends the program before it starts: one
line naming the setting, where it came from and what is allowed, exit code 2.
A file's keys that do not apply to the command (other Kafka settings, or those
of another command) are accepted and named in a warning. Kafka's JAAS lines per
listener and mechanism (listener.name.sasl_plaintext.plain.sasl.jaas.config)
add their login modules to the one sasl.jaas.config. A listener's own SSL
settings (listener.name.internal.ssl.keystore.location, Kafka's prefix: the
listener's name in lower case), from the file or the environment
(DAFKA_LISTENER_NAME_INTERNAL_SSL_KEYSTORE_LOCATION), override the ssl.* ones
for that listener alone, each checked as its base setting; a prefix naming no
listener is named in a warning.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from gateway.settings.declaration import ENV_PREFIX, Command, Declared, declared, env_name
from gateway.settings.kinds import NotAllowed
from gateway.settings.properties import read_properties
from gateway.settings.table import LISTENER_SSL, SECTIONS, Settings

JAAS = "sasl.jaas.config"
LISTENER_JAAS = re.compile(r"listener\.name\.[a-z0-9_-]+\.[a-z0-9-]+\.sasl\.jaas\.config")
LISTENER_SETTING = re.compile(r"listener\.name\.[^.]+\.(?P<base>.+)")
LISTENER_ENV = env_name("listener.name.")
SECTION_TITLES = {"broker": "Kafka broker", "ssl": "TLS of SSL listeners", "mesh": "Dafka mesh", "store": "store", "chp": "CHP server",
                  "http": "HTTP endpoint", "logging": "logging"}


class SettingsError(Exception):
    """A setting that cannot be used, with the one line that says why."""


@dataclass
class Loaded:
    settings: Settings
    arguments: argparse.Namespace  # the command's own arguments besides the settings
    warnings: list[str] = field(default_factory=list)


class OneLineParser(argparse.ArgumentParser):
    """Errors as one line and exit code 2, as for a bad setting."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def settings_of(command: Command) -> dict[str, list[Declared]]:
    """The settings `command` takes, by section."""
    return {name: [d for d in declared(section) if d.commands & command] for name, section in SECTIONS.items()}


def parser_for(command: Command, prog: str, description: str) -> OneLineParser:
    parser = OneLineParser(prog=prog, usage="%(prog)s [--config FILE] [--SETTING VALUE ...]",
                           description=description + " Every setting is also an environment "
                           "variable, DAFKA_ and its name in capitals with underscores (DAFKA_LOG_LEVEL).")
    parser.add_argument("--config", metavar="FILE", type=Path,
                        help="a properties file of settings (Kafka's server.properties keys); flags and the "
                             "environment win over it")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    for section, entries in settings_of(command).items():
        group = parser.add_argument_group(SECTION_TITLES[section]) if entries else None
        for entry in entries:
            group.add_argument(entry.flag, dest=entry.attribute, metavar=_metavar(entry), default=None,
                               help=f"{entry.help} ({entry.name}); default: {_shown(entry)}")
    return parser


def load(command: Command, parser: argparse.ArgumentParser, argv: list[str] | None = None,
         environ: Mapping[str, str] | None = None) -> Loaded:
    """Settings and arguments of one run; SettingsError for a setting that cannot be used."""
    environ = environ if environ is not None else {}
    arguments = parser.parse_args(argv)
    by_section = settings_of(command)
    known = {d.name: d for entries in by_section.values() for d in entries}
    values: dict[str, object] = {}
    warnings: list[str] = []
    if arguments.config is not None:
        values |= _from_file(arguments.config, known, warnings)
    values |= _from_environment(environ, known)
    values |= {d.name: _parsed(d, text, d.flag) for d in known.values()
               if (text := getattr(arguments, d.attribute)) is not None}
    for entry in known.values():
        delattr(arguments, entry.attribute)
    settings = _built(by_section, values)
    if unknown := settings.unknown_listener_configs():
        warnings.append(f"settings of listeners that are not in listeners, ignored: {', '.join(unknown)}")
    return Loaded(settings, arguments, warnings)


def _from_file(path: Path, known: dict[str, Declared], warnings: list[str]) -> dict[str, object]:
    try:
        lines = read_properties(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(f"cannot read the settings file {path}: {exc}") from None
    by_name = _with_synonyms(known)
    values, ignored, jaas = {}, [], []
    for key, text, number in lines:
        entry = by_name.get(key)
        if JAAS in known and LISTENER_JAAS.fullmatch(key):
            jaas.append(_parsed(known[JAAS], text, f"{path}:{number}"))
        elif (listener_entry := _listener_ssl(key, known)) is not None:
            values[key] = _parsed(listener_entry, text, f"{path}:{number}", key)
        elif entry is None:
            ignored.append(key)
        else:
            values[entry.name] = _parsed(entry, text, f"{path}:{number}")
    if jaas:
        values[JAAS] = "\n".join([values.get(JAAS, ""), *jaas]).strip()
    if ignored:
        warnings.append(f"{path}: settings that do not apply here, ignored: {', '.join(ignored)}")
    return values


def _from_environment(environ: Mapping[str, str], known: dict[str, Declared]) -> dict[str, object]:
    values = {}
    for name, entry in _with_synonyms(known).items():
        text = environ.get(env_name(name))
        if text is not None:
            values[entry.name] = _parsed(entry, text, env_name(name))
    return values | _from_listener_environment(environ, known)


def _from_listener_environment(environ: Mapping[str, str], known: dict[str, Declared]) -> dict[str, object]:
    """Listeners' own SSL settings from DAFKA_LISTENER_NAME_<LISTENER>_<SETTING> variables."""
    suffixes = {"_" + env_name(base).removeprefix(ENV_PREFIX): base for base in LISTENER_SSL.keys() & known.keys()}
    values = {}
    for variable, text in environ.items():
        rest = variable.removeprefix(LISTENER_ENV) if variable.startswith(LISTENER_ENV) else ""
        for suffix, base in suffixes.items():
            if rest.endswith(suffix) and len(rest) > len(suffix):
                name = f"listener.name.{rest.removesuffix(suffix).lower()}.{base}"
                values[name] = _parsed(known[base], text, variable, name)
    return values


def _listener_ssl(key: str, known: dict[str, Declared]) -> Declared | None:
    """The SSL setting a listener's own config overrides, if the command takes it."""
    found = LISTENER_SETTING.fullmatch(key)
    base = None if found is None else found["base"]
    return known[base] if base in LISTENER_SSL and base in known else None


def _with_synonyms(known: dict[str, Declared]) -> dict[str, Declared]:
    return {**{s: d for d in known.values() for s in d.synonyms}, **known}


def _parsed(entry: Declared, text: str, origin: str, name: str | None = None):
    """The value of `entry` (or of `name`, a listener's own config of it) that `text` gives."""
    try:
        return entry.kind.parse(text)
    except NotAllowed as exc:
        raise SettingsError(f"{name or entry.name} ({origin}): {exc}") from None


def _built(by_section: dict[str, list[Declared]], values: dict[str, object]) -> Settings:
    sections = {}
    for name, entries in by_section.items():
        given = {d.attribute: values[d.name] for d in entries if d.name in values}
        try:
            sections[name] = SECTIONS[name](**given)
        except NotAllowed as exc:
            raise SettingsError(str(exc)) from None
    known = {d.name for entries in by_section.values() for d in entries}
    try:
        return Settings(**sections, given=frozenset(values) & known,
                        listener_ssl={name: value for name, value in values.items() if name not in known})
    except NotAllowed as exc:
        raise SettingsError(str(exc)) from None


def _metavar(entry: Declared) -> str:
    for suffix, unit in ((".ms", "MS"), (".bytes", "BYTES")):
        if entry.name.endswith(suffix):
            return unit
    return entry.kind.metavar


def _shown(entry: Declared) -> str:
    text = entry.kind.text(entry.default)
    return text if text else "empty"


def _version() -> str:
    try:
        return version("dafka-gateway")
    except PackageNotFoundError:
        return "unknown"


def flags_for(command: Command, settings: Settings, **values) -> list[str]:
    """The flags that give `command` the values `settings` holds for every setting it takes,
    `values` (by attribute) replacing some: how one process passes its settings to another."""
    flags = []
    for section, entries in settings_of(command).items():
        for entry in entries:
            value = values.get(entry.attribute, getattr(getattr(settings, section), entry.attribute))
            flags.append(f"{entry.flag}={entry.kind.text(value)}")
    return flags


def load_or_exit(command: Command, prog: str, description: str,
                 extend: Callable[[argparse.ArgumentParser], None] | None = None,
                 argv: list[str] | None = None) -> Loaded:
    """`load` from this process's arguments and environment; a bad setting ends it
    with one line on standard error and exit code 2."""
    parser = parser_for(command, prog, description)
    if extend is not None:
        extend(parser)
    try:
        return load(command, parser, argv, os.environ)
    except SettingsError as exc:
        sys.stderr.write(f"{prog}: error: {exc}\n")
        raise SystemExit(2) from None
