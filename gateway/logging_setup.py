"""Structured logs: one event per line on standard error, in the format and from the level asked.

Exceptions logged with their traceback travel inside the event (one line,
escaped) in the key=value and JSON formats; the console format prints them.
Libraries that log through the standard library (the HTTP server) come out
as the same events.

Levels are per logger, as Kafka's log4j loggers have them: each module's
events pass through the standard library's logger of the module's name
(gateway.server.connection, say), which lets them through from its own
level, else from its nearest ancestor's (gateway.server, gateway, then the
root, which starts at the level asked). The structlog events are still
rendered and written by structlog; the standard library only holds the
levels, which the BROKER_LOGGER configs change live (`set_level`).
"""

from __future__ import annotations

import logging
import sys
from typing import TextIO

import structlog
from structlog.stdlib import NAME_TO_LEVEL

from gateway.settings.table import LoggingSettings

RENDERERS = {
    "keyvalue": lambda: [structlog.processors.format_exc_info,
                         structlog.processors.KeyValueRenderer(key_order=["timestamp", "level", "event"])],
    "json": lambda: [structlog.processors.format_exc_info, structlog.processors.JSONRenderer()],
    "console": lambda: [structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())],
}
STAMPS = [structlog.processors.add_log_level, structlog.processors.TimeStamper(fmt="iso")]

ROOT = "root"  # the root logger's name, as Kafka names it
# log4j's levels (Kafka's LogLevelConfig) as the standard library's numbers; TRACE is below DEBUG.
LOG4J_LEVELS = {"TRACE": 5, "DEBUG": logging.DEBUG, "INFO": logging.INFO, "WARN": logging.WARNING,
                "ERROR": logging.ERROR, "FATAL": logging.CRITICAL}


class ModuleWriter(structlog.WriteLogger):
    """Writes a module's events, one write each; `levels` is its standard library logger."""

    def __init__(self, file: TextIO, levels: logging.Logger):
        super().__init__(file)
        self.levels = levels


class ModuleWriterFactory:
    """A writer for the logger named, else for the module that asks for one (the gateway's modules
    call `structlog.get_logger()` without a name)."""

    def __init__(self, file: TextIO):
        self._file = file

    def __call__(self, *args) -> ModuleWriter:
        return ModuleWriter(self._file, logging.getLogger(args[0] if args else _calling_module()))


def _calling_module() -> str:
    frame = sys._getframe(2)
    while frame.f_globals.get("__name__", "").startswith("structlog"):
        frame = frame.f_back
    return frame.f_globals.get("__name__", ROOT)


def _below_level(logger: ModuleWriter, method_name: str, event: dict) -> dict:
    """Drop an event below its module's level before anything renders it."""
    if not logger.levels.isEnabledFor(NAME_TO_LEVEL[method_name]):
        raise structlog.DropEvent
    return event


def configure_logging(settings: LoggingSettings | None = None) -> None:
    settings = settings or LoggingSettings()
    structlog.configure(
        processors=[_below_level, *STAMPS, *RENDERERS[settings.log_format]()],
        wrapper_class=structlog.make_filtering_bound_logger(logging.NOTSET),
        # One write per event, its newline included (print writes the newline apart): the embedded
        # store shares the gateway's stderr, and another process's line could land in between.
        logger_factory=ModuleWriterFactory(sys.stderr),
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[structlog.stdlib.add_logger_name, *STAMPS],
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, *RENDERERS[settings.log_format]()]))
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(logging.getLevelName(settings.log_level.upper()))


def _loggers() -> dict[str, logging.Logger]:
    """Every logger of this process by name: the root, one for every package and module of the
    gateway loaded here (whether it logged yet or not), and those the libraries made."""
    for module in list(sys.modules):
        if module.split(".")[0] == "gateway":
            logging.getLogger(module)
    made = logging.root.manager.loggerDict
    return {ROOT: logging.getLogger(), **{name: made[name] for name in sorted(made)
                                          if isinstance(made[name], logging.Logger)}}


def logger_levels() -> dict[str, str]:
    """Every logger's level as log4j names it: its own, else its nearest ancestor's."""
    return {name: _log4j_name(logger.getEffectiveLevel()) for name, logger in _loggers().items()}


def _log4j_name(level: int) -> str:
    return max(((number, name) for name, number in LOG4J_LEVELS.items() if number <= level), default=(0, "TRACE"))[1]


def logger_exists(name: str) -> bool:
    return name in _loggers()


def set_level(name: str, level: str | None) -> None:
    """Set a logger's level (a log4j name), or with None let it take its ancestors' again."""
    _loggers()[name].setLevel(logging.NOTSET if level is None else LOG4J_LEVELS[level])
