"""Structured logs: one event per line on standard error, in the format and from the level asked.

Exceptions logged with their traceback travel inside the event (one line,
escaped) in the key=value and JSON formats; the console format prints them.
Libraries that log through the standard library (the HTTP server) come out
as the same events.
"""

from __future__ import annotations

import logging
import sys

import structlog

from gateway.settings.table import LoggingSettings

RENDERERS = {
    "keyvalue": lambda: [structlog.processors.format_exc_info,
                         structlog.processors.KeyValueRenderer(key_order=["timestamp", "level", "event"])],
    "json": lambda: [structlog.processors.format_exc_info, structlog.processors.JSONRenderer()],
    "console": lambda: [structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())],
}
STAMPS = [structlog.processors.add_log_level, structlog.processors.TimeStamper(fmt="iso")]


def configure_logging(settings: LoggingSettings | None = None) -> None:
    settings = settings or LoggingSettings()
    level = logging.getLevelName(settings.log_level.upper())
    structlog.configure(
        processors=[*STAMPS, *RENDERERS[settings.log_format]()],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        # One write per event, its newline included (print writes the newline apart): the embedded
        # store shares the gateway's stderr, and another process's line could land in between.
        logger_factory=structlog.WriteLoggerFactory(sys.stderr),
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[structlog.stdlib.add_logger_name, *STAMPS],
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, *RENDERERS[settings.log_format]()]))
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(level)
