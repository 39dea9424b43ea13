"""`dafka-gateway`: the Kafka broker gateway, its settings from flags, environment and --config.

With no settings it is the embedded default: a tower, one durable store
under ./data and the gateway on 127.0.0.1:9092.
"""

from __future__ import annotations

from gateway.app import run_until_stopped
from gateway.lifecycle import start_command
from gateway.settings.declaration import Command


def main() -> None:
    loaded = start_command(Command.GATEWAY, "dafka-gateway", "A Kafka-compatible broker on a Dafka mesh.")
    run_until_stopped(loaded.settings)
