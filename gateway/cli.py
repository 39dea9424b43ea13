"""`dafka-gateway`: the Kafka broker gateway, its settings from flags, environment and --config.

With no settings it is the embedded default: a tower, one durable store
under ./data and the gateway on 127.0.0.1:9092.
"""

from __future__ import annotations

import sys

import structlog

from gateway.data_directory import StartupError
from gateway.early_start import start_early
from gateway.lifecycle import start_command
from gateway.settings.declaration import Command

log = structlog.get_logger()


def main() -> None:
    loaded = start_command(Command.GATEWAY, "dafka-gateway", "A Kafka-compatible broker on a Dafka mesh.")
    try:
        early = start_early(loaded.settings)
    except StartupError as exc:
        log.error("gateway_failed", reason=str(exc))
        sys.exit(1)
    # Imported once the stores are starting (early_start.py): they load meanwhile, on the other core.
    from gateway.app import run_until_stopped

    run_until_stopped(loaded.settings, early)
